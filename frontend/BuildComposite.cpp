// This file implements the builtins that the IR builder writes as other ops
// (frontend/BuildIR.h `composite`): math functions (`gelu`, `softplus`,
// `clamp`, `square`, `isnan`, `isfinite`), index reductions (`argmax`,
// `argmin`). Being built from checked ops, each one gets its placement rule,
// its SPMD lowering, its kernels on every backend and its gradient from
// theirs. `cumsum` is one op (a scan, linear in its length); it is checked
// here for the messages its builtin call deserves.
#include "frontend/BuildIR.h"

#include <cmath>

namespace dt {

/// A literal float operand for composite builtins.
static EV number(double v) {
  EV n;
  n.literal = true;
  n.number = v;
  return n;
}

/// `t` with every partial placement made replicate.
static TensorType withoutPartials(TensorType t) {
  for (auto &p : t.placements)
    if (p.isPartial())
      p = Placement::replicate();
  return t;
}

TensorType keptDimType(const TensorType &x, int64_t d, DType dt) {
  TensorType r = x;
  r.dtype = dt;
  if (!(r.shape[d] == Dim::lit(1))) {
    r.shape[d] = Dim::lit(1);
    for (auto &p : r.placements)
      if (p.isShard() && p.dim == d)
        p = Placement::replicate();
  }
  return r;
}

/// The `dim=` (keyword or second argument) of `e`, in [0, rank); -1 after
/// reporting an error.
static int64_t dimArgument(IRBuilder &b, const ast::Expr &e, const std::string &name, int rank) {
  bool twice = false;
  const ast::Expr *d = b.argOrKeyword(name, e, 1, "dim", twice);
  if (twice)
    return -1;
  if (!d) {
    if (rank == 1)
      return 0;
    b.diags().error(DiagId::NeedsDim, e.loc, {name});
    return -1;
  }
  EV v = b.expr(*d);
  if (v.poison)
    return -1;
  int64_t i = 0;
  if (!v.literal || !v.isInt) {
    b.diags().error<DiagId::ExpectedInt>(d->loc);
    return -1;
  }
  if (!b.literalInt(v, d->loc, i))
    return -1;
  const int64_t written = i;
  if (i < 0)
    i += rank;
  if (i < 0 || i >= rank) {
    b.diags().error(DiagId::BadDim, d->loc, {std::to_string(written), std::to_string(rank)});
    return -1;
  }
  return i;
}

bool IRBuilder::sameWorld(SrcLoc loc, const std::vector<const ast::Expr *> &exprs,
                          const std::vector<TensorType> &types) {
  // The first distributed operand sets the mesh; a host operand, or one on
  // another mesh, is the error, reported on the user's operands (the inner
  // ops would name their own temporaries).
  auto check = [](const std::vector<TensorType> &ts) -> std::optional<TypeError> {
    int dist = -1, host = -1;
    for (size_t i = 0; i < ts.size(); ++i) {
      if (ts[i].isHost()) {
        host = host < 0 ? (int)i : host;
      } else if (dist < 0) {
        dist = (int)i;
      } else if (!(*ts[i].mesh == *ts[dist].mesh)) {
        TypeError e;
        e.id = DiagId::MeshMismatch;
        e.args = {ts[dist].mesh->name, ts[i].mesh->name};
        e.operand = (int)i;
        return e;
      }
    }
    if (dist < 0 || host < 0)
      return std::nullopt;
    TypeError e;
    e.id = DiagId::HostDistributedMix;
    e.operand = host;
    // The hint distributes the host operand as the distributed one is laid
    // out when their ranks agree (partial parts replicated), else replicated.
    TensorType t = replicatedType(ts[host].dtype, ts[host].shape, ts[dist].mesh);
    if (ts[dist].rank() == ts[host].rank())
      for (size_t a = 0; a < t.placements.size(); ++a)
        if (ts[dist].placements[a].isShard())
          t.placements[a] = ts[dist].placements[a];
    e.suggest = t;
    return e;
  };
  std::optional<TypeError> err = check(types);
  if (!err)
    return true;
  reportTypeError(*err, loc, exprs, types, [&](const std::vector<TensorType> &ts) {
    Inferred r;
    r.error = check(ts);
    return r;
  });
  return false;
}

EV IRBuilder::argReduce(const std::string &name, const ast::Expr &e, EV x, const TensorType &t,
                        int64_t dim, EV among) {
  const ast::Expr *ex = e.args[0].get();
  int64_t d = dim >= 0 ? dim : dimArgument(*this, e, name, t.rank());
  if (d < 0)
    return EV::bad();
  if (t.dtype == DType::Bool) {
    diags().error(DiagId::NumericOnly, e.loc, {name, t.str()}).hint =
        "a bool tensor is not a number: `cast(x, f32)` makes one";
    return EV::bad();
  }
  if (!t.shape[d].isSym() && t.shape[d].value == 0) {
    diags().error(DiagId::EmptyArgReduce, e.loc, {name, std::to_string(d)});
    return EV::bad();
  }
  Attrs dims;
  dims.ints = {d};
  // The extreme value, all-reduced when `d` is sharded, back in `x`'s rank...
  bool isMax = name == "argmax";
  EV xr = x;
  if (!among.ids.empty()) {
    // Elements outside `among` become the dtype's least extreme value, which
    // never beats an element inside; the hit mask below excludes them.
    EV worst;
    worst.literal = true;
    worst.isInt = !isFloat(t.dtype);
    bool i32 = t.dtype == DType::I32;
    worst.ival = isMax ? (i32 ? INT32_MIN : INT64_MIN) : (i32 ? INT32_MAX : INT64_MAX);
    worst.number = worst.isInt ? (double)worst.ival : isMax ? -INFINITY : INFINITY;
    EV w = EV::one(materialize(worst, t, e.loc));
    xr = emit(Op::Select, {among, x, w}, {ex, ex, ex}, e.loc);
  }
  EV m = xr.poison ? xr : emit(isMax ? Op::ReduceMax : Op::ReduceMin, {xr}, {ex}, e.loc, dims);
  if (m.poison)
    return m;
  TensorType k = typeOf(m.ids[0]);
  k.shape = t.shape;
  k.shape[d] = Dim::lit(1);
  m = emit(Op::Reshape, {m}, {ex}, e.loc, {}, {k});
  if (m.poison)
    return m;
  // m takes x's placements but along `d`, where it is broadcast (a size-1
  // dim may not be sharded then), so the comparison below needs no move of
  // x; when `d` has size 1 m has x's very shape and placements.
  TensorType full = keptDimType(t, d, typeOf(m.ids[0]).dtype);
  if (full != typeOf(m.ids[0]))
    m = emit(Op::Relayout, {m}, {ex}, e.loc, {}, {full});
  // ...marks its positions (NaN: max/min propagate it, and only a NaN
  // matches then, as numpy), and the smallest global index among them wins.
  EV hit = emit(Op::Eq, {x, m}, {ex, ex}, e.loc);
  EV nan = emit(Op::Ne, {x, x}, {ex, ex}, e.loc);
  if (hit.poison || nan.poison)
    return EV::bad();
  hit = emit(Op::Or, {hit, nan}, {ex, ex}, e.loc);
  if (!among.ids.empty() && !hit.poison)
    hit = emit(Op::And, {hit, among}, {ex, ex}, e.loc);
  TensorType it = t;
  it.dtype = DType::I64;
  EV idx = emit(Op::Iota, {}, {}, e.loc, dims, {it});
  if (hit.poison || idx.poison)
    return EV::bad();
  EV none;
  none.literal = none.isInt = true;
  none.ival = INT64_MAX;
  none.number = 0x1p63;
  EV big = EV::one(materialize(none, typeOf(idx.ids[0]), e.loc));
  EV sel = emit(Op::Select, {hit, idx, big}, {ex, ex, ex}, e.loc);
  EV r = sel.poison ? sel : emit(Op::ReduceMin, {sel}, {ex}, e.loc, dims);
  if (r.poison)
    return r;
  TensorType rf = withoutPartials(typeOf(r.ids[0]));
  return rf == typeOf(r.ids[0]) ? r : emit(Op::Relayout, {r}, {ex}, e.loc, {}, {rf});
}

EV IRBuilder::cumsum(const ast::Expr &e, EV x, const TensorType &t) {
  const ast::Expr *ex = e.args[0].get();
  int64_t d = dimArgument(*this, e, "cumsum", t.rank());
  if (d < 0)
    return EV::bad();
  if (t.dtype == DType::Bool) {
    diags().error(DiagId::NumericOnly, e.loc, {"cumsum", t.str()}).hint =
        "a bool tensor is not a number: `cast(x, f32)` makes one";
    return EV::bad();
  }
  for (auto &p : t.placements)
    if (p.isShard() && p.dim == d) {
      auto &diag = diags().error(DiagId::CumsumSharded, e.loc, {std::to_string(d), t.str()});
      TensorType r = t;
      for (auto &q : r.placements)
        if (q.isShard() && q.dim == d)
          q = Placement::replicate();
      conversionHint(diag, ex, t, r);
      return EV::bad();
    }
  Attrs a;
  a.ints = {d};
  return emit(Op::Cumsum, {x}, {ex}, e.loc, a);
}

bool IRBuilder::composite(const std::string &name, const ast::Expr &e, EV &out, bool &handled) {
  static const std::map<std::string, size_t> arity = {
      {"square", 1},   {"clamp", 3},  {"gelu", 1},   {"softplus", 1}, {"isnan", 1},
      {"isfinite", 1}, {"argmax", 2}, {"argmin", 2}, {"cumsum", 2}};
  auto it = arity.find(name);
  if (it == arity.end())
    return false;
  handled = true;
  out = EV::bad();
  bool dimmed = name == "argmax" || name == "argmin" || name == "cumsum";
  if (e.args.empty() || e.args.size() > it->second || (!dimmed && e.args.size() != it->second)) {
    diags().error(DiagId::ArgCount, e.loc,
                  {name, std::to_string(it->second), std::to_string(e.args.size())});
    return true;
  }
  EV x = expr(*e.args[0]);
  if (x.poison)
    return true;
  if (!x.single()) {
    diags().error<DiagId::BareNumberArg>(e.args[0]->loc, name);
    return true;
  }
  const ast::Expr *ex = e.args[0].get();
  const TensorType t = typeOf(x.ids[0]); // a copy: emit() grows the value table
  auto op = [&](Op o, std::vector<EV> a) {
    std::vector<const ast::Expr *> exs(a.size(), nullptr);
    exs[0] = ex;
    return emit(o, a, exs, e.loc);
  };
  if (name == "cumsum") {
    out = cumsum(e, x, t);
    return true;
  }
  // Named for the builtin, not for the first op it is built from (cumsum,
  // an einsum, is linear).
  for (auto &p : t.placements)
    if (p.isPartial()) {
      auto &d = diags().error(DiagId::NonLinearPartial, e.loc, {name});
      TensorType r = t;
      for (auto &q : r.placements)
        if (q.isPartial())
          q = Placement::replicate();
      conversionHint(d, ex, t, r);
      return true;
    }
  if (name == "argmax" || name == "argmin") {
    out = argReduce(name, e, x, t);
    return true;
  }
  if ((name == "gelu" || name == "softplus") && !isFloat(t.dtype)) {
    diags().error(DiagId::FloatOnly, e.loc, {name, t.str()});
    return true;
  }
  if (name == "square") {
    out = op(Op::Mul, {x, x});
  } else if (name == "clamp") {
    // minimum(maximum(x, lo), hi): NaN stays NaN; the gradient is 1 on
    // [lo, hi] (bounds included, as PyTorch) and 0 outside.
    EV lo = expr(*e.args[1]), hi = expr(*e.args[2]);
    if (lo.poison || hi.poison)
      return true;
    EV m = emit(Op::Maximum, {x, lo}, {ex, e.args[1].get()}, e.loc);
    out = m.poison ? m : emit(Op::Minimum, {m, hi}, {ex, e.args[2].get()}, e.loc);
  } else if (name == "gelu") {
    // x / 2 * (1 + erf(x / sqrt(2))), exact (not the tanh approximation);
    // gelu(-inf) = 0 rather than -inf * 0.
    EV v = op(Op::Mul, {x, number(0.7071067811865476)});
    v = v.poison ? v : op(Op::Erf, {v});
    v = v.poison ? v : op(Op::Add, {v, number(1)});
    EV h = op(Op::Mul, {x, number(0.5)});
    v = v.poison || h.poison ? EV::bad() : op(Op::Mul, {h, v});
    EV ninf = op(Op::Eq, {x, number(-INFINITY)});
    if (v.poison || ninf.poison)
      return true;
    EV zero = EV::one(materialize(number(0), typeOf(v.ids[0]), e.loc));
    out = op(Op::Select, {ninf, zero, v});
  } else if (name == "softplus") {
    // log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x.
    EV a = op(Op::Abs, {x});
    a = a.poison ? a : op(Op::Neg, {a});
    a = a.poison ? a : op(Op::Exp, {a});
    a = a.poison ? a : op(Op::Log1p, {a});
    EV m = op(Op::Maximum, {x, number(0)});
    out = a.poison || m.poison ? EV::bad() : op(Op::Add, {m, a});
  } else if (name == "isnan") {
    out = op(Op::Ne, {x, x});    // only NaN differs from itself; false on integers
  } else if (isFloat(t.dtype)) { // isfinite
    EV a = op(Op::Abs, {x});
    out = a.poison ? a : op(Op::Lt, {a, number(INFINITY)});
  } else {
    out = op(Op::Eq, {x, x}); // integers are finite
  }
  return true;
}

} // namespace dt
