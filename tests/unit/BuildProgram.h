// Test helpers shared by the unit tests of pipeline steps: buildProgram
// compiles `text` into `s` and runs the pipeline (SPMD lowering and fusion
// when `spmd`), failing the test with the diagnostics if anything does not
// compile; countOps counts an op in a block.
#pragma once

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

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

} // namespace dt::test
