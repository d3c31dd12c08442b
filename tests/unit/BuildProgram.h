// A test helper shared by the unit tests of pipeline steps: compiles `text`
// into `s` and runs the pipeline (SPMD lowering and fusion when `spmd`),
// failing the test with the diagnostics if anything does not compile.
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

} // namespace dt::test
