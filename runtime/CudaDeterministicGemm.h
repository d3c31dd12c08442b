// This file implements deterministic mode's matrix product on the GPU: the
// order of runtime/BlasDeterministic.h (leaves of 64 consecutive k, each one
// fma chain from 0 in the operands' precision, combined in the fixed tree of
// ir/DeterministicOrder.h as a binary counter), one thread per element of C,
// so every element has the CPU's bits on any GPU, layout and batch. CUDA C++
// of the backend's own, compiled by NVRTC once per context.
//
// Consecutive threads take consecutive columns of C: a warp reads one row of
// B (or, transposed, strided B) and one element of A at a time. It is not a
// tiled GEMM: a skinny product (16 x 4096 @ 4096 x 4096) takes a fraction of
// a millisecond, a square 4096^3 one tens of milliseconds.
#pragma once

#include "runtime/CudaRuntime.h"

#include <string>

namespace dt {

/// The CUDA C++ of the product (entry points dt_det_gemm_f32, _f64).
const std::string &cudaDeterministicGemmSource();

/// C = A @ B as `g` describes it (GemmType F32 or F64, transpose flags,
/// batch strides; packed leading dimensions), on stream `s`. InternalError
/// for another type.
void cudaDeterministicGemm(CudaContext &ctx, const GemmDesc &g, CudaStream s);

} // namespace dt
