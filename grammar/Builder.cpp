// This file implements the AST builder behind the Bison actions (see
// grammar/Builder.h): node construction, source locations, the checks the
// grammar leaves to code, and the expression depth bound.
#include "grammar/Builder.h"

#include <cstdint>

#include <cstring>

#include <cmath>

#include <cfenv>

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace dt::gram {

using ast::Expr;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtPtr;

SrcLoc Builder::loc(const Span &s) const {
  // A multi-line span points at its first byte (endCol 0 = one character).
  int endCol = s.end.line == s.begin.line ? s.end.col : 0;
  return SrcLoc{file_, s.begin.line, s.begin.col, endCol};
}

SrcLoc Builder::loc(const Span &whole, const Span &anchor) const {
  return whole.begin.line == whole.end.line ? loc(whole) : loc(anchor);
}

void Builder::syntaxError(const Span &at, const std::string &message, const Lexer::Opener *opener) {
  // Error recovery can stop twice at one place (the end of the input): the
  // first error there says it.
  if (const Diagnostic *last = diags_.last(); last && last->id == DiagId::ParseError &&
                                               last->loc.file == loc(at).file &&
                                               last->loc.line == loc(at).line &&
                                               last->loc.col == loc(at).col)
    return;
  auto &d = diags_.error(DiagId::ParseError, loc(at), {message});
  if (opener) {
    const char close = opener->ch == '(' ? ')' : opener->ch == '[' ? ']' : '}';
    d.notes.push_back(std::string("the `") + opener->ch + "` at line " +
                      std::to_string(opener->at.begin.line) + ":" +
                      std::to_string(opener->at.begin.col) + " is never closed");
    if (d.hint.empty())
      d.hint = std::string("close it with `") + close + "`";
  }
  // The control-flow mistakes a newcomer makes most, named with their fix.
  if (message.find("found `else`") != std::string::npos)
    d.hint = "`else` continues an `if`: write it after the `}` on the same line: `} else {`";
  else if (message.find("found `,`") != std::string::npos &&
           message.rfind("expected `)`", 0) == 0)
    d.hint = "parentheses group one value: a tuple comes from a function (`return a, b`, "
             "then `let (a, b) = f(...)`)";
  else if (message.find("found `{` of a block") != std::string::npos)
    d.hint = "write the condition (`if c {`, `while c {`) or the range (`for i in 0..n {`) "
             "before the `{`";
}

int64_t Builder::toInt(const std::string &text, const Span &s) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end == text.c_str() || *end) {
    syntaxError(s, "expected an integer, found `" + text + "`");
    return 0;
  }
  return v;
}

// --- expressions -------------------------------------------------------------

ExprPtr Builder::leaf(Expr::Kind k, const Span &s) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->loc = loc(s);
  e->full = e->loc;
  depth_.erase(e.get()); // a stale entry of a node freed by error recovery
  return e;
}

int Builder::depthOf(const Expr *e) const {
  auto it = depth_.find(e);
  return it == depth_.end() ? 1 : it->second;
}

ExprPtr Builder::finish(ExprPtr e) {
  int d = 0;
  for (const auto &a : e->args)
    if (a)
      d = std::max(d, depthOf(a.get()));
  for (const auto &kw : e->kwargs)
    if (kw.second)
      d = std::max(d, depthOf(kw.second.get()));
  for (const auto &a : e->args)
    if (a)
      depth_.erase(a.get());
  for (const auto &kw : e->kwargs)
    if (kw.second)
      depth_.erase(kw.second.get());
  if (d + 1 > kMaxNesting) {
    if (!reportedDepth_)
      diags_.error(DiagId::ParseTooDeep, e->loc, {std::to_string(kMaxNesting)}).hint =
          "name parts of it with `let` (a long sum `a + b + ...` nests one level per term)";
    reportedDepth_ = true;
    // The stub is a valid leaf so that the AST still prints as source.
    auto stub = std::make_unique<Expr>();
    stub->kind = Expr::Number;
    stub->isInt = true;
    stub->loc = e->loc;
    depth_.erase(stub.get());
    return stub;
  }
  depth_[e.get()] = d + 1;
  return e;
}

/// The decimal `text` rounded to odd at f64's precision: truncated (glibc's
/// strtod rounds in the current mode and flags an inexact result), with the
/// last bit set when inexact. Rounding that to a narrower float (at least two
/// bits narrower) gives the decimal's own nearest value of that type.
static double roundToOdd(const std::string &text) {
  std::fenv_t env;
  std::feholdexcept(&env);
  std::fesetround(FE_TOWARDZERO);
  double t = std::strtod(text.c_str(), nullptr);
  const bool inexact = std::fetestexcept(FE_INEXACT);
  std::fesetenv(&env);
  if (!inexact || !std::isfinite(t))
    return t;
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits |= 1;
  std::memcpy(&t, &bits, sizeof bits);
  return t;
}

ExprPtr Builder::number(const std::string &text, bool isInt, const Span &s) {
  auto e = leaf(Expr::Number, s);
  e->isInt = isInt;
  if (isInt) {
    // Exact: a double holds integers only up to 2^53. Out of range was
    // reported by the lexer (`malformed number`).
    errno = 0;
    long long v = std::strtoll(text.c_str(), nullptr, 10);
    e->intValue = errno == ERANGE ? 0 : v;
    e->number = (double)e->intValue;
  } else {
    e->number = std::strtod(text.c_str(), nullptr);
    e->numberOdd = roundToOdd(text);
  }
  return e;
}

ExprPtr Builder::boolean(bool v, const Span &s) {
  auto e = leaf(Expr::Bool, s);
  e->boolValue = v;
  return e;
}

ExprPtr Builder::string(const std::string &v, const Span &s) {
  auto e = leaf(Expr::String, s);
  e->text = v;
  return e;
}

ExprPtr Builder::name(const std::string &v, const Span &s) {
  auto e = leaf(Expr::Name, s);
  e->text = v;
  return e;
}

ExprPtr Builder::list(std::vector<ExprPtr> items, const Span &s) {
  auto e = leaf(Expr::List, s);
  e->args = std::move(items);
  return finish(std::move(e));
}

ExprPtr Builder::unary(const char *op, ExprPtr x, const Span &opLoc, const Span &whole) {
  auto e = leaf(Expr::Unary, whole);
  e->loc = loc(whole, opLoc);
  e->op = op;
  e->args.push_back(std::move(x));
  return finish(std::move(e));
}

ExprPtr Builder::binary(const std::string &op, ExprPtr l, ExprPtr r, const Span &opLoc,
                        const Span &whole) {
  auto e = leaf(Expr::Binary, whole);
  e->loc = loc(whole, opLoc);
  e->op = op;
  e->args.push_back(std::move(l));
  e->args.push_back(std::move(r));
  return finish(std::move(e));
}

ExprPtr Builder::call(const std::string &callee, CallArgs a, const Span &calleeLoc,
                      const Span &whole) {
  auto e = leaf(Expr::Call, calleeLoc);
  e->full = loc(whole);
  e->callee = callee;
  e->args = std::move(a.args);
  e->kwargs = std::move(a.kwargs);
  e->kwargLocs = std::move(a.kwargLocs);
  return finish(std::move(e));
}

ExprPtr Builder::callExpr(ExprPtr callee, CallArgs a, const Span &whole) {
  auto e = std::make_unique<Expr>();
  e->kind = Expr::CallExpr;
  e->loc = callee->loc;
  e->full = loc(whole);
  e->args.push_back(std::move(callee));
  for (auto &x : a.args)
    e->args.push_back(std::move(x));
  e->kwargs = std::move(a.kwargs);
  e->kwargLocs = std::move(a.kwargLocs);
  return finish(std::move(e));
}

ExprPtr Builder::layoutExpr(LayoutPtr l) {
  auto e = std::make_unique<Expr>();
  e->kind = Expr::Layout;
  depth_.erase(e.get());
  e->loc = l->loc;
  e->full = l->loc;
  e->layout = std::move(l);
  return e;
}

ExprPtr Builder::slice(ExprPtr lo, ExprPtr hi, ExprPtr step, const Span &s) {
  auto e = leaf(Expr::Slice, s);
  e->args.push_back(std::move(lo));
  e->args.push_back(std::move(hi));
  e->args.push_back(std::move(step));
  return finish(std::move(e));
}

ExprPtr Builder::group(std::vector<ExprPtr> items, const Span &s) {
  auto e = leaf(Expr::Group, s);
  e->args = std::move(items);
  return finish(std::move(e));
}

/// The dims-mapping layout entry that subscript `x` spells, if any: `_`,
/// `x`, `(x, y)`, or a PyTorch-style `Shard(0)` kept for the IR builder to
/// report.
static std::optional<ast::LayoutEntry> layoutEntryOf(const Expr &x) {
  ast::LayoutEntry le;
  le.loc = x.full.line ? x.full : x.loc;
  // an integer (seed 003's dims mapping `m[1, 0, -1]`) as its decimal text
  auto index = [](const Expr &a) -> std::optional<std::string> {
    if (a.kind == Expr::Number && a.isInt)
      return std::to_string(a.intValue);
    if (a.kind == Expr::Unary && a.op == "-" && a.args.size() == 1 &&
        a.args[0]->kind == Expr::Number && a.args[0]->isInt)
      return "-" + std::to_string(a.args[0]->intValue);
    return std::nullopt;
  };
  if (x.kind == Expr::Name && x.text.find('.') == std::string::npos) {
    if (x.text != "_")
      le.axes.push_back(x.text);
    return le;
  }
  if (auto i = index(x)) {
    le.axes.push_back(*i);
    return le;
  }
  if (x.kind == Expr::Group) {
    for (auto &a : x.args) {
      if (auto i = index(*a)) {
        le.axes.push_back(*i);
        continue;
      }
      if (a->kind != Expr::Name || a->text == "_" || a->text.find('.') != std::string::npos)
        return std::nullopt;
      le.axes.push_back(a->text);
    }
    return le;
  }
  if (x.kind == Expr::Call && x.kwargs.empty() && x.args.size() <= 1 &&
      x.callee.find('.') == std::string::npos) {
    le.torch = true;
    le.kind = x.callee;
    if (x.args.size() == 1) {
      const Expr &a = *x.args[0];
      if (a.kind == Expr::Number && a.isInt)
        le.dim = a.intValue;
      else if (a.kind == Expr::Name)
        le.reduce = a.text;
      else
        return std::nullopt;
    }
    return le;
  }
  return std::nullopt;
}

ExprPtr Builder::subscript(ExprPtr base, std::vector<ExprPtr> items, const Span &s) {
  auto e = leaf(Expr::Subscript, s);
  if (base->kind == Expr::Name && base->text.find('.') == std::string::npos) {
    std::vector<ast::LayoutEntry> entries;
    bool ok = true;
    for (auto &x : items) {
      auto le = layoutEntryOf(*x);
      if (!le) {
        ok = false;
        break;
      }
      entries.push_back(*le);
    }
    if (ok)
      e->layout = layout(base->text, false, std::move(entries), s);
  }
  e->args.push_back(std::move(base));
  for (auto &x : items)
    e->args.push_back(std::move(x));
  return finish(std::move(e));
}

void Builder::addArg(CallArgs &a, ExprPtr e) {
  if (!a.kwargs.empty())
    diags_.error(DiagId::ParseError, e->loc, {"positional argument after keyword argument"});
  a.args.push_back(std::move(e));
}

void Builder::addKwarg(CallArgs &a, const std::string &k, ExprPtr e, const Span &s) {
  for (const auto &kw : a.kwargs) {
    if (kw.first == k) {
      syntaxError(s, "keyword argument `" + k + "` given twice");
      return;
    }
  }
  a.kwargs.emplace_back(k, std::move(e));
  a.kwargLocs.push_back(loc(s));
}

void Builder::addName(NameList &l, const std::string &n, const Span &s) {
  l.names.push_back(n);
  l.locs.push_back(loc(s));
}

NameList Builder::oneName(const std::string &n, const Span &s) {
  NameList l;
  addName(l, n, s);
  return l;
}

std::vector<ExprPtr> Builder::prepend(ExprPtr first, std::vector<ExprPtr> rest) {
  rest.insert(rest.begin(), std::move(first));
  return rest;
}

// --- types and layouts -------------------------------------------------------------

ast::TypeSpec Builder::type(const std::string &dtype, ast::TypeSpec dims, LayoutPtr layout,
                            const Span &s) {
  dims.loc = loc(s);
  dims.dtype = dtype;
  dims.layout = std::move(layout);
  return dims;
}

ExprPtr Builder::field(ExprPtr base, const std::string &name, const Span &nameLoc,
                       const Span &whole) {
  auto e = leaf(Expr::Field, nameLoc);
  e->full = loc(whole);
  e->text = name;
  e->args.push_back(std::move(base));
  return finish(std::move(e));
}

ast::TypeSpec Builder::bareType(const std::string &name, const Span &s) {
  ast::TypeSpec t;
  t.loc = loc(s);
  t.dtype = name;
  t.bare = true;
  return t;
}

void Builder::addDim(ast::TypeSpec &t, const std::string &d, const Span &s) {
  t.dims.push_back(d);
  t.dimLocs.push_back(loc(s));
}

LayoutPtr Builder::layout(const std::string &mesh, bool placementForm,
                          std::vector<ast::LayoutEntry> entries, const Span &s) {
  auto l = std::make_unique<ast::LayoutSpec>();
  l->loc = loc(s);
  l->mesh = mesh;
  l->placementForm = placementForm;
  l->entries = std::move(entries);
  return l;
}

ast::LayoutEntry Builder::dimEntry(NameList axes, const Span &s) {
  ast::LayoutEntry e;
  e.loc = loc(s);
  if (axes.names.size() == 1 && axes.names[0] == "_")
    return e;
  for (size_t i = 0; i < axes.names.size(); ++i) {
    if (axes.names[i] == "_")
      diags_.error(DiagId::ParseError, axes.locs[i], {"`_` cannot be part of an axis tuple"});
    else
      e.axes.push_back(axes.names[i]);
  }
  return e;
}

ast::LayoutEntry Builder::shardOrder(ast::LayoutEntry e, const std::string &kw,
                                     const std::string &k, const Span &kwLoc) {
  if (kw != "order")
    syntaxError(kwLoc, "expected `order=` in `shard(dim, order=k)`, found `" + kw + "`");
  else if (e.kind != "shard")
    syntaxError(kwLoc, "`order=` applies to `shard(dim, order=k)` only");
  else
    e.order = toInt(k, kwLoc);
  return e;
}

ast::LayoutEntry Builder::torchEntry(const std::string &kind, const std::string &arg, bool argIsInt,
                                     const Span &s) {
  ast::LayoutEntry e;
  e.loc = loc(s);
  e.torch = true;
  e.kind = kind;
  if (argIsInt)
    e.dim = toInt(arg, s);
  else if (!arg.empty())
    e.reduce = arg;
  return e;
}

ast::LayoutEntry Builder::placement(const std::string &axis, const std::string &kind,
                                    const std::string &arg, bool argIsInt, const Span &kindLoc,
                                    const Span &s) {
  ast::LayoutEntry e;
  e.loc = loc(s);
  e.axis = axis;
  std::string k = kind;
  if (!k.empty() && k[0] >= 'A' && k[0] <= 'Z')
    k[0] = (char)(k[0] - 'A' + 'a');
  if (k == "replicate" && arg.empty()) {
    e.kind = k;
  } else if (k == "shard" && argIsInt) {
    e.kind = k;
    e.dim = toInt(arg, s);
  } else if (k == "partial" && !argIsInt) {
    e.kind = k;
    if (!arg.empty())
      e.reduce = arg;
    if (e.reduce != "sum" && e.reduce != "avg" && e.reduce != "max" && e.reduce != "min") {
      syntaxError(s, "expected `sum`, `avg`, `max` or `min` in `partial(...)`, found `" + e.reduce +
                         "`");
      e.reduce = "sum"; // keep the AST printable as valid source
    }
  } else {
    e.kind = "replicate";
    syntaxError(kindLoc, "expected a placement `replicate`, `shard(dim)` or `partial(op)`, "
                         "found `" +
                             kind + (arg.empty() ? "" : "(" + arg + ")") + "`");
  }
  return e;
}

// --- statements --------------------------------------------------------------------

StmtPtr Builder::stmt(Stmt::Kind k, const Span &s) {
  auto st = std::make_unique<Stmt>();
  st->kind = k;
  st->loc = loc(s);
  return st;
}

StmtPtr Builder::importStmt(const std::string &module, const Span &s) {
  auto st = stmt(Stmt::Import, s);
  st->module = module;
  return st;
}

StmtPtr Builder::meshStmt(const std::string &name, ast::MeshDecl axes, const Span &s) {
  auto st = stmt(Stmt::Mesh, s);
  st->mesh = std::make_unique<ast::MeshDecl>(std::move(axes));
  st->mesh->name = name;
  return st;
}

void Builder::addMeshAxis(ast::MeshDecl &m, const std::string &axis, const std::string &size,
                          const Span &s) {
  m.axes.emplace_back(axis, toInt(size, s));
  m.axisLocs.push_back(loc(s));
}

void Builder::addDevice(ast::MeshDecl &m, const std::string &id, const Span &s) {
  m.devices.push_back(toInt(id, s));
  m.deviceLocs.push_back(loc(s));
  m.hasDevices = true;
}

ast::MeshDecl Builder::mergeDevices(ast::MeshDecl axes, ast::MeshDecl devices) {
  axes.devices = std::move(devices.devices);
  axes.deviceLocs = std::move(devices.deviceLocs);
  axes.hasDevices = devices.hasDevices;
  return axes;
}

StmtPtr Builder::let(bool isVar, NameList names, std::unique_ptr<ast::TypeSpec> type, ExprPtr init,
                     const Span &s) {
  auto st = stmt(isVar ? Stmt::Var : Stmt::Let, s);
  st->names = std::move(names.names);
  st->nameLocs = std::move(names.locs);
  st->type = std::move(type);
  st->value = std::move(init);
  return st;
}

StmtPtr Builder::assign(const std::string &name, const Span &nameLoc, ExprPtr v, const Span &s) {
  auto st = stmt(Stmt::Assign, s);
  st->names.push_back(name);
  st->nameLocs.push_back(loc(nameLoc));
  st->value = std::move(v);
  return st;
}

StmtPtr Builder::fn(const std::string &name, NameList typeParams, std::vector<ast::Param> params,
                    std::vector<ast::TypeSpec> results, StmtList body, const Span &s) {
  auto st = stmt(Stmt::Fn, s);
  st->fn = std::make_unique<ast::FnDecl>();
  st->fn->name = name;
  st->fn->loc = st->loc;
  st->fn->typeParams = std::move(typeParams.names);
  st->fn->typeParamLocs = std::move(typeParams.locs);
  st->fn->params = std::move(params);
  st->fn->results = std::move(results);
  st->fn->body = std::move(body);
  return st;
}

StmtPtr Builder::structStmt(const std::string &name, std::vector<ast::Param> fields,
                            const Span &s) {
  auto st = stmt(Stmt::Struct, s);
  st->record = std::make_unique<ast::StructDecl>();
  st->record->name = name;
  st->record->fields = std::move(fields);
  return st;
}

ast::Param Builder::param(const std::string &name, ast::TypeSpec t, const Span &s) {
  ast::Param p;
  p.loc = loc(s);
  p.name = name;
  p.type = std::move(t);
  return p;
}

StmtPtr Builder::forStmt(const std::string &var, const Span &varLoc, ExprPtr lo, ExprPtr hi,
                         StmtList body, const Span &s) {
  auto st = stmt(Stmt::For, s);
  st->names.push_back(var);
  st->nameLocs.push_back(loc(varLoc));
  st->lo = std::move(lo);
  st->hi = std::move(hi);
  st->body = std::move(body);
  return st;
}

StmtPtr Builder::ifStmt(ExprPtr cond, StmtList body, StmtList elseBody, const Span &s) {
  auto st = stmt(Stmt::If, s);
  st->value = std::move(cond);
  st->body = std::move(body);
  st->hasElse = !elseBody.empty();
  // An `else if` chain nests one level per branch (the parser's rule is
  // right-recursive, and so is everything that walks the AST): bound it as
  // bracket nesting is bounded, with the same error once.
  if (elseBody.size() == 1 && elseBody[0] && elseBody[0]->kind == Stmt::If)
    st->elseChain = elseBody[0]->elseChain + 1;
  st->elseBody = std::move(elseBody);
  if (st->elseChain > kMaxElseChain) {
    if (!reportedDepth_)
      diags_.error(DiagId::ElseChainTooLong, st->loc, {std::to_string(kMaxElseChain)}).hint =
          "an `else if` chain nests one level per branch: split it, or compute the branch with "
          "`where` or an index";
    reportedDepth_ = true;
    st->elseBody.clear(); // drops the chain below, so nothing deeper is kept
    st->hasElse = false;
    st->elseChain = 1;
  }
  return st;
}

StmtPtr Builder::whileStmt(ExprPtr cond, StmtList body, const Span &s) {
  auto st = stmt(Stmt::While, s);
  st->value = std::move(cond);
  st->body = std::move(body);
  return st;
}

StmtPtr Builder::ret(std::vector<ExprPtr> values, const Span &s) {
  auto st = stmt(Stmt::Return, s);
  st->values = std::move(values);
  return st;
}

StmtPtr Builder::print(std::vector<ExprPtr> items, const Span &s) {
  auto st = stmt(Stmt::Print, s);
  st->values = std::move(items);
  return st;
}

StmtPtr Builder::exprStmt(ExprPtr e, const Span &s) {
  auto st = stmt(Stmt::ExprStmt, s);
  st->value = std::move(e);
  return st;
}

} // namespace dt::gram
