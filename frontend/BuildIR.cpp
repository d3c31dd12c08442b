// This file implements the IR builder's statements — meshes, let/var,
// assignment with the fixed-placement rule, return, print, import, function
// declarations (control flow: BuildControl.cpp) — and the Compilation
// entry points that run parse + build.
#include "frontend/BuildIR.h"

#include "grammar/Parser.h"
#include "support/Checked.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <unistd.h>
#include <utility>

namespace dt {

IRBuilder::IRBuilder(Compilation &s) : s_(s), st_(*s.builderState) {}

Binding *IRBuilder::lookup(const std::string &name) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end())
      return &f->second;
  }
  return nullptr;
}

std::vector<std::string> IRBuilder::namesInScope() const {
  std::vector<std::string> out;
  for (auto &scope : scopes_)
    for (auto &[n, b] : scope)
      out.push_back(n);
  return out;
}

void IRBuilder::bind(const std::string &name, Binding b) { scopes_.back()[name] = b; }

void IRBuilder::block(const std::vector<ast::StmtPtr> &body) {
  for (auto &s : body)
    stmt(*s);
}

void IRBuilder::stmt(const ast::Stmt &s) {
  using K = ast::Stmt::Kind;
  bool inFunction = expectedResults_ != nullptr;
  bool topLevel = !inFunction && blockStack_.size() == 1 && modulePrefix_.empty();
  // `return` ends the body: nothing may follow it (a second `return` included).
  if (inFunction && sawReturn_ && blockStack_.size() == 1) {
    diags().error(DiagId::CodeAfterReturn, s.loc, {fn().name}).hint =
        "`return` must be the last statement of the function body";
    return;
  }
  switch (s.kind) {
  case K::Mesh:
    if (!topLevel) {
      diags().error<DiagId::MeshNotTopLevel>(s.loc);
      return;
    }
    return meshDecl(s);
  case K::Let:
  case K::Var:
    return letOrVar(s);
  case K::Assign:
    return assign(s);
  case K::For:
    return forLoop(s);
  case K::If:
    return ifStmt(s);
  case K::While:
    return whileLoop(s);
  case K::Return:
    return returnStmt(s);
  case K::Print:
    return printStmt(s);
  case K::Import:
    if (!topLevel && modulePrefix_.empty()) {
      diags().error<DiagId::ImportNotTopLevel>(s.loc);
      return;
    }
    return importModule(s);
  case K::Fn:
    if (inFunction || blockStack_.size() != 1) {
      diags().error<DiagId::FnNotTopLevel>(s.loc);
      return;
    }
    return fnDecl(s, modulePrefix_);
  case K::Struct:
    if (!topLevel && !(modulePrefix_.size() && !inFunction && blockStack_.size() == 1)) {
      diags().error<DiagId::StructNotTopLevel>(s.loc);
      return;
    }
    return structDecl(s);
  case K::ExprStmt:
    expr(*s.value);
    return;
  }
}

std::string IRBuilder::lineOf(SrcLoc at, SrcLoc from) const {
  if (at.file == from.file || at.file < 0 || at.file >= s_.sources.count())
    return "line " + std::to_string(at.line);
  return s_.sources.path(at.file) + ":" + std::to_string(at.line);
}

void IRBuilder::meshDecl(const ast::Stmt &s) {
  const ast::MeshDecl &d = *s.mesh;
  // Declared before: the same mesh again is no change (a file loaded twice
  // into the REPL); another one is an error (its values' types name it).
  const auto before = st_.meshes.find(d.name);
  const MeshRef existing = before == st_.meshes.end() ? nullptr : before->second;
  auto m = std::make_shared<Mesh>();
  m->name = d.name;
  if (!existing)
    badMeshes_.insert(d.name); // until the declaration is complete
  std::set<std::string> names;
  for (size_t i = 0; i < d.axes.size(); ++i) {
    SrcLoc l = i < d.axisLocs.size() ? d.axisLocs[i] : s.loc;
    if (d.axes[i].second <= 0) {
      diags().error(DiagId::MeshBadAxisSize, l, {d.axes[i].first});
      return;
    }
    if (d.axes[i].first == "_") {
      diags().error(DiagId::MeshAxisUnderscore, l, {d.name}).hint =
          "name the axis: `mesh " + d.name + " = [x = " + std::to_string(d.axes[i].second) + "]`";
      return;
    }
    if (!names.insert(d.axes[i].first).second) {
      diags().error(DiagId::MeshDuplicateAxis, l, {d.name, d.axes[i].first});
      return;
    }
    m->axes.push_back({d.axes[i].first, d.axes[i].second});
  }
  // Ranks are threads of one process: the mesh must fit the per-process
  // limit (checked without overflow).
  const int64_t maxRanks = s_.options.maxRanks;
  auto n = checkedProduct(m->axes, [](const MeshAxis &a) { return a.size; });
  if (!n || *n > maxRanks) {
    auto &e = diags().error(
        DiagId::MeshTooLarge, s.loc,
        {d.name, n ? std::to_string(*n) : "more than 2^63", std::to_string(maxRanks)});
    e.hint = "use a mesh of at most " + std::to_string(maxRanks) + " devices";
    return;
  }
  if (d.hasDevices) {
    if ((int64_t)d.devices.size() != *n) {
      diags().error(DiagId::MeshDevicesCount, s.loc,
                    {d.name, std::to_string(*n), std::to_string(d.devices.size())});
      return;
    }
    std::set<int64_t> seen;
    for (size_t i = 0; i < d.devices.size(); ++i) {
      int64_t dev = d.devices[i];
      SrcLoc l = i < d.deviceLocs.size() ? d.deviceLocs[i] : s.loc;
      // Any non-negative id: the world has one rank per distinct id
      // (runtime/Executor.h), so a large id allocates nothing.
      if (dev < 0) {
        diags().error(DiagId::MeshDeviceNegative, l, {d.name, std::to_string(dev)}).hint =
            "device ids are world ranks' names: 0, 1, ...";
        return;
      }
      if (!seen.insert(dev).second) {
        diags().error(DiagId::MeshDuplicateDevice, l, {d.name, std::to_string(dev)}).hint =
            "a device is one rank of the mesh: list each id once, as `devices [2, 3, 6, 7]`";
        return;
      }
    }
    m->devices = d.devices;
  } else {
    for (int64_t i = 0; i < *n; ++i)
      m->devices.push_back(i);
  }
  // Every distinct device id of the program is a rank (a thread of one
  // process by default): the meshes together must fit the limit too.
  std::set<int64_t> ids(m->devices.begin(), m->devices.end());
  for (auto &[name, other] : st_.meshes)
    ids.insert(other->devices.begin(), other->devices.end());
  if ((int64_t)ids.size() > maxRanks) {
    diags()
        .error(DiagId::MeshesTooManyDevices, s.loc,
               {d.name, std::to_string(ids.size()), std::to_string(maxRanks)})
        .hint = "let the meshes share device ids";
    return;
  }
  if (existing) {
    if (!(*existing == *m))
      diags().error(DiagId::Redefinition, s.loc, {d.name}).hint =
          "the same declaration again is allowed; another mesh needs another name";
    return;
  }
  st_.meshes[d.name] = m;
  badMeshes_.erase(d.name);
  s_.module.meshes.push_back(m);
}

void IRBuilder::letOrVar(const ast::Stmt &s) {
  bool isVar = s.kind == ast::Stmt::Var;
  std::optional<TensorType> declared;
  bool typeOk = true;
  if (s.type && s.type->bare) {
    StructRef def = findStruct(s.type->dtype);
    if (!def)
      unknownType(*s.type);
    return structLet(s, def, EV::bad());
  }
  if (s.type) {
    declared = resolveType(*s.type, nullptr);
    typeOk = declared.has_value();
    if (declared && s.type->layout && s.type->layout->mesh == "*") {
      diags().error<DiagId::WildcardLayout>(s.type->loc);
      typeOk = false;
    }
  }
  EV v;
  if (!typeOk) {
    v = EV::bad();
  } else if (declared) {
    v = initializer(*s.value, *declared);
  } else {
    v = expr(*s.value);
    if (v.hasStruct())
      return structLet(s, nullptr, v);
  }
  // A bare literal without a type becomes a compile-time constant (loop
  // bounds, sizes) or a host scalar.
  if (v.literal) {
    if (!declared && !isVar && s.names.size() == 1 && v.isInt) {
      bind(s.names[0], Binding{Binding::Const, -1, {}, v.ival, s.loc, nullptr});
      return;
    }
    TensorType t = declared ? *declared
                            : replicatedType(v.isBool  ? DType::Bool
                                             : v.isInt ? DType::I64
                                                       : DType::F32,
                                             {}, nullptr);
    v = literalFits(v, t, s.value->loc)
            ? emit(Op::Fill, {}, {}, s.value->loc, constAttrs(v, t.dtype), {t})
            : EV::bad();
  }
  if (!v.poison && declared && v.ids.size() == 1 && typeOf(v.ids[0]) != *declared) {
    const TensorType &got = typeOf(v.ids[0]);
    auto &d = diags().error(
        isVar ? DiagId::VarPlacement : DiagId::ArgType, s.value->loc,
        isVar ? std::vector<std::string>{s.names[0], got.str(), declared->str()}
              : std::vector<std::string>{"1", "let " + s.names[0], declared->str(), got.str()});
    if (!isVar)
      d.message = "`" + s.names[0] + "` is declared `" + declared->str() + "` but its value is `" +
                  got.str() + "`";
    conversionHint(d, s.value.get(), got, *declared);
    v = EV::bad();
  }
  if (!v.poison && v.ids.size() != s.names.size()) {
    destructureCount(s.loc, v.ids.size(), s.names.size());
    v = EV::bad();
  }
  for (size_t i = 0; i < s.names.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (s.names[i] == s.names[j] && s.names[i] != "_") {
        diags()
            .error(DiagId::NameTwice, i < s.nameLocs.size() ? s.nameLocs[i] : s.loc, {s.names[i]})
            .hint = "rename one of them: the name would hold only the last part";
        v = EV::bad();
        break;
      }
  for (size_t i = 0; i < s.names.size(); ++i) {
    Binding b;
    b.kind = isVar ? Binding::Var : Binding::Value;
    b.id = v.poison ? -1 : v.ids[i];
    b.loc = i < s.nameLocs.size() ? s.nameLocs[i] : s.loc;
    if (isVar)
      b.declared = declared ? *declared : (v.poison ? TensorType{} : typeOf(v.ids[i]));
    if (!v.poison)
      fn().values[b.id].name = s.names[i];
    bind(s.names[i], b);
  }
}

void IRBuilder::destructureCount(SrcLoc loc, size_t parts, size_t names) {
  auto &d = diags().error(DiagId::DestructureCount, loc,
                          {std::to_string(parts) + (parts == 1 ? " part" : " parts"),
                           std::to_string(names) + (names == 1 ? " name is" : " names are")});
  if (parts == 0 || parts > 16)
    return;
  std::string list;
  for (size_t i = 0; i < parts; ++i)
    list += (i ? ", " : "") + std::string(1, (char)('a' + i));
  d.hint = parts == 1 ? "bind one name: `let a = ...`"
                      : "bind one name per part: `let (" + list + ") = ...`";
}

void IRBuilder::assign(const ast::Stmt &s) {
  const std::string &name = s.names[0];
  Binding *b = lookup(name);
  SrcLoc nl = s.nameLocs.empty() ? s.loc : s.nameLocs[0];
  if (b && b->kind == Binding::Struct) {
    structAssign(s, *b);
    return;
  }
  // `w = ones()`, `w = randn(seed=i) * 0.1`: a source takes the variable's type.
  EV v = b && b->kind == Binding::Var && b->id >= 0 && typedSource(*s.value)
             ? initializer(*s.value, b->declared)
             : expr(*s.value);
  if (!b) {
    didYouMean(diags().error(DiagId::UnknownName, nl, {name}), name, namesInScope(), nl);
    return;
  }
  if (b->kind != Binding::Var) {
    auto &d = diags().error(DiagId::NotAVariable, nl, {name});
    d.hint = varHint(name);
    return;
  }
  if (v.poison || b->id < 0)
    return;
  if (v.literal) {
    if (!literalFits(v, b->declared, s.value->loc))
      return;
    v = emit(Op::Fill, {}, {}, s.value->loc, constAttrs(v, b->declared.dtype), {b->declared});
    if (v.poison)
      return;
  }
  if (v.ids.size() != 1) {
    diags().error<DiagId::TupleAssign>(s.value->loc);
    return;
  }
  const TensorType &got = typeOf(v.ids[0]);
  if (got != b->declared) {
    auto &d =
        diags().error(DiagId::VarPlacement, s.value->loc, {name, got.str(), b->declared.str()});
    if (got.dtype != b->declared.dtype) // what differs is named
      d.message.replace(d.message.rfind("placement"), 9, "element type");
    if (conversionHint(d, s.value.get(), got, b->declared))
      d.hint = "write `" + name + " = " + d.hint.substr(7);
    return;
  }
  b->id = v.ids[0];
}

void IRBuilder::returnStmt(const ast::Stmt &s) {
  if (!expectedResults_) {
    diags().error(DiagId::ReturnOutside, s.loc).hint =
        "`return` ends a function's body; at the top level, `print` shows a value";
    return;
  }
  if (blockStack_.size() != 1) {
    diags().error<DiagId::ReturnNotLast>(s.loc);
    return;
  }
  sawReturn_ = true;
  std::vector<int> ids;
  bool poisoned = false;
  for (auto &v : s.values) {
    EV e = expr(*v);
    if (e.poison) {
      poisoned = true;
      continue;
    }
    if (e.literal) {
      diags().error<DiagId::BareNumberReturn>(v->loc);
      poisoned = true;
      continue;
    }
    for (int id : e.ids)
      ids.push_back(id);
  }
  if (poisoned)
    return;
  auto &exp = *expectedResults_;
  if (ids.size() != exp.size()) {
    diags().error<DiagId::ReturnCount>(s.loc, ids.size(), exp.size());
    return;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const TensorType &got = typeOf(ids[i]);
    bool any = expectedAny_ && i < expectedAny_->size() && (*expectedAny_)[i];
    bool match = any ? (got.dtype == exp[i].dtype && got.shape == exp[i].shape) : got == exp[i];
    if (!match) {
      auto &d = diags().error(DiagId::ResultType,
                              s.values.size() == ids.size() ? s.values[i]->loc : s.loc,
                              {fn().name, got.str(), exp[i].str()});
      if (!any && conversionHint(d, s.values.size() == ids.size() ? s.values[i].get() : nullptr,
                                 got, exp[i]))
        d.hint = "write `return " + d.hint.substr(7);
      return;
    }
  }
  Inst r;
  r.op = Op::Return;
  r.operands = ids;
  r.loc = s.loc;
  blk().insts.push_back(std::move(r));
}

EV IRBuilder::printItem(const ast::Expr &x) {
  EV v = expr(x);
  if (v.poison)
    return v;
  if (!v.literal) {
    // A struct with `partial` fields (a gradient): one error naming them,
    // whose fix moves the whole struct (the fields' own fix would be a
    // tensor `relayout` of the struct's name).
    std::vector<EV> elems = v.elements();
    for (const EV &el : elems) {
      if (el.parts.empty() || !el.parts[0])
        continue;
      const StructRef &def = el.parts[0];
      std::vector<std::string> partial;
      for (size_t k = 0; k < el.ids.size() && k < def->leaves.size(); ++k)
        if (typeOf(el.ids[k]).hasPartial())
          partial.push_back("field `" + def->leaves[k].first + "` is `" + typeOf(el.ids[k]).str() +
                            "`");
      if (partial.empty())
        continue;
      auto &d = diags().error(DiagId::PartialToHost, x.loc, {});
      d.notes = partial;
      d.notes.push_back("`print` reads every field to the host");
      if (elems.size() == 1)
        fixHint(d, &x, "relayout(" + exprText(&x) + ", " + def->name + ")");
      else
        d.hint =
            "move the struct to its declared placements first: `relayout(s, " + def->name + ")`";
      return EV::bad();
    }
    return v;
  }
  TensorType t = replicatedType(v.isBool  ? DType::Bool
                                : v.isInt ? DType::I64
                                          : DType::F32,
                                {}, nullptr);
  return EV::one(materialize(v, t, x.loc));
}

void IRBuilder::printStmt(const ast::Stmt &s) {
  // `print(x)`: one value a line (a tuple: one line per value), the form the
  // reference comparison of `dtensorc verify` reads value by value.
  if (s.values.size() == 1 && s.values[0]->kind != ast::Expr::String) {
    const ast::Expr &x = *s.values[0];
    EV v = printItem(x);
    if (v.poison)
      return;
    for (int id : v.ids) {
      Attrs a;
      a.str = exprText(&x);
      // The whole expression's span: the executor tells the collectives that
      // lowering puts before this print from a `relayout` written inside it.
      SrcLoc at = x.full.known() && x.full.endCol ? x.full : x.loc;
      EV r = emit(Op::Print, {EV::one(id)}, {&x}, at, a);
      (void)r;
    }
    return;
  }
  // Several items or strings: one line, items separated by a space (Ops.def).
  Attrs a;
  a.flag = true;
  std::vector<EV> vals;
  std::vector<const ast::Expr *> exs;
  for (auto &x : s.values) {
    if (x->kind == ast::Expr::String) {
      a.ints.insert(a.ints.end(), {-1, (int64_t)x->text.size()});
      a.str += x->text;
      continue;
    }
    EV v = printItem(*x);
    if (v.poison)
      return;
    std::string label = exprText(x.get());
    for (int id : v.ids) {
      a.ints.insert(a.ints.end(), {(int64_t)vals.size(), (int64_t)label.size()});
      a.str += label;
      vals.push_back(EV::one(id));
      exs.push_back(x.get());
    }
  }
  EV r = emit(Op::Print, vals, exs, s.loc, a);
  (void)r;
}

void IRBuilder::fnDecl(const ast::Stmt &s, const std::string &prefix) {
  const ast::FnDecl &d = *s.fn;
  std::string q = prefix + d.name;
  if (auto it = st_.functions.find(q); it != st_.functions.end()) {
    if (!prefix.empty() || it->second.build == st_.builds) {
      auto &e = diags().error(DiagId::Redefinition, s.loc, {q});
      if (it->second.decl)
        e.notes.push_back("the first `" + q + "` is declared at " +
                          lineOf(it->second.decl->loc, s.loc));
      e.hint = "give one of them another name (a function has one signature; a size symbol, "
               "`f32[N]`, takes every size)";
      return;
    }
    // An earlier input's function (the REPL, a session's later compile):
    // this declaration replaces it for every later call, the calls inside
    // other functions too, so no instance made with the old body is kept.
    std::map<std::string, std::map<std::string, std::string>> cleared;
    for (auto &[name, other] : st_.functions)
      if (!other.instances.empty())
        cleared[name] = std::exchange(other.instances, {});
    st_.functionsUndo.push_back(
        [q, old = it->second, cleared = std::move(cleared)](std::map<std::string, FnInfo> &fns) {
          fns[q] = old;
          for (auto &[name, instances] : cleared)
            if (auto f = fns.find(name); f != fns.end())
              f->second.instances = instances;
        });
    st_.functions.erase(it);
    ++st_.redefinitions;
  }
  if (auto it = st_.structs.find(q); it != st_.structs.end()) {
    // `S(...)` would call the function and the struct could not be built.
    auto &e = diags().error(DiagId::Redefinition, s.loc, {q});
    e.notes.push_back("`" + q + "` is the struct declared at " + lineOf(it->second->loc, s.loc));
    e.hint = "give the function another name";
    return;
  }
  bool twice = false;
  for (size_t i = 0; i < d.params.size() && !twice; ++i)
    for (size_t j = 0; j < i && !twice; ++j)
      if (d.params[i].name == d.params[j].name) {
        diags().error(DiagId::ParamTwice, d.params[i].loc, {q, d.params[i].name}).hint =
            "rename one of them: the body would see only the last";
        twice = true;
      }
  FnInfo fi;
  fi.decl = &d;
  fi.qualified = q;
  fi.build = st_.builds;
  // The program's constants declared so far (a module's functions see none).
  if (prefix.empty() && !scopes_.empty())
    for (auto &[n, b] : scopes_.front())
      if (b.kind == Binding::Const)
        fi.consts[n] = b;
  fi.generic = !d.typeParams.empty(); // bound per call
  for (auto &p : d.params)
    if (p.type.layout && p.type.layout->mesh == "*")
      fi.generic = true;
  for (auto &r : d.results)
    if (r.layout && r.layout->mesh == "*")
      fi.generic = true;
  // `...` dims and dtype parameters are bound per call too.
  fi.broken = !checkGenericSignature(d, q, fi.generic) || twice;
  FnInfo &stored = st_.functions[q] = fi;
  st_.functionsUndo.push_back([q](std::map<std::string, FnInfo> &fns) { fns.erase(q); });
  if (stored.broken)
    return;
  if (stored.generic)
    return; // checked at each instantiation
  // Check the body once, symbolically, where it is defined.
  std::map<std::string, Dim> none;
  std::vector<TensorType> types;
  std::vector<StructRef> shape;
  auto savedSymbols = symbols_;
  symbols_ = &none;
  for (auto &p : d.params) {
    if (p.type.bare) { // a struct parameter: its declared leaves
      StructRef def = findStruct(p.type.dtype);
      if (!def) {
        unknownType(p.type);
        symbols_ = savedSymbols;
        stored.broken = true;
        return;
      }
      shape.push_back(def);
      for (auto &leaf : def->leaves)
        types.push_back(leaf.second);
      continue;
    }
    shape.push_back(nullptr);
    auto t = resolveType(p.type, &none);
    if (!t) {
      symbols_ = savedSymbols;
      stored.broken = true;
      return;
    }
    types.push_back(*t);
  }
  symbols_ = savedSymbols;
  size_t before = s_.module.functions.size();
  // The instances the check makes of the functions it calls go with it: a
  // later call must not find a cached instance whose function was dropped.
  const size_t undoMark = st_.functionsUndo.size();
  size_t nd = diags().all().size();
  int ne = diags().errorCount();
  std::vector<const ast::Expr *> noExprs(types.size(), nullptr);
  bool structs = std::any_of(shape.begin(), shape.end(), [](const StructRef &r) { return !!r; });
  symbolAsValue_ = false;
  std::string name =
      instantiate(stored, types, noExprs, SrcLoc{}, structs ? shape : std::vector<StructRef>{});
  // A fully concrete signature is a real instance; keep it. Symbolic ones are
  // only a check.
  bool concrete = true;
  for (auto &t : types)
    concrete &= isConcrete(t.shape);
  if (!concrete) {
    while (s_.module.functions.size() > before)
      s_.module.functions.pop_back();
    st_.undoFunctions(undoMark);
  }
  if (!concrete && symbolAsValue_) {
    // The body reads a size symbol's value, which only a call knows: what
    // the symbolic check said stands for a made-up size; check per call.
    diags().rollback(nd, ne);
    symbolAsValue_ = false;
    stored.generic = true;
    return;
  }
  if (name.empty())
    stored.broken = true;
  else
    stored.checked = !stored.generic;
}

void IRBuilder::importModule(const ast::Stmt &s) {
  const std::string &mod = s.module;
  st_.importsOf[currentModule()].insert(mod);
  std::string rel = mod;
  for (auto &c : rel)
    if (c == '.')
      c = '/';
  std::string text, path;
  // The importing file's own folder first (a program next to its modules),
  // then the stdlib paths.
  std::vector<std::string> dirs;
  if (s.loc.file >= 0 && s.loc.file < s_.sources.count()) {
    auto here = std::filesystem::path(s_.sources.path(s.loc.file)).parent_path();
    dirs.push_back(here.empty() ? "." : here.string());
    // A module `a.b` found as ROOT/a/b.dt imports its siblings by their full
    // names too (`import a.c`): look in ROOT, the folder it was found from.
    std::string importer = currentModule();
    if (!importer.empty()) {
      std::filesystem::path root = here;
      for (char c : importer)
        if (c == '.')
          root = root.parent_path();
      std::string r = root.empty() ? "." : root.string();
      if (std::find(dirs.begin(), dirs.end(), r) == dirs.end())
        dirs.push_back(r);
    }
  }
  for (auto &dir : s_.options.stdlibPaths)
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) // each folder once
      dirs.push_back(dir);
  for (auto &dir : dirs) {
    std::string candidate = dir + "/" + rel + ".dt";
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec))
      continue;
    // Loaded already (by this file or another): the same file is the same
    // module; another file of the same name would mix the two.
    if (st_.imported.count(mod)) {
      auto was = st_.importedFrom.find(mod);
      std::error_code e1;
      if (was != st_.importedFrom.end() &&
          !std::filesystem::equivalent(candidate, was->second, e1) && !e1) {
        diags().error<DiagId::ModuleNameClash>(s.loc, mod, candidate, was->second).hint =
            "modules are named by their path from where they are found, one file a name: "
            "rename one of the two files (or move it into a folder: `import lib.c`)";
      }
      return;
    }
    if (auto why = readSourceFile(candidate, s_.options.maxSourceBytes, text)) {
      diags().error(*why, s.loc, {candidate, std::to_string(s_.options.maxSourceBytes)});
      return;
    }
    path = candidate;
    break;
  }
  if (path.empty() && st_.imported.count(mod))
    return; // loaded by another file, from a folder this one does not search
  if (path.empty()) {
    auto &d = diags().error(DiagId::UnknownModule, s.loc, {mod});
    std::string searched;
    for (auto &p : dirs)
      searched += (searched.empty() ? "" : ", ") + p;
    d.hint = "searched " + (searched.empty() ? std::string("no folders") : searched);
    return;
  }
  st_.imported.insert(mod);
  st_.importedFrom[mod] = path;
  int file = s_.sources.add(path, text);
  auto prog = std::make_unique<ast::Program>();
  if (!parseProgram(text, file, diags(), *prog))
    return;
  std::string saved = modulePrefix_;
  modulePrefix_ = mod + ".";
  for (auto &st : prog->stmts) {
    if (st->kind == ast::Stmt::Fn)
      fnDecl(*st, modulePrefix_);
    else if (st->kind == ast::Stmt::Struct)
      structDecl(*st);
    else if (st->kind == ast::Stmt::Import)
      importModule(*st);
    else
      diags().error<DiagId::ModuleStatement>(st->loc).hint =
          st->kind == ast::Stmt::Mesh
              ? "meshes belong to the program: a module's functions take any layout with "
                "`@ *` (`fn f(x: f32[N] @ *) -> f32[N] @ *`)"
              : "statements and values belong to the program; a module declares functions "
                "and structs for it";
  }
  modulePrefix_ = saved;
  st_.programs.push_back(std::move(prog));
}

void IRBuilder::buildProgram(ast::Program &prog) {
  Function *main = s_.module.find("main");
  if (!main) {
    main = &s_.module.functions.emplace_front();
    main->name = "main";
  }
  // The previous compile() closed main with a return; reopen it.
  if (!main->body.insts.empty() && main->body.insts.back().op == Op::Return)
    main->body.insts.pop_back();
  scopes_.clear();
  scopes_.push_back(st_.globals);
  fnStack_ = {main};
  blockStack_ = {&main->body};
  buildingProgram_ = &prog;
  block(prog.stmts);
  Inst r;
  r.op = Op::Return;
  main->body.insts.push_back(std::move(r));
  st_.globals = scopes_.front();
}

Compilation::Compilation() : Compilation(CompileOptions{}) {}

Compilation::Compilation(CompileOptions opts) : options(std::move(opts)) {
  builderState = std::make_shared<BuilderState>();
  if (options.stdlibPaths.empty()) {
    if (const char *env = std::getenv("DTENSOR_STDLIB"))
      options.stdlibPaths.push_back(env);
    // Next to the executable first (an installed or bundled copy), then the
    // source tree it was built from.
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      auto dir = exe.parent_path();
      for (auto rel : {"../share/dtensor/stdlib", "../stdlib", "stdlib"})
        if (std::filesystem::is_directory(dir / rel, ec))
          options.stdlibPaths.push_back((dir / rel).lexically_normal().string());
    }
    options.stdlibPaths.push_back(DT_STDLIB_DIR);
  }
}

std::unique_ptr<ast::Program> Compilation::parse(const std::string &path, const std::string &text) {
  int file = sources.add(path, text);
  auto prog = std::make_unique<ast::Program>();
  prog->file = file;
  // A parse that recovered from errors still builds (more errors reported
  // in one go); the errors count makes compile() fail.
  if (!parseProgram(text, file, diags, *prog))
    return nullptr;
  if (afterParse)
    afterParse(*prog);
  return prog;
}

bool Compilation::build(std::unique_ptr<ast::Program> prog) {
  int before = diags.errorCount();
  ++builderState->builds;
  IRBuilder b(*this);
  b.buildProgram(*prog);
  builderState->programs.push_back(std::move(prog));
  if (diags.errorCount() == before)
    checkCallDepth();
  return diags.errorCount() == before;
}

namespace {

/// Reads `in` to its end into `text`, at most one byte past `maxBytes` (a
/// file's size on disk may change while it is read; a pipe has none).
std::optional<DiagId> readStream(std::istream &in, int64_t maxBytes, std::string &text) {
  text.clear();
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    text.append(buf, (size_t)in.gcount());
    if ((int64_t)text.size() > maxBytes) {
      text.clear();
      return DiagId::SourceTooLarge;
    }
  }
  if (in.bad())
    return DiagId::SourceUnreadable;
  return std::nullopt;
}

} // namespace

std::optional<DiagId> readSourceFile(const std::string &path, int64_t maxBytes, std::string &text) {
  if (path == "-") // standard input, to its end
    return readStream(std::cin, maxBytes, text);
  // Only regular files: a directory reads as empty (a silent success) and a
  // device such as /dev/zero never ends.
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    return DiagId::SourceUnreadable;
  if (!std::filesystem::is_regular_file(st))
    return DiagId::SourceNotFile;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return DiagId::SourceUnreadable;
  return readStream(in, maxBytes, text);
}

bool Compilation::compile(const std::string &path, const std::string &text) {
  int before = diags.errorCount();
  auto prog = parse(path, text);
  return prog && build(std::move(prog)) && diags.errorCount() == before;
}

bool Compilation::readFile(const std::string &path, std::string &text) {
  if (auto why = readSourceFile(path, options.maxSourceBytes, text)) {
    auto &d =
        diags.error(*why, SrcLoc{-1, 0, 0, 0}, {path, std::to_string(options.maxSourceBytes)});
    if (*why == DiagId::SourceNotFile)
      d.hint = "give the path of a `.dt` program";
    if (*why == DiagId::SourceUnreadable) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        d.message += ": no such file";
        auto cwd = std::filesystem::current_path(ec);
        if (!ec && !path.empty() && path[0] != '/')
          d.hint = "the path is relative to the current folder, " + cwd.string();
      } else {
        d.message += access(path.c_str(), R_OK) != 0 ? ": permission denied" : ": a read error";
      }
    }
    return false;
  }
  return true;
}

bool Compilation::compileFile(const std::string &path) {
  std::string text;
  return readFile(path, text) && compile(path, text);
}

std::vector<int> Compilation::globalValues() const {
  std::vector<int> ids;
  for (auto &[name, b] : builderState->globals)
    if (b.kind != Binding::Const && b.id >= 0)
      ids.push_back(b.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

} // namespace dt
