// This file implements the IR builder's handling of written types: tensor
// type specs, both layout notations (placement list and dims mapping) with
// their rules, and the rendering of type errors as diagnostics whose hint is
// the exact `relayout` to write.
#include "frontend/BuildIR.h"

#include "support/Checked.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace dt {

/// Edit distance with adjacent transpositions (optimal string alignment).
static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> closestName(const std::string &name,
                                       const std::vector<std::string> &candidates) {
  std::optional<std::string> best;
  size_t bestD = 0;
  for (auto &c : candidates) {
    if (c == name || c.empty())
      continue;
    size_t dist = editDistance(name, c);
    // A typo, not another name: at most a third of the letters differ, and
    // never every letter (`y` is not a misspelled `x`).
    size_t limit = std::max<size_t>(1, std::max(name.size(), c.size()) / 3);
    if (dist > limit || dist >= std::min(name.size(), c.size()) + (name.size() != c.size()))
      continue;
    if (!best || dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  return best;
}

static std::vector<std::string> axisNames(const Mesh &m) {
  std::vector<std::string> out;
  for (auto &a : m.axes)
    out.push_back(a.name);
  return out;
}

bool IRBuilder::didYouMean(Diagnostic &d, const std::string &wrong,
                           const std::vector<std::string> &candidates, SrcLoc span) {
  auto best = closestName(wrong, candidates);
  if (!best || !span.known() || span.endCol <= span.col)
    return false;
  std::string line = s_.sources.line(span.file, span.line);
  if ((size_t)span.endCol - 1 > line.size())
    return false;
  std::string text = line.substr(span.col - 1, span.endCol - span.col);
  // The first whole-word occurrence of `wrong` in the span is the one to replace.
  auto word = [](char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '.'; };
  for (size_t at = text.find(wrong); at != std::string::npos; at = text.find(wrong, at + 1)) {
    size_t end = at + wrong.size();
    if ((at > 0 && word(text[at - 1])) || (end < text.size() && word(text[end])))
      continue;
    SrcLoc range = span;
    range.col = span.col + (int)at;
    range.endCol = range.col + (int)wrong.size();
    d.hint = "did you mean `" + *best + "`?";
    d.fixes = {FixIt{range, *best}};
    return true;
  }
  return false;
}

std::optional<int64_t> IRBuilder::constNamed(const std::string &name) {
  if (signatureConsts_) {
    auto it = signatureConsts_->find(name);
    if (it != signatureConsts_->end() && it->second.kind == Binding::Const)
      return it->second.constant;
    return std::nullopt;
  }
  Binding *b = lookup(name);
  if (b && b->kind == Binding::Const)
    return b->constant;
  return std::nullopt;
}

namespace {
/// Evaluates the compact size text the parser builds (`2*B+1`, `(H/4)`):
/// integers, names, `+ - * /` and parentheses. `name` gives a name's value
/// or nullopt when it is symbolic; errors go to `why`.
struct SizeEval {
  explicit SizeEval(const std::string &text) : s(text) {}
  const std::string &s;
  size_t at = 0;
  std::function<std::optional<int64_t>(const std::string &)> name;
  bool symbolic = false;
  std::string why;

  std::optional<int64_t> fail(std::string w) {
    if (why.empty())
      why = std::move(w);
    return std::nullopt;
  }
  std::optional<int64_t> atom() {
    if (at < s.size() && s[at] == '(') {
      ++at;
      auto v = sum();
      ++at; // `)`: the parser checked the text
      return v;
    }
    size_t b = at;
    while (at < s.size() && (std::isalnum((unsigned char)s[at]) || s[at] == '_'))
      ++at;
    std::string tok = s.substr(b, at - b);
    if (std::isdigit((unsigned char)tok[0])) {
      errno = 0;
      long long v = std::strtoll(tok.c_str(), nullptr, 10);
      if (errno)
        return fail("does not fit in 64 bits");
      return (int64_t)v;
    }
    auto v = name(tok);
    if (!v)
      symbolic = true;
    return v ? v : std::optional<int64_t>(1);
  }
  std::optional<int64_t> product() {
    auto v = atom();
    while (v && at < s.size() && (s[at] == '*' || s[at] == '/')) {
      char op = s[at++];
      auto r = atom();
      if (!r)
        return r;
      if (op == '*') {
        v = checkedMul(*v, *r);
        if (!v)
          return fail("overflows 64 bits");
      } else if (!symbolic) {
        if (*r == 0)
          return fail("divides by zero");
        if (*v % *r != 0)
          return fail("is not a whole number: " + std::to_string(*v) + " / " + std::to_string(*r) +
                      " leaves a remainder");
        v = *v / *r;
      }
    }
    return v;
  }
  std::optional<int64_t> sum() {
    auto v = product();
    while (v && at < s.size() && (s[at] == '+' || s[at] == '-')) {
      char op = s[at++];
      auto r = product();
      if (!r)
        return r;
      v = op == '+' ? checkedAdd(*v, *r) : checkedAdd(*v, -*r);
      if (!v)
        return fail("overflows 64 bits");
    }
    return v;
  }
};
} // namespace

std::optional<Dim> IRBuilder::sizeOf(const std::string &text,
                                     const std::map<std::string, Dim> *symbols, SrcLoc loc) {
  const std::map<std::string, Dim> *bound = symbols ? symbols : symbols_;
  bool generic = symbols_ || symbols;
  std::string unknown;
  SizeEval ev(text);
  ev.name = [&](const std::string &n) -> std::optional<int64_t> {
    if (bound)
      if (auto it = bound->find(n); it != bound->end())
        return it->second.isSym() ? std::nullopt : std::optional<int64_t>(it->second.value);
    if (auto c = constNamed(n))
      return c;
    // inside a generic function an unbound symbol stays symbolic
    if (!generic && unknown.empty())
      unknown = n;
    return std::nullopt;
  };
  auto v = ev.sum();
  if (!unknown.empty()) {
    auto &d = diags().error(DiagId::UnknownName, loc, {unknown});
    if (!declaredBelow(d, unknown) && !didYouMean(d, unknown, namesInScope(), loc))
      d.hint = "a size is an integer, a `let` constant (`let " + unknown +
               " = 4`) or, in a function signature, a size symbol";
    return std::nullopt;
  }
  if (!ev.why.empty()) {
    diags().error(DiagId::BadSize, loc, {text, ev.why});
    return std::nullopt;
  }
  if (ev.symbolic) {
    // A single name keeps its symbol (bound to a symbolic size: that one).
    if (bound)
      if (auto it = bound->find(text); it != bound->end())
        return it->second;
    // Arithmetic: each name replaced by what it is bound to (another
    // function's symbol, a number), in canonical form, so `N * M` here and
    // `(M*N)` there are one size.
    std::string subst;
    for (size_t i = 0; i < text.size();) {
      if (!std::isalpha((unsigned char)text[i]) && text[i] != '_') {
        subst += text[i++];
        continue;
      }
      size_t b = i;
      while (i < text.size() && (std::isalnum((unsigned char)text[i]) || text[i] == '_'))
        ++i;
      std::string n = text.substr(b, i - b);
      const Dim *d = nullptr;
      if (bound)
        if (auto it = bound->find(n); it != bound->end())
          d = &it->second;
      if (d)
        subst += d->isSym() ? "(" + d->sym + ")" : std::to_string(d->value);
      else if (auto c = constNamed(n))
        subst += std::to_string(*c);
      else
        subst += n;
    }
    return Dim::symbol(canonicalSize(subst));
  }
  if (*v < 0) {
    diags().error(DiagId::BadSize, loc, {text, "is negative (" + std::to_string(*v) + ")"});
    return std::nullopt;
  }
  return Dim::lit(*v);
}

std::optional<TensorType> IRBuilder::resolveType(const ast::TypeSpec &spec,
                                                 const std::map<std::string, Dim> *symbols) {
  auto dt = dtypeNamed(spec.dtype);
  if (!dt) {
    auto &d = diags().error(DiagId::UnknownDType, spec.loc, {spec.dtype});
    if (!didYouMean(d, spec.dtype, {"f32", "f64", "i32", "i64", "bool"}, spec.loc))
      d.hint = "element types are `f32`, `f64`, `bf16`, `f16`, `i32`, `i64` and `bool`";
    return std::nullopt;
  }
  Shape shape;
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    SrcLoc l = i < spec.dimLocs.size() ? spec.dimLocs[i] : spec.loc;
    if (spec.dims[i] == "...") {
      if (!batch_) {
        diags().error(DiagId::EllipsisHere, l, {}).hint =
            "write the dims out, or make this a parameter of a function with `@ *` layouts: "
            "`fn f(x: f32[..., D] @ *)`";
        return std::nullopt;
      }
      shape.insert(shape.end(), batch_->begin(), batch_->end());
      continue;
    }
    auto d = sizeOf(spec.dims[i], symbols, l);
    if (!d)
      return std::nullopt;
    shape.push_back(*d);
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
  if ((int64_t)shape.size() > s_.options.maxTensorRank) {
    diags()
        .error(DiagId::TensorTooManyDims, loc,
               {std::to_string(shape.size()), std::to_string(s_.options.maxTensorRank)})
        .hint = "merge dims with `reshape`: the elements keep their order";
    return false;
  }
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
  if (it == st_.meshes.end() && badMeshes_.count(spec.mesh))
    return std::nullopt; // its declaration's error is reported
  if (it == st_.meshes.end()) {
    auto &d = diags().error(DiagId::UnknownMesh, spec.loc, {spec.mesh});
    std::vector<std::string> names;
    for (auto &[n, m] : st_.meshes)
      names.push_back(n);
    if (didYouMean(d, spec.mesh, names, spec.loc))
      return std::nullopt;
    if (!st_.meshes.empty())
      d.hint = "declared meshes: `" + st_.meshes.begin()->first + "`";
    else
      d.hint = "declare the mesh above its first use: `mesh " + spec.mesh + " = [x = 2]`";
    return std::nullopt;
  }
  MeshRef mesh = it->second;
  TensorType t = replicatedType(dt, shape, mesh);
  int rank = (int)shape.size();
  if (spec.placementForm) {
    std::vector<bool> seen(mesh->axes.size(), false);
    std::vector<int64_t> orderOf(mesh->axes.size(), -1);
    std::vector<const ast::LayoutEntry *> entryOf(mesh->axes.size(), nullptr);
    for (auto &e : spec.entries) {
      int a = mesh->axisIndex(e.axis);
      if (a < 0) {
        auto &d = diags().error(DiagId::UnknownMeshAxis, e.loc, {mesh->name, e.axis});
        if (!didYouMean(d, e.axis, axisNames(*mesh), e.loc))
          d.hint = "mesh `" + mesh->str() + "`";
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
        int64_t d = e.dim < 0 ? e.dim + rank : e.dim; // `shard(-1)`: the last dim
        if (d < 0 || d >= rank) {
          diags().error(DiagId::ShardDimOutOfRange, e.loc,
                        {std::to_string(e.dim), std::to_string(rank)});
          return std::nullopt;
        }
        t.placements[a] = Placement::shard((int)d);
        orderOf[a] = e.order;
        entryOf[a] = &e;
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
    // The axes sharding one dim split it in mesh order unless every one of
    // them says `order=k` (0 = major), numbering them 0..k-1.
    for (int d = 0; d < rank; ++d) {
      auto group = t.axesShardingDim(d);
      size_t given = 0;
      std::vector<bool> used(group.size(), false);
      bool ok = true;
      for (int a : group)
        if (orderOf[a] >= 0) {
          ++given;
          if (orderOf[a] >= (int64_t)group.size() || used[orderOf[a]])
            ok = false;
          else
            used[orderOf[a]] = true;
        }
      if (given == 0)
        continue;
      if (!ok || given != group.size()) {
        const ast::LayoutEntry *at = entryOf[group[0]];
        for (int a : group)
          if (orderOf[a] >= 0)
            at = entryOf[a];
        std::string names;
        for (size_t k = 0; k < group.size(); ++k)
          names += (k ? ", " : "") + mesh->axes[group[k]].name;
        auto &dg = diags().error(DiagId::MultiAxisOrder, at->loc,
                                 {std::to_string(d), names, std::to_string(group.size() - 1)});
        dg.hint = "write `order=k` on every axis sharding the dim, 0 for the major one, or "
                  "none of them for mesh order";
        return std::nullopt;
      }
      for (int a : group)
        t.placements[a].order = (int)orderOf[a];
    }
    canonicalizeShardOrder(t.placements);
    return t;
  }
  // dims-mapping form: one entry per tensor dim
  if (std::any_of(spec.entries.begin(), spec.entries.end(), [](auto &e) { return e.torch; }))
    return torchLayout(spec, mesh, rank);
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
    int pos = 0; // the axes of a group are listed major first: `(y, x)` is y-major
    auto isIndex = [](const std::string &axis) {
      return !axis.empty() && (axis[0] == '-' || std::isdigit((unsigned char)axis[0]));
    };
    if (std::any_of(e.axes.begin(), e.axes.end(), isIndex) &&
        !std::all_of(e.axes.begin(), e.axes.end(), isIndex)) {
      std::string group;
      for (auto &axis : e.axes)
        group += (group.empty() ? "" : ", ") + axis;
      diags().error(DiagId::LayoutGroupMixed, e.loc, {"(" + group + ")"}).hint =
          "name every axis of a group, `(x, y)`, or give every index, `(0, 1)`";
      return std::nullopt;
    }
    for (auto &axis : e.axes) {
      int a = mesh->axisIndex(axis);
      if (isIndex(axis)) {
        // seed 003's integer dims mapping: the mesh axis index, -1 unsharded
        int64_t idx = std::strtoll(axis.c_str(), nullptr, 10);
        if (idx == -1 && e.axes.size() == 1)
          break;
        if (idx < 0 || idx >= (int64_t)mesh->axes.size()) {
          auto &d = diags().error(DiagId::MeshAxisIndex, e.loc,
                                  {axis, mesh->name, std::to_string(mesh->axes.size() - 1)});
          d.hint = "mesh `" + mesh->str() + "`";
          return std::nullopt;
        }
        a = (int)idx;
      }
      if (a < 0) {
        auto &d = diags().error(DiagId::UnknownMeshAxis, e.loc, {mesh->name, axis});
        if (!didYouMean(d, axis, axisNames(*mesh), e.loc))
          d.hint = "mesh `" + mesh->str() + "`";
        return std::nullopt;
      }
      if (usedBy[a] >= 0) {
        auto &d = diags().error(DiagId::AxisShardsTwoDims, e.loc,
                                {axis, std::to_string(usedBy[a]), std::to_string(dim)});
        d.hint = "shard one of the dims on another axis, or replicate it with `_`";
        return std::nullopt;
      }
      usedBy[a] = dim;
      t.placements[a] = Placement::shard(dim, pos++);
    }
  }
  canonicalizeShardOrder(t.placements);
  return t;
}

std::nullopt_t IRBuilder::torchLayout(const ast::LayoutSpec &spec, const MeshRef &mesh, int rank) {
  // PyTorch lists one placement per MESH axis, in mesh order; dtensor's
  // placement form names the axes. Spell the same layout both ways.
  auto &d = diags().error(DiagId::TorchPlacements, spec.loc, {spec.mesh});
  if (spec.entries.size() != mesh->axes.size()) {
    d.hint = "write one `axis: placement` per mesh axis: `" + spec.mesh + "{" + mesh->axes[0].name +
             ": shard(0)}`";
    return std::nullopt;
  }
  std::string written;
  TensorType t = replicatedType(DType::F32, Shape(rank, Dim::lit(1)), mesh);
  for (size_t a = 0; a < spec.entries.size(); ++a) {
    const auto &e = spec.entries[a];
    std::string kind = e.torch ? e.kind : (e.axes.empty() ? "_" : e.axes[0]);
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    std::string p;
    if (kind == "replicate") {
      p = "replicate";
    } else if (kind == "shard" && e.dim >= 0 && e.dim < rank) {
      p = "shard(" + std::to_string(e.dim) + ")";
      t.placements[a] = Placement::shard((int)e.dim);
    } else if (kind == "partial" && parseReduceOp(e.reduce)) {
      p = "partial(" + e.reduce + ")";
      t.placements[a] = Placement::partial(*parseReduceOp(e.reduce));
    } else {
      d.hint = "placements are `replicate`, `shard(d)` with d < " + std::to_string(rank) +
               " and `partial(op)`, written `" + spec.mesh + "{axis: shard(0)}`";
      return std::nullopt;
    }
    written += (a ? ", " : "") + mesh->axes[a].name + ": " + p;
  }
  std::string placementForm = spec.mesh + "{" + written + "}";
  std::string dm = t.dimsMappingStr();
  d.notes.push_back("dtensor names the mesh axis of each placement, `" + placementForm +
                    "`, or the axis of each tensor dim" +
                    (dm.empty() ? std::string(" (no partial)") : ", `" + dm + "`"));
  d.hint = "write `" + placementForm + "`";
  if (spec.loc.known() && spec.loc.endCol > spec.loc.col)
    d.fixes = {FixIt{spec.loc, placementForm}};
  return std::nullopt;
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
  // The source text when the whole expression is on one line.
  if (e->full.known() && e->full.endCol > e->full.col) {
    std::string line = s_.sources.line(e->full.file, e->full.line);
    if ((size_t)e->full.endCol - 1 <= line.size())
      return line.substr(e->full.col - 1, e->full.endCol - e->full.col);
  }
  if (e->kind == ast::Expr::Call || e->kind == ast::Expr::CallExpr)
    return ast::printExpr(*e);
  return "...";
}

std::string IRBuilder::moveText(const std::string &fn, const ast::Expr *e,
                                const TensorType &t) const {
  // `relayout(relayout(x, A), B)` is `relayout(x, B)`: re-target the call the
  // user wrote instead of wrapping it in a second one.
  if (e && e->kind == ast::Expr::Call && e->args.size() == 2 && e->kwargs.empty() &&
      (e->callee == "relayout" || e->callee == "distribute"))
    return e->callee + "(" + exprText(e->args[0].get()) + ", " + layoutText(t) + ")";
  return fn + "(" + exprText(e) + ", " + layoutText(t) + ")";
}

std::string IRBuilder::relayoutText(const ast::Expr *e, const TensorType &t) const {
  return moveText("relayout", e, t);
}

void IRBuilder::fixHint(Diagnostic &d, const ast::Expr *e, const std::string &replacement,
                        const std::string &shown) const {
  d.hint = "write `" + (shown.empty() ? replacement : shown) + "`";
  d.fixes.clear();
  if (e && e->full.known() && e->full.endCol > e->full.col)
    d.fixes.push_back(FixIt{e->full, replacement});
}

std::string IRBuilder::conversionText(const ast::Expr *e, const TensorType &from,
                                      const TensorType &to) const {
  if (from.isHost())
    return moveText("distribute", e, to);
  if (!to.isHost() && from.mesh && to.mesh && *from.mesh == *to.mesh)
    return relayoutText(e, to);
  // Leaving the mesh goes through the host, which cannot read a partial value:
  // reduce it on its own mesh first.
  std::string x = exprText(e);
  TensorType reduced = from;
  bool partial = false;
  for (auto &p : reduced.placements)
    if (p.isPartial()) {
      p = Placement::replicate();
      partial = true;
    }
  if (partial)
    x = relayoutText(e, reduced);
  if (to.isHost())
    return "to_host(" + x + ")";
  return "distribute(to_host(" + x + "), " + layoutText(to) + ")";
}

bool IRBuilder::conversionHint(Diagnostic &d, const ast::Expr *e, const TensorType &from,
                               const TensorType &to) const {
  if (from.dtype != to.dtype) {
    // Only the element type differs (`where(c, 1.0, 0.0)` is f32): a cast.
    TensorType same = from;
    same.dtype = to.dtype;
    if (same != to || !e)
      return false;
    fixHint(d, e, "cast(" + exprText(e) + ", " + dtypeName(to.dtype) + ")");
    return true;
  }
  if (from.shape != to.shape || (from.isHost() && to.isHost()))
    return false;
  fixHint(d, e, conversionText(e, from, to));
  return true;
}

void IRBuilder::reportTypeError(
    const TypeError &err, SrcLoc loc, const std::vector<const ast::Expr *> &exprs,
    const std::vector<TensorType> &types,
    const std::function<Inferred(const std::vector<TensorType> &)> &typeChecks, bool atOperand) {
  // Name the operands by their source text where we have it.
  bool named = !exprs.empty() && exprs.size() == types.size();
  // `atOperand` (the items of `print` and `save`): point at the operand the
  // error is about and name only it.
  const bool oneItem = atOperand && named && err.operand >= 0 && err.operand < (int)exprs.size() &&
                       exprs[err.operand];
  SrcLoc at = loc;
  if (oneItem)
    at = exprs[err.operand]->full.known() ? exprs[err.operand]->full : exprs[err.operand]->loc;
  auto &d = diags().error(err.id, at, err.args);
  if (named) {
    for (size_t i = 0; i < types.size(); ++i)
      if (!oneItem || (int)i == err.operand)
        d.notes.push_back("`" + exprText(exprs[i]) + "` is `" + types[i].str() + "`");
    for (auto &n : err.notes)
      if (n.rfind("operand ", 0) != 0 && n.rfind("host operand ", 0) != 0 &&
          n.rfind("distributed operand ", 0) != 0)
        d.notes.push_back(n);
  } else {
    d.notes = err.notes;
  }
  if (err.operand >= 0 && err.suggest) {
    // The checker names one operand to move. When moving it is not enough
    // (`maximum(p, p)`: both are partial), keep applying the checker's next
    // suggestion, so the hint is the whole fix rather than its first step.
    std::vector<TensorType> ts = types;
    std::vector<int> moved;
    TypeError cur = err;
    bool passes = false;
    for (size_t step = 0; step < types.size() && cur.operand >= 0 && cur.suggest; ++step) {
      if (std::find(moved.begin(), moved.end(), cur.operand) != moved.end())
        break;
      ts[cur.operand] = *cur.suggest;
      moved.push_back(cur.operand);
      Inferred inf = typeChecks(ts);
      if (inf.ok()) {
        passes = true;
        break;
      }
      cur = *inf.error;
    }
    if (!passes || moved.size() == 1 || moved.size() > exprs.size()) {
      const ast::Expr *e = err.operand < (int)exprs.size() ? exprs[err.operand] : nullptr;
      std::string fn = err.id == DiagId::HostDistributedMix ? "distribute" : "relayout";
      fixHint(d, e, moveText(fn, e, *err.suggest));
    } else {
      std::vector<FixIt> fixes;
      std::string shown;
      bool complete = true;
      for (size_t k = 0; k < moved.size(); ++k) {
        const ast::Expr *e = exprs[moved[k]];
        std::string fn = types[moved[k]].isHost() ? "distribute" : "relayout";
        std::string text = moveText(fn, e, ts[moved[k]]);
        shown += std::string(k ? (k + 1 == moved.size() ? " and " : ", ") : "") + "`" + text + "`";
        if (e && e->full.known() && e->full.endCol > e->full.col)
          fixes.push_back(FixIt{e->full, text});
        else
          complete = false;
      }
      d.hint = "write " + shown;
      if (complete)
        d.fixes = fixes;
    }
  }
  if (!named)
    return;
  if (err.id == DiagId::MeshMismatch)
    meshMismatchHint(d, exprs, types, typeChecks);
  else if (err.id == DiagId::DTypeMismatch && d.hint.empty())
    dtypeMismatchHint(d, exprs, types);
  else if (err.id == DiagId::ShapeMismatch && !err.args.empty() && err.args[0] == "matmul")
    matmulShapeHint(d, exprs, types, typeChecks);
  else if (err.id == DiagId::BadReshape && err.args.size() == 4 && d.hint.empty() &&
           err.args[1].find_first_not_of("0123456789") == std::string::npos)
    d.hint = "a reshape keeps the number of elements: give a shape of " + err.args[1] +
             " elements (`[" + err.args[1] + "]` flattens it)";
}

void IRBuilder::dtypeMismatchHint(Diagnostic &d, const std::vector<const ast::Expr *> &exprs,
                                  const std::vector<TensorType> &types) {
  // A host scalar (`let eps = 1e-6` is a host f32[]) with a distributed
  // tensor of another float type: convert the scalar, not the model's tensor,
  // and distribute it (a host value does not mix with a distributed one).
  for (size_t h = 0; h < types.size(); ++h) {
    if (!types[h].isHost() || types[h].rank() != 0 || !isFloat(types[h].dtype) || !exprs[h])
      continue;
    for (size_t t = 0; t < types.size(); ++t)
      if (!types[t].isHost() && isFloat(types[t].dtype) && types[t].dtype != types[h].dtype) {
        fixHint(d, exprs[h],
                "distribute(cast(" + exprText(exprs[h]) + ", " + dtypeName(types[t].dtype) + "), " +
                    types[t].mesh->name + "[])");
        return;
      }
  }
  // No implicit conversion between float types (bf16 + f32 would hide where
  // precision is lost): cast the first operand of another float dtype to the
  // first float operand's.
  int first = -1;
  for (size_t i = 0; i < types.size(); ++i) {
    if (!isFloat(types[i].dtype))
      continue;
    if (first < 0) {
      first = (int)i;
    } else if (types[i].dtype != types[first].dtype) {
      fixHint(d, exprs[i],
              "cast(" + exprText(exprs[i]) + ", " + dtypeName(types[first].dtype) + ")");
      return;
    }
  }
}

void IRBuilder::meshMismatchHint(
    Diagnostic &d, const std::vector<const ast::Expr *> &exprs,
    const std::vector<TensorType> &types,
    const std::function<Inferred(const std::vector<TensorType> &)> &typeChecks) {
  // Move the first operand on another mesh to the mesh of the first
  // distributed operand. `relayout` cannot cross meshes; the host can.
  int first = -1, other = -1;
  for (size_t i = 0; i < types.size() && other < 0; ++i) {
    if (types[i].isHost())
      continue;
    if (first < 0)
      first = (int)i;
    else if (!(*types[i].mesh == *types[first].mesh))
      other = (int)i;
  }
  if (first < 0 || other < 0)
    return;
  const TensorType &from = types[other];
  MeshRef mesh = types[first].mesh;
  // Candidates: the same placements on the new mesh (when its axes carry the
  // same names), the first operand's placements (same rank), replicated.
  std::vector<TensorType> cands;
  TensorType rep = replicatedType(from.dtype, from.shape, mesh);
  if (from.mesh->axes.size() == mesh->axes.size()) {
    TensorType t = rep;
    bool same = true;
    for (size_t a = 0; a < mesh->axes.size(); ++a) {
      same &= from.mesh->axes[a].name == mesh->axes[a].name;
      if (!from.placements[a].isPartial())
        t.placements[a] = from.placements[a];
    }
    if (same)
      cands.push_back(t);
  }
  if (types[first].rank() == from.rank()) {
    TensorType t = rep;
    t.placements = types[first].placements;
    cands.push_back(t);
  }
  cands.push_back(rep);
  for (auto &c : cands) {
    std::vector<TensorType> ts = types;
    ts[other] = c;
    if (!typeChecks(ts).ok())
      continue;
    fixHint(d, exprs[other], conversionText(exprs[other], from, c));
    d.notes.push_back("`relayout` cannot move a value between meshes; `to_host` and "
                      "`distribute` can, through the host");
    return;
  }
}

void IRBuilder::matmulShapeHint(
    Diagnostic &d, const std::vector<const ast::Expr *> &exprs,
    const std::vector<TensorType> &types,
    const std::function<Inferred(const std::vector<TensorType> &)> &typeChecks) {
  if (types.size() != 2)
    return;
  const TensorType &a = types[0], &b = types[1];
  if (a.rank() >= 1 && b.rank() >= 2)
    d.notes.push_back("`a @ b` needs the last dim of `a` (" + a.shape.back().str() +
                      ") to equal the second-to-last dim of `b` (" + b.shape[b.rank() - 2].str() +
                      ")");
  // Transposing one 2-D operand is the usual fix; offer it when it type-checks.
  for (int i : {1, 0}) {
    if (types[i].rank() != 2)
      continue;
    TensorType t = types[i];
    std::swap(t.shape[0], t.shape[1]);
    for (auto &p : t.placements)
      if (p.isShard())
        p.dim = 1 - p.dim;
    std::vector<TensorType> ts = types;
    ts[i] = t;
    if (!typeChecks(ts).ok())
      continue;
    fixHint(d, exprs[i], "transpose(" + exprText(exprs[i]) + ")");
    return;
  }
}

} // namespace dt
