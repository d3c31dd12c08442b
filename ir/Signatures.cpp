// This file implements index signatures for every op that has one: the
// factor naming of operand and result dims, with the shape checks that
// building it implies (broadcast compatibility, contraction sizes, einsum
// letters, reshape element counts).
#include "ir/Signatures.h"

#include <algorithm>
#include <map>

namespace dt {

int IndexSignature::dimOf(int i, int f) const {
  for (size_t d = 0; d < operands[i].size(); ++d)
    if (operands[i][d] == f)
      return (int)d;
  return -1;
}

int IndexSignature::resultDimOf(int f) const {
  for (size_t d = 0; d < result.size(); ++d)
    if (result[d] == f)
      return (int)d;
  return -1;
}

static bool isOne(const Dim &d) { return !d.isSym() && d.value == 1; }

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    const Dim *da = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Dim *db = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!da)
      r[i] = *db;
    else if (!db)
      r[i] = *da;
    else if (*da == *db)
      r[i] = *da;
    else if (isOne(*da))
      r[i] = *db;
    else if (isOne(*db))
      r[i] = *da;
    else
      return std::nullopt;
  }
  return r;
}

EinsumLetters splitEinsum(const std::string &spec) {
  std::string s;
  for (char c : spec)
    if (c != ' ')
      s += c;
  EinsumLetters e;
  size_t arrow = s.find("->");
  e.inputs.emplace_back();
  for (char c : s.substr(0, arrow)) {
    if (c == ',')
      e.inputs.emplace_back();
    else
      e.inputs.back() += c;
  }
  e.explicitOutput = arrow != std::string::npos;
  if (e.explicitOutput) {
    e.output = s.substr(arrow + 2);
  } else {
    std::map<char, int> count;
    for (auto &in : e.inputs)
      for (char c : in)
        ++count[c];
    for (auto &[c, n] : count)
      if (n == 1)
        e.output += c;
  }
  return e;
}

bool parseEinsum(const std::string &spec, std::vector<std::string> &inputs, std::string &output,
                 std::string &error) {
  EinsumLetters e = splitEinsum(spec);
  inputs = e.inputs;
  output = e.output;
  if (!e.explicitOutput) {
    inputs.clear();
    output.clear();
    error = "missing `->`";
    return false;
  }
  auto valid = [&](const std::string &t) {
    for (char c : t)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        return false;
    return true;
  };
  for (auto &in : inputs)
    if (!valid(in)) {
      error = "operands must be spelled with letters";
      return false;
    }
  if (!valid(output)) {
    error = "the result must be spelled with letters";
    return false;
  }
  for (size_t i = 0; i < output.size(); ++i) {
    if (output.find(output[i], i + 1) != std::string::npos) {
      error = std::string("result letter `") + output[i] + "` repeats";
      return false;
    }
    bool found = false;
    for (auto &in : inputs)
      found |= in.find(output[i]) != std::string::npos;
    if (!found) {
      error = std::string("result letter `") + output[i] + "` is in no operand";
      return false;
    }
  }
  for (auto &in : inputs)
    for (size_t i = 0; i < in.size(); ++i)
      if (in.find(in[i], i + 1) != std::string::npos) {
        error = std::string("letter `") + in[i] + "` repeats within one operand";
        return false;
      }
  return true;
}

namespace {

/// Elementwise with numpy broadcasting over any number of operands.
std::optional<IndexSignature> elementwise(Op op, const std::vector<Shape> &shapes,
                                          ShapeError &err) {
  Shape out = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) {
    auto b = broadcastShapes(out, shapes[i]);
    if (!b) {
      err = {DiagId::ShapeMismatch, {opDisplayName(op), shapeStr(out), shapeStr(shapes[i])}};
      return std::nullopt;
    }
    out = *b;
  }
  IndexSignature s;
  for (auto &d : out)
    s.result.push_back(s.addFactor(d, FactorRole::Kept));
  for (auto &sh : shapes) {
    std::vector<int> f(sh.size(), -1);
    size_t off = out.size() - sh.size();
    for (size_t d = 0; d < sh.size(); ++d)
      f[d] = (isOne(sh[d]) && !isOne(out[off + d])) ? -1 : s.result[off + d];
    s.operands.push_back(f);
  }
  s.resultShape = out;
  return s;
}

std::optional<IndexSignature> reduce(Op op, const Shape &in, const Attrs &attrs, ShapeError &err) {
  IndexSignature s;
  FactorRole role = op == Op::ReduceSum   ? FactorRole::Summed
                    : op == Op::ReduceMax ? FactorRole::MaxReduced
                                          : FactorRole::MinReduced;
  std::vector<int> f;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = std::find(attrs.ints.begin(), attrs.ints.end(), (int64_t)d) != attrs.ints.end();
    int id = s.addFactor(in[d], reduced ? role : FactorRole::Kept);
    f.push_back(id);
    if (!reduced) {
      s.result.push_back(id);
      s.resultShape.push_back(in[d]);
    }
  }
  for (auto d : attrs.ints)
    if (d < 0 || d >= (int64_t)in.size()) {
      err = {DiagId::BadDim, {std::to_string(d), std::to_string(in.size())}};
      return std::nullopt;
    }
  s.operands.push_back(f);
  return s;
}

std::optional<IndexSignature> einsumSig(const std::vector<std::string> &ins, const std::string &out,
                                        const std::vector<Shape> &shapes, const char *spec,
                                        ShapeError &err) {
  if (ins.size() != shapes.size()) {
    err = {DiagId::BadEinsum,
           {spec, "spec names " + std::to_string(ins.size()) + " operands but the call has " +
                      std::to_string(shapes.size())}};
    return std::nullopt;
  }
  IndexSignature s;
  std::map<char, int> letter;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].size() != shapes[i].size()) {
      err = {DiagId::BadEinsum,
             {spec, "operand " + std::to_string(i) + " has " + std::to_string(shapes[i].size()) +
                        " dims but `" + ins[i] + "` names " + std::to_string(ins[i].size())}};
      return std::nullopt;
    }
    std::vector<int> f;
    for (size_t d = 0; d < ins[i].size(); ++d) {
      char c = ins[i][d];
      auto it = letter.find(c);
      if (it == letter.end()) {
        bool kept = out.find(c) != std::string::npos;
        int id = s.addFactor(shapes[i][d], kept ? FactorRole::Kept : FactorRole::Summed);
        letter[c] = id;
        f.push_back(id);
      } else {
        if (s.sizes[it->second] != shapes[i][d]) {
          err = {DiagId::ShapeMismatch,
                 {"einsum", std::string("`") + c + "` = " + s.sizes[it->second].str(),
                  std::string("`") + c + "` = " + shapes[i][d].str()}};
          return std::nullopt;
        }
        f.push_back(it->second);
      }
    }
    s.operands.push_back(f);
  }
  for (char c : out) {
    s.result.push_back(letter[c]);
    s.resultShape.push_back(s.sizes[letter[c]]);
  }
  return s;
}

std::optional<IndexSignature> matmul(const std::vector<Shape> &shapes, const Attrs &attrs,
                                     ShapeError &err) {
  // Transpose flags (passes/FoldTranspose.h): index the operand as its
  // last-two-dims transpose, then map the factors back to its own dims.
  bool flag[2] = {matmulTransposed(attrs, 0) && shapes[0].size() >= 2,
                  matmulTransposed(attrs, 1) && shapes[1].size() >= 2};
  if (flag[0] || flag[1]) {
    std::vector<Shape> swapped = shapes;
    for (int i = 0; i < 2; ++i)
      if (flag[i])
        std::swap(swapped[i][swapped[i].size() - 2], swapped[i].back());
    auto s = matmul(swapped, Attrs{}, err);
    if (s)
      for (int i = 0; i < 2; ++i)
        if (flag[i])
          std::swap(s->operands[i][s->operands[i].size() - 2], s->operands[i].back());
    return s;
  }
  const Shape &a = shapes[0], &b = shapes[1];
  if (a.empty() || b.empty()) {
    err = {DiagId::RankMismatch, {"matmul", "at least 1 dim", "0"}};
    return std::nullopt;
  }
  // Promote 1-D operands like numpy, then build a batched einsum signature.
  Shape a2 = a, b2 = b;
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a2.insert(a2.begin(), Dim::lit(1));
  if (bVec)
    b2.push_back(Dim::lit(1));
  if (a2.back() != b2[b2.size() - 2]) {
    err = {DiagId::ShapeMismatch, {"matmul", shapeStr(a), shapeStr(b)}};
    return std::nullopt;
  }
  Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  auto batch = broadcastShapes(ba, bb);
  if (!batch) {
    err = {DiagId::ShapeMismatch, {"matmul", shapeStr(a), shapeStr(b)}};
    return std::nullopt;
  }
  IndexSignature s;
  std::vector<int> bf;
  for (auto &d : *batch)
    bf.push_back(s.addFactor(d, FactorRole::Kept));
  int m = s.addFactor(a2[a2.size() - 2], FactorRole::Kept);
  int k = s.addFactor(a2.back(), FactorRole::Summed);
  int n = s.addFactor(b2.back(), FactorRole::Kept);
  auto batchFactors = [&](const Shape &sh) {
    std::vector<int> f;
    size_t off = batch->size() - sh.size();
    for (size_t d = 0; d < sh.size(); ++d)
      f.push_back(isOne(sh[d]) && !isOne((*batch)[off + d]) ? -1 : bf[off + d]);
    return f;
  };
  auto fa = batchFactors(ba), fb = batchFactors(bb);
  if (!aVec)
    fa.push_back(m);
  fa.push_back(k);
  fb.push_back(k);
  if (!bVec)
    fb.push_back(n);
  s.operands = {fa, fb};
  s.result = bf;
  s.resultShape = *batch;
  if (!aVec) {
    s.result.push_back(m);
    s.resultShape.push_back(a2[a2.size() - 2]);
  }
  if (!bVec) {
    s.result.push_back(n);
    s.resultShape.push_back(b2.back());
  }
  return s;
}

/// A reshape between two shapes of no elements that the grouping below
/// cannot pair (`[0, 5]` to `[0]`): any shape of none is the same value. The
/// leading dims both sides share keep their factor, the others are pinned.
static IndexSignature emptyReshape(const Shape &in, const Shape &out) {
  IndexSignature s;
  s.resultShape = out;
  std::vector<int> fi(in.size(), -1), fo(out.size(), -1);
  size_t i = 0;
  while (i < in.size() && i < out.size() && in[i] == out[i]) {
    fi[i] = fo[i] = s.addFactor(in[i], FactorRole::Kept);
    ++i;
  }
  for (size_t k = i; k < in.size(); ++k)
    fi[k] = s.addFactor(in[k], FactorRole::Pinned);
  for (size_t k = i; k < out.size(); ++k)
    fo[k] = s.addFactor(out[k], FactorRole::Pinned);
  s.operands = {fi};
  s.result = fo;
  return s;
}

/// reshape: groups of input dims and output dims with equal products share one
/// compound factor; only the major dim of a group can carry a shard (checked
/// by the placement rule). Factors here are per group (the major dims share
/// the group's factor; other dims of a group are Pinned).
std::optional<IndexSignature> reshape(const Shape &in, const Shape &out, ShapeError &err) {
  IndexSignature s;
  s.resultShape = out;
  std::vector<int> fi(in.size(), -1), fo(out.size(), -1);
  size_t i = 0, o = 0;
  auto fail = [&]() -> std::optional<IndexSignature> {
    int64_t ni = isConcrete(in) ? numElements(in) : -1,
            no = isConcrete(out) ? numElements(out) : -1;
    if (ni == 0 && no == 0)
      return emptyReshape(in, out);
    err = {DiagId::BadReshape,
           {shapeStr(in), ni < 0 ? "?" : std::to_string(ni), shapeStr(out),
            no < 0 ? "?" : std::to_string(no)}};
    return std::nullopt;
  };
  while (i < in.size() || o < out.size()) {
    // size-1 dims on either side form their own factor-less group
    if (i < in.size() && isOne(in[i]) && !(o < out.size() && isOne(out[o]))) {
      fi[i] = s.addFactor(Dim::lit(1), FactorRole::Pinned);
      ++i;
      continue;
    }
    if (o < out.size() && isOne(out[o]) && !(i < in.size() && isOne(in[i]))) {
      fo[o] = s.addFactor(Dim::lit(1), FactorRole::Pinned);
      ++o;
      continue;
    }
    if (i >= in.size() || o >= out.size())
      return fail();
    // Grow one side until the products match: numbers by value, symbolic
    // sizes as products of names (`[N, M]` and `[N*M]`, `[B, H*D]` and
    // `[B, H, D]`).
    size_t i0 = i, o0 = o;
    auto pi = sizeProduct(in[i++]), po = sizeProduct(out[o++]);
    if (!pi || !po)
      return fail();
    while (*pi != *po) {
      const bool numbers = pi->names.empty() && po->names.empty();
      bool growIn = numbers ? pi->coef < po->coef : divides(*pi, *po);
      if (!numbers && !growIn && !divides(*po, *pi))
        return fail();
      if (growIn ? i >= in.size() : o >= out.size())
        return fail();
      auto next = sizeProduct(growIn ? in[i++] : out[o++]);
      auto &side = growIn ? pi : po;
      side = next ? times(*side, *next) : std::nullopt;
      if (!side)
        return fail();
    }
    if (i - i0 == 1 && o - o0 == 1) {
      int f = s.addFactor(in[i0], FactorRole::Kept);
      fi[i0] = fo[o0] = f;
      continue;
    }
    // A compound group: the major dims share a factor only when one side is
    // the other's split with an aligned major dim; shard legality is decided
    // by the placement rule (divisibility), so mark the major dims as one
    // factor and the rest as pinned.
    int major = s.addFactor(sizeDim(*pi), FactorRole::Kept);
    fi[i0] = major;
    fo[o0] = major;
    for (size_t k = i0 + 1; k < i; ++k)
      fi[k] = s.addFactor(in[k], FactorRole::Pinned);
    for (size_t k = o0 + 1; k < o; ++k)
      fo[k] = s.addFactor(out[k], FactorRole::Pinned);
  }
  s.operands = {fi};
  s.result = fo;
  return s;
}

/// A reshape that only drops or inserts size-1 dims, with the pairing given:
/// `map[k]` is the result dim of input dim `k`, or -1 where the dim is
/// dropped. Paired dims keep their factor (and so their shard, even at size
/// 1, where the product grouping of `reshape` could not tell two size-1 dims
/// apart); dropped and inserted dims are pinned.
std::optional<IndexSignature> squeeze(const Shape &in, const Shape &out,
                                      const std::vector<int64_t> &map, ShapeError &err) {
  IndexSignature s;
  s.resultShape = out;
  std::vector<int> fi(in.size(), -1), fo(out.size(), -1);
  bool ok = map.size() == in.size();
  int64_t last = -1;
  for (size_t k = 0; ok && k < in.size(); ++k) {
    int64_t o = map[k];
    if (o < 0) {
      ok = o == -1 && isOne(in[k]);
      if (ok)
        fi[k] = s.addFactor(Dim::lit(1), FactorRole::Pinned);
      continue;
    }
    ok = o > last && o < (int64_t)out.size() && in[k] == out[o];
    last = o;
    if (ok)
      fi[k] = fo[o] = s.addFactor(in[k], FactorRole::Kept);
  }
  for (size_t o = 0; ok && o < out.size(); ++o)
    if (fo[o] < 0) {
      ok = isOne(out[o]);
      fo[o] = s.addFactor(Dim::lit(1), FactorRole::Pinned);
    }
  if (!ok) {
    std::string m = "[";
    for (size_t k = 0; k < map.size(); ++k)
      m += (k ? ", " : "") + std::to_string(map[k]);
    auto count = [](const Shape &sh) {
      return isConcrete(sh) ? std::to_string(numElements(sh)) : std::string("?");
    };
    err = {DiagId::BadReshape,
           {shapeStr(in), count(in), shapeStr(out) + " pairing dims as " + m + "]", count(out)}};
    return std::nullopt;
  }
  s.operands = {fi};
  s.result = fo;
  return s;
}

} // namespace

std::optional<IndexSignature> buildSignature(Op op, const std::vector<Shape> &shapes,
                                             const Attrs &attrs, const Shape *given,
                                             ShapeError &err) {
  switch (opInfo(op).cls) {
  case OpClass::Elementwise1:
  case OpClass::Elementwise2:
  case OpClass::Elementwise3:
    return elementwise(op, shapes, err);
  case OpClass::Reduce:
    return reduce(op, shapes[0], attrs, err);
  default:
    break;
  }
  switch (op) {
  case Op::MatMul:
    return matmul(shapes, attrs, err);
  case Op::Einsum: {
    std::vector<std::string> ins;
    std::string out, why;
    if (!parseEinsum(attrs.str, ins, out, why)) {
      err = {DiagId::BadEinsum, {attrs.str, why}};
      return std::nullopt;
    }
    return einsumSig(ins, out, shapes, attrs.str.c_str(), err);
  }
  case Op::Transpose: {
    const Shape &in = shapes[0];
    std::vector<int64_t> perm = attrs.ints;
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool ok = perm.size() == in.size();
    for (size_t i = 0; ok && i < sorted.size(); ++i)
      ok = sorted[i] == (int64_t)i;
    if (!ok) {
      std::string p = "[";
      for (size_t i = 0; i < perm.size(); ++i)
        p += (i ? ", " : "") + std::to_string(perm[i]);
      err = {DiagId::BadPerm, {p + "]", std::to_string(in.size())}};
      return std::nullopt;
    }
    IndexSignature s;
    std::vector<int> f;
    for (auto &d : in)
      f.push_back(s.addFactor(d, FactorRole::Kept));
    s.operands = {f};
    for (auto p : perm) {
      s.result.push_back(f[p]);
      s.resultShape.push_back(in[p]);
    }
    return s;
  }
  case Op::Reshape:
    if (!attrs.ints.empty())
      return squeeze(shapes[0], *given, attrs.ints, err);
    return reshape(shapes[0], *given, err);
  case Op::Broadcast: {
    auto b = broadcastShapes(shapes[0], *given);
    if (!b || *b != *given) {
      err = {DiagId::ShapeMismatch, {"broadcast", shapeStr(shapes[0]), shapeStr(*given)}};
      return std::nullopt;
    }
    auto s = elementwise(op, {*given, shapes[0]}, err);
    if (s)
      s->operands.erase(s->operands.begin());
    return s;
  }
  case Op::IndexSelect: {
    const Shape &x = shapes[0], &ids = shapes[1];
    int64_t dim = attrs.ints.empty() ? 0 : attrs.ints[0];
    if (dim < 0 || dim >= (int64_t)x.size()) {
      err = {DiagId::BadDim, {std::to_string(dim), std::to_string(x.size())}};
      return std::nullopt;
    }
    IndexSignature s;
    std::vector<int> fx, fid;
    for (size_t d = 0; d < x.size(); ++d)
      fx.push_back(s.addFactor(x[d], d == (size_t)dim ? FactorRole::Pinned : FactorRole::Kept));
    for (auto &d : ids)
      fid.push_back(s.addFactor(d, FactorRole::Kept));
    s.operands = {fx, fid};
    for (size_t d = 0; d < x.size(); ++d) {
      if (d == (size_t)dim) {
        for (size_t k = 0; k < ids.size(); ++k) {
          s.result.push_back(fid[k]);
          s.resultShape.push_back(ids[k]);
        }
      } else {
        s.result.push_back(fx[d]);
        s.resultShape.push_back(x[d]);
      }
    }
    return s;
  }
  case Op::Cumsum: {
    // Running sums along `dim`: every element of a row feeds the later ones,
    // so the dim is whole on every rank; the other dims are kept.
    const Shape &x = shapes[0];
    int64_t dim = attrs.ints.empty() ? 0 : attrs.ints[0];
    if (dim < 0 || dim >= (int64_t)x.size()) {
      err = {DiagId::BadDim, {std::to_string(dim), std::to_string(x.size())}};
      return std::nullopt;
    }
    IndexSignature s;
    std::vector<int> f;
    for (size_t d = 0; d < x.size(); ++d)
      f.push_back(s.addFactor(x[d], d == (size_t)dim ? FactorRole::Pinned : FactorRole::Kept));
    s.operands = {f};
    s.result = f;
    s.resultShape = x;
    return s;
  }
  case Op::IndexAdd: {
    // base[.., S, ..] ids[T] src[.., T, ..]: rows of src summed into base at ids.
    const Shape &base = shapes[0], &ids = shapes[1], &src = shapes[2];
    int64_t dim = attrs.ints.empty() ? 0 : attrs.ints[0];
    if (dim < 0 || dim >= (int64_t)base.size()) {
      err = {DiagId::BadDim, {std::to_string(dim), std::to_string(base.size())}};
      return std::nullopt;
    }
    if (ids.size() != 1 || src.size() != base.size() || src[dim] != ids[0]) {
      err = {DiagId::ShapeMismatch, {"index_add", shapeStr(src), shapeStr(base)}};
      return std::nullopt;
    }
    IndexSignature s;
    std::vector<int> fb, fs;
    for (size_t d = 0; d < base.size(); ++d) {
      if (d == (size_t)dim) {
        fb.push_back(s.addFactor(base[d], FactorRole::Pinned));
        continue;
      }
      if (base[d] != src[d]) {
        err = {DiagId::ShapeMismatch, {"index_add", shapeStr(src), shapeStr(base)}};
        return std::nullopt;
      }
      fb.push_back(s.addFactor(base[d], FactorRole::Kept));
    }
    int t = s.addFactor(ids[0], FactorRole::Summed);
    for (size_t d = 0; d < src.size(); ++d)
      fs.push_back(d == (size_t)dim ? t : fb[d]);
    s.operands = {fb, {t}, fs};
    s.result = fb;
    s.resultShape = base;
    return s;
  }
  default:
    break;
  }
  throw InternalError(std::string("no index signature for `") + opName(op) + "`");
}

} // namespace dt
