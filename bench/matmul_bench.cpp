// Benchmark: 1024^3 f32 gemm through runtime/Blas against a direct
// cblas_sgemm call on the same buffers, both with OpenBLAS pinned to one
// thread (as gemm runs inside a rank thread). Target (not a timed test):
// gemm >= 0.9x the direct call. Then deterministic mode's product
// (runtime/BlasDeterministic.h) on each instruction set this CPU has,
// against cblas_sgemm on the same shapes (1024^3 and an MLP's per-rank
// shapes), one thread each.
#include "BenchUtil.h"
#include "runtime/Blas.h"
#include "runtime/BlasDeterministic.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

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
  // Deterministic products: {m, k, n, ta, tb}.
  const int64_t shapes[][5] = {{1024, 1024, 1024, 0, 0},
                               {128, 256, 512, 0, 0},
                               {256, 128, 512, 1, 0},
                               {128, 128, 512, 0, 1},
                               {512, 128, 128, 1, 0}};
  const struct {
    DeterministicIsa isa;
    const char *name;
  } isas[] = {{DeterministicIsa::Avx512, "avx512"},
              {DeterministicIsa::Avx2, "avx2"},
              {DeterministicIsa::Portable, "portable"}};
  for (const auto &sh : shapes) {
    const int64_t m = sh[0], k = sh[1], n = sh[2];
    const bool ta = sh[3], tb = sh[4];
    std::vector<float> A(m * k), B(k * n), C(m * n);
    for (size_t i = 0; i < A.size(); ++i)
      A[i] = (float)((i * 7) % 13) * 0.1f;
    for (size_t i = 0; i < B.size(); ++i)
      B[i] = (float)((i * 5) % 11) * 0.1f;
    const int reps = (int)std::max<int64_t>(1, (int64_t)(2e8 / (double)(m * k * n)));
    auto blas = [&] {
      for (int r = 0; r < reps; ++r)
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)m, (int)n, (int)k, 1.0f, A.data(), ta ? (int)m : (int)k, B.data(),
                    tb ? (int)k : (int)n, 0.0f, C.data(), (int)n);
    };
    double tb0 = 1e30;
    for (int i = 0; i < 3; ++i)
      tb0 = std::min(tb0, best(1, blas));
    std::printf("deterministic %lldx%lldx%lld%s%s:", (long long)m, (long long)k, (long long)n,
                ta ? " ta" : "", tb ? " tb" : "");
    for (const auto &is : isas) {
      if (is.isa == DeterministicIsa::Portable && m * k * n > (int64_t)1 << 28)
        continue; // minutes
      if (!deterministicMatrixOn(is.isa, false, A.data(), B.data(), C.data(), m, k, n, ta, tb))
        continue;
      double td = 1e30;
      for (int i = 0; i < 3; ++i)
        td = std::min(td, best(1, [&] {
                        for (int r = 0; r < reps; ++r)
                          deterministicMatrixOn(is.isa, false, A.data(), B.data(), C.data(), m, k,
                                                n, ta, tb);
                      }));
      std::printf("  %s %.2fx", is.name, tb0 / td);
    }
    std::printf("  (of cblas_sgemm, %.1f GFLOP/s)\n", 2.0 * m * k * n * reps / tb0 / 1e9);
  }
  return 0;
}
