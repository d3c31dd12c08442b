// This file implements the IR builder's calls: builtin functions, calls of
// user functions (instantiated once per distinct argument signature) and
// `grad` / `value_and_grad`, recorded as a `grad` instruction of an instance
// (the pipeline's autodiff step generates the gradient function).
#include "frontend/BuildIR.h"
#include "frontend/Builtins.h"

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

const ast::Expr *IRBuilder::argOrKeyword(const std::string &name, const ast::Expr &e, size_t pos,
                                         const std::string &key, bool &twice) {
  const ast::Expr *k = kwarg(e, key);
  const ast::Expr *a = e.args.size() > pos ? e.args[pos].get() : nullptr;
  if (k && a) {
    twice = true;
    SrcLoc at = k->loc;
    for (size_t i = 0; i < e.kwargs.size() && i < e.kwargLocs.size(); ++i)
      if (e.kwargs[i].first == key)
        at = e.kwargLocs[i];
    diags().error(DiagId::ArgGivenTwice, at, {name, key, std::to_string(pos + 1)}).hint =
        "give it once, by position or by name";
    return nullptr;
  }
  return k ? k : a;
}

bool IRBuilder::knownKeywords(const std::string &name, const ast::Expr &e,
                              const std::vector<std::string> &accepted, const ast::FnDecl *user) {
  for (size_t i = 0; i < e.kwargs.size(); ++i) {
    const std::string &k = e.kwargs[i].first;
    if (std::find(accepted.begin(), accepted.end(), k) != accepted.end())
      continue;
    SrcLoc at = i < e.kwargLocs.size() ? e.kwargLocs[i] : e.kwargs[i].second->loc;
    auto &d = diags().error(DiagId::UnknownKeyword, at, {name, k});
    if (user) {
      std::string sig;
      for (size_t j = 0; j < user->params.size(); ++j)
        sig += (j ? ", " : "") + user->params[j].name;
      d.hint = "a function takes its arguments by position: `" + name + "(" + sig + ")`";
    } else if (accepted.empty()) {
      d.hint = "`" + name + "` takes no keyword arguments";
    } else if (!didYouMean(d, k, accepted, at)) {
      // numpy's and torch's names for a dim
      if ((k == "axis" || k == "axes") &&
          std::find(accepted.begin(), accepted.end(), "dim") != accepted.end()) {
        d.hint = "did you mean `dim`?";
        if (at.known()) {
          SrcLoc r = at;
          r.endCol = at.col + (int)k.size();
          d.fixes.push_back(FixIt{r, "dim"});
        }
      } else {
        std::string list;
        for (size_t j = 0; j < accepted.size(); ++j)
          list += std::string(j ? (j + 1 == accepted.size() ? " or " : ", ") : "") + "`" +
                  accepted[j] + "=`";
        d.hint = "`" + name + "` takes " + list;
      }
    }
    return false;
  }
  return true;
}

EV IRBuilder::builtin(const std::string &name, const ast::Expr &e, bool &handled) {
  const BuiltinInfo *b = findBuiltin(name);
  handled = b != nullptr;
  if (!b)
    return EV::bad();
  if (!knownKeywords(name, e, builtinKeywords(name)))
    return EV::bad();
  if (b->minArgs >= 0 && !builtinArgs(name, e, (size_t)b->minArgs, (size_t)b->maxArgs))
    return EV::bad();
  return b->build(*this, *b, e);
}

bool IRBuilder::builtinArgs(const std::string &name, const ast::Expr &e, size_t lo, size_t hi) {
  if (e.args.size() >= lo && e.args.size() <= hi)
    return true;
  diags().error(DiagId::ArgCount, e.loc,
                {name,
                 lo == hi  ? std::to_string(lo)
                 : lo == 0 ? "at most " + std::to_string(hi)
                           : std::to_string(lo) + " to " + std::to_string(hi),
                 std::to_string(e.args.size())});
  return false;
}

const ast::LayoutSpec *IRBuilder::subscriptLayout(const ast::Expr &e) {
  if (e.kind != ast::Expr::Subscript || !e.layout)
    return nullptr;
  const std::string &base = e.args[0]->text;
  return st_.meshes.count(base) || !lookup(base) ? e.layout.get() : nullptr;
}

std::string IRBuilder::currentModule() const {
  return modulePrefix_.empty() ? std::string() : modulePrefix_.substr(0, modulePrefix_.size() - 1);
}

bool IRBuilder::importedHere(const std::string &mod) const {
  if (mod == currentModule())
    return true;
  auto it = st_.importsOf.find(currentModule());
  return it != st_.importsOf.end() && it->second.count(mod);
}

std::vector<std::string> IRBuilder::scopedNames(const std::string &name) const {
  std::vector<std::string> out;
  if (!modulePrefix_.empty())
    out.push_back(modulePrefix_ + name);
  if (size_t dot = name.rfind('.'); dot == std::string::npos) {
    if (modulePrefix_.empty())
      out.push_back(name);
  } else if (importedHere(name.substr(0, dot))) {
    out.push_back(name);
  }
  return out;
}

bool IRBuilder::declaredBelow(Diagnostic &d, const std::string &name) const {
  if (programScope_) {
    auto it = programScope_->find(name);
    if (it != programScope_->end() && it->second.kind == Binding::Const) {
      d.hint = "`" + name + "` is declared below the function (line " +
               std::to_string(it->second.loc.line) +
               "): a function sees the constants declared above it; move `let " + name +
               " = ...` up";
      return true;
    }
  }
  // A top-level value of an earlier input (the REPL, a session's compile):
  // a function cannot see it either.
  if (!fnStack_.empty() && fnStack_.back()->name != "main")
    if (auto it = st_.globals.find(name); it != st_.globals.end() &&
                                          it->second.kind != Binding::Const &&
                                          it->second.loc.file != d.loc.file) {
      d.hint = "`" + name + "` (" + lineOf(it->second.loc, d.loc) +
               ") is a value of the program: a function sees the program's constants (`let " +
               name + " = 4`), not its tensors; pass it as an argument";
      return true;
    }
  // Not bound yet where it is used: a top-level `let`/`var` of the program
  // further down (a function built where it is declared, or a top-level
  // use above the declaration), or one above that a function cannot see.
  if (!buildingProgram_)
    return false;
  for (const auto &st : buildingProgram_->stmts) {
    if ((st->kind != ast::Stmt::Let && st->kind != ast::Stmt::Var) || st->loc.file != d.loc.file ||
        std::find(st->names.begin(), st->names.end(), name) == st->names.end())
      continue;
    const std::string line = std::to_string(st->loc.line);
    if (st->loc.line > d.loc.line)
      d.hint = "`" + name + "` is declared below (line " + line +
               "): a name is seen from its declaration on; move it up";
    else if (!fnStack_.empty() && fnStack_.back()->name != "main") // inside a function
      d.hint = "`" + name + "` (line " + line +
               ") is a tensor of the program: a function sees the program's constants (`let " +
               name + " = 4`), not its tensors; pass it as an argument";
    else
      continue;
    return true;
  }
  return false;
}

bool IRBuilder::definedBelow(Diagnostic &d, const std::string &name) const {
  if (!buildingProgram_)
    return false;
  for (const auto &st : buildingProgram_->stmts)
    if (st->kind == ast::Stmt::Fn && st->fn->name == name && st->loc.file == d.loc.file &&
        st->loc.line >= d.loc.line) {
      d.hint = "`" + name + "` is defined below (line " + std::to_string(st->loc.line) +
               "): a function is called after its definition; move `fn " + name + "` up";
      return true;
    }
  return false;
}

std::string IRBuilder::varHint(const std::string &name) {
  size_t dot = name.find('.');
  if (dot == std::string::npos)
    return "declare it with `var " + name + " = ...`";
  std::string root = name.substr(0, dot);
  return "declare the struct with `var " + root +
         " = ...`: a `var` struct's fields can be "
         "assigned";
}

std::vector<std::string> IRBuilder::functionNames() const {
  std::vector<std::string> out;
  for (const BuiltinInfo &b : builtinTable())
    out.push_back(b.name);
  for (auto &[q, fi] : st_.functions) {
    // Inside a module, the program's own functions are out of reach.
    if (modulePrefix_.size() && q.find('.') == std::string::npos)
      continue;
    if (size_t dot = q.rfind('.'); dot != std::string::npos && !importedHere(q.substr(0, dot)))
      continue;
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
      return knownKeywords(callee.callee, callee, builtinKeywords(callee.callee))
                 ? gradCall(callee, args, exs, e.loc)
                 : EV::bad();
    diags().error<DiagId::CallOfCall>(e.loc);
    return EV::bad();
  }
  // user functions first (a module's own functions, then qualified names)
  FnInfo *fi = nullptr;
  std::string qual;
  for (const std::string &cand : scopedNames(e.callee)) {
    auto it = st_.functions.find(cand);
    if (it != st_.functions.end()) {
      fi = &it->second;
      qual = cand;
      break;
    }
  }
  if (fi) {
    if (!knownKeywords(e.callee, e, {}, fi->decl))
      return EV::bad();
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
  if (size_t dot = e.callee.find('.'); dot != std::string::npos) {
    // `x.sum(dim=1)`: a method call on a value; functions take it first.
    const std::string obj = e.callee.substr(0, dot), method = e.callee.substr(dot + 1);
    if (lookup(obj) && method.find('.') == std::string::npos) {
      std::string call = method + "(" + obj;
      for (auto &a : e.args)
        call += ", " + exprText(a.get());
      for (auto &[k, v] : e.kwargs)
        call += ", " + k + "=" + exprText(v.get());
      d.hint = "dtensor has no methods: write `" + call + ")`";
      if (!findBuiltin(method) && !st_.functions.count(method))
        d.hint += " (if `" + method + "` is a function)";
      return EV::bad();
    }
  }
  // `a(1)` where `a` is a tensor: an index is written with brackets.
  if (e.callee.find('.') == std::string::npos && lookup(e.callee)) {
    std::string args;
    for (auto &a : e.args)
      args += (args.empty() ? "" : ", ") + exprText(a.get());
    d.hint = "`" + e.callee + "` is a value, not a function: index it with brackets, `" + e.callee +
             "[" + args + "]`";
    return EV::bad();
  }
  if (definedBelow(d, e.callee) || didYouMean(d, e.callee, functionNames(), e.loc))
    return EV::bad();
  if (size_t dot = e.callee.rfind('.'); dot != std::string::npos) {
    std::string mod = e.callee.substr(0, dot);
    d.hint = !st_.imported.count(mod) ? "did you `import " + mod + "`?"
             : importedHere(mod)
                 ? "module `" + mod + "` defines no function `" + e.callee.substr(dot + 1) + "`"
                 : "this file does not import `" + mod + "`: write `import " + mod +
                       "` at its top (another file's import does not reach here)";
  }
  return EV::bad();
}

} // namespace dt
