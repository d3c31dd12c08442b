// This file implements `dropout(x, p, seed=s)` and `topk(x, 1, dim=d)` as
// checked ops (like BuildComposite.cpp): placement rules, SPMD lowering,
// kernels and gradients come from the ops they are written with.
//  * dropout: x * where(rand(seed) >= p, 1 / (1 - p), 0). The uniform draw is
//    the layout-invariant `random` source (element i keyed by (seed, i)), so
//    every mesh and layout drops the same elements; the gradient is the same
//    mask times 1 / (1 - p). p = 0 is the identity, p = 1 gives zeros (the
//    factor is 0; a NaN or inf element stays NaN, as PyTorch's x * mask).
//  * topk: k rounds; round r's index is argmax's (argmin's with
//    largest=false) among the elements the earlier rounds did not pick, so
//    the values come sorted (descending; ascending with largest=false), ties
//    give the lower index first and a NaN counts as the most extreme (as
//    max/argmax). The value is x at that index, selected by a one-hot mask and
//    summed over the dim (-0.0 fills the rest, so every value is exact), so
//    the gradient reaches exactly the chosen elements. Over a sharded dim each
//    round all-reduces one candidate per row three times (extreme, index,
//    value): k x 3 rows move, never the dim itself.
#include "frontend/BuildIR.h"

#include <cmath>

namespace dt {

namespace {

EV number(double v) {
  EV n;
  n.literal = true;
  n.number = v;
  return n;
}

TensorType withoutPartials(TensorType t) {
  for (auto &p : t.placements)
    if (p.isPartial())
      p = Placement::replicate();
  return t;
}

} // namespace

EV IRBuilder::samplingBuiltin(const std::string &name, const ast::Expr &e) {
  // dropout(x, p, seed) and topk(x, k, dim): each after x by position or by name.
  const bool isDropout = name == "dropout";
  bool twice = false;
  const ast::Expr *second =
      e.args.empty() ? nullptr : argOrKeyword(name, e, 1, isDropout ? "p" : "k", twice);
  const ast::Expr *third =
      e.args.empty() ? nullptr : argOrKeyword(name, e, 2, isDropout ? "seed" : "dim", twice);
  if (twice)
    return EV::bad();
  if (e.args.empty() || e.args.size() > 3 || !second) {
    diags().error(DiagId::ArgCount, e.loc, {name, "2", std::to_string(e.args.size())}).hint =
        isDropout ? "`dropout(x, p, seed=s)`" : "`topk(x, k)` or `topk(x, k, dim=d)`";
    return EV::bad();
  }
  const ast::Expr *ex = e.args[0].get();
  EV x = expr(*ex);
  if (x.poison)
    return x;
  if (!x.single()) {
    diags().error<DiagId::NeedsTensor>(ex->loc, name);
    return EV::bad();
  }
  const TensorType t = typeOf(x.ids[0]); // a copy: emit() grows the value table
  auto op = [&](Op o, std::vector<EV> a, Attrs at = {}, std::vector<TensorType> given = {}) {
    for (auto &v : a)
      if (v.poison)
        return EV::bad();
    std::vector<const ast::Expr *> exs(a.size(), nullptr);
    if (!exs.empty())
      exs[0] = ex;
    return emit(o, a, exs, e.loc, at, given);
  };
  if (name == "dropout") {
    if (!isFloat(t.dtype)) {
      diags().error(DiagId::FloatOnly, e.loc, {name, t.str()});
      return EV::bad();
    }
    const ast::Expr *px = second;
    EV p = expr(*px);
    if (p.poison)
      return p;
    if (!p.literal || p.isBool || !(p.number >= 0 && p.number <= 1)) {
      diags().error(DiagId::DropoutProb, px->loc, {exprText(px)}).hint =
          "the probability of zeroing an element, a number such as `0.1`";
      return EV::bad();
    }
    const ast::Expr *sx = third;
    if (!sx) {
      diags().error<DiagId::NeedsSeed>(e.loc, "dropout").hint =
          "pass a different seed per step, e.g. `dropout(x, 0.1, seed=step)`";
      return EV::bad();
    }
    int64_t seed = 0;
    int sid = -1;
    if (!intScalar(*sx, "seed", seed, sid))
      return EV::bad();
    Attrs ra;
    ra.str = "uniform";
    // The draw and the comparison with p in f32 whatever x's dtype: in bf16
    // a draw near 1 rounds up to 1.0 and p itself rounds (0.999 -> 1.0), so
    // the kept fraction would not be 1 - p.
    TensorType ut = withoutPartials(t), drawn = ut;
    drawn.dtype = DType::F32;
    if (sid >= 0 && (sid = seedFor(sid, drawn, sx, e.loc)) < 0)
      return EV::bad();
    EV u = sid >= 0 ? emit(Op::Random, {EV::one(sid)}, {sx}, e.loc, ra, {drawn}) : EV::bad();
    if (sid < 0) {
      ra.ints = {seed};
      u = emit(Op::Random, {}, {}, e.loc, ra, {drawn});
    }
    double q = p.number;
    EV keep = op(Op::Ge, {u, number(q)});
    if (keep.poison)
      return keep;
    // 1 / (1 - p) is finite below p = 1; at p = 1 no element is kept.
    double scale = q < 1 ? 1.0 / (1.0 - q) : 0.0;
    EV s = EV::one(materialize(number(scale), ut, e.loc));
    EV z = EV::one(materialize(number(0), ut, e.loc));
    EV factor = op(Op::Select, {keep, s, z});
    return op(Op::Mul, {x, factor});
  }
  // topk(x, k, dim=d): (values, indices), dim d of size k.
  const ast::Expr *kx = second;
  EV k = expr(*kx);
  if (k.poison)
    return k;
  if (!k.literal || !k.isInt) {
    diags().error<DiagId::ExpectedInt>(kx->loc);
    return EV::bad();
  }
  if (t.dtype == DType::Bool) {
    diags().error(DiagId::NumericOnly, e.loc, {name, t.str()}).hint =
        "a bool tensor is not a number: `cast(x, f32)` makes one";
    return EV::bad();
  }
  if (t.rank() == 0) {
    diags().error(DiagId::BadDim, e.loc, {"0", "0"});
    return EV::bad();
  }
  for (auto &p : t.placements)
    if (p.isPartial()) {
      auto &d = diags().error(DiagId::NonLinearPartial, e.loc, {name});
      conversionHint(d, ex, t, withoutPartials(t));
      return EV::bad();
    }
  int64_t d = t.rank() - 1; // the last dim by default, as torch.topk
  const ast::Expr *dx = third;
  if (dx) {
    EV v = expr(*dx);
    if (v.poison)
      return v;
    if (!v.literal || !v.isInt) {
      diags().error<DiagId::ExpectedInt>(dx->loc);
      return EV::bad();
    }
    if (!literalInt(v, dx->loc, d))
      return EV::bad();
    const int64_t written = d;
    if (d < 0)
      d += t.rank();
    if (d < 0 || d >= t.rank()) {
      diags().error(DiagId::BadDim, dx->loc, {std::to_string(written), std::to_string(t.rank())});
      return EV::bad();
    }
  }
  const int64_t kk = k.ival;
  if (kk < 1 || (!t.shape[d].isSym() && kk > t.shape[d].value)) {
    diags()
        .error(DiagId::TopkK, kx->loc, {exprText(kx), std::to_string(d), t.shape[d].str()})
        .hint = "k counts the values kept along the dim: at least 1, at most its size";
    return EV::bad();
  }
  bool largest = true;
  if (const ast::Expr *lx = kwarg(e, "largest")) {
    EV v = expr(*lx);
    if (v.poison)
      return v;
    if (!v.literal || !v.isBool) {
      diags().error(DiagId::NeedsNumberHere, lx->loc, {"largest"}).hint = "`true` or `false`";
      return EV::bad();
    }
    largest = v.ival != 0;
  }
  // `r` (x with dim d reduced away) back in x's rank, dim d of size 1;
  // reshape derives the shard placements.
  auto reshapeKeptDim = [&](EV r) {
    TensorType kt = typeOf(r.ids[0]);
    kt.shape = t.shape;
    kt.shape[d] = Dim::lit(1);
    for (auto &p : kt.placements)
      if (p.isShard())
        p = Placement::replicate();
    return op(Op::Reshape, {r}, {}, {kt});
  };
  TensorType it = t;
  it.dtype = DType::I64;
  Attrs dims;
  dims.ints = {d};
  EV iota = emit(Op::Iota, {}, {}, e.loc, dims, {it});
  // -0.0: x + -0.0 is x for every float (NaN, inf and -0.0 included).
  EV zero = EV::one(materialize(number(-0.0), t, e.loc));
  // x's placements but along d (argReduce does the same for its maximum).
  TensorType same = keptDimType(t, d, DType::I64);
  std::vector<EV> vals, idxs;
  EV left; // the elements no earlier round picked (all in round 0)
  for (int64_t r = 0; r < kk; ++r) {
    EV idx = argReduce(largest ? "argmax" : "argmin", e, x, t, d, left);
    if (idx.poison)
      return idx;
    // The index back in x's rank (dim d of size 1), then a one-hot mask of it.
    EV ik = reshapeKeptDim(idx);
    if (ik.poison)
      return ik;
    if (typeOf(ik.ids[0]) != same)
      ik = op(Op::Relayout, {ik}, {}, {same});
    EV hit = op(Op::Eq, {iota, ik});
    if (hit.poison)
      return hit;
    EV picked = op(Op::Select, {hit, x, zero});
    EV v = op(Op::ReduceSum, {picked}, dims);
    if (v.poison)
      return v;
    v = reshapeKeptDim(v);
    if (v.poison)
      return v;
    TensorType vf = withoutPartials(typeOf(v.ids[0]));
    if (vf != typeOf(v.ids[0]))
      v = op(Op::Relayout, {v}, {}, {vf});
    if (v.poison)
      return v;
    vals.push_back(v);
    idxs.push_back(ik);
    if (r + 1 < kk) {
      EV miss = op(Op::Ne, {iota, ik});
      left = left.ids.empty() ? miss : op(Op::And, {left, miss});
      if (left.poison)
        return left;
    }
  }
  std::vector<const ast::Expr *> exs(kk, ex);
  EV vs = join("topk", vals, exs, d, e.loc), is = join("topk", idxs, exs, d, e.loc);
  if (vs.poison || is.poison)
    return EV::bad();
  EV out;
  out.ids = {vs.ids[0], is.ids[0]};
  return out;
}

} // namespace dt
