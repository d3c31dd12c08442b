// This file implements deterministic mode's GPU matrix product (see
// CudaDeterministicGemm.h).
#include "runtime/CudaDeterministicGemm.h"

#include "ir/DeterministicOrder.h"
#include "support/Errors.h"

#include <algorithm>

namespace dt {

namespace {

// One element of C a thread: leaves of 64 k (kDeterministicBlock), each an
// fma chain from 0; a finished leaf merges with the stack's top while the top
// is a subtree of the same height, and the stack folds from the top at the
// end (BlasDeterministic.cpp's scalarRows, line for line).
const char *kBody = R"(
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
        int h = 0;                                                                       \
        for (; top > 0 && hs[top - 1] == h; ++h)                                         \
          acc = st[--top] + acc;                                                         \
        st[top] = acc;                                                                   \
        hs[top++] = h;                                                                   \
      }                                                                                  \
      T res = top > 0 ? st[top - 1] : (T)0;                                              \
      for (int q = top - 2; q >= 0; --q)                                                 \
        res = st[q] + res;                                                               \
      C[bi * sC + i * n + j] = res;                                                      \
    }                                                                                    \
  }
DT_DET_GEMM(dt_det_gemm_f32, float, fmaf)
DT_DET_GEMM(dt_det_gemm_f64, double, fma)
)";

} // namespace

const std::string &cudaDeterministicGemmSource() {
  static const std::string source =
      "#define LEAF " + std::to_string(kDeterministicBlock) + "LL\n" + kBody;
  return source;
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
  void *f = ctx.rawFunction(cudaDeterministicGemmSource(),
                            g.type == GemmType::F64 ? "dt_det_gemm_f64" : "dt_det_gemm_f32");
  const void *a = g.a, *b = g.b;
  void *c = g.c;
  long long m = g.m, k = g.k, n = g.n, batch = g.batch, sA = g.strideA, sB = g.strideB,
            sC = g.strideC;
  int ta = g.transA, tb = g.transB;
  void *args[] = {&a, &b, &c, &m, &k, &n, &ta, &tb, &batch, &sA, &sB, &sC};
  const long long grid = std::min<long long>((total + 255) / 256, (long long)ctx.numSMs() * 64);
  ctx.launchRaw(f, grid, 256, args, s);
}

} // namespace dt
