// Unit tests of passes/FoldTranspose.h: transposes feeding a matmul become
// BLAS transpose flags (no transpose op left in the per-rank program), a
// transpose of a transpose cancels or composes, and the folded program gives
// the reference evaluator's values on every dtype, mesh and operand rank.
#include "BuildProgram.h"
#include "frontend/Compilation.h"
#include "ir/IRParser.h"
#include "ir/Printer.h"
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

void build(Compilation &s, const std::string &text, bool spmd) {
  test::buildProgram(s, text, spmd);
}

/// Instructions `op` anywhere in the module (every function, every region).
int countOps(const Module &m, Op op) {
  int n = 0;
  for (const Function &f : m.functions)
    n += test::countOps(f.body, op);
  return n;
}
int countFlagged(const Block &b) {
  int n = 0;
  for (const Inst &in : b.insts) {
    n += in.op == Op::MatMul && (matmulTransposed(in.attrs, 0) || matmulTransposed(in.attrs, 1));
    for (const Block &r : in.regions)
      n += countFlagged(r);
  }
  return n;
}
int countFlagged(const Module &m) {
  int n = 0;
  for (const Function &f : m.functions)
    n += countFlagged(f.body);
  return n;
}

/// Runs `fn` of `text` compiled (SPMD, folded) and on the reference
/// evaluator; every result agrees (ints exactly, floats to 1e-5 relative).
void checkAgainstReference(const std::string &text, const std::string &fn,
                           const std::vector<HostTensor> &args) {
  Compilation d(pipelineCompileOptions()), r(pipelineCompileOptions());
  build(d, text, true);
  build(r, text, false);
  std::ostringstream o1, o2;
  auto got = Executor(d.module, o1).run(fn, args);
  auto want = ReferenceEvaluator(r.module, o2).run(fn, args);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].shape == want[i].shape);
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      double g = got[i].get(k), w = want[i].get(k);
      INFO("result " << i << " element " << k);
      CHECK(std::fabs(g - w) <= 1e-5 * (1 + std::fabs(w)));
    }
  }
}

HostTensor ramp(DType t, std::vector<int64_t> shape, int seed) {
  HostTensor h(t, shape);
  for (int64_t k = 0; k < h.numel(); ++k)
    h.set(k, (double)((k * 7 + seed * 3) % 11) - 5.0);
  return h;
}

} // namespace

TEST_CASE("fold transpose: a matmul backward has no transpose op, only BLAS flags") {
  const char *text = R"(mesh m = [dp = 2, tp = 2]
fn loss(w: f32[8, 6] @ m[_, tp], x: f32[4, 8] @ m[dp, _]) -> f32[] @ m[] {
  return relayout(sum(x @ w), m[])
}
fn step(w: f32[8, 6] @ m[_, tp], x: f32[4, 8] @ m[dp, _]) -> (f32[8, 6] @ m[_, tp], f32[4, 8] @ m[dp, _]) {
  let (gw, gx) = grad(loss, wrt=[0, 1])(w, x)
  return relayout(gw, m[_, tp]), relayout(gx, m[dp, _])
}
)";
  Compilation s(pipelineCompileOptions());
  build(s, text, true);
  CHECK(countOps(s.module, Op::Transpose) == 0);
  CHECK(countFlagged(s.module) == 2); // dW = X^T @ g, dX = g @ W^T
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  // The flags print and parse back.
  std::string printed = printModule(s.module);
  CHECK(printed.find("matmul") != std::string::npos);
  Module back;
  std::string err;
  REQUIRE(parseIR(printed, back, err));
  CHECK(printModule(back) == printed);
  checkAgainstReference(text, "step", {ramp(DType::F32, {8, 6}, 1), ramp(DType::F32, {4, 8}, 2)});
}

TEST_CASE("fold transpose: explicit transposes on every dtype, batched and 1-D operands") {
  for (const char *dt : {"f32", "f64", "i32", "i64"}) {
    std::string t = dt;
    auto T = [&](const std::string &shape) { return t + "[" + shape + "]"; };
    std::string text = "mesh m = [x = 2]\n"
                       "fn f(a: " +
                       T("5, 4") + " @ m[_, _], b: " + T("3, 5") +
                       " @ m[x, _], c: " + T("2, 4, 3") + " @ m[_, _, _], v: " + T("4") +
                       " @ m[_]) -> (" + T("4, 3") + " @ m[_, x], " + T("2, 3, 3") +
                       " @ m[_, _, _], " + T("5") + " @ m[_], " + T("5, 4") +
                       " @ m[_, _]) {\n"
                       "  let p = transpose(a) @ transpose(b)\n"
                       "  let ct = transpose(c, perm=[0, 2, 1])\n"
                       "  let q = ct @ transpose(ct, perm=[0, 2, 1])\n"
                       "  let r = transpose(transpose(a)) @ v\n"
                       "  let s = transpose(transpose(a))\n"
                       "  return p, q, r, s\n}\n";
    INFO(text);
    Compilation s(pipelineCompileOptions());
    build(s, text, true);
    CHECK(countOps(s.module, Op::Transpose) == 0);
    CHECK(countFlagged(s.module) == 2);
    checkAgainstReference(text, "f",
                          {ramp(*parseDType(t), {5, 4}, 1), ramp(*parseDType(t), {3, 5}, 2),
                           ramp(*parseDType(t), {2, 4, 3}, 3), ramp(*parseDType(t), {4}, 4)});
  }
}

TEST_CASE("fold transpose: a transpose with another use stays, a 3-way permutation composes") {
  const char *text = R"(mesh m = [x = 2]
fn f(a: f32[4, 6] @ m[x, _], c: f32[2, 3, 4] @ m[_, _, _]) -> (f32[6, 6] @ m[_, _], f32[6, 4] @ m[_, x], f32[3, 4, 2] @ m[_, _, _]) {
  let at = transpose(a)
  let g = relayout(at @ a, m[_, _])
  let d = transpose(transpose(c, perm=[1, 2, 0]), perm=[0, 1, 2])
  return g, at, d
}
)";
  Compilation s(pipelineCompileOptions());
  build(s, text, true);
  CHECK(countOps(s.module, Op::Transpose) == 2); // `at` is returned; `d` is one transpose
  CHECK(countFlagged(s.module) == 1);
  checkAgainstReference(text, "f", {ramp(DType::F32, {4, 6}, 1), ramp(DType::F32, {2, 3, 4}, 2)});
}

TEST_CASE("fold transpose: a transposed product and a checked transposed operand become flags") {
  // Seed 001's modulation: the gradient of `w` in `cond @ transpose(w)` is
  // transpose(transpose(cond) @ G), and the partial G times the replicated
  // cond is guarded by check_factor(transpose(cond)). Both transposes used to
  // run as copies ([H, H] each step).
  const char *text = R"(mesh m = [t = 2]
fn loss(tokens: f32[6, 4] @ m[t, _], cond: f32[3, 4] @ m[_, _], ids: i32[6] @ m[t],
        w: f32[4, 4] @ m[_, _]) -> f32[] @ m[] {
  let scale = index_select(cond @ transpose(w), ids)
  return relayout(sum(scale * tokens), m[])
}
fn step(tokens: f32[6, 4] @ m[t, _], cond: f32[3, 4] @ m[_, _], ids: i32[6] @ m[t],
        w: f32[4, 4] @ m[_, _]) -> (f32[3, 4] @ m[_, _], f32[4, 4] @ m[_, _]) {
  let (gc, gw) = grad(loss, wrt=[1, 3])(tokens, cond, ids, w)
  return relayout(gc, m[_, _]), relayout(gw, m[_, _])
}
)";
  Compilation s(pipelineCompileOptions());
  build(s, text, true);
  CHECK(countOps(s.module, Op::Transpose) == 0);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  HostTensor ids(DType::I32, {6});
  for (int64_t k = 0; k < 6; ++k)
    ids.set(k, (double)((k * 2) % 3));
  checkAgainstReference(
      text, "step",
      {ramp(DType::F32, {6, 4}, 1), ramp(DType::F32, {3, 4}, 2), ids, ramp(DType::F32, {4, 4}, 3)});
}

TEST_CASE("fold transpose: transpose of a product on every operand form") {
  for (const char *dt : {"f32", "f64", "i32"}) {
    std::string t = dt;
    auto T = [&](const std::string &shape) { return t + "[" + shape + "]"; };
    // p: plain product; q: a product with transposed operands; r: batched;
    // s: the product has another use, so its transpose stays; u: a 1-D
    // operand (no dims to swap) keeps its transpose too.
    std::string text = "mesh m = [x = 2]\n"
                       "fn f(a: " +
                       T("5, 4") + " @ m[x, _], b: " + T("4, 3") +
                       " @ m[_, _], c: " + T("2, 4, 3") + " @ m[_, _, _], v: " + T("5") +
                       " @ m[_]) -> (" + T("3, 5") + " @ m[_, x], " + T("5, 3") + " @ m[_, _], " +
                       T("2, 3, 3") + " @ m[_, _, _], " + T("5, 3") + " @ m[x, _], " + T("3, 5") +
                       " @ m[_, x], " + T("4") +
                       " @ m[_]) {\n"
                       "  let p = transpose(a @ b)\n"
                       "  let q = transpose(transpose(b) @ relayout(transpose(a), m[_, _]))\n"
                       "  let r = transpose(transpose(c, perm=[0, 2, 1]) @ c, perm=[0, 2, 1])\n"
                       "  let ab = a @ b\n"
                       "  let u = relayout(v @ relayout(a, m[_, _]), m[_])\n"
                       "  return p, q, r, ab, transpose(ab), u\n}\n";
    INFO(text);
    Compilation s(pipelineCompileOptions());
    build(s, text, true);
    // Left: transpose(ab) (ab is returned too). q's transpose(a) feeds the
    // relayout's all-gather, which gathers `a` along its other dim instead,
    // and q = transpose(b^T @ a^T) is then the plain product a @ b.
    CHECK(countOps(s.module, Op::Transpose) == 1);
    CHECK(countFlagged(s.module) == 2); // p and r
    std::vector<std::string> errs;
    CHECK(verifyModule(s.module, errs));
    checkAgainstReference(text, "f",
                          {ramp(*parseDType(t), {5, 4}, 1), ramp(*parseDType(t), {4, 3}, 2),
                           ramp(*parseDType(t), {2, 4, 3}, 3), ramp(*parseDType(t), {5}, 4)});
  }
}

TEST_CASE("fold transpose: deterministic mode gathers a transposed operand without a copy") {
  // Deterministic mode gathers the operands of a contraction over a sharded
  // dim (6 rows over dp: no whole 64-index leaves): all_gather(transpose(x))
  // becomes the gather of x along its other dim, and the transpose a flag.
  const char *text = R"(mesh m = [dp = 2]
fn loss(w: f32[8, 5] @ m[_, _], x: f32[6, 8] @ m[dp, _]) -> f32[] @ m[] {
  return relayout(sum(x @ w), m[])
}
fn step(w: f32[8, 5] @ m[_, _], x: f32[6, 8] @ m[dp, _]) -> f32[8, 5] @ m[_, _] {
  let gw = grad(loss, wrt=[0])(w, x)
  return relayout(gw, m[_, _])
}
)";
  CompileOptions det = pipelineCompileOptions();
  det.deterministic = true;
  Compilation s(det);
  build(s, text, true);
  CHECK(countOps(s.module, Op::Transpose) == 0);
  CHECK(countOps(s.module, Op::AllGather) >= 1);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  std::ostringstream o1, o2;
  Compilation r(pipelineCompileOptions());
  build(r, text, false);
  std::vector<HostTensor> args = {ramp(DType::F32, {8, 5}, 1), ramp(DType::F32, {6, 8}, 2)};
  auto got = Executor(s.module, o1).run("step", args);
  auto want = ReferenceEvaluator(r.module, o2).run("step", args);
  REQUIRE(got.size() == 1);
  for (int64_t k = 0; k < want[0].numel(); ++k)
    CHECK(got[0].get(k) == doctest::Approx(want[0].get(k)).epsilon(1e-6));
}
