// This file implements the matrix product of deterministic mode
// (docs/language.md, "Deterministic mode"): C[i, j] is the chain
// fma(a[i, k], b[k, j], .) over k = 0, 1, ..., K-1 from 0 in the operands'
// precision, so an element's bits depend only on its row of A and column of
// B, never on M, N, the tiling, the thread count or the machine's BLAS (as
// OpenBLAS's do: its tile kernels accumulate in tile-dependent orders). A
// rank that multiplies a block of rows or columns gets the bits of the same
// elements of the one-device product. AVX2+FMA register tiles where the CPU
// has them, std::fma elsewhere (the same bits: fma is correctly rounded).
#pragma once

#include <cstdint>

namespace dt {

/// C (m x n, row-major) = A (m x k; stored k x m when `ta`) @ B (k x n;
/// stored n x k when `tb`), f32 or (`f64`) f64. `threads` > 1 splits the rows
/// of a large product among that many threads (the bits do not change).
void deterministicMatrix(bool f64, const void *A, const void *B, void *C, int64_t m, int64_t k,
                         int64_t n, bool ta, bool tb, int threads = 1);

} // namespace dt
