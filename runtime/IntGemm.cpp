// This file implements runtime/IntGemm.h. B is packed into strips of NR
// columns (k x NR each, zero-padded past column n); a tile of 4 rows of C x
// one strip lives in an array the compiler keeps in vector registers while
// it runs down k, then is stored. The arithmetic is unsigned, so overflow
// wraps without undefined behaviour and every order gives the same bits.
// One template, compiled three times: as a plain function and inside
// functions built for AVX2 and AVX-512 (GCC's target attribute; the
// template is inlined into each, so each copy is vectorized for its ISA).
#include "runtime/IntGemm.h"
#include "runtime/GemmStrips.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DT_INT_GEMM_X86 1
#endif

namespace dt {

namespace {

constexpr int MR = 8; ///< rows of a register tile

/// C rows [m0, m1) from A (element (i, q) at A[i * ars + q * acs]) and the
/// packed strips of NR columns (64 bytes: one vector V of GCC's vector
/// extension, which each ISA splits into its registers).
template <class U, int NR>
__attribute__((always_inline)) inline void tileRows(const U *A, int64_t ars, int64_t acs,
                                                    const U *strips, U *C, int64_t m0, int64_t m1,
                                                    int64_t k, int64_t n) {
  typedef U V __attribute__((vector_size(NR * sizeof(U))));
  typedef U VU __attribute__((vector_size(NR * sizeof(U)), aligned(alignof(U))));
  const int64_t nStrips = (n + NR - 1) / NR;
  for (int64_t i0 = m0; i0 < m1; i0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, m1 - i0);
    // Rows past m1 repeat the last one: computed, never stored.
    const U *a[MR];
    for (int r = 0; r < MR; ++r)
      a[r] = A + (i0 + std::min<int64_t>(r, mr - 1)) * ars;
    for (int64_t s = 0; s < nStrips; ++s) {
      V acc[MR] = {};
      const U *b = strips + s * k * NR;
      for (int64_t q = 0; q < k; ++q, b += NR) {
        const V bv = *reinterpret_cast<const VU *>(b);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r)
          acc[r] += a[r][q * acs] * bv;
      }
      const int64_t j0 = s * NR, w = std::min<int64_t>(NR, n - j0);
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t c = 0; c < w; ++c)
          C[(i0 + r) * n + j0 + c] = acc[r][c];
    }
  }
}

template <class U, int NR>
void portableRows(const U *A, int64_t ars, int64_t acs, const U *s, U *C, int64_t m0, int64_t m1,
                  int64_t k, int64_t n) {
  tileRows<U, NR>(A, ars, acs, s, C, m0, m1, k, n);
}

#ifdef DT_INT_GEMM_X86
template <class U, int NR>
__attribute__((target("avx2"))) void avx2Rows(const U *A, int64_t ars, int64_t acs, const U *s,
                                              U *C, int64_t m0, int64_t m1, int64_t k, int64_t n) {
  tileRows<U, NR>(A, ars, acs, s, C, m0, m1, k, n);
}
template <class U, int NR>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2"))) void
avx512Rows(const U *A, int64_t ars, int64_t acs, const U *s, U *C, int64_t m0, int64_t m1,
           int64_t k, int64_t n) {
  tileRows<U, NR>(A, ars, acs, s, C, m0, m1, k, n);
}
bool hasAvx2() { return __builtin_cpu_supports("avx2"); }
bool hasAvx512() {
  return hasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
}
#endif

/// The whole product on the rows function `rows` with strips of NR columns.
template <class U, int NR, class F>
void run(const F &rows, const U *A, const U *B, U *C, int64_t m, int64_t k, int64_t n, bool ta,
         bool tb, int threads) {
  std::vector<U> strips = gemm_strips::packStrips(B, k, n, tb, NR);
  const int64_t ars = ta ? 1 : k, acs = ta ? m : 1;
  gemm_strips::splitRows(
      m, m * n * k, threads,
      [&](int64_t m0, int64_t m1) { rows(A, ars, acs, strips.data(), C, m0, m1, k, n); }, MR);
}

/// Strips of 64 bytes: a tile row is one AVX-512 register or two AVX2 ones
/// (four SSE2 ones on the portable path).
template <class T>
bool product(IntGemmIsa isa, const T *At, const T *Bt, T *Ct, int64_t m, int64_t k, int64_t n,
             bool ta, bool tb, int threads) {
  using U = std::make_unsigned_t<T>;
  const U *A = reinterpret_cast<const U *>(At), *B = reinterpret_cast<const U *>(Bt);
  U *C = reinterpret_cast<U *>(Ct);
  if (m == 0 || n == 0)
    return true;
  if (k == 0) {
    std::fill(C, C + m * n, U(0));
    return true;
  }
  constexpr int NR = 64 / sizeof(U);
#ifdef DT_INT_GEMM_X86
  const bool best = isa == IntGemmIsa::Best;
  if ((best || isa == IntGemmIsa::Avx512) && hasAvx512())
    return run<U, NR>(avx512Rows<U, NR>, A, B, C, m, k, n, ta, tb, threads), true;
  if ((best || isa == IntGemmIsa::Avx2) && hasAvx2())
    return run<U, NR>(avx2Rows<U, NR>, A, B, C, m, k, n, ta, tb, threads), true;
#endif
  if (isa != IntGemmIsa::Best && isa != IntGemmIsa::Portable)
    return false;
  run<U, NR>(portableRows<U, NR>, A, B, C, m, k, n, ta, tb, threads);
  return true;
}

} // namespace

void intGemm(const int32_t *A, const int32_t *B, int32_t *C, int64_t m, int64_t k, int64_t n,
             bool ta, bool tb, int threads) {
  product(IntGemmIsa::Best, A, B, C, m, k, n, ta, tb, threads);
}

void intGemm(const int64_t *A, const int64_t *B, int64_t *C, int64_t m, int64_t k, int64_t n,
             bool ta, bool tb, int threads) {
  product(IntGemmIsa::Best, A, B, C, m, k, n, ta, tb, threads);
}

bool intGemmOn(IntGemmIsa isa, bool i64, const void *A, const void *B, void *C, int64_t m,
               int64_t k, int64_t n, bool ta, bool tb, int threads) {
  if (i64)
    return product(isa, (const int64_t *)A, (const int64_t *)B, (int64_t *)C, m, k, n, ta, tb,
                   threads);
  return product(isa, (const int32_t *)A, (const int32_t *)B, (int32_t *)C, m, k, n, ta, tb,
                 threads);
}

} // namespace dt
