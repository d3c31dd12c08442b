// This file implements the lowering of one kernel of the kernel IR
// (codegen/KernelIR.h) to an LLVM IR module for the CPU JIT (codegen/CpuJIT).
//
// Needs: a kernel that passes verifyKernel. Guarantees: the module defines one
// external function `void @<symbol>(ptr buffers, ptr params)` with exactly the
// run-time ABI and semantics of KernelIR.h (the reference interpreter gives
// the same results: bitwise for elementwise kernels, up to reassociation for
// float sums). f32 exp, log, tanh, sigmoid, erf, log1p and expm1 are inline
// IR (support/FloatMath.h, LLVMMath.cpp: they vectorize); the other
// transcendentals call the host libm (sinf, pow, every f64 one), which the
// module declares and the JIT resolves to the process's libm.
//
// Loop structure: one counted loop per iteration dim, kept dims outermost in
// order, then the reduced dims (accumulators live across the reduced loops and
// are stored once). A reduction whose last iteration dim is kept (a sum over
// rows of a row-major matrix) runs kept-innermost instead: per tile of the
// last dim, the reduced loops add whole rows, contiguously, into a row of
// accumulators that is stored once (the same per-element order). The
// innermost loop has a fast path, chosen at run time, for inner strides that
// are 0 or 1 (and outputs contiguous): such a loop has affine unit-stride
// addresses and alias-scope metadata, so LLVM's loop vectorizer fires. Float
// sums are marked `reassoc` so they vectorize too.
//
// Performance notes (limits, each deliberate for now):
//  * Callers get the best code when the innermost iteration dim is long and
//    contiguous: collapse dims that are contiguous in every operand first.
//  * float max/min reductions vectorize (llvm.maximum/minimum) outside deterministic
//    mode, whose NaN rule is a select chain that does not.
//  * sin, cos, pow and the f64 transcendentals are scalar libm calls (no
//    vector math library), which keeps them bitwise equal to the interpreter;
//    the f32 ones of support/FloatMath.h are inline and vectorize.
#pragma once

#include "codegen/KernelIR.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace dt {

/// Lowers `k` (verified; InternalError otherwise) to a module in `ctx` that
/// defines the kernel as `symbol`. The module is unoptimised; CpuJIT runs the
/// default O2 pipeline for the host target on it.
std::unique_ptr<llvm::Module> lowerKernelToLLVM(const Kernel &k, llvm::LLVMContext &ctx,
                                                const std::string &symbol);

/// The libm functions a lowered kernel may call, by name (for the JIT's symbol
/// table): expf exp logf log tanhf tanh sinf sin cosf cos powf pow.
struct LibmSymbol {
  const char *name;
  void *address;
};
std::vector<LibmSymbol> kernelLibmSymbols();

} // namespace dt
