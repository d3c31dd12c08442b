// Unit tests for runtime/Reference (the single-device oracle) and
// runtime/Format: per op family, from IR text, checked on formatted values.
#include "ir/Verifier.h"
#include "ir_test_util.h"
#include "runtime/Format.h"
#include "runtime/Reference.h"
#include "support/Diagnostics.h"
#include "support/Random.h"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

using namespace dt;
using namespace dt::test;

namespace {

/// Runs `@main` of `body` (function text after the header) and returns the
/// formatted results; `printed` receives what `print` wrote.
std::vector<std::string> run(const std::string &text, std::string *printed = nullptr,
                             const std::vector<HostTensor> &args = {},
                             const std::string &fn = "main") {
  Module m = parseOrFail(text);
  CHECK(verifyModuleText(m, {false}) == "");
  std::ostringstream out;
  ReferenceEvaluator ev(m, out);
  std::vector<std::string> r;
  for (auto &t : ev.run(fn, args))
    r.push_back(formatTensor(t));
  if (printed)
    *printed = out.str();
  return r;
}

/// `func @main() -> (<rtype>) { <lines> return %<ret> }`
std::string mainFn(const std::string &rtype, const std::string &lines, int ret) {
  return "mesh m = [x = 3, y = 2]\nfunc @main() -> (" + rtype + ") {\n" + lines + "\n  return %" +
         std::to_string(ret) + "\n}\n";
}

std::string one(const std::string &rtype, const std::string &lines, int ret) {
  auto r = run(mainFn(rtype, lines, ret));
  REQUIRE(r.size() == 1);
  return r[0];
}

HostTensor tensor(DType dt, std::vector<int64_t> shape, std::vector<double> vals) {
  HostTensor t(dt, shape);
  for (size_t i = 0; i < vals.size(); ++i)
    t.set((int64_t)i, vals[i]);
  return t;
}

} // namespace

TEST_CASE("reference: seed 000 matmul through partial and relayout") {
  std::string printed;
  auto r = run(R"(mesh m = [x = 3, y = 2]
func @main() -> (f32[2, 2] @ m{x: replicate, y: replicate}) {
  %0 = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3] @ m{x: shard(1), y: replicate}
  %1 = const [[6, 5], [4, 3], [2, 1]] : f32[3, 2] @ m{x: shard(0), y: replicate}
  %2 = matmul %0, %1 : f32[2, 2] @ m{x: partial(sum), y: replicate}
  %3 = relayout %2 : f32[2, 2] @ m{x: replicate, y: replicate}
  print %3 "d"
  return %3
}
)",
               &printed);
  CHECK(r[0] == "[[20, 14], [56, 41]]");
  CHECK(printed == "[[20, 14], [56, 41]]\n");
}

TEST_CASE("reference: collectives of SPMD IR keep the global value") {
  auto r = run(R"(mesh m = [x = 2, y = 2]
func @main() -> (f32[2, 2] @ m{x: replicate, y: replicate}) {
  %0 = const [[1, 2], [3, 4]] : f32[2, 2] @ m{x: shard(0), y: replicate}
  %1 = all_gather %0 axes [0] : f32[2, 2] @ m{x: replicate, y: replicate}
  %2 = local_partial %1 axes [1] : f32[2, 2] @ m{x: replicate, y: partial(sum)}
  %3 = reduce_scatter %2 axes [1] : f32[2, 2] @ m{x: replicate, y: shard(1)}
  %4 = all_to_all %3 axes [1] : f32[2, 2] @ m{x: replicate, y: shard(0)}
  %5 = all_gather %4 axes [1] : f32[2, 2] @ m{x: replicate, y: replicate}
  %6 = local_slice %5 axes [0] : f32[2, 2] @ m{x: shard(1), y: replicate}
  %7 = all_gather %6 axes [0] : f32[2, 2] @ m{x: replicate, y: replicate}
  return %7
}
)");
  CHECK(r[0] == "[[1, 2], [3, 4]]");
}

TEST_CASE("reference: unary elementwise ops") {
  CHECK(one("f32[4]", "  %0 = const [-1, 0, 0.5, 4] : f32[4]\n  %1 = relu %0 : f32[4]", 1) ==
        "[0, 0, 0.5, 4]");
  CHECK(one("f32[2]", "  %0 = const [4, 0.25] : f32[2]\n  %1 = rsqrt %0 : f32[2]", 1) ==
        "[0.5, 2]");
  CHECK(one("f32[2]", "  %0 = const [0, 1] : f32[2]\n  %1 = exp %0 : f32[2]", 1) ==
        "[1, " + formatF32(std::exp(1.0f)) + "]");
  CHECK(one("f32[1]", "  %0 = const [0] : f32[1]\n  %1 = sigmoid %0 : f32[1]", 1) == "[0.5]");
  CHECK(one("f32[2]", "  %0 = const [-1, 0] : f32[2]\n  %1 = log %0 : f32[2]", 1) == "[nan, -inf]");
  CHECK(one("i32[2]", "  %0 = const [-2147483648, -3] : i32[2]\n  %1 = neg %0 : i32[2]", 1) ==
        "[-2147483648, 3]");
  CHECK(one("i32[2]", "  %0 = const [-2147483648, -3] : i32[2]\n  %1 = abs %0 : i32[2]", 1) ==
        "[-2147483648, 3]");
  CHECK(one("bool[2]", "  %0 = const [0, 1] : bool[2]\n  %1 = not %0 : bool[2]", 1) ==
        "[true, false]");
}

TEST_CASE("reference: cast truncates, saturates and wraps") {
  CHECK(one("i32[5]",
            "  %0 = const [1.9, -1.9, nan, 1e20, -1e20] : f32[5]\n  %1 = cast %0 : i32[5]",
            1) == "[1, -1, 0, 2147483647, -2147483648]");
  CHECK(one("i32[1]", "  %0 = const [4294967297] : i64[1]\n  %1 = cast %0 : i32[1]", 1) == "[1]");
  CHECK(one("bool[3]", "  %0 = const [0, 0.5, -2] : f64[3]\n  %1 = cast %0 : bool[3]", 1) ==
        "[false, true, true]");
  CHECK(one("f64[2]", "  %0 = const [1, 0] : bool[2]\n  %1 = cast %0 : f64[2]", 1) == "[1, 0]");
}

TEST_CASE("reference: binary ops broadcast like numpy") {
  CHECK(one("f32[2, 3]",
            "  %0 = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3]\n  %1 = const [10, 20, 30] : f32[3]\n"
            "  %2 = add %0, %1 : f32[2, 3]",
            2) == "[[11, 22, 33], [14, 25, 36]]");
  CHECK(one("f32[2, 3]",
            "  %0 = const [[1], [2]] : f32[2, 1]\n  %1 = const [1, 2, 3] : f32[1, 3]\n"
            "  %2 = mul %0, %1 : f32[2, 3]",
            2) == "[[1, 2, 3], [2, 4, 6]]");
  CHECK(one("f32[3]",
            "  %0 = const [1, nan, 3] : f32[3]\n  %1 = const 2 : f32[]\n"
            "  %2 = maximum %0, %1 : f32[3]",
            2) == "[2, nan, 3]");
  CHECK(one("bool[3]",
            "  %0 = const [1, 2, 3] : i32[3]\n  %1 = const 2 : i32[]\n"
            "  %2 = ge %0, %1 : bool[3]",
            2) == "[false, true, true]");
  CHECK(one("f32[2]",
            "  %0 = const [2, -8] : f32[2]\n  %1 = const [3, 0.5] : f32[2]\n"
            "  %2 = pow %0, %1 : f32[2]",
            2) == "[8, nan]");
  CHECK(one("bool[4]",
            "  %0 = const [0, 0, 1, 1] : bool[4]\n  %1 = const [0, 1, 0, 1] : bool[4]\n"
            "  %2 = or %0, %1 : bool[4]",
            2) == "[false, true, true, true]");
}

TEST_CASE("reference: integers wrap and divide towards zero, x / 0 = 0") {
  CHECK(one("i32[2]",
            "  %0 = const [2147483647, -2147483648] : i32[2]\n  %1 = const 1 : i32[]\n"
            "  %2 = add %0, %1 : i32[2]",
            2) == "[-2147483648, -2147483647]");
  CHECK(one("i32[1]", "  %0 = const [65536] : i32[1]\n  %1 = mul %0, %0 : i32[1]", 1) == "[0]");
  CHECK(one("i32[5]",
            "  %0 = const [7, -7, 7, 5, -2147483648] : i32[5]\n"
            "  %1 = const [2, 2, 0, -1, -1] : i32[5]\n  %2 = div %0, %1 : i32[5]",
            2) == "[3, -3, 0, -5, -2147483648]");
  CHECK(one("i64[3]",
            "  %0 = const [2, -1, 3] : i64[3]\n  %1 = const [10, 3, -1] : i64[3]\n"
            "  %2 = pow %0, %1 : i64[3]",
            2) == "[1024, -1, 0]");
  CHECK(one("i64[1]", "  %0 = const [9007199254740993] : i64[1]\n  %1 = add %0, %0 : i64[1]", 1) ==
        "[18014398509481986]"); // integer constants are exact (`ints`), also above 2^53
  CHECK(one("i64[1]", "  %0 = const [9223372036854775807] : i64[1]\n  %1 = add %0, %0 : i64[1]",
            1) == "[-2]"); // exact at the limit, then wraps
}

TEST_CASE("reference: select broadcasts its three operands") {
  CHECK(one("f32[2, 2]",
            "  %0 = const [[1, 0], [0, 1]] : bool[2, 2]\n  %1 = const [1, 2] : f32[2]\n"
            "  %2 = const -1 : f32[]\n  %3 = select %0, %1, %2 : f32[2, 2]",
            3) == "[[1, -1], [-1, 2]]");
}

TEST_CASE("reference: reductions remove their dims") {
  std::string x = "  %0 = const [[[1, 2], [3, 4]], [[5, 6], [7, 8]]] : f32[2, 2, 2]\n";
  CHECK(one("f32[2]", x + "  %1 = reduce_sum %0 dims [0, 2] : f32[2]", 1) == "[14, 22]");
  CHECK(one("f32[]", x + "  %1 = reduce_sum %0 dims [0, 1, 2] : f32[]", 1) == "36");
  CHECK(one("f32[2, 2]", x + "  %1 = reduce_max %0 dims [1] : f32[2, 2]", 1) == "[[3, 4], [7, 8]]");
  CHECK(one("f32[2, 2]", x + "  %1 = reduce_min %0 dims [2] : f32[2, 2]", 1) == "[[1, 3], [5, 7]]");
  CHECK(one("f32[2, 2, 2]", x + "  %1 = reduce_sum %0 dims [] : f32[2, 2, 2]", 1) ==
        "[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]");
  CHECK(one("i32[]", "  %0 = const [2147483647, 1] : i32[2]\n  %1 = reduce_sum %0 dims [0] : i32[]",
            1) == "-2147483648");
  CHECK(one("f32[]", "  %0 = const [1, nan] : f32[2]\n  %1 = reduce_max %0 dims [0] : f32[]", 1) ==
        "nan");
  CHECK(one("f32[]", "  %0 = const [] : f32[0]\n  %1 = reduce_max %0 dims [0] : f32[]", 1) ==
        "-inf");
  // f32 sums accumulate in double: 1e8 + 1 - 1e8 keeps the 1.
  CHECK(one("f32[]",
            "  %0 = const [100000000, 1, -100000000] : f32[3]\n"
            "  %1 = reduce_sum %0 dims [0] : f32[]",
            1) == "1");
}

TEST_CASE("reference: matmul batches and promotes vectors like numpy") {
  std::string a = "  %0 = const [[1, 2], [3, 4]] : f32[2, 2]\n";
  CHECK(one("f32[2]", a + "  %1 = const [1, 1] : f32[2]\n  %2 = matmul %0, %1 : f32[2]", 2) ==
        "[3, 7]");
  CHECK(one("f32[2]", a + "  %1 = const [1, 1] : f32[2]\n  %2 = matmul %1, %0 : f32[2]", 2) ==
        "[4, 6]");
  CHECK(one("f32[]", "  %0 = const [1, 2] : f32[2]\n  %1 = matmul %0, %0 : f32[]", 1) == "5");
  CHECK(one("f32[2, 2, 2]",
            a + "  %1 = const [[[1, 0], [0, 1]], [[0, 1], [1, 0]]] : f32[2, 2, 2]\n"
                "  %2 = matmul %1, %0 : f32[2, 2, 2]",
            2) == "[[[1, 2], [3, 4]], [[3, 4], [1, 2]]]");
  CHECK(one("i32[1, 1]",
            "  %0 = const [[65536, 65536]] : i32[1, 2]\n"
            "  %1 = const [[65536], [65536]] : i32[2, 1]\n"
            "  %2 = matmul %0, %1 : i32[1, 1]",
            2) == "[[0]]");
}

TEST_CASE("reference: einsum contracts, transposes, takes diagonals") {
  std::string ab = "  %0 = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3]\n"
                   "  %1 = const [[6, 5], [4, 3], [2, 1]] : f32[3, 2]\n";
  CHECK(one("f32[2, 2]", ab + "  %2 = einsum \"ik,kj->ij\" %0, %1 : f32[2, 2]", 2) ==
        "[[20, 14], [56, 41]]");
  CHECK(one("f32[2, 2]", ab + "  %2 = einsum \"ik, kj -> ji\" %0, %1 : f32[2, 2]", 2) ==
        "[[20, 56], [14, 41]]");
  CHECK(one("f32[2, 2]", ab + "  %2 = einsum \"ik,kj\" %0, %1 : f32[2, 2]", 2) ==
        "[[20, 14], [56, 41]]"); // implicit output: letters seen once, sorted
  CHECK(one("f32[3, 2]", ab + "  %2 = einsum \"ij->ji\" %0 : f32[3, 2]", 2) ==
        "[[1, 4], [2, 5], [3, 6]]");
  CHECK(one("f32[]", ab + "  %2 = einsum \"ij,ji->\" %0, %1 : f32[]", 2) == "61");
  CHECK(one("f32[2]",
            "  %0 = const [[1, 2], [3, 4]] : f32[2, 2]\n  %1 = einsum \"ii->i\" %0 : f32[2]",
            1) == "[1, 4]");
  // Uneven sizes and a batch letter kept on both sides.
  CHECK(one("f32[2, 1, 3]",
            "  %0 = iota dim 2 : f32[2, 1, 5]\n  %1 = fill 1 : f32[2, 5, 3]\n"
            "  %2 = einsum \"bik,bkj->bij\" %0, %1 : f32[2, 1, 3]",
            2) == "[[[10, 10, 10]], [[10, 10, 10]]]");
  CHECK(one("f32[3]",
            ab + "  %2 = const [1, -1] : f32[2]\n  %3 = einsum \"ij,j->i\" %1, %2 : f32[3]",
            3) == "[1, 1, 1]");
}

TEST_CASE("reference: transpose, reshape, broadcast") {
  std::string x = "  %0 = iota dim 0 : i32[2, 3, 2]\n  %1 = iota dim 1 : i32[2, 3, 2]\n"
                  "  %2 = mul %1, %1 : i32[2, 3, 2]\n  %3 = add %0, %2 : i32[2, 3, 2]\n";
  CHECK(one("i32[2, 3, 2]", x, 3) == "[[[0, 0], [1, 1], [4, 4]], [[1, 1], [2, 2], [5, 5]]]");
  CHECK(one("i32[3, 2, 2]", x + "  %4 = transpose %3 perm [1, 2, 0] : i32[3, 2, 2]", 4) ==
        "[[[0, 1], [0, 1]], [[1, 2], [1, 2]], [[4, 5], [4, 5]]]");
  CHECK(one("i32[12]", x + "  %4 = reshape %3 : i32[12]", 4) ==
        "[0, 0, 1, 1, 4, 4, 1, 1, 2, 2, 5, 5]");
  CHECK(one("f32[2, 2, 3]",
            "  %0 = const [[1, 2, 3]] : f32[1, 3]\n"
            "  %1 = broadcast %0 : f32[2, 2, 3]",
            1) == "[[[1, 2, 3], [1, 2, 3]], [[1, 2, 3], [1, 2, 3]]]");
}

TEST_CASE("reference: index_select and index_add along any dim") {
  std::string x = "  %0 = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3]\n"
                  "  %1 = const [2, 0, 2] : i64[3]\n";
  CHECK(one("f32[2, 3]", x + "  %2 = index_select %0, %1 dim 1 : f32[2, 3]", 2) ==
        "[[3, 1, 3], [6, 4, 6]]");
  CHECK(one("f32[2, 3]",
            x + "  %2 = fill 1 : f32[2, 3]\n  %3 = index_add %0, %1, %2 dim 1 : f32[2, 3]",
            3) == "[[2, 2, 5], [5, 5, 8]]");
  CHECK(one("f32[3, 3]",
            x + "  %2 = const [1, 1, 0] : i32[3]\n  %3 = index_select %0, %2 dim 0 : f32[3, 3]",
            3) == "[[4, 5, 6], [4, 5, 6], [1, 2, 3]]");
  Module m = parseOrFail(mainFn("f32[1, 3]",
                                "  %0 = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3]\n"
                                "  %1 = const [2] : i32[1]\n"
                                "  %2 = index_select %0, %1 dim 0 : f32[1, 3]",
                                2));
  std::ostringstream out;
  ReferenceEvaluator ev(m, out);
  CHECK_THROWS_WITH_AS(ev.run("main", {}),
                       "`index_select`: index 2 is out of range for dim 0 of size 2", RuntimeFault);
}

TEST_CASE("reference: sources") {
  CHECK(one("f32[2, 2]", "  %0 = fill 2.5 : f32[2, 2]", 0) == "[[2.5, 2.5], [2.5, 2.5]]");
  CHECK(one("i32[2, 3]", "  %0 = iota dim 1 : i32[2, 3]", 0) == "[[0, 1, 2], [0, 1, 2]]");
  CHECK(one("f32[2]", "  %0 = const 7 : f32[2]", 0) == "[7, 7]");
  CHECK(one("f32[3]", "  %0 = random uniform 3 : f32[3]", 0) ==
        "[" + formatF32(uniform01(3, 0)) + ", " + formatF32(uniform01(3, 1)) + ", " +
            formatF32(uniform01(3, 2)) + "]");
  CHECK(one("f64[2]", "  %0 = random normal 9 : f64[2]", 0) ==
        "[" + formatF64((double)normal(9, 0)) + ", " + formatF64((double)normal(9, 1)) + "]");
}

TEST_CASE("reference: for loops carry values; the induction variable is i64[]") {
  auto r = run(R"(func @main() -> (i64[], f32[2]) {
  %0 = const 0 : i64[]
  %1 = const [1, 1] : f32[2]
  %2, %3 = for 1 to 6 step 2 iter(%0, %1) {
    ^(%4:i: i64[], %5: i64[], %6: f32[2]):
    %7 = add %5, %4 : i64[]
    %8 = add %6, %6 : f32[2]
    yield %7, %8
  } : i64[], f32[2]
  return %2, %3
}
)");
  CHECK(r == std::vector<std::string>{"9", "[8, 8]"}); // i = 1, 3, 5
  auto none = run(R"(func @main() -> (f32[]) {
  %0 = const 5 : f32[]
  %1 = for 3 to 3 step 1 iter(%0) {
    ^(%2: i64[], %3: f32[]):
    %4 = neg %3 : f32[]
    yield %4
  } : f32[]
  return %1
}
)");
  CHECK(none[0] == "5");
}

TEST_CASE("reference: calls bind size symbols from the arguments") {
  std::string text = R"(mesh g = [t = 2]
func @scale(%0: f32[T, H] @ g{t: shard(0)}, %1: f32[H] @ g{t: replicate}) -> (f32[T, H] @ g{t: shard(0)}) {
  %2 = mul %0, %1 : f32[T, H] @ g{t: shard(0)}
  %3 = fill 1 : f32[T, H] @ g{t: shard(0)}
  %4 = add %2, %3 : f32[T, H] @ g{t: shard(0)}
  return %4
}
func @main(%0: f32[3, 2] @ g{t: shard(0)}) -> (f32[3, 2] @ g{t: shard(0)}) {
  %1 = const [10, 100] : f32[2] @ g{t: replicate}
  %2 = call @scale(%0, %1) : f32[3, 2] @ g{t: shard(0)}
  return %2
}
)";
  auto r = run(text, nullptr, {tensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6})});
  CHECK(r[0] == "[[11, 201], [31, 401], [51, 601]]");
  Module m = parseOrFail(text);
  std::ostringstream out;
  ReferenceEvaluator ev(m, out);
  CHECK_THROWS_AS(ev.run("main", {tensor(DType::F32, {2, 2}, {})}), RuntimeFault);
  CHECK_THROWS_AS(ev.run("main", {}), RuntimeFault);
  CHECK_THROWS_AS(ev.run("nope", {}), RuntimeFault);
}

TEST_CASE("reference: grad must be expanded first") {
  Module m = parseOrFail(R"(func @loss(%0: f32[2]) -> (f32[]) {
  %1 = reduce_sum %0 dims [0] : f32[]
  return %1
}
func @main(%0: f32[2]) -> (f32[2]) {
  %1 = grad @loss(%0) wrt [0] : f32[2]
  return %1
}
)");
  std::ostringstream out;
  ReferenceEvaluator ev(m, out);
  CHECK_THROWS_WITH_AS(ev.run("main", {tensor(DType::F32, {2}, {1, 2})}),
                       "grad reached the reference evaluator; run the autodiff pass first",
                       InternalError);
}

TEST_CASE("format: numbers, nesting, summaries") {
  CHECK(formatF32(20.0f) == "20");
  CHECK(formatF32(0.1f) == "0.1");
  CHECK(formatF64(0.1) == "0.1");
  CHECK(formatF32(NAN) == "nan");
  CHECK(formatF32(-NAN) == "nan");
  CHECK(formatF32(INFINITY) == "inf");
  CHECK(formatF64(-INFINITY) == "-inf");
  CHECK(formatF32(1.0f / 3.0f) == "0.33333334");
  CHECK(formatTensor(tensor(DType::F32, {}, {2.5})) == "2.5");
  CHECK(formatTensor(tensor(DType::I64, {2, 2}, {20, 14, 56, 41})) == "[[20, 14], [56, 41]]");
  CHECK(formatTensor(tensor(DType::Bool, {3}, {1, 0, 1})) == "[true, false, true]");
  CHECK(formatTensor(HostTensor(DType::F32, {0})) == "[]");
  CHECK(formatTensor(HostTensor(DType::F32, {2, 0})) == "[[], []]");
  HostTensor big(DType::I32, {1001});
  for (int i = 0; i < 1001; ++i)
    big.set(i, i);
  CHECK(formatTensor(big) == "[0, 1, 2, ..., 998, 999, 1000]");
  CHECK(formatTensorFull(big).size() > 3000);
  HostTensor grid(DType::I32, {40, 40});
  for (int i = 0; i < 1600; ++i)
    grid.set(i, i);
  CHECK(formatTensor(grid) == "[[0, 1, 2, ..., 37, 38, 39], [40, 41, 42, ..., 77, 78, 79], "
                              "[80, 81, 82, ..., 117, 118, 119], ..., "
                              "[1480, 1481, 1482, ..., 1517, 1518, 1519], "
                              "[1520, 1521, 1522, ..., 1557, 1558, 1559], "
                              "[1560, 1561, 1562, ..., 1597, 1598, 1599]]");
  HostTensor small(DType::I32, {1000});
  CHECK(formatTensor(small).find("...") == std::string::npos);
}
