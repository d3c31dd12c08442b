// Unit tests of the CPU backend's compiled path: the fusion pass (one kernel
// for a chain, shared producers stay materialised, the IR still verifies and
// round-trips), the JIT-run kernels against the reference evaluator, kernel
// reuse across sizes, and the memory planner (lower peak than no reuse,
// in-place `var` updates).
#include "codegen/CpuJIT.h"
#include "codegen/FusedKernel.h"
#include "frontend/Compilation.h"
#include "ir/IRParser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace dt;

namespace {

void build(Compilation &s, const std::string &text, bool spmd, bool fusion) {
  PipelineOptions po;
  po.spmd = spmd;
  po.fusion = fusion;
  std::ostringstream log;
  bool ok = s.compile("test.dt", text) && runPipeline(s, po, log);
  INFO(s.diags.renderAll());
  REQUIRE(ok);
}

int countKernels(const Module &m) {
  int n = 0;
  for (auto &f : m.functions)
    n += isFusedKernel(f);
  return n;
}

/// Runs `text` distributed (with `eo`) and on the reference evaluator.
std::pair<std::string, std::string> runBoth(const std::string &text, ExecOptions eo,
                                            bool fusion = true, ExecStats *stats = nullptr) {
  Compilation d(pipelineCompileOptions()), r(pipelineCompileOptions());
  build(d, text, true, fusion);
  build(r, text, false, false);
  std::ostringstream refOut, out;
  ReferenceEvaluator(r.module, refOut).run("main", {});
  Executor ex(d.module, out, eo);
  ex.run("main", {});
  if (stats)
    *stats = ex.stats();
  return {out.str(), refOut.str()};
}

const char *kChain = R"(mesh m = [x = 2]
let a : f32[8, 4] @ m[x, _] = rand(seed=1)
let b : f32[8, 4] @ m[x, _] = rand(seed=2)
let c = -relu(exp(a * b + a - b) * 2.0 / (a + 1.0))
print(c)
)";

} // namespace

TEST_CASE("fusion: an 8-op elementwise chain with its sources is one kernel") {
  Compilation s(pipelineCompileOptions());
  build(s, kChain, true, true);
  CHECK(countKernels(s.module) == 1);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  // The fused module prints and parses back byte for byte.
  std::string text = printModule(s.module);
  Module back;
  std::string err;
  REQUIRE(parseIR(text, back, err));
  CHECK(printModule(back) == text);
  for (auto &f : s.module.functions)
    if (isFusedKernel(f)) {
      FusedKernel fk = buildFusedKernel(f);
      CHECK(fk.kernel.inputs.empty()); // both random sources are inside
      CHECK(usesGlobalIndex(fk.kernel));
    }
}

TEST_CASE("fusion: a value used outside the group stays materialised") {
  Compilation s(pipelineCompileOptions());
  build(s, R"(mesh m = [x = 2]
let a : f32[8] @ m[x] = rand(seed=1)
let t = exp(a)
let u = t * 2.0
print(u)
print(t)
)",
        true, true);
  // t escapes to a print (through a gather), so it is its own kernel's result.
  CHECK(countKernels(s.module) == 2);
}

TEST_CASE("fusion: maxOps 1 makes one kernel per op") {
  Compilation s(pipelineCompileOptions());
  build(s, kChain, true, false);
  // 9 kernels: the scalar constants join their op, the random sources too.
  CHECK(fuseModule(s.module, 1) == 9);
}

TEST_CASE("fused kernels: JIT, reference kernels and reference evaluator agree") {
  const char *prog = R"(mesh m = [x = 2, y = 2]
let a : f32[5, 6] @ m[x, y] = randn(seed=3)
let r : f32[6] @ m[y] = rand(seed=4)
print(where(a > r, a * r, -a) + 1.0)
)";
  ExecOptions jit, ref;
  ref.jit = false;
  for (const char *text : {kChain, prog}) {
    auto [outJ, refJ] = runBoth(text, jit);
    auto [outR, refR] = runBoth(text, ref);
    CHECK(outJ == outR);
    CHECK(outJ.size() > 10);
  }
}

TEST_CASE("fused kernels: a reduction is fused and matches the reference") {
  ExecStats st;
  auto [out, ref] = runBoth(R"(mesh m = [x = 2]
let a : i32[6, 4] @ m[x, _] = ones()
let b = a * 3 + 1
print(relayout(sum(b, dims=[1]), m[_]))
)",
                            ExecOptions{}, true, &st);
  CHECK(out == ref);
  CHECK(st.kernels >= 1);
}

TEST_CASE("memory plan: reuse lowers the peak of a long chain, var updates run in place") {
  std::string prog = "mesh m = [x = 2]\nvar w : f32[64, 64] @ m[x, _] = ones()\n";
  for (int i = 0; i < 24; ++i)
    prog += "let t" + std::to_string(i) + " = w * " + std::to_string(i) + ".0 + 1.0\n" + "w = t" +
            std::to_string(i) + " - w\n";
  prog += "print(relayout(sum(w, dims=[0, 1]), m[]))\n";
  ExecOptions plan, keep;
  keep.memoryPlan = false;
  // One kernel per op (fusion would make this one kernel): 48 launches a rank.
  auto run = [&](ExecOptions eo, ExecStats &st) {
    Compilation d(pipelineCompileOptions());
    build(d, prog, true, false);
    fuseModule(d.module, 1);
    std::ostringstream out;
    Executor ex(d.module, out, eo);
    ex.run("main", {});
    st = ex.stats();
    return out.str();
  };
  ExecStats a, b;
  std::string outPlan = run(plan, a), outKeep = run(keep, b);
  CHECK(outPlan == outKeep);
  REQUIRE(a.ranks.size() == 2);
  MESSAGE("peak bytes per rank: planned " << a.ranks[0].peakBytes << ", no reuse "
                                          << b.ranks[0].peakBytes);
  CHECK(a.ranks[0].peakBytes * 8 < b.ranks[0].peakBytes);
  CHECK(a.ranks[0].inPlace > 0);
  CHECK(b.ranks[0].inPlace == 0);
}

TEST_CASE("cpu jit: one kernel compiles once across sizes and ranks") {
  CpuJIT jit;
  auto prog = [](int n) {
    return "mesh m = [x = 2]\nlet a : f32[" + std::to_string(n) +
           "] @ m[x] = rand(seed=1)\nprint(exp(a) * 2.0)\n";
  };
  ExecOptions eo;
  eo.cpuJit = eo.quickJit = &jit; // one compiler for both tiers
  for (int n : {8, 10, 100000}) {
    Compilation d(pipelineCompileOptions());
    build(d, prog(n), true, true);
    std::ostringstream out;
    Executor(d.module, out, eo).run("main", {});
  }
  CHECK(jit.compiles() == 1);
  CHECK(jit.cacheHits() == 2);
}
