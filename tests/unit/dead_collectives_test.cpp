// Unit tests of passes/DeadCollectives.h: deterministic mode's moves of a
// reduction's result that nothing reads are dropped before fusion, the
// values stay the reference's, and `explain` (the `spmd` step) still shows
// the steps of a statement whose value is never read.
#include "BuildProgram.h"
#include "frontend/Compilation.h"
#include "passes/DeadCollectives.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

using namespace dt;

TEST_CASE("dead collectives: a reduction's unread gather goes") {
  // sum over the sharded dim in deterministic mode (exact values, so any
  // order of the sum gives the reference's bits): the whole result is
  // sharded; the relayout gathers it once. Lowering also moved it towards
  // the type `sum` names (one more gather) and nothing reads that.
  const char *text = R"(mesh m = [x = 4]
let a : f32[64, 8] @ m[x, _] = full(0.5)
var acc : f32[8] @ m[_] = zeros()
for i in 0..3 {
  acc = acc + relayout(sum(a * a, dim=0), m[_])
}
print(acc)
)";
  CompileOptions det = pipelineCompileOptions();
  det.deterministic = true;
  Compilation s(det);
  test::buildProgram(s, text, true);
  const Function *main = s.module.find("main");
  REQUIRE(main);
  CHECK(test::countOps(main->body, Op::LocalPartial) == 0);
  CHECK(test::countOps(main->body, Op::AllGather) == 1);
  CHECK(removeDeadCollectives(s.module) == 0); // nothing left to drop

  // Without the pass (the `spmd` step alone) the unread steps are there.
  Compilation t(det);
  PipelineOptions po;
  po.spmd = true;
  po.fusion = false;
  std::ostringstream log;
  REQUIRE((t.compile("test.dt", text) && runPipeline(t, po, log)));
  CHECK(test::countOps(t.module.find("main")->body, Op::AllGather) == 2);
  CHECK(removeDeadCollectives(t.module) == 1);

  auto [got, want] = test::printedBoth(s, text, pipelineCompileOptions());
  CHECK(got.size() > 10);
  CHECK(got == want);
}
