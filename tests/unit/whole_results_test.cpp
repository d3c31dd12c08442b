// Unit tests of passes/WholeResults.h: in deterministic mode a gradient
// function returns its tree-combined or gathered gradients whole, so its
// caller neither broadcasts nor scatters them back from coordinate 0, and
// every value is the one the reference evaluator computes.
#include "BuildProgram.h"
#include "frontend/Compilation.h"
#include "ir/Verifier.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>

using namespace dt;

namespace {

HostTensor ramp(std::vector<int64_t> shape, int seed) {
  HostTensor h(DType::F32, shape);
  for (int64_t k = 0; k < h.numel(); ++k)
    h.set(k, (double)((k * 7 + seed * 3) % 11) * 0.25 - 1.0);
  return h;
}

} // namespace

TEST_CASE("whole results: a gradient function's results cross the call whole") {
  // Batch 128 over dp = 2 (64 rows a rank: whole leaves) contracts the
  // weight gradient in the tree; 6 classes gather the bias gradient's
  // reduction. `step` scatters the weight's and replicates the bias's.
  const char *text = R"(mesh m = [dp = 2]
fn loss(w: f32[8, 6] @ m[_, _], b: f32[6] @ m[_], x: f32[128, 8] @ m[dp, _]) -> f32[] @ m[] {
  return relayout(sum((x @ w + b) * (x @ w + b)), m[])
}
fn step(w: f32[8, 6] @ m[_, _], b: f32[6] @ m[_], x: f32[128, 8] @ m[dp, _]) -> (f32[8, 6] @ m[dp, _], f32[6] @ m[_]) {
  let (gw, gb) = grad(loss, wrt=[0, 1])(w, b, x)
  return relayout(gw, m[dp, _]), relayout(gb, m[_])
}
)";
  CompileOptions det = pipelineCompileOptions();
  det.deterministic = true;
  Compilation s(det);
  test::buildProgram(s, text, true);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  const Function *step = s.module.find("step");
  REQUIRE(step);
  // Without the pass: an all_reduce (broadcast) for gb and a reduce_scatter
  // (scatter) for gw in `step`, after the gradient function's return.
  CHECK(test::countOps(step->body, Op::AllReduce) == 0);
  CHECK(test::countOps(step->body, Op::ReduceScatter) == 0);
  CHECK(test::countOps(step->body, Op::LocalSlice) >= 1);
  Compilation r(pipelineCompileOptions());
  test::buildProgram(r, text, false);
  std::vector<HostTensor> args = {ramp({8, 6}, 1), ramp({6}, 2), ramp({128, 8}, 3)};
  std::ostringstream o1, o2;
  auto got = Executor(s.module, o1).run("step", args);
  auto want = ReferenceEvaluator(r.module, o2).run("step", args);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].shape == want[i].shape);
    for (int64_t k = 0; k < want[i].numel(); ++k) {
      INFO("result " << i << " element " << k);
      CHECK(got[i].get(k) == doctest::Approx(want[i].get(k)).epsilon(1e-5));
    }
  }
}
