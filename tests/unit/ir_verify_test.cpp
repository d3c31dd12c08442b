// Unit tests for ir/Verifier: a valid module passes, and each structural
// invariant, when broken, is reported with its message (one case each).
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir_test_util.h"

#include <doctest/doctest.h>

using namespace dt;
using namespace dt::test;

namespace {

const char *kSeed000 = R"(mesh m = [x = 3, y = 2]
func @main() -> (f32[2, 2] @ m{x: replicate, y: replicate}) {
  %0 = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3] @ m{x: shard(1), y: replicate}
  %1 = const [[6, 5], [4, 3], [2, 1]] : f32[3, 2] @ m{x: shard(0), y: replicate}
  %2 = matmul %0, %1 : f32[2, 2] @ m{x: partial(sum), y: replicate}
  %3 = relayout %2 : f32[2, 2] @ m{x: replicate, y: replicate}
  print %3 "d"
  return %3
}
)";

const char *kLoop = R"(func @main() -> (f32[2]) {
  %0 = const [1, 1] : f32[2]
  %1 = for 0 to 4 step 1 iter(%0) {
    ^(%2:i: i64[], %3: f32[2]):
    %4 = add %3, %3 : f32[2]
    yield %4
  } : f32[2]
  return %1
}
)";

/// Verifier output for `text` (structural checks only unless `infer`).
std::string verify(const std::string &text, bool infer = false) {
  return verifyModuleText(parseOrFail(text), VerifyOptions{infer});
}
std::string verify(const Module &m) { return verifyModuleText(m, VerifyOptions{false}); }

/// `func @main() { <lines> return }` with host types.
std::string mainFn(const std::string &lines) {
  return "func @main() {\n" + lines + "\n  return\n}\n";
}

} // namespace

TEST_CASE("ir verify: valid modules pass, types re-inferred") {
  CHECK(verify(kSeed000, true) == "");
  CHECK(verify(kLoop, true) == "");
  CHECK(verify(R"(mesh m = [x = 2]
func @main() {
  %0 = fill 1 : f32[4] @ m{x: shard(0)}
  %1 = all_gather %0 axes [0] : f32[4] @ m{x: replicate}
  return
}
)",
               true) == "");
}

TEST_CASE("ir verify: re-inferred result types must match") {
  std::string wrong = kSeed000;
  wrong.replace(wrong.find("f32[2, 2] @ m{x: partial(sum)"), 29, "f32[2, 2] @ m{x: replicate");
  CHECK(verify(wrong, true) ==
        "@main: `matmul` (%2): result %2 has type `f32[2, 2] @ m{x: replicate, y: replicate}` "
        "but its operands give `f32[2, 2] @ m{x: partial(sum), y: replicate}`");
  CHECK(verify(wrong, false) == "");
  std::string bad =
      mainFn("  %0 = fill 1 : f32[2]\n  %1 = fill 1 : f32[3]\n  %2 = add %0, %1 : f32[3]");
  CHECK(verify(bad, true).rfind("@main: `add` (%2): type inference rejects it: ", 0) == 0);
}

TEST_CASE("ir verify: operands must be defined before use") {
  CHECK(verify(mainFn("  %0 = neg %1 : f32[]\n  %1 = fill 1 : f32[]")) ==
        "@main: `neg` (%0): operand %1 is used before it is defined");
}

TEST_CASE("ir verify: values of a loop body are not visible after it") {
  std::string text = kLoop;
  text.replace(text.find("return %1"), 9, "return %4");
  CHECK(verify(text) ==
        "@main: `return`: operand %4 is not in scope here (defined in another block)");
}

TEST_CASE("ir verify: a value is defined once and sits in its slot") {
  Module m = parseOrFail(mainFn("  %0 = fill 1 : f32[]\n  %1 = fill 2 : f32[]"));
  m.functions[0].body.insts[1].results[0] = 0;
  CHECK(verify(m) == "@main: %0 is defined twice");
  Module s = parseOrFail(mainFn("  %0 = fill 1 : f32[]"));
  s.functions[0].values[0].id = 3;
  CHECK(verify(s) == "@main: value in slot 0 has id %3");
  Module r = parseOrFail(mainFn("  %0 = fill 1 : f32[]"));
  r.functions[0].body.insts[0].results[0] = 9;
  CHECK(verify(r) == "@main: result %9 is not a value of the function");
}

TEST_CASE("ir verify: operand and result counts follow Ops.def") {
  CHECK(verify(mainFn("  %0 = fill 1 : f32[]\n  %1 = add %0 : f32[]")) ==
        "@main: `add` (%1): takes 2 operands, got 1");
  CHECK(verify(mainFn("  fill 1")) == "@main: `fill`: produces 1 results, got 0");
  CHECK(verify(mainFn("  %0 = fill 1 : f32[2, 2]\n  %1 = einsum \"ij,jk,kl->il\" %0, %0, %0 : "
                      "f32[2, 2]")) == "@main: `einsum` (%1): takes 1 or 2 operands, got 3");
}

TEST_CASE("ir verify: only `for` has regions") {
  Module m = parseOrFail(mainFn("  %0 = fill 1 : f32[]"));
  m.functions[0].body.insts[0].regions.emplace_back();
  CHECK(verify(m) == "@main: `fill` (%0): cannot have regions");
}

TEST_CASE("ir verify: `for` structure") {
  Module two = parseOrFail(kLoop);
  two.functions[0].body.insts[1].regions.emplace_back();
  CHECK(verify(two) == "@main: `for` (%1): needs exactly one body region, got 2");

  std::string noIv = kLoop;
  noIv.replace(noIv.find("%2:i: i64[], "), 13, "");
  CHECK(verify(noIv) == "@main: `for` (%1): body has 1 arguments; expected the induction variable "
                        "and 1 loop-carried values");

  std::string f32Iv = kLoop;
  f32Iv.replace(f32Iv.find("i64[]"), 5, "f32[]");
  CHECK(verify(f32Iv) ==
        "@main: `for` (%1): induction variable %2 must have type `i64[]`, got `f32[]`");

  std::string carried = kLoop;
  carried.replace(carried.find("%3: f32[2]"), 10, "%3: f64[2]");
  CHECK(verify(carried).find("@main: `for` (%1): loop-carried value 0: body argument has type "
                             "`f64[2]` but the initial value has type `f32[2]`") == 0);

  std::string yielded = kLoop;
  yielded.replace(yielded.find("%4 = add %3, %3 : f32[2]"), 24, "%4 = fill 1 : f32[3]");
  CHECK(verify(yielded) ==
        "@main: `yield`: value 0 has type `f32[3]` but the loop carries `f32[2]`");

  std::string noYield = kLoop;
  noYield.replace(noYield.find("    yield %4\n"), 13, "");
  CHECK(verify(noYield) == "@main: `for` (%1): body must end with `yield`");

  std::string bounds = kLoop;
  bounds.replace(bounds.find("0 to 4 step 1"), 13, "0 to 4 step 0");
  CHECK(verify(bounds) == "@main: `for` (%1): step must not be 0");

  std::string result = kLoop;
  result.replace(result.find("} : f32[2]"), 10, "} : f32[4]");
  CHECK(verify(result).find("@main: `for` (%1): result 0 has type `f32[4]` but the loop carries "
                            "`f32[2]`") == 0);
}

const char *kControl = R"(func @main(%0: i64[]) -> (f32[2], i64[]) {
  %1 = const [1, 1] : f32[2]
  %2 = fill 3 : i64[]
  %3 = lt %0, %2 : bool[]
  %4 = if %3 {
    %5 = add %1, %1 : f32[2]
    yield %5
  } {
    yield %1
  } : f32[2]
  %6, %7 = while %3, %4, %0 {
    ^(%8: f32[2], %9: i64[]):
    %10 = add %9, %2 : i64[]
    %11 = lt %10, %2 : bool[]
    yield %11, %8, %10
  } : f32[2], i64[]
  %12 = for %0 to %7 step 1 iter(%6) {
    ^(%13: i64[], %14: f32[2]):
    %15 = random normal %13 : f32[2]
    yield %15
  } : f32[2]
  return %12, %7
}
)";

TEST_CASE("ir verify: `if`, `while` and a `for` with run-time bounds") {
  CHECK(verify(kControl, true) == "");
  Module m = parseOrFail(kControl);
  CHECK(printModule(m) == printModule(parseOrFail(printModule(m))));

  std::string cond = kControl;
  cond.replace(cond.find("%4 = if %3"), 10, "%4 = if %0");
  CHECK(verify(cond) == "@main: `if` (%4): condition %0 must have type `bool[]`, got `i64[]`");

  std::string branch = kControl;
  branch.replace(branch.find("    yield %1\n"), 13, "    yield %2\n");
  CHECK(verify(branch) ==
        "@main: `yield`: value 0 has type `i64[]` but the `if` has results of `f32[2]`");

  std::string noCond = kControl;
  noCond.replace(noCond.find("yield %11, %8, %10"), 18, "yield %8, %10");
  CHECK(verify(noCond) ==
        "@main: `yield`: yields 2 values but the `while` needs its condition and 3");

  std::string wcond = kControl;
  wcond.replace(wcond.find("while %3,"), 9, "while %2,");
  CHECK(verify(wcond) == "@main: `while` (%6): condition %2 must have type `bool[]`, got `i64[]`");

  std::string bound = kControl;
  bound.replace(bound.find("for %0 to %7"), 12, "for %0 to %3");
  CHECK(verify(bound) == "@main: `for` (%12): upper bound %3 must have type `i64[]`, got `bool[]`");

  std::string seed = kControl;
  seed.replace(seed.find("random normal %13"), 17, "random normal %14");
  CHECK(verify(seed) ==
        "@main: `random` (%15): its run-time seed must be an `i64[]` (host or replicated), got "
        "`f32[2]`");
}

TEST_CASE("ir verify: terminators") {
  CHECK(verify("func @main() {\n  %0 = fill 1 : f32[]\n}\n") ==
        "@main: function body must end with `return`");
  CHECK(verify("func @main() {\n  return\n  %0 = fill 1 : f32[]\n}\n") ==
        "@main: `return`: a terminator must be the last instruction of its block\n"
        "@main: function body must end with `return`");
  CHECK(verify(mainFn("  %0 = fill 1 : f32[]\n  yield %0")) ==
        "@main: `yield`: a terminator must be the last instruction of its block\n"
        "@main: `yield`: `yield` outside a `for`/`while` body or `if` branch");
  std::string ret = kLoop;
  ret.replace(ret.find("yield %4"), 8, "return %4");
  CHECK(verify(ret).find("@main: `return`: `return` inside a `for` body") != std::string::npos);
}

TEST_CASE("ir verify: `return` matches the declared results") {
  std::string count = kLoop;
  count.replace(count.find("return %1"), 9, "return");
  CHECK(verify(count) == "@main: `return`: gives 0 values but @main declares 1 results");
  std::string type = kLoop;
  type.replace(type.find("-> (f32[2])"), 11, "-> (f32[3])");
  CHECK(verify(type) == "@main: `return`: value 0 has type `f32[2]` but @main declares `f32[3]`");
}

TEST_CASE("ir verify: callees exist and calls match them") {
  std::string callee = "func @g(%0: f32[2]) -> (f32[2]) {\n  return %0\n}\n";
  CHECK(verify(mainFn("  %0 = fill 1 : f32[2]\n  %1 = call @nope(%0) : f32[2]")) ==
        "@main: `call` (%1): unknown callee `@nope`");
  CHECK(verify(callee + mainFn("  %0 = fill 1 : f32[2]\n  %1 = call @g(%0, %0) : f32[2]")) ==
        "@main: `call` (%1): passes 2 arguments to `@g`, which takes 1");
  CHECK(verify(callee + mainFn("  %0 = fill 1 : f32[3]\n  %1 = call @g(%0) : f32[2]")) ==
        "@main: `call` (%1): argument 0 has type `f32[3]` but `@g` takes `f32[2]`");
  CHECK(verify(callee + mainFn("  %0 = fill 1 : f32[2]\n  call @g(%0)")) ==
        "@main: `call`: has 0 results but `@g` returns 1");
  CHECK(verify(mainFn("  %0 = fill 1 : f32[2]\n  %1 = grad @nope(%0) wrt [0] : f32[2]")) ==
        "@main: `grad` (%1): unknown callee `@nope`");
  CHECK(verify(callee + mainFn("  %0 = fill 1 : f32[2]\n  %1 = grad @g(%0) wrt [1] : f32[2]")) ==
        "@main: `grad` (%1): `wrt` index 1 is not a parameter of `@g`");
}

TEST_CASE("ir verify: types are well formed") {
  std::string mesh = "mesh m = [x = 2, y = 2]\n";
  CHECK(verify(mesh + mainFn("  %0 = fill 1 : f32[2] @ m{x: shard(1), y: replicate}")) ==
        "@main: result %0 `f32[2] @ m{x: shard(1), y: replicate}`: `shard(1)` names a dim of a "
        "tensor with 1 dims");
  // Several axes may shard the same dim.
  CHECK(verify(mesh + mainFn("  %0 = fill 1 : f32[2] @ m{x: shard(0), y: shard(0)}")) == "");

  Module m = parseOrFail(mesh + mainFn("  %0 = fill 1 : f32[2] @ m{x: replicate, y: replicate}"));
  m.functions[0].values[0].type.placements.pop_back();
  CHECK(verify(m) == "@main: result %0 `f32[2] @ m{x: replicate}` has 1 placements for mesh `m` "
                     "with 2 axes");

  Module h = parseOrFail(mainFn("  %0 = fill 1 : f32[2]"));
  h.functions[0].values[0].type.placements.push_back(Placement::replicate());
  CHECK(verify(h) == "@main: result %0 `f32[2] @ ?{?: replicate}` is a host type with placements");

  Module u = parseOrFail(mesh + mainFn("  %0 = fill 1 : f32[2] @ m{x: replicate, y: replicate}"));
  u.functions[0].values[0].type.mesh = makeMesh("m", {{"x", 4}, {"y", 1}});
  CHECK(verify(u) == "@main: result %0 `f32[2] @ m{x: replicate, y: replicate}` uses mesh `m`, "
                     "which the module does not declare");
}

TEST_CASE("ir verify: per-op attributes") {
  std::string x = "  %0 = fill 1 : f32[2, 3]\n";
  CHECK(verify(mainFn(x + "  %1 = reduce_sum %0 dims [1, 0] : f32[]")) ==
        "@main: `reduce_sum` (%1): reduce dims must be sorted, unique and in range");
  CHECK(verify(mainFn(x + "  %1 = transpose %0 perm [0, 0] : f32[2, 2]")) ==
        "@main: `transpose` (%1): `perm` is not a permutation of the operand's dims");
  CHECK(verify(mainFn("  %0 = iota dim 2 : i32[2, 3]")) ==
        "@main: `iota` (%0): needs one dim attribute in range");
  CHECK(verify(mainFn("  %0 = random attrs{ints [1]} : f32[2]")) ==
        "@main: `random` (%0): needs a distribution (`normal` or `uniform`) and a seed");
  CHECK(verify(mainFn("  %0 = const [1, 2, 3] : f32[2]")) ==
        "@main: `const` (%0): has 3 values for type `f32[2]`");
  CHECK(verify(mainFn("  %0 = fill attrs{floats [1, 2]} : f32[2]")) ==
        "@main: `fill` (%0): needs exactly one value");
}

TEST_CASE("ir verify: module-level invariants") {
  Module m = parseOrFail("mesh m = [x = 2]\n" + mainFn(""));
  m.functions.push_back(m.functions[0]);
  auto d = std::make_shared<Mesh>(*m.meshes[0]);
  d->devices.push_back(9);
  m.meshes.push_back(d);
  CHECK(verify(m) == "mesh `m` is declared twice\n"
                     "mesh `m` has 2 devices in its shape but 3 device ids\n"
                     "function `@main` is defined twice");
}

TEST_CASE("ir verify: a session's trusted functions are skipped, the rest still checked") {
  // `@a` broken and trusted (verified before, by assumption): not reported;
  // `@b` added after it is checked, and a name added twice is still caught.
  const std::string text = R"(func @main() {
  return
}
func @a() {
  %0 = fill 1 : f32[2]
  %1 = add %0, %0 : f32[2]
  return
}
func @b() {
  %0 = fill 1 : f32[2]
  %1 = add %0, %0 : f32[2]
  return
}
)";
  Module m = parseOrFail(text);
  m.find("a")->body.insts[1].operands[0] = 9;
  m.find("b")->body.insts[1].operands[0] = 7;
  VerifyOptions vo{false};
  vo.trusted = "main";
  vo.trustedFunctions = 1;
  std::string errs = verifyModuleText(m, vo);
  CHECK(errs.find("@b:") != std::string::npos);
  CHECK(errs.find("@a:") == std::string::npos);
  vo.trustedFunctions = 0;
  CHECK(verifyModuleText(m, vo).find("@a:") != std::string::npos);
  m.functions.push_back(m.functions[1]); // `@a` again, after the trusted ones
  vo.trustedFunctions = 2;
  CHECK(verifyModuleText(m, vo).find("`@a` is defined twice") != std::string::npos);
}
