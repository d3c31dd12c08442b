// Unit tests of SPMD lowering and the thread-mesh executor: the DESIGN.md
// example, every layout pair executed with exact integer values, printed
// components and layout tables, uneven and empty blocks, several meshes with
// device lists, rank failures, and the communication report.
#include "frontend/Compilation.h"
#include "passes/Explain.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"
#include "runtime/Verify.h"
#include "tests/SpmdProgramGen.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace dt;

namespace {

/// Compiles `text` with the SPMD pipeline (or the global one) into `s`.
void build(Compilation &s, const std::string &text, bool spmd = true) {
  PipelineOptions po;
  po.spmd = spmd;
  std::ostringstream log;
  bool ok = s.compile("test.dt", text) && runPipeline(s, po, log);
  INFO(s.diags.renderAll());
  REQUIRE(ok);
}

/// What `dtensorc run` prints for `text`.
std::string runDist(const std::string &text, ExecOptions eo = {}) {
  Compilation s(pipelineCompileOptions());
  build(s, text);
  std::ostringstream out;
  Executor(s.module, out, eo).run("main", {});
  return out.str();
}

/// Runs `text` both ways and compares with verify's tolerances.
std::string disagreement(const std::string &text) {
  Compilation d(pipelineCompileOptions()), r(pipelineCompileOptions());
  build(d, text);
  build(r, text, false);
  std::ostringstream refOut, out;
  auto refResults = ReferenceEvaluator(r.module, refOut).run("main", {});
  Executor ex(d.module, out);
  auto results = ex.run("main", {});
  auto checks = compareOutputs(refOut.str(), refResults, ex.printed(), results);
  return allPass(checks) ? "" : formatChecks(checks);
}

std::string layoutText(const std::string &a, const std::string &b) {
  return "m{x: " + a + ", y: " + b + "}";
}

} // namespace

TEST_CASE("spmd: the DESIGN.md example on 6 threads") {
  const char *prog = "mesh m = [x = 3, y = 2]\n"
                     "let a : f32[2, 3] @ m[_, x] = [[1, 2, 3], [4, 5, 6]]\n"
                     "let b : f32[3, 2] @ m[x, _] = [[6, 5], [4, 3], [2, 1]]\n"
                     "let c = a @ b\n"
                     "let d = relayout(c, m[_, _])\n"
                     "print(d)\n";
  CHECK(runDist(prog) == "[[20, 14], [56, 41]]\n");
  Compilation s(pipelineCompileOptions());
  build(s, prog);
  std::string report = explainModule(s.module, s.sources);
  CHECK(report.find("line 5: let d = relayout(c, m[_, _])") != std::string::npos);
  CHECK(report.find("all_reduce over x: m{x: partial(sum), y: replicate} -> m{x: replicate, y: "
                    "replicate}, 20 B per rank") != std::string::npos);
  CHECK(report.find("total: 1 collective steps (1 communicating), 20 B per rank") !=
        std::string::npos);
}

TEST_CASE("spmd: every layout pair moves exact integer values") {
  const char *pl[] = {"replicate", "shard(0)", "shard(1)", "partial(sum)", "partial(max)"};
  for (const char *shape : {"[7, 5]", "[3, 0]", "[1, 6]"}) {
    // One value, every source layout -> every printable target layout.
    std::string text = "mesh m = [x = 2, y = 3]\nlet base : i64" + std::string(shape) +
                       " @ m[_, _] = arange(dim=1)\nlet v = base * base + base\n";
    int k = 0;
    for (auto a0 : pl)
      for (auto a1 : pl)
        for (auto b0 : pl)
          for (auto b1 : pl) {
            if (std::string(b0).find("partial") != std::string::npos ||
                std::string(b1).find("partial") != std::string::npos)
              continue; // printed values need no partial axes
            std::string n = "t" + std::to_string(k++);
            text += "let " + n + " = relayout(relayout(v, " + layoutText(a0, a1) + "), " +
                    layoutText(b0, b1) + ")\nprint(" + n + ")\n";
          }
    INFO(shape);
    CHECK(disagreement(text) == "");
  }
}

TEST_CASE("spmd: components and layout table of a print") {
  const char *prog = "mesh m = [x = 2, y = 2]\n"
                     "let o : i32[3, 4] @ m{x: shard(0), y: shard(1)} = arange(dim=1)\n"
                     "print(o)\n";
  ExecOptions eo;
  eo.components = true;
  eo.visualize = true;
  std::string out = runDist(prog, eo);
  CHECK(out.find("[[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]\n") == 0);
  CHECK(out.find("components of `o`: i32[3, 4] @ m{x: shard(0), y: shard(1)}\n"
                 "device 0: [[0, 1], [0, 1]]\n"
                 "device 1: [[2, 3], [2, 3]]\n"
                 "device 2: [[0, 1]]\n"
                 "device 3: [[2, 3]]\n") != std::string::npos);
  CHECK(out.find("+---+---+\n| 0 | 1 |\n+---+---+\n| 2 | 3 |\n+---+---+\n") != std::string::npos);
}

TEST_CASE("spmd: empty blocks, host values and two meshes with device lists") {
  const char *prog = "mesh m = [x = 4]\n"
                     "mesh q = [dp = 2, tp = 2] devices [2, 3, 6, 7]\n"
                     "let a : f32[2, 3] @ m[x, _] = randn(seed=3)\n"
                     "print(a * 2.0)\n"
                     "let h = to_host(relayout(a, m[_, _]))\n"
                     "let b = distribute(h, q[dp, tp])\n"
                     "print(b + b)\n"
                     "let c = to_host(relayout(b, q[_, _]))\n"
                     "print(distribute(c, m[_, x]))\n";
  Compilation s(pipelineCompileOptions());
  build(s, prog);
  // One world rank per distinct device id (0..3, 6, 7): ids 4 and 5 cost nothing.
  CHECK(Executor::requiredRanks(s.module) == 6);
  CHECK(Executor::worldIds(s.module) == std::vector<int64_t>{0, 1, 2, 3, 6, 7});
  CHECK(disagreement(prog) == "");
}

TEST_CASE("spmd: a failing rank is one clear error, never a hang") {
  const char *prog = "mesh m = [x = 4]\n"
                     "let w : f32[4, 3] @ m[_, _] = ones()\n"
                     "let ids : i32[4] @ m[x] = [0, 1, 2, 9]\n"
                     "print(w)\n"
                     "print(index_select(w, ids))\n";
  Compilation s(pipelineCompileOptions());
  build(s, prog);
  std::ostringstream out;
  Executor ex(s.module, out);
  CHECK_THROWS_WITH_AS(ex.run("main", {}), doctest::Contains("rank 3 failed"), RuntimeFault);
  CHECK(out.str() == "[[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]]\n");
  ExecOptions bad;
  bad.ranks = 3;
  Executor ex3(s.module, out, bad);
  CHECK_THROWS_WITH_AS(ex3.run("main", {}), doctest::Contains("need 4 ranks"), RuntimeFault);
}

TEST_CASE("spmd: lowering leaves no relayout and keeps the IR verifiable") {
  std::string text = generateSpmdProgram(7);
  Compilation s(pipelineCompileOptions());
  build(s, text); // the pipeline verifies the IR after `spmd`
  for (auto &f : s.module.functions)
    for (auto &in : f.body.insts)
      CHECK(in.op != Op::Relayout);
}

TEST_CASE("spmd: random programs agree with the reference (seeded)") {
  for (uint64_t seed = 100; seed < 120; ++seed) {
    std::string text = generateSpmdProgram(seed);
    INFO("seed " << seed << "\n" << text);
    CHECK(disagreement(text) == "");
  }
}
