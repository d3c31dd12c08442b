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
// own fma chain in k order. A skinny C runs an element a thread,
// consecutive threads on consecutive columns; when its elements cannot fill
// the device (modulation's 16 x 4096: 0.82 ms a product on an H200 that
// way), a thread runs one leaf of 16 rows of a column (B's values read once
// for the 16), and a second launch merges each element's leaves in order.
#pragma once

#include "runtime/CudaRuntime.h"

#include <string>

namespace dt {

/// The CUDA C++ of the product (entry points dt_det_gemm_{f32,f64},
/// dt_det_gemm_tiled_*, dt_det_gemm_split_*_leaves and _merge).
const std::string &cudaDeterministicGemmSource();

/// Whether a skinny C (not tiled) runs as two launches, its leaves' chains
/// then their merge: at least two leaves, fewer elements than a wave of
/// `sms` full SMs' threads, and the leaves' values (batch x leaves x m x n
/// elements of `elementBytes`) within kDeterministicGemmSplitBytes.
bool cudaDeterministicGemmLeafSplit(int64_t batch, int64_t m, int64_t k, int64_t n,
                                    int64_t elementBytes, int64_t sms);
constexpr int64_t kDeterministicGemmSplitBytes = 256ll << 20;

/// C = A @ B as `g` describes it (GemmType F32 or F64, transpose flags,
/// batch strides; packed leading dimensions), on stream `s`. InternalError
/// for another type.
void cudaDeterministicGemm(CudaContext &ctx, const GemmDesc &g, CudaStream s);

} // namespace dt
