// This file implements the helpers of Types.h: names, printing in the
// canonical placement notation, mesh coordinates and torch.chunk blocks.
#include "ir/Types.h"

#include "support/Checked.h"

#include <algorithm>
#include <climits>

#include <cassert>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <sstream>

namespace dt {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::Bool:
    return "bool";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &s) {
  if (s == "f32")
    return DType::F32;
  if (s == "f64")
    return DType::F64;
  if (s == "i32")
    return DType::I32;
  if (s == "i64")
    return DType::I64;
  if (s == "bool")
    return DType::Bool;
  if (s == "bf16")
    return DType::BF16;
  if (s == "f16")
    return DType::F16;
  return std::nullopt;
}

int64_t dtypeSize(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  case DType::BF16:
  case DType::F16:
    return 2;
  }
  return 0;
}

bool isFloat(DType t) { return t == DType::F32 || t == DType::F64 || isLowPrecision(t); }

bool isLowPrecision(DType t) { return t == DType::BF16 || t == DType::F16; }

std::string Dim::str() const { return isSym() ? sym : std::to_string(value); }

namespace {

/// Whether `t` is `( ... )` with the two parentheses matching each other.
bool wrapped(const std::string &t) {
  if (t.size() < 2 || t.front() != '(' || t.back() != ')')
    return false;
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    depth += t[i] == '(' ? 1 : t[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < t.size())
      return false;
  }
  return true;
}

/// The factors of a pure product (names, integers, `*`, parentheses), or
/// nullopt when the text has other arithmetic.
std::optional<std::vector<std::string>> productFactors(const std::string &t) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : t) {
    if (c == '(' || c == ')')
      continue;
    if (c == '*') {
      if (cur.empty())
        return std::nullopt;
      out.push_back(cur);
      cur.clear();
    } else if (std::isalnum((unsigned char)c) || c == '_') {
      cur += c;
    } else {
      return std::nullopt;
    }
  }
  if (cur.empty())
    return std::nullopt;
  out.push_back(cur);
  return out;
}

} // namespace

std::string canonicalSize(const std::string &text) {
  std::string t;
  for (char c : text)
    if (c != ' ' && c != '\t')
      t += c;
  while (wrapped(t))
    t = t.substr(1, t.size() - 2);
  auto factors = productFactors(t);
  if (!factors)
    return t;
  std::string out;
  for (auto &f : *factors)
    out += (out.empty() ? "" : "*") + f;
  return out;
}

bool Dim::sameProduct(const Dim &o) const {
  auto a = sizeProduct(*this), b = sizeProduct(o);
  return a && b && *a == *b;
}

std::optional<SizeProduct> sizeProduct(const Dim &d) {
  SizeProduct p;
  if (!d.isSym()) {
    if (d.value < 0)
      return std::nullopt;
    p.coef = d.value;
    return p;
  }
  std::string t = canonicalSize(d.sym);
  auto factors = productFactors(t);
  if (!factors) {
    p.names = {t};
    return p;
  }
  for (auto &f : *factors) {
    if (std::isdigit((unsigned char)f[0])) {
      errno = 0;
      long long v = std::strtoll(f.c_str(), nullptr, 10);
      auto c = errno || v <= 0 ? std::nullopt : checkedMul(p.coef, (int64_t)v);
      if (!c)
        return std::nullopt;
      p.coef = *c;
    } else {
      p.names.push_back(f);
    }
  }
  std::sort(p.names.begin(), p.names.end());
  return p;
}

bool divides(const SizeProduct &a, const SizeProduct &b) {
  return a.coef != 0 && b.coef % a.coef == 0 &&
         std::includes(b.names.begin(), b.names.end(), a.names.begin(), a.names.end());
}

std::optional<SizeProduct> times(const SizeProduct &a, const SizeProduct &b) {
  auto c = checkedMul(a.coef, b.coef);
  if (!c)
    return std::nullopt;
  SizeProduct p;
  p.coef = *c;
  std::merge(a.names.begin(), a.names.end(), b.names.begin(), b.names.end(),
             std::back_inserter(p.names));
  return p;
}

Dim sizeDim(const SizeProduct &p) {
  if (p.names.empty())
    return Dim::lit(p.coef);
  std::string t = p.coef != 1 ? std::to_string(p.coef) : "";
  for (auto &n : p.names)
    t += (t.empty() ? "" : "*") + (productFactors(n) ? n : "(" + n + ")");
  return Dim::symbol(canonicalSize(t));
}

std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

bool isConcrete(const Shape &s) {
  for (auto &d : s)
    if (d.isSym())
      return false;
  return true;
}

std::optional<int64_t> checkedNumElements(const Shape &s) {
  int64_t n = 1;
  for (auto &d : s) {
    if (d.isSym())
      continue;
    auto p = checkedMul(n, d.value);
    if (!p)
      return std::nullopt;
    n = *p;
  }
  return n;
}

int64_t numElements(const Shape &s) {
  assert(isConcrete(s));
  return checkedNumElements(s).value_or(INT64_MAX);
}

std::vector<int64_t> concreteDims(const Shape &s) {
  std::vector<int64_t> r;
  for (auto &d : s) {
    assert(!d.isSym());
    r.push_back(d.value);
  }
  return r;
}

int64_t Mesh::size() const {
  return checkedProduct(axes, [](const MeshAxis &a) { return a.size; }).value_or(INT64_MAX);
}

int Mesh::axisIndex(const std::string &axis) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == axis)
      return (int)i;
  return -1;
}

std::vector<int64_t> Mesh::coords(int64_t rank) const {
  std::vector<int64_t> c(axes.size());
  for (int i = (int)axes.size() - 1; i >= 0; --i) {
    c[i] = rank % axes[i].size;
    rank /= axes[i].size;
  }
  return c;
}

int64_t Mesh::rankOf(const std::vector<int64_t> &c) const {
  int64_t r = 0;
  for (size_t i = 0; i < axes.size(); ++i)
    r = r * axes[i].size + c[i];
  return r;
}

std::string Mesh::str() const {
  std::string r = name + " = [";
  for (size_t i = 0; i < axes.size(); ++i)
    r += (i ? ", " : "") + axes[i].name + " = " + std::to_string(axes[i].size);
  r += "]";
  bool identity = true;
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i] != (int64_t)i)
      identity = false;
  if (!identity) {
    r += " devices [";
    for (size_t i = 0; i < devices.size(); ++i)
      r += (i ? ", " : "") + std::to_string(devices[i]);
    r += "]";
  }
  return r;
}

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Avg:
    return "avg";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  }
  return "?";
}

std::optional<ReduceOp> parseReduceOp(const std::string &s) {
  if (s == "sum")
    return ReduceOp::Sum;
  if (s == "avg")
    return ReduceOp::Avg;
  if (s == "max")
    return ReduceOp::Max;
  if (s == "min")
    return ReduceOp::Min;
  return std::nullopt;
}

std::string Placement::str() const {
  switch (kind) {
  case Replicate:
    return "replicate";
  case Shard:
    return "shard(" + std::to_string(dim) + ")";
  case Partial:
    return std::string("partial(") + reduceOpName(op) + ")";
  }
  return "?";
}

bool TensorType::hasPartial() const {
  for (auto &p : placements)
    if (p.isPartial())
      return true;
  return false;
}

namespace {
std::vector<int> shardGroup(const std::vector<Placement> &ps, int d) {
  std::vector<int> r;
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].isShard() && ps[i].dim == d)
      r.push_back((int)i);
  std::stable_sort(r.begin(), r.end(), [&](int a, int b) { return ps[a].order < ps[b].order; });
  return r;
}
} // namespace

std::vector<int> TensorType::axesShardingDim(int d) const { return shardGroup(placements, d); }

bool TensorType::meshOrdered(int d) const {
  auto ax = axesShardingDim(d);
  return std::is_sorted(ax.begin(), ax.end());
}

void canonicalizeShardOrder(std::vector<Placement> &ps) {
  std::vector<Placement> out = ps;
  for (auto &p : out)
    p.order = 0;
  for (auto &p : ps)
    if (p.isShard()) {
      auto g = shardGroup(ps, p.dim);
      for (size_t i = 0; i < g.size(); ++i)
        out[g[i]].order = (int)i;
    }
  ps = std::move(out);
}

bool isCanonicalShardOrder(const std::vector<Placement> &ps) {
  auto c = ps;
  canonicalizeShardOrder(c);
  for (size_t i = 0; i < ps.size(); ++i)
    if (c[i].order != ps[i].order)
      return false;
  return true;
}

std::string TensorType::placementStr(size_t a) const {
  const Placement &p = placements[a];
  if (!p.isShard() || meshOrdered(p.dim))
    return p.str();
  auto ax = axesShardingDim(p.dim);
  int pos = (int)(std::find(ax.begin(), ax.end(), (int)a) - ax.begin());
  return "shard(" + std::to_string(p.dim) + ", order=" + std::to_string(pos) + ")";
}

std::string TensorType::layoutStr() const {
  if (!mesh)
    return "";
  std::string r = mesh->name + "{";
  for (size_t i = 0; i < placements.size(); ++i)
    r += (i ? ", " : "") + mesh->axes[i].name + ": " + placementStr(i);
  return r + "}";
}

std::string TensorType::dimsMappingStr() const {
  if (!mesh || hasPartial())
    return "";
  std::string r = mesh->name + "[";
  for (int d = 0; d < rank(); ++d) {
    auto ax = axesShardingDim(d);
    r += d ? ", " : "";
    if (ax.empty())
      r += "_";
    else if (ax.size() == 1)
      r += mesh->axes[ax[0]].name;
    else {
      r += "(";
      for (size_t i = 0; i < ax.size(); ++i)
        r += (i ? ", " : "") + mesh->axes[ax[i]].name;
      r += ")";
    }
  }
  return r + "]";
}

std::string TensorType::str() const {
  std::string r = std::string(dtypeName(dtype)) + shapeStr(shape);
  if (mesh)
    r += " @ " + layoutStr();
  return r;
}

bool TensorType::sameLayout(const TensorType &o) const {
  if ((mesh == nullptr) != (o.mesh == nullptr))
    return false;
  if (mesh && !(*mesh == *o.mesh))
    return false;
  if (placements == o.placements)
    return true;
  // the same groups in the same order, however they are numbered
  auto a = placements, b = o.placements;
  canonicalizeShardOrder(a);
  canonicalizeShardOrder(b);
  return a == b;
}

bool TensorType::operator==(const TensorType &o) const {
  return dtype == o.dtype && shape == o.shape && sameLayout(o);
}

TensorType replicatedType(DType dt, Shape shape, MeshRef mesh) {
  TensorType t;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.mesh = mesh;
  if (mesh)
    t.placements.assign(mesh->axes.size(), Placement::replicate());
  return t;
}

std::pair<int64_t, int64_t> chunkRange(int64_t n, int64_t k, int64_t i) {
  int64_t c = k > 0 ? (n + k - 1) / k : n;
  int64_t lo = std::min(n, i * c);
  int64_t hi = std::min(n, (i + 1) * c);
  return {lo, hi - lo};
}

LocalBlock localBlock(const TensorType &t, int64_t rank) {
  LocalBlock b;
  b.shape = concreteDims(t.shape);
  b.offset.assign(b.shape.size(), 0);
  if (!t.mesh)
    return b;
  auto c = t.mesh->coords(rank);
  for (int d = 0; d < t.rank(); ++d) {
    auto ax = t.axesShardingDim(d);
    if (ax.empty())
      continue;
    int64_t k = 1, idx = 0;
    for (int a : ax) {
      k *= t.mesh->axes[a].size;
      idx = idx * t.mesh->axes[a].size + c[a];
    }
    auto [off, len] = chunkRange(b.shape[d], k, idx);
    b.offset[d] = off;
    b.shape[d] = len;
  }
  return b;
}

} // namespace dt
