// This file implements how SPMD lowering moves a slice of a sharded dim: the
// front end writes `x[2:5]` of a dim that mesh axes shard as
//
//   %y = relayout %x          (the axes that shard d replicate: a gather)
//   %z = index_select %y, %c dim d     (%c a constant id list)
//   %r = relayout %z          (optional: shard d again on the same axes)
//
// and lowering the first relayout on its own would all-gather the whole dim.
// When %y and %z have no other use and the ids are an arithmetic progression,
// the three become one `slice_gather` (ir/Collectives.h) of the rows the ids
// span: every rank receives only the rows of its new block, and ranks whose
// block misses the slice send nothing. With step 1 and a resharding relayout
// the step produces %r directly (each rank receives only its block of the
// slice); otherwise it produces the replicated span and, for step > 1, a local
// `index_select` of shifted ids picks the rows.
#pragma once

#include "ir/IR.h"

#include <map>
#include <optional>
#include <vector>

namespace dt {

/// What the pattern at a `relayout` found.
struct SliceGatherMatch {
  std::vector<int64_t> axes; ///< the mesh axes that shard the cut dim
  int64_t dim = 0, lo = 0, count = 0, step = 1;
  int select = -1;  ///< the index_select's result (%z)
  int reshard = -1; ///< the resharding relayout's result (%r), or -1 when not fused
};

/// Per function: how many times each value is read (operands of every
/// instruction in every block) and the values of integer constants.
struct SliceGatherFacts {
  std::map<int, int> uses;
  std::map<int, std::vector<int64_t>> intConsts;
  void scan(const Block &b);
};

/// The match for the relayout `b.insts[i]` of `f`, if the pattern holds.
std::optional<SliceGatherMatch> matchSliceGather(const Function &f, const Block &b, size_t i,
                                                 const SliceGatherFacts &facts);

} // namespace dt
