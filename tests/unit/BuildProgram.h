// Test helpers shared by the unit tests of pipeline steps: buildProgram
// compiles `text` into `s` and runs the pipeline (SPMD lowering and fusion
// when `spmd`), failing the test with the diagnostics if anything does not
// compile; countOps counts an op in a block; printedBoth runs a compiled
// program and the reference evaluator on the same text.
#pragma once

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <utility>

namespace dt::test {

inline void buildProgram(Compilation &s, const std::string &text, bool spmd) {
  PipelineOptions po;
  po.spmd = spmd;
  po.fusion = spmd;
  std::ostringstream log;
  bool ok = s.compile("test.dt", text) && runPipeline(s, po, log);
  INFO(s.diags.renderAll());
  REQUIRE(ok);
}

/// Instructions `op` in `b` and in its regions.
inline int countOps(const Block &b, Op op) {
  int n = 0;
  for (const Inst &in : b.insts) {
    n += in.op == op;
    for (const Block &r : in.regions)
      n += countOps(r, op);
  }
  return n;
}

/// What `main` prints when `s` (compiled by buildProgram) runs on the
/// executor, and what the reference evaluator prints for `text` compiled
/// under `co` without SPMD lowering.
inline std::pair<std::string, std::string>
printedBoth(const Compilation &s, const std::string &text, const CompileOptions &co) {
  Compilation r(co);
  buildProgram(r, text, false);
  std::ostringstream got, want;
  ExecOptions eo;
  Executor(s.module, got, eo).run("main", {});
  ReferenceEvaluator(r.module, want).run("main", {});
  return {got.str(), want.str()};
}

} // namespace dt::test
