// GPU execution through the executor (label `gpu`; needs an NVIDIA GPU and
// driver): programs run on the cuda backend (runtime/CudaBackend.h) print the
// same values as on the cpu backend (f32 within 1e-4 relative, integers and
// shapes exact) and return the same results. Written before a GPU session
// could run it: the first thing to run there.
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/CudaBackend.h"
#include "runtime/Executor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

using namespace dt;

namespace {

void build(Compilation &s, const std::string &text) {
  PipelineOptions po;
  po.spmd = true;
  po.fusion = true;
  std::ostringstream log;
  bool ok = s.compile("test.dt", text) && runPipeline(s, po, log);
  INFO(s.diags.renderAll());
  REQUIRE(ok);
}

/// `exact`: bit for bit (deterministic mode; NaN matches NaN).
void checkSame(const HostTensor &a, const HostTensor &b, bool exact) {
  REQUIRE(a.dtype == b.dtype);
  REQUIRE(a.shape == b.shape);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (exact)
      CHECK(((std::isnan(x) && std::isnan(y)) || (x == y && std::signbit(x) == std::signbit(y))));
    else if (isFloat(a.dtype))
      CHECK(std::fabs(x - y) <= 1e-5 + 1e-4 * std::fabs(x));
    else
      CHECK(x == y);
  }
}

/// Runs `text` on the cpu and the cuda backend and compares every print
/// (`deterministic`: compiled in deterministic mode, compared bit for bit).
void compareBackends(const std::string &text, bool deterministic = false) {
  CompileOptions co;
  co.deterministic = deterministic;
  Compilation s(pipelineCompileOptions(co));
  build(s, text);
  std::ostringstream cpuOut, gpuOut;
  Executor cpu(s.module, cpuOut);
  cpu.run("main", {});
  BackendOptions bo;
  bo.faultTimeout = 20; // a rank left waiting fails the case, not the suite
  if (const char *e = std::getenv("DT_GPU_FAULT_TIMEOUT"))
    bo.faultTimeout = std::atof(e);
  std::unique_ptr<Backend> gpu = makeBackend("cuda", bo);
  Executor ex(s.module, *gpu, gpuOut);
  ex.run("main", {});
  REQUIRE(ex.printed().size() == cpu.printed().size());
  for (size_t i = 0; i < cpu.printed().size(); ++i) {
    CAPTURE(i);
    const PrintedValue &x = cpu.printed()[i], &y = ex.printed()[i];
    REQUIRE(x.isLine == y.isLine);
    if (!x.isLine) {
      checkSame(x.value, y.value, deterministic);
      continue;
    }
    REQUIRE(x.lineValues.size() == y.lineValues.size());
    for (size_t k = 0; k < x.lineValues.size(); ++k)
      checkSame(x.lineValues[k], y.lineValues[k], deterministic);
  }
}

} // namespace

TEST_CASE("cuda backend: collectives, kernels, matmul, data movement vs the cpu backend") {
  compareBackends(R"(
mesh m = [x = 2, y = 2]
mesh q = [t = 2] devices [1, 3]
let a : f32[5, 3] @ m[x, _] = randn(seed=3)
let b : f32[3, 4] @ m[_, y] = randn(seed=4)
print(relayout(a @ b, m[_, _]))
let d = relayout(exp(a) * 2.0 + 1.0, m[_, _])
print(sum(d, dim=1))
let e : f32[4, 6] @ m{x: shard(0), y: shard(1)} = arange(dim=1)
print(relayout(e, m{x: shard(1), y: replicate}))
print(relayout(transpose(e), m[_, _]))
let ids : i32[3] @ m[_] = [2, 0, 2]
print(index_select(relayout(e, m[_, _]), ids))
let z : f32[1, 6] @ m[x, _] = full(1.5)
print(relayout(z, m[_, _]))
let w : f32[4] @ q[t] = arange(dim=0)
print(relayout(w * w, q[_]))
let h = [1, 2, 3]
print(h + h)
var v : f32[5, 3] @ m[x, _] = a
for i in 0..3 {
  v = v * 0.5 + a
}
print(relayout(v, m[_, _]))
)");
}

TEST_CASE("cuda backend: one rank, large fused kernels and a GEMM") {
  compareBackends(R"(
mesh g = [r = 1]
let a : f32[256, 128] @ g[_, _] = randn(seed=1)
let b : f32[128, 64] @ g[_, _] = randn(seed=2)
print(sum(tanh(a @ b) * 0.5, dim=0))
)");
}

TEST_CASE("cuda backend: a fused index_add into few rows, split and in the reference's order") {
  // Lists of 512 source rows for each of 16 rows: default mode cuts them
  // into chunks folded by a second launch (the cpu adds in order: equal
  // within the tolerance); deterministic mode adds in list order, bit for
  // bit the cpu's. The kernel also writes a plain output (the update), and
  // a second program adds into few rows of 3 dims, ids of i64.
  const char *prog = R"(
mesh g = [r = 1]
let ii : i32[8192] @ g[_] = arange(dim=0)
let ids = ii % 16
let a : f32[8192, 256] @ g[_, _] = randn(seed=1)
let b : f32[8192, 256] @ g[_, _] = randn(seed=2)
let z : f32[16, 256] @ g[_, _] = zeros()
var t = a
for k in 0..2 {
  let s = index_add(z, ids, t * b + 1.0)
  t = t - 0.01 * b
  print(s)
}
print(sum(t, dim=0))
let jj : i64[3000] @ g[_] = arange(dim=0)
let d : f64[3000, 4, 5] @ g[_, _, _] = randn(seed=3)
let dz : f64[3, 4, 5] @ g[_, _, _] = ones()
print(index_add(dz, jj % 3, exp(d) * 0.5))
)";
  compareBackends(prog);
  compareBackends(prog, true);
}

TEST_CASE("cuda backend: transposed and batched matmul operands go to cuBLAS as flags") {
  // Every flag combination, 2-D and batched, 1-D operands, and gradients
  // (dW = X^T G, dX = G W^T: flags after transpose folding; 9 flagged
  // matmuls in all), on f32 and f64.
  for (std::string t : {"f32", "f64"})
    compareBackends("mesh m = [x = 2]\n"
                    "let a : " +
                    t +
                    "[5, 3] @ m[_, _] = randn(seed=1)\n"
                    "let b : " +
                    t +
                    "[4, 3] @ m[_, _] = randn(seed=2)\n"
                    "let c : " +
                    t +
                    "[2, 3, 5] @ m[_, _, _] = randn(seed=3)\n"
                    "let v : " +
                    t +
                    "[3] @ m[_] = randn(seed=4)\n"
                    "print(a @ transpose(b), transpose(a) @ a, transpose(c[0]) @ transpose(b))\n"
                    "print(transpose(c, perm=[0, 2, 1]) @ c, c @ transpose(c, perm=[0, 2, 1]))\n"
                    "print(v @ transpose(b), a @ v, transpose(c, perm=[0, 2, 1]) @ v)\n"
                    "fn loss(w: " +
                    t + "[3, 4] @ m[_, x], x: " + t + "[5, 3] @ m[_, _]) -> " + t +
                    "[] @ m[] {\n  return relayout(sum(tanh(x @ w)), m[])\n}\n"
                    "let w : " +
                    t +
                    "[3, 4] @ m[_, x] = randn(seed=5)\n"
                    "let (gw, gx) = grad(loss, wrt=[0, 1])(w, a)\n"
                    "print(relayout(gw, m[_, _]), relayout(gx, m[_, _]))\n");
}
