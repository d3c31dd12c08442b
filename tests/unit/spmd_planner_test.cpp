// Unit tests of the redistribution planner (passes/Redistribute.h) and of the
// collective checks it relies on (ir/Collectives.h): the chosen steps for
// every transition of DESIGN.md, the byte-minimal order on multi-axis
// layouts, uneven multi-axis sets, and an exhaustive sweep over layout pairs
// whose plans must be valid step by step.
#include "ir/Collectives.h"
#include "passes/Redistribute.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace dt;

namespace {

MeshRef mesh2(int64_t x, int64_t y) {
  auto m = std::make_shared<Mesh>();
  m->name = "m";
  m->axes = {{"x", x}, {"y", y}};
  for (int64_t i = 0; i < m->size(); ++i)
    m->devices.push_back(i);
  return m;
}

TensorType tt(MeshRef m, std::vector<int64_t> dims, std::vector<Placement> pl,
              DType dt = DType::F32) {
  TensorType t;
  t.dtype = dt;
  for (auto d : dims)
    t.shape.push_back(Dim::lit(d));
  t.mesh = m;
  t.placements = std::move(pl);
  return t;
}

const Placement R = Placement::replicate();
Placement S(int d) { return Placement::shard(d); }
Placement P(ReduceOp op = ReduceOp::Sum) { return Placement::partial(op); }

/// `all_reduce(x) all_gather(y)`: the plan's ops and axes, for compact checks.
std::string steps(const RedistPlan &p, const Mesh &m) {
  std::string r;
  for (auto &s : p.steps)
    r += (r.empty() ? "" : " ") + std::string(opName(s.op)) + axesName(m, s.axes);
  return r;
}

/// Every step of `p` from `from` is a valid collective and the chain ends at `to`.
void checkChain(const TensorType &from, const TensorType &to, const RedistPlan &p) {
  TensorType cur = from;
  for (auto &s : p.steps) {
    INFO(describeStep(cur, s));
    CHECK(checkCollective(s.op, cur, s.to, s.axes) == "");
    cur = s.to;
  }
  CHECK(cur == to);
}

} // namespace

TEST_CASE("planner: one step per DESIGN.md transition") {
  auto m = mesh2(3, 2);
  auto plan = [&](std::vector<Placement> a, std::vector<Placement> b) {
    return steps(planRedistribution(tt(m, {6, 4}, a), tt(m, {6, 4}, b)), *m);
  };
  CHECK(plan({S(0), R}, {R, R}) == "all_gatherx");
  CHECK(plan({P(), R}, {R, R}) == "all_reducex");
  CHECK(plan({P(), R}, {S(0), R}) == "reduce_scatterx");
  CHECK(plan({R, R}, {S(1), R}) == "local_slicex");
  CHECK(plan({S(0), R}, {S(1), R}) == "all_to_allx");
  CHECK(plan({R, R}, {P(), R}) == "local_partialx");
  CHECK(plan({R, R}, {R, R}) == "");
  CHECK(plan({P(ReduceOp::Max), R}, {R, R}) == "all_reducex");
  CHECK(plan({P(ReduceOp::Sum), R}, {P(ReduceOp::Max), R}) == "all_reducex local_partialx");
}

TEST_CASE("planner: cheapest order on two axes") {
  auto m = mesh2(3, 2);
  // All-reduce on x while the value is still halved by y, then gather y.
  auto a = tt(m, {8, 4}, {P(), S(0)}), b = tt(m, {8, 4}, {R, R});
  auto p = planRedistribution(a, b);
  CHECK(steps(p, *m) == "all_reducex all_gathery");
  checkChain(a, b, p);
  // A replicated axis that stays replicated is never touched (the DESIGN.md example).
  auto c = tt(m, {2, 2}, {P(), R});
  CHECK(steps(planRedistribution(c, tt(m, {2, 2}, {R, R})), *m) == "all_reducex");
  // Joint gather of a dim sharded by (x, y).
  auto j = tt(m, {12, 4}, {S(0), S(0)});
  CHECK(steps(planRedistribution(j, tt(m, {12, 4}, {R, R})), *m) == "all_gather(x, y)");
  // Slicing before the reduce-scatter of the other axis moves fewer bytes.
  auto ps = planRedistribution(tt(m, {12, 6}, {P(), R}), tt(m, {12, 6}, {S(0), S(1)}));
  CHECK(steps(ps, *m) == "local_slicey reduce_scatterx");
}

TEST_CASE("planner: uneven multi-axis sets gather the joint group, then slice") {
  auto m = mesh2(2, 2);
  // 5 rows over (x, y) = 2, 2, 1, 0; over x alone = 3, 2: not nested chunks.
  auto a = tt(m, {5, 3}, {S(0), S(0)}), b = tt(m, {5, 3}, {S(0), R});
  auto p = planRedistribution(a, b);
  checkChain(a, b, p);
  // Gathering only y would be wrong here, and the check says so.
  CHECK(checkCollective(Op::AllGather, a, b, {1}) != "");
  // Gather over the joint group + slice is always valid; the plan moves no more.
  auto rep = tt(m, {5, 3}, {R, R});
  CHECK(checkCollective(Op::AllGather, a, rep, {0, 1}) == "");
  CHECK(checkCollective(Op::LocalSlice, rep, b, {0}) == "");
  CHECK(p.bytes <= collectiveBytes(Op::AllGather, a, rep, {0, 1}));
  // On one row block per rank and no cheaper route, it is exactly that.
  auto a1 = tt(m, {4, 1}, {S(0), S(0)}), b1 = tt(m, {4, 1}, {S(0), R});
  CHECK(steps(planRedistribution(a1, b1), *m) == "all_gathery");
  // With an even size the nested gather over y is exact and cheaper.
  auto e = tt(m, {8, 3}, {S(0), S(0)}), f = tt(m, {8, 3}, {S(0), R});
  CHECK(steps(planRedistribution(e, f), *m) == "all_gathery");
}

TEST_CASE("collective checks reject wrong transitions") {
  auto m = mesh2(3, 2);
  auto a = tt(m, {6, 4}, {S(0), R});
  CHECK(checkCollective(Op::AllGather, a, tt(m, {6, 4}, {R, R}), {0}) == "");
  CHECK(checkCollective(Op::AllGather, a, tt(m, {6, 4}, {R, R}), {1}) != "");
  CHECK(checkCollective(Op::AllReduce, a, tt(m, {6, 4}, {R, R}), {0}) != "");
  CHECK(checkCollective(Op::LocalSlice, tt(m, {6, 4}, {R, R}), a, {0}) == "");
  CHECK(checkCollective(Op::AllToAll, a, tt(m, {6, 4}, {S(0), R}), {0}) != "");
  CHECK(checkCollective(Op::AllGather, a, tt(m, {6, 4}, {R, R}, DType::F64), {0}) != "");
  CHECK(checkCollective(Op::AllGather, a, tt(m, {6, 4}, {R, R}), {}) != "");
}

TEST_CASE("collective bytes: busiest rank, intermediate types") {
  auto m = mesh2(3, 2);
  // all_gather of f32[6, 4] over x (3 ranks): receives 2 of 3 blocks of 2 rows.
  CHECK(collectiveBytes(Op::AllGather, tt(m, {6, 4}, {S(0), R}), tt(m, {6, 4}, {R, R}), {0}) ==
        4 * 16);
  // all_reduce ring: 2 (k-1)/k of the 24-element block.
  CHECK(collectiveBytes(Op::AllReduce, tt(m, {6, 4}, {P(), R}), tt(m, {6, 4}, {R, R}), {0}) ==
        4 * 32);
  CHECK(collectiveBytes(Op::LocalSlice, tt(m, {6, 4}, {R, R}), tt(m, {6, 4}, {S(0), R}), {0}) == 0);
}

TEST_CASE("planner: every pair of layouts has a valid plan") {
  std::vector<Placement> choices = {R, S(0), S(1), P()};
  for (auto [x, y] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {3, 2}, {1, 4}}) {
    auto m = mesh2(x, y);
    for (auto dims : std::vector<std::vector<int64_t>>{{7, 5}, {0, 3}, {6, 4}, {1, 9}}) {
      for (auto &a0 : choices)
        for (auto &a1 : choices)
          for (auto &b0 : choices)
            for (auto &b1 : choices) {
              auto a = tt(m, dims, {a0, a1}, DType::I32), b = tt(m, dims, {b0, b1}, DType::I32);
              INFO(a.str() << " -> " << b.str());
              RedistPlan p = planRedistribution(a, b);
              checkChain(a, b, p);
              int64_t sum = 0;
              for (auto &s : p.steps)
                sum += s.bytes;
              CHECK(sum == p.bytes);
            }
    }
  }
}

TEST_CASE("topology: which mesh axes cross nodes") {
  auto m = mesh2(2, 4); // device ids 0..7 row-major: x is the outer axis
  Topology one;
  CHECK(!one.crosses(*m, {0}));
  Topology t;
  t.ranksPerNode = 4;
  CHECK(t.crosses(*m, {0}));
  CHECK(!t.crosses(*m, {1}));
  CHECK(t.crosses(*m, {0, 1}));
  CHECK(!t.crosses(*m, {}));
  // Two ranks per node: half of each y group is on another node.
  t.ranksPerNode = 2;
  CHECK(t.crosses(*m, {1}));
  // Eight per node: one node, nothing crosses.
  t.ranksPerNode = 8;
  CHECK(!t.crosses(*m, {0, 1}));
  // Device ids permuted (`devices [0, 4, 1, 5, 2, 6, 3, 7]`): each x group
  // ({0, 2}, {4, 6}, ...) is inside a node, each y group ({0, 4, 1, 5})
  // spans both.
  auto p = std::make_shared<Mesh>(*m);
  p->devices = {0, 4, 1, 5, 2, 6, 3, 7};
  t.ranksPerNode = 4;
  t.worldIds = {0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(!t.crosses(*p, {0}));
  CHECK(t.crosses(*p, {1}));
  // Sparse ids: world ranks are the sorted distinct ids, so ids 10 and
  // 1000000 are ranks 0 and 1, on one node at two ranks per node.
  auto s = std::make_shared<Mesh>();
  s->name = "s";
  s->axes = {{"z", 2}};
  s->devices = {10, 1000000};
  Topology ts;
  ts.ranksPerNode = 2;
  ts.worldIds = {10, 1000000};
  CHECK(!ts.crosses(*s, {0}));
  ts.ranksPerNode = 1;
  CHECK(ts.crosses(*s, {0}));
}

TEST_CASE("planner: cross-node steps cost more, so traffic stays inside nodes") {
  auto m = mesh2(2, 4); // x across 2 nodes of 4 ranks, y inside each node
  Topology t;
  t.ranksPerNode = 4;
  // partial on both -> replicate: one joint all-reduce on one node; on two,
  // reduce-scatter inside, all-reduce across on a quarter, gather inside.
  auto a = tt(m, {64, 16}, {P(), P()}), b = tt(m, {64, 16}, {R, R});
  CHECK(steps(planRedistribution(a, b), *m) == "all_reduce(x, y)");
  RedistPlan p = planRedistribution(a, b, t);
  CHECK(steps(p, *m) == "reduce_scattery all_reducex all_gathery");
  checkChain(a, b, p);
  REQUIRE(p.steps.size() == 3);
  CHECK(!p.steps[0].crossNode);
  CHECK(p.steps[1].crossNode);
  CHECK(!p.steps[2].crossNode);
  CHECK(p.steps[1].bytes < planRedistribution(a, b).bytes / 2);
  // Nothing to gain: a cross-node gather stays one step.
  auto g = tt(m, {64, 16}, {S(0), R});
  RedistPlan pg = planRedistribution(g, tt(m, {64, 16}, {R, R}), t);
  CHECK(steps(pg, *m) == "all_gatherx");
  CHECK(pg.steps[0].crossNode);
  // Every pair of layouts still has a valid plan under the topology.
  std::vector<Placement> choices = {R, S(0), S(1), P()};
  for (auto dims : std::vector<std::vector<int64_t>>{{7, 5}, {0, 3}, {8, 4}})
    for (auto &a0 : choices)
      for (auto &a1 : choices)
        for (auto &b0 : choices)
          for (auto &b1 : choices) {
            auto x = tt(m, dims, {a0, a1}), y = tt(m, dims, {b0, b1});
            INFO(x.str() << " -> " << y.str());
            RedistPlan q = planRedistribution(x, y, t);
            checkChain(x, y, q);
            for (auto &st : q.steps)
              CHECK(st.crossNode == (st.op != Op::LocalSlice && st.op != Op::LocalPartial &&
                                     t.crosses(*m, st.axes)));
          }
}

TEST_CASE("slice_gather: checks and bytes of a slice of a sharded dim") {
  auto m = mesh2(3, 2);
  // f32[9, 4] sharded over x (3 ranks, rows 0-2, 3-5, 6-8); rows [2, 7).
  auto a = tt(m, {9, 4}, {S(0), R});
  auto rep = tt(m, {5, 4}, {R, R}), sh = tt(m, {5, 4}, {S(0), R});
  CHECK(checkCollective(Op::SliceGather, a, rep, {0}, 2) == "");
  CHECK(checkCollective(Op::SliceGather, a, sh, {0}, 2) == "");
  CHECK(checkCollective(Op::SliceGather, a, sh, {0}, 4) == "");
  CHECK(checkCollective(Op::SliceGather, a, sh, {0}, 5) != ""); // rows [5, 10) lie outside
  CHECK(checkCollective(Op::SliceGather, a, sh, {0}, -1) != "");
  CHECK(checkCollective(Op::SliceGather, a, tt(m, {5, 3}, {R, R}), {0}, 2) != ""); // dim 1 changed
  CHECK(checkCollective(Op::SliceGather, a, tt(m, {5, 4}, {S(1), R}), {0}, 2) != "");
  CHECK(checkCollective(Op::SliceGather, a, rep, {1}, 2) != ""); // y does not shard dim 0
  CHECK(checkCollective(Op::SliceGather, tt(m, {9, 4}, {R, R}), rep, {0}, 2) != "");
  // A dim sharded over (x, y) must be gathered over both.
  auto xy = tt(m, {9, 4}, {Placement::shard(0, 0), Placement::shard(0, 1)});
  CHECK(checkCollective(Op::SliceGather, xy, rep, {0}, 2) != "");
  CHECK(checkCollective(Op::SliceGather, xy, rep, {0, 1}, 2) == "");
  // Replicated result: every rank receives the 5 rows but those it holds;
  // rank 0 holds row 2 only, so it receives 4 rows of 4 floats.
  CHECK(collectiveBytes(Op::SliceGather, a, rep, {0}, 2) == 4 * 4 * 4);
  // Sharded result (blocks of 2, 2, 1 rows: rows 2-3, 4-5, 6): rank 0 needs
  // row 3 from rank 1; rank 1 holds rows 4-5; rank 2 holds row 6.
  CHECK(collectiveBytes(Op::SliceGather, a, sh, {0}, 2) == 1 * 4 * 4);
  // Rows [0, 2) inside rank 0's block, replicated: ranks 1 and 2 receive 2 rows.
  CHECK(collectiveBytes(Op::SliceGather, a, tt(m, {2, 4}, {R, R}), {0}, 0) == 2 * 4 * 4);
  // An empty slice moves nothing.
  CHECK(collectiveBytes(Op::SliceGather, a, tt(m, {0, 4}, {R, R}), {0}, 3) == 0);
}
