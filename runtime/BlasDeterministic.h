// This file implements the matrix product of deterministic mode
// (docs/language.md, "Deterministic mode"). The order of C[i, j]'s sum is a
// function of the global k index alone:
//   * k splits into leaves of kDeterministicBlock (64) consecutive indices
//     (the last one may be shorter); a leaf's value is the chain
//     fma(a[i, k], b[k, j], .) over its k in order from 0, in the operands'
//     precision;
//   * the leaves combine in the fixed tree deterministicTree: tree(x[0..n)) is
//     x[0] for n = 1, else tree(x[0..h)) + tree(x[h..n)) with h the largest
//     power of two below n.
// An element's bits therefore depend only on its row of A and column of B,
// never on M, N, the tiling, the thread count or the machine's BLAS (as
// OpenBLAS's do). And a rank that holds the k range of a whole subtree
// (an aligned run of 2^j leaves) computes that subtree's node exactly: the
// ranks' nodes combined by the same tree give the one-device bits
// (SPMD lowering's distributed contraction; runtime/CollectiveSteps.h).
// AVX-512 or AVX2+FMA register tiles where the CPU has them, std::fma
// elsewhere (the same bits: fma and add are correctly rounded).
#pragma once

#include "ir/DeterministicOrder.h"

#include <cstdint>
#include <vector>

namespace dt {

/// C (m x n, row-major) = A (m x k; stored k x m when `ta`) @ B (k x n;
/// stored n x k when `tb`), f32 or (`f64`) f64. `threads` > 1 splits the rows
/// of a large product among that many threads (the bits do not change).
void deterministicMatrix(bool f64, const void *A, const void *B, void *C, int64_t m, int64_t k,
                         int64_t n, bool ta, bool tb, int threads = 1);

/// The instruction sets the product runs on: Best (the default) takes the
/// widest the CPU has; tests name one to compare them.
enum class DeterministicIsa { Best, Portable, Avx2, Avx512 };
/// deterministicMatrix on `isa`; false (nothing written) when this CPU or
/// build lacks it.
bool deterministicMatrixOn(DeterministicIsa isa, bool f64, const void *A, const void *B, void *C,
                           int64_t m, int64_t k, int64_t n, bool ta, bool tb, int threads = 1);

/// out[e] = the tree combination (see above) of parts[0][e], ..., parts[g-1][e]
/// for e < count, f32 or (`f64`) f64; `out` may alias parts[0]. g >= 1.
void deterministicTree(bool f64, const std::vector<const void *> &parts, void *out, int64_t count);

} // namespace dt
