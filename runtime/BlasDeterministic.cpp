// This file implements the deterministic matrix product (BlasDeterministic.h):
// leaves of kDeterministicBlock k indices, each one fma chain from 0, combined
// in the fixed tree. The tree is walked as a binary counter: a finished leaf
// merges with the stack's top while the top is a subtree of the same height
// (left + right), and the stack, whose heights fall from bottom to top, folds
// from the top at the end; that is exactly deterministicTree's recursion.
//
// The vector kernel packs B into strips of 2 vector widths (zero-padded
// columns, never stored), keeps a tile of up to 6 rows x 2 vectors in
// registers for one leaf and runs a block of rows against every strip while
// that block of A is in cache. Each SIMD lane is one element's own chain, so
// any tile, edge or thread split gives the portable path's bits.
#include "runtime/BlasDeterministic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DT_DET_X86 1
#define DT_AVX __attribute__((target("avx2,fma")))
#endif

namespace dt {

namespace {

constexpr int64_t KB = kDeterministicBlock;
constexpr int kMaxDepth = 64; // heights of a binary counter over < 2^63 leaves

/// The portable path: element by element, the same leaves and tree.
template <class T>
void scalarRows(const T *A, const T *B, T *C, int64_t m0, int64_t m1, int64_t k, int64_t n) {
  T st[kMaxDepth];
  int hs[kMaxDepth];
  for (int64_t i = m0; i < m1; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int top = 0;
      for (int64_t k0 = 0; k0 < k; k0 += KB) {
        T acc = 0;
        for (int64_t p = k0, k1 = std::min(k0 + KB, k); p < k1; ++p)
          acc = std::fma(A[i * k + p], B[p * n + j], acc);
        int h = 0;
        for (; top > 0 && hs[top - 1] == h; ++h)
          acc = st[--top] + acc;
        st[top] = acc;
        hs[top++] = h;
      }
      T r = st[top - 1];
      for (int s = top - 2; s >= 0; --s)
        r = st[s] + r;
      C[i * n + j] = r;
    }
}

#ifdef DT_DET_X86
template <class T> struct Vec;
template <> struct Vec<float> {
  using R = __m256;
  static constexpr int L = 8;
  DT_AVX static R zero() { return _mm256_setzero_ps(); }
  DT_AVX static R load(const float *p) { return _mm256_loadu_ps(p); }
  DT_AVX static R bcast(const float *p) { return _mm256_broadcast_ss(p); }
  DT_AVX static void store(float *p, R x) { _mm256_store_ps(p, x); }
  DT_AVX static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  DT_AVX static R add(R a, R b) { return _mm256_add_ps(a, b); }
};
template <> struct Vec<double> {
  using R = __m256d;
  static constexpr int L = 4;
  DT_AVX static R zero() { return _mm256_setzero_pd(); }
  DT_AVX static R load(const double *p) { return _mm256_loadu_pd(p); }
  DT_AVX static R bcast(const double *p) { return _mm256_broadcast_sd(p); }
  DT_AVX static void store(double *p, R x) { _mm256_store_pd(p, x); }
  DT_AVX static R fma(R a, R b, R c) { return _mm256_fmadd_pd(a, b, c); }
  DT_AVX static R add(R a, R b) { return _mm256_add_pd(a, b); }
};

/// Rows [i, i + R) of C from their packed panel `Ap` (k x 6: row r of the
/// panel's k-th group is a[i + r, k]) and one packed strip `Bp` (k x W, W = 2
/// vectors): writes the first `w` columns at `C` (row stride n).
template <class T, int R>
DT_AVX void tile(const T *Ap, int64_t k, const T *Bp, T *C, int64_t n, int64_t w) {
  using V = Vec<T>;
  constexpr int L = V::L, W = 2 * L;
  alignas(32) T st[kMaxDepth][R][W];
  int hs[kMaxDepth];
  int top = 0;
  typename V::R c[R][2];
  for (int64_t k0 = 0; k0 < k; k0 += KB) {
    const int64_t k1 = std::min(k0 + KB, k);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      c[r][0] = c[r][1] = V::zero();
    const T *b = Bp + k0 * W;
    for (int64_t p = k0; p < k1; ++p, b += W) {
      auto b0 = V::load(b), b1 = V::load(b + L);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        auto x = V::bcast(Ap + p * 6 + r);
        c[r][0] = V::fma(x, b0, c[r][0]);
        c[r][1] = V::fma(x, b1, c[r][1]);
      }
    }
    int h = 0;
    for (; top > 0 && hs[top - 1] == h; ++h) { // left subtree (stack) + right (c)
      --top;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        c[r][0] = V::add(V::load(st[top][r]), c[r][0]);
        c[r][1] = V::add(V::load(st[top][r] + L), c[r][1]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      V::store(st[top][r], c[r][0]);
      V::store(st[top][r] + L, c[r][1]);
    }
    hs[top++] = h;
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) { // fold from the top: st[s] + (the rest)
    c[r][0] = V::load(st[top - 1][r]);
    c[r][1] = V::load(st[top - 1][r] + L);
    for (int s = top - 2; s >= 0; --s) {
      c[r][0] = V::add(V::load(st[s][r]), c[r][0]);
      c[r][1] = V::add(V::load(st[s][r] + L), c[r][1]);
    }
    V::store(st[0][r], c[r][0]);
    V::store(st[0][r] + L, c[r][1]);
    std::memcpy(C + r * n, st[0][r], sizeof(T) * w);
  }
}

/// Rows [m0, m1) of C (vector path) from A (m x k; stored k x m when `ta`)
/// and the packed strips of B. A block of rows is packed into panels of 6
/// rows (k x 6, zero rows past m1), small enough to stay in cache while
/// every strip of B passes.
template <class T>
DT_AVX void vectorRows(const T *A, bool ta, int64_t m, const T *Bp, T *C, int64_t m0, int64_t m1,
                       int64_t k, int64_t n) {
  constexpr int W = 2 * Vec<T>::L;
  const int64_t strips = (n + W - 1) / W;
  const int64_t mc =
      std::max<int64_t>(6, (int64_t)(256 * 1024 / sizeof(T)) / std::max<int64_t>(k, 1) / 6 * 6);
  std::vector<T> ap((size_t)(std::min(mc, (m1 - m0 + 5) / 6 * 6) * k));
  for (int64_t ib = m0; ib < m1; ib += mc) {
    const int64_t ie = std::min(ib + mc, m1), groups = (ie - ib + 5) / 6;
    for (int64_t g = 0; g < groups; ++g) {
      T *dst = ap.data() + g * k * 6;
      const int64_t i0 = ib + g * 6, rows = std::min<int64_t>(6, ie - i0);
      if (ta) { // A stored k x m: six consecutive values per k
        for (int64_t p = 0; p < k; ++p)
          for (int r = 0; r < 6; ++r)
            dst[p * 6 + r] = r < rows ? A[p * m + i0 + r] : T(0);
      } else {
        for (int r = 0; r < 6; ++r)
          for (int64_t p = 0; p < k; ++p)
            dst[p * 6 + r] = r < rows ? A[(i0 + r) * k + p] : T(0);
      }
    }
    for (int64_t s = 0; s < strips; ++s) {
      const T *bp = Bp + s * k * W;
      const int64_t j0 = s * W, w = std::min<int64_t>(W, n - j0);
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t i = ib + g * 6;
        const T *a = ap.data() + g * k * 6;
        T *c = C + i * n + j0;
        switch (std::min<int64_t>(6, ie - i)) {
        case 6:
          tile<T, 6>(a, k, bp, c, n, w);
          break;
        case 5:
          tile<T, 5>(a, k, bp, c, n, w);
          break;
        case 4:
          tile<T, 4>(a, k, bp, c, n, w);
          break;
        case 3:
          tile<T, 3>(a, k, bp, c, n, w);
          break;
        case 2:
          tile<T, 2>(a, k, bp, c, n, w);
          break;
        default:
          tile<T, 1>(a, k, bp, c, n, w);
          break;
        }
      }
    }
  }
}

bool hasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

/// B (k x n; stored n x k when `tb`) as strips of W columns, each k x W
/// row-major and zero-padded past column n.
template <class T> std::vector<T> packStrips(const T *B, int64_t k, int64_t n, bool tb, int W) {
  const int64_t strips = (n + W - 1) / W;
  std::vector<T> p((size_t)(strips * k * W), T(0));
  for (int64_t s = 0; s < strips; ++s) {
    T *dst = p.data() + s * k * W;
    const int64_t j0 = s * W, w = std::min<int64_t>(W, n - j0);
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < w; ++j)
        dst[q * W + j] = tb ? B[(j0 + j) * k + q] : B[q * n + j0 + j];
  }
  return p;
}
#endif

/// `src` (rows x cols, row-major) transposed into `dst`.
template <class T>
void transposeInto(const T *src, int64_t rows, int64_t cols, std::vector<T> &dst) {
  dst.resize((size_t)(rows * cols));
  constexpr int64_t t = 32; // tiles that stay in cache on both sides
  for (int64_t r0 = 0; r0 < rows; r0 += t)
    for (int64_t c0 = 0; c0 < cols; c0 += t)
      for (int64_t r = r0; r < std::min(r0 + t, rows); ++r)
        for (int64_t c = c0; c < std::min(c0 + t, cols); ++c)
          dst[(size_t)(c * rows + r)] = src[r * cols + c];
}

/// Runs rows(m0, m1) over [0, m) on up to `threads` threads, in blocks of
/// whole 6-row tiles, when the product is large enough to pay for them.
template <class F> void splitRows(int64_t m, int64_t work, int threads, const F &rows) {
  int64_t per = (m + threads - 1) / std::max(threads, 1);
  per = (per + 5) / 6 * 6;
  if (threads <= 1 || work < (int64_t(1) << 22) || per >= m)
    return rows(0, m);
  std::vector<std::thread> pool;
  for (int64_t r0 = per; r0 < m; r0 += per)
    pool.emplace_back([=, &rows] { rows(r0, std::min(m, r0 + per)); });
  rows(0, per);
  for (auto &t : pool)
    t.join();
}

template <class T>
void product(const T *A, const T *B, T *C, int64_t m, int64_t k, int64_t n, bool ta, bool tb,
             int threads) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(C, C + m * n, T(0));
    return;
  }
#ifdef DT_DET_X86
  if (hasAvx2Fma()) {
    std::vector<T> bp = packStrips(B, k, n, tb, 2 * Vec<T>::L);
    const T *P = bp.data();
    splitRows(m, m * n * k, threads,
              [&](int64_t m0, int64_t m1) { vectorRows(A, ta, m, P, C, m0, m1, k, n); });
    return;
  }
#endif
  std::vector<T> at, bt;
  if (ta) { // A is stored k x m
    transposeInto(A, k, m, at);
    A = at.data();
  }
  if (tb) { // B is stored n x k
    transposeInto(B, n, k, bt);
    B = bt.data();
  }
  splitRows(m, m * n * k, threads,
            [&](int64_t m0, int64_t m1) { scalarRows(A, B, C, m0, m1, k, n); });
}

template <class T>
void tree(const std::vector<const T *> &parts, size_t lo, size_t hi, T *out, int64_t count) {
  if (hi - lo == 1) {
    if (out != parts[lo])
      std::memmove(out, parts[lo], sizeof(T) * count);
    return;
  }
  size_t h = 1;
  while (h * 2 < hi - lo)
    h *= 2;
  std::vector<T> right((size_t)count);
  tree(parts, lo + h, hi, right.data(), count);
  tree(parts, lo, lo + h, out, count);
  for (int64_t e = 0; e < count; ++e)
    out[e] = out[e] + right[(size_t)e];
}

} // namespace

void deterministicMatrix(bool f64, const void *A, const void *B, void *C, int64_t m, int64_t k,
                         int64_t n, bool ta, bool tb, int threads) {
  if (f64)
    product((const double *)A, (const double *)B, (double *)C, m, k, n, ta, tb, threads);
  else
    product((const float *)A, (const float *)B, (float *)C, m, k, n, ta, tb, threads);
}

void deterministicTree(bool f64, const std::vector<const void *> &parts, void *out, int64_t count) {
  if (parts.empty() || count == 0)
    return;
  auto run = [&](auto *o) {
    using T = std::remove_pointer_t<decltype(o)>;
    std::vector<const T *> ps;
    for (const void *p : parts)
      ps.push_back((const T *)p);
    tree(ps, 0, ps.size(), o, count);
  };
  if (f64)
    run((double *)out);
  else
    run((float *)out);
}

} // namespace dt
