// This file implements one rank's side of the collective ops of Ops.def
// (meaning and block arithmetic in ir/Collectives.h) on top of a
// Communicator: every member of the step's axis group packs the parts of its
// block that each peer needs, calls the V collective, and unpacks what it
// received at the global offsets of its new block. Uneven and size-0 blocks
// work because every count comes from localBlock() of the operand and result
// types. Needs every member of the group to run the same step.
#pragma once

#include "ir/IR.h"
#include "runtime/Backend.h"

#include <functional>
#include <memory>
#include <vector>

namespace dt {

/// Runs collective `in` (operand type `src`, result type `dst`) for mesh rank
/// `meshRank` holding block `block` of the operand on `dev`; returns its
/// result block. Buffers, packing and the group come from `dev`; the group's
/// members are the world ranks of their device ids in `worldIds` (the sorted
/// distinct device ids of the program, worldRankOf()).
/// In deterministic mode (Module::deterministic) a partial value is whole on
/// coordinate 0 of its partial axes (SPMD lowering made it so), so
/// `all_reduce` broadcasts that block and `reduce_scatter` broadcasts it and
/// keeps this rank's block: no arithmetic, no order to depend on. The one
/// exception, `all_reduce` marked `tree G` (SPMD lowering's distributed
/// contraction), combines the first G members' subtree nodes in the fixed
/// tree order of runtime/BlasDeterministic.h, the same on every member.
/// `pooled(bytes)` (when given) offers a free buffer of the rank's pool for
/// a result the step writes in full, or null: a loop's all-reduce then
/// reuses the buffer of the one before instead of allocating anew.
HostTensor runCollectiveStep(Device &dev, const Inst &in, const TensorType &src,
                             const TensorType &dst, const HostTensor &block, int64_t meshRank,
                             const std::vector<int64_t> &worldIds, bool deterministic = false,
                             const std::function<std::shared_ptr<Buffer>(int64_t)> &pooled = {});

/// Every group of world ranks that a collective of `m` can run over (each
/// collective's axis group from every mesh rank), and the whole world of
/// `worldIds.size()` ranks: sorted, without repeats, the same list on every
/// process that compiled the same program (Backend::prepareGroups).
std::vector<std::vector<int>> collectiveGroups(const Module &m,
                                               const std::vector<int64_t> &worldIds);

} // namespace dt
