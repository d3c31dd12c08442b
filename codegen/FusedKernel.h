// This file implements the bridge from the global IR to the kernel IR: a
// kernel function made by the fusion pass (passes/Fusion.h: straight-line
// elementwise ops, sources and at most one trailing reduction, then `return`)
// becomes one Kernel (codegen/KernelIR.h), and a rank's launch of it becomes
// the kernel's run-time params. Both backends consume exactly this: the LLVM
// lowering (codegen/LLVMCodegen) and the CUDA emitter (codegen/CudaEmitter)
// take the Kernel, and the params follow the one ABI of KernelIR.h, so no
// kernel meaning lives in a backend.
//
// Iteration space: the local block, on the calling rank, of the kernel's
// iteration type (the returned value's type, or the reduction operand's type).
// Inputs broadcast into it by numpy rules on their local shapes (stride 0 on
// size-1 and missing leading dims); random/iota use the iteration block's
// offset in the global tensor, so every layout generates the same global
// values. A reduction output has stride 0 on the reduced dims.
//
// Needs: a function for which isFusedKernel() holds and that verifies.
// Guarantees: the kernel passes verifyKernel and has the IR's dtypes
// (InternalError otherwise, naming the function).
#pragma once

#include "codegen/KernelIR.h"

#include <optional>
#include <vector>

namespace dt {

/// An `index_select(src, ids, dim)` member: the kernel reads input `src` at
/// the rows input `ids` names. A launch must check every id against src's
/// local extent along `dim` first: the kernel does not (the executor does,
/// runtime/KernelRuntime.cpp).
struct KernelGather {
  int src = 0, ids = 0, dim = 0;
  SrcLoc loc; ///< the `index_select`'s, named by an out-of-range id
};

/// An `index_add(base, ids, x, dim)` member (the fused scatter): output
/// `output` is base with x's points added at the rows ids names along `dim`.
/// `base` is an input the kernel never reads: a launch fills the output with
/// it first, and checks every id against base's local extent along `dim`.
struct KernelScatter {
  int output = 0, base = 0, ids = 0, dim = 0;
  SrcLoc loc; ///< the `index_add`'s
};

struct FusedKernel {
  Kernel kernel;
  TensorType iterType;                 ///< its local block is the iteration space
  std::vector<TensorType> resultTypes; ///< the root's result, then extra ones (same shape)
  /// Its index_select members. A gather's source has its own extent along
  /// the gathered dim and its rank-1 ids run along that dim; every other
  /// input broadcasts by numpy rules.
  std::vector<KernelGather> gathers;
  /// Its index_add member, if any (its result has base's type; the other
  /// results have the iteration type, which is the added source's).
  std::optional<KernelScatter> scatter;
};

/// Builds the kernel of a fusion-pass kernel function. An `index_select`
/// member becomes a `gather` node; its source and ids must be inputs of the
/// function used by nothing else in it (passes/Fusion.h guarantees it). An
/// `index_add` member (at most one, along dim 0, f32/f64, its result
/// returned and used by nothing else) becomes the scatter store; its base
/// and ids are inputs, its source computed in the kernel.
FusedKernel buildFusedKernel(const Function &f);

/// The kernel of a slice: `fk`'s kernel with every gather read as a plain
/// load of its source. It computes what `fk` does when each gather's ids step
/// evenly (id0 + j * step: a slice, a step slice, a reversal, whatever made
/// the ids) and the launch moves each gather's source id0 rows forward along
/// the gathered dim and multiplies its stride there by the step; its loads
/// vectorize where a gather's cannot. A source with several
/// gathers (`x[:, 0:d] * x[:, d:2 * d]`) is one more input per gather past
/// the first. Nodes only the gathers read (the ids' loads) are dropped.
struct SliceKernel {
  Kernel kernel;
  /// Per input of `kernel`: the input of fk's kernel it reads (fk's inputs
  /// in order, then the extra sources).
  std::vector<int> inputOf;
  /// Per gather of fk (fk.gathers' order): the input of `kernel` it loads.
  std::vector<int> gatherInput;
};
/// nullopt when `fk` has no gather or has a scatter.
std::optional<SliceKernel> sliceKernel(const FusedKernel &fk);
/// The slice kernel's params from `params`, fk's launch params (fusedLaunch):
/// each input's strides are its source's.
std::vector<int64_t> sliceParams(const SliceKernel &sk, const Kernel &k,
                                 const std::vector<int64_t> &params);

/// One rank's launch: the params of the ABI and the outputs' local shape.
struct FusedLaunch {
  std::vector<int64_t> params;
  std::vector<int64_t> outShape;
  std::vector<int64_t> scatterShape; ///< the scatter output's local shape (base's)
  int64_t iterations = 0;            ///< elements of the iteration space
};

/// The launch of `fk` on the rank with index `meshRank` in the iteration
/// type's mesh (-1 for host kernels), with inputs of local shapes `inShapes`.
/// InternalError when an input does not broadcast to the iteration block.
FusedLaunch fusedLaunch(const FusedKernel &fk, const std::vector<std::vector<int64_t>> &inShapes,
                        int64_t meshRank);

} // namespace dt
