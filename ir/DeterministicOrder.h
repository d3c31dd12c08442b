// This file holds the one constant of deterministic mode's summation order
// (docs/language.md, "Deterministic mode"), shared by SPMD lowering (which
// distributes a contraction only when every rank's shard of k is a whole
// subtree of leaves) and the kernels that sum in that order
// (runtime/BlasDeterministic.h).
#pragma once

#include <cstdint>

namespace dt {

/// Deterministic mode's contraction order splits k into leaves of this many
/// consecutive global indices, each summed as one chain, and combines the
/// leaves in a fixed binary tree (runtime/BlasDeterministic.h). A constant of
/// the mode: changing it changes the bits of every deterministic product.
inline constexpr int64_t kDeterministicBlock = 64;

} // namespace dt
