// This file implements the deterministic matrix product (BlasDeterministic.h):
// leaves of kDeterministicBlock k indices, each one fma chain from 0, combined
// in the fixed tree. The tree is walked as a binary counter: a finished leaf
// merges with the stack's top while the top is a subtree of the same height
// (left + right), and the stack, whose heights fall from bottom to top, folds
// from the top at the end; that is exactly deterministicTree's recursion.
//
// The vector kernel (BlasDeterministicKernel.inc, AVX-512 where the CPU has
// it, else AVX2+FMA) packs B into strips of 2 vector widths (zero-padded
// columns, never stored), keeps a tile of up to 6 rows x 2 vectors in
// registers for one leaf and runs a block of rows against every strip while
// that block of A is in cache. Each SIMD lane is one element's own chain, so
// any width, tile, edge or thread split gives the portable path's bits.
#include "runtime/BlasDeterministic.h"
#include "runtime/GemmStrips.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <type_traits>

// The vector paths need GCC's target pragmas (BlasDeterministicKernel.inc);
// other compilers run the portable path (the same bits, slower).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define DT_DET_X86 1
#endif

namespace dt {

namespace {

using gemm_strips::packStrips;
using gemm_strips::splitRows;

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
namespace avx2 {
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define DT_DET_BITS 256
#include "runtime/BlasDeterministicKernel.inc"
#undef DT_DET_BITS
#pragma GCC pop_options
} // namespace avx2

namespace avx512 {
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#define DT_DET_BITS 512
#include "runtime/BlasDeterministicKernel.inc"
#undef DT_DET_BITS
#pragma GCC pop_options
} // namespace avx512

bool hasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool hasAvx512() { return __builtin_cpu_supports("avx512f") && hasAvx2Fma(); }

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

template <class T>
bool product(DeterministicIsa isa, const T *A, const T *B, T *C, int64_t m, int64_t k, int64_t n,
             bool ta, bool tb, int threads) {
  if (m == 0 || n == 0)
    return true;
  if (k == 0) {
    std::fill(C, C + m * n, T(0));
    return true;
  }
#ifdef DT_DET_X86
  const bool best = isa == DeterministicIsa::Best;
  if ((best || isa == DeterministicIsa::Avx512) && hasAvx512())
    return avx512::vectorProduct(A, ta, B, tb, C, m, k, n, threads), true;
  if ((best || isa == DeterministicIsa::Avx2) && hasAvx2Fma())
    return avx2::vectorProduct(A, ta, B, tb, C, m, k, n, threads), true;
#endif
  if (isa != DeterministicIsa::Best && isa != DeterministicIsa::Portable)
    return false;
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
  return true;
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
  deterministicMatrixOn(DeterministicIsa::Best, f64, A, B, C, m, k, n, ta, tb, threads);
}

bool deterministicMatrixOn(DeterministicIsa isa, bool f64, const void *A, const void *B, void *C,
                           int64_t m, int64_t k, int64_t n, bool ta, bool tb, int threads) {
  if (f64)
    return product(isa, (const double *)A, (const double *)B, (double *)C, m, k, n, ta, tb,
                   threads);
  return product(isa, (const float *)A, (const float *)B, (float *)C, m, k, n, ta, tb, threads);
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
