// The audit of ir/Infer's linearity table, per dtype: for every op the
// checker lets take a `partial` operand, on every dtype and every reduce op,
// applying the op per rank and then reducing must give exactly what reducing
// first and applying the op once gives (the reference kernels on one side,
// the communicators' combine on the other). Operand values are chosen to hit
// the cases where linearity breaks: odd integers under truncating division
// and averages, wrap-around at the integer limits, mixed signs.
// Non-finite factors are a separate contract (IR.h, check_factor): the
// replicated operands here are finite and nonzero.
#include "ir/Infer.h"
#include "runtime/Communicator.h"
#include "runtime/RefKernels.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>

using namespace dt;

namespace {

MeshRef mesh2() {
  auto m = std::make_shared<Mesh>();
  m->name = "m";
  m->axes = {{"x", 2}};
  m->devices = {0, 1};
  return m;
}

constexpr int64_t kN = 4;

TensorType type(DType dt, Placement p, int64_t n = kN) {
  TensorType t = replicatedType(dt, {Dim::lit(n)}, mesh2());
  t.placements = {p};
  return t;
}

/// Values that break linearity when it is claimed wrongly.
HostTensor values(DType dt, std::mt19937_64 &rng, bool factor) {
  static const double fl[] = {1.5, -2.25, 3, 0.5, -7, 10.75, 0, 1e6};
  static const double flFactor[] = {1.5, -2.25, 3, 0.5, -7, 2, 4, -0.125};
  static const int64_t in[] = {1, 3, -5, 7, 2147483647, -2147483647 - 1, 9223372036854775807, -1};
  static const int64_t inFactor[] = {2, 3, -2, 5, 7, -1, 2, 3};
  HostTensor h(dt, {kN});
  for (int64_t i = 0; i < kN; ++i) {
    size_t k = rng() % 8;
    if (isFloat(dt))
      h.set(i, factor ? flFactor[k] : fl[k]);
    else if (dt == DType::I32)
      h.data<int32_t>()[i] = (int32_t)(factor ? inFactor[k] : in[k]);
    else
      h.data<int64_t>()[i] = factor ? inFactor[k] : in[k];
  }
  return h;
}

/// The value of a partial tensor with parts a, b under `op` (the communicator's numerics).
HostTensor combine(const HostTensor &a, const HostTensor &b, ReduceOp op) {
  HostTensor r(a.dtype, a.shape);
  const void *parts[] = {a.raw(), b.raw()};
  reduceMany(r.raw(), parts, 2, a.numel(), a.dtype, op);
  finishAvg(r.raw(), r.numel(), r.dtype, op, 2);
  return r;
}

HostTensor apply(Op op, const std::vector<HostTensor> &xs, DType out) {
  switch (opInfo(op).cls) {
  case OpClass::Elementwise1:
    return op == Op::Cast ? ref::cast(xs[0], out) : ref::unary(op, xs[0], out);
  case OpClass::Elementwise2:
    return ref::binary(op, xs[0], xs[1], out);
  case OpClass::Elementwise3:
    return ref::select(xs[0], xs[1], xs[2], out);
  case OpClass::Reduce:
    return ref::reduce(op, xs[0], {0}, out);
  default:
    return ref::transpose(xs[0], {0});
  }
}

bool same(const HostTensor &a, const HostTensor &b) {
  if (a.numel() != b.numel())
    return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y))
        return false;
    } else if (isFloat(a.dtype) ? std::fabs(x - y) > 1e-4 * (1 + std::fabs(y)) : x != y) {
      return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("linearity audit: every accepted partial operand commutes with the reduction") {
  const std::vector<Op> ops = {Op::Add,       Op::Sub,       Op::Mul,  Op::Div,      Op::Maximum,
                               Op::Minimum,   Op::Pow,       Op::Neg,  Op::Abs,      Op::Relu,
                               Op::Exp,       Op::Select,    Op::Eq,   Op::Lt,       Op::ReduceSum,
                               Op::ReduceMax, Op::ReduceMin, Op::Cast, Op::Transpose};
  const DType dtypes[] = {DType::F32, DType::F64, DType::I32, DType::I64};
  const ReduceOp rops[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};
  std::mt19937_64 rng(12345);
  int accepted = 0;
  for (Op op : ops)
    for (DType dt : dtypes)
      for (DType to : dtypes) {
        if (op != Op::Cast && to != dt)
          continue;
        for (ReduceOp rop : rops) {
          int n = opInfo(op).numOperands;
          int first = op == Op::Select ? 1 : 0;
          // every non-empty set of partial data operands
          for (int mask = 1; mask < (1 << n); ++mask) {
            if (mask & ((1 << first) - 1))
              continue;
            std::vector<TensorType> types;
            for (int i = 0; i < n; ++i) {
              DType t = op == Op::Select && i == 0 ? DType::Bool : dt;
              types.push_back(type(t, (mask >> i) & 1 ? Placement::partial(rop) : Placement()));
            }
            Attrs attrs;
            std::vector<TensorType> given;
            if (opInfo(op).cls == OpClass::Reduce)
              attrs.ints = {0};
            if (op == Op::Transpose)
              attrs.ints = {0};
            if (op == Op::Cast)
              given = {type(to, Placement())};
            Inferred r = inferTypes(op, types, attrs, given);
            if (!r.ok() || !r.results[0].placements[0].isPartial())
              continue;
            ++accepted;
            ReduceOp out = r.results[0].placements[0].op;
            DType rt = r.results[0].dtype;
            for (int trial = 0; trial < 200; ++trial) {
              std::vector<HostTensor> part0, part1, global;
              for (int i = 0; i < n; ++i) {
                if (op == Op::Select && i == 0) {
                  HostTensor c(DType::Bool, {kN});
                  for (int64_t k = 0; k < kN; ++k)
                    c.data<uint8_t>()[k] = rng() & 1;
                  part0.push_back(c), part1.push_back(c), global.push_back(c);
                } else if ((mask >> i) & 1) {
                  HostTensor a = values(dt, rng, false), b = values(dt, rng, false);
                  part0.push_back(a), part1.push_back(b), global.push_back(combine(a, b, rop));
                } else {
                  HostTensor c = values(dt, rng, true);
                  part0.push_back(c), part1.push_back(c), global.push_back(c);
                }
              }
              HostTensor want = apply(op, global, rt);
              HostTensor got = combine(apply(op, part0, rt), apply(op, part1, rt), out);
              INFO(opName(op) << " on " << dtypeName(dt) << " -> " << dtypeName(rt) << ", partial("
                              << reduceOpName(rop) << ") operands mask " << mask << ", trial "
                              << trial);
              REQUIRE(same(got, want));
            }
          }
        }
      }
  CHECK(accepted > 40); // the table is exercised, not vacuously empty
}
