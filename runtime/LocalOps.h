// This file implements the local compute of one rank of an SPMD program: the
// op of an instruction applied to the rank's local blocks (HostTensors whose
// shapes are localBlock(type, meshRank)). By the derived placement rule
// (ir/Infer.h), the op on local blocks yields the local block of its result,
// so most ops are exactly the reference kernels (runtime/RefKernels.h) on
// smaller tensors; what depends on the block's place in the global tensor is
// here:
//  * sources produce exactly the rank's block of the global value: `const`
//    slices its data, `random` and `iota` use GLOBAL indices (block offsets),
//    so every layout sees the same global tensor;
//  * a source (or distributed argument) whose type is partial(sum) on some
//    mesh axes puts the value on coordinate 0 of those axes and zeros on the
//    other ranks; partial(avg/max/min) keep the value on every rank;
//  * `reshape` and `broadcast` target the local block of the result type.
// runLocalOp is the ONE dispatch point of local compute, so a fused JIT path
// can replace it wholesale. Data-dependent faults (index out of range) raise
// RuntimeFault; IR that cannot run raises InternalError.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"

#include <vector>

namespace dt {

/// Where a rank's block sits: the rank's index in the result's mesh (or -1
/// for host values, which every rank holds whole).
struct LocalPlace {
  int64_t meshRank = -1;
  /// Only the reference kernels (no BLAS): `dtensorc run --no-jit`.
  bool referenceOnly = false;
};

/// The local block of `t` on mesh rank `meshRank` (a host value, or
/// meshRank < 0: the whole concrete shape).
LocalBlock blockOf(const TensorType &t, int64_t meshRank);

/// Runs a non-control, non-collective instruction on local blocks; returns
/// its result block(s). `resultTypes` are the global result types.
std::vector<HostTensor> runLocalOp(const Inst &in, const std::vector<const HostTensor *> &args,
                                   const std::vector<TensorType> &resultTypes, LocalPlace place);

/// Rank `meshRank`'s block of the global value `global` of type `t` (partial
/// types: the value on coordinate 0 of partial(sum) axes, zeros elsewhere).
HostTensor blockOfGlobal(const HostTensor &global, const TensorType &t, int64_t meshRank);

/// True when rank `meshRank`'s component of a value of type `t` is zero for
/// a program-made source: some partial(sum) axis has a coordinate other
/// than 0 there (the value counts once in the sum).
bool isZeroPartialComponent(const TensorType &t, int64_t meshRank);
/// Zeros `block` when isZeroPartialComponent; returns it unchanged otherwise.
HostTensor applyPartialSource(HostTensor block, const TensorType &t, int64_t meshRank);

/// Copies the box `extent` starting at local coordinate `srcStart` of a
/// row-major tensor of shape `srcShape` to local coordinate `dstStart` of one
/// of shape `dstShape`; `esize` bytes per element. A zero extent copies nothing.
void copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                const std::vector<int64_t> &srcStart, void *dst,
                const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstStart,
                const std::vector<int64_t> &extent, int64_t esize);

} // namespace dt
