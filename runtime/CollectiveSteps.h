// This file implements one rank's side of the collective ops of Ops.def
// (meaning and block arithmetic in ir/Collectives.h) on top of a
// Communicator: every member of the step's axis group packs the parts of its
// block that each peer needs, calls the V collective, and unpacks what it
// received at the global offsets of its new block. Uneven and size-0 blocks
// work because every count comes from localBlock() of the operand and result
// types. Needs every member of the group to run the same step.
#pragma once

#include "ir/IR.h"
#include "runtime/Communicator.h"
#include "runtime/HostTensor.h"

#include <functional>
#include <vector>

namespace dt {

/// Returns the communicator of the calling rank over `members` (world ranks,
/// in group order).
using GroupFn = std::function<Communicator &(const std::vector<int> &members)>;

/// Runs collective `in` (operand type `src`, result type `dst`) for mesh rank
/// `meshRank` holding block `block` of the operand; returns its result block.
HostTensor runCollectiveStep(const Inst &in, const TensorType &src, const TensorType &dst,
                             const HostTensor &block, int64_t meshRank, const GroupFn &group);

} // namespace dt
