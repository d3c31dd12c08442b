// Benchmark: 1024^3 f32 gemm through runtime/Blas against a direct
// cblas_sgemm call on the same buffers, both with OpenBLAS pinned to one
// thread (as gemm runs inside a rank thread). Target (not a timed test):
// gemm >= 0.9x the direct call.
#include "BenchUtil.h"
#include "runtime/Blas.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace dt;
using dt::bench::best;

int main() {
  const int64_t n = 1024;
  HostTensor a(DType::F32, {n, n}), b(DType::F32, {n, n}), c(DType::F32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) {
    a.data<float>()[i] = (float)((i * 7) % 13) * 0.1f;
    b.data<float>()[i] = (float)((i * 5) % 11) * 0.1f;
  }
  openblas_set_num_threads(1);
  gemm(a, b, c); // warm-up
  // Interleaved runs, best of each: both see the same machine load.
  double tg = 1e30, tc = 1e30;
  for (int i = 0; i < 8; ++i) {
    tg = std::min(tg, best(1, [&] { gemm(a, b, c); }));
    tc = std::min(tc, best(1, [&] {
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n,
                                1.0f, a.data<float>(), (int)n, b.data<float>(), (int)n, 0.0f,
                                c.data<float>(), (int)n);
                  }));
  }
  double flop = 2.0 * n * n * n;
  double gg = flop / tg / 1e9, gc = flop / tc / 1e9;
  std::printf("gemm: %.2f GFLOP/s, cblas_sgemm: %.2f GFLOP/s, ratio %.3f\n", gg, gc, gg / gc);
  std::printf("summary: gemm/cblas ratio %.3f (target >= 0.90) %s\n", gg / gc,
              gg / gc >= 0.9 ? "MET" : "MISSED");
  return 0;
}
