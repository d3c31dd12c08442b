// This file implements dense matrix multiplication on HostTensors for the CPU
// backend: cblas_sgemm / cblas_dgemm (OpenBLAS) for f32 / f64, IntGemm.h's
// tiled product for i32 / i64 (bool computes as i64, like the reference evaluator).
//
// Semantics: numpy `matmul` on the last two dims, batch dims broadcast
// (right-aligned, size 1 stretches); a 1-D left operand is a row vector and a
// 1-D right operand a column vector, and that dim is dropped from the result.
// `transA` / `transB` transpose the last two dims of a rank >= 2 operand
// (ignored for 1-D). Ints wrap on overflow. Floats: OpenBLAS accumulates in
// the operands' precision with its own blocking order, so f32 results match
// the reference evaluator (f64 accumulation) only up to reassociation.
//
// Threading: ranks are threads of one process and each calls gemm on its own
// block; OpenBLAS 0.3.21's pthread build only has a process-wide thread count,
// so the caller passes `threads` = cores / ranks in the process (at least 1;
// the cpu backend computes it per run) and gemm sets OpenBLAS to it when the
// count differs: a 1-rank run on 2 cores multiplies on both, 2 or more ranks on
// 2 cores get 1 thread each (no ranks x BLAS-threads oversubscription). Every
// rank of a run asks for the same count, so concurrent setters agree; single-
// threaded OpenBLAS calls are safe to make concurrently from several threads.
#pragma once

#include "runtime/HostTensor.h"

namespace dt {

/// c = a @ b (numpy matmul with optional transposes). `c` is reused when it
/// already has the result's dtype and shape, else replaced by a new tensor.
/// Result dtype: a's dtype (i64 for bool). InternalError on mismatched dtypes,
/// contraction sizes or batch dims, and on rank-0 operands.
/// `deterministic`: float products through deterministicMatrix
/// (BlasDeterministic.h: one fma chain over k per element, whatever the
/// shape) instead of OpenBLAS, whose bits depend on M and N.
void gemm(const HostTensor &a, const HostTensor &b, HostTensor &c, bool transA = false,
          bool transB = false, int threads = 1, bool deterministic = false);

/// Result shape of gemm(a, b, ...) for the given shapes (same errors).
std::vector<int64_t> gemmShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                               bool transA = false, bool transB = false);

} // namespace dt
