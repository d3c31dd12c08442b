// This file implements `one_hot(ids, n)` and `gather(x, ids, dim=d)` (cross-
// entropy with integer labels) as checked ops: a comparison of the ids with
// an `iota`, and a masked sum over the gathered dim. Placement rules, SPMD
// lowering, kernels and gradients come from those ops; a gathered dim that a
// mesh axis shards (a vocabulary-parallel logit) costs one all-reduce.
#include "frontend/BuildIR.h"

namespace dt {

namespace {

bool isIntegerType(DType t) { return t == DType::I32 || t == DType::I64; }

TensorType insertDim(TensorType t, int64_t at, Dim size) {
  t.shape.insert(t.shape.begin() + at, size);
  for (auto &p : t.placements)
    if (p.isShard() && p.dim >= at)
      p.dim += 1; // keeps its place in a multi-axis group
  return t;
}

} // namespace

EV IRBuilder::gatherBuiltin(const std::string &name, const ast::Expr &e) {
  if (e.args.size() != 2) {
    diags().error(DiagId::ArgCount, e.loc, {name, "2", std::to_string(e.args.size())});
    return EV::bad();
  }
  bool oneHot = name == "one_hot";
  EV a = expr(*e.args[0]);
  if (a.poison)
    return a;
  if (!a.single()) {
    diags().error<DiagId::NeedsTensor>(e.args[0]->loc, name);
    return EV::bad();
  }
  const ast::Expr *ax = e.args[0].get(), *bx = e.args[1].get();
  if (oneHot) {
    // one_hot(ids, n) = cast(ids[..., None] == iota(n)): an id outside
    // [0, n) gives a row of zeros.
    const TensorType it = typeOf(a.ids[0]);
    if (!isIntegerType(it.dtype)) {
      diags().error(DiagId::IntegerOnly, ax->loc, {name, it.str()});
      return EV::bad();
    }
    if (it.hasPartial()) {
      auto &dg = diags().error(DiagId::NonLinearPartial, e.loc, {name});
      TensorType r = it;
      for (auto &p : r.placements)
        if (p.isPartial())
          p = Placement::replicate();
      conversionHint(dg, ax, it, r);
      return EV::bad();
    }
    EV nv = expr(*bx);
    if (nv.poison)
      return nv;
    int64_t n = 0;
    if (!nv.literal || !nv.isInt || !literalInt(nv, bx->loc, n) || n < 0) {
      if (!nv.literal || !nv.isInt || n < 0)
        diags().error(DiagId::BadCount, bx->loc,
                      {name, "a class count of 0 or more", exprText(bx)});
      return EV::bad();
    }
    DType dt = DType::F32;
    if (const ast::Expr *dk = kwarg(e, "dtype")) {
      auto d = dk->kind == ast::Expr::Name ? dtypeNamed(dk->text) : std::nullopt;
      if (!d) {
        diags().error(DiagId::UnknownDType, dk->loc, {exprText(dk)});
        return EV::bad();
      }
      dt = *d;
    }
    TensorType col = insertDim(it, it.rank(), Dim::lit(1));
    for (auto &p : col.placements)
      if (p.isShard())
        p = Placement::replicate(); // reshape derives them
    EV ids = emit(Op::Reshape, {a}, {ax}, e.loc, {}, {col});
    TensorType io = insertDim(it, it.rank(), Dim::lit(n));
    Attrs d;
    d.ints = {it.rank()};
    EV iota = emit(Op::Iota, {}, {}, e.loc, d, {io});
    EV hit =
        ids.poison || iota.poison ? EV::bad() : emit(Op::Eq, {ids, iota}, {ax, nullptr}, e.loc);
    if (hit.poison || dt == DType::Bool)
      return hit;
    TensorType r = typeOf(hit.ids[0]);
    r.dtype = dt;
    return emit(Op::Cast, {hit}, {ax}, e.loc, {}, {r});
  }
  // gather(x, ids, dim=d): out[.., k, ..] = x[.., ids[.., k, ..], ..] along d,
  // ids of x's rank and sizes but along d.
  EV ids = expr(*bx);
  if (ids.poison)
    return ids;
  if (!ids.single()) {
    diags().error<DiagId::NeedsTensor>(bx->loc, name);
    return EV::bad();
  }
  const TensorType xt = typeOf(a.ids[0]), it = typeOf(ids.ids[0]);
  if (!sameWorld(e.loc, {ax, bx}, {xt, it}))
    return EV::bad();
  if (!isIntegerType(it.dtype)) {
    diags().error(DiagId::IntegerOnly, bx->loc, {name, it.str()});
    return EV::bad();
  }
  if (xt.dtype == DType::Bool) {
    diags().error(DiagId::NumericOnly, e.loc, {name, xt.str()}).hint =
        "a bool tensor is not a number: `cast(x, f32)` makes one";
    return EV::bad();
  }
  for (const TensorType *t : {&xt, &it})
    if (t->hasPartial()) {
      auto &dg = diags().error(DiagId::NonLinearPartial, e.loc, {name});
      TensorType r = *t;
      for (auto &p : r.placements)
        if (p.isPartial())
          p = Placement::replicate();
      conversionHint(dg, t == &xt ? ax : bx, *t, r);
      return EV::bad();
    }
  int64_t d = 0;
  if (const ast::Expr *dk = kwarg(e, "dim")) {
    EV v = expr(*dk);
    if (v.poison)
      return v;
    if (!v.literal || !v.isInt || !literalInt(v, dk->loc, d)) {
      if (!v.literal || !v.isInt)
        diags().error<DiagId::ExpectedInt>(dk->loc);
      return EV::bad();
    }
    const int64_t written = d;
    if (d < 0)
      d += xt.rank();
    if (d < 0 || d >= xt.rank()) {
      diags().error(DiagId::BadDim, dk->loc, {std::to_string(written), std::to_string(xt.rank())});
      return EV::bad();
    }
  } else if (xt.rank() == 0) {
    diags().error(DiagId::BadDim, e.loc, {"0", "0"});
    return EV::bad();
  }
  if (it.rank() != xt.rank()) {
    diags().error(DiagId::JoinMismatch, bx->loc,
                  {name, "rank", std::to_string(xt.rank()), std::to_string(it.rank())});
    return EV::bad();
  }
  for (int64_t i = 0; i < xt.rank(); ++i)
    if (i != d && it.shape[i] != xt.shape[i]) {
      diags().error(DiagId::JoinMismatch, bx->loc,
                    {name, "dim " + std::to_string(i), xt.shape[i].str(), it.shape[i].str()});
      return EV::bad();
    }
  // The ids follow x's layout on the other dims and are whole along d (they
  // are small: labels), so each rank compares its ids with its part of x.
  {
    TensorType want = it;
    for (size_t q = 0; q < xt.placements.size(); ++q) {
      const Placement &p = xt.placements[q];
      want.placements[q] = p.isShard() && p.dim != d ? p : Placement::replicate();
    }
    if (want != it) {
      ids = emit(Op::Relayout, {ids}, {bx}, e.loc, {}, {want});
      if (ids.poison)
        return ids;
    }
  }
  const TensorType it2 = typeOf(ids.ids[0]);
  // ids [.., K, ..] -> [.., K, 1, ..] compared with an iota [.., K, N, ..]
  // (sharded along N as x is along d) selects x [.., 1, N, ..]; summed over N.
  TensorType col = insertDim(it2, d + 1, Dim::lit(1));
  for (auto &p : col.placements)
    if (p.isShard())
      p = Placement::replicate();
  EV idc = emit(Op::Reshape, {ids}, {bx}, e.loc, {}, {col});
  TensorType io = insertDim(it2, d + 1, xt.shape[d]);
  for (size_t q = 0; q < xt.placements.size(); ++q)
    if (xt.placements[q].isShard() && xt.placements[q].dim == d)
      io.placements[q] = Placement::shard(d + 1, xt.placements[q].order);
  Attrs ad;
  ad.ints = {d + 1};
  EV iota = emit(Op::Iota, {}, {}, e.loc, ad, {io});
  EV hit = idc.poison || iota.poison ? EV::bad() : emit(Op::Eq, {idc, iota}, {bx, nullptr}, e.loc);
  TensorType xr = insertDim(xt, d, Dim::lit(1));
  for (auto &p : xr.placements)
    if (p.isShard())
      p = Placement::replicate();
  EV xe = emit(Op::Reshape, {a}, {ax}, e.loc, {}, {xr});
  if (hit.poison || xe.poison)
    return EV::bad();
  // -0.0 off the selected element keeps every float exactly (NaN, -0.0).
  EV zero;
  zero.literal = true;
  zero.isInt = !isFloat(xt.dtype);
  zero.number = isFloat(xt.dtype) ? -0.0 : 0;
  EV z = EV::one(materialize(zero, typeOf(xe.ids[0]), e.loc));
  EV sel = emit(Op::Select, {hit, xe, z}, {bx, ax, nullptr}, e.loc);
  if (sel.poison)
    return sel;
  Attrs rd;
  rd.ints = {d + 1};
  EV r = emit(Op::ReduceSum, {sel}, {ax}, e.loc, rd);
  if (r.poison)
    return r;
  // A gathered dim sharded across ranks leaves a partial sum: reduce it, so
  // the result is a plain value (one all-reduce, shown by `explain`).
  TensorType rf = typeOf(r.ids[0]);
  for (auto &p : rf.placements)
    if (p.isPartial())
      p = Placement::replicate();
  return rf == typeOf(r.ids[0]) ? r : emit(Op::Relayout, {r}, {ax}, e.loc, {}, {rf});
}

} // namespace dt
