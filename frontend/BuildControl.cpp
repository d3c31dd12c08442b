// This file implements the IR builder's control flow: `for` loops (constant or
// run-time bounds), `if`/`else` and `while` on host scalars, with the
// variables they assign carried through as SSA values (ir/Ops.def: For, If,
// While). Every rank must take the same branch and run the same iterations,
// so conditions and bounds are host values or replicated rank-0 scalars
// (which every rank holds identically); a placement never changes per branch
// because assignment keeps a variable's declared type.
#include "frontend/BuildIR.h"

#include <algorithm>

namespace dt {

namespace {

/// Names assigned anywhere in `body` (nested loops and branches included).
void assignedNames(const std::vector<ast::StmtPtr> &body, std::vector<std::string> &out) {
  for (auto &s : body) {
    if (s->kind == ast::Stmt::Assign && std::find(out.begin(), out.end(), s->names[0]) == out.end())
      out.push_back(s->names[0]);
    if (s->kind == ast::Stmt::For || s->kind == ast::Stmt::While || s->kind == ast::Stmt::If) {
      assignedNames(s->body, out);
      assignedNames(s->elseBody, out);
    }
  }
}

const TensorType kHostI64{DType::I64, {}, nullptr, {}};
const TensorType kHostBool{DType::Bool, {}, nullptr, {}};

} // namespace

void IRBuilder::carriedVars(const std::vector<const std::vector<ast::StmtPtr> *> &bodies,
                            std::vector<std::string> &carried, std::vector<int> &before) {
  std::vector<std::string> assigned;
  for (auto *body : bodies)
    assignedNames(*body, assigned);
  for (auto &n : leafNames(assigned)) {
    Binding *b = lookup(n);
    if (b && b->kind == Binding::Var && b->id >= 0) {
      carried.push_back(n);
      before.push_back(b->id);
    }
  }
}

void IRBuilder::bindCarriedArgs(Block &body, std::map<std::string, Binding> &scope,
                                const std::vector<std::string> &carried,
                                const std::vector<int> &before) {
  for (size_t i = 0; i < carried.size(); ++i) {
    Binding b = *lookup(carried[i]);
    b.id = fn().newValue(typeOf(before[i]), carried[i]);
    body.args.push_back(b.id);
    scope[carried[i]] = b;
  }
}

bool IRBuilder::yieldCarried(const std::vector<std::string> &carried, Inst &y) {
  bool ok = true;
  for (auto &n : carried) {
    int id = lookup(n)->id;
    ok = ok && id >= 0;
    y.operands.push_back(id);
  }
  return ok;
}

void IRBuilder::finishCarried(Inst in, const std::vector<std::string> &carried,
                              const std::vector<int> &before, bool ok) {
  if (!ok) {
    for (auto &n : carried)
      lookup(n)->id = -1;
    return;
  }
  for (size_t i = 0; i < carried.size(); ++i) {
    int id = fn().newValue(typeOf(before[i]), carried[i]);
    in.results.push_back(id);
    lookup(carried[i])->id = id;
  }
  blk().insts.push_back(std::move(in));
}

namespace {} // namespace

std::optional<int64_t> IRBuilder::hostIntConstant(int id) {
  const TensorType &t = typeOf(id);
  if (!t.isHost() || t.rank() != 0 || (t.dtype != DType::I32 && t.dtype != DType::I64))
    return std::nullopt;
  for (Block *b : blockStack_)
    for (auto &in : b->insts)
      if (in.results.size() == 1 && in.results[0] == id &&
          (in.op == Op::Fill || in.op == Op::Const) && in.attrs.ints.size() == 1)
        return in.attrs.ints[0]; // integer constants are exact in `ints` (ir/IR.h)
  return std::nullopt;
}

int IRBuilder::condition(const ast::Expr &e, const char *what) {
  // Inside the condition, host scalars and replicated rank-0 values mix:
  // emit() reads the replicated ones to the host (`if flag && loss > 0`).
  bool outer = hostCondition_;
  hostCondition_ = true;
  EV v = expr(e);
  hostCondition_ = outer;
  if (v.poison)
    return -1;
  if (v.literal) {
    if (!v.isBool) {
      diags().error(DiagId::CondNotBool, e.loc, {what, exprText(&e)}).hint = "compare it: `x != 0`";
      return -1;
    }
    return materialize(v, kHostBool, e.loc);
  }
  if (v.ids.size() != 1) {
    diags().error(DiagId::CondNotBool, e.loc, {what, "a tuple"});
    return -1;
  }
  const TensorType &t = typeOf(v.ids[0]);
  if (t.rank() != 0) {
    diags().error(DiagId::CondNotScalar, e.loc, {what, t.str()}).hint =
        "choose elementwise with `where(c, a, b)`, or reduce the condition to a scalar first";
    return -1;
  }
  if (t.dtype != DType::Bool) {
    diags().error(DiagId::CondNotBool, e.loc, {what, t.str()}).hint = "compare it: `x != 0`";
    return -1;
  }
  if (t.isHost())
    return v.ids[0];
  for (auto &p : t.placements)
    if (!p.isReplicate()) {
      auto &d = diags().error(DiagId::CondNotReplicated, e.loc,
                              {"the condition of `" + std::string(what) + "`", t.str()});
      fixHint(d, &e, relayoutText(&e, replicatedType(t.dtype, t.shape, t.mesh)));
      return -1;
    }
  // Every rank of the mesh holds the same replica (ranks outside it receive
  // it in `to_host`), so every rank reads the same bool, NaN comparisons
  // included (they are false on every rank alike).
  EV h = emit(Op::ToHost, {v}, {&e}, e.loc, {}, {kHostBool});
  return h.poison ? -1 : h.ids[0];
}

int IRBuilder::seedFor(int sid, const TensorType &t, const ast::Expr *sx, SrcLoc loc) {
  if (t.isHost())
    return sid;
  EV s = emit(Op::Distribute, {EV::one(sid)}, {sx}, loc, {},
              {replicatedType(typeOf(sid).dtype, {}, t.mesh)});
  return s.poison ? -1 : s.ids[0];
}

bool IRBuilder::intScalar(const ast::Expr &e, const char *what, int64_t &c, int &id) {
  id = -1;
  if (e.kind == ast::Expr::Name && symbols_ && symbols_->count(e.text)) {
    const Dim &d = symbols_->at(e.text);
    c = d.isSym() ? 1 : d.value; // a symbolic check builds one iteration
    return true;
  }
  EV v = expr(e);
  if (v.poison)
    return false;
  auto bad = [&](const std::string &got) -> Diagnostic & {
    if (std::string(what) == "for")
      return diags().error(DiagId::BadLoopBounds, e.loc, {got});
    return diags().error(DiagId::NotIntegerScalar, e.loc, {what, got});
  };
  if (v.literal) {
    // A seed may be written as a whole number (`seed=1e3`); literalInt
    // rejects a fraction or one out of int64's range.
    if (v.isBool || (!v.isInt && std::string(what) == "for")) {
      bad(exprText(&e));
      return false;
    }
    return literalInt(v, e.loc, c);
  }
  if (v.ids.size() != 1) {
    bad("a tuple");
    return false;
  }
  // An integer variable holding a constant (`var n = 3`, `let n : i64[] = 3`)
  // is known here; one that a loop changes is a run-time bound.
  if (auto k = hostIntConstant(v.ids[0])) {
    c = *k;
    return true;
  }
  const TensorType &t = typeOf(v.ids[0]);
  if (t.rank() != 0 || (t.dtype != DType::I32 && t.dtype != DType::I64)) {
    bad(t.str()).hint =
        "use a literal, a size symbol, a host integer or a replicated rank-0 integer tensor";
    return false;
  }
  if (!t.isHost()) {
    for (auto &p : t.placements)
      if (!p.isReplicate()) {
        std::string role =
            std::string(what) == "for" ? "a `for` bound" : "`" + std::string(what) + "`";
        auto &d = diags().error(DiagId::CondNotReplicated, e.loc, {role, t.str()});
        fixHint(d, &e, relayoutText(&e, replicatedType(t.dtype, t.shape, t.mesh)));
        return false;
      }
    v = emit(Op::ToHost, {v}, {&e}, e.loc, {}, {TensorType{t.dtype, {}, nullptr, {}}});
    if (v.poison)
      return false;
  }
  if (typeOf(v.ids[0]).dtype != DType::I64) {
    v = emit(Op::Cast, {v}, {&e}, e.loc, {}, {kHostI64});
    if (v.poison)
      return false;
  }
  id = v.ids[0];
  return true;
}

void IRBuilder::forLoop(const ast::Stmt &s) {
  int64_t lo = 0, hi = 0;
  int loId = -1, hiId = -1;
  bool ok = intScalar(*s.lo, "for", lo, loId);
  ok &= intScalar(*s.hi, "for", hi, hiId);
  bool runtime = loId >= 0 || hiId >= 0;
  if (ok && runtime) { // both become operands
    auto constant = [&](int64_t c) {
      EV lit;
      lit.literal = lit.isInt = true;
      lit.ival = c;
      lit.number = (double)c;
      return materialize(lit, kHostI64, s.loc);
    };
    if (loId < 0)
      loId = constant(lo);
    if (hiId < 0)
      hiId = constant(hi);
  }
  // Loop-carried values: outer variables that the body assigns.
  std::vector<std::string> carried;
  std::vector<int> inits;
  carriedVars({&s.body}, carried, inits);
  Block body;
  int iv = fn().newValue(kHostI64, s.names[0]);
  body.args.push_back(iv);
  std::map<std::string, Binding> scope;
  scope[s.names[0]] = Binding{Binding::Value, iv, {}, 0, s.loc, nullptr};
  bindCarriedArgs(body, scope, carried, inits);
  scopes_.push_back(std::move(scope));
  scopes_.push_back({}); // the body's own names
  blockStack_.push_back(&body);
  block(s.body);
  scopes_.pop_back();
  Inst y;
  y.op = Op::Yield;
  y.loc = s.loc;
  ok = yieldCarried(carried, y) && ok;
  body.insts.push_back(std::move(y));
  blockStack_.pop_back();
  scopes_.pop_back();
  Inst f;
  f.op = Op::For;
  f.attrs.ints = {lo, hi, 1};
  if (runtime) {
    f.attrs.ints = {0, 0, 1};
    f.attrs.flag = true;
    f.operands = {loId, hiId};
  }
  f.operands.insert(f.operands.end(), inits.begin(), inits.end());
  f.loc = s.loc;
  f.regions.push_back(std::move(body));
  finishCarried(std::move(f), carried, inits, ok);
}

void IRBuilder::ifStmt(const ast::Stmt &s) {
  int c = condition(*s.value, "if");
  // The outer variables either branch assigns: the `if`'s results.
  std::vector<std::string> carried;
  std::vector<int> before;
  carriedVars({&s.body, &s.elseBody}, carried, before);
  bool ok = c >= 0;
  auto branch = [&](const std::vector<ast::StmtPtr> &stmts, Block &out) {
    scopes_.push_back({});
    blockStack_.push_back(&out);
    block(stmts);
    scopes_.pop_back();
    Inst y;
    y.op = Op::Yield;
    y.loc = s.loc;
    ok = yieldCarried(carried, y) && ok;
    for (size_t i = 0; i < carried.size(); ++i)
      lookup(carried[i])->id = before[i]; // the other branch starts from the values before the `if`
    out.insts.push_back(std::move(y));
    blockStack_.pop_back();
  };
  Block thenB, elseB;
  branch(s.body, thenB);
  branch(s.elseBody, elseB);
  Inst in;
  in.op = Op::If;
  in.operands = {c};
  in.loc = s.loc;
  in.regions.push_back(std::move(thenB));
  in.regions.push_back(std::move(elseB));
  finishCarried(std::move(in), carried, before, ok);
}

void IRBuilder::whileLoop(const ast::Stmt &s) {
  // The condition is built twice: before the loop (whether to enter it) and
  // at the end of the body on the updated variables (whether to go on).
  int c0 = condition(*s.value, "while");
  std::vector<std::string> carried;
  std::vector<int> inits;
  carriedVars({&s.body}, carried, inits);
  Block body;
  std::map<std::string, Binding> scope;
  bindCarriedArgs(body, scope, carried, inits);
  scopes_.push_back(std::move(scope));
  scopes_.push_back({}); // the body's own names end before the condition
  blockStack_.push_back(&body);
  block(s.body);
  scopes_.pop_back();
  // The first build reported any error of the condition: not twice.
  int c1 = c0 >= 0 ? condition(*s.value, "while") : -1;
  Inst y;
  y.op = Op::Yield;
  y.loc = s.loc;
  y.operands.push_back(c1);
  bool ok = yieldCarried(carried, y) && c0 >= 0 && c1 >= 0;
  body.insts.push_back(std::move(y));
  blockStack_.pop_back();
  scopes_.pop_back();
  Inst w;
  w.op = Op::While;
  w.operands = {c0};
  w.operands.insert(w.operands.end(), inits.begin(), inits.end());
  w.loc = s.loc;
  w.regions.push_back(std::move(body));
  finishCarried(std::move(w), carried, inits, ok);
}

} // namespace dt
