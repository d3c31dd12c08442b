// This file implements Compilation::instantiateCall: the instance of a
// top-level function that a call from outside the program (the embedding
// API) runs, typed by the caller's host buffers and session values.
#include "frontend/BuildIR.h"

#include <cctype>

namespace dt {

std::string Compilation::instantiateCall(const std::string &fn, std::vector<TensorType> &argTypes) {
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
  if (argTypes.size() == decl.params.size()) {
    // Host data for a parameter with a written layout: give it that layout,
    // size symbols bound from the data's own shape.
    for (size_t i = 0; i < argTypes.size(); ++i) {
      const ast::TypeSpec &spec = decl.params[i].type;
      TensorType &at = argTypes[i];
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
  }
  std::vector<const ast::Expr *> noExprs(argTypes.size(), nullptr);
  return b.instantiate(fi, argTypes, noExprs, SrcLoc{-1, 0, 0, 0});
}

} // namespace dt
