// This file implements the IR builder's handling of written types: tensor
// type specs, both layout notations (placement list and dims mapping) with
// their rules, and the rendering of type errors as diagnostics whose hint is
// the exact `relayout` to write.
#include "frontend/BuildIR.h"

#include "support/Checked.h"

#include <algorithm>
#include <cstdio>

namespace dt {

std::optional<TensorType> IRBuilder::resolveType(const ast::TypeSpec &spec,
                                                 const std::map<std::string, Dim> *symbols) {
  auto dt = parseDType(spec.dtype);
  if (!dt) {
    diags().error(DiagId::UnknownDType, spec.loc, {spec.dtype}).hint =
        "element types are `f32`, `f64`, `i32`, `i64` and `bool`";
    return std::nullopt;
  }
  Shape shape;
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    const std::string &d = spec.dims[i];
    if (!d.empty() && std::isdigit((unsigned char)d[0])) {
      shape.push_back(Dim::lit(std::stoll(d)));
      continue;
    }
    const std::map<std::string, Dim> *bound = symbols ? symbols : symbols_;
    if (bound) {
      auto it = bound->find(d);
      if (it != bound->end()) {
        shape.push_back(it->second);
        continue;
      }
    }
    if (symbols_ || symbols) {
      // inside a generic function: an unbound symbol stays symbolic
      shape.push_back(Dim::symbol(d));
      continue;
    }
    SrcLoc l = i < spec.dimLocs.size() ? spec.dimLocs[i] : spec.loc;
    diags().error(DiagId::UnknownName, l, {d}).hint =
        "size symbols are only allowed in function signatures; write a number here";
    return std::nullopt;
  }
  if (!checkElements(shape, spec.loc))
    return std::nullopt;
  if (!spec.layout)
    return replicatedType(*dt, shape, nullptr);
  if (spec.layout->mesh == "*") {
    TensorType t = replicatedType(*dt, shape, nullptr);
    t.placements.clear();
    return t; // caller treats `@ *` specially
  }
  return applyLayout(*spec.layout, *dt, shape);
}

bool IRBuilder::checkElements(const Shape &shape, SrcLoc loc) {
  auto n = checkedNumElements(shape);
  int64_t limit = s_.options.maxTensorElements;
  if (n && *n <= limit)
    return true;
  auto &d = diags().error(
      DiagId::TensorTooLarge, loc,
      {shapeStr(shape), n ? std::to_string(*n) : "more than 2^63", std::to_string(limit)});
  d.hint = "shrink the tensor; one tensor holds at most " + std::to_string(limit) + " elements";
  return false;
}

bool IRBuilder::literalInt(const EV &v, SrcLoc loc, int64_t &out) {
  if (v.isInt) { // integer literals are exact (the lexer rejects what i64 cannot hold)
    out = v.ival;
    return true;
  }
  auto i = doubleToInt64(v.number);
  if (!i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v.number);
    diags().error(DiagId::IntTooLarge, loc, {buf});
    return false;
  }
  out = *i;
  return true;
}

std::optional<TensorType> IRBuilder::applyLayout(const ast::LayoutSpec &spec, DType dt,
                                                 const Shape &shape) {
  auto it = st_.meshes.find(spec.mesh);
  if (it == st_.meshes.end()) {
    auto &d = diags().error(DiagId::UnknownMesh, spec.loc, {spec.mesh});
    if (!st_.meshes.empty())
      d.hint = "declared meshes: `" + st_.meshes.begin()->first + "`";
    return std::nullopt;
  }
  MeshRef mesh = it->second;
  TensorType t = replicatedType(dt, shape, mesh);
  int rank = (int)shape.size();
  if (spec.placementForm) {
    std::vector<bool> seen(mesh->axes.size(), false);
    for (auto &e : spec.entries) {
      int a = mesh->axisIndex(e.axis);
      if (a < 0) {
        diags().error(DiagId::UnknownMeshAxis, e.loc, {mesh->name, e.axis}).hint =
            "mesh `" + mesh->str() + "`";
        return std::nullopt;
      }
      if (seen[a]) {
        diags().error(DiagId::AxisListedTwice, e.loc, {e.axis});
        return std::nullopt;
      }
      seen[a] = true;
      std::string kind = e.kind;
      std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
      if (kind == "replicate") {
        t.placements[a] = Placement::replicate();
      } else if (kind == "shard") {
        if (e.dim < 0 || e.dim >= rank) {
          diags().error(DiagId::ShardDimOutOfRange, e.loc,
                        {std::to_string(e.dim), std::to_string(rank)});
          return std::nullopt;
        }
        t.placements[a] = Placement::shard((int)e.dim);
      } else if (kind == "partial") {
        auto op = parseReduceOp(e.reduce);
        if (!op) {
          diags().error<DiagId::UnknownReduction>(e.loc, e.reduce);
          return std::nullopt;
        }
        t.placements[a] = Placement::partial(*op);
      } else {
        diags().error<DiagId::UnknownPlacement>(e.loc, e.kind);
        return std::nullopt;
      }
    }
    // Multi-axis shards of one dim flatten in mesh order, so any order is fine here.
    return t;
  }
  // dims-mapping form: one entry per tensor dim
  if ((int)spec.entries.size() != rank) {
    auto &d = diags().error(
        DiagId::LayoutRankMismatch, spec.loc,
        {spec.mesh + "[...]", std::to_string(spec.entries.size()), std::to_string(rank)});
    d.hint = "write one entry per tensor dim: a mesh axis, `(x, y)`, or `_`";
    return std::nullopt;
  }
  std::vector<int> usedBy(mesh->axes.size(), -1);
  for (int dim = 0; dim < rank; ++dim) {
    const auto &e = spec.entries[dim];
    int prev = -1;
    for (auto &axis : e.axes) {
      int a = mesh->axisIndex(axis);
      if (a < 0) {
        diags().error(DiagId::UnknownMeshAxis, e.loc, {mesh->name, axis}).hint =
            "mesh `" + mesh->str() + "`";
        return std::nullopt;
      }
      if (usedBy[a] >= 0) {
        auto &d = diags().error(DiagId::AxisShardsTwoDims, e.loc,
                                {axis, std::to_string(usedBy[a]), std::to_string(dim)});
        d.hint = "shard one of the dims on another axis, or replicate it with `_`";
        return std::nullopt;
      }
      if (a < prev) {
        std::string written, ordered;
        std::vector<std::string> sorted = e.axes;
        std::sort(sorted.begin(), sorted.end(),
                  [&](auto &x, auto &y) { return mesh->axisIndex(x) < mesh->axisIndex(y); });
        for (size_t i = 0; i < e.axes.size(); ++i) {
          written += (i ? ", " : "") + e.axes[i];
          ordered += (i ? ", " : "") + sorted[i];
        }
        diags().error(DiagId::MultiAxisOrder, e.loc, {"(" + written + ")", "(" + ordered + ")"});
        return std::nullopt;
      }
      prev = a;
      usedBy[a] = dim;
      t.placements[a] = Placement::shard(dim);
    }
  }
  return t;
}

std::string IRBuilder::layoutText(const TensorType &t) const {
  std::string dm = t.dimsMappingStr();
  return dm.empty() ? t.layoutStr() : dm;
}

std::string IRBuilder::exprText(const ast::Expr *e) const {
  if (!e)
    return "...";
  if (e->kind == ast::Expr::Name)
    return e->text;
  if (e->kind == ast::Expr::Call || e->kind == ast::Expr::CallExpr)
    return ast::printExpr(*e);
  // Use the source text when the span is on one line.
  if (e->loc.known() && e->loc.endCol > e->loc.col) {
    std::string line = s_.sources.line(e->loc.file, e->loc.line);
    if ((size_t)e->loc.endCol - 1 <= line.size())
      return line.substr(e->loc.col - 1, e->loc.endCol - e->loc.col);
  }
  return "...";
}

std::string IRBuilder::relayoutText(const ast::Expr *e, const TensorType &t) const {
  return "relayout(" + exprText(e) + ", " + layoutText(t) + ")";
}

void IRBuilder::reportTypeError(const TypeError &err, SrcLoc loc,
                                const std::vector<const ast::Expr *> &exprs,
                                const std::vector<TensorType> &types) {
  auto &d = diags().error(err.id, loc, err.args);
  // Name the operands by their source text where we have it.
  bool named = !exprs.empty() && exprs.size() == types.size();
  if (named) {
    for (size_t i = 0; i < types.size(); ++i)
      d.notes.push_back("`" + exprText(exprs[i]) + "` is `" + types[i].str() + "`");
    for (auto &n : err.notes)
      if (n.rfind("operand ", 0) != 0 && n.rfind("host operand ", 0) != 0 &&
          n.rfind("distributed operand ", 0) != 0)
        d.notes.push_back(n);
  } else {
    d.notes = err.notes;
  }
  if (err.operand >= 0 && err.suggest) {
    const ast::Expr *e = err.operand < (int)exprs.size() ? exprs[err.operand] : nullptr;
    std::string fn = err.id == DiagId::HostDistributedMix ? "distribute" : "relayout";
    d.hint = "write `" + fn + "(" + exprText(e) + ", " + layoutText(*err.suggest) + ")`";
  }
}

} // namespace dt
