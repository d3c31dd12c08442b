// Benchmark: a JIT-compiled fused chain of 8 elementwise f32 ops over 64 MiB
// against a plain memcpy of 64 MiB, both single-threaded, bandwidth counting
// bytes read + written. Target (not a timed test): fused >= 0.7x memcpy.
#include "BenchUtil.h"
#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace dt;
using dt::bench::best;

int main() {
  const int64_t bytes = 64ll << 20, n = bytes / 4;
  Kernel k = dt::bench::fused8Kernel();

  CpuJIT jit;
  CpuJIT::KernelFn f = jit.compile(k);
  float *in = (float *)std::aligned_alloc(64, bytes), *out = (float *)std::aligned_alloc(64, bytes);
  for (int64_t i = 0; i < n; ++i)
    in[i] = (float)(i % 1000) * 0.01f - 5.0f;
  std::memset(out, 0, bytes);
  void *bufs[] = {in, out};
  int64_t params[] = {n, 1, 1};
  // Sanity: a few elements against the interpreter.
  {
    std::vector<float> ri(in, in + 1000), ro(1000);
    void *rb[] = {ri.data(), ro.data()};
    int64_t rp[] = {1000, 1, 1};
    interpretKernel(k, rb, rp);
    f(bufs, params);
    if (std::memcmp(ro.data(), out, 1000 * 4) != 0) {
      std::printf("fused8: MISMATCH against the interpreter\n");
      return 1;
    }
  }
  // Interleaved runs, best of each: both see the same machine load.
  double tf = 1e30, tm = 1e30;
  for (int i = 0; i < 20; ++i) {
    tf = std::min(tf, best(1, [&] { f(bufs, params); }));
    tm = std::min(tm, best(1, [&] { std::memcpy(out, in, bytes); }));
  }
  double gf = 2.0 * bytes / tf / 1e9, gm = 2.0 * bytes / tm / 1e9;
  std::printf("compile: %.1f ms (cpu %s)\n", jit.compileSeconds() * 1e3, jit.hostCPU().c_str());
  std::printf("fused8: %.2f GB/s, memcpy: %.2f GB/s, ratio %.2f\n", gf, gm, gf / gm);
  std::printf("summary: fused8/memcpy ratio %.2f (target >= 0.70) %s\n", gf / gm,
              gf / gm >= 0.7 ? "MET" : "MISSED");
  std::free(in);
  std::free(out);
  return 0;
}
