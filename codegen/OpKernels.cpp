// This file implements kernel IR for contractions and transposes (see OpKernels.h).
#include "codegen/OpKernels.h"

#include "ir/Signatures.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <cctype>

namespace dt {

namespace {

std::vector<int64_t> rowMajorOf(const std::vector<int64_t> &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

/// The reference kernels' accumulation dtype for operands of dtype `t`.
DType accumulationDtype(DType t) {
  if (isFloat(t))
    return DType::F64;
  return t == DType::Bool ? DType::I64 : t;
}

Kernel contractionKernel(const ContractionShape &cs, const std::vector<DType> &argDtypes, DType acc,
                         const std::string &name) {
  Kernel k;
  k.name = name;
  k.rank = cs.rank;
  int prod = -1;
  for (DType t : argDtypes) {
    int x = k.load(k.addInput(t));
    if (t != acc)
      x = k.cast(x, acc);
    prod = prod < 0 ? x : k.binary(KOp::Mul, prod, x);
  }
  k.store(k.addOutput(acc), prod);
  k.setReduce(KReduce::Sum, cs.reduced);
  return k;
}

} // namespace

ContractionShape matmulContraction(int ra, int rb, bool ta, bool tb) {
  if (ra < 1 || rb < 1)
    throw InternalError("op kernel: `matmul` of a rank-0 operand");
  ContractionShape cs;
  int ba = std::max(ra - 2, 0), bb = std::max(rb - 2, 0), nb = std::max(ba, bb);
  int d = nb;
  int m = ra > 1 ? d++ : -1, n = rb > 1 ? d++ : -1, k = d++;
  cs.rank = d;
  std::vector<int> a, b;
  for (int j = 0; j < ba; ++j)
    a.push_back(nb - ba + j);
  if (ra == 1)
    a.push_back(k);
  else if (ta && ra >= 2)
    a.insert(a.end(), {k, m});
  else
    a.insert(a.end(), {m, k});
  for (int j = 0; j < bb; ++j)
    b.push_back(nb - bb + j);
  if (rb == 1)
    b.push_back(k);
  else if (tb)
    b.insert(b.end(), {n, k});
  else
    b.insert(b.end(), {k, n});
  cs.operandDims = {a, b};
  for (int j = 0; j < nb; ++j)
    cs.outDims.push_back(j);
  if (m >= 0)
    cs.outDims.push_back(m);
  if (n >= 0)
    cs.outDims.push_back(n);
  cs.reduced = {k};
  return cs;
}

ContractionShape einsumContraction(const std::string &spec0, const std::vector<int> &ranks) {
  auto bad = [&](const std::string &why) {
    return InternalError("op kernel: einsum `" + spec0 + "`: " + why);
  };
  EinsumLetters e = splitEinsum(spec0); // ir/Signatures.h
  const std::vector<std::string> &ins = e.inputs;
  const std::string &outL = e.output;
  if (ins.size() != ranks.size() || ranks.empty())
    throw bad("spec has " + std::to_string(ins.size()) + " inputs but got " +
              std::to_string(ranks.size()) + " operands");
  std::string order; // every letter in order of first appearance
  for (size_t j = 0; j < ins.size(); ++j) {
    if ((int)ins[j].size() != ranks[j])
      throw bad("input `" + ins[j] + "` does not match a rank-" + std::to_string(ranks[j]) +
                " operand");
    for (char c : ins[j]) {
      if (!std::isalpha((unsigned char)c))
        throw bad(std::string("bad letter `") + c + "`");
      if (order.find(c) == std::string::npos)
        order += c;
    }
  }
  if (e.explicitOutput)
    for (size_t i = 0; i < outL.size(); ++i)
      if (order.find(outL[i]) == std::string::npos || outL.find(outL[i]) != i)
        throw bad(std::string("bad output letter `") + outL[i] + "`");
  std::string all = outL; // the iteration dims: output first, as the reference loops
  for (char c : order)
    if (outL.find(c) == std::string::npos)
      all += c;
  ContractionShape cs;
  cs.rank = (int)all.size();
  for (auto &in : ins) {
    std::vector<int> dims;
    for (char c : in)
      dims.push_back((int)all.find(c));
    cs.operandDims.push_back(dims);
  }
  for (size_t i = 0; i < all.size(); ++i)
    (i < outL.size() ? cs.outDims : cs.reduced).push_back((int)i);
  return cs;
}

Kernel copyKernel(int rank, DType in, DType out) {
  Kernel k;
  k.name = in == out ? "copy" : "cast";
  k.rank = rank;
  int x = k.load(k.addInput(in));
  if (in != out)
    x = k.cast(x, out);
  k.store(k.addOutput(out), x);
  return k;
}

std::optional<OpKernel> buildOpKernel(const Inst &in, const std::vector<DType> &argDtypes,
                                      const std::vector<int> &argRanks, DType out) {
  if (argDtypes.size() != argRanks.size() || argDtypes.empty())
    return std::nullopt;
  OpKernel ok;
  switch (in.op) {
  case Op::Transpose:
    if (argDtypes.size() != 1 || (int)in.attrs.ints.size() != argRanks[0] || argDtypes[0] != out)
      return std::nullopt;
    ok.isCopy = true;
    ok.perm = in.attrs.ints;
    ok.main = copyKernel(argRanks[0], out, out);
    ok.main.name = "transpose";
    return ok;
  case Op::MatMul:
    if (argDtypes.size() != 2 || argRanks[0] < 1 || argRanks[1] < 1)
      return std::nullopt;
    ok.shape = matmulContraction(argRanks[0], argRanks[1], matmulTransposed(in.attrs, 0),
                                 matmulTransposed(in.attrs, 1));
    break;
  case Op::Einsum:
    if (argDtypes.size() > 2)
      return std::nullopt;
    ok.shape = einsumContraction(in.attrs.str, argRanks);
    break;
  default:
    return std::nullopt;
  }
  // Operands share one dtype (the builtins' `Same` rule); the product and
  // sum run in the reference kernels' accumulation dtype.
  for (DType t : argDtypes)
    if (t != argDtypes[0])
      return std::nullopt;
  DType acc = accumulationDtype(argDtypes[0]);
  ok.main = contractionKernel(ok.shape, argDtypes, acc, opName(in.op));
  if (acc != out)
    ok.finish = copyKernel((int)ok.shape.outDims.size(), acc, out);
  for (const Kernel *k : {&ok.main, ok.finish ? &*ok.finish : nullptr}) {
    if (!k)
      continue;
    std::string err = verifyKernel(*k);
    if (!err.empty())
      throw InternalError("op kernel `" + k->name + "`: " + err);
  }
  return ok;
}

OpLaunch opKernelLaunch(const OpKernel &k, const std::vector<std::vector<int64_t>> &argShapes) {
  OpLaunch l;
  if (k.isCopy) {
    if (argShapes.size() != 1 || argShapes[0].size() != k.perm.size())
      throw InternalError("op kernel `transpose`: wrong operand");
    const auto &s = argShapes[0];
    auto st = rowMajorOf(s);
    std::vector<int64_t> inSt;
    for (int64_t p : k.perm) {
      if (p < 0 || p >= (int64_t)s.size())
        throw InternalError("op kernel `transpose`: bad permutation");
      l.outShape.push_back(s[p]);
      inSt.push_back(st[p]);
    }
    l.iterations = 1;
    for (auto e : l.outShape)
      l.iterations *= e;
    l.params = kernelParams(k.main, l.outShape, {inSt}, {rowMajorOf(l.outShape)});
    return l;
  }
  const ContractionShape &cs = k.shape;
  if (argShapes.size() != cs.operandDims.size())
    throw InternalError("op kernel `" + k.main.name + "`: wrong number of operands");
  std::vector<int64_t> size(cs.rank, 1);
  for (size_t j = 0; j < argShapes.size(); ++j) {
    if (argShapes[j].size() != cs.operandDims[j].size())
      throw InternalError("op kernel `" + k.main.name + "`: an operand of the wrong rank");
    for (size_t p = 0; p < argShapes[j].size(); ++p) {
      int64_t &it = size[cs.operandDims[j][p]], e = argShapes[j][p];
      if (it == 1)
        it = e;
      else if (e != it && e != 1)
        throw InternalError("op kernel `" + k.main.name + "`: sizes " + std::to_string(it) +
                            " and " + std::to_string(e) + " of one dim");
    }
  }
  std::vector<std::vector<int64_t>> inSt;
  for (size_t j = 0; j < argShapes.size(); ++j) {
    auto rm = rowMajorOf(argShapes[j]);
    std::vector<int64_t> st(cs.rank, 0);
    for (size_t p = 0; p < argShapes[j].size(); ++p)
      if (argShapes[j][p] != 1 || size[cs.operandDims[j][p]] == 1)
        st[cs.operandDims[j][p]] += rm[p]; // a size-1 dim against a larger one broadcasts
    inSt.push_back(std::move(st));
  }
  for (int d : cs.outDims)
    l.outShape.push_back(size[d]);
  auto orm = rowMajorOf(l.outShape);
  std::vector<int64_t> ost(cs.rank, 0);
  for (size_t i = 0; i < cs.outDims.size(); ++i)
    ost[cs.outDims[i]] = orm[i];
  l.iterations = 1;
  for (auto e : size)
    l.iterations *= e;
  l.params = kernelParams(k.main, size, inSt, {ost});
  if (k.finish)
    l.finishParams = kernelParams(*k.finish, l.outShape, {orm}, {orm});
  return l;
}

} // namespace dt

namespace dt {

std::optional<EinsumMatmulPlan> einsumMatmulPlan(const std::string &spec, int ra, int rb) {
  ContractionShape cs = einsumContraction(spec, {ra, rb});
  const std::vector<int> &a = cs.operandDims[0], &b = cs.operandDims[1];
  auto has = [](const std::vector<int> &v, int d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };
  for (const auto &v : {a, b})
    for (size_t i = 0; i < v.size(); ++i)
      if (std::find(v.begin() + i + 1, v.end(), v[i]) != v.end())
        return std::nullopt; // a diagonal
  std::vector<int> batch, m, n, k;
  for (int d : cs.outDims)
    (has(a, d) && has(b, d) ? batch : has(a, d) ? m : n).push_back(d);
  for (int d : a)
    if (!has(cs.outDims, d)) {
      if (!has(b, d))
        return std::nullopt; // summed within a alone
      k.push_back(d);
    }
  for (int d : b)
    if (!has(cs.outDims, d) && !has(a, d))
      return std::nullopt;
  auto cat = [](std::initializer_list<const std::vector<int> *> parts) {
    std::vector<int> r;
    for (auto *p : parts)
      r.insert(r.end(), p->begin(), p->end());
    return r;
  };
  // The permutation of `have` (an operand's iteration dims) into `want`.
  auto perm = [](const std::vector<int> &have, const std::vector<int> &want) {
    std::vector<int64_t> p;
    for (int d : want)
      p.push_back(std::find(have.begin(), have.end(), d) - have.begin());
    return p;
  };
  EinsumMatmulPlan plan;
  plan.batch = (int)batch.size();
  plan.m = (int)m.size();
  plan.n = (int)n.size();
  plan.k = (int)k.size();
  if (a == cat({&batch, &k, &m}) && a != cat({&batch, &m, &k}))
    plan.transA = true;
  else if (a != cat({&batch, &m, &k}))
    plan.permA = perm(a, cat({&batch, &m, &k}));
  if (b == cat({&batch, &n, &k}) && b != cat({&batch, &k, &n}))
    plan.transB = true;
  else if (b != cat({&batch, &k, &n}))
    plan.permB = perm(b, cat({&batch, &k, &n}));
  std::vector<int> prod = cat({&batch, &m, &n});
  if (prod != cs.outDims)
    plan.permOut = perm(prod, cs.outDims);
  return plan;
}

} // namespace dt
