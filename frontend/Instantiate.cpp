// This file implements Compilation::instantiateCall: the instance of a
// top-level function that a call from outside the program (the embedding
// API) runs, typed by the caller's host buffers and session values.
#include "frontend/BuildIR.h"

#include <algorithm>
#include <cctype>

namespace dt {

std::string Compilation::instantiateCall(const std::string &fn, std::vector<TensorType> &argTypes,
                                         const std::vector<std::string> &argStructs) {
  auto it = builderState->functions.find(fn);
  if (it == builderState->functions.end()) {
    std::vector<std::string> names;
    for (auto &[n, f] : builderState->functions)
      names.push_back(n);
    Diagnostic &d = diags.error<DiagId::UnknownFunction>(SrcLoc{-1, 0, 0, 0}, fn);
    if (auto near = closestName(fn, names))
      d.hint = "did you mean `" + *near + "`?";
    return "";
  }
  FnInfo &fi = it->second;
  const ast::FnDecl &decl = *fi.decl;
  IRBuilder b(*this);
  std::vector<StructRef> shape;
  for (const std::string &name : argStructs) {
    auto st = name.empty() ? builderState->structs.end() : builderState->structs.find(name);
    shape.push_back(st == builderState->structs.end() ? nullptr : st->second);
  }
  if (std::none_of(shape.begin(), shape.end(), [](const StructRef &r) { return !!r; }))
    shape.clear();
  // Host data for a tensor parameter with a written layout: give it that
  // layout, size symbols bound from the data's own shape. `k` walks the
  // leaves (a struct argument passes several).
  size_t nargs = shape.empty() ? argTypes.size() : shape.size();
  for (size_t i = 0, k = 0; i < nargs && i < decl.params.size() && k < argTypes.size(); ++i) {
    if (!shape.empty() && shape[i]) {
      k += shape[i]->leaves.size();
      continue;
    }
    const ast::TypeSpec &spec = decl.params[i].type;
    TensorType &at = argTypes[k++];
    if (!at.isHost() || !spec.layout || spec.layout->mesh == "*" ||
        spec.dims.size() != at.shape.size())
      continue;
    std::map<std::string, Dim> symbols;
    for (size_t d = 0; d < spec.dims.size(); ++d)
      if (!std::isdigit((unsigned char)spec.dims[d][0]))
        symbols.emplace(spec.dims[d], at.shape[d]);
    int errors = diags.errorCount();
    size_t n = diags.all().size();
    auto pt = b.resolveType(spec, &symbols);
    if (pt && pt->dtype == at.dtype && pt->shape == at.shape)
      at = *pt;
    else
      diags.rollback(n, errors); // the mismatch is reported by instantiate
  }
  std::vector<const ast::Expr *> noExprs(argTypes.size(), nullptr);
  const size_t functionsBefore = module.functions.size();
  const size_t undoMark = builderState->functionsUndo.size();
  const int errors = diags.errorCount();
  std::string inst = b.instantiate(fi, argTypes, noExprs, SrcLoc{-1, 0, 0, 0}, shape);
  if (inst.empty() || diags.errorCount() > errors) {
    // A call whose instance fails (a shape the body cannot take) leaves the
    // program as it was: a half-built function left here failed every
    // later build's verification.
    while (module.functions.size() > functionsBefore)
      module.functions.pop_back();
    builderState->undoFunctions(undoMark);
    return "";
  }
  return inst;
}

} // namespace dt
