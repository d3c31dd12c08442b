// This file implements the builtin table (Builtins.h): the one list of the
// builtin functions, each with its arity, dtype rule, IR op and builder.
#include "frontend/Builtins.h"

#include <unordered_map>

namespace dt {

const char *dtypeRuleName(DTypeRule r) {
  switch (r) {
  case DTypeRule::Same:
    return "same";
  case DTypeRule::FloatOnly:
    return "float-only";
  case DTypeRule::Bool:
    return "bool";
  case DTypeRule::I64:
    return "i64";
  case DTypeRule::F64:
    return "f64";
  case DTypeRule::Given:
    return "given";
  case DTypeRule::NoValue:
    return "none";
  }
  return "?";
}

namespace {

/// One elementwise op over the arguments; structs apply field by field (lift()).
EV elementwise(IRBuilder &b, const BuiltinInfo &info, const ast::Expr &e) {
  std::vector<EV> xs;
  std::vector<const ast::Expr *> exs;
  for (auto &a : e.args) {
    xs.push_back(b.expr(*a));
    exs.push_back(a.get());
  }
  Op op = *info.op;
  if (EV r; b.lift(
          xs, e.loc, [&](const std::vector<EV> &x) { return b.emit(op, x, exs, e.loc); }, r))
    return r;
  return b.emit(op, xs, exs, e.loc);
}

EV matmul(IRBuilder &b, const BuiltinInfo &, const ast::Expr &e) {
  return b.emit(Op::MatMul, {b.expr(*e.args[0]), b.expr(*e.args[1])},
                {e.args[0].get(), e.args[1].get()}, e.loc);
}

/// `ones`, `zeros`, ... are built from the declared type of a `let`; called
/// anywhere else they have no shape.
EV needsType(IRBuilder &b, const BuiltinInfo &info, const ast::Expr &e) {
  std::string name = info.name;
  // The hint binds the call as written, on one of the program's meshes,
  // with as many dims as a `dim=` argument needs.
  int rank = 1;
  for (auto &[k, v] : e.kwargs)
    if (k == "dim" && v->kind == ast::Expr::Number && v->number >= 0 && v->number < 8 &&
        v->number == (int)v->number)
      rank = std::max(rank, (int)v->number + 1);
  std::string dims, layout;
  for (int i = 0; i < rank; ++i) {
    dims += i ? ", 4" : "4";
    layout += i ? ", _" : "_";
  }
  std::string type = "f32[" + dims + "]";
  if (!b.st_.meshes.empty())
    type += " @ " + b.st_.meshes.begin()->first + "[" + layout + "]";
  std::string hint =
      "bind it with a type first: `let t : " + type + " = " + b.exprText(&e) + "`, then use `t`";
  if (name == "ones" || name == "zeros" || name == "full")
    hint += "; or take a tensor's shape and layout: `" + name + "_like(x" +
            (name == "full" ? ", v" : "") + ")`";
  b.diags().error(DiagId::NeedsType, e.loc, {name + "()"}).hint = hint;
  return EV::bad();
}

/// `grad(f)` is only called (`grad(f)(x)`, IRBuilder::call).
EV gradNotCalled(IRBuilder &b, const BuiltinInfo &info, const ast::Expr &e) {
  b.diags().error<DiagId::GradNotCalled>(e.loc, info.name);
  return EV::bad();
}

EV composite(IRBuilder &b, const BuiltinInfo &info, const ast::Expr &e) {
  EV r;
  bool handled = false;
  b.composite(info.name, e, r, handled);
  return r;
}

EV load(IRBuilder &b, const BuiltinInfo &, const ast::Expr &e) { return b.loadCall(e, nullptr); }
EV save(IRBuilder &b, const BuiltinInfo &, const ast::Expr &e) { return b.saveCall(e); }
EV time(IRBuilder &b, const BuiltinInfo &, const ast::Expr &e) { return b.timeCall(e); }
EV loadCheckpoint(IRBuilder &b, const BuiltinInfo &, const ast::Expr &e) {
  return b.loadCheckpointCall(e, nullptr);
}
EV saveCheckpoint(IRBuilder &b, const BuiltinInfo &, const ast::Expr &e) {
  return b.saveCheckpointCall(e);
}

} // namespace

// A family builder: IRBuilder::F(name, call).
#define M(F) [](IRBuilder &b, const BuiltinInfo &i, const ast::Expr &e) { return b.F(i.name, e); }

const std::vector<BuiltinInfo> &builtinTable() {
  // name, min/max positional args (-1: the builder checks), dtype rule, IR op, builder.
  static const std::vector<BuiltinInfo> table = {
      {"relayout", 2, 2, DTypeRule::Given, Op::Relayout, M(relayoutBuiltin)},
      {"distribute", 2, 2, DTypeRule::Given, Op::Distribute, M(relayoutBuiltin)},
      {"to_host", 1, 1, DTypeRule::Same, Op::ToHost, M(toHostBuiltin)},
      {"to_local", -1, -1, DTypeRule::Same, std::nullopt, M(localBuiltin)},
      {"from_local", -1, -1, DTypeRule::Same, std::nullopt, M(localBuiltin)},
      {"ones", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"zeros", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"full", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"randn", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"rand", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"arange", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"iota", -1, -1, DTypeRule::Given, std::nullopt, needsType},
      {"exp", 1, 1, DTypeRule::FloatOnly, Op::Exp, elementwise},
      {"log", 1, 1, DTypeRule::FloatOnly, Op::Log, elementwise},
      {"sqrt", 1, 1, DTypeRule::FloatOnly, Op::Sqrt, elementwise},
      {"rsqrt", 1, 1, DTypeRule::FloatOnly, Op::Rsqrt, elementwise},
      {"tanh", 1, 1, DTypeRule::FloatOnly, Op::Tanh, elementwise},
      {"sigmoid", 1, 1, DTypeRule::FloatOnly, Op::Sigmoid, elementwise},
      {"relu", 1, 1, DTypeRule::Same, Op::Relu, elementwise},
      {"abs", 1, 1, DTypeRule::Same, Op::Abs, elementwise},
      {"sin", 1, 1, DTypeRule::FloatOnly, Op::Sin, elementwise},
      {"cos", 1, 1, DTypeRule::FloatOnly, Op::Cos, elementwise},
      {"neg", 1, 1, DTypeRule::Same, Op::Neg, elementwise},
      {"maximum", 2, 2, DTypeRule::Same, Op::Maximum, elementwise},
      {"minimum", 2, 2, DTypeRule::Same, Op::Minimum, elementwise},
      {"pow", 2, 2, DTypeRule::FloatOnly, Op::Pow, elementwise},
      {"matmul", 2, 2, DTypeRule::Same, Op::MatMul, matmul},
      {"where", 3, 3, DTypeRule::Same, Op::Select, elementwise},
      {"sum", 1, 2, DTypeRule::Same, Op::ReduceSum, M(reduceBuiltin)},
      {"mean", 1, 2, DTypeRule::FloatOnly, Op::ReduceSum, M(reduceBuiltin)},
      {"max", 1, 2, DTypeRule::Same, Op::ReduceMax, M(reduceBuiltin)},
      {"min", 1, 2, DTypeRule::Same, Op::ReduceMin, M(reduceBuiltin)},
      {"einsum", -1, -1, DTypeRule::Same, Op::Einsum, M(einsumBuiltin)},
      {"transpose", 1, 2, DTypeRule::Same, Op::Transpose, M(transposeBuiltin)},
      {"reshape", 1, 2, DTypeRule::Same, Op::Reshape, M(reshapeBuiltin)},
      {"broadcast_to", 1, 2, DTypeRule::Same, Op::Broadcast, M(reshapeBuiltin)},
      {"index_select", 2, 3, DTypeRule::Same, Op::IndexSelect, M(indexBuiltin)},
      {"index_add", 3, 4, DTypeRule::Same, Op::IndexAdd, M(indexBuiltin)},
      {"cast", 2, 2, DTypeRule::Given, Op::Cast, M(castBuiltin)},
      {"zeros_like", 1, 1, DTypeRule::Same, Op::Fill, M(fillLikeBuiltin)},
      {"ones_like", 1, 1, DTypeRule::Same, Op::Fill, M(fillLikeBuiltin)},
      {"arange_like", 1, 1, DTypeRule::I64, Op::Iota, M(arangeLikeBuiltin)},
      {"full_like", 2, 2, DTypeRule::Same, Op::Fill, M(fillLikeBuiltin)},
      {"grad", -1, -1, DTypeRule::Same, std::nullopt, gradNotCalled},
      {"value_and_grad", -1, -1, DTypeRule::Same, std::nullopt, gradNotCalled},
      {"erf", 1, 1, DTypeRule::FloatOnly, Op::Erf, elementwise},
      {"log1p", 1, 1, DTypeRule::FloatOnly, Op::Log1p, elementwise},
      {"expm1", 1, 1, DTypeRule::FloatOnly, Op::Expm1, elementwise},
      {"floordiv", 2, 2, DTypeRule::Same, Op::FloorDiv, elementwise},
      {"mod", 2, 2, DTypeRule::Same, Op::Mod, elementwise},
      {"square", -1, -1, DTypeRule::Same, std::nullopt, composite},
      {"clamp", -1, -1, DTypeRule::Same, std::nullopt, composite},
      {"gelu", -1, -1, DTypeRule::FloatOnly, std::nullopt, composite},
      {"softplus", -1, -1, DTypeRule::FloatOnly, std::nullopt, composite},
      {"isnan", -1, -1, DTypeRule::Bool, std::nullopt, composite},
      {"isfinite", -1, -1, DTypeRule::Bool, std::nullopt, composite},
      {"argmax", -1, -1, DTypeRule::I64, std::nullopt, composite},
      {"argmin", -1, -1, DTypeRule::I64, std::nullopt, composite},
      {"cumsum", -1, -1, DTypeRule::Same, std::nullopt, composite},
      {"load", -1, -1, DTypeRule::Given, std::nullopt, load},
      {"save", -1, -1, DTypeRule::NoValue, std::nullopt, save},
      {"time", -1, -1, DTypeRule::F64, Op::Time, time},
      {"load_checkpoint", -1, -1, DTypeRule::Given, std::nullopt, loadCheckpoint},
      {"save_checkpoint", -1, -1, DTypeRule::NoValue, std::nullopt, saveCheckpoint},
      {"concat", -1, -1, DTypeRule::Same, std::nullopt, M(cutBuiltin)},
      {"stack", -1, -1, DTypeRule::Same, std::nullopt, M(cutBuiltin)},
      {"split", -1, -1, DTypeRule::Same, std::nullopt, M(cutBuiltin)},
      {"chunk", -1, -1, DTypeRule::Same, std::nullopt, M(cutBuiltin)},
      {"pad", -1, -1, DTypeRule::Same, std::nullopt, M(cutBuiltin)},
      {"gather", -1, -1, DTypeRule::Same, std::nullopt, M(gatherBuiltin)},
      {"one_hot", -1, -1, DTypeRule::Given, std::nullopt, M(gatherBuiltin)},
      {"dropout", -1, -1, DTypeRule::FloatOnly, std::nullopt, M(samplingBuiltin)},
      {"topk", -1, -1, DTypeRule::I64, std::nullopt, M(samplingBuiltin)},
      {"logical_not", 1, 1, DTypeRule::Bool, Op::Not, elementwise},
  };
  return table;
}

#undef M

const BuiltinInfo *findBuiltin(const std::string &name) {
  static const std::unordered_map<std::string, const BuiltinInfo *> byName = [] {
    std::unordered_map<std::string, const BuiltinInfo *> m;
    for (const BuiltinInfo &b : builtinTable())
      m.emplace(b.name, &b);
    return m;
  }();
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : it->second;
}

const std::vector<std::string> &builtinKeywords(const std::string &name) {
  static const std::unordered_map<std::string, std::vector<std::string>> table = {
      {"sum", {"dim", "dims"}},
      {"mean", {"dim", "dims"}},
      {"max", {"dim", "dims"}},
      {"min", {"dim", "dims"}},
      {"transpose", {"perm", "dim0", "dim1"}},
      {"reshape", {"shape"}},
      {"broadcast_to", {"shape"}},
      {"index_select", {"dim"}},
      {"index_add", {"dim"}},
      {"arange_like", {"dim"}},
      {"argmax", {"dim"}},
      {"argmin", {"dim"}},
      {"cumsum", {"dim"}},
      {"gather", {"dim"}},
      {"one_hot", {"dtype"}},
      {"concat", {"dim"}},
      {"stack", {"dim"}},
      {"split", {"dim"}},
      {"chunk", {"dim"}},
      {"pad", {"dim", "value"}},
      {"dropout", {"p", "seed"}},
      {"topk", {"k", "dim", "largest"}},
      {"full", {"value"}},
      {"randn", {"seed"}},
      {"rand", {"seed"}},
      {"arange", {"dim"}},
      {"iota", {"dim"}},
      {"grad", {"wrt"}},
      {"value_and_grad", {"wrt"}},
  };
  static const std::vector<std::string> none;
  auto it = table.find(name);
  return it == table.end() ? none : it->second;
}

} // namespace dt
