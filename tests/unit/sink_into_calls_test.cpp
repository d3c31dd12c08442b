// Unit tests of passes/SinkIntoCalls.h: an optimizer step on a gradient that
// `value_and_grad` returns moves into the gradient function (the caller's
// loop keeps no elementwise op on it, and after fusion the gradient is not a
// result of any kernel), a second call site gets its own copy, chains that
// read other values stay, and the values are the reference evaluator's.
#include "BuildProgram.h"
#include "frontend/Compilation.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "passes/SinkIntoCalls.h"
#include "passes/SpmdLower.h"

#include <doctest/doctest.h>

#include <string>

using namespace dt;

namespace {

// Exact values (powers of two): any evaluation order gives the same bits.
const char *kProgram = R"(mesh m = [x = 2]
fn loss(t: f32[8, 4] @ m[x, _], u: f32[8, 4] @ m[x, _]) -> f32[] @ m[] {
  return relayout(sum(t * t * u), m[])
}
let u : f32[8, 4] @ m[x, _] = full(0.5)
var t : f32[8, 4] @ m[x, _] = full(2.0)
var s : f32[8, 4] @ m[x, _] = full(1.0)
for i in 0..3 {
  let (l, g) = value_and_grad(loss)(t, u)
  t = t - 0.25 * g
  let (l2, h) = value_and_grad(loss)(s, u)
  s = s - 0.5 * h + l2 * 0.0
}
print(relayout(t, m[_, _]))
print(relayout(s, m[_, _]))
)";

/// The ops of `op` in the first `for` body of main.
int inLoop(const Module &m, Op op) {
  for (const Inst &in : m.find("main")->body.insts)
    if (in.op == Op::For)
      return test::countOps(in.regions[0], op);
  return -1;
}

} // namespace

TEST_CASE("sink into calls: the update of a gradient moves into the gradient function") {
  // SPMD lowering alone leaves both updates in the loop...
  Compilation t(pipelineCompileOptions());
  test::buildProgram(t, kProgram, false);
  REQUIRE(lowerToSpmd(t.module, Topology{}) > 0);
  const int funcs = (int)t.module.functions.size();
  CHECK(inLoop(t.module, Op::Sub) == 2);
  // ...the first call's chain (mul by a constant, sub of the call's
  // argument) moves; of the second's, `s - 0.5 * h` and `l2 * 0.0` move
  // (one chain per result), and the `+` that reads both results stays.
  CHECK(sinkIntoCalls(t.module, "main") == 5);
  CHECK(inLoop(t.module, Op::Sub) == 0);
  CHECK(inLoop(t.module, Op::Add) == 1);
  // Both calls named one function: the first moved to a copy of it.
  CHECK((int)t.module.functions.size() == funcs + 1);
  int copies = 0;
  for (const Function &f : t.module.functions)
    if (f.name.find(".sink0") != std::string::npos) {
      ++copies;
      CHECK(test::countOps(f.body, Op::Sub) == 1);
    }
  CHECK(copies == 1);
  CHECK(sinkIntoCalls(t.module, "main") == 0); // nothing left to move
}

TEST_CASE("sink into calls: the gradient is no kernel's output, and the values stay") {
  Compilation s(pipelineCompileOptions());
  test::buildProgram(s, kProgram, true);
  CHECK(inLoop(s.module, Op::Sub) == 0);
  // After fusion the loop body calls the two gradient functions and one
  // kernel (the `+ l2 * 0.0` of the second update), not an update of t.
  int kernels = 0;
  for (const Inst &in : s.module.find("main")->body.insts)
    if (in.op == Op::For)
      for (const Inst &b : in.regions[0].insts)
        kernels += b.op == Op::Call && isFusedKernelName(b.attrs.str);
  CHECK(kernels == 1);

  auto [got, want] = test::printedBoth(s, kProgram, pipelineCompileOptions());
  CHECK(got.find("0.84375") != std::string::npos);
  CHECK(got == want);
}
