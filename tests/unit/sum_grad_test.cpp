// Unit tests of the `sum` / `mean` gradient's layout (passes/Autodiff.cpp):
// the cotangent is broadcast straight into the operand's local block, so the
// per-rank program has no broadcast to a replicated global shape followed by
// a `local_slice`, on every mesh shape, with uneven and empty shards, and the
// gradient equals the reference evaluator's.
#include "BuildProgram.h"
#include "frontend/Compilation.h"
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

/// `local_slice` steps reachable from a block (through calls too).
void scan(const Module &m, const Block &b, int &slices) {
  for (const Inst &in : b.insts) {
    if (in.op == Op::LocalSlice)
      ++slices;
    if (in.op == Op::Call)
      if (const Function *callee = m.find(in.attrs.str))
        scan(m, callee->body, slices);
    for (const Block &r : in.regions)
      scan(m, r, slices);
  }
}

/// 2-D broadcasts (inside kernels too) whose result is replicated on some
/// mesh axis: in these programs every axis shards the operand, so such a
/// broadcast is the whole global extent on that axis.
int countReplicatedBroadcasts(const Module &m) {
  int n = 0;
  for (const Function &f : m.functions) {
    std::vector<const Block *> todo{&f.body};
    while (!todo.empty()) {
      const Block *b = todo.back();
      todo.pop_back();
      for (const Inst &in : b->insts) {
        if (in.op == Op::Broadcast && f.type(in.results[0]).rank() == 2) {
          const TensorType &t = f.type(in.results[0]);
          bool replicatedSomewhere = false;
          for (auto &p : t.placements)
            replicatedSomewhere |= p.isReplicate();
          n += replicatedSomewhere;
        }
        for (const Block &r : in.regions)
          todo.push_back(&r);
      }
    }
  }
  return n;
}

int countSlices(const Module &m) {
  int n = 0;
  for (const Function &f : m.functions) {
    int s = 0;
    scan(m, f.body, s);
    n += s;
  }
  return n;
}

} // namespace

TEST_CASE("sum grad: broadcast into the operand's local block, no global ones then slice") {
  struct Case {
    const char *mesh, *layout;
    int rows, cols;
  };
  // 1-D and 2-D meshes, even, uneven (7 rows on 2 and 4 ranks) and empty
  // shards (3 columns on 4 ranks).
  for (Case c : {Case{"[x = 2]", "m[x, _]", 8, 6}, Case{"[x = 4]", "m[x, _]", 7, 5},
                 Case{"[x = 2, y = 2]", "m[x, y]", 7, 6}, Case{"[x = 4]", "m[_, x]", 2, 3},
                 Case{"[x = 2, y = 3]", "m[y, x]", 5, 4}}) {
    for (const char *red : {"sum(a)", "mean(a)", "sum(a * a) * 0.5"}) {
      std::string shape = "f32[" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + "]";
      std::string text = std::string("mesh m = ") + c.mesh + "\nfn loss(a: " + shape + " @ " +
                         c.layout + ") -> f32[] @ m[] {\n  return relayout(" + red +
                         ", m[])\n}\nfn g(a: " + shape + " @ " + c.layout + ") -> " + shape +
                         " @ " + c.layout + " {\n  return grad(loss)(a)\n}\n";
      INFO(text);
      Compilation d(pipelineCompileOptions()), r(pipelineCompileOptions());
      build(d, text, true);
      build(r, text, false);
      CHECK(countReplicatedBroadcasts(d.module) == 0);
      CHECK(countSlices(d.module) == 0);
      HostTensor a(DType::F32, {c.rows, c.cols});
      for (int64_t k = 0; k < a.numel(); ++k)
        a.set(k, 0.25 * (double)(k % 7) - 0.5);
      std::ostringstream o1, o2;
      auto got = Executor(d.module, o1).run("g", {a});
      auto want = ReferenceEvaluator(r.module, o2).run("g", {a});
      REQUIRE(got.size() == 1);
      REQUIRE(got[0].shape == want[0].shape);
      for (int64_t k = 0; k < got[0].numel(); ++k)
        CHECK(std::fabs(got[0].get(k) - want[0].get(k)) <= 1e-6 * (1 + std::fabs(want[0].get(k))));
    }
  }
}
