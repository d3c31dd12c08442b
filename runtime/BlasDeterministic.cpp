// This file implements the deterministic matrix product (BlasDeterministic.h):
// every element of C is one fused multiply-add chain over k in order,
// c = fma(a[i,k], b[k,j], c) from c = 0, in the operands' precision. A fused
// multiply-add is correctly rounded, so the vector kernel (AVX2+FMA, register
// tiles of 4 rows x 16 f32 / 8 f64 columns), its scalar edges and the portable
// path (std::fma) give the same bits, whatever the tile an element falls in:
// a rank's block of C has the bits of the same elements of the whole product.
#include "runtime/BlasDeterministic.h"

#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DT_DET_X86 1
#endif

namespace dt {

namespace {

template <class T>
void scalarBlock(const T *A, const T *B, T *C, int64_t m0, int64_t m1, int64_t j0, int64_t k,
                 int64_t n) {
  for (int64_t i = m0; i < m1; ++i)
    for (int64_t j = j0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc = std::fma(A[i * k + p], B[p * n + j], acc);
      C[i * n + j] = acc;
    }
}

#ifdef DT_DET_X86
__attribute__((target("avx2,fma"))) void kernelF32(const float *A, const float *B, float *C,
                                                   int64_t m, int64_t k, int64_t n) {
  const int64_t nv = n - n % 16;
  for (int64_t j = 0; j < nv; j += 16) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      __m256 c[4][2];
      for (auto &r : c)
        r[0] = r[1] = _mm256_setzero_ps();
      const float *a = A + i * k, *b = B + j;
      for (int64_t p = 0; p < k; ++p, b += n) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        for (int r = 0; r < 4; ++r) {
          __m256 x = _mm256_broadcast_ss(a + r * k + p);
          c[r][0] = _mm256_fmadd_ps(x, b0, c[r][0]);
          c[r][1] = _mm256_fmadd_ps(x, b1, c[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        _mm256_storeu_ps(C + (i + r) * n + j, c[r][0]);
        _mm256_storeu_ps(C + (i + r) * n + j + 8, c[r][1]);
      }
    }
    for (; i < m; ++i) {
      __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps();
      const float *b = B + j;
      for (int64_t p = 0; p < k; ++p, b += n) {
        __m256 x = _mm256_broadcast_ss(A + i * k + p);
        c0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b), c0);
        c1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b + 8), c1);
      }
      _mm256_storeu_ps(C + i * n + j, c0);
      _mm256_storeu_ps(C + i * n + j + 8, c1);
    }
  }
  scalarBlock(A, B, C, 0, m, nv, k, n);
}

__attribute__((target("avx2,fma"))) void kernelF64(const double *A, const double *B, double *C,
                                                   int64_t m, int64_t k, int64_t n) {
  const int64_t nv = n - n % 8;
  for (int64_t j = 0; j < nv; j += 8) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      __m256d c[4][2];
      for (auto &r : c)
        r[0] = r[1] = _mm256_setzero_pd();
      const double *a = A + i * k, *b = B + j;
      for (int64_t p = 0; p < k; ++p, b += n) {
        __m256d b0 = _mm256_loadu_pd(b), b1 = _mm256_loadu_pd(b + 4);
        for (int r = 0; r < 4; ++r) {
          __m256d x = _mm256_broadcast_sd(a + r * k + p);
          c[r][0] = _mm256_fmadd_pd(x, b0, c[r][0]);
          c[r][1] = _mm256_fmadd_pd(x, b1, c[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        _mm256_storeu_pd(C + (i + r) * n + j, c[r][0]);
        _mm256_storeu_pd(C + (i + r) * n + j + 4, c[r][1]);
      }
    }
    for (; i < m; ++i) {
      __m256d c0 = _mm256_setzero_pd(), c1 = _mm256_setzero_pd();
      const double *b = B + j;
      for (int64_t p = 0; p < k; ++p, b += n) {
        __m256d x = _mm256_broadcast_sd(A + i * k + p);
        c0 = _mm256_fmadd_pd(x, _mm256_loadu_pd(b), c0);
        c1 = _mm256_fmadd_pd(x, _mm256_loadu_pd(b + 4), c1);
      }
      _mm256_storeu_pd(C + i * n + j, c0);
      _mm256_storeu_pd(C + i * n + j + 4, c1);
    }
  }
  scalarBlock(A, B, C, 0, m, nv, k, n);
}

bool hasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

/// `src` (rows x cols, row-major) transposed into `dst`.
template <class T>
void transposeInto(const T *src, int64_t rows, int64_t cols, std::vector<T> &dst) {
  dst.resize((size_t)(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[(size_t)(c * rows + r)] = src[r * cols + c];
}

template <class T> void rowsProduct(const T *A, const T *B, T *C, int64_t m, int64_t k, int64_t n) {
#ifdef DT_DET_X86
  if (hasAvx2Fma()) {
    if constexpr (std::is_same_v<T, float>)
      kernelF32(A, B, C, m, k, n);
    else
      kernelF64(A, B, C, m, k, n);
    return;
  }
#endif
  scalarBlock(A, B, C, 0, m, 0, k, n);
}

template <class T>
void product(const T *A, const T *B, T *C, int64_t m, int64_t k, int64_t n, bool ta, bool tb,
             int threads) {
  std::vector<T> at, bt;
  if (ta) { // A is stored k x m
    transposeInto(A, k, m, at);
    A = at.data();
  }
  if (tb) { // B is stored n x k
    transposeInto(B, n, k, bt);
    B = bt.data();
  }
  // Blocks of rows (multiples of the 4-row tile) on `threads` threads when
  // the product is large enough to pay for them; a row's bits never change.
  int64_t per = (m + threads - 1) / std::max(threads, 1);
  per = (per + 3) / 4 * 4;
  if (threads <= 1 || m * n * k < (int64_t(1) << 22) || per >= m)
    return rowsProduct(A, B, C, m, k, n);
  std::vector<std::thread> pool;
  for (int64_t r0 = per; r0 < m; r0 += per)
    pool.emplace_back([=] { rowsProduct(A + r0 * k, B, C + r0 * n, std::min(per, m - r0), k, n); });
  rowsProduct(A, B, C, per, k, n);
  for (auto &t : pool)
    t.join();
}

} // namespace

void deterministicMatrix(bool f64, const void *A, const void *B, void *C, int64_t m, int64_t k,
                         int64_t n, bool ta, bool tb, int threads) {
  if (f64)
    product((const double *)A, (const double *)B, (double *)C, m, k, n, ta, tb, threads);
  else
    product((const float *)A, (const float *)B, (float *)C, m, k, n, ta, tb, threads);
}

} // namespace dt
