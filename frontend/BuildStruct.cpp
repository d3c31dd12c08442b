// This file implements structs of tensors in the IR builder: `struct`
// declarations, constructors `Block(wq=..., ...)`, field access `b.wq`,
// struct `let`/`var`/assignment (loop-carried like any variable), struct
// parameters and results of functions and type parameters `fn f[P](p: P)`,
// elementwise operators applied field by field, and `relayout(s, Block)`.
//
// Structs are lowered away here: a struct value is its leaves, one SSA value
// each (EV::parts says which ids form which struct), a struct binding `p`
// binds its leaves as `p.wq`, and a function's struct parameter is one IR
// parameter per leaf. The IR, autodiff and every backend see only tensors.
#include "frontend/BuildIR.h"

#include <algorithm>

namespace dt {

std::vector<EV> EV::elements() const {
  std::vector<EV> out;
  if (parts.empty()) {
    for (int id : ids)
      out.push_back(one(id));
    return out;
  }
  size_t k = 0;
  for (auto &p : parts) {
    size_t n = p ? p->leaves.size() : 1;
    EV e;
    e.ids.assign(ids.begin() + (std::ptrdiff_t)k, ids.begin() + (std::ptrdiff_t)(k + n));
    if (p)
      e.parts = {p};
    k += n;
    out.push_back(std::move(e));
  }
  return out;
}

StructRef IRBuilder::findStruct(const std::string &name) const {
  for (const std::string &cand : scopedNames(name))
    if (auto it = st_.structs.find(cand); it != st_.structs.end())
      return it->second;
  return nullptr;
}

void IRBuilder::unknownType(const ast::TypeSpec &spec) {
  for (const std::string &cand : scopedNames(spec.dtype))
    if (st_.structsTooLarge.count(cand)) {
      diags().error(DiagId::UnknownType, spec.loc, {spec.dtype}).hint =
          "struct `" + cand + "` was refused where it is declared: it holds too many tensors";
      return;
    }
  auto &d = diags().error(DiagId::UnknownType, spec.loc, {spec.dtype});
  if (parseDType(spec.dtype)) {
    d.hint = "a tensor type has dims: write `" + spec.dtype + "[]` for a scalar";
    return;
  }
  std::vector<std::string> names;
  for (auto &[n, def] : st_.structs)
    if (size_t dot = n.rfind('.'); dot == std::string::npos || importedHere(n.substr(0, dot)))
      names.push_back(n);
  if (didYouMean(d, spec.dtype, names, spec.loc))
    return;
  if (size_t dot = spec.dtype.rfind('.'); dot != std::string::npos) {
    std::string mod = spec.dtype.substr(0, dot);
    d.hint = !st_.imported.count(mod) ? "did you `import " + mod + "`?"
             : importedHere(mod)
                 ? "module `" + mod + "` declares no struct `" + spec.dtype.substr(dot + 1) + "`"
                 : "this file does not import `" + mod + "`: write `import " + mod +
                       "` at its top (another file's import does not reach here)";
    return;
  }
  d.hint = "declare it first: `struct " + spec.dtype + " { w: f32[4, 4] @ m[_, x] }`";
}

void IRBuilder::structDecl(const ast::Stmt &s) {
  const ast::StructDecl &d = *s.record;
  std::string q = modulePrefix_ + d.name;
  // An earlier input's struct (the REPL's `:load` of a file again) may be
  // declared again as it was; values of it stay what they are.
  StructRef earlier;
  if (auto it = st_.structs.find(q); it != st_.structs.end() &&
                                     it->second->loc.file != s.loc.file &&
                                     !st_.functions.count(q) && !st_.meshes.count(q))
    earlier = it->second;
  if (!earlier && (st_.structs.count(q) || st_.functions.count(q) || st_.meshes.count(q))) {
    auto &e = diags().error(DiagId::Redefinition, s.loc, {q});
    if (auto it = st_.structs.find(q); it != st_.structs.end())
      e.notes.push_back("the first `" + q + "` is declared at " + lineOf(it->second->loc, s.loc));
    e.hint = "give the struct another name";
    return;
  }
  auto def = std::make_shared<StructDef>();
  def->name = q;
  def->loc = s.loc;
  if (d.fields.empty()) {
    diags().error(DiagId::StructEmpty, s.loc, {q}).hint =
        "a struct holds tensors: `struct " + d.name + " { w: f32[4, 4] @ m[_, x] }`";
    return;
  }
  bool ok = true;
  std::set<std::string> seen;
  // Whether `adding` more tensors would pass the limit (an error at `f`).
  auto tooLarge = [&](const ast::Param &f, size_t adding) {
    if ((int64_t)(def->leaves.size() + adding) <= s_.options.maxStructTensors)
      return false;
    diags()
        .error(DiagId::StructTooLarge, f.loc, {q, std::to_string(s_.options.maxStructTensors)})
        .hint = "each tensor of a struct is a value of every function that takes it: stack "
                "repeated fields into fewer, larger tensors (`w: f32[L, D, D]`)";
    st_.structsTooLarge.insert(q);
    return true;
  };
  for (auto &f : d.fields) {
    if (!seen.insert(f.name).second) {
      diags().error(DiagId::StructDuplicateField, f.loc, {q, f.name});
      ok = false;
      continue;
    }
    StructDef::Field fld;
    fld.name = f.name;
    fld.loc = f.loc;
    if (f.type.bare) {
      // A nested struct, declared before (so a struct never contains itself).
      fld.sub = findStruct(f.type.dtype);
      if (!fld.sub && (f.type.dtype == d.name || f.type.dtype == q)) {
        diags().error(DiagId::UnknownType, f.type.loc, {f.type.dtype}).hint =
            "a struct cannot hold itself (it would hold tensors without end); a field holds "
            "a tensor or a struct declared above";
        ok = false;
        continue;
      }
      if (!fld.sub) {
        unknownType(f.type);
        ok = false;
        continue;
      }
      if (tooLarge(f, fld.sub->leaves.size()))
        return;
      for (auto &[path, t] : fld.sub->leaves)
        def->leaves.push_back({f.name + "." + path, t});
    } else {
      if (f.type.layout && f.type.layout->mesh == "*") {
        diags().error<DiagId::WildcardLayout>(f.type.loc).hint =
            "a field's type is written in full; a function over any struct takes a type "
            "parameter: `fn f[P](p: P) -> P`";
        ok = false;
        continue;
      }
      auto t = resolveType(f.type, nullptr);
      if (!t) {
        ok = false;
        continue;
      }
      fld.type = *t;
      if (tooLarge(f, 1))
        return;
      def->leaves.push_back({f.name, *t});
    }
    def->fields.push_back(std::move(fld));
  }
  if (!ok)
    return;
  if (!earlier) {
    st_.structs[q] = def;
    return;
  }
  bool same = def->leaves == earlier->leaves && def->fields.size() == earlier->fields.size();
  for (size_t i = 0; same && i < def->fields.size(); ++i)
    same = def->fields[i].name == earlier->fields[i].name &&
           (def->fields[i].sub ? def->fields[i].sub->name : "") ==
               (earlier->fields[i].sub ? earlier->fields[i].sub->name : "");
  if (same)
    return;
  auto &e = diags().error(DiagId::Redefinition, s.loc, {q});
  e.notes.push_back("the first `" + q + "` is declared at " + lineOf(earlier->loc, s.loc) +
                    " with other fields");
  e.hint = "a struct keeps its fields for the session (its values hold them): give this one "
           "another name, or `:reset`";
}

bool IRBuilder::reportField(const ast::Expr &e) {
  const std::string &text = e.text;
  for (size_t dot = text.rfind('.'); dot != std::string::npos && dot > 0;
       dot = text.rfind('.', dot - 1)) {
    std::string base = text.substr(0, dot);
    Binding *b = lookup(base);
    if (!b)
      continue;
    std::string field = text.substr(dot + 1);
    field = field.substr(0, field.find('.'));
    if (b->kind == Binding::Struct) {
      noField(*b->record, field, e.loc);
      return true;
    }
    if (b->kind != Binding::Const && b->id < 0)
      return true; // a value that failed: its error is reported
    diags().error(DiagId::NotAStruct, e.loc, {base, field});
    return true;
  }
  return false;
}

EV IRBuilder::fieldOf(const EV &v, const ast::Expr &e) {
  if (v.poison)
    return v;
  StructRef def = v.parts.size() == 1 ? v.parts[0] : nullptr;
  if (!def) {
    diags().error(DiagId::NotAStruct, e.loc, {exprText(e.args[0].get()), e.text});
    return EV::bad();
  }
  size_t k = 0;
  for (auto &f : def->fields) {
    size_t n = f.sub ? f.sub->leaves.size() : 1;
    if (f.name == e.text) {
      EV out;
      out.ids.assign(v.ids.begin() + (std::ptrdiff_t)k, v.ids.begin() + (std::ptrdiff_t)(k + n));
      if (f.sub)
        out.parts = {f.sub};
      return out;
    }
    k += n;
  }
  noField(*def, e.text, e.loc);
  return EV::bad();
}

void IRBuilder::noField(const StructDef &def, const std::string &field, SrcLoc at) {
  auto &d = diags().error(DiagId::StructNoField, at, {def.name, field});
  std::vector<std::string> names;
  for (auto &f : def.fields)
    names.push_back(f.name);
  if (!didYouMean(d, field, names, at)) {
    std::string list;
    for (auto &n : names)
      list += (list.empty() ? "`" : ", `") + n + "`";
    d.hint = "its fields are " + list;
  }
}

EV IRBuilder::structValue(const std::string &name, const Binding &b) {
  EV out;
  out.parts = {b.record};
  for (auto &[path, t] : b.record->leaves) {
    Binding *l = lookup(name + "." + path);
    if (!l || l->id < 0)
      return EV::bad();
    out.ids.push_back(l->id);
  }
  return out;
}

void IRBuilder::bindStruct(const std::string &name, const EV &v, bool isVar, SrcLoc loc,
                           const StructRef &declared) {
  StructRef def = declared ? declared : v.parts[0];
  std::function<void(const std::string &, const StructRef &)> mark = [&](const std::string &n,
                                                                         const StructRef &d) {
    Binding b;
    b.kind = Binding::Struct;
    b.record = d;
    b.loc = loc;
    bind(n, b);
    for (auto &f : d->fields)
      if (f.sub)
        mark(n + "." + f.name, f.sub);
  };
  mark(name, def);
  for (size_t k = 0; k < def->leaves.size(); ++k) {
    const auto &[path, t] = def->leaves[k];
    Binding b;
    b.kind = isVar ? Binding::Var : Binding::Value;
    b.id = v.poison ? -1 : v.ids[k];
    b.loc = loc;
    if (isVar)
      b.declared = declared ? t : (v.poison ? TensorType{} : typeOf(v.ids[k]));
    if (!v.poison)
      fn().values[b.id].name = name + "." + path;
    bind(name + "." + path, b);
  }
}

/// `relayout(e, Want)` when every differing leaf differs only in layout.
static bool layoutsOnly(const std::vector<TensorType> &got, const StructRef &want) {
  for (size_t k = 0; k < got.size(); ++k)
    if (!onlyLayoutDiffers(got[k], want->leaves[k].second) ||
        !(*got[k].mesh == *want->leaves[k].second.mesh))
      return false;
  return true;
}

bool IRBuilder::conformStruct(const EV &v, const StructRef &want, const ast::Expr *e, SrcLoc loc) {
  if (v.poison)
    return false;
  StructRef got = v.parts.size() == 1 ? v.parts[0] : nullptr;
  if (got != want) {
    std::string what = got         ? "a struct `" + got->name + "`"
                       : v.literal ? "a number"
                       : v.ids.size() == 1
                           ? "`" + typeOf(v.ids[0]).str() + "`"
                           : "a tuple of " + std::to_string(v.elements().size()) + " values";
    auto &d = diags().error(DiagId::StructExpected, loc, {want->name, what});
    if (got) {
      // Same fields, other placements: a relayout converts.
      bool same = got->leaves.size() == want->leaves.size();
      for (size_t k = 0; same && k < got->leaves.size(); ++k)
        same = got->leaves[k].first == want->leaves[k].first;
      std::vector<TensorType> types;
      for (int id : v.ids)
        types.push_back(typeOf(id));
      if (same && layoutsOnly(types, want))
        fixHint(d, e, "relayout(" + exprText(e) + ", " + want->name + ")");
    }
    return false;
  }
  std::vector<TensorType> types;
  for (int id : v.ids)
    types.push_back(typeOf(id));
  for (size_t k = 0; k < types.size(); ++k) {
    const auto &[path, t] = want->leaves[k];
    if (types[k] == t)
      continue;
    auto &d =
        diags().error(DiagId::StructFieldType, loc, {path, want->name, t.str(), types[k].str()});
    if (layoutsOnly(types, want))
      fixHint(d, e, "relayout(" + exprText(e) + ", " + want->name + ")");
    return false;
  }
  return true;
}

EV IRBuilder::construct(const StructRef &def, const ast::Expr &e) {
  const auto &fields = def->fields;
  std::vector<const ast::Expr *> given(fields.size(), nullptr);
  if (e.args.size() > fields.size()) {
    diags().error(DiagId::ArgCount, e.loc,
                  {def->name, std::to_string(fields.size()), std::to_string(e.args.size())});
    return EV::bad();
  }
  for (size_t i = 0; i < e.args.size(); ++i)
    given[i] = e.args[i].get();
  for (auto &[k, v] : e.kwargs) {
    auto it = std::find_if(fields.begin(), fields.end(),
                           [&](const StructDef::Field &f) { return f.name == k; });
    if (it == fields.end()) {
      noField(*def, k, v->loc);
      return EV::bad();
    }
    size_t i = (size_t)(it - fields.begin());
    if (given[i]) {
      diags().error(DiagId::StructFieldTwice, v->loc, {k});
      return EV::bad();
    }
    given[i] = v.get();
  }
  for (size_t i = 0; i < fields.size(); ++i)
    if (!given[i]) {
      auto &d = diags().error(DiagId::StructMissingField, e.loc, {def->name, fields[i].name});
      d.hint = "give every field a value: `" + def->name + "(..., " + fields[i].name + "=...)`";
      return EV::bad();
    }
  EV out;
  out.parts = {def};
  bool bad = false;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto &f = fields[i];
    const ast::Expr &x = *given[i];
    if (f.sub) {
      EV v = expr(x);
      if (!conformStruct(v, f.sub, &x, x.loc)) {
        bad = true;
        continue;
      }
      out.ids.insert(out.ids.end(), v.ids.begin(), v.ids.end());
      continue;
    }
    // A field is built as an initializer of its type: `randn(seed=1)`,
    // `randn(seed=1) * 0.35`, `zeros()`, a number or a literal list take the
    // field's type.
    EV v = initializer(x, f.type);
    if (!v.poison && v.literal)
      v = literalFits(v, f.type, x.loc)
              ? emit(Op::Fill, {}, {}, x.loc, constAttrs(v, f.type.dtype), {f.type})
              : EV::bad();
    if (v.poison) {
      bad = true;
      continue;
    }
    if (!v.single()) {
      diags().error(DiagId::StructFieldType, x.loc,
                    {f.name, def->name, f.type.str(), v.hasStruct() ? "a struct" : "a tuple"});
      bad = true;
      continue;
    }
    const TensorType &got = typeOf(v.ids[0]);
    if (got != f.type) {
      auto &d = diags().error(DiagId::StructFieldType, x.loc,
                              {f.name, def->name, f.type.str(), got.str()});
      conversionHint(d, &x, got, f.type);
      bad = true;
      continue;
    }
    out.ids.push_back(v.ids[0]);
  }
  return bad ? EV::bad() : out;
}

void IRBuilder::structLet(const ast::Stmt &s, const StructRef &declared, EV v) {
  bool isVar = s.kind == ast::Stmt::Var;
  SrcLoc loc = s.nameLocs.empty() ? s.loc : s.nameLocs[0];
  if (s.type) { // `let p : Block = ...`
    if (!declared) {
      bind(s.names[0], Binding{Binding::Value, -1, {}, 0, loc, nullptr});
      return;
    }
    const ast::Expr &init = *s.value;
    bool fill = init.kind == ast::Expr::Call &&
                (init.callee == "zeros" || init.callee == "ones" || init.callee == "full") &&
                !st_.functions.count(init.callee);
    if (fill) {
      // `var m : Block = zeros()`: every leaf filled, with its own type.
      v = EV();
      v.parts = {declared};
      for (auto &[path, t] : declared->leaves) {
        EV leaf = initializer(init, t);
        if (!leaf.single()) {
          v = EV::bad();
          break;
        }
        v.ids.push_back(leaf.ids[0]);
      }
    } else {
      v = expr(init);
      if (!conformStruct(v, declared, &init, init.loc))
        v = EV::bad();
    }
    if (v.poison)
      v.ids.assign(declared->leaves.size(), -1);
    bindStruct(s.names[0], v, isVar, loc, declared);
    return;
  }
  // `let g = grad(loss)(p, x)`, `let (l, g) = value_and_grad(...)(...)`.
  std::vector<EV> elems = v.elements();
  if (elems.size() != s.names.size()) {
    destructureCount(s.loc, elems.size(), s.names.size());
    for (auto &n : s.names)
      bind(n, Binding{Binding::Value, -1, {}, 0, loc, nullptr});
    return;
  }
  for (size_t i = 0; i < elems.size(); ++i) {
    SrcLoc at = i < s.nameLocs.size() ? s.nameLocs[i] : s.loc;
    if (!elems[i].parts.empty()) {
      bindStruct(s.names[i], elems[i], isVar, at);
      continue;
    }
    Binding b;
    b.kind = isVar ? Binding::Var : Binding::Value;
    b.id = elems[i].ids[0];
    b.loc = at;
    if (isVar)
      b.declared = typeOf(b.id);
    fn().values[b.id].name = s.names[i];
    bind(s.names[i], b);
  }
}

void IRBuilder::structAssign(const ast::Stmt &s, Binding &whole) {
  const std::string &name = s.names[0];
  SrcLoc nl = s.nameLocs.empty() ? s.loc : s.nameLocs[0];
  StructRef def = whole.record;
  EV v = expr(*s.value);
  std::vector<Binding *> leaves;
  for (auto &[path, t] : def->leaves) {
    Binding *l = lookup(name + "." + path);
    if (!l || l->kind != Binding::Var) {
      auto &d = diags().error(DiagId::NotAVariable, nl, {name});
      d.hint = varHint(name);
      return;
    }
    leaves.push_back(l);
  }
  if (v.poison)
    return;
  StructRef got = v.parts.size() == 1 ? v.parts[0] : nullptr;
  if (got != def) {
    // The same message as a `let`: a struct of another type, or a tensor.
    conformStruct(v, def, s.value.get(), s.value->loc);
    return;
  }
  std::vector<TensorType> types;
  for (int id : v.ids)
    types.push_back(typeOf(id));
  for (size_t k = 0; k < leaves.size(); ++k) {
    if (leaves[k]->id < 0)
      return;
    if (types[k] == leaves[k]->declared)
      continue;
    auto &d =
        diags().error(DiagId::StructFieldType, s.value->loc,
                      {def->leaves[k].first, name, leaves[k]->declared.str(), types[k].str()});
    bool layouts = true;
    for (size_t j = 0; j < leaves.size(); ++j)
      layouts &= onlyLayoutDiffers(types[j], leaves[j]->declared) &&
                 *types[j].mesh == *leaves[j]->declared.mesh &&
                 leaves[j]->declared == def->leaves[j].second;
    if (layouts)
      fixHint(d, s.value.get(), "relayout(" + exprText(s.value.get()) + ", " + def->name + ")");
    return;
  }
  for (size_t k = 0; k < leaves.size(); ++k)
    leaves[k]->id = v.ids[k];
}

std::vector<std::string> IRBuilder::leafNames(const std::string &name) {
  Binding *b = lookup(name);
  if (!b || b->kind != Binding::Struct)
    return {name};
  std::vector<std::string> out;
  for (auto &[path, t] : b->record->leaves)
    out.push_back(name + "." + path);
  return out;
}

std::vector<std::string> IRBuilder::leafNames(const std::vector<std::string> &names) {
  std::vector<std::string> out;
  for (auto &whole : names)
    for (auto &n : leafNames(whole)) // a struct variable carries its leaves
      if (std::find(out.begin(), out.end(), n) == out.end())
        out.push_back(n);
  return out;
}

bool IRBuilder::lift(const std::vector<EV> &operands, SrcLoc loc,
                     const std::function<EV(const std::vector<EV> &)> &one, EV &out) {
  StructRef def;
  for (auto &o : operands) {
    if (o.poison)
      return false;
    if (!o.hasStruct())
      continue;
    if (o.parts.size() != 1) {
      diags().error<DiagId::TupleOperand>(loc, o.ids.size());
      out = EV::bad();
      return true;
    }
    if (!def) {
      def = o.parts[0];
    } else if (def != o.parts[0]) {
      diags().error(DiagId::StructMismatch, loc, {def->name, o.parts[0]->name}).hint =
          "elementwise operators pair the fields of two structs of one type";
      out = EV::bad();
      return true;
    }
  }
  if (!def)
    return false;
  out = EV();
  out.parts = {def};
  for (size_t k = 0; k < def->leaves.size(); ++k) {
    std::vector<EV> ops;
    for (auto &o : operands)
      ops.push_back(o.hasStruct() ? EV::one(o.ids[k]) : o);
    size_t before = diags().all().size();
    EV r = one(ops);
    if (r.poison || r.ids.size() != 1) {
      if (diags().all().size() > before)
        if (Diagnostic *d = diags().last()) {
          d->notes.push_back("in field `" + def->leaves[k].first + "` of struct `" + def->name +
                             "`");
          // A hint for one field would name a struct expression as a tensor;
          // the struct's own conversion is a relayout to its declared type.
          if (d->id == DiagId::DTypeMismatch) {
            const DType ft = def->leaves[k].second.dtype;
            d->hint = "the operator applies to every field of `" + def->name + "`, and `" +
                      def->leaves[k].first + "` is " + dtypeName(ft) +
                      (isFloat(ft) ? ": `full_like(s, v) * s` (s the struct) scales every field "
                                     "by `v` cast to the field's own type"
                                   : ": keep such a field out of the struct this arithmetic "
                                     "updates, or make it a float");
            d->fixes.clear();
          } else if (!d->hint.empty()) {
            d->hint = "move a struct operand to the placements its type declares: "
                      "`relayout(s, " +
                      def->name + ")`";
            d->fixes.clear();
          }
        }
      out = EV::bad();
      return true;
    }
    out.ids.push_back(r.ids[0]);
  }
  return true;
}

EV IRBuilder::relayoutStruct(const EV &x, const ast::Expr &e) {
  const ast::Expr &arg = *e.args[0];
  const ast::Expr &l = *e.args[1];
  if (x.parts.size() != 1) {
    diags().error<DiagId::TupleOperand>(e.loc, x.ids.size());
    return EV::bad();
  }
  StructRef from = x.parts[0];
  StructRef to = l.kind == ast::Expr::Name ? findStruct(l.text) : nullptr;
  if (!to) {
    auto &d = diags().error(DiagId::NeedsLayoutArg, l.loc, {"relayout"});
    d.hint = "a struct moves to the placements of a struct type: `relayout(" + exprText(&arg) +
             ", " + from->name + ")`";
    if (l.kind == ast::Expr::Name && buildingProgram_)
      for (const auto &st : buildingProgram_->stmts)
        if (st->kind == ast::Stmt::Struct && st->record->name == l.text) {
          d.hint = "struct `" + l.text + "` is declared below (line " +
                   std::to_string(st->loc.line) + "): declare it before its first use";
          break;
        }
    return EV::bad();
  }
  if (from->leaves.size() != to->leaves.size()) {
    diags().error(DiagId::StructLayoutMismatch, e.loc,
                  {from->name, to->name, "they have different fields"});
    return EV::bad();
  }
  EV out;
  out.parts = {to};
  for (size_t k = 0; k < to->leaves.size(); ++k) {
    const TensorType got = typeOf(x.ids[k]); // a copy: emit() grows the value table
    const auto &[path, want] = to->leaves[k];
    if (from->leaves[k].first != path || !onlyLayoutDiffers(got, want)) {
      diags().error(DiagId::StructLayoutMismatch, e.loc,
                    {from->name, to->name,
                     from->leaves[k].first != path
                         ? "field `" + from->leaves[k].first + "` is `" + path + "` there"
                         : "field `" + path + "` is `" + got.str() + "` and `" + want.str() + "`"});
      return EV::bad();
    }
    if (!(*got.mesh == *want.mesh)) {
      auto &d = diags().error(DiagId::RelayoutMesh, e.loc, {got.mesh->name, want.mesh->name});
      d.notes.push_back("in field `" + path + "` of struct `" + to->name + "`");
      return EV::bad();
    }
    if (got == want) {
      out.ids.push_back(x.ids[k]);
      continue;
    }
    EV r = emit(Op::Relayout, {EV::one(x.ids[k])}, {&arg}, e.loc, {}, {want});
    if (r.poison)
      return r;
    out.ids.push_back(r.ids[0]);
  }
  return out;
}

bool IRBuilder::expandSignature(FnInfo &fi, const std::vector<TensorType> &argTypes,
                                const std::vector<StructRef> &argShape,
                                const std::vector<const ast::Expr *> &argExprs, SrcLoc loc,
                                Signature &sig) {
  const ast::FnDecl &decl = *fi.decl;
  size_t nargs = argShape.empty() ? argTypes.size() : argShape.size();
  if (nargs != decl.params.size()) {
    auto &d =
        diags().error(DiagId::ArgCount, loc,
                      {fi.qualified, std::to_string(decl.params.size()), std::to_string(nargs)});
    // More arguments than parameters, and a parameter is a struct: its
    // fields were likely passed one by one.
    for (const ast::Param &p : decl.params)
      if (nargs > decl.params.size() && p.type.bare && findStruct(p.type.dtype)) {
        d.hint = "parameter `" + p.name + "` is a struct `" + p.type.dtype +
                 "`: pass the struct value as one argument (a host program passes it by "
                 "name), not its fields";
        break;
      }
    if (d.hint.empty()) {
      std::string params;
      for (const ast::Param &p : decl.params)
        params += (params.empty() ? "" : ", ") + p.name + ": " + ast::printType(p.type);
      d.hint = "`" + fi.qualified + "` is declared at " + lineOf(decl.loc, loc) + " as `fn " +
               decl.name + "(" + params + ")`";
    }
    return false;
  }
  // Structs named in the signature are looked up in the function's module.
  std::string savedPrefix = modulePrefix_;
  modulePrefix_ = fi.qualified.substr(0, fi.qualified.rfind('.') + 1);
  struct Restore {
    std::string &p, v;
    ~Restore() { p = v; }
  } restore{modulePrefix_, savedPrefix};
  auto isTypeParam = [&](const std::string &n) {
    return std::find(decl.typeParams.begin(), decl.typeParams.end(), n) != decl.typeParams.end();
  };
  struct Bound {
    StructRef def;
    std::vector<TensorType> types;
  };
  std::map<std::string, Bound> bound;
  auto describe = [](const Bound &b) { return b.def ? "struct " + b.def->name : b.types[0].str(); };
  size_t k = 0;
  for (size_t i = 0; i < nargs; ++i) {
    const ast::Param &p = decl.params[i];
    StructRef st = argShape.empty() ? nullptr : argShape[i];
    size_t n = st ? st->leaves.size() : 1;
    std::vector<TensorType> leafTypes(argTypes.begin() + (std::ptrdiff_t)k,
                                      argTypes.begin() + (std::ptrdiff_t)(k + n));
    const ast::Expr *ae = k < argExprs.size() ? argExprs[k] : nullptr;
    auto note = [&](Diagnostic &d) {
      d.notes.push_back("parameter `" + p.name + "` declared here: " + lineOf(p.loc, loc));
    };
    if (p.type.bare && isTypeParam(p.type.dtype)) {
      Bound here{st, leafTypes};
      auto [it, fresh] = bound.emplace(p.type.dtype, here);
      if (!fresh && (it->second.def != st || it->second.types != leafTypes)) {
        // Name the first leaf that differs when the structs agree.
        std::string got = describe(here), want = describe(it->second);
        if (st && it->second.def == st)
          for (size_t j = 0; j < n; ++j)
            if (leafTypes[j] != it->second.types[j]) {
              got = "struct " + st->name + " with `" + st->leaves[j].first + ": " +
                    leafTypes[j].str() + "`";
              want = "struct " + st->name + " with `" + st->leaves[j].first + ": " +
                     it->second.types[j].str() + "`";
              break;
            }
        auto &d = diags().error(
            DiagId::TypeParamConflict, ae ? ae->loc : loc,
            {"`" + p.type.dtype + "` of `" + fi.qualified + "`", want, std::to_string(i + 1), got});
        note(d);
        if (!st && !it->second.def)
          conversionHint(d, ae, leafTypes[0], it->second.types[0]);
        else if (st && it->second.def == st) {
          std::vector<TensorType> declared;
          for (auto &leaf : st->leaves)
            declared.push_back(leaf.second);
          if (declared == it->second.types && layoutsOnly(leafTypes, st))
            fixHint(d, ae, "relayout(" + exprText(ae) + ", " + st->name + ")");
        }
        return false;
      }
      if (st)
        sig.structParams.push_back({p.name, st});
      for (size_t j = 0; j < n; ++j)
        sig.params.push_back(
            {st ? p.name + "." + st->leaves[j].first : p.name, p.loc, nullptr, leafTypes[j]});
    } else if (p.type.bare) {
      StructRef want = findStruct(p.type.dtype);
      if (!want) {
        unknownType(p.type);
        return false;
      }
      if (st != want) {
        auto &d = diags().error(
            DiagId::StructExpected, ae ? ae->loc : loc,
            {want->name, st ? "a struct `" + st->name + "`" : "`" + leafTypes[0].str() + "`"});
        note(d);
        return false;
      }
      for (size_t j = 0; j < n; ++j)
        if (leafTypes[j] != want->leaves[j].second) {
          auto &d = diags().error(DiagId::StructFieldType, ae ? ae->loc : loc,
                                  {want->leaves[j].first, want->name, want->leaves[j].second.str(),
                                   leafTypes[j].str()});
          d.notes.push_back("argument " + std::to_string(i + 1) + " of `" + fi.qualified + "`");
          note(d);
          if (layoutsOnly(leafTypes, want))
            fixHint(d, ae, "relayout(" + exprText(ae) + ", " + want->name + ")");
          return false;
        }
      sig.structParams.push_back({p.name, want});
      for (size_t j = 0; j < n; ++j)
        sig.params.push_back(
            {p.name + "." + want->leaves[j].first, p.loc, nullptr, want->leaves[j].second});
    } else {
      if (st) {
        auto &d = diags().error(DiagId::StructArg, ae ? ae->loc : loc,
                                {std::to_string(i + 1), fi.qualified, st->name, p.name});
        note(d);
        d.hint = "pass one field (`" + exprText(ae) + "." + st->fields[0].name + "`)";
        return false;
      }
      sig.params.push_back({p.name, p.loc, &p.type, std::nullopt});
    }
    k += n;
  }
  for (auto &r : decl.results) {
    if (r.bare && isTypeParam(r.dtype)) {
      auto it = bound.find(r.dtype);
      if (it == bound.end()) {
        diags().error(DiagId::TypeParamUnbound, r.loc, {r.dtype, fi.qualified});
        return false;
      }
      sig.resultShape.push_back(it->second.def);
      for (auto &t : it->second.types)
        sig.results.push_back({"", r.loc, nullptr, t});
    } else if (r.bare) {
      StructRef def = findStruct(r.dtype);
      if (!def) {
        unknownType(r);
        return false;
      }
      sig.resultShape.push_back(def);
      for (auto &leaf : def->leaves)
        sig.results.push_back({"", r.loc, nullptr, leaf.second});
    } else {
      sig.resultShape.push_back(nullptr);
      sig.results.push_back({"", r.loc, &r, std::nullopt});
    }
  }
  return true;
}

} // namespace dt
