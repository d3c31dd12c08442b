// This file implements the builtins that cut and join tensors along a dim:
// `concat`, `stack`, `split`, `chunk` and `pad`. A join is an `index_add` of
// each input into its rows of zeros and a cut a slice (BuildSlice.cpp), so
// placement rules, SPMD lowering, kernels and gradients come from those ops.
// A joined or cut dim that a mesh axis shards is gathered first and sharded
// again on the same axes, in the blocks of the result.
#include "frontend/SliceOps.h"

namespace dt {

using namespace slice;

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

/// Every input of `concat`/`stack` laid out as the first one on every dim but
/// the joined one `d` (-1: none, `stack`): the rows add into zeros of the
/// first one's layout. Said here, naming the input and the relayout to
/// write, not by the index_add inside. False after the error.
static bool sameLayouts(IRBuilder &b, const std::string &name, const std::vector<EV> &xs,
                        const std::vector<const ast::Expr *> &exs, int64_t d) {
  const TensorType t0 = b.typeOf(xs[0].ids[0]);
  auto other = [&](const Placement &p) { return p.isShard() && p.dim != d; };
  for (const EV &x : xs) // a partial max/min joins nothing: join says so
    for (const Placement &p : b.typeOf(x.ids[0]).placements)
      if (p.isPartial() && p.op != ReduceOp::Sum && p.op != ReduceOp::Avg)
        return true;
  for (size_t k = 1; k < xs.size(); ++k) {
    const TensorType t = b.typeOf(xs[k].ids[0]);
    TensorType want = t;
    for (size_t a = 0; a < t.placements.size() && a < t0.placements.size(); ++a) {
      if (other(t0.placements[a]))
        want.placements[a] = t0.placements[a];
      else if (other(t.placements[a]))
        want.placements[a] = Placement::replicate();
    }
    canonicalizeShardOrder(want.placements);
    // A partial input joins only partial ones of the same reduction on that
    // axis: the fix all-reduces whichever input is partial there.
    int partialIn = -1; // 0: the first input, 1: this one
    TensorType whole = t0;
    for (size_t a = 0; a < t.placements.size() && a < t0.placements.size(); ++a) {
      const Placement &p0 = t0.placements[a], &pk = t.placements[a];
      if (p0.isPartial() == pk.isPartial() && (!p0.isPartial() || p0.op == pk.op))
        continue;
      partialIn = pk.isPartial() ? 1 : 0;
      whole = partialIn ? want : t0;
      break;
    }
    if (partialIn >= 0)
      for (size_t a = 0; a < whole.placements.size(); ++a)
        if (whole.placements[a].isPartial() && !(partialIn ? t0 : t).placements[a].isPartial())
          whole.placements[a] = Placement::replicate();
    if (want == t && partialIn < 0)
      continue;
    auto &dg = b.diags().error(DiagId::JoinMismatch, exs[k]->loc,
                               {name, "layout", t0.layoutStr(), t.layoutStr()});
    dg.notes.push_back(
        "the first input is `" + t0.str() + "`, this one `" + t.str() + "`" +
        (d >= 0 && partialIn < 0 ? ": they may differ only along dim " + std::to_string(d) : ""));
    if (partialIn == 0)
      b.conversionHint(dg, exs[0], t0, whole);
    else
      b.conversionHint(dg, exs[k], t, partialIn == 1 ? whole : want);
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
    std::vector<TensorType> ts;
    for (const EV &x : xs)
      ts.push_back(typeOf(x.ids[0]));
    if (!sameWorld(e.loc, exs, ts))
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
    if (!sameLayouts(*this, name, xs, exs, st ? -1 : d))
      return EV::bad();
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
        Attrs pairing; // every dim keeps its shard, even a size-1 one
        for (int64_t i = 0; i < rank; ++i)
          pairing.ints.push_back(i < d ? i : i + 1);
        xs[k] = emit(Op::Reshape, {xs[k]}, {exs[k]}, e.loc, pairing, {t});
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
    diags().error(DiagId::BadCount, sx.loc,
                  {name, "at most 4096 pieces", std::to_string(sizes.size())});
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
