// This file implements deterministic mode's matrix product on the GPU: the
// order of runtime/BlasDeterministic.h (leaves of 64 consecutive k, each one
// fma chain from 0 in the operands' precision, combined in the fixed tree of
// ir/DeterministicOrder.h as a binary counter), so every element has the
// CPU's bits on any GPU, layout and batch. CUDA C++ of the backend's own,
// compiled by NVRTC once per context.
//
// A C with at least half a tile of rows and columns runs a tile a block
// (64 x 64 f32, 32 x 32 f64; a thread 4 x 4 or 2 x 2 elements): each leaf's
// 64 k of A and B staged in shared memory, every element's chain still its
// own fma chain in k order. A skinny C (modulation's 16 rows: 0.74 ms a
// product on an H100) runs an element a thread, consecutive threads on
// consecutive columns.
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
