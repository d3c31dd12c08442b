// This file implements the builders of the IR builder's single-op builtins
// (reductions, einsum, transpose, reshape, index_select/index_add, cast,
// relayout/distribute, to_host, the `*_like` sources). The builtin table
// (Builtins.cpp) dispatches to them after checking their arity.
#include "frontend/BuildIR.h"
#include "support/LowPrecision.h"

#include <algorithm>
#include <cmath>

namespace dt {

/// Reads an integer list `[0, 1]` or a single integer literal.
static bool intList(IRBuilder &b, const ast::Expr &x, std::vector<int64_t> &out) {
  if (x.kind == ast::Expr::List) {
    for (auto &c : x.args) {
      EV v = b.expr(*c);
      if (v.poison)
        return false;
      if (!v.literal || !v.isInt) {
        b.diags().error<DiagId::ExpectedInt>(c->loc);
        return false;
      }
      int64_t i;
      if (!b.literalInt(v, c->loc, i))
        return false;
      out.push_back(i);
    }
    return true;
  }
  EV v = b.expr(x);
  if (v.poison)
    return false;
  if (!v.literal || !v.isInt) {
    b.diags().error<DiagId::ExpectedIntList>(x.loc);
    return false;
  }
  int64_t i;
  if (!b.literalInt(v, x.loc, i))
    return false;
  out.push_back(i);
  return true;
}

/// `sum`, `mean`, `max`, `min`: reductions over `dim=` (every dim by default).
EV IRBuilder::reduceBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  EV x = arg(0);
  if (x.poison)
    return x;
  if (!x.single())
    return needsTensor(x, e);
  const TensorType t = typeOf(x.ids[0]); // a copy: emit() grows the value table
  std::vector<int64_t> dims;
  const ast::Expr *d = kwarg(e, "dim");
  const ast::Expr *ds = kwarg(e, "dims");
  const ast::Expr *pos = e.args.size() > 1 ? ex(1) : nullptr;
  if (pos && (d || ds) && !(d && ds)) {
    // `sum(a, 1, dim=1)`: the dims by position and by name.
    bool twice = false;
    argOrKeyword(name, e, 1, d ? "dim" : "dims", twice);
    return EV::bad();
  }
  if ((d ? 1 : 0) + (ds ? 1 : 0) + (pos ? 1 : 0) > 1) {
    const ast::Expr *second = d && ds ? ds : pos;
    diags().error(DiagId::DimAndDims, second->loc, {name}).hint =
        "list every dim once: `" + name + "(x, dims=[0, 1])`";
    return EV::bad();
  }
  if (!d)
    d = ds ? ds : pos;
  if (d) {
    if (!intList(*this, *d, dims))
      return EV::bad();
  } else {
    for (int i = 0; i < t.rank(); ++i)
      dims.push_back(i);
  }
  for (auto &v : dims) {
    const int64_t written = v;
    if (v < 0)
      v += t.rank();
    if (v < 0 || v >= t.rank()) {
      diags().error(DiagId::BadDim, e.loc, {std::to_string(written), std::to_string(t.rank())});
      return EV::bad();
    }
  }
  std::sort(dims.begin(), dims.end());
  if (auto twice = std::adjacent_find(dims.begin(), dims.end()); twice != dims.end()) {
    diags().error(DiagId::DimListedTwice, d->loc, {name, std::to_string(*twice)});
    return EV::bad();
  }
  Attrs a;
  a.ints = dims;
  Op op = name == "max" ? Op::ReduceMax : name == "min" ? Op::ReduceMin : Op::ReduceSum;
  if (name != "mean")
    return emit(op, {x}, {ex(0)}, e.loc, a);
  if (!isFloat(t.dtype)) {
    diags().error(DiagId::FloatOnly, e.loc, {"mean", t.str()});
    return EV::bad();
  }
  double n = 1;
  for (auto v : dims)
    n *= t.shape[v].isSym() ? 1 : (double)t.shape[v].value;
  // bf16/f16: the sum and the division run in f32 (the cast fuses into the
  // reduction) and the mean rounds once to the type; a divisor or 1/n held
  // in bf16 would round the count itself (1/13, 4097).
  const bool narrow = t.dtype == DType::BF16 || t.dtype == DType::F16;
  if (narrow) {
    TensorType wide = t;
    wide.dtype = DType::F32;
    x = emit(Op::Cast, {x}, {ex(0)}, e.loc, {}, {wide});
    if (x.poison)
      return x;
  }
  EV r = emit(op, {x}, {ex(0)}, e.loc, a);
  if (r.poison)
    return r;
  // Divide by the count (exact in the type up to 2^24 elements), not multiply
  // by its rounded reciprocal: the mean of 5 values summing to 9 is 1.8, not
  // 1.8000001. The mean of no elements is NaN (0 / 0). Scaling by NaN, not
  // dividing by 0, gives it on any layout: a sharded sum's parts are each 0
  // there, and a partial value times inf is refused at run time (0 * inf).
  EV count;
  count.literal = true;
  count.number = n == 0 ? std::nan("") : n;
  r = emit(n == 0 ? Op::Mul : Op::Div, {r, count}, {ex(0), nullptr}, e.loc);
  if (!narrow || r.poison)
    return r;
  TensorType back = typeOf(r.ids[0]);
  back.dtype = t.dtype;
  return emit(Op::Cast, {r}, {ex(0)}, e.loc, {}, {back});
}

namespace {

/// `spec` with each `...` spelled out in letters the spec does not use, as
/// numpy does: an operand's `...` stands for its dims the letters leave over,
/// the ellipses align from the right, and the result's `...` is the longest of
/// them. Returns false with `error` set on a bad use.
bool expandEllipsis(std::string &spec, const std::vector<int> &ranks, std::string &error) {
  if (spec.find("...") == std::string::npos)
    return true;
  EinsumLetters el = splitEinsum(spec); // ir/Signatures.h
  std::vector<std::string> terms = el.inputs;
  size_t nin = terms.size();
  if (el.explicitOutput)
    terms.push_back(el.output);
  if (nin != ranks.size()) {
    error = "it names " + std::to_string(nin) + " operands, the call passes " +
            std::to_string(ranks.size());
    return false;
  }
  std::string unused;
  for (char c = 'a'; c <= 'z'; ++c)
    unused += c;
  for (char c = 'A'; c <= 'Z'; ++c)
    unused += c;
  for (char c : spec)
    if (auto p = unused.find(c); p != std::string::npos)
      unused.erase(p, 1);
  std::vector<int> count(terms.size(), -1); // dims each `...` stands for
  int longest = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    size_t p = terms[t].find("...");
    if (p == std::string::npos)
      continue;
    if (terms[t].find("...", p + 3) != std::string::npos ||
        terms[t].find('.', p + 3) != std::string::npos) {
      error = "a term has at most one `...`";
      return false;
    }
    if (t == nin)
      continue; // the result's: the longest of the operands'
    int letters = (int)terms[t].size() - 3;
    count[t] = ranks[t] - letters;
    if (count[t] < 0) {
      error = "operand " + std::to_string(t) + " has rank " + std::to_string(ranks[t]) +
              ", fewer dims than the letters beside its `...`";
      return false;
    }
    longest = std::max(longest, count[t]);
  }
  if (longest > (int)unused.size()) {
    error = "`...` stands for more dims than there are free letters";
    return false;
  }
  std::string out;
  for (size_t t = 0; t < terms.size(); ++t) {
    size_t p = terms[t].find("...");
    if (p != std::string::npos) {
      int n = t == nin ? longest : count[t];
      terms[t].replace(p, 3, unused.substr(longest - n, n));
    }
    out += t == 0 ? "" : t == nin ? "->" : ",";
    out += terms[t];
  }
  spec = out;
  return true;
}

} // namespace

/// `einsum("ik,kj->ij", a, b)`; `...` stands for the dims the letters leave
/// over (`einsum("...sd,dhe->...she", x, w)` for any rank of x).
EV IRBuilder::einsumBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  if (e.args.size() < 2 || e.args[0]->kind != ast::Expr::String) {
    diags().error<DiagId::EinsumArgs>(e.loc);
    return EV::bad();
  }
  if (!builtinArgs(name, e, 2, 3))
    return EV::bad();
  Attrs a;
  a.str = e.args[0]->text;
  std::vector<EV> ops;
  std::vector<const ast::Expr *> exs;
  for (size_t i = 1; i < e.args.size(); ++i) {
    ops.push_back(arg(i));
    exs.push_back(ex(i));
  }
  if (ops.size() == 1) {
    // one-operand einsum: a transpose and/or reduction, written as data
    diags().error<DiagId::EinsumOneOperand>(e.loc);
    return EV::bad();
  }
  std::vector<int> ranks;
  for (auto &o : ops) {
    if (o.poison)
      return o;
    ranks.push_back(o.single() ? typeOf(o.ids[0]).rank() : 0);
  }
  std::string why;
  if (!expandEllipsis(a.str, ranks, why)) {
    diags().error(DiagId::BadEinsum, e.args[0]->loc, {e.args[0]->text, why});
    return EV::bad();
  }
  return emit(Op::Einsum, ops, exs, e.loc, a);
}

/// `transpose(x[, perm])` and `transpose(x, dim0=, dim1=)`.
EV IRBuilder::transposeBuiltin(const std::string &, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  EV x = arg(0);
  if (!x.single())
    return needsTensor(x, e);
  int r = typeOf(x.ids[0]).rank();
  Attrs a;
  bool twice = false;
  const ast::Expr *p = argOrKeyword("transpose", e, 1, "perm", twice);
  if (twice)
    return EV::bad();
  const ast::Expr *d0 = kwarg(e, "dim0"), *d1 = kwarg(e, "dim1");
  if (d0 || d1) {
    // `transpose(x, dim0=-2, dim1=-1)` swaps two dims (torch.transpose),
    // negative counting from the end: the same call for any rank.
    std::vector<int64_t> ds;
    if (!d0 || !d1 || p) {
      diags().error<DiagId::TransposeDims>(e.loc);
      return EV::bad();
    }
    if (!intList(*this, *d0, ds) || !intList(*this, *d1, ds))
      return EV::bad();
    for (auto &v : ds) {
      int64_t orig = v;
      if (v < 0)
        v += r;
      if (ds.size() != 2 || v < 0 || v >= r) {
        diags().error(DiagId::BadDim, e.loc, {std::to_string(orig), std::to_string(r)});
        return EV::bad();
      }
    }
    for (int i = 0; i < r; ++i)
      a.ints.push_back(i == ds[0] ? ds[1] : i == ds[1] ? ds[0] : i);
    return emit(Op::Transpose, {x}, {ex(0)}, e.loc, a);
  }
  if (p) {
    if (!intList(*this, *p, a.ints))
      return EV::bad();
  } else {
    for (int i = r - 1; i >= 0; --i)
      a.ints.push_back(i);
  }
  return emit(Op::Transpose, {x}, {ex(0)}, e.loc, a);
}

/// `reshape(x, shape)` and `broadcast_to(x, shape)`; `...` is the batch dims.
EV IRBuilder::reshapeBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  EV x = arg(0);
  if (!x.single())
    return needsTensor(x, e);
  bool twice = false;
  const ast::Expr *s = argOrKeyword(name, e, 1, "shape", twice);
  if (twice)
    return EV::bad();
  if (!s || s->kind != ast::Expr::List) {
    diags().error<DiagId::NeedsShapeList>(e.loc, name);
    return EV::bad();
  }
  Shape shape;
  for (auto &c : s->args) {
    if (c->kind == ast::Expr::Name && c->text == "...") {
      // The batch dims of a rank-generic function: `reshape(m, [..., 1])`.
      if (!batch_) {
        diags().error(DiagId::EllipsisHere, c->loc, {}).hint =
            "`...` in a shape names the batch dims of a function's `x: f32[..., D] @ *` "
            "parameters; write the sizes out here";
        return EV::bad();
      }
      shape.insert(shape.end(), batch_->begin(), batch_->end());
      continue;
    }
    if (c->kind == ast::Expr::Name && symbols_ && symbols_->count(c->text)) {
      shape.push_back(symbols_->at(c->text));
      continue;
    }
    // Size arithmetic on size symbols (`[..., H * E]`) is a size, as in a type.
    std::string text;
    bool usesSymbol = false;
    if (symbols_ && sizeText(*c, text, usesSymbol) && usesSymbol) {
      auto d = sizeOf(text, symbols_, c->loc);
      if (!d)
        return EV::bad();
      shape.push_back(*d);
      continue;
    }
    EV v = expr(*c);
    if (v.poison)
      return v;
    if (!v.literal || !v.isInt || v.ival < 0) {
      diags().error<DiagId::BadShapeEntry>(c->loc);
      return EV::bad();
    }
    int64_t size;
    if (!literalInt(v, c->loc, size))
      return EV::bad();
    shape.push_back(Dim::lit(size));
  }
  TensorType g = typeOf(x.ids[0]);
  g.shape = shape;
  return emit(name == "reshape" ? Op::Reshape : Op::Broadcast, {x}, {ex(0)}, e.loc, {}, {g});
}

/// `index_select(x, ids[, dim])` and `index_add(base, ids, src[, dim])`.
EV IRBuilder::indexBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  bool sel = name == "index_select";
  Attrs a;
  bool twice = false;
  const ast::Expr *d = argOrKeyword(name, e, sel ? 2 : 3, "dim", twice);
  if (twice)
    return EV::bad();
  a.ints = {0};
  if (d) {
    a.ints.clear();
    if (!intList(*this, *d, a.ints))
      return EV::bad();
  }
  if (sel)
    return emit(Op::IndexSelect, {arg(0), arg(1)}, {ex(0), ex(1)}, e.loc, a);
  return emit(Op::IndexAdd, {arg(0), arg(1), arg(2)}, {ex(0), ex(1), ex(2)}, e.loc, a);
}

/// `cast(x, dtype)`.
EV IRBuilder::castBuiltin(const std::string &, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  EV x = arg(0);
  auto dt = e.args[1]->kind == ast::Expr::Name ? dtypeNamed(e.args[1]->text) : std::nullopt;
  if (!dt && !x.poison) {
    diags().error(DiagId::UnknownDType, e.args[1]->loc, {exprText(ex(1))}).hint =
        "element types are `f32`, `f64`, `bf16`, `f16`, `i32`, `i64` and `bool`";
    return EV::bad();
  }
  if (x.literal && dt)
    return castLiteral(x, *dt);
  if (!x.single())
    return needsTensor(x, e);
  TensorType g = typeOf(x.ids[0]);
  g.dtype = *dt;
  return emit(Op::Cast, {x}, {ex(0)}, e.loc, {}, {g});
}

EV IRBuilder::needsTensor(const EV &x, const ast::Expr &call) {
  if (x.poison)
    return EV::bad();
  // A bare number, a tuple or a struct where one tensor goes.
  auto &d = diags().error<DiagId::NeedsTensor>(call.args.empty() ? call.loc : call.args[0]->loc,
                                               call.callee);
  if (x.hasStruct())
    for (const StructRef &p : x.parts)
      if (p && !p->fields.empty()) {
        std::string arg = call.args.empty() ? "s" : exprText(call.args[0].get());
        d.hint = "a struct `" + p->name + "` is not a tensor: take one field, `" + call.callee +
                 "(" + arg + "." + p->fields[0].name + ")`";
        break;
      }
  return EV::bad();
}

EV IRBuilder::castLiteral(const EV &x, DType to) {
  // `cast(0.5, bf16)`, `cast(K, f32)`: the number converted as `cast`
  // converts an element, still a bare literal (it adopts the other
  // operand's layout, as any number does).
  EV r;
  r.literal = true;
  const bool exact = x.isInt || x.isBool;
  const double v = exact ? (double)x.ival : x.numberOdd ? *x.numberOdd : x.number;
  if (to == DType::Bool) {
    r.isBool = true;
    r.ival = exact ? x.ival != 0 : x.number != 0;
    r.number = (double)r.ival;
  } else if (!isFloat(to)) {
    r.isInt = true;
    if (exact)
      r.ival = to == DType::I32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)x.ival : x.ival;
    else // saturating, NaN to 0 (the cast rules of docs/language.md)
      r.ival = std::isnan(x.number) ? 0
               : to == DType::I32   ? (int64_t)std::clamp(std::trunc(x.number), -0x1p31, 0x1p31 - 1)
               : std::trunc(x.number) >= 0x1p63 ? INT64_MAX
               : std::trunc(x.number) < -0x1p63 ? INT64_MIN
                                                : (int64_t)x.number;
    r.number = (double)r.ival;
  } else {
    r.number = to == DType::F64    ? (exact ? (double)x.ival : x.number)
               : to == DType::F32  ? (double)(float)v
               : to == DType::BF16 ? (double)bf16ToFloat(doubleToBf16(v))
                                   : (double)halfToFloat(doubleToHalf(v));
  }
  return r;
}

/// `relayout(x, layout)` and `distribute(x, layout)`.
EV IRBuilder::relayoutBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  EV x = arg(0);
  if (name == "relayout" && x.hasStruct())
    return relayoutStruct(x, e);
  if (!x.single())
    return needsTensor(x, e);
  const ast::Expr &l = *e.args[1];
  const ast::LayoutSpec *spec = l.kind == ast::Expr::Layout      ? l.layout.get()
                                : l.kind == ast::Expr::Subscript ? subscriptLayout(l)
                                                                 : nullptr;
  if (!spec) {
    if (l.kind == ast::Expr::Subscript && l.args[0]->kind == ast::Expr::Name &&
        st_.meshes.count(l.args[0]->text))
      diags().error<DiagId::BadLayoutEntry>(l.loc);
    else
      diags().error<DiagId::NeedsLayoutArg>(l.loc, name);
    return EV::bad();
  }
  const TensorType t = typeOf(x.ids[0]); // a copy: emit() grows the value table
  auto target = applyLayout(*spec, t.dtype, t.shape);
  if (!target)
    return EV::bad();
  if (name == "relayout" && !t.isHost() && !(*t.mesh == *target->mesh)) {
    auto &d = diags().error(DiagId::RelayoutMesh, e.loc, {t.mesh->name, target->mesh->name});
    fixHint(d, &e, conversionText(ex(0), t, *target));
    d.notes.push_back("`to_host` and `distribute` move a value between meshes, through the host");
    return EV::bad();
  }
  return emit(name == "relayout" ? Op::Relayout : Op::Distribute, {x}, {ex(0)}, e.loc, {},
              {*target});
}

/// `to_host(x)`.
EV IRBuilder::toHostBuiltin(const std::string &, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  EV x = arg(0);
  if (!x.single())
    return needsTensor(x, e);
  TensorType g = typeOf(x.ids[0]);
  g.mesh = nullptr;
  g.placements.clear();
  return emit(Op::ToHost, {x}, {ex(0)}, e.loc, {}, {g});
}

/// `zeros_like`, `ones_like`, `full_like(x, v)`: `x`'s shape, type and
/// placements (a partial one replicated, except for zeros). `v` is a number,
/// or a rank-0 tensor (a run-time hyperparameter such as a learning rate),
/// cast to `x`'s type and broadcast. A struct `x` gives a struct of the same
/// type, filled field by field: `full_like(g, lr) * g` scales every field of
/// a model in its own type (bf16 weights, f32 norms) by an f32 `lr`.
EV IRBuilder::fillLikeBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  EV x = arg(0);
  EV v;
  v.literal = v.isInt = true;
  v.ival = name == "ones_like";
  v.number = (double)v.ival;
  if (name == "full_like") {
    v = arg(1);
    if (v.poison)
      return v;
    if (!v.literal &&
        (!v.single() || typeOf(v.ids[0]).rank() != 0 || typeOf(v.ids[0]).dtype == DType::Bool)) {
      auto &d = diags().error<DiagId::NeedsNumber>(e.args[1]->loc, "full_like");
      if (v.single())
        d.notes.push_back("`" + exprText(e.args[1].get()) + "` is `" + typeOf(v.ids[0]).str() +
                          "`; a tensor value must have rank 0");
      return EV::bad();
    }
  }
  auto one = [&](const EV &xi) -> EV {
    if (!xi.single())
      return needsTensor(xi, e);
    TensorType t = typeOf(xi.ids[0]);
    // A partial value's zeros are partial too; ones would not be (sum of ones).
    if (name != "zeros_like")
      for (auto &p : t.placements)
        if (p.isPartial())
          p = Placement::replicate();
    if (v.literal) {
      EV fill = v;
      if (name != "full_like" && t.dtype == DType::Bool)
        fill.isBool = true; // zeros and ones of a bool tensor: false and true
      if (!literalFits(fill, t, e.args.size() > 1 ? e.args[1]->loc : e.loc))
        return EV::bad();
      return emit(Op::Fill, {}, {}, e.loc, constAttrs(fill, t.dtype), {t});
    }
    const ast::Expr *vx = e.args[1].get();
    EV s = v;
    TensorType st = typeOf(s.ids[0]);
    if (st.isHost() && !t.isHost()) {
      st = replicatedType(st.dtype, {}, t.mesh);
      s = emit(Op::Distribute, {s}, {vx}, e.loc, {}, {st});
    } else if (!st.isHost() && (t.isHost() || !(*st.mesh == *t.mesh))) {
      auto &d = t.isHost()
                    ? diags().error<DiagId::HostDistributedMix>(vx->loc)
                    : diags().error(DiagId::MeshMismatch, vx->loc, {t.mesh->name, st.mesh->name});
      d.notes.push_back("`" + exprText(vx) + "` is `" + st.str() + "`, the filled value `" +
                        t.str() + "`");
      std::string fix = t.isHost()
                            ? "to_host(" + exprText(vx) + ")"
                            : "distribute(to_host(" + exprText(vx) + "), " + t.mesh->name + "[])";
      d.hint = "write `" + fix + "`";
      d.fixes.push_back(FixIt{vx->full, fix});
      return EV::bad();
    }
    if (!s.poison && st.dtype != t.dtype) {
      st.dtype = t.dtype;
      s = emit(Op::Cast, {s}, {vx}, e.loc, {}, {st});
    }
    if (s.poison)
      return s;
    return emit(Op::Broadcast, {s}, {vx}, e.loc, {}, {t});
  };
  if (EV r; lift(
          {x}, e.loc, [&](const std::vector<EV> &xs) { return one(xs[0]); }, r))
    return r;
  return one(x);
}

/// `arange_like(x, dim=d)`.
EV IRBuilder::arangeLikeBuiltin(const std::string &name, const ast::Expr &e) {
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  // The index along `dim` of every element of `x`: `x`'s shape and
  // placements (a partial one replicated), i64. Masks in generic code
  // (`arange_like(s, dim=-1) > arange_like(s, dim=-2)`: causal).
  EV x = arg(0);
  if (!x.single())
    return needsTensor(x, e);
  TensorType t = typeOf(x.ids[0]);
  std::vector<int64_t> ds;
  const ast::Expr *d = kwarg(e, "dim");
  if (!d) {
    diags().error<DiagId::NeedsDimArg>(e.loc, name);
    return EV::bad();
  }
  if (!intList(*this, *d, ds))
    return EV::bad();
  int64_t v = ds[0] < 0 ? ds[0] + t.rank() : ds[0];
  if (ds.size() != 1 || v < 0 || v >= t.rank()) {
    diags().error(DiagId::BadDim, e.loc, {std::to_string(ds[0]), std::to_string(t.rank())});
    return EV::bad();
  }
  t.dtype = DType::I64;
  for (auto &pl : t.placements)
    if (pl.isPartial())
      pl = Placement::replicate();
  Attrs a;
  a.ints = {v};
  return emit(Op::Iota, {}, {}, e.loc, a, {t});
}

} // namespace dt
