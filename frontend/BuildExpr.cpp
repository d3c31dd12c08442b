// This file implements the IR builder's expressions: literals, names,
// operators, the builtin functions and initializers. Every op goes through
// emit(), which asks ir/Infer for the result type and reports type errors.
#include "codegen/FloorMod.h"
#include "frontend/BuildIR.h"
#include "frontend/Builtins.h"
#include "support/Checked.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

namespace dt {

namespace {

const std::map<std::string, Op> kOperators = {
    {"+", Op::Add},    {"-", Op::Sub},  {"*", Op::Mul}, {"/", Op::Div},
    {"@", Op::MatMul}, {"**", Op::Pow}, {"==", Op::Eq}, {"!=", Op::Ne},
    {"<", Op::Lt},     {"<=", Op::Le},  {">", Op::Gt},  {">=", Op::Ge},
    {"&&", Op::And},   {"||", Op::Or},  {"%", Op::Mod}, {"//", Op::FloorDiv},
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
  if (op == "%")
    return isInt ? (double)modI((int64_t)a, (int64_t)b) : modF(a, b);
  if (op == "//")
    return isInt ? (double)floorDivI((int64_t)a, (int64_t)b) : floorDivF(a, b);
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

/// Folds `a op b` on exact integers; false when the result does not fit in
/// i64 (integer literals are exact or a diagnostic, never rounded).
bool foldInt(const std::string &op, int64_t a, int64_t b, int64_t &r) {
  if (op == "+")
    return !__builtin_add_overflow(a, b, &r);
  if (op == "-")
    return !__builtin_sub_overflow(a, b, &r);
  if (op == "*")
    return !__builtin_mul_overflow(a, b, &r);
  if (op == "/") {
    if (b == -1)
      return !__builtin_sub_overflow(int64_t(0), a, &r);
    r = b == 0 ? 0 : a / b; // as the runtime: truncating, x / 0 = 0
    return true;
  }
  if (op == "%") {
    r = modI(a, b);
    return true;
  }
  if (op == "//") {
    if (b == -1)
      return !__builtin_sub_overflow(int64_t(0), a, &r);
    r = floorDivI(a, b);
    return true;
  }
  static const std::map<std::string, bool (*)(int64_t, int64_t)> cmp = {
      {"==", [](int64_t x, int64_t y) { return x == y; }},
      {"!=", [](int64_t x, int64_t y) { return x != y; }},
      {"<", [](int64_t x, int64_t y) { return x < y; }},
      {"<=", [](int64_t x, int64_t y) { return x <= y; }},
      {">", [](int64_t x, int64_t y) { return x > y; }},
      {">=", [](int64_t x, int64_t y) { return x >= y; }},
      {"&&", [](int64_t x, int64_t y) { return x != 0 && y != 0; }},
      {"||", [](int64_t x, int64_t y) { return x != 0 || y != 0; }},
  };
  auto it = cmp.find(op);
  r = it != cmp.end() && it->second(a, b);
  return true;
}

} // namespace

static std::string formatLiteral(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Attrs constAttrs(const EV &v, DType t) {
  Attrs a;
  bool exact = v.isInt || v.isBool;
  // A float literal becomes an f32/bf16/f16 constant from its round-to-odd
  // double: one rounding from the decimal, as docs/language.md promises.
  const bool narrow = t == DType::F32 || isLowPrecision(t);
  if (!constInInts(t))
    a.floats = {exact ? (double)v.ival : narrow && v.numberOdd ? *v.numberOdd : v.number};
  else if (t == DType::Bool)
    a.ints = {exact ? v.ival != 0 : v.number != 0};
  else if (exact)
    a.ints = {v.ival};
  else if (std::isnan(v.number))
    a.ints = {0};
  else // truncated; out of range was reported by literalFits
    a.ints = {v.number >= 0x1p63 ? INT64_MAX : v.number < -0x1p63 ? INT64_MIN : (int64_t)v.number};
  return a;
}

bool IRBuilder::literalFits(const EV &v, const TensorType &t, SrcLoc loc, bool operand) {
  if (!v.literal)
    return true;
  // No implicit conversion: a number is not stored into a bool (an operand
  // of `&&` may still be one, as the op's rule decides), nor a fraction, NaN
  // or inf into an integer tensor (it would be truncated without a word).
  if (t.dtype == DType::Bool && !v.isBool && !operand) {
    std::string text = v.isInt ? std::to_string(v.ival) : formatLiteral(v.number);
    diags().error(DiagId::LiteralType, loc, {text, "bool"}).hint =
        "a `bool` tensor holds `true` and `false` (a comparison such as `x != 0` makes them)";
    return false;
  }
  if (t.dtype != DType::I32 && t.dtype != DType::I64)
    return true;
  if (!v.isInt && !v.isBool && !(std::isfinite(v.number) && v.number == std::trunc(v.number))) {
    diags().error(DiagId::LiteralType, loc, {formatLiteral(v.number), dtypeName(t.dtype)}).hint =
        "use a whole number, or declare the tensor `f32`";
    return false;
  }
  bool exact = v.isInt || v.isBool;
  double lo = t.dtype == DType::I32 ? -0x1p31 : -0x1p63, hi = -lo; // [lo, hi)
  bool fits = exact ? (t.dtype == DType::I64 || (v.ival >= INT32_MIN && v.ival <= INT32_MAX))
                    : !(std::trunc(v.number) >= hi || std::trunc(v.number) < lo);
  if (fits)
    return true;
  std::string text = exact ? std::to_string(v.ival) : formatLiteral(v.number);
  auto &d = diags().error(exact ? DiagId::IntOutOfRange : DiagId::NumberOutOfRange, loc,
                          {text, dtypeName(t.dtype)});
  d.hint = t.dtype == DType::I32 ? "`i32` holds -2147483648 to 2147483647; declare the tensor `i64`"
                                 : "`i64` holds -9223372036854775808 to 9223372036854775807";
  return false;
}

int IRBuilder::materialize(const EV &lit, const TensorType &like, SrcLoc loc) {
  TensorType t = replicatedType(like.dtype, {}, like.mesh);
  if (lit.isBool)
    t.dtype = DType::Bool;
  Inst in;
  in.op = Op::Const;
  in.attrs = constAttrs(lit, t.dtype);
  in.loc = loc;
  int id = fn().newValue(t);
  in.results = {id};
  blk().insts.push_back(std::move(in));
  return id;
}

void IRBuilder::hostScalarsInCondition(Op op, std::vector<int> &ids, std::vector<TensorType> &types,
                                       const std::vector<const ast::Expr *> &exprs, SrcLoc loc) {
  OpClass c = opInfo(op).cls;
  if (c != OpClass::Elementwise1 && c != OpClass::Elementwise2 && c != OpClass::Elementwise3)
    return;
  bool host = false;
  for (auto &t : types)
    host |= t.isHost();
  if (!host)
    return;
  for (size_t i = 0; i < ids.size(); ++i) {
    const TensorType t = types[i];
    if (t.isHost() || t.rank() != 0 || t.hasPartial())
      continue;
    // Every rank of the mesh holds the same replica: the host copy is the
    // value on every rank, so the branch taken is the same everywhere.
    EV h = emit(Op::ToHost, {EV::one(ids[i])}, {i < exprs.size() ? exprs[i] : nullptr}, loc, {},
                {replicatedType(t.dtype, {}, nullptr)});
    if (h.poison)
      return;
    ids[i] = h.ids[0];
    types[i] = typeOf(ids[i]);
  }
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
  for (auto &o : operands)
    if (o.hasStruct()) {
      std::string st;
      for (auto &p : o.parts)
        if (p && st.empty())
          st = p->name;
      auto &d = diags().error(DiagId::StructOperand, loc, {st, opDisplayName(op)});
      d.hint = "take one field (`x.field`); elementwise operators and functions (`+`, `*`, "
               "`sqrt`, ...) apply to a struct field by field";
      return EV::bad();
    }
  // `where(c, 0.5, x)`: a bare branch adopts the other branch's dtype, not
  // the bool condition's; with both branches bare, their own (f32, i64 or
  // bool) on the condition's mesh.
  std::optional<TensorType> branch;
  if (op == Op::Select && operands.size() == 3 && (operands[1].literal || operands[2].literal)) {
    const EV &other = operands[1].literal ? operands[2] : operands[1];
    if (!other.literal && other.ids.size() == 1) {
      branch = typeOf(other.ids[0]);
    } else if (operands[1].literal && operands[2].literal) {
      const EV &p = operands[1], &q = operands[2];
      DType dt = p.isBool && q.isBool                             ? DType::Bool
                 : bareBranchDtype_                               ? *bareBranchDtype_
                 : (p.isInt || p.isBool) && (q.isInt || q.isBool) ? DType::I64
                                                                  : DType::F32;
      branch = replicatedType(dt, {}, like ? like->mesh : nullptr);
    }
  }
  std::vector<int> ids;
  std::vector<TensorType> types;
  for (size_t k = 0; k < operands.size(); ++k) {
    const EV &o = operands[k];
    const TensorType *likeK = branch && k > 0 ? &*branch : like;
    int id;
    if (o.literal && likeK && !isFloat(likeK->dtype) && likeK->dtype != DType::Bool && !o.isInt &&
        !o.isBool && (o.number != std::trunc(o.number) || !doubleToInt64(o.number))) {
      auto &d = diags().error(
          DiagId::DTypeMismatch, loc,
          {opDisplayName(op), dtypeName(likeK->dtype), "the literal " + formatLiteral(o.number)});
      d.hint = "write an integer, or `cast` the tensor to `f32` first";
      return EV::bad();
    }
    if (o.literal && !o.isBool && likeK && likeK->dtype == DType::Bool) {
      // No number is a bool: `c && 5`, `c == 1`, `where(c, c, 0)` were
      // read as `true`/`false` without a word.
      std::string text = o.isInt ? std::to_string(o.ival) : formatLiteral(o.number);
      if (op == Op::And || op == Op::Or)
        diags().error(DiagId::BoolOnly, loc, {opDisplayName(op), text}).hint =
            "a bool operand is `true`, `false` or a comparison such as `x != 0`";
      else
        diags()
            .error(DiagId::DTypeMismatch, loc, {opDisplayName(op), "bool", "the literal " + text})
            .hint =
            "compare with `true` or `false`, or `cast` the bool tensor to a number type first";
      return EV::bad();
    }
    if (o.literal) {
      TensorType host = replicatedType(o.isBool  ? DType::Bool
                                       : o.isInt ? DType::I64
                                                 : DType::F32,
                                       {}, nullptr);
      if (!literalFits(o, likeK ? *likeK : host, loc, true))
        return EV::bad();
      id = materialize(o, likeK ? *likeK : host, loc);
    } else if (o.ids.size() != 1) {
      diags().error<DiagId::TupleOperand>(loc, o.ids.size());
      return EV::bad();
    } else {
      id = o.ids[0];
    }
    ids.push_back(id);
    types.push_back(typeOf(id));
  }
  for (auto &g : given)
    if (!checkElements(g.shape, loc))
      return EV::bad();
  if (hostCondition_)
    hostScalarsInCondition(op, ids, types, exprs, loc);
  Inferred inf = inferTypes(op, types, attrs, given);
  if (!inf.ok()) {
    reportTypeError(
        *inf.error, loc, exprs, types,
        [&](const std::vector<TensorType> &ts) { return inferTypes(op, ts, attrs, given); },
        opInfo(op).cls == OpClass::Effect);
    return EV::bad();
  }
  // Results may be larger than every operand (broadcast, einsum outer products).
  for (auto &t : inf.results)
    if (!checkElements(t.shape, loc))
      return EV::bad();
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
    v.ival = e.intValue;
    if (!e.isInt)
      v.numberOdd = e.numberOdd;
    return v;
  }
  case K::Bool: {
    EV v;
    v.literal = true;
    v.isBool = true;
    v.number = e.boolValue ? 1 : 0;
    v.ival = e.boolValue ? 1 : 0;
    return v;
  }
  case K::Name: {
    if (e.text == "...") { // only a shape entry: reshape(x, [..., 1])
      diags().error(DiagId::EllipsisHere, e.loc, {}).hint =
          "`...` is a shape entry (`reshape(m, [..., 1])`) or a dim of a parameter type";
      return EV::bad();
    }
    Binding *b = lookup(e.text);
    if (!b && symbols_) {
      // A size symbol read as a value (`if N > 2`, `i == N - 1`) is the
      // integer the call binds; a symbolic one makes the function checked
      // per call (symbolAsValue_), and stands for 1 meanwhile.
      if (auto sym = symbols_->find(e.text); sym != symbols_->end()) {
        EV v;
        v.literal = true;
        v.isInt = true;
        if (sym->second.isSym())
          symbolAsValue_ = true;
        v.ival = sym->second.isSym() ? 1 : sym->second.value;
        v.number = (double)v.ival;
        return v;
      }
    }
    if (!b && reportField(e))
      return EV::bad();
    if (!b) {
      bool isFunction = false;
      for (const std::string &cand : scopedNames(e.text))
        isFunction |= st_.functions.count(cand) != 0;
      const std::string head = e.text.substr(0, e.text.find('.'));
      if (isFunction)
        diags().error<DiagId::FunctionNotValue>(e.loc, e.text);
      else if (st_.meshes.count(e.text))
        diags().error<DiagId::MeshNotValue>(e.loc, e.text);
      else if (StructRef def = findStruct(e.text))
        diags().error(DiagId::StructNotValue, e.loc, {e.text}).hint =
            "make one: `let s : " + e.text + " = zeros()`, or `" + e.text + "(" +
            def->fields[0].name + "=...)`";
      else if (StructRef def = findStruct(head); def && head != e.text)
        diags().error(DiagId::StructNotValue, e.loc, {head}).hint =
            "a field belongs to a value of the struct: `s" + e.text.substr(head.size()) +
            "` of `let s : " + head + " = zeros()`";
      else if (e.text.find('.') == std::string::npos && st_.imported.count(e.text))
        diags().error<DiagId::ModuleNotValue>(e.loc, e.text);
      else {
        auto &d = diags().error(DiagId::UnknownName, e.loc, {e.text});
        if (!declaredBelow(d, e.text) && !didYouMean(d, e.text, namesInScope(), e.full) &&
            e.text.find('.') == std::string::npos)
          d.hint = "declare it before its use: `let " + e.text + " = ...`";
      }
      return EV::bad();
    }
    if (b->kind == Binding::Const) {
      EV v;
      v.literal = true;
      v.isInt = true;
      v.ival = b->constant;
      v.number = (double)b->constant;
      return v;
    }
    if (b->kind == Binding::Struct)
      return structValue(e.text, *b);
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
      // As on tensors: `-` takes a number, `!` a bool.
      if (e.op == "-" && a.isBool) {
        diags().error(DiagId::NumericOnly, e.loc, {"-", "bool"}).hint =
            "a bool tensor is not a number: `cast(x, f32)` makes one";
        return EV::bad();
      }
      if (e.op != "-" && !a.isBool) {
        diags().error(DiagId::BoolOnly, e.loc, {"!", exprText(e.args[0].get())}).hint =
            "compare it: `" + exprText(e.args[0].get()) + " == 0`";
        return EV::bad();
      }
      if (e.op == "-" && a.isInt) {
        if (__builtin_sub_overflow(int64_t(0), a.ival, &a.ival)) {
          diags().error(DiagId::IntFoldOverflow, e.loc, {"-" + std::to_string(a.ival)});
          return EV::bad();
        }
        a.number = (double)a.ival;
      } else if (e.op == "-") {
        a.number = -a.number;
        if (a.numberOdd)
          a.numberOdd = -*a.numberOdd;
      } else {
        a.numberOdd.reset();
        a.ival = a.ival == 0;
        a.number = (double)a.ival;
      }
      return a;
    }
    Op op = e.op == "-" ? Op::Neg : Op::Not;
    if (EV r; lift(
            {a}, e.loc,
            [&](const std::vector<EV> &x) { return emit(op, x, {e.args[0].get()}, e.loc); }, r))
      return r;
    return emit(op, {a}, {e.args[0].get()}, e.loc);
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
  case K::Subscript:
    return subscript(e);
  case K::Field:
    return fieldOf(expr(*e.args[0]), e);
  case K::Slice:
  case K::Group:
    diags().error<DiagId::BadSubscript>(e.loc);
    return EV::bad();
  }
  return EV::bad();
}

EV IRBuilder::binary(const ast::Expr &e) {
  EV a = expr(*e.args[0]);
  EV b = expr(*e.args[1]);
  if (a.poison || b.poison)
    return EV::bad();
  // `@` of two numbers is no fold: it is a matmul of 0-dim tensors (an
  // error there, as `matmul(2, 3)`).
  if (a.literal && b.literal && e.op != "@") {
    // The dtype rules of tensors: `&&`/`||` take bools, `==`/`!=` two
    // numbers or two bools, the other operators numbers; comparisons and
    // `&&`/`||` give a bool.
    const bool logical = e.op == "&&" || e.op == "||";
    const bool equality = e.op == "==" || e.op == "!=";
    const bool ordering = e.op == "<" || e.op == "<=" || e.op == ">" || e.op == ">=";
    if (logical && (!a.isBool || !b.isBool)) {
      const ast::Expr *bad = a.isBool ? e.args[1].get() : e.args[0].get();
      diags().error(DiagId::BoolOnly, bad->loc, {e.op, exprText(bad)}).hint =
          "compare it: `" + exprText(bad) + " != 0`";
      return EV::bad();
    }
    if (!logical && (a.isBool || b.isBool) && !(equality && a.isBool && b.isBool)) {
      diags().error(DiagId::NumericOnly, e.loc, {e.op, "bool"}).hint =
          "a bool tensor is not a number: `cast(x, f32)` makes one";
      return EV::bad();
    }
    EV r;
    r.literal = true;
    r.isBool = logical || equality || ordering;
    r.isInt = a.isInt && b.isInt && e.op != "**" && !r.isBool;
    if ((a.isInt || a.isBool) && (b.isInt || b.isBool) && e.op != "**") {
      if (!foldInt(e.op, a.ival, b.ival, r.ival)) {
        diags().error(DiagId::IntFoldOverflow, e.loc,
                      {std::to_string(a.ival) + " " + e.op + " " + std::to_string(b.ival)});
        return EV::bad();
      }
      r.number = (double)r.ival;
      return r;
    }
    r.number = foldBinary(e.op, a.number, b.number, r.isInt);
    r.ival = r.isBool ? r.number != 0 : 0;
    return r;
  }
  auto it = kOperators.find(e.op);
  if (it == kOperators.end()) {
    diags().error<DiagId::UnknownOperator>(e.loc, e.op);
    return EV::bad();
  }
  if (EV r; it->second != Op::MatMul &&
            lift(
                {a, b}, e.loc,
                [&](const std::vector<EV> &x) {
                  return emit(it->second, x, {e.args[0].get(), e.args[1].get()}, e.loc);
                },
                r))
    return r;
  return emit(it->second, {a, b}, {e.args[0].get(), e.args[1].get()}, e.loc);
}

EV IRBuilder::tensorLiteral(const ast::Expr &e, const TensorType *t) {
  // Flatten nested lists and infer the shape.
  std::vector<EV> data;
  std::vector<int64_t> shape;
  std::vector<SrcLoc> locs;
  bool allInt = true, bad = false;
  // Every number sits at one depth: `[9, [9, 10]]` mixes a number with a row.
  size_t leafDepth = SIZE_MAX;
  std::function<void(const ast::Expr &, size_t)> walk = [&](const ast::Expr &x, size_t depth) {
    if (bad)
      return;
    if (x.kind == ast::Expr::List) {
      if (depth >= leafDepth) {
        diags().error<DiagId::RaggedLiteral>(x.loc);
        bad = true;
        return;
      }
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
      auto &d = diags().error<DiagId::BadLiteralElement>(x.loc);
      // `concat([a, b], dim=0)`, as torch.cat is called: tensors are the
      // builtins' arguments, not a list.
      if (!v.literal)
        d.hint = "a list of tensors is no value: pass them as arguments, `concat(a, b, dim=0)`, "
                 "`stack(a, b)`";
      bad = true;
      return;
    }
    if (leafDepth != SIZE_MAX && leafDepth != depth) {
      diags().error<DiagId::RaggedLiteral>(x.loc);
      bad = true;
      return;
    }
    leafDepth = depth;
    allInt &= v.isInt || v.isBool;
    data.push_back(v);
    locs.push_back(x.loc);
  };
  walk(e, 0);
  if (bad)
    return EV::bad();
  Shape s;
  for (auto d : shape)
    s.push_back(Dim::lit(d));
  // Without a declared type: all `true`/`false` is a bool tensor, all
  // integers i64, else f32; bools among numbers are an error (no implicit
  // conversion), not 1 and 0.
  size_t bools = std::count_if(data.begin(), data.end(), [](const EV &v) { return v.isBool; });
  if (!t && bools > 0 && bools < data.size()) {
    diags().error(DiagId::LiteralMixesBool, e.loc).hint =
        "write numbers only (`1`, `0`), or `true`/`false` only";
    return EV::bad();
  }
  DType inferred = !data.empty() && bools == data.size() ? DType::Bool
                   : allInt                              ? DType::I64
                                                         : DType::F32;
  TensorType type = t ? *t : replicatedType(inferred, s, nullptr);
  if (type.shape != s) {
    diags().error(DiagId::LiteralShape, e.loc, {shapeStr(s), shapeStr(type.shape)});
    return EV::bad();
  }
  Attrs attrs;
  for (size_t i = 0; i < data.size(); ++i) {
    if (!literalFits(data[i], type, locs[i]))
      return EV::bad();
    Attrs one = constAttrs(data[i], type.dtype);
    attrs.ints.insert(attrs.ints.end(), one.ints.begin(), one.ints.end());
    attrs.floats.insert(attrs.floats.end(), one.floats.begin(), one.floats.end());
  }
  return emit(Op::Const, {}, {}, e.loc, std::move(attrs), {type});
}

bool typedSource(const ast::Expr &x) {
  static const char *const kSources[] = {"ones", "zeros",  "full", "randn",
                                         "rand", "arange", "iota"};
  if (x.kind == ast::Expr::Call)
    return std::find_if(std::begin(kSources), std::end(kSources),
                        [&](const char *n) { return x.callee == n; }) != std::end(kSources);
  if (x.kind == ast::Expr::Binary && (x.op == "*" || x.op == "/" || x.op == "+" || x.op == "-" ||
                                      x.op == "%" || x.op == "//" || x.op == "**"))
    return typedSource(*x.args[0]) || typedSource(*x.args[1]);
  return x.kind == ast::Expr::Unary && x.op == "-" && typedSource(*x.args[0]);
}

EV IRBuilder::initializer(const ast::Expr &init, const TensorType &t) {
  // `randn(seed=1) * 0.35`, `-ones()`: a source call inside arithmetic takes
  // the declared type too (the initializers of a model are written this way).
  if (init.kind == ast::Expr::Binary && typedSource(init)) {
    const ast::Expr &l = *init.args[0], &r = *init.args[1];
    EV a = typedSource(l) ? initializer(l, t) : expr(l);
    EV b = typedSource(r) ? initializer(r, t) : expr(r);
    return emit(kOperators.at(init.op), {a, b}, {&l, &r}, init.loc);
  }
  if (init.kind == ast::Expr::Unary && typedSource(init))
    return emit(Op::Neg, {initializer(*init.args[0], t)}, {init.args[0].get()}, init.loc);
  if (init.kind == ast::Expr::List)
    return tensorLiteral(init, &t);
  if (init.kind == ast::Expr::Number || init.kind == ast::Expr::Bool ||
      (init.kind == ast::Expr::Unary && init.args[0]->kind == ast::Expr::Number)) {
    EV v = expr(init);
    if (v.poison)
      return v;
    if (v.literal) {
      if (!literalFits(v, t, init.loc))
        return EV::bad();
      return emit(Op::Fill, {}, {}, init.loc, constAttrs(v, t.dtype), {t});
    }
  }
  if (init.kind == ast::Expr::Call) {
    const std::string &c = init.callee;
    for (const char *built :
         {"load", "load_checkpoint", "ones", "zeros", "full", "randn", "rand", "arange", "iota"})
      if (c == built && !knownKeywords(c, init, builtinKeywords(c)))
        return EV::bad();
    // The sources take at most their one argument, by position or by name
    // (`full(0.5)`, `randn(seed=1)`): another is an error, never dropped.
    static const std::map<std::string, const char *> kSourceArg = {
        {"ones", nullptr}, {"zeros", nullptr}, {"full", "value"}, {"randn", "seed"},
        {"rand", "seed"},  {"arange", "dim"},  {"iota", "dim"}};
    if (auto it = kSourceArg.find(c); it != kSourceArg.end()) {
      if (!builtinArgs(c, init, 0, it->second ? 1 : 0)) {
        if (Diagnostic *d = diags().last())
          d->hint = "the shape and layout come from the declared type: `" + c + "(" +
                    (it->second ? std::string(it->second) + "=..." : "") + ")`";
        return EV::bad();
      }
      bool twice = false;
      if (it->second && (argOrKeyword(c, init, 0, it->second, twice), twice))
        return EV::bad();
    }
    Attrs a;
    const ast::Expr *argExpr = nullptr;
    auto literalArg = [&](const char *kw, double dflt) -> std::optional<EV> {
      const ast::Expr *x = kwarg(init, kw);
      if (!x && !init.args.empty())
        x = init.args[0].get();
      argExpr = x;
      EV v;
      v.literal = v.isInt = true;
      v.number = dflt;
      v.ival = (int64_t)dflt;
      if (!x)
        return v;
      v = expr(*x);
      if (v.poison)
        return std::nullopt;
      if (!v.literal) {
        diags().error<DiagId::NeedsNumberHere>(x->loc, c);
        return std::nullopt;
      }
      return v;
    };
    auto numberArg = [&](const char *kw, double dflt) -> std::optional<double> {
      auto v = literalArg(kw, dflt);
      return v ? std::optional<double>(v->number) : std::nullopt;
    };
    if (c == "load")
      return loadCall(init, &t);
    if (c == "load_checkpoint")
      return loadCheckpointCall(init, &t);
    if (c == "ones" || c == "zeros") {
      EV v;
      v.literal = v.isInt = true;
      v.ival = c == "ones";
      v.number = (double)v.ival;
      return emit(Op::Fill, {}, {}, init.loc, constAttrs(v, t.dtype), {t});
    }
    if (c == "full") {
      auto v = literalArg("value", 0);
      if (!v || !literalFits(*v, t, argExpr ? argExpr->loc : init.loc))
        return EV::bad();
      return emit(Op::Fill, {}, {}, init.loc, constAttrs(*v, t.dtype), {t});
    }
    if (c == "randn" || c == "rand") {
      a.str = c == "randn" ? "normal" : "uniform";
      // The seed: a literal, or any integer expression (a loop variable,
      // host arithmetic) read when the program runs; either way element i
      // is keyed by (seed, i), so every layout sees the same values.
      const ast::Expr *sx = kwarg(init, "seed");
      if (!sx && !init.args.empty())
        sx = init.args[0].get();
      if (!sx) {
        // No hidden default: every `randn()` with seed 0 gave each weight
        // the same values.
        diags().error<DiagId::NeedsSeed>(init.loc, c).hint =
            "give each tensor its own seed: `" + c +
            "(seed=1)`; the same seed gives the same "
            "values, on every layout";
        return EV::bad();
      }
      int64_t seed = 0;
      int sid = -1;
      if (!intScalar(*sx, "seed", seed, sid))
        return EV::bad();
      // bf16/f16 uniform: the f32 draw (24 bits) cut to the type's
      // precision, k / 2^p with p = 8 (bf16) or 11 (f16), as PyTorch does:
      // exact in the type and below 1, where rounding the f32 draw to
      // nearest would give 1.0 (1 draw in 500 in bf16).
      const bool narrow = a.str == "uniform" && (t.dtype == DType::BF16 || t.dtype == DType::F16);
      TensorType drawn = t;
      if (narrow)
        drawn.dtype = DType::F32;
      EV u;
      if (sid >= 0 && (sid = seedFor(sid, drawn, sx, init.loc)) < 0) {
        return EV::bad();
      } else if (sid >= 0) {
        u = emit(Op::Random, {EV::one(sid)}, {sx}, init.loc, a, {drawn});
      } else {
        a.ints = {seed};
        u = emit(Op::Random, {}, {}, init.loc, a, {drawn});
      }
      if (!narrow || u.poison)
        return u;
      EV step;
      step.literal = true;
      step.number = t.dtype == DType::BF16 ? 0x1p-8 : 0x1p-11;
      EV k = emit(Op::FloorDiv, {u, step}, {nullptr, nullptr}, init.loc);
      EV grid = k.poison ? k : emit(Op::Mul, {k, step}, {nullptr, nullptr}, init.loc);
      return grid.poison ? grid : emit(Op::Cast, {grid}, {nullptr}, init.loc, {}, {t});
    }
    if (c == "arange" || c == "iota") {
      auto v = numberArg("dim", 0);
      if (!v)
        return EV::bad();
      if (*v < 0 || *v >= t.rank()) {
        diags().error(DiagId::BadDim, init.loc, {formatLiteral(*v), std::to_string(t.rank())});
        return EV::bad();
      }
      a.ints = {(int64_t)*v};
      return emit(Op::Iota, {}, {}, init.loc, a, {t});
    }
    if (c == "where" && t.dtype != DType::Bool && init.args.size() == 3 && init.kwargs.empty()) {
      // `let e : f64[4] @ m[x] = where(c, 1.0, 0.0)`: bare branches take the
      // declared dtype (as `ones()` does), not f32. Only this select's: the
      // operands (which may call functions) are built before.
      std::vector<EV> xs;
      std::vector<const ast::Expr *> exs;
      for (auto &arg : init.args) {
        xs.push_back(expr(*arg));
        exs.push_back(arg.get());
      }
      std::optional<DType> saved = bareBranchDtype_;
      bareBranchDtype_ = t.dtype;
      EV r = emit(Op::Select, xs, exs, init.loc);
      bareBranchDtype_ = saved;
      return r;
    }
  }
  return expr(init);
}

} // namespace dt
