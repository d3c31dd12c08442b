// This file implements indexing and slicing (`x[2:5, :]`, `x[:, i]`, `x[::2]`)
// and the builtins that cut and join tensors along a dim (`concat`, `stack`,
// `split`, `chunk`, `pad`). Each is written as checked ops: a slice is an
// `index_select` of a constant id list, a join an `index_add` of each input
// into zeros, so placement rules, SPMD lowering, kernels on every backend and
// gradients (a slice's gradient is its scatter into zeros) come from theirs.
//
// A dim that a mesh axis shards is gathered first (a `relayout` to
// `replicate` on those axes: the all-gather `explain` shows), cut, and
// sharded again on the same axes (no data moves): the result keeps its
// sharding, in the torch.chunk blocks of its own size.
#include "frontend/BuildIR.h"

#include <cmath>

namespace dt {

namespace {

/// The mesh axes that shard dim `d` of `t`.
std::vector<int> axesSharding(const TensorType &t, int64_t d) {
  std::vector<int> axes;
  for (size_t a = 0; a < t.placements.size(); ++a)
    if (t.placements[a].isShard() && t.placements[a].dim == d)
      axes.push_back((int)a);
  return axes;
}

EV relayoutTo(IRBuilder &b, const EV &x, const TensorType &to, const ast::Expr *ex, SrcLoc loc) {
  if (x.poison || b.typeOf(x.ids[0]) == to)
    return x;
  return b.emit(Op::Relayout, {x}, {ex}, loc, {}, {to});
}

/// `x` with dim `d` on every rank whole (the axes that shard it replicate).
EV unshard(IRBuilder &b, const EV &x, int64_t d, const ast::Expr *ex, SrcLoc loc) {
  if (x.poison)
    return x;
  TensorType t = b.typeOf(x.ids[0]);
  for (int a : axesSharding(t, d))
    t.placements[a] = Placement::replicate();
  return relayoutTo(b, x, t, ex, loc);
}

/// `x` sharded again along `d` on `axes` (a local cut, no communication).
EV reshard(IRBuilder &b, const EV &x, int64_t d, const std::vector<int> &axes,
           const ast::Expr *ex, SrcLoc loc) {
  if (x.poison || axes.empty())
    return x;
  TensorType t = b.typeOf(x.ids[0]);
  for (int a : axes)
    t.placements[a] = Placement::shard(d);
  return relayoutTo(b, x, t, ex, loc);
}

/// A constant `i64[n]` of `ids` on `like`'s mesh, replicated.
EV idConst(IRBuilder &b, const std::vector<int64_t> &ids, const TensorType &like, SrcLoc loc) {
  TensorType it = replicatedType(DType::I64, {Dim::lit((int64_t)ids.size())}, like.mesh);
  Attrs a;
  a.ints = ids;
  return b.emit(Op::Const, {}, {}, loc, a, {it});
}

/// Rows `ids` of `x` (unsharded along `d`) along `d`.
EV pick(IRBuilder &b, const EV &x, int64_t d, const std::vector<int64_t> &ids, const ast::Expr *ex,
        SrcLoc loc) {
  if (x.poison)
    return x;
  const TensorType t = b.typeOf(x.ids[0]);
  bool identity = !t.shape[d].isSym() && (int64_t)ids.size() == t.shape[d].value;
  for (size_t i = 0; identity && i < ids.size(); ++i)
    identity = ids[i] == (int64_t)i;
  if (identity)
    return x;
  EV c = idConst(b, ids, t, loc);
  Attrs a;
  a.ints = {d};
  return c.poison ? c : b.emit(Op::IndexSelect, {x, c}, {ex, nullptr}, loc, a);
}

/// A compile-time integer subscript or bound: a literal, a `let` constant or
/// size arithmetic on them.
bool staticInt(IRBuilder &b, const ast::Expr &x, int64_t &out) {
  EV v = b.expr(x);
  if (v.poison)
    return false;
  if (!v.literal || !v.isInt) {
    b.diags().error<DiagId::BadSubscript>(x.loc);
    return false;
  }
  return b.literalInt(v, x.loc, out);
}

/// The known size of dim `d` of `t`, or -1 after reporting NeedsKnownSize.
int64_t knownSize(IRBuilder &b, const TensorType &t, int64_t d, const std::string &what,
                  SrcLoc loc) {
  if (t.shape[d].isSym()) {
    b.diags().error(DiagId::NeedsKnownSize, loc, {what, std::to_string(d), t.shape[d].str()});
    return -1;
  }
  return t.shape[d].value;
}

/// The `dim=` keyword of a join/cut builtin in [0, rank); `dflt` when absent;
/// -1 after reporting an error.
int64_t dimKeyword(IRBuilder &b, const ast::Expr &e, int64_t rank, int64_t dflt) {
  const ast::Expr *d = kwarg(e, "dim");
  if (!d)
    return dflt;
  int64_t i = 0;
  EV v = b.expr(*d);
  if (v.poison)
    return -1;
  if (!v.literal || !v.isInt) {
    b.diags().error<DiagId::ExpectedInt>(d->loc);
    return -1;
  }
  if (!b.literalInt(v, d->loc, i))
    return -1;
  int64_t j = i < 0 ? i + rank : i;
  if (j < 0 || j >= rank) {
    b.diags().error(DiagId::BadDim, d->loc, {std::to_string(i), std::to_string(rank)});
    return -1;
  }
  return j;
}

/// A list `[2, 3]` of compile-time integers.
bool staticInts(IRBuilder &b, const ast::Expr &x, std::vector<int64_t> &out) {
  if (x.kind != ast::Expr::List) {
    b.diags().error<DiagId::ExpectedIntList>(x.loc);
    return false;
  }
  for (auto &c : x.args) {
    int64_t v;
    if (!staticInt(b, *c, v))
      return false;
    out.push_back(v);
  }
  return true;
}

std::vector<int64_t> range(int64_t lo, int64_t n, int64_t step = 1) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < n; ++i)
    r.push_back(lo + i * step);
  return r;
}

} // namespace

EV IRBuilder::subscript(const ast::Expr &e) {
  const ast::Expr &base = *e.args[0];
  if (base.kind == ast::Expr::Name && !lookup(base.text) && st_.meshes.count(base.text)) {
    diags().error<DiagId::LayoutNotValue>(e.loc);
    return EV::bad();
  }
  EV x = expr(base);
  if (x.poison)
    return x;
  if (!x.literal && x.ids.size() > 1) {
    // `split(x, 2)[0]`: one value of a tuple.
    int64_t k = 0, n = (int64_t)x.ids.size();
    if (e.args.size() != 2 || e.args[1]->kind == ast::Expr::Slice ||
        !staticInt(*this, *e.args[1], k))
      return e.args.size() != 2 ? (diags().error<DiagId::TupleOperand>(base.loc, x.ids.size()),
                                   EV::bad())
                                : EV::bad();
    if (k < -n || k >= n) {
      auto &dg = diags().error(DiagId::IndexOutOfRange, e.args[1]->loc,
                               {std::to_string(k), "0 of the tuple", std::to_string(n)});
      dg.hint = "the tuple has " + std::to_string(n) + " values";
      return EV::bad();
    }
    return EV::one(x.ids[k < 0 ? k + n : k]);
  }
  if (!x.single()) {
    if (x.literal)
      diags().error<DiagId::NeedsTensor>(base.loc, "indexing");
    else
      diags().error<DiagId::TupleOperand>(base.loc, x.ids.size());
    return EV::bad();
  }
  const TensorType t = typeOf(x.ids[0]);
  size_t nsub = e.args.size() - 1;
  if ((int64_t)nsub > t.rank()) {
    auto &d = diags().error(DiagId::TooManyIndices, e.loc,
                            {std::to_string(nsub), std::to_string(t.rank())});
    d.notes.push_back("the value is `" + t.str() + "`");
    return EV::bad();
  }
  // Per dim: the ids it keeps and whether an integer index drops it.
  struct Cut {
    int64_t dim;
    std::vector<int64_t> ids;
    bool drop;
    EV dynamic; ///< run-time ids (i64[1]) instead of `ids`
  };
  std::vector<Cut> cuts;
  for (size_t i = 0; i < nsub; ++i) {
    const ast::Expr &s = *e.args[i + 1];
    int64_t d = (int64_t)i;
    if (s.kind == ast::Expr::Slice) {
      bool full = !s.args[0] && !s.args[1] && !s.args[2];
      if (full)
        continue;
      int64_t n = knownSize(*this, t, d, "slicing", s.loc);
      if (n < 0)
        return EV::bad();
      int64_t lo = 0, hi = n, step = 1;
      if (s.args[2]) {
        if (!staticInt(*this, *s.args[2], step))
          return EV::bad();
        if (step <= 0) {
          auto &dg = diags().error(DiagId::SliceStep, s.args[2]->loc, {std::to_string(step)});
          dg.hint = "negative strides are not supported; slice forward and reverse with "
                    "`index_select` if needed";
          return EV::bad();
        }
      }
      for (int k = 0; k < 2; ++k) {
        if (!s.args[k])
          continue;
        int64_t v;
        if (!staticInt(*this, *s.args[k], v))
          return EV::bad();
        if (v < -n || v > n) {
          auto &dg = diags().error(DiagId::SliceOutOfRange, s.args[k]->loc,
                                   {std::to_string(v), std::to_string(d), std::to_string(n)});
          dg.hint = "slice bounds of this dim run from " + std::to_string(-n) + " to " +
                    std::to_string(n) + " (negative ones count from the end)";
          return EV::bad();
        }
        (k == 0 ? lo : hi) = v < 0 ? v + n : v;
      }
      int64_t count = hi > lo ? (hi - lo + step - 1) / step : 0;
      cuts.push_back({d, range(lo, count, step), false, {}});
      continue;
    }
    if (s.kind == ast::Expr::Group) {
      diags().error<DiagId::BadSubscript>(s.loc);
      return EV::bad();
    }
    int64_t n = knownSize(*this, t, d, "indexing", s.loc);
    if (n < 0)
      return EV::bad();
    EV iv = expr(s);
    if (iv.poison)
      return iv;
    if (!iv.literal) {
      // A run-time index (a loop variable, a rank-0 integer tensor): an
      // out-of-range one is a run-time error of `index_select`.
      EV ids = dynamicIndex(iv, t, n, s);
      if (ids.poison)
        return ids;
      cuts.push_back({d, {}, true, ids});
      continue;
    }
    int64_t v;
    if (!iv.isInt) {
      diags().error<DiagId::BadSubscript>(s.loc);
      return EV::bad();
    }
    if (!literalInt(iv, s.loc, v))
      return EV::bad();
    if (v < -n || v >= n) {
      auto &dg = diags().error(DiagId::IndexOutOfRange, s.loc,
                               {std::to_string(v), std::to_string(d), std::to_string(n)});
      dg.hint = n == 0 ? "the dim is empty: it has no index"
                       : "indices of this dim run from " + std::to_string(-n) + " to " +
                             std::to_string(n - 1) + " (negative ones count from the end)";
      return EV::bad();
    }
    cuts.push_back({d, {v < 0 ? v + n : v}, true, {}});
  }
  // Cut the dims no axis shards first: less data reaches the all-gathers.
  std::stable_sort(cuts.begin(), cuts.end(), [&](const Cut &a, const Cut &b) {
    return axesSharding(t, a.dim).empty() && !axesSharding(t, b.dim).empty();
  });
  for (auto &c : cuts) {
    std::vector<int> axes = axesSharding(typeOf(x.ids[0]), c.dim);
    x = unshard(*this, x, c.dim, &base, e.loc);
    if (!c.dynamic.ids.empty()) {
      Attrs a;
      a.ints = {c.dim};
      x = emit(Op::IndexSelect, {x, c.dynamic}, {&base, nullptr}, e.loc, a);
    } else {
      x = pick(*this, x, c.dim, c.ids, &base, e.loc);
    }
    if (!c.drop)
      x = reshard(*this, x, c.dim, axes, &base, e.loc);
    if (x.poison)
      return x;
  }
  // Integer indices drop their (now size-1, unsharded) dims.
  TensorType r = typeOf(x.ids[0]);
  Shape kept;
  bool dropped = false;
  for (int64_t d = 0; d < r.rank(); ++d) {
    bool drop = false;
    for (auto &c : cuts)
      drop |= c.drop && c.dim == d;
    dropped |= drop;
    if (!drop)
      kept.push_back(r.shape[d]);
  }
  if (!dropped)
    return x;
  r.shape = kept;
  // reshape derives the placements; the given type only carries the shape.
  for (auto &p : r.placements)
    if (p.isShard())
      p = Placement::replicate();
  return emit(Op::Reshape, {x}, {&base}, e.loc, {}, {r});
}

EV IRBuilder::dynamicIndex(EV iv, const TensorType &xt, int64_t n, const ast::Expr &s) {
  if (!iv.single() || typeOf(iv.ids[0]).rank() != 0 ||
      (typeOf(iv.ids[0]).dtype != DType::I32 && typeOf(iv.ids[0]).dtype != DType::I64)) {
    auto &dg = diags().error<DiagId::BadSubscript>(s.loc);
    if (iv.single())
      dg.notes.push_back("`" + exprText(&s) + "` is `" + typeOf(iv.ids[0]).str() + "`");
    return EV::bad();
  }
  TensorType it = typeOf(iv.ids[0]);
  if (it.isHost() && !xt.isHost()) {
    it = replicatedType(it.dtype, {}, xt.mesh);
    iv = emit(Op::Distribute, {iv}, {&s}, s.loc, {}, {it});
  } else if (!it.isHost() && it.hasPartial()) {
    for (auto &p : it.placements)
      p = Placement::replicate();
    iv = emit(Op::Relayout, {iv}, {&s}, s.loc, {}, {it});
  }
  if (iv.poison)
    return iv;
  // Negative indices count from the end, as static ones do.
  EV lit;
  lit.literal = lit.isInt = true;
  EV zero = lit, size = lit;
  size.ival = n;
  size.number = (double)n;
  EV neg = emit(Op::Lt, {iv, zero}, {&s, nullptr}, s.loc);
  EV wrapped = emit(Op::Add, {iv, size}, {&s, nullptr}, s.loc);
  iv = emit(Op::Select, {neg, wrapped, iv}, {nullptr, nullptr, &s}, s.loc);
  if (iv.poison)
    return iv;
  it = typeOf(iv.ids[0]);
  it.shape = {Dim::lit(1)};
  return emit(Op::Reshape, {iv}, {&s}, s.loc, {}, {it});
}

/// Every tensor among the positional arguments of `e` (a tuple counts as its
/// values), with the expression each came from; false after an error.
static bool tensorArgs(IRBuilder &b, const ast::Expr &e, const std::string &name,
                       std::vector<EV> &xs, std::vector<const ast::Expr *> &exs) {
  for (auto &a : e.args) {
    EV v = b.expr(*a);
    if (v.poison)
      return false;
    if (v.literal) {
      b.diags().error<DiagId::NeedsTensor>(a->loc, name);
      return false;
    }
    for (int id : v.ids) {
      xs.push_back(EV::one(id));
      exs.push_back(a.get());
    }
  }
  if (xs.empty()) {
    b.diags().error<DiagId::JoinNeedsInputs>(e.loc, name);
    return false;
  }
  return true;
}

EV IRBuilder::join(const std::string &name, std::vector<EV> xs,
                   const std::vector<const ast::Expr *> &exs, int64_t d, SrcLoc loc) {
  const TensorType t0 = typeOf(xs[0].ids[0]);
  int64_t total = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const TensorType t = typeOf(xs[k].ids[0]);
    auto mismatch = [&](const std::string &what, const std::string &a, const std::string &b2) {
      auto &dg = diags().error(DiagId::JoinMismatch, exs[k]->loc, {name, what, a, b2});
      dg.notes.push_back("the first input is `" + t0.str() + "`, this one `" + t.str() + "`");
      return EV::bad();
    };
    if (t.dtype != t0.dtype)
      return mismatch("dtype", dtypeName(t0.dtype), dtypeName(t.dtype));
    if (t.rank() != t0.rank())
      return mismatch("rank", std::to_string(t0.rank()), std::to_string(t.rank()));
    for (int64_t i = 0; i < t.rank(); ++i)
      if (i != d && t.shape[i] != t0.shape[i])
        return mismatch("dim " + std::to_string(i), t0.shape[i].str(), t.shape[i].str());
    for (auto &p : t.placements)
      if (p.isPartial() && p.op != ReduceOp::Sum && p.op != ReduceOp::Avg) {
        // Rows are added into zeros, which only a partial sum allows.
        auto &dg = diags().error(DiagId::NonLinearPartial, exs[k]->loc, {name});
        TensorType r = t;
        for (auto &q : r.placements)
          if (q.isPartial())
            q = Placement::replicate();
        conversionHint(dg, exs[k], t, r);
        return EV::bad();
      }
    int64_t n = knownSize(*this, t, d, name, exs[k]->loc);
    if (n < 0)
      return EV::bad();
    total += n;
  }
  if (xs.size() == 1)
    return xs[0];
  std::vector<int> axes = axesSharding(t0, d);
  for (size_t k = 0; k < xs.size(); ++k) {
    xs[k] = unshard(*this, xs[k], d, exs[k], loc);
    if (xs[k].poison)
      return EV::bad();
  }
  // Each input added into its rows of zeros; -0.0 keeps every float (NaN,
  // inf and -0.0 too) exactly as it was.
  TensorType bt = typeOf(xs[0].ids[0]);
  bt.shape[d] = Dim::lit(total);
  EV zero;
  zero.literal = true;
  zero.isInt = !isFloat(bt.dtype);
  zero.number = isFloat(bt.dtype) ? -0.0 : 0;
  EV r = emit(Op::Fill, {}, {}, loc, constAttrs(zero, bt.dtype), {bt});
  Attrs a;
  a.ints = {d};
  int64_t off = 0;
  for (size_t k = 0; k < xs.size() && !r.poison; ++k) {
    int64_t n = typeOf(xs[k].ids[0]).shape[d].value;
    EV ids = idConst(*this, range(off, n), bt, loc);
    r = emit(Op::IndexAdd, {r, ids, xs[k]}, {nullptr, nullptr, exs[k]}, loc, a);
    off += n;
  }
  return reshard(*this, r, d, axes, exs[0], loc);
}

EV IRBuilder::cutBuiltin(const std::string &name, const ast::Expr &e) {
  const size_t want = 2; // pad, split, chunk
  auto argCount = [&](size_t n) {
    diags().error(DiagId::ArgCount, e.loc,
                  {name, std::to_string(n), std::to_string(e.args.size())});
    return EV::bad();
  };
  if (name == "concat" || name == "stack") {
    std::vector<EV> xs;
    std::vector<const ast::Expr *> exs;
    if (!tensorArgs(*this, e, name, xs, exs))
      return EV::bad();
    int64_t rank = typeOf(xs[0].ids[0]).rank();
    bool st = name == "stack";
    int64_t d = dimKeyword(*this, e, st ? rank + 1 : rank, 0);
    if (d < 0)
      return EV::bad();
    if (!st && rank == 0) {
      diags().error(DiagId::BadDim, e.loc, {"0", "0"});
      return EV::bad();
    }
    if (st) {
      // A new size-1 dim at d on each input, then a concat along it.
      const TensorType t0 = typeOf(xs[0].ids[0]);
      for (size_t k = 0; k < xs.size(); ++k) {
        TensorType t = typeOf(xs[k].ids[0]);
        std::string what, was, is;
        if (t.rank() != rank)
          what = "rank", was = std::to_string(rank), is = std::to_string(t.rank());
        for (int64_t i = 0; what.empty() && i < rank; ++i)
          if (t.shape[i] != t0.shape[i])
            what = "dim " + std::to_string(i), was = t0.shape[i].str(), is = t.shape[i].str();
        if (!what.empty()) {
          diags().error(DiagId::JoinMismatch, exs[k]->loc, {name, what, was, is});
          return EV::bad();
        }
        t.shape.insert(t.shape.begin() + d, Dim::lit(1));
        for (auto &p : t.placements)
          if (p.isShard())
            p = Placement::replicate();
        xs[k] = emit(Op::Reshape, {xs[k]}, {exs[k]}, e.loc, {}, {t});
        if (xs[k].poison)
          return EV::bad();
      }
    }
    return join(name, xs, exs, d, e.loc);
  }
  if (e.args.size() != want)
    return argCount(want);
  EV x = expr(*e.args[0]);
  if (x.poison)
    return x;
  if (!x.single()) {
    diags().error<DiagId::NeedsTensor>(e.args[0]->loc, name);
    return EV::bad();
  }
  const ast::Expr *ex = e.args[0].get();
  const TensorType t = typeOf(x.ids[0]);
  if (name == "pad") {
    std::vector<int64_t> widths;
    if (!staticInts(*this, *e.args[1], widths))
      return EV::bad();
    const ast::Expr *dk = kwarg(e, "dim");
    int64_t d0 = 0, nd = t.rank();
    if (dk) {
      d0 = dimKeyword(*this, e, t.rank(), 0);
      if (d0 < 0)
        return EV::bad();
      nd = 1;
    }
    if ((int64_t)widths.size() != 2 * nd) {
      auto &dg = diags().error(DiagId::BadPadWidths, e.args[1]->loc,
                               {std::to_string(2 * nd), std::to_string(widths.size())});
      dg.hint = dk ? "with `dim=` the widths are `[lo, hi]` for that one dim"
                   : "the widths are `[lo0, hi0, lo1, hi1, ...]`, dims in order; or name one "
                     "dim with `dim=`";
      return EV::bad();
    }
    for (auto w : widths)
      if (w < 0) {
        auto &dg = diags().error(DiagId::BadCount, e.args[1]->loc,
                                 {"pad", "widths of 0 or more", std::to_string(w)});
        dg.hint = "cut with a slice `x[lo:hi]` instead";
        return EV::bad();
      }
    EV v;
    v.literal = v.isInt = true;
    if (const ast::Expr *vk = kwarg(e, "value")) {
      v = expr(*vk);
      if (v.poison)
        return v;
      if (!v.literal) {
        diags().error<DiagId::NeedsNumber>(vk->loc, "pad");
        return EV::bad();
      }
      if (!literalFits(v, t, vk->loc))
        return EV::bad();
    }
    for (int64_t k = 0; k < nd && !x.poison; ++k) {
      int64_t d = d0 + k, lo = widths[2 * k], hi = widths[2 * k + 1];
      if (lo == 0 && hi == 0)
        continue;
      TensorType xt = typeOf(x.ids[0]);
      // The padding blocks take x's placements, its dim d whole; a partial
      // sum's fill keeps the value on one rank (LocalOps), so it sums to v.
      for (int a : axesSharding(xt, d))
        xt.placements[a] = Placement::replicate();
      std::vector<EV> parts;
      std::vector<const ast::Expr *> pexs;
      for (int64_t w : {lo, int64_t(-1), hi}) {
        if (w == 0)
          continue;
        if (w < 0) {
          parts.push_back(x);
        } else {
          TensorType ft = xt;
          ft.shape[d] = Dim::lit(w);
          parts.push_back(emit(Op::Fill, {}, {}, e.loc, constAttrs(v, t.dtype), {ft}));
          if (parts.back().poison)
            return EV::bad();
        }
        pexs.push_back(ex);
      }
      // join keeps the sharding of the first part: x's.
      std::vector<int> axes = axesSharding(typeOf(x.ids[0]), d);
      x = reshard(*this, join(name, parts, pexs, d, e.loc), d, axes, ex, e.loc);
    }
    return x;
  }
  // split / chunk
  int64_t d = dimKeyword(*this, e, t.rank(), 0);
  if (d < 0)
    return EV::bad();
  if (t.rank() == 0) {
    diags().error(DiagId::BadDim, e.loc, {"0", "0"});
    return EV::bad();
  }
  int64_t n = knownSize(*this, t, d, name, e.loc);
  if (n < 0)
    return EV::bad();
  std::vector<int64_t> sizes;
  const ast::Expr &sx = *e.args[1];
  if (name == "chunk") {
    int64_t k;
    if (!staticInt(*this, sx, k))
      return EV::bad();
    if (k <= 0 || k > 4096) {
      diags().error(DiagId::BadCount, sx.loc, {"chunk", "1 to 4096 chunks", std::to_string(k)});
      return EV::bad();
    }
    for (int64_t i = 0; i < k; ++i)
      sizes.push_back(chunkRange(n, k, i).second);
  } else if (sx.kind == ast::Expr::List) {
    if (!staticInts(*this, sx, sizes))
      return EV::bad();
    int64_t sum = 0;
    for (auto s : sizes) {
      if (s < 0) {
        diags().error(DiagId::BadCount, sx.loc, {"split", "sizes of 0 or more", std::to_string(s)});
        return EV::bad();
      }
      sum += s;
    }
    if (sizes.empty() || sum != n) {
      auto &dg = diags().error(DiagId::SplitSizes, sx.loc,
                               {std::to_string(sum), std::to_string(d), std::to_string(n)});
      dg.notes.push_back("the value is `" + t.str() + "`");
      return EV::bad();
    }
  } else {
    int64_t size;
    if (!staticInt(*this, sx, size))
      return EV::bad();
    if (size <= 0) {
      diags().error(DiagId::BadCount, sx.loc, {"split", "a positive size", std::to_string(size)});
      return EV::bad();
    }
    for (int64_t off = 0; off < n; off += size)
      sizes.push_back(std::min(size, n - off));
    if (sizes.empty())
      sizes.push_back(0);
  }
  if (sizes.size() > 4096) {
    diags().error(DiagId::BadCount, sx.loc, {name, "at most 4096 pieces",
                                             std::to_string(sizes.size())});
    return EV::bad();
  }
  std::vector<int> axes = axesSharding(t, d);
  EV whole = unshard(*this, x, d, ex, e.loc);
  EV out;
  int64_t off = 0;
  for (auto s : sizes) {
    EV piece = reshard(*this, pick(*this, whole, d, range(off, s), ex, e.loc), d, axes, ex, e.loc);
    if (piece.poison)
      return piece;
    out.ids.push_back(piece.ids[0]);
    off += s;
  }
  return out;
}

} // namespace dt
