// Unit tests of passes/ReduceEarly.h: modulation's weight gradients (products
// of a partial [S, H] gradient, all-reduced by the caller) reduce that
// operand once instead of the [H, H] and [S, H] products, after SinkIntoCalls
// moved the caller's all_reduce steps next to the products; the values stay
// the reference evaluator's, in default and in deterministic mode.
#include "BuildProgram.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "passes/ReduceEarly.h"
#include "passes/SpmdLower.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>

using namespace dt;

namespace {

// Exact values (small dyadic rationals): any order of the sums gives the
// same bits, so the executor must print the reference's text.
const char *kProgram = R"(mesh m = [t = 2]
fn loss(tokens: f32[8, 16] @ m[t, _], cond: f32[2, 16] @ m[_, _], ids: i32[8] @ m[t],
        w: f32[16, 16] @ m[_, _]) -> f32[] @ m[] {
  let pss = cond @ transpose(w)
  return relayout(sum(index_select(pss, ids) * tokens), m[])
}
var tokens : f32[8, 16] @ m[t, _] = full(1.0)
var cond : f32[2, 16] @ m[_, _] = full(0.5)
var w : f32[16, 16] @ m[_, _] = full(0.25)
let ii : i32[8] @ m[t] = iota(dim=0)
let ids = ii % 2
for step in 0..2 {
  let (l, g_tok, g_cond, g_w) = value_and_grad(loss, wrt=[0, 1, 3])(tokens, cond, ids, w)
  tokens = tokens - 0.125 * g_tok
  cond = cond - 0.0625 * relayout(g_cond, m[_, _])
  w = w - 0.0625 * relayout(g_w, m[_, _])
}
print(relayout(tokens, m[_, _]))
print(cond)
print(w)
)";

/// all_reduce steps in `f` whose result has `elements` elements.
int allReducesOf(const Function &f, int64_t elements) {
  int n = 0;
  std::function<void(const Block &)> walk = [&](const Block &b) {
    for (const Inst &in : b.insts) {
      if (in.op == Op::AllReduce && numElements(f.type(in.results[0]).shape) == elements)
        ++n;
      for (const Block &r : in.regions)
        walk(r);
    }
  };
  walk(f.body);
  return n;
}

void checkProgram(bool deterministic) {
  CompileOptions co = pipelineCompileOptions();
  co.deterministic = deterministic;
  Compilation s(co);
  test::buildProgram(s, kProgram, true);
  int products = 0, operands = 0, grads = 0;
  for (const Function &f : s.module.functions) {
    products += allReducesOf(f, 16 * 16);
    operands += allReducesOf(f, 2 * 16);
    grads += f.name.find("value_and_grad") != std::string::npos;
  }
  CHECK(grads >= 1);
  CHECK(products == 0); // g_w is never all-reduced...
  CHECK(operands == 1); // ...its [2, 16] operand is, once (g_cond shares it)
  CHECK(reduceEarly(s.module) == 0);

  auto [got, want] = test::printedBoth(s, kProgram, co);
  CHECK(got.size() > 100);
  CHECK(got == want);
}

} // namespace

TEST_CASE("reduce early: a weight gradient's partial operand is reduced instead of the product") {
  checkProgram(false);
}

TEST_CASE("reduce early: the same in deterministic mode") { checkProgram(true); }

TEST_CASE("reduce early: only a product larger than its partial operand changes") {
  // A partial [1, 64] row (a sum over sharded rows) times [64, 2]: the
  // product is smaller and keeps its all_reduce; its transpose times
  // [1, 32]: the [64, 32] product is larger, so the [64, 1] operand is
  // all-reduced instead.
  const char *text = R"(mesh m = [x = 2]
let a : f32[8, 64] @ m[x, _] = full(0.5)
let s = reshape(sum(a, dim=0), [1, 64])
let wb : f32[64, 2] @ m[_, _] = full(0.25)
let wc : f32[1, 32] @ m[_, _] = full(0.25)
print(relayout(s @ wb, m[_, _]))
print(relayout(transpose(s) @ wc, m[_, _]))
)";
  Compilation s(pipelineCompileOptions());
  test::buildProgram(s, text, false);
  lowerToSpmd(s.module);
  const Function &main = *s.module.find("main");
  CHECK(allReducesOf(main, 1 * 2) == 1);
  CHECK(allReducesOf(main, 64 * 32) == 1);
  CHECK(allReducesOf(main, 64) == 0);
  CHECK(reduceEarly(s.module) == 1);
  CHECK(allReducesOf(main, 1 * 2) == 1);
  CHECK(allReducesOf(main, 64 * 32) == 0);
  CHECK(allReducesOf(main, 64) == 1);
}
