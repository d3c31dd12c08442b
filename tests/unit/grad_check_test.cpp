// Gradient checks of passes/Autodiff: for every differentiable op (unary,
// binary with broadcasting, select, reductions, matmul in all its ranks,
// einsum, transpose, reshape, broadcast_to, index_select, index_add, cast,
// relayout, calls and loops inside the differentiated function) a small
// program is compiled through dt::Compilation, the generated gradient function is
// run by the reference evaluator in f64 and compared with central finite
// differences of the primal, on several meshes and layouts. Per layout the
// same gradient is also run distributed (SPMD lowering + the thread-mesh
// executor), so the gradient's VALUE is checked not to depend on the layout;
// its placement may, and the placement tests check the derived ones in the IR
// (seed 001's modulation: cond and weight partial(sum), tokens shard(0)).
//
// Tolerances: finite differences with step h = 1e-5 (f64), pass when
// |grad - fd| <= 1e-6 (1 + |fd|) (truncation ~h^2, rounding ~1e-16/h);
// the cast-through-f32 case uses h = 1e-3 and 1e-3 (f32 rounding), and the
// stdlib functions (f32 only) h = 1e-2 and 2e-2. A layout's
// gradient (reference or distributed) must match the first layout's within
// 1e-10 (1 + |g|) in f64, 1e-4 (1 + |g|) in f32 (reassociation of partial
// sums only).
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace dt;

namespace {

/// A parameter of the function under test: `name: type @ <layout>`.
struct Param {
  std::string name, type;         ///< `x`, `f64[5, 3]`
  std::vector<int64_t> ints = {}; ///< the values of an integer parameter
};

/// One mesh and one layout per parameter.
struct Config {
  std::string mesh;                 ///< `[x = 2, y = 2]`
  std::vector<std::string> layouts; ///< `m[x, _]`, one per parameter
};

struct Case {
  std::string name;
  std::vector<Param> params;
  /// The function body; returns a rank-0 f64. `{L1}` is parameter 1's layout.
  std::string body;
  std::vector<int64_t> wrt;
  std::vector<Config> configs;
  double h = 1e-5, tol = 1e-6;
  std::string prelude = {};   ///< helper functions `f` calls
  std::string result = "f64"; ///< the element type of `f`'s result
  double layoutTol = 1e-10;   ///< distributed / other layouts vs the first
};

std::string join(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

/// The program: the function `f`, arguments `a0, a1, ...` and the grad call.
std::string program(const Case &c, const Config &cf) {
  std::string t = "mesh m = " + cf.mesh + "\n" + c.prelude + "fn f(";
  std::string body = c.body;
  for (size_t i = 0; i < c.params.size(); ++i) {
    t += (i ? ", " : "") + c.params[i].name + ": " + c.params[i].type + " @ " + cf.layouts[i];
    std::string key = "{L" + std::to_string(i) + "}";
    for (size_t p; (p = body.find(key)) != std::string::npos;)
      body.replace(p, key.size(), cf.layouts[i]);
  }
  t += ") -> " + c.result + "[] @ * {\n" + body + "\n}\n";
  std::string args;
  for (size_t i = 0; i < c.params.size(); ++i) {
    const Param &p = c.params[i];
    std::string a = "a" + std::to_string(i);
    t += "let " + a + " : " + p.type + " @ " + cf.layouts[i] + " = " +
         (p.ints.empty() ? "randn(seed=" + std::to_string(i + 1) + ")" : "[" + join(p.ints) + "]") +
         "\n";
    args += (i ? ", " : "") + a;
  }
  std::string bound;
  for (size_t i = 0; i < c.wrt.size(); ++i)
    bound += (i ? ", g" : "g") + std::to_string(i);
  if (c.wrt.size() > 1)
    bound = "(" + bound + ")";
  return t + "let " + bound + " = grad(f, wrt=[" + join(c.wrt) + "])(" + args + ")\n";
}

/// Deterministic argument values in [-1.5, 1.5] (floats) or the given ints.
std::vector<HostTensor> arguments(const Function &f, const Case &c) {
  std::vector<HostTensor> out;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const TensorType &t = f.type(f.params[i]);
    std::vector<int64_t> dims;
    for (auto &d : t.shape)
      dims.push_back(d.value);
    HostTensor h(t.dtype, dims);
    for (int64_t k = 0; k < h.numel(); ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(s >> 11) / (double)(1ull << 53);
      h.set(k, c.params[i].ints.empty() ? 3.0 * u - 1.5 : (double)c.params[i].ints[k]);
    }
    out.push_back(h);
  }
  return out;
}

/// Compiles (global IR, or SPMD-lowered) and returns false with diagnostics.
bool build(Compilation &s, const std::string &text, bool spmd) {
  PipelineOptions po;
  po.spmd = spmd;
  std::ostringstream log;
  bool ok = s.compile("grad.dt", text) && runPipeline(s, po, log);
  INFO(text << s.diags.renderAll());
  CHECK(ok);
  return ok;
}

/// The gradient function `f.grad.*` and its primal.
std::pair<std::string, std::string> names(const Module &m) {
  for (auto &f : m.functions) {
    auto p = f.name.find(".grad.");
    if (f.name.rfind("f", 0) == 0 && p != std::string::npos)
      return {f.name.substr(0, p), f.name};
  }
  return {"", ""};
}

double scalar(const std::vector<HostTensor> &r) { return r.at(0).get(0); }

bool close(double a, double b, double tol) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }

/// Runs every configuration of `c`; checks FD, layout invariance, distributed.
void check(const Case &c) {
  std::vector<HostTensor> first;
  for (size_t k = 0; k < c.configs.size(); ++k) {
    const Config &cf = c.configs[k];
    std::string text = program(c, cf);
    INFO(c.name << " on m = " << cf.mesh << "\n" << text);
    Compilation ref(pipelineCompileOptions()), dist(pipelineCompileOptions());
    if (!build(ref, text, false) || !build(dist, text, true))
      continue;
    auto [primal, gname] = names(ref.module);
    REQUIRE(!gname.empty());
    std::ostringstream sink;
    ReferenceEvaluator ev(ref.module, sink);
    auto args = arguments(*ref.module.find(primal), c);
    auto grads = ev.run(gname, args);
    REQUIRE(grads.size() == c.wrt.size());
    // Central finite differences of the primal, element by element.
    for (size_t w = 0; w < c.wrt.size(); ++w) {
      HostTensor &x = args[c.wrt[w]];
      for (int64_t i = 0; i < x.numel(); ++i) {
        double x0 = x.get(i);
        x.set(i, x0 + c.h);
        double up = scalar(ev.run(primal, args));
        x.set(i, x0 - c.h);
        double down = scalar(ev.run(primal, args));
        x.set(i, x0);
        double fd = (up - down) / (2 * c.h), g = grads[w].get(i);
        INFO("d/d " << c.params[c.wrt[w]].name << "[" << i << "]: grad " << g << ", fd " << fd);
        CHECK(close(g, fd, c.tol));
      }
    }
    // The same gradient on the thread mesh, and equal to the first layout's.
    std::vector<HostTensor> dg;
    REQUIRE_NOTHROW(dg = Executor(dist.module, sink).run(gname, args));
    REQUIRE(dg.size() == grads.size());
    for (size_t w = 0; w < grads.size(); ++w)
      for (int64_t i = 0; i < grads[w].numel(); ++i) {
        INFO("distributed d/d " << c.params[c.wrt[w]].name << "[" << i << "]");
        CHECK(close(dg[w].get(i), grads[w].get(i), c.layoutTol));
        if (k > 0)
          CHECK(close(grads[w].get(i), first[w].get(i), c.layoutTol));
      }
    if (k == 0)
      first = grads;
  }
}

// Layout sets, by the shapes the cases use.
const std::string kMesh22 = "[x = 2, y = 2]", kMesh3 = "[x = 3, y = 1]", kMesh1 = "[x = 1, y = 1]";

/// One-operand-layout configs for a [5, 3] tensor (with a same-layout weight).
std::vector<Config> matrixConfigs(size_t n) {
  std::vector<std::vector<std::string>> ls = {
      {"m[_, _]"}, {"m[x, _]"}, {"m[x, y]"}, {"m[_, x]"}, {"m[(x, y), _]"}};
  std::vector<std::string> meshes = {kMesh1, kMesh22, kMesh22, kMesh3, kMesh22};
  std::vector<Config> out;
  for (size_t i = 0; i < ls.size(); ++i)
    out.push_back({meshes[i], std::vector<std::string>(n, ls[i][0])});
  return out;
}

Case unaryCase(const std::string &op, const std::string &arg) {
  return {"unary " + op,
          {{"x", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
          "  return sum(" + op + "(" + arg + ") * c)",
          {0},
          matrixConfigs(2)};
}

} // namespace

TEST_CASE("grad check: unary elementwise ops") {
  for (auto op : {"exp", "tanh", "sigmoid", "relu", "abs", "sin", "cos", "neg"})
    check(unaryCase(op, "x"));
  for (auto op : {"log", "sqrt", "rsqrt"})
    check(unaryCase(op, "x * x + 0.5"));
  for (auto op : {"erf", "expm1", "gelu", "softplus", "square"})
    check(unaryCase(op, "x"));
  check(unaryCase("log1p", "x * x"));
  check(unaryCase("", "-x"));
}

TEST_CASE("grad check: binary ops with broadcasting") {
  for (auto e :
       {"x + y", "x - y", "x * y", "x / (y * y + 0.5)", "(x * x + 0.5) ** y", "pow(x * x + 0.5, y)",
        "maximum(x, y)", "minimum(x, y)", "x * 2.0 - 3.0 / (y * y + 1.0)", "x % (y * y + 0.5)",
        "(x * 3.0) // (y * y + 0.5) + x", "clamp(x, -0.5, y)"}) {
    // y: a row vector broadcast over the rows of x, then a column [5, 1]
    check({std::string("binary ") + e,
           {{"x", "f64[5, 3]"}, {"y", "f64[3]"}, {"c", "f64[5, 3]"}},
           std::string("  return sum((") + e + ") * c)",
           {0, 1},
           {{kMesh1, {"m[_, _]", "m[_]", "m[_, _]"}},
            {kMesh22, {"m[x, _]", "m[_]", "m[x, _]"}},
            {kMesh22, {"m[x, y]", "m[y]", "m[x, y]"}},
            {kMesh3, {"m[_, x]", "m[x]", "m[_, x]"}}}});
    check({std::string("binary column ") + e,
           {{"x", "f64[5, 3]"}, {"y", "f64[5, 1]"}, {"c", "f64[5, 3]"}},
           std::string("  return sum((") + e + ") * c)",
           {0, 1},
           {{kMesh1, {"m[_, _]", "m[_, _]", "m[_, _]"}},
            {kMesh22, {"m[x, _]", "m[x, _]", "m[x, _]"}},
            {kMesh22, {"m[_, y]", "m[_, _]", "m[_, y]"}}}});
  }
}

TEST_CASE("grad check: cumsum along an unsharded dim, other dims sharded") {
  for (auto dim : {"0", "1"})
    check(
        {std::string("cumsum dim ") + dim,
         {{"x", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
         std::string("  return sum(cumsum(x * x, dim=") + dim + ") * c)",
         {0},
         {{kMesh1, {"m[_, _]", "m[_, _]"}},
          {kMesh22, {dim[0] == '0' ? "m[_, y]" : "m[x, _]", dim[0] == '0' ? "m[_, y]" : "m[x, _]"}},
          {kMesh3,
           {dim[0] == '0' ? "m[_, x]" : "m[x, _]", dim[0] == '0' ? "m[_, x]" : "m[x, _]"}}}});
}

TEST_CASE("grad check: where (select)") {
  check({"where",
         {{"x", "f64[5, 3]"}, {"y", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
         "  return sum(where(x > y, x * 3.0, sin(y)) * c)",
         {0, 1},
         matrixConfigs(3)});
}

TEST_CASE("grad check: reductions sum, mean, max, min") {
  for (auto r : {"sum", "mean", "max", "min"})
    for (int d : {0, 1}) {
      std::string len = d == 0 ? "3" : "5";
      check({std::string("reduce ") + r + " dim " + std::to_string(d),
             {{"x", "f64[5, 3]"}, {"c", "f64[" + len + "]"}},
             std::string("  return sum(relayout(") + r + "(x, dim=" + std::to_string(d) +
                 "), {L1}) * c)",
             {0},
             // reducing a sharded dim: partial(sum) / partial(max) results
             {{kMesh1, {"m[_, _]", "m[_]"}},
              {kMesh22, {"m[x, _]", d == 0 ? "m[_]" : "m[x]"}},
              {kMesh22, {"m[x, y]", d == 0 ? "m[y]" : "m[x]"}},
              {kMesh3, {"m[_, x]", d == 0 ? "m[x]" : "m[_]"}}}});
    }
  check({"reduce all dims",
         {{"x", "f64[5, 3]"}},
         "  return mean(x * x) + sum(x)",
         {0},
         matrixConfigs(1)});
}

TEST_CASE("grad check: matmul 2-D, batched, 1-D") {
  check({"matmul 2-D",
         {{"a", "f64[4, 3]"}, {"b", "f64[3, 5]"}, {"c", "f64[4, 5]"}},
         "  return sum((a @ b) * c)",
         {0, 1},
         {{kMesh1, {"m[_, _]", "m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[x, _]", "m[_, y]", "m[x, y]"}},
          {kMesh22, {"m[_, x]", "m[x, _]", "m[_, _]"}}, // contraction sharded: partial
          {kMesh3, {"m[_, x]", "m[x, _]", "m[_, _]"}}}});
  check({"matmul batched",
         {{"a", "f64[2, 4, 3]"}, {"b", "f64[2, 3, 5]"}, {"c", "f64[2, 4, 5]"}},
         "  return sum(matmul(a, b) * c)",
         {0, 1},
         {{kMesh1, {"m[_, _, _]", "m[_, _, _]", "m[_, _, _]"}},
          {kMesh22, {"m[x, y, _]", "m[x, _, _]", "m[x, y, _]"}},
          {kMesh22, {"m[x, _, y]", "m[x, y, _]", "m[x, _, _]"}}}});
  check({"matmul 3-D @ 2-D",
         {{"a", "f64[2, 4, 3]"}, {"b", "f64[3, 5]"}, {"c", "f64[2, 4, 5]"}},
         "  return sum((a @ b) * c)",
         {0, 1},
         {{kMesh1, {"m[_, _, _]", "m[_, _]", "m[_, _, _]"}},
          {kMesh22, {"m[x, _, _]", "m[_, y]", "m[x, _, y]"}}}});
  check({"matmul vector @ matrix, matrix @ vector, vector @ vector",
         {{"v", "f64[3]"}, {"a", "f64[3, 4]"}, {"u", "f64[4]"}},
         "  return relayout(sum((v @ a) * u), m[]) + relayout(sum((a @ u) * v), m[]) * 0.5 + v @ v",
         {0, 1, 2},
         {{kMesh1, {"m[_]", "m[_, _]", "m[_]"}}, {kMesh22, {"m[_]", "m[_, y]", "m[y]"}}}});
}

TEST_CASE("grad check: matmul with size-1 broadcast batch dims") {
  // The broadcast operand's gradient is summed over the batch dims it
  // stretched (back to size 1), with the batch dim of the other sharded,
  // replicated, or the contraction sharded (partial).
  check({"matmul [1, M, K] @ [B, K, N]",
         {{"a", "f64[1, 2, 3]"}, {"b", "f64[5, 3, 2]"}, {"c", "f64[5, 2, 2]"}},
         "  return sum(matmul(a, b) * c)",
         {0, 1},
         {{kMesh1, {"m[_, _, _]", "m[_, _, _]", "m[_, _, _]"}},
          {kMesh22, {"m[_, _, _]", "m[x, _, _]", "m[x, _, _]"}},
          {kMesh22, {"m[_, x, _]", "m[y, _, _]", "m[y, x, _]"}},
          {kMesh22, {"m[_, _, x]", "m[y, x, _]", "m[y, _, _]"}},
          {kMesh3, {"m[_, _, _]", "m[x, _, _]", "m[x, _, _]"}}}});
  check({"matmul [B, M, K] @ [1, K, N] and [2, 1, M, K] @ [3, K, N]",
         {{"a", "f64[4, 2, 3]"},
          {"b", "f64[1, 3, 2]"},
          {"p", "f64[2, 1, 2, 3]"},
          {"q", "f64[3, 3, 2]"}},
         "  return relayout(sum(matmul(a, b) * matmul(a, b)), m[]) + relayout(sum(matmul(p, q)), "
         "m[])",
         {0, 1, 2, 3},
         {{kMesh1, {"m[_, _, _]", "m[_, _, _]", "m[_, _, _, _]", "m[_, _, _]"}},
          {kMesh22, {"m[x, _, _]", "m[_, _, y]", "m[y, _, _, _]", "m[x, _, _]"}},
          {kMesh3, {"m[x, _, _]", "m[_, _, _]", "m[x, _, _, _]", "m[_, _, _]"}}}});
}

TEST_CASE("grad check: einsum") {
  check({"einsum ik,kj->ij",
         {{"a", "f64[4, 3]"}, {"b", "f64[3, 5]"}, {"c", "f64[4, 5]"}},
         "  return sum(einsum(\"ik,kj->ij\", a, b) * c)",
         {0, 1},
         {{kMesh1, {"m[_, _]", "m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[x, y]", "m[y, _]", "m[x, _]"}}}});
  check({"einsum bij,bjk->bik and ij,j->i and ij,ij->i",
         {{"a", "f64[2, 4, 3]"}, {"b", "f64[2, 3, 2]"}, {"m2", "f64[4, 3]"}, {"v", "f64[3]"}},
         "  let e = einsum(\"bij,bjk->bik\", a, b)\n"
         "  return (relayout(sum(e * e), m[]) + relayout(sum(einsum(\"ij,j->i\", m2, v)), m[]) +\n"
         "          relayout(sum(einsum(\"ij,ij->i\", m2, m2)), m[]))",
         {0, 1, 2, 3},
         {{kMesh1, {"m[_, _, _]", "m[_, _, _]", "m[_, _]", "m[_]"}},
          {kMesh22, {"m[x, _, _]", "m[x, _, _]", "m[_, y]", "m[y]"}}}});
}

TEST_CASE("grad check: transpose, reshape, broadcast_to") {
  check({"transpose",
         {{"x", "f64[2, 4, 3]"}, {"c", "f64[3, 2, 4]"}},
         "  return sum(transpose(x, perm=[2, 0, 1]) * c) + sum(transpose(x, perm=[0, 2, 1]) * "
         "transpose(x, perm=[0, 2, 1]))",
         {0},
         {{kMesh1, {"m[_, _, _]", "m[_, _, _]"}}, {kMesh22, {"m[x, y, _]", "m[_, x, y]"}}}});
  check({"reshape",
         {{"x", "f64[6, 4]"}, {"c", "f64[6, 2, 2]"}},
         "  return sum(reshape(x, [6, 2, 2]) * c) + sum(reshape(x * x, [24]))",
         {0},
         {{kMesh1, {"m[_, _]", "m[_, _, _]"}}, {kMesh22, {"m[x, _]", "m[x, _, _]"}}}});
  check({"broadcast_to",
         {{"v", "f64[3]"}, {"col", "f64[4, 1]"}, {"c", "f64[4, 3]"}},
         "  return (sum(relayout(broadcast_to(v, [4, 3]), {L2}) * c) +\n"
         "    sum(relayout(broadcast_to(col, [4, 3]), {L2}) * c * c))",
         {0, 1},
         {{kMesh1, {"m[_]", "m[_, _]", "m[_, _]"}}, {kMesh22, {"m[y]", "m[x, _]", "m[x, y]"}}}});
}

TEST_CASE("grad check: index_select and index_add") {
  std::vector<int64_t> ids = {0, 4, 2, 2, 1, 0, 3};
  check({"index_select dim 0 (sharded ids)",
         {{"x", "f64[5, 3]"}, {"ids", "i32[7]", ids}, {"c", "f64[7, 3]"}},
         "  return sum(index_select(x, ids) * c)",
         {0},
         {{kMesh1, {"m[_, _]", "m[_]", "m[_, _]"}},
          {kMesh22, {"m[_, _]", "m[x]", "m[x, _]"}},
          {kMesh22, {"m[_, y]", "m[x]", "m[x, y]"}},
          {kMesh3, {"m[_, _]", "m[_]", "m[_, _]"}}}});
  check({"index_select dim 1",
         {{"x", "f64[3, 5]"}, {"ids", "i32[7]", ids}, {"c", "f64[3, 7]"}},
         "  return sum(index_select(x, ids, dim=1) * c)",
         {0},
         {{kMesh1, {"m[_, _]", "m[_]", "m[_, _]"}}, {kMesh22, {"m[x, _]", "m[y]", "m[x, y]"}}}});
  check({"index_add",
         {{"base", "f64[5, 3]"}, {"ids", "i32[7]", ids}, {"src", "f64[7, 3]"}, {"c", "f64[5, 3]"}},
         "  let r = index_add(base, ids, src)\n  return sum(r * r * c)",
         {0, 2},
         {{kMesh1, {"m[_, _]", "m[_]", "m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[_, y]", "m[_]", "m[_, y]", "m[_, y]"}}}});
}

/// `relayout(sum(e), m[])`: terms on different layouts add as replicated scalars.
static std::string total(const std::string &e) { return "relayout(sum(" + e + "), m[])"; }

TEST_CASE("grad check: slicing, concat, stack, split, chunk, pad") {
  // Slices across block boundaries of sharded dims (5 rows over 2 and 3
  // ranks), strides, negative and integer indices: the gradient is the
  // slice's scatter into zeros, on every layout.
  check({"slices of sharded dims",
         {{"x", "f64[5, 4]"}, {"c", "f64[2, 2]"}, {"v", "f64[4]"}},
         "  let s = x[1:5:2, -3:-1]\n  return " + total("s * s * relayout(c, {L0})") + " + " +
             total("relayout(x[-2], m[_]) * relayout(v, m[_])") + " + " +
             total("x[:, 3] * x[:, 0]"),
         {0, 2},
         {{kMesh1, {"m[_, _]", "m[_, _]", "m[_]"}},
          {kMesh22, {"m[x, y]", "m[x, y]", "m[y]"}},
          {kMesh22, {"m[(x, y), _]", "m[_, x]", "m[_]"}},
          {kMesh3, {"m[x, _]", "m[x, _]", "m[x]"}}}});
  check({"concat, stack and pad",
         {{"a", "f64[3, 2]"}, {"b", "f64[3, 3]"}, {"c", "f64[3, 5]"}, {"d", "f64[2, 8]"}},
         "  let j = concat(a, b * b, dim=1)\n"
         "  let p = pad(a, [1, 0, 2, 1], value=0.5)\n"
         "  let st = stack(j[0], j[2] * j[1])\n  return " +
             total("j * relayout(c, {L0})") + " + " +
             total("relayout(st, m[_, _]) * relayout(d[:, 0:5], m[_, _])") + " + " + total("p * p"),
         {0, 1},
         {{kMesh1, {"m[_, _]", "m[_, _]", "m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[_, x]", "m[_, x]", "m[_, x]", "m[y, x]"}},
          {kMesh22, {"m[x, y]", "m[x, y]", "m[x, y]", "m[_, _]"}},
          {kMesh3, {"m[x, _]", "m[x, _]", "m[x, _]", "m[_, x]"}}}});
  check({"split and chunk",
         {{"x", "f64[7, 3]"}, {"c", "f64[3, 3]"}},
         "  let (p, q, r) = split(x, [2, 3, 2], dim=0)\n"
         "  let (u, v) = chunk(x, 2, dim=1)\n  return " +
             total("q * q * relayout(c, {L0})") + " + " + total("p * r") + " + " +
             total("u[1:4] * relayout(c[:, 1:3], {L0})") + " + " + total("v * v"),
         {0},
         {{kMesh1, {"m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[x, y]", "m[x, y]"}},
          {kMesh3, {"m[x, _]", "m[_, x]"}}}});
}

TEST_CASE("grad check: gather along a sharded or unsharded dim (cross-entropy labels)") {
  std::vector<int64_t> labels = {4, 0, 2, 2};
  check({"gather dim 1",
         {{"x", "f64[4, 5]"}, {"ids", "i64[4]", labels}, {"c", "f64[4, 1]"}},
         "  let g = gather(x * x, reshape(ids, [4, 1]), dim=1)\n  return " +
             total("relayout(g, m[_, _]) * relayout(c, m[_, _])") + " + " +
             total("relayout(one_hot(ids, 5, dtype=f64), m[_, _]) * relayout(x, m[_, _])"),
         {0},
         {{kMesh1, {"m[_, _]", "m[_]", "m[_, _]"}},
          {kMesh22, {"m[_, x]", "m[y]", "m[_, _]"}},
          {kMesh22, {"m[y, x]", "m[_]", "m[_, _]"}},
          {kMesh3, {"m[_, x]", "m[x]", "m[x, _]"}}}});
}

TEST_CASE("grad check: cast and relayout") {
  Case c{"cast f64 -> f32 -> f64",
         {{"x", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
         "  return sum(cast(cast(x, f32), f64) * c)",
         {0},
         matrixConfigs(2)};
  c.h = 1e-3;
  c.tol = 1e-3;
  check(c);
  check({"relayout shard -> replicate, partial -> replicate, replicate -> shard",
         {{"a", "f64[4, 3]"}, {"b", "f64[3, 5]"}},
         "  let p = relayout(a @ b, m[_, _])\n"
         "  let s = relayout(p * p, m[x, _])\n"
         "  return relayout(sum(s * relayout(p, m[x, _])), m[]) + sum(relayout(a, m[_, _]))",
         {0, 1},
         {{kMesh1, {"m[_, x]", "m[x, _]"}},
          {kMesh22, {"m[_, x]", "m[x, _]"}},
          {kMesh22, {"m[_, y]", "m[y, x]"}},
          {kMesh3, {"m[x, _]", "m[_, _]"}}}});
}

TEST_CASE("grad check: calls and for loops inside the differentiated function") {
  // The loop carries a var through three calls of the generic helper `h`.
  Case c{"call + loop",
         {{"x", "f64[5, 3]"}, {"w", "f64[3, 3]"}},
         "  var y = x\n  for i in 0..3 {\n    y = h(y, w)\n  }\n  return sum(y * y)",
         {0, 1},
         {{kMesh1, {"m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[x, _]", "m[_, _]"}},
          {kMesh3, {"m[x, _]", "m[_, _]"}},
          {kMesh22, {"m[(x, y), _]", "m[_, _]"}}}};
  c.prelude = "fn h(y: f64[N, K] @ *, w: f64[K, K] @ *) -> f64[N, K] @ * {\n"
              "  return tanh(y @ w) * 0.5 + y\n}\n";
  check(c);
}

TEST_CASE("grad check: if/else and while with compile-time conditions inside the function") {
  // Conditions on loop variables and host arithmetic fold while flattening:
  // the branch taken and the iterations run are the ones the program runs.
  Case c{"if + while",
         {{"x", "f64[5, 3]"}, {"w", "f64[3, 3]"}},
         "  var y = x\n  var k = 0\n  for i in 0..4 {\n    if i % 2 == 0 {\n      y = tanh(y @ w)\n"
         "    } else if i == 1 {\n      y = y * 2.0\n    } else {\n      y = y + x\n    }\n  }\n"
         "  while k * k < 5 {\n    y = y * 0.5 + x\n    k = k + 1\n  }\n  return " +
             total("y * y"),
         {0, 1},
         {{kMesh1, {"m[_, _]", "m[_, _]"}},
          {kMesh22, {"m[x, _]", "m[_, _]"}},
          {kMesh3, {"m[x, _]", "m[_, _]"}}}};
  check(c);
}

TEST_CASE("grad check: dropout (same mask forward and backward) and topk (k = 1)") {
  check({"dropout",
         {{"x", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
         "  return " + total("dropout(x * x, 0.4, seed=9) * c") + " + " +
             total("dropout(x, 0.0, seed=1) * c"),
         {0},
         matrixConfigs(2)});
  // The gradient of the value reaches the chosen element only (random data:
  // no ties), along a sharded and an unsharded dim.
  for (auto dim : {"0", "1"})
    check({std::string("topk dim ") + dim,
           {{"x", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
           std::string("  let (v, i) = topk(x * c, 1, dim=") + dim + ")\n  return " +
               total("v * v") + " + " + total("x * c"),
           {0, 1},
           matrixConfigs(2)});
}

namespace {

/// The result types of the gradient function `name` of `text` (global IR).
std::vector<std::string> gradTypes(const std::string &text, const std::string &name) {
  Compilation s(pipelineCompileOptions());
  std::vector<std::string> out;
  if (!build(s, text, false))
    return out;
  const Function *g = s.module.find(name);
  REQUIRE(g);
  for (auto &t : g->results)
    out.push_back(t.str());
  return out;
}

const std::string kModulation = R"(mesh g = [t = 2]
fn loss(tokens: f32[T, H] @ *, cond: f32[S, H] @ *, ids: i32[T] @ *, w: f32[H, H] @ *) -> f32[] @ * {
  return sum(index_select(cond @ transpose(w), ids) * tokens)
}
)";

} // namespace

TEST_CASE("grad check: topk with k > 1 (sorted values, gradient scattered to the indices)") {
  // Random data (no ties); k = 2 along a sharded or unsharded dim, and k =
  // the dim's size.
  for (auto [k, dim] : {std::pair{"2", "0"}, {"4", "0"}, {"2", "1"}, {"3", "1"}})
    check({std::string("topk k ") + k + " dim " + dim,
           {{"x", "f64[5, 3]"}, {"c", "f64[5, 3]"}},
           std::string("  let (v, i) = topk(x * c, ") + k + ", dim=" + dim + ")\n  return " +
               total("v * v * v") + " + " + total("x * c"),
           {0, 1},
           matrixConfigs(2)});
}

TEST_CASE("grad placements: seed 001 modulation, project then index") {
  // tokens and ids sharded on the token axis, cond and weight replicated
  auto t = gradTypes(kModulation + R"(let tk : f32[7, 4] @ g[t, _] = randn(seed=1)
let c : f32[3, 4] @ g[_, _] = randn(seed=2)
let ids : i32[7] @ g[t] = [0, 0, 0, 1, 1, 2, 2]
let w : f32[4, 4] @ g[_, _] = randn(seed=3)
let (a, b, d) = grad(loss, wrt=[0, 1, 3])(tk, c, ids, w)
)",
                     "loss.grad.0.1.3");
  REQUIRE(t.size() == 3);
  CHECK(t[0] == "f32[7, 4] @ g{t: shard(0)}");
  CHECK(t[1] == "f32[3, 4] @ g{t: partial(sum)}");
  CHECK(t[2] == "f32[4, 4] @ g{t: partial(sum)}");
  // all replicated (the single-device plan): every gradient replicated
  t = gradTypes(kModulation + R"(let tk : f32[7, 4] @ g[_, _] = randn(seed=1)
let c : f32[3, 4] @ g[_, _] = randn(seed=2)
let ids : i32[7] @ g[_] = [0, 0, 0, 1, 1, 2, 2]
let w : f32[4, 4] @ g[_, _] = randn(seed=3)
let (a, b, d) = grad(loss, wrt=[0, 1, 3])(tk, c, ids, w)
)",
                "loss.grad.0.1.3");
  REQUIRE(t.size() == 3);
  for (auto &s : t)
    CHECK(s.find("{t: replicate}") != std::string::npos);
}

TEST_CASE("grad placements: seed 001 modulation, index then project with replicated ids") {
  // The token slice of cond_per_token is replicate -> shard; its backward is
  // an all-gather, so cond's gradient is replicated, weight's still partial.
  auto t = gradTypes(R"(mesh g = [t = 2]
fn loss(tokens: f32[T, H] @ g[t, _], cond: f32[S, H] @ g[_, _], ids: i32[T] @ g[_],
        w: f32[H, H] @ g[_, _]) -> f32[] @ g{t: partial(sum)} {
  let cpt = relayout(index_select(cond, ids), g[t, _])
  return sum((cpt @ transpose(w)) * tokens)
}
let tk : f32[7, 4] @ g[t, _] = randn(seed=1)
let c : f32[3, 4] @ g[_, _] = randn(seed=2)
let ids : i32[7] @ g[_] = [0, 0, 0, 1, 1, 2, 2]
let w : f32[4, 4] @ g[_, _] = randn(seed=3)
let (a, b, d) = grad(loss, wrt=[0, 1, 3])(tk, c, ids, w)
)",
                     "loss.grad.0.1.3");
  REQUIRE(t.size() == 3);
  CHECK(t[0] == "f32[7, 4] @ g{t: shard(0)}");
  CHECK(t[1] == "f32[3, 4] @ g{t: replicate}");
  CHECK(t[2] == "f32[4, 4] @ g{t: partial(sum)}");
}

TEST_CASE("grad placements: FSDP gather inside the loss gives a reduce-scattered gradient") {
  // The backward of shard(0) -> replicate is partial(sum) -> shard(0).
  auto t = gradTypes(R"(mesh f = [dp = 4]
fn loss(w: f32[8, 4] @ f[dp, _], x: f32[16, 8] @ f[dp, _]) -> f32[] @ f{dp: partial(sum)} {
  let y = x @ relayout(w, f[_, _])
  return sum(y * y)
}
let w : f32[8, 4] @ f[dp, _] = randn(seed=1)
let x : f32[16, 8] @ f[dp, _] = randn(seed=2)
let g = grad(loss)(w, x)
)",
                     "loss.grad.0");
  REQUIRE(t.size() == 1);
  CHECK(t[0] == "f32[8, 4] @ f{dp: shard(0)}");
}

TEST_CASE("grad placements: a max over a sharded dim differentiates (partial(max) reduced)") {
  auto t = gradTypes(R"(mesh m = [x = 2]
fn f(a: f32[3, 4] @ m[_, x]) -> f32[] @ m[] {
  return relayout(sum(relayout(max(a, dim=1), m[_])), m[])
}
let a : f32[3, 4] @ m[_, x] = randn(seed=1)
let g = grad(f)(a)
)",
                     "f.grad.0");
  REQUIRE(t.size() == 1);
  CHECK(t[0] == "f32[3, 4] @ m{x: shard(1)}");
}

TEST_CASE("grad check: stdlib nn functions (f32)") {
  auto f32Case = [](std::string name, std::vector<Param> ps, std::string body,
                    std::vector<int64_t> wrt, std::vector<Config> cfs) {
    Case c{std::move(name), std::move(ps), std::move(body), std::move(wrt), std::move(cfs)};
    c.prelude = "import nn\n";
    c.result = "f32";
    c.h = 1e-2;
    c.tol = 2e-2;
    c.layoutTol = 1e-4; // f32 partial sums in another order
    return c;
  };
  auto run = [](const Case &c) { check(c); };
  run(f32Case("nn.softmax, nn.log_softmax", {{"x", "f32[4, 5]"}, {"c", "f32[4, 5]"}},
              "  return sum(nn.softmax(x) * c) + sum(nn.log_softmax(x) * c * c)", {0},
              {{kMesh1, {"m[_, _]", "m[_, _]"}}, {kMesh22, {"m[x, _]", "m[x, _]"}}}));
  run(f32Case("nn.cross_entropy, batch sharded", {{"x", "f32[4, 5]"}, {"t", "f32[4, 5]"}},
              "  return relayout(nn.cross_entropy(x, t * t), m[])", {0},
              {{kMesh1, {"m[_, _]", "m[_, _]"}}, {kMesh22, {"m[(x, y), _]", "m[(x, y), _]"}}}));
  run(f32Case("nn.layer_norm",
              {{"x", "f32[4, 5]"}, {"gm", "f32[5]"}, {"bt", "f32[5]"}, {"c", "f32[4, 5]"}},
              "  return sum(nn.layer_norm(x, gm, bt) * c)", {0, 1, 2},
              {{kMesh1, {"m[_, _]", "m[_]", "m[_]", "m[_, _]"}},
               {kMesh22, {"m[x, _]", "m[_]", "m[_]", "m[x, _]"}}}));
  // the feature dim sharded on y: moments partial(sum), relayouted to {L4}
  run(f32Case(
      "nn.layer_norm_moments + relayout + nn.layer_norm_apply",
      {{"x", "f32[4, 6]"}, {"gm", "f32[6]"}, {"bt", "f32[6]"}, {"c", "f32[4, 6]"}, {"r", "f32[4]"}},
      "  let (mu, ms) = nn.layer_norm_moments(x)\n"
      "  let y = nn.layer_norm_apply(x, relayout(mu, {L4}), relayout(ms, {L4}), gm, bt)\n"
      "  return sum(y * c)",
      {0, 1, 2},
      {{kMesh1, {"m[_, _]", "m[_]", "m[_]", "m[_, _]", "m[_]"}},
       {kMesh22, {"m[x, y]", "m[y]", "m[y]", "m[x, y]", "m[x]"}}}));
  // the class dim sharded: max and sum relayouted explicitly
  run(f32Case("nn.softmax_sharded_exp + nn.softmax_sharded_norm + nn.log_softmax_sharded",
              {{"x", "f32[3, 6]"}, {"c", "f32[3, 6]"}, {"r", "f32[3]"}},
              "  let mx = relayout(max(x, dim=1), {L2})\n"
              "  let (e, s) = nn.softmax_sharded_exp(x, mx)\n"
              "  let sr = relayout(s, {L2})\n"
              "  return sum(nn.softmax_sharded_norm(e, sr) * c) + sum(nn.log_softmax_sharded(x, "
              "mx, sr) * c)",
              {0},
              {{kMesh1, {"m[_, _]", "m[_, _]", "m[_]"}},
               {kMesh22, {"m[_, y]", "m[_, y]", "m[_]"}},
               {kMesh22, {"m[x, y]", "m[x, y]", "m[x]"}}}));
  run(f32Case("nn.attention, queries sharded",
              {{"q", "f32[3, 4]"}, {"k", "f32[5, 4]"}, {"v", "f32[5, 2]"}, {"c", "f32[3, 2]"}},
              "  return sum(nn.attention(q, k, v) * c)", {0, 1, 2},
              {{kMesh1, {"m[_, _]", "m[_, _]", "m[_, _]", "m[_, _]"}},
               {kMesh22, {"m[x, _]", "m[_, _]", "m[_, _]", "m[x, _]"}}}));
  run(f32Case("nn.mlp (column- then row-parallel), nn.gelu, nn.linear",
              {{"x", "f32[4, 3]"},
               {"w1", "f32[3, 6]"},
               {"b1", "f32[6]"},
               {"w2", "f32[6, 2]"},
               {"c", "f32[4, 2]"}},
              "  let y = relayout(nn.mlp(x, w1, b1, w2), {L4})\n"
              "  let z = nn.linear(x, w1, b1)\n"
              "  return relayout(sum(nn.gelu(y) * c), m[]) + relayout(sum(z * z), m[])",
              {0, 1, 2, 3},
              {{kMesh1, {"m[_, _]", "m[_, _]", "m[_]", "m[_, _]", "m[_, _]"}},
               {kMesh22, {"m[x, _]", "m[_, y]", "m[y]", "m[y, _]", "m[x, _]"}}}));
  run(f32Case(
      "nn.embedding, ids sharded",
      {{"tab", "f32[5, 4]"}, {"ids", "i32[7]", {0, 4, 2, 2, 1, 0, 3}}, {"c", "f32[7, 4]"}},
      "  return sum(nn.embedding(tab, ids) * c)", {0},
      {{kMesh1, {"m[_, _]", "m[_]", "m[_, _]"}}, {kMesh22, {"m[_, y]", "m[x]", "m[x, y]"}}}));
}

TEST_CASE("grad check: the rank-generic stdlib on 3-D and 4-D activations") {
  auto f32Case = [](std::string name, std::vector<Param> ps, std::string body,
                    std::vector<int64_t> wrt, std::vector<Config> cfs) {
    Case c{std::move(name), std::move(ps), std::move(body), std::move(wrt), std::move(cfs)};
    c.prelude = "import nn\n";
    c.result = "f32";
    c.h = 1e-2;
    c.tol = 2e-2;
    c.layoutTol = 1e-4;
    return c;
  };
  auto run = [](const Case &c) { check(c); };
  // batch dims sharded (3 over 2: uneven), the feature dim whole
  run(f32Case("nn.layer_norm, nn.softmax, nn.gelu on [B, S, D]",
              {{"x", "f32[3, 2, 5]"}, {"gm", "f32[5]"}, {"bt", "f32[5]"}, {"c", "f32[3, 2, 5]"}},
              "  let n = nn.layer_norm(x, gm, bt)\n"
              "  return sum(nn.softmax(n) * c) + sum(nn.gelu(n) * c * c)",
              {0, 1, 2},
              {{kMesh1, {"m[_, _, _]", "m[_]", "m[_]", "m[_, _, _]"}},
               {kMesh22, {"m[x, y, _]", "m[_]", "m[_]", "m[x, y, _]"}}}));
  run(f32Case("nn.linear, nn.cross_entropy on [B, S, D], batch sharded",
              {{"x", "f32[3, 2, 4]"}, {"w", "f32[4, 5]"}, {"b", "f32[5]"}, {"t", "f32[3, 2, 5]"}},
              "  return relayout(nn.cross_entropy(nn.linear(x, w, b), t * t), m[])", {0, 1, 2},
              {{kMesh1, {"m[_, _, _]", "m[_, _]", "m[_]", "m[_, _, _]"}},
               {kMesh22, {"m[x, y, _]", "m[_, _]", "m[_]", "m[x, y, _]"}}}));
  // [B, H, S, E]: batch over x, heads over y
  run(f32Case(
      "nn.attention_causal, nn.attention_masked on [B, H, S, E]",
      {{"q", "f32[2, 2, 4, 3]"},
       {"k", "f32[2, 2, 4, 3]"},
       {"v", "f32[2, 2, 4, 3]"},
       {"mk", "f32[4, 4]"},
       {"c", "f32[2, 2, 4, 3]"}},
      "  return sum(nn.attention_causal(q, k, v) * c) + "
      "sum(nn.attention_masked(q, k, v, mk) * c * c)",
      {0, 1, 2},
      {{kMesh1, {"m[_, _, _, _]", "m[_, _, _, _]", "m[_, _, _, _]", "m[_, _]", "m[_, _, _, _]"}},
       {kMesh22,
        {"m[x, y, _, _]", "m[x, y, _, _]", "m[x, y, _, _]", "m[_, _]", "m[x, y, _, _]"}}}));
  // multi-head causal self-attention, heads sharded over y: partial(sum)
  run(f32Case(
      "nn.causal_self_attention, heads sharded",
      {{"x", "f32[2, 4, 4]"},
       {"wq", "f32[4, 2, 3]"},
       {"wk", "f32[4, 2, 3]"},
       {"wv", "f32[4, 2, 3]"},
       {"wo", "f32[2, 3, 4]"},
       {"c", "f32[2, 4, 4]"}},
      "  let a = nn.causal_self_attention(x, wq, wk, wv, wo)\n"
      "  return relayout(sum(a * c), m[])",
      {0, 1, 2, 3, 4},
      {{kMesh1,
        {"m[_, _, _]", "m[_, _, _]", "m[_, _, _]", "m[_, _, _]", "m[_, _, _]", "m[_, _, _]"}},
       {kMesh22,
        {"m[x, _, _]", "m[_, y, _]", "m[_, y, _]", "m[_, y, _]", "m[y, _, _]", "m[x, _, _]"}}}));
}

TEST_CASE("grad check: max/min ties split the gradient evenly, on every mesh and layout") {
  // Not differentiable at a tie, so no finite differences: the gradient must
  // be 1 / (number of tied extremes) on each of them (JAX, PyTorch's amax),
  // so it sums to 1 per reduced slice, whichever ranks hold the ties.
  struct TieCase {
    std::string expr;
    std::vector<int64_t> x; ///< f64[2, 4], row-major
    std::vector<double> want;
  };
  const double t = 1.0 / 3;
  std::vector<TieCase> cases = {
      {"max(x, dim=1)", {3, 3, 1, 2, 5, 5, 5, 5}, {.5, .5, 0, 0, .25, .25, .25, .25}},
      {"min(x, dim=1)", {1, 4, 1, 1, 0, 2, 3, 4}, {t, 0, t, t, 1, 0, 0, 0}},
      {"max(x, dim=0)", {3, 3, 1, 2, 3, 0, 1, 2}, {.5, 1, .5, .5, .5, 0, .5, .5}},
      {"max(x)", {5, 1, 5, 0, 5, 2, 3, 5}, {.25, 0, .25, 0, .25, 0, 0, .25}},
      {"min(x, dims=[0, 1])", {0, 1, 2, 0, 4, 5, 6, 7}, {.5, 0, 0, .5, 0, 0, 0, 0}},
  };
  std::vector<Config> configs = {{kMesh1, {"m[_, _]"}},       {kMesh22, {"m[x, y]"}},
                                 {kMesh22, {"m[_, (x, y)]"}}, {kMesh3, {"m[_, x]"}},
                                 {kMesh22, {"m[x, _]"}},      {"[x = 4, y = 1]", {"m[_, x]"}}};
  for (auto &tc : cases)
    for (auto &cf : configs) {
      Case c{"ties " + tc.expr,
             {{"x", "f64[2, 4]", tc.x}},
             "  let r = " + tc.expr + "\n  return sum(relayout(r, m{x: replicate, y: replicate}))",
             {0},
             {cf}};
      std::string text = program(c, cf);
      // the harness writes integer arguments flat; this one is [2, 4]
      std::string flat = "[" + join(tc.x) + "]";
      std::string rows = "[[" + join({tc.x.begin(), tc.x.begin() + 4}) + "], [" +
                         join({tc.x.begin() + 4, tc.x.end()}) + "]]";
      text.replace(text.find(flat), flat.size(), rows);
      INFO(text);
      Compilation ref(pipelineCompileOptions()), dist(pipelineCompileOptions());
      if (!build(ref, text, false) || !build(dist, text, true))
        continue;
      auto [primal, gname] = names(ref.module);
      REQUIRE(!gname.empty());
      std::ostringstream sink;
      auto args = arguments(*ref.module.find(primal), c);
      auto g = ReferenceEvaluator(ref.module, sink).run(gname, args);
      std::vector<HostTensor> dg;
      REQUIRE_NOTHROW(dg = Executor(dist.module, sink).run(gname, args));
      REQUIRE(g.size() == 1);
      REQUIRE(dg.size() == 1);
      double total = 0;
      for (int64_t i = 0; i < 8; ++i) {
        INFO("d/d x[" << i << "]: reference " << g[0].get(i) << ", distributed " << dg[0].get(i)
                      << ", want " << tc.want[i]);
        CHECK(close(g[0].get(i), tc.want[i], 1e-12));
        CHECK(close(dg[0].get(i), tc.want[i], 1e-12));
        total += dg[0].get(i);
      }
      double slices = tc.expr.find("dim=") == std::string::npos    ? 1
                      : tc.expr.find("dim=1") != std::string::npos ? 2
                                                                   : 4;
      CHECK(close(total, slices, 1e-12));
    }
}
