// This file implements kernel IR for the local ops that fusion leaves alone
// and that have no BLAS call: a contraction (`einsum`, and `matmul` of a
// dtype BLAS does not have: every integer dtype and bool) and a permuting copy
// (`transpose`). Like a fused kernel (codegen/FusedKernel.h) an op kernel is
// plain kernel IR, so the LLVM lowering, the CUDA emitter and interpretKernel
// all run it and no backend stages it through the host.
//
// Contraction: the iteration space is the output's dims (in output order),
// then the contracted dims (in order of first appearance); every operand
// reads through its strides on those dims (a letter repeated in one operand
// adds its strides: a diagonal; a matmul batch dim of size 1 broadcasts with
// stride 0) and the output keeps stride 0 on the contracted dims of a `sum`
// reduction. The scalar body is the product of the operand loads, computed in
// the reference kernels' accumulation dtype (runtime/RefKernels.h): floats in
// f64 (a bf16/f16/f32 product is exact there), bool as i64, every integer
// dtype in itself (so products and sums wrap exactly as the reference's
// wrapMul/wrapAdd). When that dtype is not the result's, a second kernel
// casts the accumulated value once to it (`finish`): f64 -> bf16/f16 rounds
// once from the exact value, as the reference's cast does.
//
// Copy: one load, an optional cast, one store; a transpose launches it over
// the output's dims with the input's strides permuted.
//
// Needs: operand dtypes and ranks as the IR types give them (local blocks
// have the global rank). Guarantees: every kernel passes verifyKernel.
#pragma once

#include "codegen/KernelIR.h"

#include <optional>
#include <string>
#include <vector>

namespace dt {

/// Which dims of the iteration space each operand and the output use.
struct ContractionShape {
  int rank = 0;                              ///< iteration-space rank
  std::vector<std::vector<int>> operandDims; ///< per operand, per its dim: iteration dim
  std::vector<int> outDims;                  ///< per output dim: iteration dim (0..)
  std::vector<int> reduced;                  ///< the contracted iteration dims
};

/// The contraction of `matmul` with operands of ranks `ra`, `rb` (both >= 1)
/// read transposed per `ta`/`tb` (ignored on a rank-1 operand).
ContractionShape matmulContraction(int ra, int rb, bool ta, bool tb);
/// The contraction of `einsum` `spec` over operands of the given ranks;
/// InternalError for a spec that does not match them.
ContractionShape einsumContraction(const std::string &spec, const std::vector<int> &ranks);

/// The kernels of one op: `main` writes the result (or, with `finish`, the
/// accumulated value in `main.outputs[0]`'s dtype, which `finish` casts).
struct OpKernel {
  Kernel main;
  std::optional<Kernel> finish;
  ContractionShape shape; ///< contraction only
  bool isCopy = false;    ///< a transpose: `perm` permutes the input
  std::vector<int64_t> perm;
};

/// The op kernel of `in` (matmul, einsum, transpose) with operands of
/// `argDtypes`/`argRanks` and result dtype `out`, or nullopt when the op has
/// none (another op, or a form the kernels do not cover).
std::optional<OpKernel> buildOpKernel(const Inst &in, const std::vector<DType> &argDtypes,
                                      const std::vector<int> &argRanks, DType out);

/// A copy of rank `rank` from `in` to `out` dtype (a cast when they differ).
Kernel copyKernel(int rank, DType in, DType out);

/// One launch of an OpKernel on local operand shapes.
struct OpLaunch {
  std::vector<int64_t> params;       ///< main's params
  std::vector<int64_t> outShape;     ///< the result's local shape
  std::vector<int64_t> finishParams; ///< finish's params (when it has one)
  int64_t iterations = 0;            ///< elements of main's iteration space
};
/// InternalError when the shapes do not fit the kernel (sizes of one
/// iteration dim that differ and are not 1).
OpLaunch opKernelLaunch(const OpKernel &k, const std::vector<std::vector<int64_t>> &argShapes);

} // namespace dt

namespace dt {

/// How a two-operand float `einsum` runs as one batched matmul: operand a
/// permuted by `permA` (empty: as it is) is [batch.., m.., k..] (or, with
/// `transA`, [batch.., k.., m..]), b likewise [batch.., k.., n..] (`transB`:
/// [batch.., n.., k..]); the product [batch.., m.., n..] permuted by
/// `permOut` (empty: as it is) is the result. Groups of dims multiply into
/// the matmul's three dims.
struct EinsumMatmulPlan {
  std::vector<int64_t> permA, permB, permOut;
  bool transA = false, transB = false;
  /// Dims of a (after permA) in the batch, m and k groups; of b in n.
  int batch = 0, m = 0, k = 0, n = 0;
};
/// The plan of `spec` over two operands of ranks `ra`, `rb`, or nullopt when
/// it is not one matmul (a repeated letter in an operand, a letter summed
/// within one operand).
std::optional<EinsumMatmulPlan> einsumMatmulPlan(const std::string &spec, int ra, int rb);

} // namespace dt
