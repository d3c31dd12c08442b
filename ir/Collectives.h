// This file implements the meaning of the collective ops of Ops.def (class
// Collective) on the global view: which placement transition each one makes
// on which mesh axes, whether that transition is exact for the torch.chunk
// blocks of the operand and result types, and how many bytes it moves per
// rank. SPMD lowering (passes/SpmdLower.h) emits these ops, the planner
// (passes/Redistribute.h) searches over them, the verifier re-checks them
// through ir/Infer.h, and the executor (runtime/Executor.h) runs them with
// exactly the block arithmetic checked here.
//
// A step `%r = OP %x attrs{ints [axes]}` changes the placements of `%x` only
// on `axes` (ascending mesh order; several axes are one joint group whose
// ranks are flattened in mesh order, first axis major, like a multi-axis
// shard). On those axes:
//   all_gather     shard(d) -> replicate  every rank receives the blocks of the
//                                         group members; they must tile its new block
//   all_reduce     partial(op) -> replicate (one op over the group)
//   reduce_scatter partial(op) -> shard(d)  the new blocks of the group tile the
//                                         (common) old block
//   all_to_all     shard(i) -> shard(j)   the old and new blocks of a group
//                                         tile the same box
//   local_slice    replicate -> shard(d)  the new block lies inside the old one
//   local_partial  replicate -> partial(op): sum keeps the value on group
//                  coordinate 0 and zeros elsewhere; avg/max/min keep it
//                  everywhere (exact for every dtype, no scaling)
//   slice_gather   shard(d) -> replicate or shard(d) of rows [o, o + n) of d
//                  (o = sliceOffset(attrs), n = the result's size of d):
//                  the result is a slice, so its shape differs from the
//                  operand's in d; `axes` are every axis that shards d. Each
//                  rank receives from each peer only the rows of its new block
//                  that the peer's old block holds: ranks whose block misses
//                  the slice send nothing (how `x[2:5]` of a sharded dim moves)
// Tiling is checked only for concrete shapes (the builder instantiates every
// function that runs with concrete shapes).
#pragma once

#include "ir/IR.h"

#include <string>
#include <vector>

namespace dt {

/// "" when `OP src -> dst over axes` is a valid collective step, else why not.
/// `offset` is a `slice_gather`'s first row (sliceOffset()); 0 for the others.
std::string checkCollective(Op op, const TensorType &src, const TensorType &dst,
                            const std::vector<int64_t> &axes, int64_t offset = 0);

/// The first row of a `slice_gather` (attrs.floats[0]; 0 when absent).
int64_t sliceOffset(const Attrs &a);

/// Mesh ranks of the joint group of `axes` through mesh rank `meshRank`, in
/// group order (flattened over `axes` in mesh order, first axis major).
std::vector<int64_t> axesGroup(const Mesh &mesh, int64_t meshRank,
                               const std::vector<int64_t> &axes);

/// Bytes the busiest rank receives for the step (cost model of the planner
/// and of `dtensorc explain`): all_gather = new block - own old block;
/// all_to_all = new block - the part it already holds; reduce_scatter =
/// (k-1) x new block; all_reduce = 2(k-1)/k x block (ring); local steps 0.
/// Requires concrete shapes.
/// slice_gather = the rows of the new block that the rank's own old block
/// does not hold.
int64_t collectiveBytes(Op op, const TensorType &src, const TensorType &dst,
                        const std::vector<int64_t> &axes, int64_t offset = 0);

/// An axis-aligned box of a tensor (a rank's block): offset and extent per dim.
struct Box {
  std::vector<int64_t> offset, shape;
  int64_t volume() const;
};
Box blockBox(const TensorType &t, int64_t meshRank);
/// Intersection (extent 0 in some dim when disjoint).
Box intersect(const Box &a, const Box &b);
bool contains(const Box &outer, const Box &inner);
/// The global box of a `slice_gather` operand's block `b` in the result's
/// coordinates (dim `d` shifted down by `offset`).
Box shiftedBox(const Box &b, int64_t d, int64_t offset);

/// Names of the mesh axes for messages: `x`, `(x, y)`.
std::string axesName(const Mesh &mesh, const std::vector<int64_t> &axes);

} // namespace dt
