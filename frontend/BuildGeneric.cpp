// This file implements rank- and dtype-generic function signatures in the IR
// builder: `fn layer_norm[T](x: T[..., D] @ *, g: T[D] @ *) -> T[..., D] @ *`.
// `...` in a parameter type stands for any number of dims (the batch dims),
// bound per call by the arguments: every `...` of one call is the same list of
// sizes, and it may be used in the results, in `let` annotations of the body
// and as a `reshape` entry (`reshape(m, [..., 1])`). A type parameter written
// as an element type (`T[...]`) is bound to the argument's dtype. Both are
// instantiated per call, like `@ *` layouts, so the placements of the batch
// dims are the caller's and flow through the body's ops.
#include "frontend/BuildIR.h"

#include <algorithm>

namespace dt {

/// The index of `...` in `spec`'s dims, or -1.
static int ellipsisIndex(const ast::TypeSpec &spec) {
  for (size_t d = 0; d < spec.dims.size(); ++d)
    if (spec.dims[d] == "...")
      return (int)d;
  return -1;
}

static std::string dimsText(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

int IRBuilder::argDim(const ast::TypeSpec &spec, size_t d, int rank) {
  int e = ellipsisIndex(spec);
  if (e < 0 || (int)d < e)
    return (int)d;
  if ((int)d == e)
    return -1;
  int nb = rank - ((int)spec.dims.size() - 1); // dims the `...` stands for
  return (int)d - 1 + nb;
}

std::optional<DType> IRBuilder::dtypeNamed(const std::string &name) const {
  if (dtypeParams_)
    if (auto it = dtypeParams_->find(name); it != dtypeParams_->end())
      return it->second;
  return parseDType(name);
}

bool IRBuilder::checkGenericSignature(const ast::FnDecl &d, const std::string &q, bool &generic) {
  bool ok = true;
  auto isTypeParam = [&](const std::string &n) {
    return std::find(d.typeParams.begin(), d.typeParams.end(), n) != d.typeParams.end();
  };
  std::set<std::string> asType, asDType; // how each type parameter is used
  bool paramBatch = false;
  auto visit = [&](const ast::TypeSpec &t, const std::string &what, bool param) {
    if (isTypeParam(t.dtype))
      (t.bare ? asType : asDType).insert(t.dtype);
    int n = (int)std::count(t.dims.begin(), t.dims.end(), "...");
    if (n == 0)
      return;
    generic = true;
    paramBatch |= param;
    if (n > 1) {
      diags().error(DiagId::EllipsisTwice, t.loc, {what});
      ok = false;
    }
    if (t.layout && t.layout->mesh != "*") {
      auto &e = diags().error(DiagId::EllipsisLayout, t.layout->loc, {what});
      e.hint = "write `@ *`: the function is instantiated with the caller's placements, "
               "batch dims included";
      if (t.layout->loc.known() && t.layout->loc.endCol > t.layout->loc.col)
        e.fixes = {FixIt{t.layout->loc, "*"}};
      ok = false;
    }
  };
  for (auto &p : d.params)
    visit(p.type, p.name, true);
  for (auto &r : d.results)
    visit(r, "the result of " + q, false);
  for (auto &r : d.results)
    if (ellipsisIndex(r) >= 0 && !paramBatch) {
      auto &e = diags().error(DiagId::EllipsisUnbound, r.loc, {q});
      e.hint = "write `...` in the type of a parameter too (`x: f32[..., D] @ *`), or write "
               "the result's dims out";
      ok = false;
      break;
    }
  for (auto &tp : d.typeParams) {
    if (asType.count(tp) && asDType.count(tp)) {
      diags().error(DiagId::DTypeParamMixed, d.params.empty() ? SrcLoc{} : d.params[0].loc,
                    {tp, q});
      ok = false;
    }
  }
  // A dtype parameter in a result must be bound by a parameter.
  std::set<std::string> boundDTypes;
  for (auto &p : d.params)
    if (!p.type.bare && isTypeParam(p.type.dtype))
      boundDTypes.insert(p.type.dtype);
  for (auto &r : d.results)
    if (!r.bare && isTypeParam(r.dtype) && !boundDTypes.count(r.dtype)) {
      diags().error(DiagId::TypeParamUnbound, r.loc, {r.dtype, q});
      ok = false;
    }
  if (!asDType.empty())
    generic = true;
  return ok;
}

bool IRBuilder::bindGenerics(FnInfo &fi, const std::vector<FlatParam> &params,
                             const std::vector<TensorType> &argTypes,
                             const std::vector<const ast::Expr *> &argExprs, SrcLoc loc,
                             std::optional<Shape> &batch, std::map<std::string, DType> &dtypes) {
  const ast::FnDecl &decl = *fi.decl;
  size_t batchArg = 0;
  std::map<std::string, size_t> dtypeFrom;
  for (size_t i = 0; i < argTypes.size() && i < params.size(); ++i) {
    if (!params[i].spec)
      continue;
    const ast::TypeSpec &spec = *params[i].spec;
    const TensorType &at = argTypes[i];
    const ast::Expr *ae = i < argExprs.size() ? argExprs[i] : nullptr;
    auto note = [&](Diagnostic &d) {
      d.notes.push_back("parameter `" + params[i].name +
                        "` declared here: " + lineOf(params[i].loc, loc));
    };
    bool isParam = !spec.bare && std::find(decl.typeParams.begin(), decl.typeParams.end(),
                                           spec.dtype) != decl.typeParams.end();
    if (isParam) {
      auto [it, fresh] = dtypes.emplace(spec.dtype, at.dtype);
      if (fresh) {
        dtypeFrom[spec.dtype] = i;
      } else if (it->second != at.dtype) {
        auto &d =
            diags().error(DiagId::DTypeParamConflict, ae ? ae->loc : loc,
                          {"`" + spec.dtype + "` of `" + fi.qualified + "`", dtypeName(it->second),
                           std::to_string(i + 1), dtypeName(at.dtype)});
        d.notes.push_back("`" + spec.dtype + "` is bound by argument " +
                          std::to_string(dtypeFrom[spec.dtype] + 1));
        note(d);
        std::string cast = "cast(" + exprText(ae) + ", " + dtypeName(it->second) + ")";
        fixHint(d, ae, cast);
        return false;
      }
    }
    int e = ellipsisIndex(spec);
    if (e < 0)
      continue;
    int fixed = (int)spec.dims.size() - 1;
    if (at.rank() < fixed) {
      std::string want = spec.dtype + "[";
      for (size_t d = 0; d < spec.dims.size(); ++d)
        want += (d ? ", " : "") + spec.dims[d];
      auto &d = diags().error(
          DiagId::BatchRank, loc,
          {std::to_string(i + 1), fi.qualified,
           std::to_string(fixed) + (fixed == 1 ? " dim" : " dims") + " (`" + want + "]`)",
           at.str()});
      note(d);
      return false;
    }
    Shape here(at.shape.begin() + e, at.shape.begin() + e + (at.rank() - fixed));
    if (!batch) {
      batch = here;
      batchArg = i;
    } else if (*batch != here) {
      auto &d =
          diags().error(DiagId::BatchConflict, ae ? ae->loc : loc,
                        {fi.qualified, dimsText(*batch), std::to_string(i + 1), dimsText(here)});
      d.notes.push_back("`...` is bound by argument " + std::to_string(batchArg + 1));
      note(d);
      d.hint = "the `...` parameters of one call share their batch dims: pass `" + exprText(ae) +
               "` with batch dims " + dimsText(*batch) +
               " (`broadcast_to` or `reshape` it), or call once per batch shape";
      return false;
    }
  }
  return true;
}

} // namespace dt
