// This file implements the IR builder's calls: builtin functions, calls of
// user functions (instantiated once per distinct argument signature) and
// `grad` / `value_and_grad`, recorded as a `grad` instruction of an instance
// (the pipeline's autodiff step generates the gradient function).
#include "frontend/BuildIR.h"

#include <algorithm>
#include <cmath>

namespace dt {

const ast::Expr *kwarg(const ast::Expr &call, const std::string &name) {
  for (auto &[k, v] : call.kwargs)
    if (k == name)
      return v.get();
  return nullptr;
}

bool onlyLayoutDiffers(const TensorType &a, const TensorType &b) {
  return a.shape == b.shape && a.dtype == b.dtype && !a.isHost() && !b.isHost();
}

/// The compact size text (`H*E`, `(N+1)*2`) of an expression made of names,
/// integers, `+ - * /` and parentheses, as a type's dims are written; whether
/// a name in it is a size symbol of the function being built.
bool IRBuilder::sizeText(const ast::Expr &e, std::string &out, bool &usesSymbol) {
  switch (e.kind) {
  case ast::Expr::Number:
    if (!e.isInt)
      return false;
    out += std::to_string(e.intValue);
    return true;
  case ast::Expr::Name:
    if (e.text.find('.') != std::string::npos || e.text == "...")
      return false;
    usesSymbol |= symbols_ && symbols_->count(e.text);
    out += e.text;
    return true;
  case ast::Expr::Binary: {
    if (e.op != "+" && e.op != "-" && e.op != "*" && e.op != "/")
      return false;
    out += "(";
    if (!sizeText(*e.args[0], out, usesSymbol))
      return false;
    out += e.op;
    if (!sizeText(*e.args[1], out, usesSymbol))
      return false;
    out += ")";
    return true;
  }
  default:
    return false;
  }
}

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

EV IRBuilder::builtin(const std::string &name, const ast::Expr &e, bool &handled) {
  handled = true;
  if (name == "load")
    return loadCall(e, nullptr);
  if (name == "save")
    return saveCall(e);
  if (name == "time")
    return timeCall(e);
  if (name == "load_checkpoint")
    return loadCheckpointCall(e, nullptr);
  if (name == "save_checkpoint")
    return saveCheckpointCall(e);
  auto nargs = [&](size_t lo, size_t hi) {
    if (e.args.size() >= lo && e.args.size() <= hi)
      return true;
    diags().error(DiagId::ArgCount, e.loc,
                  {name,
                   lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi),
                   std::to_string(e.args.size())});
    return false;
  };
  auto arg = [&](size_t i) { return expr(*e.args[i]); };
  auto ex = [&](size_t i) { return e.args[i].get(); };
  static const std::map<std::string, Op> unary = {
      {"exp", Op::Exp},   {"log", Op::Log},         {"sqrt", Op::Sqrt},  {"rsqrt", Op::Rsqrt},
      {"tanh", Op::Tanh}, {"sigmoid", Op::Sigmoid}, {"relu", Op::Relu},  {"abs", Op::Abs},
      {"sin", Op::Sin},   {"cos", Op::Cos},         {"neg", Op::Neg},    {"logical_not", Op::Not},
      {"erf", Op::Erf},   {"log1p", Op::Log1p},     {"expm1", Op::Expm1}};
  static const std::map<std::string, Op> binary = {
      {"maximum", Op::Maximum}, {"minimum", Op::Minimum},   {"pow", Op::Pow},
      {"matmul", Op::MatMul},   {"floordiv", Op::FloorDiv}, {"mod", Op::Mod}};
  // Elementwise functions apply to structs field by field (lift()).
  auto elementwise = [&](Op op, std::vector<EV> xs, std::vector<const ast::Expr *> exs) {
    if (EV r; lift(xs, e.loc, [&](const std::vector<EV> &x) { return emit(op, x, exs, e.loc); },
                   r))
      return r;
    return emit(op, xs, exs, e.loc);
  };
  if (auto it = unary.find(name); it != unary.end()) {
    if (!nargs(1, 1))
      return EV::bad();
    return elementwise(it->second, {arg(0)}, {ex(0)});
  }
  if (auto it = binary.find(name); it != binary.end()) {
    if (!nargs(2, 2))
      return EV::bad();
    if (it->second == Op::MatMul)
      return emit(it->second, {arg(0), arg(1)}, {ex(0), ex(1)}, e.loc);
    return elementwise(it->second, {arg(0), arg(1)}, {ex(0), ex(1)});
  }
  if (EV r; composite(name, e, r, handled))
    return r;
  if (name == "where") {
    if (!nargs(3, 3))
      return EV::bad();
    return elementwise(Op::Select, {arg(0), arg(1), arg(2)}, {ex(0), ex(1), ex(2)});
  }
  if (name == "sum" || name == "mean" || name == "max" || name == "min") {
    if (!nargs(1, 2))
      return EV::bad();
    EV x = arg(0);
    if (x.poison)
      return x;
    if (!x.single()) {
      diags().error<DiagId::NeedsTensor>(e.loc, name);
      return EV::bad();
    }
    const TensorType t = typeOf(x.ids[0]); // a copy: emit() grows the value table
    std::vector<int64_t> dims;
    const ast::Expr *d = kwarg(e, "dim");
    if (!d)
      d = kwarg(e, "dims");
    if (!d && e.args.size() > 1)
      d = ex(1);
    if (d) {
      if (!intList(*this, *d, dims))
        return EV::bad();
    } else {
      for (int i = 0; i < t.rank(); ++i)
        dims.push_back(i);
    }
    for (auto &v : dims) {
      if (v < 0)
        v += t.rank();
      if (v < 0 || v >= t.rank()) {
        diags().error(DiagId::BadDim, e.loc, {std::to_string(v), std::to_string(t.rank())});
        return EV::bad();
      }
    }
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    Attrs a;
    a.ints = dims;
    Op op = name == "max" ? Op::ReduceMax : name == "min" ? Op::ReduceMin : Op::ReduceSum;
    EV r = emit(op, {x}, {ex(0)}, e.loc, a);
    if (name != "mean" || r.poison)
      return r;
    double n = 1;
    for (auto v : dims)
      n *= t.shape[v].isSym() ? 1 : (double)t.shape[v].value;
    if (!isFloat(t.dtype)) {
      diags().error(DiagId::FloatOnly, e.loc, {"mean", t.str()});
      return EV::bad();
    }
    EV scale;
    scale.literal = true;
    scale.number = 1.0 / n;
    return emit(Op::Mul, {r, scale}, {ex(0), nullptr}, e.loc);
  }
  if (name == "einsum") {
    if (e.args.size() < 2 || e.args[0]->kind != ast::Expr::String) {
      diags().error<DiagId::EinsumArgs>(e.loc);
      return EV::bad();
    }
    if (!nargs(2, 3))
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
    return emit(Op::Einsum, ops, exs, e.loc, a);
  }
  if (name == "transpose") {
    if (!nargs(1, 2))
      return EV::bad();
    EV x = arg(0);
    if (!x.single())
      return x.poison ? x : EV::bad();
    int r = typeOf(x.ids[0]).rank();
    Attrs a;
    const ast::Expr *p = kwarg(e, "perm");
    if (!p && e.args.size() > 1)
      p = ex(1);
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
  if (name == "reshape" || name == "broadcast_to") {
    if (!nargs(1, 2))
      return EV::bad();
    EV x = arg(0);
    if (!x.single())
      return x.poison ? x : EV::bad();
    const ast::Expr *s = kwarg(e, "shape");
    if (!s && e.args.size() > 1)
      s = ex(1);
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
  if (name == "index_select" || name == "index_add") {
    bool sel = name == "index_select";
    if (!nargs(sel ? 2 : 3, sel ? 3 : 4))
      return EV::bad();
    Attrs a;
    const ast::Expr *d = kwarg(e, "dim");
    if (!d && e.args.size() > (sel ? 2u : 3u))
      d = ex(sel ? 2 : 3);
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
  if (name == "concat" || name == "stack" || name == "split" || name == "chunk" || name == "pad")
    return cutBuiltin(name, e);
  if (name == "gather" || name == "one_hot")
    return gatherBuiltin(name, e);
  if (name == "to_local" || name == "from_local")
    return localBuiltin(name, e);
  if (name == "dropout" || name == "topk")
    return samplingBuiltin(name, e);
  if (name == "cast") {
    if (!nargs(2, 2))
      return EV::bad();
    EV x = arg(0);
    if (!x.single())
      return x.poison ? x : EV::bad();
    auto dt = e.args[1]->kind == ast::Expr::Name ? dtypeNamed(e.args[1]->text) : std::nullopt;
    if (!dt) {
      diags().error(DiagId::UnknownDType, e.args[1]->loc, {exprText(ex(1))}).hint =
          "element types are `f32`, `f64`, `bf16`, `f16`, `i32`, `i64` and `bool`";
      return EV::bad();
    }
    TensorType g = typeOf(x.ids[0]);
    g.dtype = *dt;
    return emit(Op::Cast, {x}, {ex(0)}, e.loc, {}, {g});
  }
  if (name == "relayout" || name == "distribute") {
    if (!nargs(2, 2))
      return EV::bad();
    EV x = arg(0);
    if (name == "relayout" && x.hasStruct())
      return relayoutStruct(x, e);
    if (!x.single())
      return x.poison ? x : EV::bad();
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
  if (name == "to_host") {
    if (!nargs(1, 1))
      return EV::bad();
    EV x = arg(0);
    if (!x.single())
      return x.poison ? x : EV::bad();
    TensorType g = typeOf(x.ids[0]);
    g.mesh = nullptr;
    g.placements.clear();
    return emit(Op::ToHost, {x}, {ex(0)}, e.loc, {}, {g});
  }
  if (name == "zeros_like" || name == "ones_like" || name == "full_like") {
    if (!nargs(name == "full_like" ? 2 : 1, name == "full_like" ? 2 : 1))
      return EV::bad();
    EV x = arg(0);
    if (!x.single())
      return x.poison ? x : EV::bad();
    TensorType t = typeOf(x.ids[0]);
    EV v;
    v.literal = v.isInt = true;
    v.ival = name == "ones_like";
    v.number = (double)v.ival;
    if (name == "full_like") {
      v = arg(1);
      if (v.poison)
        return v;
      if (!v.literal) {
        diags().error<DiagId::NeedsNumber>(e.args[1]->loc, "full_like");
        return EV::bad();
      }
      if (!literalFits(v, t, e.args[1]->loc))
        return EV::bad();
    }
    Attrs a = constAttrs(v, t.dtype);
    // A partial value's zeros are partial too; ones would not be (sum of ones).
    if (name != "zeros_like")
      for (auto &p : t.placements)
        if (p.isPartial())
          p = Placement::replicate();
    return emit(Op::Fill, {}, {}, e.loc, a, {t});
  }
  if (name == "arange_like") {
    // The index along `dim` of every element of `x`: `x`'s shape and
    // placements (a partial one replicated), i64. Masks in generic code
    // (`arange_like(s, dim=-1) > arange_like(s, dim=-2)`: causal).
    if (!nargs(1, 1))
      return EV::bad();
    EV x = arg(0);
    if (!x.single())
      return x.poison ? x : EV::bad();
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
  if (name == "ones" || name == "zeros" || name == "full" || name == "randn" || name == "rand" ||
      name == "arange") {
    diags().error(DiagId::NeedsType, e.loc, {name + "()"}).hint =
        "write `let x : f32[4, 4] @ m[x, _] = " + name + "(...)`";
    return EV::bad();
  }
  if (name == "grad" || name == "value_and_grad") {
    diags().error<DiagId::GradNotCalled>(e.loc, name);
    return EV::bad();
  }
  handled = false;
  return EV::bad();
}

const ast::LayoutSpec *IRBuilder::subscriptLayout(const ast::Expr &e) {
  if (e.kind != ast::Expr::Subscript || !e.layout)
    return nullptr;
  const std::string &base = e.args[0]->text;
  return st_.meshes.count(base) || !lookup(base) ? e.layout.get() : nullptr;
}

std::vector<std::string> IRBuilder::functionNames() const {
  static const char *const kBuiltins[] = {"relayout",
                                          "distribute",
                                          "to_host",
                                          "to_local",
                                          "from_local",
                                          "ones",
                                          "zeros",
                                          "full",
                                          "randn",
                                          "rand",
                                          "arange",
                                          "exp",
                                          "log",
                                          "sqrt",
                                          "rsqrt",
                                          "tanh",
                                          "sigmoid",
                                          "relu",
                                          "abs",
                                          "sin",
                                          "cos",
                                          "neg",
                                          "maximum",
                                          "minimum",
                                          "pow",
                                          "matmul",
                                          "where",
                                          "sum",
                                          "mean",
                                          "max",
                                          "min",
                                          "einsum",
                                          "transpose",
                                          "reshape",
                                          "broadcast_to",
                                          "index_select",
                                          "index_add",
                                          "cast",
                                          "zeros_like",
                                          "ones_like",
                                          "arange_like",
                                          "full_like",
                                          "grad",
                                          "value_and_grad",
                                          "erf",
                                          "log1p",
                                          "expm1",
                                          "floordiv",
                                          "mod",
                                          "square",
                                          "clamp",
                                          "gelu",
                                          "softplus",
                                          "isnan",
                                          "isfinite",
                                          "argmax",
                                          "argmin",
                                          "cumsum",
                                          "load",
                                          "save",
                                          "time",
                                          "load_checkpoint",
                                          "save_checkpoint",
                                          "concat",
                                          "stack",
                                          "split",
                                          "chunk",
                                          "pad",
                                          "gather",
                                          "one_hot",
                                          "dropout",
                                          "topk"};
  std::vector<std::string> out(std::begin(kBuiltins), std::end(kBuiltins));
  for (auto &[q, fi] : st_.functions) {
    out.push_back(q);
    // A module's own functions are called unqualified inside it.
    if (!modulePrefix_.empty() && q.rfind(modulePrefix_, 0) == 0)
      out.push_back(q.substr(modulePrefix_.size()));
  }
  return out;
}

EV IRBuilder::call(const ast::Expr &e) {
  if (e.kind == ast::Expr::CallExpr) {
    const ast::Expr &callee = *e.args[0];
    std::vector<EV> args;
    std::vector<const ast::Expr *> exs;
    for (size_t i = 1; i < e.args.size(); ++i) {
      args.push_back(expr(*e.args[i]));
      exs.push_back(e.args[i].get());
    }
    if (callee.kind == ast::Expr::Call &&
        (callee.callee == "grad" || callee.callee == "value_and_grad"))
      return gradCall(callee, args, exs, e.loc);
    diags().error<DiagId::CallOfCall>(e.loc);
    return EV::bad();
  }
  // user functions first (a module's own functions, then qualified names)
  FnInfo *fi = nullptr;
  std::string qual;
  for (std::string cand : {modulePrefix_ + e.callee, e.callee}) {
    auto it = st_.functions.find(cand);
    if (it != st_.functions.end()) {
      fi = &it->second;
      qual = cand;
      break;
    }
  }
  if (fi) {
    std::vector<EV> args;
    std::vector<const ast::Expr *> exs;
    for (auto &a : e.args) {
      args.push_back(expr(*a));
      exs.push_back(a.get());
    }
    return callUser(qual, *fi, args, exs, e.loc);
  }
  if (StructRef def = findStruct(e.callee))
    return construct(def, e);
  bool handled = false;
  EV r = builtin(e.callee, e, handled);
  if (handled)
    return r;
  auto &d = diags().error(DiagId::UnknownFunction, e.loc, {e.callee});
  if (didYouMean(d, e.callee, functionNames(), e.loc))
    return EV::bad();
  if (e.callee.find('.') != std::string::npos)
    d.hint = "did you `import " + e.callee.substr(0, e.callee.find('.')) + "`?";
  return EV::bad();
}

} // namespace dt
