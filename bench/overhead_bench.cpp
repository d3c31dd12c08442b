// overhead_bench: the per-op cost of the CPU executor on tiny tensors. The
// program is a dependency chain of 10,000 adds on a replicated f32[4]
// (`a1 = a0 + 1.0`, ...), run on 1 and 4 ranks, three ways, interleaved so
// each sees the same machine load:
//   fused      the default pipeline: the fuser merges the chain into
//              ceil(10000 / kMaxFusedOps) kernels (two distinct ones compile);
//   unfused    one JIT kernel per op (fuseModule(m, 1)): 10,000 launches a rank;
//   reference  no fusion pass: 10,000 ops on the reference kernels.
// Per-op overhead = wall time of Executor::run / 10,000 (best of several runs;
// ranks are threads, so on a machine with fewer cores than ranks the 4-rank
// numbers include time slicing). Target: < 1 us per op (PyTorch DTensor eager
// pays tens of us). Prints ratios measured in the same run; not a timed test.
#include "codegen/CpuJIT.h"
#include "frontend/Compilation.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

using namespace dt;

namespace {

constexpr int kOps = 10000;

std::string program(int ranks) {
  std::string p = "mesh m = [x = " + std::to_string(ranks) + "]\n";
  p += "let a0 : f32[4] @ m[_] = ones()\n";
  for (int i = 1; i <= kOps; ++i)
    p += "let a" + std::to_string(i) + " = a" + std::to_string(i - 1) + " + 1.0\n";
  p += "print(a" + std::to_string(kOps) + ")\n";
  return p;
}

enum class Mode { Fused, Unfused, Reference };

struct Prepared {
  Compilation s{pipelineCompileOptions()};
  std::unique_ptr<Executor> ex;
  std::ostringstream out;
};

void prepare(Prepared &p, const std::string &text, Mode mode, CpuJIT &jit, CpuJIT &quick) {
  PipelineOptions po;
  po.spmd = true;
  po.fusion = mode == Mode::Fused;
  std::ostringstream log;
  if (!p.s.compile("overhead.dt", text) || !runPipeline(p.s, po, log)) {
    std::fprintf(stderr, "%s", p.s.diags.renderAll().c_str());
    std::exit(1);
  }
  if (mode == Mode::Unfused)
    fuseModule(p.s.module, 1);
  ExecOptions eo;
  eo.cpuJit = &jit;
  eo.quickJit = &quick;
  p.ex = std::make_unique<Executor>(p.s.module, p.out, eo);
  p.ex->run("main", {}); // warm-up: compiles the kernels
}

double runOnce(Prepared &p) {
  p.out.str("");
  auto t0 = std::chrono::steady_clock::now();
  p.ex->run("main", {});
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main() {
  CpuJIT jit, quick(CpuJIT::Options{0, {}});
  const char *names[] = {"fused", "unfused (1 kernel/op)", "reference kernels"};
  for (int ranks : {1, 4}) {
    std::string text = program(ranks);
    Prepared ps[3];
    for (int m = 0; m < 3; ++m)
      prepare(ps[m], text, (Mode)m, jit, quick);
    if (ps[0].out.str() != ps[1].out.str() || ps[0].out.str() != ps[2].out.str()) {
      std::printf("overhead: MISMATCH between the modes\n");
      return 1;
    }
    double best[3] = {1e30, 1e30, 1e30};
    for (int rep = 0; rep < 7; ++rep)
      for (int m = 0; m < 3; ++m)
        best[m] = std::min(best[m], runOnce(ps[m]));
    for (int m = 0; m < 3; ++m) {
      const ExecStats &st = ps[m].ex->stats();
      std::printf("ranks %d, %-22s: %8.3f ms, %6.3f us/op (%lld kernels, %lld launches/rank)\n",
                  ranks, names[m], best[m] * 1e3, best[m] * 1e6 / kOps, (long long)st.kernels,
                  (long long)st.ranks[0].kernelCalls);
    }
    std::printf("ranks %d: unfused/fused %.1fx, reference/unfused %.2fx\n", ranks,
                best[1] / best[0], best[2] / best[1]);
    std::printf("summary: ranks %d per-op overhead %.3f us unfused, %.3f us reference "
                "(target < 1 us) %s\n",
                ranks, best[1] * 1e6 / kOps, best[2] * 1e6 / kOps,
                best[1] * 1e6 / kOps < 1.0 ? "MET" : "MISSED");
  }
  std::printf("jit (O0 tier, the kernels here are small): %lld kernels compiled, %lld cache hits, "
              "%.1f ms compiling\n",
              (long long)quick.compiles(), (long long)quick.cacheHits(),
              quick.compileSeconds() * 1e3);
  return 0;
}
