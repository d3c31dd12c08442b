// This file implements the fusion pass's membership rules (see Fusion.h for
// the guarantees they make up): which ops and values may join a kernel whose
// iteration type is given. passes/Fusion.cpp grows and outlines the groups.
#pragma once

#include "ir/IR.h"

namespace dt::fusion {

bool isElementwise(Op op);
bool isReduce(Op op);
/// Elementwise, or the identity on local blocks (`broadcast`: its operand
/// reaches the kernel as a broadcasting load, see fits()).
bool isPointwise(Op op);
bool sameMesh(const TensorType &a, const TensorType &b);
/// Whether a value of type `t` broadcasts to the iteration type `it` so that
/// every rank's local block broadcasts to the rank's iteration block.
bool fits(const TensorType &t, const TensorType &it);
/// Same shape, mesh and placements (dtype may differ).
bool sameLayoutAndShape(const TensorType &a, const TensorType &b);
/// A source the kernel IR can generate on every rank without communication.
bool fusableSource(const Inst &in, const Function &f);
/// An `index_select` a kernel can read through a `gather` node: rank-1
/// integer ids, and a result of exactly the iteration type's shape and
/// layout (so its dims are the iteration dims and its local block the
/// iteration block; the source's local block differs from it only along
/// the gathered dim).
bool fusableGather(const Inst &in, const Function &f, const TensorType &it);
/// A one-operand reduction that keeps its (non-bool) dtype.
bool fusableReduce(const Inst &in, const Function &f);

} // namespace dt::fusion
