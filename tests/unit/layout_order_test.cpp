// Unit tests for the order of the axes sharding one dim (ir/Types.h): the
// block each rank holds, canonical numbering and its verifier check, the
// placement-form printing, the IR text round trip, and the planner's step
// between two orders of the same dim.
#include "ir/Collectives.h"
#include "ir/IRParser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir_test_util.h"
#include "passes/Redistribute.h"

#include <doctest/doctest.h>

using namespace dt;
using namespace dt::test;

namespace {

const Placement R = Placement::replicate();
Placement S(int d, int order = 0) { return Placement::shard(d, order); }

} // namespace

TEST_CASE("layout order: the block of each rank follows the group's order") {
  auto m = makeMesh("m", {{"x", 3}, {"y", 2}});
  TensorType xy = ty(DType::F32, {6}, m, {S(0, 0), S(0, 1)});
  TensorType yx = ty(DType::F32, {6}, m, {S(0, 1), S(0, 0)});
  for (int64_t r = 0; r < 6; ++r) {
    auto c = m->coords(r);
    CHECK(localBlock(xy, r).offset[0] == c[0] * 2 + c[1]);
    CHECK(localBlock(yx, r).offset[0] == c[1] * 3 + c[0]);
  }
  // uneven: 7 over 6 y-major, blocks of 2 for the first three group indices
  TensorType u = ty(DType::F32, {7}, m, {S(0, 1), S(0, 0)});
  CHECK(localBlock(u, 1).offset[0] == 6); // x = 0, y = 1: group index 3
  CHECK(localBlock(u, 1).shape[0] == 1);
  CHECK(localBlock(u, 3).shape[0] == 0);
  CHECK(yx.axesShardingDim(0) == std::vector<int>{1, 0});
  CHECK(!yx.meshOrdered(0));
  CHECK(xy.meshOrdered(0));
  CHECK(!(xy == yx));
  CHECK(yx.str() == "f32[6] @ m{x: shard(0, order=1), y: shard(0, order=0)}");
  CHECK(xy.str() == "f32[6] @ m{x: shard(0), y: shard(0)}");
  CHECK(yx.dimsMappingStr() == "m[(y, x)]");
}

TEST_CASE("layout order: canonical numbering") {
  std::vector<Placement> ps{S(0, 7), S(0, 3), S(1, 5)};
  CHECK(!isCanonicalShardOrder(ps));
  canonicalizeShardOrder(ps);
  CHECK(ps[0].order == 1);
  CHECK(ps[1].order == 0);
  CHECK(ps[2].order == 0);
  CHECK(isCanonicalShardOrder(ps));
  // ties fall back to mesh order
  std::vector<Placement> t{S(0), S(0)};
  canonicalizeShardOrder(t);
  CHECK(t[0].order == 0);
  CHECK(t[1].order == 1);
}

TEST_CASE("layout order: planner reorders with one all_to_all over both axes") {
  auto m = makeMesh("m", {{"x", 3}, {"y", 2}});
  for (int64_t n : {6, 7, 4, 0}) {
    INFO("n = ", n);
    TensorType xy = ty(DType::F32, {n, 5}, m, {S(0, 0), S(0, 1)});
    TensorType yx = ty(DType::F32, {n, 5}, m, {S(0, 1), S(0, 0)});
    auto p = planRedistribution(xy, yx);
    REQUIRE(!p.steps.empty());
    TensorType cur = xy;
    for (auto &s : p.steps) {
      INFO(describeStep(cur, s));
      CHECK(checkCollective(s.op, cur, s.to, s.axes) == "");
      cur = s.to;
    }
    CHECK(cur == yx);
    if (n == 6) {
      REQUIRE(p.steps.size() == 1);
      CHECK(p.steps[0].op == Op::AllToAll);
      CHECK(p.steps[0].axes == std::vector<int64_t>{0, 1});
    }
    // and from one order to a single-axis layout and to the other dim
    for (auto to :
         {ty(DType::F32, {n, 5}, m, {S(0), R}), ty(DType::F32, {n, 5}, m, {S(1, 1), S(1, 0)}),
          ty(DType::F32, {n, 5}, m, {R, R})}) {
      auto q = planRedistribution(yx, to);
      TensorType c = yx;
      for (auto &s : q.steps) {
        INFO(describeStep(c, s));
        CHECK(checkCollective(s.op, c, s.to, s.axes) == "");
        c = s.to;
      }
      CHECK(c == to);
    }
  }
  // an all_to_all that changes nothing is not a step
  TensorType yx = ty(DType::F32, {6}, m, {S(0, 1), S(0, 0)});
  CHECK(checkCollective(Op::AllToAll, yx, yx, {0, 1}) != "");
}

TEST_CASE("layout order: IR text round trip and the verifier") {
  Module mod;
  auto m = makeMesh("m", {{"x", 3}, {"y", 2}});
  mod.meshes = {m};
  Function &f = mod.functions.emplace_back();
  f.name = "main";
  FnBuilder b(f);
  TensorType xy = ty(DType::F32, {7, 2}, m, {S(0, 0), S(0, 1)});
  TensorType yx = ty(DType::F32, {7, 2}, m, {S(0, 1), S(0, 0)});
  int a = b.emit(Op::Fill, {}, xy, floats({1}));
  int c = b.emit(Op::AllToAll, {a}, yx, ints({0, 1}));
  b.emit(Op::Exp, {c}, yx);
  b.ret({});
  CHECK(verifyModuleText(mod, {false}) == "");
  std::string text = printModule(mod);
  CHECK(text.find("m{x: shard(0, order=1), y: shard(0, order=0)}") != std::string::npos);
  Module back = parseOrFail(text);
  CHECK(printModule(back) == text);
  CHECK(back.find("main")->type(c) == yx);
  // a non-canonical numbering is a verifier error
  f.values[c].type.placements = {S(0, 4), S(0, 2)};
  CHECK(verifyModuleText(mod, {false}).find("0..k-1") != std::string::npos);
}
