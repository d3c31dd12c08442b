// This file implements the IR builder's expressions: literals, names,
// operators, the builtin functions and initializers. Every op goes through
// emit(), which asks ir/Infer for the result type and reports type errors.
#include "frontend/BuildIR.h"

#include <cmath>
#include <cstdio>
#include <functional>

namespace dt {

namespace {

const std::map<std::string, Op> kOperators = {
    {"+", Op::Add},  {"-", Op::Sub}, {"*", Op::Mul},  {"/", Op::Div}, {"@", Op::MatMul},
    {"**", Op::Pow}, {"==", Op::Eq}, {"!=", Op::Ne},  {"<", Op::Lt},  {"<=", Op::Le},
    {">", Op::Gt},   {">=", Op::Ge}, {"&&", Op::And}, {"||", Op::Or},
};

double foldBinary(const std::string &op, double a, double b, bool isInt) {
  if (op == "+")
    return a + b;
  if (op == "-")
    return a - b;
  if (op == "*")
    return a * b;
  if (op == "/")
    return isInt ? (b == 0 ? 0 : std::trunc(a / b)) : a / b;
  if (op == "**")
    return std::pow(a, b);
  if (op == "==")
    return a == b;
  if (op == "!=")
    return a != b;
  if (op == "<")
    return a < b;
  if (op == "<=")
    return a <= b;
  if (op == ">")
    return a > b;
  if (op == ">=")
    return a >= b;
  if (op == "&&")
    return a != 0 && b != 0;
  if (op == "||")
    return a != 0 || b != 0;
  return 0;
}

} // namespace

static std::string formatLiteral(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int IRBuilder::materialize(const EV &lit, const TensorType &like, SrcLoc loc) {
  TensorType t = replicatedType(like.dtype, {}, like.mesh);
  if (lit.isBool)
    t.dtype = DType::Bool;
  Inst in;
  in.op = Op::Const;
  in.attrs.floats = {lit.number};
  in.loc = loc;
  int id = fn().newValue(t);
  in.results = {id};
  blk().insts.push_back(std::move(in));
  return id;
}

EV IRBuilder::emit(Op op, const std::vector<EV> &operands,
                   const std::vector<const ast::Expr *> &exprs, SrcLoc loc, Attrs attrs,
                   std::vector<TensorType> given) {
  for (auto &o : operands)
    if (o.poison)
      return EV::bad();
  // Bare literals adopt the dtype and mesh of the first typed operand.
  const TensorType *like = nullptr;
  for (auto &o : operands)
    if (!o.literal && o.ids.size() == 1) {
      like = &typeOf(o.ids[0]);
      break;
    }
  std::vector<int> ids;
  std::vector<TensorType> types;
  for (auto &o : operands) {
    int id;
    if (o.literal && like && !isFloat(like->dtype) && like->dtype != DType::Bool &&
        o.number != (double)(int64_t)o.number) {
      auto &d = diags().error(
          DiagId::DTypeMismatch, loc,
          {opName(op), dtypeName(like->dtype), "the literal " + formatLiteral(o.number)});
      d.hint = "write an integer, or `cast` the tensor to `f32` first";
      return EV::bad();
    }
    if (o.literal) {
      TensorType host = replicatedType(o.isBool  ? DType::Bool
                                       : o.isInt ? DType::I64
                                                 : DType::F32,
                                       {}, nullptr);
      id = materialize(o, like ? *like : host, loc);
    } else if (o.ids.size() != 1) {
      diags().error<DiagId::TupleOperand>(loc, o.ids.size());
      return EV::bad();
    } else {
      id = o.ids[0];
    }
    ids.push_back(id);
    types.push_back(typeOf(id));
  }
  Inferred inf = inferTypes(op, types, attrs, given);
  if (!inf.ok()) {
    reportTypeError(*inf.error, loc, exprs, types, [&](const std::vector<TensorType> &ts) {
      return inferTypes(op, ts, attrs, given);
    });
    return EV::bad();
  }
  Inst in;
  in.op = op;
  in.operands = ids;
  in.attrs = std::move(attrs);
  in.loc = loc;
  EV out;
  for (auto &t : inf.results) {
    int id = fn().newValue(t);
    in.results.push_back(id);
    out.ids.push_back(id);
  }
  blk().insts.push_back(std::move(in));
  return out;
}

EV IRBuilder::expr(const ast::Expr &e) {
  using K = ast::Expr::Kind;
  switch (e.kind) {
  case K::Number: {
    EV v;
    v.literal = true;
    v.number = e.number;
    v.isInt = e.isInt;
    return v;
  }
  case K::Bool: {
    EV v;
    v.literal = true;
    v.isBool = true;
    v.number = e.boolValue ? 1 : 0;
    return v;
  }
  case K::Name: {
    Binding *b = lookup(e.text);
    if (!b) {
      if (st_.functions.count(e.text) || st_.functions.count(modulePrefix_ + e.text))
        diags().error<DiagId::FunctionNotValue>(e.loc, e.text);
      else if (st_.meshes.count(e.text))
        diags().error<DiagId::MeshNotValue>(e.loc, e.text);
      else
        didYouMean(diags().error(DiagId::UnknownName, e.loc, {e.text}), e.text, namesInScope(),
                   e.full);
      return EV::bad();
    }
    if (b->kind == Binding::Const) {
      EV v;
      v.literal = true;
      v.isInt = true;
      v.number = b->constant;
      return v;
    }
    if (b->id < 0)
      return EV::bad();
    return EV::one(b->id);
  }
  case K::List:
    return tensorLiteral(e, nullptr);
  case K::Unary: {
    EV a = expr(*e.args[0]);
    if (a.poison)
      return a;
    if (a.literal) {
      if (e.op == "-")
        a.number = -a.number;
      else
        a.number = a.number == 0;
      return a;
    }
    return emit(e.op == "-" ? Op::Neg : Op::Not, {a}, {e.args[0].get()}, e.loc);
  }
  case K::Binary:
    return binary(e);
  case K::Call:
  case K::CallExpr:
    return call(e);
  case K::String:
    diags().error<DiagId::StringNotValue>(e.loc);
    return EV::bad();
  case K::Layout:
    diags().error<DiagId::LayoutNotValue>(e.loc);
    return EV::bad();
  case K::Index:
    diags().error<DiagId::IndexingUnsupported>(e.loc);
    return EV::bad();
  }
  return EV::bad();
}

EV IRBuilder::binary(const ast::Expr &e) {
  EV a = expr(*e.args[0]);
  EV b = expr(*e.args[1]);
  if (a.poison || b.poison)
    return EV::bad();
  if (a.literal && b.literal) {
    EV r;
    r.literal = true;
    r.isInt = a.isInt && b.isInt && e.op != "**";
    r.isBool = (a.isBool && b.isBool) || e.op == "==" || e.op == "!=" || e.op == "<" ||
               e.op == "<=" || e.op == ">" || e.op == ">=" || e.op == "&&" || e.op == "||";
    r.number = foldBinary(e.op, a.number, b.number, r.isInt);
    return r;
  }
  auto it = kOperators.find(e.op);
  if (it == kOperators.end()) {
    diags().error<DiagId::UnknownOperator>(e.loc, e.op);
    return EV::bad();
  }
  return emit(it->second, {a, b}, {e.args[0].get(), e.args[1].get()}, e.loc);
}

EV IRBuilder::tensorLiteral(const ast::Expr &e, const TensorType *t) {
  // Flatten nested lists and infer the shape.
  std::vector<double> data;
  std::vector<int64_t> shape;
  bool allInt = true, bad = false;
  std::function<void(const ast::Expr &, size_t)> walk = [&](const ast::Expr &x, size_t depth) {
    if (bad)
      return;
    if (x.kind == ast::Expr::List) {
      if (depth == shape.size())
        shape.push_back((int64_t)x.args.size());
      else if (depth > shape.size() || shape[depth] != (int64_t)x.args.size()) {
        diags().error<DiagId::RaggedLiteral>(x.loc);
        bad = true;
        return;
      }
      for (auto &c : x.args)
        walk(*c, depth + 1);
      return;
    }
    EV v = expr(x);
    if (v.poison) {
      bad = true;
      return;
    }
    if (!v.literal || depth != shape.size()) {
      diags().error<DiagId::BadLiteralElement>(x.loc);
      bad = true;
      return;
    }
    allInt &= v.isInt || v.isBool;
    data.push_back(v.number);
  };
  walk(e, 0);
  if (bad)
    return EV::bad();
  Shape s;
  for (auto d : shape)
    s.push_back(Dim::lit(d));
  TensorType type = t ? *t : replicatedType(allInt ? DType::I64 : DType::F32, s, nullptr);
  if (type.shape != s) {
    diags().error(DiagId::LiteralShape, e.loc, {shapeStr(s), shapeStr(type.shape)});
    return EV::bad();
  }
  Attrs attrs;
  attrs.floats = std::move(data);
  return emit(Op::Const, {}, {}, e.loc, std::move(attrs), {type});
}

EV IRBuilder::initializer(const ast::Expr &init, const TensorType &t) {
  if (init.kind == ast::Expr::List)
    return tensorLiteral(init, &t);
  if (init.kind == ast::Expr::Number || init.kind == ast::Expr::Bool ||
      (init.kind == ast::Expr::Unary && init.args[0]->kind == ast::Expr::Number)) {
    EV v = expr(init);
    if (v.poison)
      return v;
    if (v.literal) {
      Attrs a;
      a.floats = {v.number};
      return emit(Op::Fill, {}, {}, init.loc, a, {t});
    }
  }
  if (init.kind == ast::Expr::Call) {
    const std::string &c = init.callee;
    Attrs a;
    auto numberArg = [&](const char *kw, double dflt) -> std::optional<double> {
      const ast::Expr *x = kwarg(init, kw);
      if (!x && !init.args.empty())
        x = init.args[0].get();
      if (!x)
        return dflt;
      EV v = expr(*x);
      if (v.poison)
        return std::nullopt;
      if (!v.literal) {
        diags().error<DiagId::NeedsNumberHere>(x->loc, c);
        return std::nullopt;
      }
      return v.number;
    };
    if (c == "ones" || c == "zeros") {
      a.floats = {c == "ones" ? 1.0 : 0.0};
      return emit(Op::Fill, {}, {}, init.loc, a, {t});
    }
    if (c == "full") {
      auto v = numberArg("value", 0);
      if (!v)
        return EV::bad();
      a.floats = {*v};
      return emit(Op::Fill, {}, {}, init.loc, a, {t});
    }
    if (c == "randn" || c == "rand") {
      auto v = numberArg("seed", 0);
      if (!v)
        return EV::bad();
      a.str = c == "randn" ? "normal" : "uniform";
      a.ints = {(int64_t)*v};
      return emit(Op::Random, {}, {}, init.loc, a, {t});
    }
    if (c == "arange" || c == "iota") {
      auto v = numberArg("dim", 0);
      if (!v)
        return EV::bad();
      if (*v < 0 || *v >= t.rank()) {
        diags().error(DiagId::BadDim, init.loc,
                      {std::to_string((int64_t)*v), std::to_string(t.rank())});
        return EV::bad();
      }
      a.ints = {(int64_t)*v};
      return emit(Op::Iota, {}, {}, init.loc, a, {t});
    }
  }
  return expr(init);
}

} // namespace dt
