// Unit tests of the CPU backend's compiled path: the fusion pass (one kernel
// for a chain, shared producers stay materialised, the IR still verifies and
// round-trips), the JIT-run kernels against the reference evaluator, kernel
// reuse across sizes, and the memory planner (lower peak than no reuse,
// in-place `var` updates).
#include "BuildProgram.h"
#include "codegen/CpuJIT.h"
#include "codegen/FusedKernel.h"
#include "frontend/Compilation.h"
#include "ir/IRParser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"

#include <doctest/doctest.h>

#include <functional>
#include <sstream>
#include <string>

using namespace dt;

namespace {

void build(Compilation &s, const std::string &text, bool spmd, bool fusion) {
  PipelineOptions po;
  po.spmd = spmd;
  po.fusion = fusion;
  std::ostringstream log;
  bool ok = s.compile("test.dt", text) && runPipeline(s, po, log);
  INFO(s.diags.renderAll());
  REQUIRE(ok);
}

int countKernels(const Module &m) {
  int n = 0;
  for (auto &f : m.functions)
    n += isFusedKernel(f);
  return n;
}

/// Runs `text` distributed (with `eo`) and on the reference evaluator.
std::pair<std::string, std::string> runBoth(const std::string &text, ExecOptions eo,
                                            bool fusion = true, ExecStats *stats = nullptr) {
  Compilation d(pipelineCompileOptions()), r(pipelineCompileOptions());
  build(d, text, true, fusion);
  build(r, text, false, false);
  std::ostringstream refOut, out;
  ReferenceEvaluator(r.module, refOut).run("main", {});
  Executor ex(d.module, out, eo);
  ex.run("main", {});
  if (stats)
    *stats = ex.stats();
  return {out.str(), refOut.str()};
}

/// Runs `text` distributed with the JIT and on the reference kernels
/// (--no-jit), checks that both print the same, and returns that output.
std::string jitMatchesReferenceKernels(const std::string &text) {
  ExecOptions noJit;
  noJit.jit = false;
  std::string jit = runBoth(text, ExecOptions{}).first;
  CHECK(jit == runBoth(text, noJit).first);
  return jit;
}

const char *kChain = R"(mesh m = [x = 2]
let a : f32[8, 4] @ m[x, _] = rand(seed=1)
let b : f32[8, 4] @ m[x, _] = rand(seed=2)
let c = -relu(exp(a * b + a - b) * 2.0 / (a + 1.0))
print(c)
)";

} // namespace

TEST_CASE("fusion: an 8-op elementwise chain with its sources is one kernel") {
  Compilation s(pipelineCompileOptions());
  build(s, kChain, true, true);
  CHECK(countKernels(s.module) == 1);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  // The fused module prints and parses back byte for byte.
  std::string text = printModule(s.module);
  Module back;
  std::string err;
  REQUIRE(parseIR(text, back, err));
  CHECK(printModule(back) == text);
  for (auto &f : s.module.functions)
    if (isFusedKernel(f)) {
      FusedKernel fk = buildFusedKernel(f);
      CHECK(fk.kernel.inputs.empty()); // both random sources are inside
      CHECK(usesGlobalIndex(fk.kernel));
    }
}

TEST_CASE("fusion: a chain of many random sources splits into kernels of a few, none left alone") {
  // 40 `randn` with their own seeds added up: each kernel holds at most
  // kMaxFusedOps / kRandomOpWeight of them (and the adds that read them), so
  // no kernel is a long LLVM compile, and no random runs by itself.
  std::string prog = "mesh m = [x = 2]\nvar acc : f32[8, 4] @ m[x, _] = zeros()\n";
  for (int i = 0; i < 40; ++i)
    prog += "acc = acc + randn(seed=" + std::to_string(i + 1) + ")\n";
  prog += "print(acc)\n";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  int kernels = 0;
  for (auto &f : s.module.functions)
    if (isFusedKernel(f)) {
      ++kernels;
      FusedKernel fk = buildFusedKernel(f);
      int randoms = 0;
      for (const KNode &n : fk.kernel.nodes)
        randoms += n.op == KOp::Random;
      CHECK(randoms <= kMaxFusedOps / kRandomOpWeight + 1);
    }
  CHECK(kernels >= 40 / (kMaxFusedOps / kRandomOpWeight + 1));
  for (auto &f : s.module.functions)
    if (!isFusedKernel(f))
      forEachBlock(f.body, [](const Block &b) {
        for (const Inst &in : b.insts)
          CHECK(in.op != Op::Random); // every random is inside a kernel
      });
  CHECK(jitMatchesReferenceKernels(prog) == runBoth(prog, ExecOptions{}).second);
}

TEST_CASE("fusion: a value used after the group's root is one more output of its kernel") {
  const char *prog = R"(mesh m = [x = 2]
let a : f32[8] @ m[x] = rand(seed=1)
let t = exp(a)
let u = t * 2.0
print(u)
print(t)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  // t escapes to a print after u's kernel: one kernel computes both.
  CHECK(countKernels(s.module) == 1);
  for (auto &f : s.module.functions)
    if (isFusedKernel(f)) {
      FusedKernel fk = buildFusedKernel(f);
      CHECK(fk.kernel.outputs.size() == 2);
      CHECK(fk.resultTypes.size() == 2);
    }
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  auto [out, ref] = runBoth(prog, ExecOptions{});
  CHECK(out == ref);
}

TEST_CASE("fusion: a value used before the group's root stays its own kernel's result") {
  const char *prog = R"(mesh m = [x = 2]
let a : f32[8] @ m[x] = rand(seed=1)
let t = exp(a)
print(t)
let u = t * 2.0
print(u)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(countKernels(s.module) == 2);
  auto [out, ref] = runBoth(prog, ExecOptions{});
  CHECK(out == ref);
}

TEST_CASE("fusion: two users of one producer are one kernel (sibling outputs)") {
  // u and v both read t = exp(a): one kernel computes t once and writes u
  // and v (t stays inside), where two kernels would write t and read it back.
  const char *prog = R"(mesh m = [x = 2]
let a : f32[8] @ m[x] = rand(seed=1)
let b : f32[8] @ m[x] = rand(seed=2)
let t = exp(a)
let u = t * b
let v = t + b
print(v)
print(u)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(countKernels(s.module) == 1);
  for (auto &f : s.module.functions)
    if (isFusedKernel(f))
      CHECK(buildFusedKernel(f).kernel.outputs.size() == 2);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  auto [out, ref] = runBoth(prog, ExecOptions{});
  CHECK(out == ref);
  // A sibling whose value is read before the later user's place cannot move
  // there: it keeps its own kernel.
  const char *early = R"(mesh m = [x = 2]
let a : f32[8] @ m[x] = rand(seed=1)
let b : f32[8] @ m[x] = rand(seed=2)
let t = exp(a)
let u = t * b
print(u)
let v = t + b
print(v)
)";
  Compilation s2(pipelineCompileOptions());
  build(s2, early, true, true);
  CHECK(countKernels(s2.module) == 2);
  auto [out2, ref2] = runBoth(early, ExecOptions{});
  CHECK(out2 == ref2);
}

TEST_CASE("fusion: an Adam step is one kernel writing the parameter and both moments") {
  const char *prog = R"(import optim
mesh m = [dp = 2, tp = 2]
var w : f32[6, 10] @ m[_, tp] = randn(seed=1)
var wm : f32[6, 10] @ m[_, tp] = zeros()
var wv : f32[6, 10] @ m[_, tp] = zeros()
var t : f32[] @ m[] = zeros()
let lr : f32[] @ m[] = full(0.01)
for step in 0..3 {
  let g = sin(w) * 0.5 + 0.25
  t = t + 1.0
  let (w2, m2, v2) = optim.adam_2d(w, g, wm, wv, t, lr)
  w = w2; wm = m2; wv = v2
}
print(w)
print(wm)
print(wv)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  int multi = 0;
  for (auto &f : s.module.functions)
    if (isFusedKernel(f))
      multi += buildFusedKernel(f).kernel.outputs.size() == 3;
  CHECK(multi == 1);
  ExecStats st;
  auto [out, ref] = runBoth(prog, ExecOptions{}, true, &st);
  CHECK(out == ref);
  REQUIRE(!st.ranks.empty());
  CHECK(st.ranks[0].inPlace > 0);
  // Without fusion the values are the same bits.
  auto [outNoFuse, ref2] = runBoth(prog, ExecOptions{}, false);
  CHECK(outNoFuse == out);
}

TEST_CASE("fused kernels: an output overwrites in place only an input it reads") {
  // y = exp(b) is an extra output that does not read `a`; `a` dies at the
  // kernel. Were y written into a's buffer, its store could precede the
  // root's load of a at the same point.
  const char *prog = R"(mesh m = [x = 2]
var a : f32[4, 300] @ m[x, _] = randn(seed=1)
var b : f32[4, 300] @ m[x, _] = randn(seed=2)
for i in 0..3 {
  let y = exp(b)
  let r = a * 2.0 + y
  a = r; b = y - 1.0
}
print(a)
print(b)
)";
  auto [out, ref] = runBoth(prog, ExecOptions{});
  CHECK(out == ref);
}

TEST_CASE("fusion: maxOps 1 makes one kernel per op") {
  Compilation s(pipelineCompileOptions());
  build(s, kChain, true, false);
  // 9 kernels: the scalar constants join their op, the random sources too.
  CHECK(fuseModule(s.module, 1) == 9);
}

TEST_CASE("fused kernels: JIT, reference kernels and reference evaluator agree") {
  const char *prog = R"(mesh m = [x = 2, y = 2]
let a : f32[5, 6] @ m[x, y] = randn(seed=3)
let r : f32[6] @ m[y] = rand(seed=4)
print(where(a > r, a * r, -a) + 1.0)
)";
  for (const char *text : {kChain, prog})
    CHECK(jitMatchesReferenceKernels(text).size() > 10);
}

TEST_CASE("fused kernels: a reduction is fused and matches the reference") {
  ExecStats st;
  auto [out, ref] = runBoth(R"(mesh m = [x = 2]
let a : i32[6, 4] @ m[x, _] = ones()
let b = a * 3 + 1
print(relayout(sum(b, dims=[1]), m[_]))
)",
                            ExecOptions{}, true, &st);
  CHECK(out == ref);
  CHECK(st.kernels >= 1);
}

TEST_CASE("memory plan: reuse lowers the peak of a long chain, var updates run in place") {
  std::string prog = "mesh m = [x = 2]\nvar w : f32[64, 64] @ m[x, _] = ones()\n";
  for (int i = 0; i < 24; ++i)
    prog += "let t" + std::to_string(i) + " = w * " + std::to_string(i) + ".0 + 1.0\n" + "w = t" +
            std::to_string(i) + " - w\n";
  prog += "print(relayout(sum(w, dims=[0, 1]), m[]))\n";
  ExecOptions plan, keep;
  keep.memoryPlan = false;
  // One kernel per op (fusion would make this one kernel): 48 launches a rank.
  auto run = [&](ExecOptions eo, ExecStats &st) {
    Compilation d(pipelineCompileOptions());
    build(d, prog, true, false);
    fuseModule(d.module, 1);
    std::ostringstream out;
    Executor ex(d.module, out, eo);
    ex.run("main", {});
    st = ex.stats();
    return out.str();
  };
  ExecStats a, b;
  std::string outPlan = run(plan, a), outKeep = run(keep, b);
  CHECK(outPlan == outKeep);
  REQUIRE(a.ranks.size() == 2);
  MESSAGE("peak bytes per rank: planned " << a.ranks[0].peakBytes << ", no reuse "
                                          << b.ranks[0].peakBytes);
  CHECK(a.ranks[0].peakBytes * 8 < b.ranks[0].peakBytes);
  CHECK(a.ranks[0].inPlace > 0);
  CHECK(b.ranks[0].inPlace == 0);
}

TEST_CASE("cpu jit: one kernel compiles once across sizes and ranks") {
  CpuJIT jit;
  auto prog = [](int n) {
    return "mesh m = [x = 2]\nlet a : f32[" + std::to_string(n) +
           "] @ m[x] = rand(seed=1)\nprint(exp(a) * 2.0)\n";
  };
  ExecOptions eo;
  eo.cpuJit = eo.quickJit = &jit; // one compiler for both tiers
  for (int n : {8, 10, 100000}) {
    Compilation d(pipelineCompileOptions());
    build(d, prog(n), true, true);
    std::ostringstream out;
    Executor(d.module, out, eo).run("main", {});
  }
  CHECK(jit.compiles() == 1);
  CHECK(jit.cacheHits() == 2);
}

namespace {
/// index_selects left outside every kernel function of `m`.
int unfusedGathers(const Module &m) {
  int n = 0;
  std::function<void(const Block &)> walk = [&](const Block &b) {
    for (const Inst &in : b.insts) {
      n += in.op == Op::IndexSelect;
      for (const Block &r : in.regions)
        walk(r);
    }
  };
  for (const Function &f : m.functions)
    if (!isFusedKernel(f))
      walk(f.body);
  return n;
}

int gatherNodes(const Module &m) {
  int n = 0;
  for (const Function &f : m.functions)
    if (isFusedKernel(f))
      for (const KNode &k : buildFusedKernel(f).kernel.nodes)
        n += k.op == KOp::Gather;
  return n;
}
} // namespace

TEST_CASE("fusion: an index_select read by two kernels is gathered inside each") {
  // seed 001's modulation: the gathered scale feeds a pointwise kernel and a
  // sum; neither writes nor reads the gathered [7, 6] tensor.
  const char *prog = R"(mesh m = [x = 2]
let tab : f32[5, 6] @ m[_, _] = randn(seed=1)
let ids : i32[7] @ m[x] = [4, 0, 3, 3, 1, 2, 4]
let b : f32[7, 6] @ m[x, _] = randn(seed=2)
let g = index_select(tab, ids)
let u = g * b + 1.0
print(relayout(sum(g * b * b), m[]))
print(u)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(unfusedGathers(s.module) == 0);
  CHECK(gatherNodes(s.module) == 2);
  std::vector<std::string> errs;
  CHECK(verifyModule(s.module, errs));
  CHECK(jitMatchesReferenceKernels(prog).size() > 20);
}

TEST_CASE("fusion: a gather's source and ids stay inputs; unfused copies merge back") {
  // `g + big` iterates over [3, 7, 6], which the gather's result is not: the
  // two such users leave their copies outside, merged into one; `g * 2`
  // takes its own. A source also read pointwise keeps its gather outside.
  const char *prog = R"(mesh m = [x = 2]
let tab : f32[7, 6] @ m[_, _] = randn(seed=1)
let ids : i32[7] @ m[x] = [6, 0, 3, 3, 1, 2, 4]
let big : f32[3, 7, 6] @ m[_, x, _] = randn(seed=2)
let g = index_select(tab, ids)
print(g * 2.0)
print(g + big)
print(g - big)
let h = index_select(tab, ids) * relayout(tab, m[x, _])
print(h)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(unfusedGathers(s.module) == 1);
  CHECK(gatherNodes(s.module) == 2);
  jitMatchesReferenceKernels(prog);
}

TEST_CASE("fused kernels: a gathered id out of range is the reference's runtime fault") {
  const char *prog = R"(mesh m = [x = 2]
let tab : f32[5, 6] @ m[_, _] = randn(seed=1)
let ids : i32[4] @ m[x] = [4, 0, 5, 1]
let b : f32[4, 6] @ m[x, _] = randn(seed=2)
print(index_select(tab, ids) * b)
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(gatherNodes(s.module) == 1);
  std::ostringstream out;
  Executor ex(s.module, out, ExecOptions{});
  CHECK_THROWS_WITH_AS(
      ex.run("main", {}),
      doctest::Contains("`index_select`: index 5 is out of range for dim 0 of size 5"),
      RuntimeFault);
}

TEST_CASE("fused kernels: ids checked once stay checked only while they cannot change") {
  // The loop-invariant ids are checked on the first trip and remembered; the
  // ids that move one row a trip are checked again each trip, and the fourth
  // trip's (3..6 against 6 rows: 6 is out) is the reference's fault, with
  // the same values printed before it.
  const char *prog = R"(mesh m = [x = 2]
let tab : f32[6, 8] @ m[_, _] = randn(seed=1)
let fixed : i32[4] @ m[x] = [5, 0, 2, 1]
var ids : i32[4] @ m[x] = [0, 1, 2, 3]
let b : f32[4, 8] @ m[x, _] = randn(seed=2)
for i in 0..5 {
  print(relayout(index_select(tab, fixed) * b + index_select(tab, ids) * 2.0, m[_, _]))
  ids = ids + 1
}
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(gatherNodes(s.module) == 2);
  std::ostringstream out, ref;
  Executor ex(s.module, out, ExecOptions{});
  CHECK_THROWS_WITH_AS(
      ex.run("main", {}),
      doctest::Contains("`index_select`: index 6 is out of range for dim 0 of size 6"),
      RuntimeFault);
  ExecOptions noJit;
  noJit.jit = false;
  Executor slow(s.module, ref, noJit);
  CHECK_THROWS_AS(slow.run("main", {}), RuntimeFault);
  CHECK(ex.printed().size() == 3);
  REQUIRE(slow.printed().size() == 3);
  for (size_t p = 0; p < 3; ++p)
    for (int64_t i = 0; i < 32; ++i)
      CHECK(ex.printed()[p].value.get(i) ==
            doctest::Approx(slow.printed()[p].value.get(i)).epsilon(1e-6));
}

TEST_CASE(
    "fusion: a large lone random is a kernel on the cpu, with the reference source's values") {
  // Consumed only by collectives: nothing to fuse into. From 2^18 local
  // elements it becomes a kernel of its own (split across the rank's
  // threads); a small one stays the reference source. Both give the RNG's
  // layout-invariant values exactly.
  const char *text = R"(mesh m = [x = 2]
let a : f32[1024, 600] @ m[x, _] = randn(seed=5)
let u : f64[600, 1024] @ m[_, x] = rand(seed=6)
let s : f32[8, 8] @ m[x, _] = randn(seed=7)
let b = relayout(a, m[_, _])
let v = relayout(u, m[_, _])
let t = relayout(s, m[_, _])
print(b[0:2, 0:6])
print(b[1023, 590:600])
print(v[599, 1018:1024])
print(t[7, :])
)";
  Compilation s(pipelineCompileOptions());
  test::buildProgram(s, text, true);
  const Function *main = s.module.find("main");
  REQUIRE(main);
  CHECK(test::countOps(main->body, Op::Random) == 1); // the small one
  auto [got, want] = test::printedBoth(s, text, pipelineCompileOptions());
  CHECK(got.size() > 100);
  CHECK(got == want);
}

namespace {
int scatterStores(const Module &m) {
  int n = 0;
  for (const Function &f : m.functions)
    if (isFusedKernel(f))
      n += scatterStore(buildFusedKernel(f).kernel) != nullptr;
  return n;
}
} // namespace

TEST_CASE("fusion: an index_add joins the kernel of its rows, whose ids are checked") {
  // `b * b + 1.0` is added into the rows of z in b's kernel; `tanh(b)` is
  // printed too, so its index_add stays outside. The ids move one row a
  // trip: checked on every trip, the fourth trip's id 5 (of 5 rows) is the
  // reference's fault, after the same values printed.
  const char *prog = R"(mesh m = [x = 2]
var ids : i32[4] @ m[_] = [2, 0, 2, 1]
let b : f32[4, 6] @ m[_, x] = randn(seed=2)
let z : f32[5, 6] @ m[_, x] = randn(seed=3)
for i in 0..4 {
  print(relayout(index_add(z, ids, b * b + 1.0), m[_, _]))
  let t = tanh(b)
  print(relayout(index_add(z, ids, t) + t[0:1, :] * 0.0, m[_, _]))
  ids = ids + 1
}
)";
  Compilation s(pipelineCompileOptions());
  build(s, prog, true, true);
  CHECK(scatterStores(s.module) == 1);
  std::ostringstream out, ref;
  Executor ex(s.module, out, ExecOptions{});
  CHECK_THROWS_WITH_AS(
      ex.run("main", {}),
      doctest::Contains("`index_add`: index 5 is out of range for dim 0 of size 5"), RuntimeFault);
  CHECK(ex.printed().size() == 6); // three trips of two prints
  ExecOptions noJit;
  noJit.jit = false;
  Executor slow(s.module, ref, noJit);
  CHECK_THROWS_AS(slow.run("main", {}), RuntimeFault);
  CHECK(out.str() == ref.str());
}
