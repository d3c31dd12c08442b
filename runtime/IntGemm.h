// This file declares the CPU's integer matrix product: C = A B for i32 and
// i64 with two's-complement wrap-around (the reference evaluator's meaning;
// every order of the sums gives the same bits, so any tiling and any thread
// split does). OpenBLAS has no integer product; this one packs B into strips
// and keeps a tile of 4 rows x one strip of C in registers while it runs down
// k (runtime/IntGemm.cpp), in AVX-512 or AVX2 where the CPU has them.
#pragma once

#include <cstdint>

namespace dt {

/// Which instructions intGemmOn uses (tests run each path; Best picks the
/// widest the CPU has).
enum class IntGemmIsa { Best, Avx512, Avx2, Portable };

/// C (m x n, row-major) = A B. A is m x k row-major (stored k x m when `ta`),
/// B is k x n (stored n x k when `tb`). `threads`: how many threads may split
/// the rows of a large product.
void intGemm(const int32_t *A, const int32_t *B, int32_t *C, int64_t m, int64_t k, int64_t n,
             bool ta, bool tb, int threads);
void intGemm(const int64_t *A, const int64_t *B, int64_t *C, int64_t m, int64_t k, int64_t n,
             bool ta, bool tb, int threads);

/// intGemm on the given path: false when this CPU (or build) lacks it.
bool intGemmOn(IntGemmIsa isa, bool i64, const void *A, const void *B, void *C, int64_t m,
               int64_t k, int64_t n, bool ta, bool tb, int threads);

} // namespace dt
