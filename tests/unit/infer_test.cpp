// Unit tests for ir/Signatures and ir/Infer: shape inference and one test per
// placement rule of the checker, on the op level (no parser involved).
#include "ir/Infer.h"

#include <doctest/doctest.h>

using namespace dt;

namespace {

MeshRef mesh(std::vector<MeshAxis> axes, const char *name = "m") {
  auto m = std::make_shared<Mesh>();
  m->name = name;
  m->axes = std::move(axes);
  for (int64_t i = 0; i < m->size(); ++i)
    m->devices.push_back(i);
  return m;
}

/// `t(m, {2, 3}, {P::shard(1), P::replicate()})`
TensorType t(MeshRef m, std::vector<int64_t> shape, std::vector<Placement> p,
             DType dt = DType::F32) {
  Shape s;
  for (auto d : shape)
    s.push_back(Dim::lit(d));
  TensorType r = replicatedType(dt, s, m);
  if (m)
    r.placements = std::move(p);
  return r;
}

using P = Placement;

Inferred run(Op op, std::vector<TensorType> ops, Attrs a = {}, std::vector<TensorType> g = {}) {
  return inferTypes(op, ops, a, g);
}

} // namespace

TEST_CASE("infer: seed 000 matmul cases") {
  auto m = mesh({{"x", 3}, {"y", 2}});
  // [_, x] @ [x, _] -> partial(sum) on x, no communication
  auto r = run(Op::MatMul, {t(m, {2, 3}, {P::shard(1), P::replicate()}),
                            t(m, {3, 2}, {P::shard(0), P::replicate()})});
  REQUIRE(r.ok());
  CHECK(r.results[0].str() == "f32[2, 2] @ m{x: partial(sum), y: replicate}");
  // [y, x] @ [x, _] carries y to the result's first dim
  r = run(Op::MatMul,
          {t(m, {2, 3}, {P::shard(1), P::shard(0)}), t(m, {3, 2}, {P::shard(0), P::replicate()})});
  REQUIRE(r.ok());
  CHECK(r.results[0].str() == "f32[2, 2] @ m{x: partial(sum), y: shard(0)}");
  // replicated operands give a replicated result
  r = run(Op::MatMul, {t(m, {2, 3}, {P(), P()}), t(m, {3, 2}, {P(), P()})});
  CHECK(r.results[0].str() == "f32[2, 2] @ m{x: replicate, y: replicate}");
}

TEST_CASE("infer: shape inference and shape errors") {
  auto m = mesh({{"x", 2}});
  auto r = run(Op::Add, {t(m, {4, 3}, {P::shard(0)}), t(m, {3}, {P()})});
  REQUIRE(r.ok());
  CHECK(shapeStr(r.results[0].shape) == "[4, 3]");
  CHECK(r.results[0].placements[0] == P::shard(0));
  r = run(Op::Add, {t(m, {4}, {P()}), t(m, {6}, {P()})});
  REQUIRE(!r.ok());
  CHECK(r.error->id == DiagId::ShapeMismatch);
  r = run(Op::MatMul, {t(m, {2, 3}, {P()}), t(m, {2, 3}, {P()})});
  CHECK(r.error->id == DiagId::ShapeMismatch);
  Attrs a;
  a.str = "ik,kj->ij";
  r = run(Op::Einsum, {t(m, {2, 3}, {P()}), t(m, {3, 5}, {P()})}, a);
  CHECK(shapeStr(r.results[0].shape) == "[2, 5]");
  a.str = "ik,kj->iq";
  CHECK(run(Op::Einsum, {t(m, {2, 3}, {P()}), t(m, {3, 5}, {P()})}, a).error->id ==
        DiagId::BadEinsum);
}

TEST_CASE("infer: symbolic dims unify by name") {
  auto m = mesh({{"x", 2}});
  TensorType a = t(m, {0, 0}, {P::shard(0)}), b = t(m, {0, 0}, {P()});
  a.shape = {Dim::symbol("T"), Dim::symbol("H")};
  b.shape = {Dim::symbol("H"), Dim::symbol("H")};
  auto r = run(Op::MatMul, {a, b});
  REQUIRE(r.ok());
  CHECK(shapeStr(r.results[0].shape) == "[T, H]");
  b.shape = {Dim::symbol("K"), Dim::symbol("H")};
  CHECK(!run(Op::MatMul, {a, b}).ok());
}

TEST_CASE("infer: rule: operands on different meshes") {
  auto m = mesh({{"x", 2}}), q = mesh({{"t", 2}}, "q");
  auto r = run(Op::Add, {t(m, {4}, {P()}), t(q, {4}, {P()})});
  CHECK(r.error->id == DiagId::MeshMismatch);
}

TEST_CASE("infer: rule: host mixed with distributed, fix names the matching layout") {
  auto m = mesh({{"x", 2}});
  auto r = run(Op::Add, {t(m, {4}, {P::shard(0)}), t(nullptr, {4}, {})});
  REQUIRE(!r.ok());
  CHECK(r.error->id == DiagId::HostDistributedMix);
  CHECK(r.error->operand == 1);
  CHECK(r.error->suggest->str() == "f32[4] @ m{x: shard(0)}");
}

TEST_CASE("infer: rule: elementwise shardings disagree") {
  auto m = mesh({{"x", 2}, {"y", 2}});
  auto r = run(Op::Add, {t(m, {4, 4}, {P::shard(0), P()}), t(m, {4, 4}, {P::shard(1), P()})});
  REQUIRE(!r.ok());
  CHECK(r.error->id == DiagId::ShardingMismatch);
  CHECK(r.error->suggest->str() == "f32[4, 4] @ m{x: shard(0), y: replicate}");
  // sharded vs replicated on the same axis: the replicated side is sliced to match
  r = run(Op::Add, {t(m, {4, 4}, {P::shard(0), P()}), t(m, {4, 4}, {P(), P()})});
  CHECK(r.error->id == DiagId::ShardingMismatch);
  CHECK(r.error->operand == 1);
  // a broadcast (size-1) dim cannot be sharded
  r = run(Op::Add, {t(m, {4, 4}, {P(), P()}), t(m, {1, 4}, {P::shard(0), P()})});
  CHECK(r.error->id == DiagId::ShardingMismatch);
}

TEST_CASE("infer: rule: non-linear op on a partial value") {
  auto m = mesh({{"x", 2}});
  TensorType p = t(m, {4}, {P::partial()});
  for (Op op : {Op::Exp, Op::Relu, Op::Log, Op::Tanh, Op::Sigmoid, Op::Abs}) {
    auto r = run(op, {p});
    REQUIRE(!r.ok());
    CHECK(r.error->id == DiagId::NonLinearPartial);
    CHECK(r.error->suggest->str() == "f32[4] @ m{x: replicate}");
  }
  CHECK(run(Op::Mul, {p, p}).error->id == DiagId::NonLinearPartial);
  CHECK(run(Op::Lt, {p, t(m, {4}, {P()})}).error->id == DiagId::NonLinearPartial);
  // linear ops keep the partial
  CHECK(run(Op::Neg, {p}).results[0].placements[0] == P::partial());
  CHECK(run(Op::Mul, {p, t(m, {4}, {P()})}).results[0].placements[0] == P::partial());
  CHECK(run(Op::Add, {p, p}).results[0].placements[0] == P::partial());
  // the divisor may not be partial
  CHECK(run(Op::Div, {t(m, {4}, {P()}), p}).error->id == DiagId::NonLinearPartial);
}

TEST_CASE("infer: rule: partials with different reductions in one op") {
  auto m = mesh({{"x", 2}});
  auto r = run(Op::Add,
               {t(m, {4}, {P::partial(ReduceOp::Sum)}), t(m, {4}, {P::partial(ReduceOp::Max)})});
  CHECK(r.error->id == DiagId::PartialOpMismatch);
  // maximum of two partial(max) values is a partial(max)
  r = run(Op::Maximum,
          {t(m, {4}, {P::partial(ReduceOp::Max)}), t(m, {4}, {P::partial(ReduceOp::Max)})});
  CHECK(r.results[0].placements[0] == P::partial(ReduceOp::Max));
}

TEST_CASE("infer: rule: partial mixed with a non-partial operand in a sum") {
  auto m = mesh({{"x", 2}});
  auto r = run(Op::Add, {t(m, {4}, {P::partial()}), t(m, {4}, {P()})});
  CHECK(r.error->id == DiagId::PartialMixed);
  CHECK(r.error->operand == 0);
}

TEST_CASE("infer: rule: contraction sharded inconsistently") {
  auto m = mesh({{"x", 2}, {"y", 2}});
  auto r = run(Op::MatMul, {t(m, {4, 4}, {P::shard(1), P()}), t(m, {4, 4}, {P(), P::shard(0)})});
  REQUIRE(!r.ok());
  CHECK(r.error->id == DiagId::ContractionMismatch);
  CHECK(r.error->suggest->str() == "f32[4, 4] @ m{x: shard(0), y: replicate}");
}

TEST_CASE("infer: reductions over a sharded dim give partials") {
  auto m = mesh({{"x", 2}});
  Attrs a;
  a.ints = {0};
  TensorType s = t(m, {4, 3}, {P::shard(0)});
  CHECK(run(Op::ReduceSum, {s}, a).results[0].str() == "f32[3] @ m{x: partial(sum)}");
  CHECK(run(Op::ReduceMax, {s}, a).results[0].str() == "f32[3] @ m{x: partial(max)}");
  CHECK(run(Op::ReduceMin, {s}, a).results[0].str() == "f32[3] @ m{x: partial(min)}");
  a.ints = {1};
  CHECK(run(Op::ReduceSum, {s}, a).results[0].str() == "f32[4] @ m{x: shard(0)}");
}

TEST_CASE("infer: rule: index_select along a sharded dim; sharded ids carry") {
  auto m = mesh({{"x", 2}});
  Attrs a;
  a.ints = {0};
  auto r = run(Op::IndexSelect, {t(m, {6, 4}, {P::shard(0)}), t(m, {5}, {P()}, DType::I32)}, a);
  CHECK(r.error->id == DiagId::ShardedGatherDim);
  r = run(Op::IndexSelect, {t(m, {6, 4}, {P()}), t(m, {5}, {P::shard(0)}, DType::I32)}, a);
  CHECK(r.results[0].str() == "f32[5, 4] @ m{x: shard(0)}");
}

TEST_CASE("infer: rule: reshape may not move sharded data") {
  auto m = mesh({{"x", 4}});
  TensorType given = t(m, {28}, {P()});
  auto r = run(Op::Reshape, {t(m, {7, 4}, {P::shard(0)})}, {}, {given});
  CHECK(r.error->id == DiagId::ReshapeSharded);
  given = t(m, {32}, {P()});
  r = run(Op::Reshape, {t(m, {8, 4}, {P::shard(0)})}, {}, {given});
  REQUIRE(r.ok());
  CHECK(r.results[0].str() == "f32[32] @ m{x: shard(0)}");
  // a sharded minor dim of a merged group cannot carry
  r = run(Op::Reshape, {t(m, {8, 4}, {P::shard(1)})}, {}, {given});
  CHECK(r.error->id == DiagId::ReshapeSharded);
  // ... except on an axis of one device, which holds it whole: replicate
  auto m1 = mesh({{"x", 1}, {"y", 2}});
  r = run(Op::Reshape, {t(m1, {2, 3}, {P::shard(1), P::shard(0)})}, {}, {t(m1, {6}, {P(), P()})});
  REQUIRE(r.ok());
  CHECK(r.results[0].str() == "f32[6] @ m{x: replicate, y: shard(0)}");
}

TEST_CASE("infer: rule: reading a partial value to the host") {
  auto m = mesh({{"x", 2}});
  auto r = run(Op::ToHost, {t(m, {4}, {P::partial()})}, {}, {t(nullptr, {4}, {})});
  CHECK(r.error->id == DiagId::PartialToHost);
  CHECK(run(Op::Print, {t(m, {4}, {P::partial()})}).error->id == DiagId::PartialToHost);
}

TEST_CASE("infer: dtype rules") {
  auto m = mesh({{"x", 2}});
  CHECK(run(Op::Add, {t(m, {4}, {P()}), t(m, {4}, {P()}, DType::I32)}).error->id ==
        DiagId::DTypeMismatch);
  CHECK(run(Op::Exp, {t(m, {4}, {P()}, DType::I32)}).error->id == DiagId::FloatOnly);
  CHECK(run(Op::Lt, {t(m, {4}, {P()}), t(m, {4}, {P()})}).results[0].dtype == DType::Bool);
  // a float-to-int cast of a partial is not linear
  TensorType g = t(m, {4}, {P::partial()}, DType::I32);
  CHECK(run(Op::Cast, {t(m, {4}, {P::partial()})}, {}, {g}).error->id == DiagId::NonLinearPartial);
}

TEST_CASE("infer: relayout keeps mesh, shape and dtype") {
  auto m = mesh({{"x", 2}}), q = mesh({{"t", 2}}, "q");
  CHECK(run(Op::Relayout, {t(m, {4}, {P::shard(0)})}, {}, {t(m, {4}, {P()})}).ok());
  CHECK(run(Op::Relayout, {t(m, {4}, {P::shard(0)})}, {}, {t(q, {4}, {P()})}).error->id ==
        DiagId::RelayoutMesh);
  CHECK(run(Op::Relayout, {t(nullptr, {4}, {})}, {}, {t(m, {4}, {P()})}).error->id ==
        DiagId::RelayoutHost);
}
