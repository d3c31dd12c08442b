// This file implements user functions in the IR builder: the symbolic check of
// a generic function where it is defined, instantiation per distinct call
// signature (binding size symbols, matching written layouts, inferring `@ *`
// layouts), the call instruction, and `grad` / `value_and_grad`.
#include "frontend/BuildIR.h"
#include "frontend/Builtins.h"

#include <algorithm>
#include <tuple>

namespace dt {

namespace {
/// A parameter's type as written: `f32[2*N, H]` (its layout left out).
std::string specText(const ast::TypeSpec &spec) {
  std::string s = spec.dtype + "[";
  for (size_t d = 0; d < spec.dims.size(); ++d)
    s += (d ? ", " : "") + spec.dims[d];
  return s + "]";
}
} // namespace

static std::string signatureKey(const std::string &fn, const std::vector<TensorType> &types) {
  std::string k = fn + "(";
  for (size_t i = 0; i < types.size(); ++i)
    k += (i ? "; " : "") + types[i].str();
  return k + ")";
}

std::string IRBuilder::instantiate(FnInfo &fi, const std::vector<TensorType> &argTypes,
                                   const std::vector<const ast::Expr *> &argExprs, SrcLoc loc,
                                   const std::vector<StructRef> &argShape,
                                   std::vector<StructRef> *resultShape) {
  const ast::FnDecl &decl = *fi.decl;
  // Bodies being built, each inside the one before (a generic calling a
  // generic): past the call depth the executors run, the calls could never
  // run, and the builder's own recursion stays bounded.
  if ((int64_t)instantiating_.size() >= s_.options.maxCallDepth) {
    diags()
        .error(DiagId::CallsTooDeep, loc,
               {std::to_string(s_.options.maxCallDepth), "`" + fi.qualified + "` and below"})
        .hint = "the run would stop there; inline some of the functions, or merge a chain of "
                "small ones";
    return "";
  }
  // Struct-typed and type-parameter parameters are expanded into leaves.
  Signature sig;
  if (!expandSignature(fi, argTypes, argShape, argExprs, loc, sig))
    return "";
  if (resultShape)
    *resultShape = sig.resultShape;
  const auto &params = sig.params;
  // The signature sees the constants its declaration saw, not the caller's.
  struct SignatureConsts {
    const std::map<std::string, Binding> *&at, *saved;
    ~SignatureConsts() { at = saved; }
  } signatureConsts{signatureConsts_, signatureConsts_};
  signatureConsts_ = &fi.consts;
  // Bind the `...` batch dims and dtype parameters (`T[..., D]`), then size
  // symbols, and check every argument against its parameter.
  std::optional<Shape> batch;
  std::map<std::string, DType> dtypes;
  if (!bindGenerics(fi, params, argTypes, argExprs, loc, batch, dtypes))
    return "";
  struct GenericScope {
    IRBuilder &b;
    const Shape *batch;
    const std::map<std::string, DType> *dtypes;
    ~GenericScope() {
      b.batch_ = batch;
      b.dtypeParams_ = dtypes;
    }
  } genericScope{*this, batch_, dtypeParams_};
  batch_ = batch ? &*batch : nullptr;
  dtypeParams_ = &dtypes;
  std::map<std::string, Dim> symbols;
  bool symbolic = false;
  for (size_t i = 0; i < argTypes.size(); ++i) {
    const TensorType &at = argTypes[i];
    symbolic |=
        std::any_of(at.shape.begin(), at.shape.end(), [](const Dim &d) { return d.isSym(); });
    if (!params[i].spec)
      continue;
    const ast::TypeSpec &spec = *params[i].spec;
    auto mismatch = [&](const std::string &want) -> Diagnostic & {
      auto &d = diags().error(DiagId::ArgType, loc,
                              {std::to_string(i + 1), fi.qualified, want, at.str()});
      d.notes.push_back("parameter `" + params[i].name +
                        "` declared here: " + lineOf(params[i].loc, loc));
      return d;
    };
    bool ranked = std::count(spec.dims.begin(), spec.dims.end(), "...") > 0;
    if (!ranked && spec.dims.size() != at.shape.size()) {
      mismatch(specText(spec))
          .notes.push_back("`" + specText(spec) + "` has " + std::to_string(spec.dims.size()) +
                           (spec.dims.size() == 1 ? " dim" : " dims") + "; the argument has " +
                           std::to_string(at.shape.size()));
      return "";
    }
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      // A bare name binds a size symbol; numbers, `let` constants and size
      // arithmetic (`2*N`) are checked against the argument below.
      const std::string &s = spec.dims[d];
      int ad = argDim(spec, d, at.rank());
      bool name = std::all_of(s.begin(), s.end(),
                              [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
      if (ad < 0 || !name || std::isdigit((unsigned char)s[0]) || constNamed(s))
        continue;
      auto [it, fresh] = symbols.emplace(s, at.shape[ad]);
      if (!fresh && it->second != at.shape[ad]) {
        diags().error(DiagId::SymbolConflict, loc, {s, it->second.str(), at.shape[ad].str()});
        return "";
      }
    }
  }
  for (size_t i = 0; i < argTypes.size(); ++i) {
    const TensorType &at = argTypes[i];
    auto mismatch = [&](const std::string &want) -> Diagnostic & {
      auto &d = diags().error(DiagId::ArgType, loc,
                              {std::to_string(i + 1), fi.qualified, want, at.str()});
      d.notes.push_back("parameter `" + params[i].name +
                        "` declared here: " + lineOf(params[i].loc, loc));
      return d;
    };
    if (params[i].exact) {
      // A struct leaf: its declared type exactly (expandSignature names the
      // argument; here only the leaf's own mismatch is left).
      if (*params[i].exact != at) {
        auto &d = mismatch(params[i].exact->str());
        const ast::Expr *e = i < argExprs.size() ? argExprs[i] : nullptr;
        conversionHint(d, e, at, *params[i].exact);
        return "";
      }
      continue;
    }
    const ast::TypeSpec &spec = *params[i].spec;
    auto pt = resolveType(spec, &symbols);
    if (!pt)
      return "";
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      int ad = argDim(spec, d, at.rank());
      if (ad >= 0 && pt->shape[ad] != at.shape[ad]) {
        std::string want = spec.dims[d] == pt->shape[ad].str()
                               ? spec.dims[d]
                               : spec.dims[d] + " = " + pt->shape[ad].str();
        mismatch(specText(spec))
            .notes.push_back("its dim " + std::to_string(ad) + " must be " + want + "; it is " +
                             at.shape[ad].str());
        return "";
      }
    }
    bool anyLayout = spec.layout && spec.layout->mesh == "*";
    if (pt->dtype != at.dtype) {
      // `@ *` is any layout, not the host's (a type without `@`).
      auto &d = mismatch(anyLayout ? pt->str() + " @ *" : pt->str());
      d.notes.push_back(std::string("the element types differ: the argument is `") +
                        dtypeName(at.dtype) + "`, the parameter `" + dtypeName(pt->dtype) + "`");
      if (const ast::Expr *e = i < argExprs.size() ? argExprs[i] : nullptr) {
        std::string fix = "cast(" + exprText(e) + ", " + dtypeName(pt->dtype) + ")";
        d.hint = "write `" + fix + "`";
        d.fixes.push_back(FixIt{e->full, fix});
      }
      return "";
    }
    if (!anyLayout && !pt->sameLayout(at)) {
      auto &d = mismatch(pt->str());
      const ast::Expr *e = i < argExprs.size() ? argExprs[i] : nullptr;
      conversionHint(d, e, at, *pt);
      return "";
    }
  }
  // A call of a function whose body is being built is recursion. It never
  // ends (the language has no conditionals), and a symbolic signature would
  // instantiate forever; say so at the call.
  if (instantiating_.count(fi.qualified)) {
    diags().error(DiagId::RecursiveCall, loc, {fi.qualified}).hint =
        "write the repetition as a `for` loop";
    return "";
  }
  std::string key = signatureKey(fi.qualified, argTypes);
  for (auto &st : argShape)
    key += st ? " " + st->name : " -";
  if (!symbolic) {
    auto it = fi.instances.find(key);
    if (it != fi.instances.end()) {
      if (it->second.empty())
        diags().error<DiagId::RecursiveCall>(loc, fi.qualified);
      return it->second;
    }
    fi.instances[key] = ""; // in progress: detects recursion
    st_.functionsUndo.push_back([q = fi.qualified, key](std::map<std::string, FnInfo> &fns) {
      if (auto it = fns.find(q); it != fns.end())
        it->second.instances.erase(key);
    });
  }
  std::string name = fi.qualified;
  if (s_.module.find(name))
    name += "." + std::to_string(++st_.instanceCounter);

  Function &f = s_.module.functions.emplace_back();
  f.name = name;
  f.loc = loc;
  std::map<std::string, Binding> scope;
  for (size_t i = 0; i < argTypes.size(); ++i) {
    int id = f.newValue(argTypes[i], params[i].name);
    f.params.push_back(id);
    f.body.args.push_back(id);
    scope[params[i].name] = Binding{Binding::Value, id, {}, 0, params[i].loc, nullptr};
  }
  // Struct parameters: `p` and its nested structs `p.attn` as Struct bindings.
  for (auto &[pname, def] : sig.structParams) {
    std::function<void(const std::string &, const StructRef &)> mark = [&](const std::string &n,
                                                                           const StructRef &d) {
      Binding b;
      b.kind = Binding::Struct;
      b.record = d;
      scope[n] = b;
      for (auto &fld : d->fields)
        if (fld.sub)
          mark(n + "." + fld.name, fld.sub);
    };
    mark(pname, def);
  }
  // Declared results (`@ *` results are taken from the return statement).
  std::vector<TensorType> expected;
  std::vector<bool> expectedAny;
  for (auto &res : sig.results) {
    if (res.exact) {
      expectedAny.push_back(false);
      expected.push_back(*res.exact);
      continue;
    }
    const ast::TypeSpec &r = *res.spec;
    auto t = resolveType(r, &symbols);
    if (!t) {
      if (!symbolic)
        fi.instances.erase(key);
      return "";
    }
    expectedAny.push_back(r.layout && r.layout->mesh == "*");
    expected.push_back(*t);
  }
  // A symbolic call (a definition's check) of a function whose own check
  // passed needs only its declared results: building its body again made a
  // chain of n definitions, each calling the one above, cost n^2 and nest n
  // deep, past the call-depth limit though nothing was called. The stub is
  // dropped with the check that made it; a `grad` gets bodies (needBodies_).
  if (symbolic && fi.checked && !fi.generic && needBodies_ == 0 &&
      std::none_of(expectedAny.begin(), expectedAny.end(), [](bool any) { return any; })) {
    f.results = expected;
    return name;
  }

  // Build the body in a fresh context: globals (meshes, functions) only.
  auto savedScopes = std::move(scopes_);
  // Called from the top level: its scope, for declaredBelow's hint.
  struct ProgramScope {
    const std::map<std::string, Binding> *&at, *saved;
    ~ProgramScope() { at = saved; }
  } programScope{programScope_, programScope_};
  if (!programScope_ && !savedScopes.empty() && fnStack_.size() <= 1 &&
      fi.qualified.find('.') == std::string::npos)
    programScope_ = &savedScopes.front();
  auto savedSymbols = symbols_;
  auto savedExpected = expectedResults_;
  auto savedAny = expectedAny_;
  bool savedReturn = sawReturn_;
  bool savedCondition = hostCondition_;
  hostCondition_ = false; // a callee's body is checked as it would be anywhere
  std::string savedPrefix = modulePrefix_;
  size_t diagsBefore = diags().all().size();
  int errorsBefore = diags().errorCount();
  scopes_.clear();
  // The top-level `let` constants declared above the function (sizes, loop
  // bounds), then its parameters; its own `let` constants bind in its scopes.
  scopes_.push_back(fi.consts);
  scopes_.push_back(std::move(scope));
  signatureConsts_ = nullptr;
  symbols_ = &symbols;
  expectedResults_ = &expected;
  expectedAny_ = &expectedAny;
  sawReturn_ = false;
  modulePrefix_ = fi.qualified.substr(0, fi.qualified.rfind('.') + 1);
  if (fi.qualified.find('.') == std::string::npos)
    modulePrefix_.clear();
  auto savedFns = std::move(fnStack_);
  auto savedBlocks = std::move(blockStack_);
  fnStack_ = {&f};
  blockStack_ = {&f.body};
  instantiating_.insert(fi.qualified);
  block(decl.body);
  instantiating_.erase(fi.qualified);
  fnStack_ = std::move(savedFns);
  blockStack_ = std::move(savedBlocks);
  if (!sawReturn_ && !decl.results.empty()) {
    // Point at the value the user meant to return when the body ends with
    // one (`{ a * 2.0 }`), else at the declaration.
    const ast::Stmt *last = decl.body.empty() ? nullptr : decl.body.back().get();
    if (last && last->kind == ast::Stmt::ExprStmt && last->value)
      diags().error(DiagId::MissingReturn, last->loc, {fi.qualified}).hint =
          "a function returns with `return`: write `return " + exprText(last->value.get()) + "`";
    else
      diags().error(DiagId::MissingReturn, decl.loc, {fi.qualified}).hint =
          "end the body with `return VALUE`";
  }
  // A function without results ends with one `return`: the bare one its
  // body wrote, or one added here.
  if (decl.results.empty() &&
      !(sawReturn_ && !f.body.insts.empty() && f.body.insts.back().op == Op::Return)) {
    Inst ret;
    ret.op = Op::Return;
    f.body.insts.push_back(std::move(ret));
  }
  f.results.clear();
  for (auto &in : f.body.insts)
    if (in.op == Op::Return)
      for (int id : in.operands)
        f.results.push_back(f.type(id));
  scopes_ = std::move(savedScopes);
  symbols_ = savedSymbols;
  expectedResults_ = savedExpected;
  expectedAny_ = savedAny;
  sawReturn_ = savedReturn;
  hostCondition_ = savedCondition;
  modulePrefix_ = savedPrefix;
  if (diags().errorCount() > errorsBefore) {
    if (!symbolic)
      fi.instances.erase(key); // another call with these types reports again
    // An error in the body of a called function is the caller's to fix (the
    // symbolic check of a definition, which has no call site, keeps it).
    if (loc.known())
      reportInCall(fi, argTypes, argExprs, loc, diagsBefore, errorsBefore);
    return "";
  }
  if (!symbolic)
    fi.instances[key] = name;
  return name;
}

void IRBuilder::reportInCall(FnInfo &fi, const std::vector<TensorType> &argTypes,
                             const std::vector<const ast::Expr *> &argExprs, SrcLoc loc,
                             size_t firstDiag, int errorsBefore) {
  std::vector<Diagnostic> inner(diags().all().begin() + (std::ptrdiff_t)firstDiag,
                                diags().all().end());
  int innerErrors = diags().errorCount() - errorsBefore;
  diags().rollback(firstDiag, errorsBefore);
  const Diagnostic *first = nullptr;
  for (auto &x : inner)
    if (x.severity == Severity::Error && !first)
      first = &x;
  // Calls nested too deep are one error where the depth runs out, not one
  // "in `f`:" per level of the chain.
  if (first && first->id == DiagId::CallsTooDeep) {
    Diagnostic keep = *first;
    auto &d = diags().error(DiagId::CallsTooDeep, keep.loc, {});
    d.message = keep.message;
    d.hint = keep.hint;
    return;
  }
  // Search first: the trial builds add and drop diagnostics, which would
  // invalidate a reference to the one reported here.
  std::optional<std::pair<size_t, TensorType>> fix;
  if (first && quiet_ == 0)
    fix = findArgumentFix(fi, argTypes, loc);
  auto &d = diags().error(DiagId::ErrorInCall, loc,
                          {fi.qualified, first ? first->message : "an error past the limit"});
  if (!first)
    return;
  if (first->loc.known() && first->loc.file >= 0 && first->loc.file < s_.sources.count()) {
    std::string src = s_.sources.line(first->loc.file, first->loc.line);
    size_t b = src.find_first_not_of(" \t");
    d.notes.push_back("inside `" + fi.qualified + "` at " + s_.sources.path(first->loc.file) + ":" +
                      std::to_string(first->loc.line) + ":" + std::to_string(first->loc.col) +
                      ": `" + (b == std::string::npos ? src : src.substr(b)) + "`");
  }
  for (auto &n : first->notes)
    d.notes.push_back(n);
  // Its hint, about the function's code, as a note (the call's own hint is
  // about the arguments).
  if (!first->hint.empty())
    d.notes.push_back(first->hint);
  if (innerErrors > 1)
    d.notes.push_back(std::to_string(innerErrors - 1) + " more error" +
                      (innerErrors > 2 ? "s" : "") + " inside `" + fi.qualified +
                      "` for these arguments");
  if (fix) {
    auto [i, t] = *fix;
    const ast::Expr *e = i < argExprs.size() ? argExprs[i] : nullptr;
    d.notes.push_back("argument " + std::to_string(i + 1) + " `" + exprText(e) + "` is `" +
                      argTypes[i].str() + "`; `" + fi.qualified + "` type-checks with `" + t.str() +
                      "`");
    conversionHint(d, e, argTypes[i], t);
  }
}

bool IRBuilder::trialInstantiate(FnInfo &fi, const std::vector<TensorType> &types, SrcLoc loc) {
  size_t nd = diags().all().size();
  int ne = diags().errorCount();
  size_t nf = s_.module.functions.size();
  int counter = st_.instanceCounter;
  const size_t undoMark = st_.functionsUndo.size();
  ++quiet_;
  std::vector<const ast::Expr *> noExprs(types.size(), nullptr);
  bool ok = !instantiate(fi, types, noExprs, loc).empty() && diags().errorCount() == ne;
  --quiet_;
  diags().rollback(nd, ne);
  while (s_.module.functions.size() > nf)
    s_.module.functions.pop_back();
  st_.instanceCounter = counter;
  st_.undoFunctions(undoMark);
  return ok;
}

std::optional<std::pair<size_t, TensorType>>
IRBuilder::findArgumentFix(FnInfo &fi, const std::vector<TensorType> &argTypes, SrcLoc loc) {
  // Candidates: one argument of a `@ *` parameter moved to another layout on
  // its mesh (every axis replicated or sharding one dim), cheapest move
  // first (estimated communication; then fewer changed axes). The first that
  // makes the whole call type-check is the hint.
  struct Cand {
    size_t arg;
    TensorType t;
    int64_t bytes;
    int changed;
  };
  std::vector<Cand> cands;
  const ast::FnDecl &decl = *fi.decl;
  for (auto &p : decl.params)
    if (p.type.bare)
      return std::nullopt; // arguments are leaves of structs: no one-to-one search
  for (size_t i = 0; i < argTypes.size() && i < decl.params.size(); ++i) {
    const TensorType &a = argTypes[i];
    const auto &layout = decl.params[i].type.layout;
    if (a.isHost() || !layout || layout->mesh != "*")
      continue;
    int axes = (int)a.placements.size(), opts = a.rank() + 1;
    int64_t combos = 1;
    for (int k = 0; k < axes; ++k)
      combos *= opts;
    if (combos > 256)
      continue; // a large mesh of a high-rank tensor: no search
    for (int64_t c = 0; c < combos; ++c) {
      TensorType t = a;
      int64_t r = c;
      int changed = 0;
      for (int k = 0; k < axes; ++k, r /= opts) {
        int o = (int)(r % opts);
        t.placements[k] = o == 0 ? Placement::replicate() : Placement::shard(o - 1);
        changed += !(t.placements[k] == a.placements[k]);
      }
      canonicalizeShardOrder(t.placements);
      if (!changed)
        continue;
      // Cost per changed axis, in the planner's order of bytes moved:
      // replicate -> anything is a local slice (0); reduce-scatter and
      // all-to-all move a 1/k share (1); all-gather and all-reduce move the
      // whole value (2).
      int64_t bytes = 0;
      for (int k = 0; k < axes; ++k)
        if (!(t.placements[k] == a.placements[k]) && !a.placements[k].isReplicate())
          bytes += t.placements[k].isReplicate() ? 2 : 1;
      cands.push_back({i, t, bytes, changed});
    }
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand &x, const Cand &y) {
    return std::tie(x.bytes, x.changed) < std::tie(y.bytes, y.changed);
  });
  int trials = 0;
  for (auto &c : cands) {
    if (++trials > 64)
      break;
    std::vector<TensorType> ts = argTypes;
    ts[c.arg] = c.t;
    if (trialInstantiate(fi, ts, loc))
      return std::make_pair(c.arg, c.t);
  }
  return std::nullopt;
}

EV IRBuilder::callUser(const std::string &name, FnInfo &fi, const std::vector<EV> &args,
                       const std::vector<const ast::Expr *> &argExprs, SrcLoc loc) {
  (void)name;
  if (fi.broken)
    return EV::bad(); // its own errors were reported where it is defined
  std::vector<int> ids;
  std::vector<TensorType> types;
  std::vector<StructRef> shape;
  std::vector<const ast::Expr *> leafExprs;
  for (size_t i = 0; i < args.size(); ++i) {
    const EV &a = args[i];
    if (a.poison)
      return EV::bad();
    if (a.literal) {
      diags().error<DiagId::BareNumberArg>(argExprs[i]->loc, fi.qualified);
      return EV::bad();
    }
    StructRef st = a.parts.size() == 1 ? a.parts[0] : nullptr;
    if (!st && a.ids.size() != 1) {
      diags().error<DiagId::TupleArg>(argExprs[i]->loc);
      return EV::bad();
    }
    shape.push_back(st);
    for (int id : a.ids) {
      ids.push_back(id);
      types.push_back(typeOf(id));
      leafExprs.push_back(argExprs[i]);
    }
  }
  bool structs = std::any_of(shape.begin(), shape.end(), [](const StructRef &r) { return !!r; });
  std::vector<StructRef> resultShape;
  std::string inst = instantiate(fi, types, structs ? leafExprs : argExprs, loc,
                                 structs ? shape : std::vector<StructRef>{}, &resultShape);
  if (inst.empty())
    return EV::bad();
  const Function *callee = s_.module.find(inst);
  Inst in;
  in.op = Op::Call;
  in.attrs.str = inst;
  in.operands = ids;
  in.loc = loc;
  EV out;
  for (auto &t : callee->results) {
    int id = fn().newValue(t);
    in.results.push_back(id);
    out.ids.push_back(id);
  }
  if (std::any_of(resultShape.begin(), resultShape.end(), [](const StructRef &r) { return !!r; }))
    out.parts = resultShape;
  blk().insts.push_back(std::move(in));
  return out;
}

EV IRBuilder::gradCall(const ast::Expr &callee, const std::vector<EV> &args,
                       const std::vector<const ast::Expr *> &argExprs, SrcLoc loc) {
  bool withValue = callee.callee == "value_and_grad";
  if (callee.args.empty() || callee.args[0]->kind != ast::Expr::Name) {
    diags().error<DiagId::GradNeedsFunction>(callee.loc, callee.callee);
    return EV::bad();
  }
  const std::string &fname = callee.args[0]->text;
  for (auto &a : args)
    if (a.poison)
      return EV::bad();
  FnInfo *fi = nullptr;
  for (const std::string &cand : scopedNames(fname))
    if (auto it = st_.functions.find(cand); it != st_.functions.end()) {
      fi = &it->second;
      break;
    }
  if (!fi && findBuiltin(fname)) {
    // `grad(relu)`: gradients are of functions the program defines.
    diags().error<DiagId::GradNeedsFunction>(callee.args[0]->loc, callee.callee).hint =
        "`" + fname +
        "` is a builtin: define a function that calls it, `fn f(x: ...) -> ... { "
        "return " +
        fname + "(x) }`, and take `" + callee.callee + "(f)`";
    return EV::bad();
  }
  if (!fi) {
    didYouMean(diags().error(DiagId::UnknownFunction, callee.args[0]->loc, {fname}), fname,
               functionNames(), callee.args[0]->full);
    return EV::bad();
  }
  if (fi->broken)
    return EV::bad();
  if (args.size() != fi->decl->params.size()) {
    diags().error(
        DiagId::ArgCount, loc,
        {fi->qualified, std::to_string(fi->decl->params.size()), std::to_string(args.size())});
    return EV::bad();
  }
  std::vector<int64_t> wrt = {0};
  if (const ast::Expr *wp = kwarg(callee, "wrt")) {
    wrt.clear();
    const ast::Expr &w = *wp;
    auto one = [&](const ast::Expr &x) {
      // `-1`: a position too (out of range below, with the valid ones).
      if (x.kind == ast::Expr::Unary && x.op == "-" && x.args[0]->kind == ast::Expr::Number &&
          x.args[0]->isInt) {
        wrt.push_back(-(int64_t)x.args[0]->number);
        return true;
      }
      if (x.kind != ast::Expr::Number || !x.isInt) {
        diags().error<DiagId::BadWrt>(x.loc);
        return false;
      }
      wrt.push_back((int64_t)x.number);
      return true;
    };
    if (w.kind == ast::Expr::List) {
      for (auto &c : w.args)
        if (!one(*c))
          return EV::bad();
    } else if (!one(w)) {
      return EV::bad();
    }
  }
  if (wrt.empty()) {
    const ast::Expr *w = kwarg(callee, "wrt");
    auto &d = diags().error(DiagId::WrtEmpty, w->loc, {callee.callee});
    d.hint = "write `wrt=[0]` for the first argument";
    if (w->full.known() && w->full.endCol > w->full.col)
      d.fixes = {FixIt{w->full, "[0]"}};
    return EV::bad();
  }
  for (size_t k = 0; k < wrt.size(); ++k)
    if (std::count(wrt.begin(), wrt.begin() + (std::ptrdiff_t)k, wrt[k])) {
      diags().error(DiagId::WrtTwice, callee.loc, {std::to_string(wrt[k])});
      return EV::bad();
    }
  for (auto i : wrt)
    if (i < 0 || i >= (int64_t)args.size()) {
      diags().error<DiagId::WrtOutOfRange>(callee.loc, i).hint =
          args.size() == 1
              ? std::string("the call has 1 argument: position 0")
              : "the call has " + std::to_string(args.size()) + " arguments: positions 0 to " +
                    std::to_string(args.size() - 1) + " (from the first, no negative positions)";
      return EV::bad();
    }
  std::vector<int> ids;
  std::vector<TensorType> types;
  std::vector<StructRef> shape;
  std::vector<const ast::Expr *> leafExprs;
  std::vector<std::pair<size_t, size_t>> leafRange; // per argument: first leaf, count
  for (size_t i = 0; i < args.size(); ++i) {
    const EV &a = args[i];
    if (a.poison)
      return EV::bad();
    StructRef st = a.parts.size() == 1 ? a.parts[0] : nullptr;
    if (!st && !a.single()) {
      diags().error<DiagId::GradArgNotTensor>(loc);
      return EV::bad();
    }
    shape.push_back(st);
    leafRange.push_back({ids.size(), a.ids.size()});
    for (int id : a.ids) {
      ids.push_back(id);
      types.push_back(typeOf(id));
      leafExprs.push_back(argExprs[i]);
    }
  }
  // A tensor argument in `wrt` must be floating-point; a struct argument's
  // integer and bool fields are constants (zeros in its gradient).
  for (auto i : wrt)
    if (!shape[i] && !isFloat(types[leafRange[i].first].dtype)) {
      auto &d = diags().error(
          DiagId::NotDifferentiable, argExprs[i] ? argExprs[i]->loc : loc,
          {std::to_string(i + 1) + " (`" + fi->decl->params[(size_t)i].name + "`)", fi->qualified,
           "its type `" + types[leafRange[i].first].str() + "` is not floating-point"});
      d.hint = "leave it out of `wrt`: a gradient is taken with respect to floating-point "
               "arguments";
      return EV::bad();
    }
  bool structs = std::any_of(shape.begin(), shape.end(), [](const StructRef &r) { return !!r; });
  // `wrt` names arguments; a struct argument is all of its leaves.
  std::vector<int64_t> userWrt = wrt;
  if (structs) {
    wrt.clear();
    for (auto i : userWrt)
      for (size_t k = 0; k < leafRange[i].second; ++k)
        wrt.push_back((int64_t)(leafRange[i].first + k));
  }
  const int errorsBefore = diags().errorCount();
  ++needBodies_;
  std::string inst = instantiate(*fi, types, structs ? leafExprs : argExprs, loc,
                                 structs ? shape : std::vector<StructRef>{});
  --needBodies_;
  if (inst.empty())
    return EV::bad();
  const Function *primal = s_.module.find(inst);
  // A body with errors (said here, or where the function was first built)
  // has no results whatever its signature says.
  if (diags().errorCount() > errorsBefore ||
      (primal->results.empty() && !fi->decl->results.empty() && diags().hasErrors()))
    return EV::bad();
  if (primal->results.size() != 1 || primal->results[0].rank() != 0 ||
      !isFloat(primal->results[0].dtype)) {
    std::string r;
    for (size_t i = 0; i < primal->results.size(); ++i)
      r += (i ? ", " : "") + primal->results[i].str();
    diags().error(DiagId::GradNotScalar, loc, {fi->qualified, r.empty() ? "nothing" : r});
    return EV::bad();
  }
  // The gradient function is generated by the pipeline's autodiff step;
  // here only its result types are derived (errors stay at build time).
  if (!s_.options.gradientTypes)
    throw InternalError("`grad` needs the autodiff typing hook: build the Compilation with "
                        "pipelineCompileOptions() (passes/Pipeline.h)");
  std::vector<TensorType> resultTypes;
  if (!s_.options.gradientTypes(s_.module, inst, wrt, withValue, diags(), loc, resultTypes))
    return EV::bad();
  Inst in;
  in.op = Op::Grad;
  in.attrs.str = inst;
  in.attrs.ints = wrt;
  in.attrs.flag = withValue;
  in.operands = ids;
  in.loc = loc;
  EV out;
  for (auto &t : resultTypes) {
    int id = fn().newValue(t);
    in.results.push_back(id);
    out.ids.push_back(id);
  }
  // The gradient of a struct argument is a struct of the same type, each
  // leaf with its derived placement (not necessarily the declared one).
  if (structs) {
    if (withValue)
      out.parts.push_back(nullptr);
    for (auto i : userWrt)
      out.parts.push_back(shape[i]);
  }
  blk().insts.push_back(std::move(in));
  return out;
}

} // namespace dt
