// This file implements indexing and slicing (`x[2:5, :]`, `x[:, i]`, `x[::2]`)
// and the helpers it shares with the joins (BuildJoin.cpp). A slice is an
// `index_select` of a constant id list, so placement rules, SPMD lowering,
// kernels on every backend and gradients (a slice's gradient is its scatter
// into zeros) come from that op's.
//
// A dim that a mesh axis shards is gathered first (a `relayout` to
// `replicate` on those axes: the all-gather `explain` shows), cut, and
// sharded again on the same axes (no data moves): the result keeps its
// sharding, in the torch.chunk blocks of its own size.
#include "frontend/SliceOps.h"

#include <algorithm>

namespace dt {

namespace slice {

/// The mesh axes that shard dim `d` of `t`.
std::vector<int> axesSharding(const TensorType &t, int64_t d) {
  return t.axesShardingDim((int)d); // major first: reshard keeps the group's order
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
EV reshard(IRBuilder &b, const EV &x, int64_t d, const std::vector<int> &axes, const ast::Expr *ex,
           SrcLoc loc) {
  if (x.poison || axes.empty())
    return x;
  TensorType t = b.typeOf(x.ids[0]);
  for (size_t k = 0; k < axes.size(); ++k) // `axes` major first
    t.placements[axes[k]] = Placement::shard(d, (int)k);
  canonicalizeShardOrder(t.placements);
  return relayoutTo(b, x, t, ex, loc);
}

/// A constant `i64[n]` of `ids` on `like`'s mesh, replicated.
EV idConst(IRBuilder &b, const std::vector<int64_t> &ids, const TensorType &like, SrcLoc loc) {
  TensorType it = replicatedType(DType::I64, {Dim::lit((int64_t)ids.size())}, like.mesh);
  // A long run of evenly spaced ids (a slice, a join's rows) is computed,
  // `start + step * iota`, in a kernel at memory speed: as a constant it
  // was 8 bytes a row carried through every pass and built on the host at
  // ~30 ns a row (a slice of 8M rows: 0.5 s).
  const int64_t n = (int64_t)ids.size();
  bool even = n >= kComputedIds;
  const int64_t step = n >= 2 ? ids[1] - ids[0] : 0;
  for (int64_t i = 2; even && i < n; ++i)
    even = ids[i] - ids[i - 1] == step;
  if (even) {
    Attrs dim;
    dim.ints = {0};
    EV r = b.emit(Op::Iota, {}, {}, loc, dim, {it});
    auto lit = [](int64_t v) {
      EV e;
      e.literal = e.isInt = true;
      e.ival = v;
      e.number = (double)v;
      return e;
    };
    if (step != 1 && !r.poison)
      r = b.emit(Op::Mul, {r, lit(step)}, {nullptr, nullptr}, loc);
    if (ids[0] != 0 && !r.poison)
      r = b.emit(Op::Add, {r, lit(ids[0])}, {nullptr, nullptr}, loc);
    return r;
  }
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

bool affineOf(IRBuilder &b, const ast::Expr &x, Affine &out) {
  using K = ast::Expr::Kind;
  // -a, false when a part has no negation in int64 (INT64_MIN).
  auto negate = [](Affine &a) {
    if (a.c == INT64_MIN)
      return false;
    a.c = -a.c;
    for (auto &[n, k] : a.terms)
      if (k == INT64_MIN)
        return false;
      else
        k = -k;
    return true;
  };
  out = Affine{};
  switch (x.kind) {
  case K::Number:
    out.c = x.intValue;
    return x.isInt;
  case K::Name: {
    if (Binding *v = b.lookup(x.text)) {
      if (v->kind == Binding::Const)
        out.c = v->constant;
      else
        out.terms[x.text] = 1;
      return true;
    }
    return false;
  }
  case K::Unary:
    return x.op == "-" && affineOf(b, *x.args[0], out) && negate(out);
  case K::Binary: {
    Affine a, c;
    if ((x.op != "+" && x.op != "-" && x.op != "*") || !affineOf(b, *x.args[0], a) ||
        !affineOf(b, *x.args[1], c))
      return false;
    if (x.op == "*") {
      if (!a.terms.empty() && !c.terms.empty())
        return false; // not affine
      const Affine &var = a.terms.empty() ? c : a;
      const int64_t k = a.terms.empty() ? a.c : c.c;
      if (__builtin_mul_overflow(var.c, k, &out.c))
        return false;
      for (auto &[n, v] : var.terms)
        if (__builtin_mul_overflow(v, k, &out.terms[n]))
          return false;
    } else {
      if (x.op == "-" && !negate(c))
        return false;
      out = a;
      if (__builtin_add_overflow(out.c, c.c, &out.c))
        return false;
      for (auto &[n, v] : c.terms)
        if (__builtin_add_overflow(out.terms[n], v, &out.terms[n]))
          return false;
    }
    for (auto it = out.terms.begin(); it != out.terms.end();)
      it = it->second == 0 ? out.terms.erase(it) : std::next(it);
    return true;
  }
  default:
    return false;
  }
}

std::vector<int64_t> range(int64_t lo, int64_t n, int64_t step) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < n; ++i)
    r.push_back(lo + i * step);
  return r;
}

} // namespace slice

using namespace slice;

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
      return e.args.size() != 2
                 ? (diags().error<DiagId::TupleOperand>(base.loc, x.ids.size()), EV::bad())
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
      // A size symbol (a generic function checked on its own) takes
      // non-negative bounds with an explicit end; calls check the range.
      bool sym = t.shape[d].isSym();
      if (sym && !s.args[1])
        return (knownSize(*this, t, d, exprText(&e), s.loc), EV::bad());
      int64_t n = sym ? INT64_MAX / 2 : t.shape[d].value;
      int64_t lo = 0, hi = n, step = 1;
      if (s.args[2]) {
        if (!staticInt(*this, *s.args[2], step))
          return EV::bad();
        if (step <= 0) {
          auto &dg = diags().error(DiagId::SliceStep, s.args[2]->loc, {std::to_string(step)});
          dg.hint = step == 0 ? "`a[lo:hi:k]` takes every k-th element, k >= 1: `a[::2]` takes "
                                "every other one"
                              : "negative strides are not supported; slice forward and reverse "
                                "with `index_select` if needed";
          return EV::bad();
        }
      }
      // A run-time start and an end a fixed width after it, `x[t:t + 1]` or
      // `x[i * B:(i + 1) * B]` in a loop: the rows lo + k * step as run-time
      // ids (an id out of range is a run-time error of `index_select`).
      Affine lo0, hi0;
      if (s.args[0] && s.args[1] && affineOf(*this, *s.args[0], lo0) &&
          affineOf(*this, *s.args[1], hi0) && (!lo0.terms.empty() || !hi0.terms.empty())) {
        if (lo0.terms != hi0.terms) {
          auto &dg = diags().error(DiagId::SliceWidthUnknown, s.loc, {exprText(&s)});
          dg.hint = "write the end as the start plus a width known when compiling: `x[t:t + 4]`";
          return EV::bad();
        }
        int64_t width;
        if (sym || __builtin_sub_overflow(hi0.c, lo0.c, &width))
          return (knownSize(*this, t, d, exprText(&e), s.loc), EV::bad());
        int64_t count = width > 0 ? (width - 1) / step + 1 : 0;
        if (count > n) {
          auto &dg = diags().error(DiagId::SliceOutOfRange, s.loc,
                                   {std::to_string(width), std::to_string(d), std::to_string(n)});
          dg.message = "a slice " + std::to_string(width) + " wide does not fit dim " +
                       std::to_string(d) + " of size " + std::to_string(n);
          return EV::bad();
        }
        EV start = expr(*s.args[0]);
        if (start.poison)
          return start;
        // The start has a run-time term (the terms are equal and not
        // empty), so it is no literal. A negative start is out of range:
        // `x[k:k + 3]` with k = -3 is `x[-3:0]`, empty in Python, and no
        // other rows may stand for it.
        EV ids = indexOnMesh(start, t, *s.args[0]);
        if (!ids.poison && typeOf(ids.ids[0]).dtype != DType::I64) {
          TensorType wide = typeOf(ids.ids[0]);
          wide.dtype = DType::I64;
          ids = emit(Op::Cast, {ids}, {s.args[0].get()}, s.loc, {}, {wide});
        }
        if (!ids.poison) {
          TensorType row = typeOf(ids.ids[0]);
          row.shape = {Dim::lit(1)};
          ids = emit(Op::Reshape, {ids}, {s.args[0].get()}, s.loc, {}, {row});
        }
        if (!ids.poison)
          ids = emit(Op::Add, {ids, idConst(*this, range(0, count, step), t, s.loc)},
                     {s.args[0].get(), nullptr}, s.loc);
        if (ids.poison)
          return ids;
        cuts.push_back({d, {}, false, ids});
        continue;
      }
      for (int k = 0; k < 2; ++k) {
        if (!s.args[k])
          continue;
        int64_t v;
        if (!staticInt(*this, *s.args[k], v))
          return EV::bad();
        if (sym && v < 0)
          return (knownSize(*this, t, d, exprText(&e), s.args[k]->loc), EV::bad());
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
    bool sym = t.shape[d].isSym();
    int64_t n = sym ? INT64_MAX / 2 : t.shape[d].value;
    EV iv = expr(s);
    if (iv.poison)
      return iv;
    if (sym && (!iv.literal || !iv.isInt || iv.ival < 0))
      return (knownSize(*this, t, d, exprText(&e), s.loc), EV::bad());
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
  // The reshape pairs the kept dims explicitly: a sharded size-1 slice beside
  // a dropped dim keeps its shard.
  TensorType r = typeOf(x.ids[0]);
  Shape kept;
  Attrs pairing;
  bool dropped = false;
  for (int64_t d = 0; d < r.rank(); ++d) {
    bool drop = false;
    for (auto &c : cuts)
      drop |= c.drop && c.dim == d;
    dropped |= drop;
    pairing.ints.push_back(drop ? -1 : (int64_t)kept.size());
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
  return emit(Op::Reshape, {x}, {&base}, e.loc, pairing, {r});
}

EV IRBuilder::indexOnMesh(EV iv, const TensorType &xt, const ast::Expr &s) {
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
  return iv;
}

EV IRBuilder::dynamicIndex(EV iv, const TensorType &xt, int64_t n, const ast::Expr &s) {
  iv = indexOnMesh(iv, xt, s);
  if (iv.poison)
    return iv;
  // Negative indices count from the end, as static ones do; one below -n
  // stays as written, so the range check names the index the program gave.
  EV lit;
  lit.literal = lit.isInt = true;
  EV zero = lit, size = lit, lowest = lit;
  size.ival = n;
  size.number = (double)n;
  lowest.ival = -n;
  lowest.number = -(double)n;
  EV below = emit(Op::Lt, {iv, zero}, {&s, nullptr}, s.loc);
  EV fromEnd = emit(Op::Ge, {iv, lowest}, {&s, nullptr}, s.loc);
  EV neg = emit(Op::And, {below, fromEnd}, {nullptr, nullptr}, s.loc);
  EV wrapped = emit(Op::Add, {iv, size}, {&s, nullptr}, s.loc);
  iv = emit(Op::Select, {neg, wrapped, iv}, {nullptr, nullptr, &s}, s.loc);
  if (iv.poison)
    return iv;
  TensorType it = typeOf(iv.ids[0]);
  it.shape = {Dim::lit(1)};
  return emit(Op::Reshape, {iv}, {&s}, s.loc, {}, {it});
}

} // namespace dt
