// This file implements autodiff's backward table (AutodiffRules.h): per op
// of the global IR, the rule that turns the cotangent of its result into
// cotangents of its operands, or "no gradient" (comparisons, logic, `//`,
// sources). Every rule emits ordinary IR typed by ir/Infer (Backward::op), so
// the placements of a gradient follow from the forward ones; see the header
// of Autodiff.cpp. A new differentiable op adds one member here and one row
// in the table; tests/unit/op_tables_test checks every op is classified.
#include "passes/AutodiffRules.h"

#include <algorithm>
#include <array>

namespace dt {

namespace {
/// Number of IR ops (ir/Ops.def).
constexpr int kNumOps = 0
#define OP(Enum, name, nopnds, nres, cls) +1
#include "ir/Ops.def"
    ;
/// The reshape that puts the reduced dims `dims` of a `rank`-dim operand
/// back as size 1 into its reduction's result: the squeeze form (Reshape's
/// ints: result dim k goes to dim map[k]), so a shard follows its own dim
/// even where size-1 dims leave a plain reshape guessing.
Attrs keepReducedDims(size_t rank, const std::vector<int64_t> &dims) {
  Attrs a;
  for (int64_t d = 0; d < (int64_t)rank; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      a.ints.push_back(d);
  return a;
}

} // namespace

namespace ad {

/// Common placement for adding two cotangents of one value (see the file
/// header of Autodiff.cpp).
TensorType commonType(const TensorType &a, const TensorType &b) {
  TensorType t = a;
  for (size_t i = 0; i < t.placements.size(); ++i) {
    const Placement &pa = a.placements[i], &pb = b.placements[i];
    if (pa == pb)
      continue;
    if (pa.isShard())
      t.placements[i] = pa;
    else if (pb.isShard())
      t.placements[i] = pb;
    else
      t.placements[i] = Placement::partial(ReduceOp::Sum); // replicate + partial
  }
  return t;
}

namespace {

/// One forward instruction's backward: the rules are members, so they read
/// the instruction (`in`, operands `x`, result `out`, cotangent `g`) and the
/// helpers (`acc` accumulates into a float operand, undoing broadcasting;
/// `mask` is a comparison cast to the cotangent's dtype) by name.
struct Rule {
  Differentiator &d;
  Backward &B;
  const Inst &in;
  int g;
  const std::vector<int> &x;
  int out;

  const TensorType &T(int id) const { return d.g_.type(id); }
  void accumulate(int v, int c) { d.accumulate(v, c); }
  /// Whether operand `i` needs a cotangent (it depends on a `wrt` argument).
  bool needs(int i) const { return d.active_.empty() || d.active_[x[i]]; }
  void acc(int operand, int c) {
    if (!isFloat(T(x[operand]).dtype))
      return;
    c = B.unbroadcast(c, T(x[operand]).shape);
    // A replicated operand met a sharded dim of size 1 (a broadcast, as
    // against any sharded dim): its cotangent is whole on every rank too.
    const TensorType xt = T(x[operand]);
    TensorType ct = T(c);
    bool gather = false;
    for (size_t a = 0; a < ct.placements.size() && a < xt.placements.size(); ++a) {
      const Placement &p = ct.placements[a];
      if (p.isShard() && xt.placements[a].isReplicate() && p.dim < (int)ct.shape.size() &&
          !ct.shape[p.dim].isSym() && ct.shape[p.dim].value == 1) {
        ct.placements[a] = Placement::replicate();
        gather = true;
      }
    }
    accumulate(x[operand], gather ? B.relayout(c, ct) : c);
  }
  int mask(Op cmp, int a, int b) { return B.castTo(B.op(cmp, {a, b}), g); }
  // `Add`
  void add() {
    acc(0, g);
    acc(1, g);
  }
  // `Sub`
  void sub() {
    acc(0, g);
    acc(1, B.op(Op::Neg, {g}));
  }
  // `Mul`
  void mul() {
    acc(0, B.op(Op::Mul, {g, x[1]}));
    acc(1, B.op(Op::Mul, {g, x[0]}));
  }
  // `Div`
  void div() {
    acc(0, B.op(Op::Div, {g, x[1]}));
    if (!needs(1)) // a constant divisor (`mean`'s count): no -g*out/x[1]
      return;
    int q = B.op(Op::Div, {B.op(Op::Mul, {g, out}), x[1]});
    acc(1, B.op(Op::Neg, {q}));
  }
  // `Pow`
  void pow() {
    // As PyTorch: an exponent of 0 gives the base no gradient (not
    // 0 * 0^-1 = nan), and a base of 0 with an exponent >= 0 gives the
    // exponent none (not 0 * log 0 = nan).
    // The selects act on the operands, never on the cotangent (which may
    // be partial).
    int bm1 = B.op(Op::Sub, {x[1], B.scalar(1, x[1])});
    bm1 = B.op(Op::Select, {B.op(Op::Eq, {x[1], B.scalar(0, x[1])}), B.scalar(1, bm1), bm1});
    acc(0, B.op(Op::Mul, {g, B.op(Op::Mul, {x[1], B.op(Op::Pow, {x[0], bm1})})}));
    if (isFloat(T(x[1]).dtype)) {
      int flat = B.op(Op::And, {B.op(Op::Eq, {x[0], B.scalar(0, x[0])}),
                                B.op(Op::Ge, {x[1], B.scalar(0, x[1])})});
      int lg = B.op(Op::Log, {x[0]});
      lg = B.op(Op::Select, {flat, B.scalar(0, lg), lg});
      acc(1, B.op(Op::Mul, {g, B.op(Op::Mul, {out, lg})}));
    }
  }
  // `Neg`
  void neg() { acc(0, B.op(Op::Neg, {g})); }
  // `Exp`
  void exp() { acc(0, B.op(Op::Mul, {g, out})); }
  // `Log`
  void log() { acc(0, B.op(Op::Div, {g, x[0]})); }
  // `Sqrt`
  void sqrt() { acc(0, B.op(Op::Div, {B.op(Op::Mul, {g, B.scalar(0.5, g)}), out})); }
  // `Rsqrt`
  void rsqrt() {
    acc(0, B.op(Op::Mul, {g, B.op(Op::Div, {B.op(Op::Mul, {out, B.scalar(-0.5, out)}), x[0]})}));
  }
  // `Tanh`
  void tanh() {
    int one = B.scalar(1, out);
    acc(0, B.op(Op::Mul, {g, B.op(Op::Sub, {one, B.op(Op::Mul, {out, out})})}));
  }
  // `Sigmoid`
  void sigmoid() {
    int one = B.scalar(1, out);
    acc(0, B.op(Op::Mul, {g, B.op(Op::Mul, {out, B.op(Op::Sub, {one, out})})}));
  }
  // `Relu`
  void relu() { acc(0, B.op(Op::Mul, {g, mask(Op::Gt, x[0], B.scalar(0, x[0]))})); }
  // `Abs`
  void abs() {
    int m = mask(Op::Ge, x[0], B.scalar(0, x[0]));
    int sign = B.op(Op::Sub, {B.op(Op::Mul, {m, B.scalar(2, m)}), B.scalar(1, m)});
    acc(0, B.op(Op::Mul, {g, sign}));
  }
  // `Sin`
  void sin() { acc(0, B.op(Op::Mul, {g, B.op(Op::Cos, {x[0]})})); }
  // `Erf` // 2 / sqrt(pi) * exp(-x^2)
  void erf() {
    int e = B.op(Op::Exp, {B.op(Op::Neg, {B.op(Op::Mul, {x[0], x[0]})})});
    acc(0, B.op(Op::Mul, {g, B.op(Op::Mul, {e, B.scalar(1.1283791670955126, e)})}));
  }
  // `Log1p`
  void log1p() { acc(0, B.op(Op::Div, {g, B.op(Op::Add, {x[0], B.scalar(1, x[0])})})); }
  // `Expm1`
  void expm1() { acc(0, B.op(Op::Mul, {g, B.op(Op::Add, {out, B.scalar(1, out)})})); }
  // `Mod` // a - floor(a / b) * b: da = 1, db = -(a // b); `//` is flat
  void mod() {
    acc(0, g);
    acc(1, B.op(Op::Neg, {B.op(Op::Mul, {g, B.op(Op::FloorDiv, {x[0], x[1]})})}));
  }
  // `Cos`
  void cos() { acc(0, B.op(Op::Neg, {B.op(Op::Mul, {g, B.op(Op::Sin, {x[0]})})})); }
  // `Maximum`, `Minimum`
  void maximumMinimum() {
    Op cmp = in.op == Op::Maximum ? Op::Ge : Op::Le;
    int m = mask(cmp, x[0], x[1]);
    acc(0, B.op(Op::Mul, {g, m}));
    acc(1, B.op(Op::Mul, {g, B.op(Op::Sub, {B.scalar(1, m), m})}));
  }
  // `Select`
  void select() {
    int m = B.castTo(x[0], g);
    acc(1, B.op(Op::Mul, {g, m}));
    acc(2, B.op(Op::Mul, {g, B.op(Op::Sub, {B.scalar(1, m), m})}));
  }
  // `Cast`
  void cast() {
    if (isFloat(T(x[0]).dtype)) {
      TensorType t = T(g);
      t.dtype = T(x[0]).dtype;
      accumulate(x[0], B.op(Op::Cast, {g}, {}, {t}));
    }
  }
  // `ReduceSum`
  void reduceSum() {
    // reinsert the reduced dims as size 1, then broadcast
    const TensorType xt = T(x[0]); // a copy: B.op() grows the value table
    TensorType k = T(g);
    k.shape = xt.shape;
    for (auto d : in.attrs.ints)
      k.shape[d] = Dim::lit(1);
    const Attrs keep = keepReducedDims(xt.shape.size(), in.attrs.ints);
    int r = B.op(Op::Reshape, {g}, keep, {k});
    TensorType b = T(r);
    b.shape = xt.shape;
    // Broadcast straight into the operand's layout: an axis that shards a
    // reduced dim of x shards the broadcast too, so each rank fills only
    // its local block (a replicated broadcast would materialize the whole
    // global shape on every rank, then slice it).
    TensorType local = b;
    bool sharded = false;
    for (size_t a = 0; a < local.placements.size() && a < xt.placements.size(); ++a) {
      const Placement &p = xt.placements[a];
      if (p.isShard() && local.placements[a].isReplicate() &&
          std::find(in.attrs.ints.begin(), in.attrs.ints.end(), p.dim) != in.attrs.ints.end()) {
        local.placements[a] = p;
        sharded = true;
      }
    }
    if (sharded && inferTypes(Op::Broadcast, {T(r)}, {}, {local}).ok())
      b = local;
    accumulate(x[0], B.op(Op::Broadcast, {r}, {}, {b}));
  }
  // `ReduceMax`, `ReduceMin`
  void reduceMaxMin() {
    // An operand that is itself partial(max) (a max of a max over a sharded
    // dim): the mask needs its true values, so reduce it first.
    TensorType xFull = T(x[0]);
    for (auto &p : xFull.placements)
      if (p.isPartial())
        p = Placement::replicate();
    const int xv = B.relayoutReusing(x[0], xFull);
    const TensorType xt = T(xv);
    // A max over a sharded dim is partial(max); the mask compares every
    // element with the true maximum, so reduce it first (an all-reduce),
    // the one the forward ran when it relayouts the max the same way.
    TensorType full = T(out);
    for (auto &p : full.placements)
      if (p.isPartial())
        p = Placement::replicate();
    int reduced = B.relayoutReusing(out, full);
    TensorType k = T(reduced);
    k.shape = xt.shape;
    for (auto d : in.attrs.ints)
      k.shape[d] = Dim::lit(1);
    const Attrs keep = keepReducedDims(xt.shape.size(), in.attrs.ints);
    auto shaped = [&](int v) {
      TensorType t = T(v);
      t.shape = k.shape;
      return t;
    };
    // A reduced dim of size 1 that x shards is no broadcast: the size-1
    // operands take x's shard of it (each rank slices its own, no traffic).
    auto likeX = [&](int v) {
      TensorType t = T(v);
      bool moved = false;
      for (size_t a = 0; a < t.placements.size() && a < xt.placements.size(); ++a) {
        const Placement &p = xt.placements[a];
        if (p.isShard() && !xt.shape[p.dim].isSym() && xt.shape[p.dim].value == 1 &&
            t.placements[a].isReplicate() &&
            std::find(in.attrs.ints.begin(), in.attrs.ints.end(), p.dim) != in.attrs.ints.end()) {
          t.placements[a] = p;
          moved = true;
        }
      }
      return moved ? B.relayout(v, t) : v;
    };
    int ro = likeX(B.op(Op::Reshape, {reduced}, keep, {k}));
    int rg = likeX(B.op(Op::Reshape, {g}, keep, {shaped(g)}));
    int m = B.castTo(B.op(Op::Eq, {xv, ro}), g);
    // Ties share the gradient evenly (as JAX, and PyTorch's amax), so the
    // gradient of a max sums to the incoming one: divide by the number of
    // maximal elements, counted over the reduced dims on every rank (an
    // all-reduce when they are sharded). At least 1: a NaN maximum matches
    // no element, and its gradient stays 0 rather than 0 / 0.
    Attrs sumDims;
    sumDims.ints = in.attrs.ints;
    int cnt = B.op(Op::ReduceSum, {m}, sumDims);
    TensorType cntFull = T(cnt);
    for (auto &p : cntFull.placements)
      if (p.isPartial())
        p = Placement::replicate();
    cnt = B.relayout(cnt, cntFull);
    cnt = B.op(Op::Maximum, {cnt, B.scalar(1, cnt)});
    int rc = likeX(B.op(Op::Reshape, {cnt}, keep, {shaped(cnt)}));
    accumulate(x[0], B.op(Op::Mul, {m, B.op(Op::Div, {rg, rc})}));
  }
  // `MatMul`
  void matMul() { d.matmulBack(in, g); }
  // `Einsum`
  void einsum() { d.einsumBack(in.attrs.str, x, g); }
  // `Transpose`
  void transpose() {
    Attrs a;
    a.ints.resize(in.attrs.ints.size());
    for (size_t i = 0; i < in.attrs.ints.size(); ++i)
      a.ints[in.attrs.ints[i]] = (int64_t)i;
    accumulate(x[0], B.op(Op::Transpose, {g}, a));
  }
  // `Reshape`
  void reshape() {
    TensorType t = T(g);
    t.shape = T(x[0]).shape;
    // A reshape with its size-1 dims paired explicitly goes back with the
    // inverse pairing, so a sharded size-1 dim keeps its shard.
    Attrs a;
    if (!in.attrs.ints.empty()) {
      a.ints.assign(T(g).rank(), -1);
      for (size_t k = 0; k < in.attrs.ints.size(); ++k)
        if (in.attrs.ints[k] >= 0)
          a.ints[in.attrs.ints[k]] = (int64_t)k;
    }
    accumulate(x[0], B.op(Op::Reshape, {g}, a, {t}));
  }
  // `Broadcast`
  void broadcast() { acc(0, g); }
  // `IndexSelect`
  void indexSelect() { d.indexSelectBack(in, g); }
  // `IndexAdd`
  void indexAdd() {
    if (isFloat(T(x[0]).dtype))
      accumulate(x[0], g);
    accumulate(x[2], B.op(Op::IndexSelect, {g, x[1]}, in.attrs));
  }
  // `Cumsum`: each input element feeds the sums at and after it (before it,
  // reversed), so its gradient is the running sum of g from the other end,
  // along a dim no axis shards (g may come sharded there: gathered first).
  void cumsum() {
    int64_t dim = in.attrs.ints[0];
    TensorType whole = T(g);
    for (auto &p : whole.placements)
      if (p.isShard() && p.dim == dim)
        p = Placement::replicate();
    Attrs a = in.attrs;
    a.flag = !a.flag;
    accumulate(x[0], B.op(Op::Cumsum, {whole == T(g) ? g : B.relayout(g, whole)}, a));
  }
  // `Relayout`
  void relayout() { accumulate(x[0], B.relayout(g, B.relayoutBackTarget(T(x[0]), T(g)))); }
  // `ToHost`
  void toHost() { accumulate(x[0], B.op(Op::Distribute, {g}, {}, {T(x[0])})); }
  // `Distribute`
  void distribute() {
    TensorType r = T(g);
    for (auto &p : r.placements)
      if (p.isPartial())
        p = Placement::replicate();
    int rg = B.relayout(g, r);
    accumulate(x[0], B.op(Op::ToHost, {rg}, {}, {T(x[0])}));
  }
};

using RuleFn = void (Rule::*)();

/// The backward table, indexed by op: a rule, or null.
struct Table {
  std::array<RuleFn, kNumOps> rule{};
  std::array<BackwardKind, kNumOps> kind{};
};

const Table &table() {
  static const Table t = [] {
    Table t;
    t.kind.fill(BackwardKind::None);
    auto rule = [&](Op op, RuleFn fn) {
      t.rule[(int)op] = fn;
      t.kind[(int)op] = BackwardKind::Rule;
    };
    rule(Op::Add, &Rule::add);
    rule(Op::Sub, &Rule::sub);
    rule(Op::Mul, &Rule::mul);
    rule(Op::Div, &Rule::div);
    rule(Op::Pow, &Rule::pow);
    rule(Op::Neg, &Rule::neg);
    rule(Op::Exp, &Rule::exp);
    rule(Op::Log, &Rule::log);
    rule(Op::Sqrt, &Rule::sqrt);
    rule(Op::Rsqrt, &Rule::rsqrt);
    rule(Op::Tanh, &Rule::tanh);
    rule(Op::Sigmoid, &Rule::sigmoid);
    rule(Op::Relu, &Rule::relu);
    rule(Op::Abs, &Rule::abs);
    rule(Op::Sin, &Rule::sin);
    rule(Op::Erf, &Rule::erf);
    rule(Op::Log1p, &Rule::log1p);
    rule(Op::Expm1, &Rule::expm1);
    rule(Op::Mod, &Rule::mod);
    rule(Op::Cos, &Rule::cos);
    rule(Op::Maximum, &Rule::maximumMinimum);
    rule(Op::Minimum, &Rule::maximumMinimum);
    rule(Op::Select, &Rule::select);
    rule(Op::Cast, &Rule::cast);
    rule(Op::ReduceSum, &Rule::reduceSum);
    rule(Op::ReduceMax, &Rule::reduceMaxMin);
    rule(Op::ReduceMin, &Rule::reduceMaxMin);
    rule(Op::MatMul, &Rule::matMul);
    rule(Op::Einsum, &Rule::einsum);
    rule(Op::Transpose, &Rule::transpose);
    rule(Op::Reshape, &Rule::reshape);
    rule(Op::Broadcast, &Rule::broadcast);
    rule(Op::IndexSelect, &Rule::indexSelect);
    rule(Op::IndexAdd, &Rule::indexAdd);
    rule(Op::Cumsum, &Rule::cumsum);
    rule(Op::Relayout, &Rule::relayout);
    rule(Op::ToHost, &Rule::toHost);
    rule(Op::Distribute, &Rule::distribute);
    // No gradient: piecewise constant, boolean or a source of new values.
    for (Op op :
         {Op::FloorDiv, Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::And, Op::Or, Op::Not,
          Op::Const, Op::Fill, Op::Random, Op::Iota, Op::LoadFile, Op::LoadCheckpoint, Op::Time})
      t.kind[(int)op] = BackwardKind::NoGradient;
    return t;
  }();
  return t;
}

} // namespace

void Differentiator::backward(const Inst &in, int g) {
  auto &B = bw_;
  B.loc_ = in.loc;
  if (!in.results.empty())
    g = align(g, g_.type(in.results[0]));
  const Table &t = table();
  switch (t.kind[(int)in.op]) {
  case BackwardKind::NoGradient:
    return;
  case BackwardKind::None:
    throw NotDiff{std::string("`") + opName(in.op) + "` has no backward rule"};
  case BackwardKind::Rule:
    break;
  }
  Rule r{*this, B, in, g, in.operands, in.results.empty() ? -1 : in.results[0]};
  (r.*t.rule[(int)in.op])();
}

} // namespace ad

BackwardKind backwardKind(Op op) { return ad::table().kind[(int)op]; }

} // namespace dt
