// This file implements deterministic mode's GPU matrix product (see
// CudaDeterministicGemm.h).
#include "runtime/CudaDeterministicGemm.h"

#include "ir/DeterministicOrder.h"
#include "support/Errors.h"

#include <algorithm>
#include <string>

namespace dt {

namespace {

// One element of C a thread: leaves of 64 k (kDeterministicBlock), each an
// fma chain from 0, pushed on the leaf tree (BlasDeterministic.cpp's
// scalarRows, line for line).
const char *kBody = R"(
// The leaf tree as a binary counter: a finished leaf merges with the
// stack's top while the top is a subtree of the same height; the stack
// folds from the top at the end.
template <class T> __device__ __forceinline__ void dtTreePush(T *st, int *hs, int &top, T acc) {
  int h = 0;
  for (; top > 0 && hs[top - 1] == h; ++h)
    acc = st[--top] + acc;
  st[top] = acc;
  hs[top++] = h;
}
template <class T> __device__ __forceinline__ T dtTreeFold(const T *st, int top) {
  T res = top > 0 ? st[top - 1] : (T)0;
  for (int q = top - 2; q >= 0; --q)
    res = st[q] + res;
  return res;
}
#define DT_DET_GEMM(NAME, T, FMA)                                                        \
  extern "C" __global__ void NAME(const T *A, const T *B, T *C, long long m, long long k, \
                                  long long n, int ta, int tb, long long batch,           \
                                  long long sA, long long sB, long long sC) {             \
    const long long mn = m * n, total = batch * mn;                                      \
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;      \
         e += (long long)gridDim.x * blockDim.x) {                                       \
      const long long bi = e / mn, r = e - bi * mn, i = r / n, j = r - i * n;            \
      const T *a = A + bi * sA, *b = B + bi * sB;                                        \
      T st[64];                                                                          \
      int hs[64], top = 0;                                                               \
      for (long long k0 = 0; k0 < k; k0 += LEAF) {                                       \
        const long long k1 = k0 + LEAF < k ? k0 + LEAF : k;                              \
        T acc = 0;                                                                       \
        for (long long p = k0; p < k1; ++p)                                              \
          acc = FMA(ta ? a[p * m + i] : a[i * k + p], tb ? b[j * k + p] : b[p * n + j],  \
                    acc);                                                                \
        dtTreePush(st, hs, top, acc);                                                    \
      }                                                                                  \
      C[bi * sC + i * n + j] = dtTreeFold(st, top);                                      \
    }                                                                                    \
  }
DT_DET_GEMM(dt_det_gemm_f32, float, fmaf)
DT_DET_GEMM(dt_det_gemm_f64, double, fma)

// A skinny C with too few elements to fill the device (modulation's 16 x
// 4096), in two launches: a thread a (leaf, column, group of 16 rows) runs
// the 16 rows' fma chains of that leaf, each from 0 in k order, reading each
// of B's values once for the 16 rows, into L[batch][leaf][row][column]; then
// a thread an element merges its leaves in leaf order as above. The same
// chains and the same tree: the same bits.
#define DT_DET_GEMM_SPLIT(NAME, T, FMA)                                                   \
  extern "C" __global__ void NAME##_leaves(const T *A, const T *B, T *L, long long m,       \
                                           long long k, long long n, int ta, int tb,        \
                                           long long batch, long long sA, long long sB,     \
                                           long long leaves) {                              \
    const long long groups = (m + 15) / 16, total = batch * leaves * groups * n;          \
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;       \
         e += (long long)gridDim.x * blockDim.x) {                                        \
      const long long j = e % n, g = e / n % groups, leaf = e / (n * groups) % leaves,    \
                      bi = e / (n * groups * leaves);                                     \
      const T *a = A + bi * sA, *b = B + bi * sB;                                         \
      const long long i0 = g * 16, rows = m - i0 < 16 ? m - i0 : 16, k0 = leaf * LEAF,   \
                      k1 = k0 + LEAF < k ? k0 + LEAF : k;                                 \
      T acc[16];                                                                          \
      _Pragma("unroll") for (int r = 0; r < 16; ++r) acc[r] = 0;                          \
      for (long long p = k0; p < k1; ++p) {                                               \
        const T bv = tb ? b[j * k + p] : b[p * n + j];                                    \
        _Pragma("unroll") for (int r = 0; r < 16; ++r) if (r < rows) acc[r] =             \
            FMA(ta ? a[p * m + i0 + r] : a[(i0 + r) * k + p], bv, acc[r]);                \
      }                                                                                   \
      T *l = L + ((bi * leaves + leaf) * m + i0) * n + j;                                 \
      _Pragma("unroll") for (int r = 0; r < 16; ++r) if (r < rows) l[r * n] = acc[r];     \
    }                                                                                     \
  }                                                                                       \
  extern "C" __global__ void NAME##_merge(const T *L, T *C, long long m, long long n,       \
                                          long long batch, long long sC, long long leaves) {\
    const long long mn = m * n, total = batch * mn;                                       \
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;       \
         e += (long long)gridDim.x * blockDim.x) {                                        \
      const long long bi = e / mn, r = e - bi * mn;                                       \
      T st[64];                                                                           \
      int hs[64], top = 0;                                                                \
      for (long long leaf = 0; leaf < leaves; ++leaf)                                     \
        dtTreePush(st, hs, top, L[(bi * leaves + leaf) * mn + r]);                        \
      C[bi * sC + r] = dtTreeFold(st, top);                                               \
    }                                                                                     \
  }
DT_DET_GEMM_SPLIT(dt_det_gemm_split_f32, float, fmaf)
DT_DET_GEMM_SPLIT(dt_det_gemm_split_f64, double, fma)

// The same order on a tile of TM x TN elements of C a block (256 threads, a
// thread RM x RN elements: rows ty + 16 r, columns tx + 16 c). A leaf's 64 k
// of A's rows and B's columns are staged in shared memory; each element's
// leaf is still one fma chain from 0 in k order, and after each leaf every
// element merges with its stack exactly as above (the heights are the same
// for all: they depend on the leaf count alone).
__device__ __forceinline__ float dtFma(float x, float y, float z) { return fmaf(x, y, z); }
__device__ __forceinline__ double dtFma(double x, double y, double z) { return fma(x, y, z); }
template <class T, int TM, int TN, int RM, int RN>
__device__ void detGemmTiled(const T *A, const T *B, T *C, long long m, long long k, long long n,
                             int ta, int tb, long long batch, long long sA, long long sB,
                             long long sC) {
  __shared__ T As[LEAF][TM + 1];
  __shared__ T Bs[LEAF][TN + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const long long tm = (m + TM - 1) / TM, tn = (n + TN - 1) / TN, tiles = batch * tm * tn;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long bi = t / (tm * tn), i0 = (t / tn) % tm * TM, j0 = t % tn * TN;
    const T *a = A + bi * sA, *b = B + bi * sB;
    T st[48][RM][RN];
    int hs[48], top = 0;
    for (long long k0 = 0; k0 < k; k0 += LEAF) {
      const int len = (int)(k0 + LEAF < k ? LEAF : k - k0);
      __syncthreads(); // the previous leaf's reads are done
      for (int e = threadIdx.x; e < TM * LEAF; e += 256) { // coalesced along the stored dim
        const int r = ta ? e % TM : e / LEAF, p = ta ? e / TM : e % LEAF;
        const long long i = i0 + r;
        As[p][r] = i < m && p < len ? (ta ? a[(k0 + p) * m + i] : a[i * k + k0 + p]) : (T)0;
      }
      for (int e = threadIdx.x; e < TN * LEAF; e += 256) {
        const int c = tb ? e / LEAF : e % TN, p = tb ? e % LEAF : e / TN;
        const long long j = j0 + c;
        Bs[p][c] = j < n && p < len ? (tb ? b[j * k + k0 + p] : b[(k0 + p) * n + j]) : (T)0;
      }
      __syncthreads();
      T acc[RM][RN];
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int c = 0; c < RN; ++c)
          acc[r][c] = 0;
      for (int p = 0; p < len; ++p) {
        T av[RM], bv[RN];
#pragma unroll
        for (int r = 0; r < RM; ++r)
          av[r] = As[p][ty + 16 * r];
#pragma unroll
        for (int c = 0; c < RN; ++c)
          bv[c] = Bs[p][tx + 16 * c];
#pragma unroll
        for (int r = 0; r < RM; ++r)
#pragma unroll
          for (int c = 0; c < RN; ++c)
            acc[r][c] = dtFma(av[r], bv[c], acc[r][c]);
      }
      int h = 0;
      for (; top > 0 && hs[top - 1] == h; ++h) {
        --top;
#pragma unroll
        for (int r = 0; r < RM; ++r)
#pragma unroll
          for (int c = 0; c < RN; ++c)
            acc[r][c] = st[top][r][c] + acc[r][c];
      }
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int c = 0; c < RN; ++c)
          st[top][r][c] = acc[r][c];
      hs[top++] = h;
    }
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c) {
        const long long i = i0 + ty + 16 * r, j = j0 + tx + 16 * c;
        if (i >= m || j >= n)
          continue;
        T res = top > 0 ? st[top - 1][r][c] : (T)0;
        for (int q = top - 2; q >= 0; --q)
          res = st[q][r][c] + res;
        C[bi * sC + i * n + j] = res;
      }
  }
}
#define DT_DET_GEMM_TILED(NAME, T, TM, RM)                                                \
  extern "C" __global__ void __launch_bounds__(256)                                      \
      NAME(const T *A, const T *B, T *C, long long m, long long k, long long n, int ta,   \
           int tb, long long batch, long long sA, long long sB, long long sC) {           \
    detGemmTiled<T, TM, TM, RM, RM>(A, B, C, m, k, n, ta, tb, batch, sA, sB, sC);       \
  }
DT_DET_GEMM_TILED(dt_det_gemm_tiled_f32, float, 64, 4)
DT_DET_GEMM_TILED(dt_det_gemm_tiled_f64, double, 32, 2)
)";

} // namespace

const std::string &cudaDeterministicGemmSource() {
  static const std::string source =
      "#define LEAF " + std::to_string(kDeterministicBlock) + "LL\n" + kBody;
  return source;
}

bool cudaDeterministicGemmLeafSplit(int64_t batch, int64_t m, int64_t k, int64_t n,
                                    int64_t elementBytes, int64_t sms) {
  const int64_t leaves = (k + kDeterministicBlock - 1) / kDeterministicBlock;
  return leaves >= 2 && batch * m * n < sms * kCudaSmThreads &&
         batch * leaves * m * n * elementBytes <= kDeterministicGemmSplitBytes;
}

void cudaDeterministicGemm(CudaContext &ctx, const GemmDesc &g, CudaStream s) {
  if (g.type != GemmType::F32 && g.type != GemmType::F64)
    throw InternalError("cudaDeterministicGemm: f32 and f64 only");
  if ((g.lda && g.lda != (g.transA ? g.m : g.k)) || (g.ldb && g.ldb != (g.transB ? g.k : g.n)) ||
      (g.ldc && g.ldc != g.n) || g.alpha != 1 || g.beta != 0)
    throw InternalError("cudaDeterministicGemm: packed operands, alpha 1, beta 0 only");
  const long long total = (long long)g.batch * g.m * g.n;
  if (total == 0)
    return;
  // A tile of C a block when C has rows and columns to fill one (64 x 64 f32,
  // 32 x 32 f64); a skinny C (modulation's 16 rows) an element a thread, or
  // a (leaf, column, 16 rows) a thread and then the merge, when its elements
  // are fewer than a wave of threads (cudaDeterministicGemmLeafSplit).
  const bool f64 = g.type == GemmType::F64;
  const int64_t tile = f64 ? 32 : 64;
  const bool tiled = g.m >= tile / 2 && g.n >= tile / 2;
  const std::string t = f64 ? "f64" : "f32";
  const void *a = g.a, *b = g.b;
  void *c = g.c;
  long long m = g.m, k = g.k, n = g.n, batch = g.batch, sA = g.strideA, sB = g.strideB,
            sC = g.strideC;
  int ta = g.transA, tb = g.transB;
  const int64_t es = f64 ? 8 : 4;
  if (!tiled && cudaDeterministicGemmLeafSplit(g.batch, g.m, g.k, g.n, es, ctx.numSMs())) {
    long long leaves = (k + kDeterministicBlock - 1) / kDeterministicBlock;
    void *l = ctx.alloc(batch * leaves * m * n * es, s);
    void *leafArgs[] = {&a, &b, &l, &m, &k, &n, &ta, &tb, &batch, &sA, &sB, &leaves};
    const long long threads = batch * leaves * ((m + 15) / 16) * n;
    ctx.launchRaw(
        ctx.rawFunction(cudaDeterministicGemmSource(), "dt_det_gemm_split_" + t + "_leaves"),
        std::min<long long>((threads + 255) / 256, (long long)ctx.numSMs() * 64), 256, leafArgs, s);
    void *mergeArgs[] = {&l, &c, &m, &n, &batch, &sC, &leaves};
    ctx.launchRaw(
        ctx.rawFunction(cudaDeterministicGemmSource(), "dt_det_gemm_split_" + t + "_merge"),
        std::min<long long>((total + 255) / 256, (long long)ctx.numSMs() * 64), 256, mergeArgs, s);
    ctx.free(l); // stream ordered: reused after the launches
    return;
  }
  void *f = ctx.rawFunction(cudaDeterministicGemmSource(),
                            std::string(tiled ? "dt_det_gemm_tiled_" : "dt_det_gemm_") + t);
  void *args[] = {&a, &b, &c, &m, &k, &n, &ta, &tb, &batch, &sA, &sB, &sC};
  const long long tiles =
      (long long)g.batch * ((g.m + tile - 1) / tile) * ((g.n + tile - 1) / tile);
  const long long grid =
      tiled ? std::min<long long>(tiles, (long long)ctx.numSMs() * 8)
            : std::min<long long>((total + 255) / 256, (long long)ctx.numSMs() * 64);
  ctx.launchRaw(f, grid, 256, args, s);
}

} // namespace dt
