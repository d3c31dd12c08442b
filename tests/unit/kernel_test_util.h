// This file implements the helpers of the kernel JIT tests: a seeded random
// kernel generator, random run-time cases (shapes with size-0 dims,
// broadcasting, permuted and gapped strides, global offsets) and a runner
// that executes a kernel through the JIT and through interpretKernel and
// compares the outputs under the tolerance stated in kernel_jit_test.cpp.
#pragma once

#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"
#include "support/Errors.h"
#include "support/LowPrecision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace dt::ktest {

/// The one-node kernel of `op` on dtype `t` (`out = op(in0, ...)`; a cast
/// casts to `castTo`; a gather reads in0 at the i32 ids of in1), or nullopt
/// when the op is not defined on `t`.
inline std::optional<Kernel> oneNode(KOp op, DType t, DType castTo) {
  Kernel k;
  k.rank = 1;
  if (op == KOp::Gather) { // out = in0[in1] (makeCase keeps the ids in range)
    int src = k.addInput(t), ids = k.load(k.addInput(DType::I32));
    k.store(k.addOutput(t), k.gather(src, ids, 0));
    return k;
  }
  std::vector<int> args;
  for (int a = 0; a < kopArity(op); ++a)
    args.push_back(k.load(k.addInput(a == 0 && op == KOp::Select ? DType::Bool : t)));
  int r;
  try {
    if (op == KOp::Cast)
      r = k.cast(args[0], castTo);
    else if (kopArity(op) == 1)
      r = k.unary(op, args[0]);
    else if (kopArity(op) == 2)
      r = k.binary(op, args[0], args[1]);
    else
      r = k.select(args[0], args[1], args[2]);
  } catch (const InternalError &) {
    return std::nullopt;
  }
  k.store(k.addOutput(k.nodes[r].dtype), r);
  return k;
}

inline int64_t uni(std::mt19937_64 &r, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(r);
}
inline bool coin(std::mt19937_64 &r, double p) {
  return std::uniform_real_distribution<double>(0, 1)(r) < p;
}

inline std::vector<double> cornerFloats() {
  return {0.0,   -0.0,     1.0,       -1.0, 0.5,   2.5,   -2.5,   3.0, 1e30,
          -1e30, INFINITY, -INFINITY, NAN,  1e-40, 100.0, -100.0, 7.0, 1e-3};
}
inline std::vector<int64_t> cornerInts(DType t) {
  int64_t mn =
      t == DType::I32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  int64_t mx =
      t == DType::I32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  return {0, 1, -1, 2, -2, 3, 7, -7, 31, 63, 100, mn, mx, mn + 1};
}

/// Writes a random value of dtype t at element i of `buf`.
inline void fillValue(std::mt19937_64 &r, DType t, void *buf, int64_t i, bool corner) {
  switch (t) {
  case DType::F32:
  case DType::F64:
  case DType::BF16:
  case DType::F16: {
    auto cs = cornerFloats();
    double v = corner || coin(r, 0.05) ? cs[uni(r, 0, cs.size() - 1)]
                                       : std::uniform_real_distribution<double>(-4, 4)(r);
    if (t == DType::F32)
      ((float *)buf)[i] = (float)v;
    else if (t == DType::F64)
      ((double *)buf)[i] = v;
    else
      ((uint16_t *)buf)[i] = t == DType::BF16 ? doubleToBf16(v) : doubleToHalf(v);
    break;
  }
  case DType::I32:
  case DType::I64: {
    auto cs = cornerInts(t);
    int64_t v = corner || coin(r, 0.05) ? cs[uni(r, 0, cs.size() - 1)] : uni(r, -20, 20);
    if (t == DType::I32)
      ((int32_t *)buf)[i] = (int32_t)v;
    else
      ((int64_t *)buf)[i] = v;
    break;
  }
  case DType::Bool:
    ((uint8_t *)buf)[i] = (uint8_t)(coin(r, 0.05) ? 2 : uni(r, 0, 1));
    break;
  }
}

inline DType anyDType(std::mt19937_64 &r) { return (DType)uni(r, 0, 6); }
inline DType numDType(std::mt19937_64 &r) {
  static const DType num[] = {DType::F32, DType::F64,  DType::I32,
                              DType::I64, DType::BF16, DType::F16};
  return num[uni(r, 0, 5)];
}
inline DType floatDType(std::mt19937_64 &r) {
  static const DType fl[] = {DType::F32, DType::F64, DType::BF16, DType::F16};
  return fl[uni(r, 0, 3)];
}

/// A random well-typed kernel: rank 0..4, 1..4 inputs, a DAG of 3..14 ops
/// drawn from every node kind, 1..3 outputs, a reduction ~35% of the time.
inline Kernel randomKernel(std::mt19937_64 &r) {
  Kernel k;
  k.name = "rand";
  k.rank = (int)uni(r, 0, 4);
  int nIn = (int)uni(r, 1, 4);
  for (int i = 0; i < nIn; ++i)
    k.addInput(anyDType(r), coin(r, 0.3)); // uniform: one element read everywhere
  std::vector<bool> gathered;              // inputs read only through gathers
  auto pick = [&](DType t) -> int {
    std::vector<int> c;
    for (int i = 0; i < (int)k.nodes.size(); ++i)
      if (k.nodes[i].dtype == t)
        c.push_back(i);
    if (!c.empty() && coin(r, 0.8))
      return c[std::max<int64_t>(0, (int64_t)c.size() - uni(r, 1, 6))];
    std::vector<int> ins;
    for (int i = 0; i < nIn; ++i)
      if (k.inputs[i] == t && !(i < (int)gathered.size() && gathered[i]))
        ins.push_back(i);
    if (!ins.empty() && coin(r, 0.7))
      return k.load(ins[uni(r, 0, ins.size() - 1)]);
    if (!k.nodes.empty() && coin(r, 0.5))
      return k.cast((int)uni(r, 0, k.nodes.size() - 1), t);
    double v =
        isFloat(t) ? std::uniform_real_distribution<double>(-3, 3)(r) : (double)uni(r, -5, 5);
    return k.constant(t == DType::Bool ? (double)uni(r, 0, 1) : v, t);
  };
  int nOps = (int)uni(r, 3, 14);
  for (int n = 0; n < nOps; ++n) {
    KOp op = (KOp)uni(r, (int)KOp::Random, (int)KOp::Select);
    if (op == KOp::Gather) {
      // A source read only through the gather and its own ids input: the
      // case generator (makeCase) gives the source its own extent along
      // `dim` and ids inside it.
      if (k.rank == 0)
        continue;
      int src = k.addInput(anyDType(r)), ids = k.addInput(coin(r, 0.5) ? DType::I32 : DType::I64);
      nIn += 2;
      gathered.resize(k.inputs.size(), false);
      gathered[src] = true;
      k.gather(src, k.load(ids), (int)uni(r, 0, k.rank - 1));
    } else if (op == KOp::Random)
      k.random(coin(r, 0.5) ? RandomKind::Normal : RandomKind::Uniform, uni(r, 0, 99),
               floatDType(r));
    else if (op == KOp::Iota) {
      if (k.rank > 0)
        k.iota((int)uni(r, 0, k.rank - 1), numDType(r));
    } else if (isTranscendental(op))
      k.unary(op, pick(floatDType(r)));
    else if (op == KOp::Not)
      k.unary(op, pick(DType::Bool));
    else if (op == KOp::Neg || op == KOp::Abs || op == KOp::Relu)
      k.unary(op, pick(numDType(r)));
    else if (op == KOp::Cast)
      k.cast(pick(anyDType(r)), anyDType(r));
    else if (op == KOp::And || op == KOp::Or)
      k.binary(op, pick(DType::Bool), pick(DType::Bool));
    else if (op == KOp::Select) {
      DType t = anyDType(r);
      int c = pick(DType::Bool), a = pick(t);
      k.select(c, a, pick(t));
    } else {
      DType t = isCompare(op) ? anyDType(r) : numDType(r);
      int a = pick(t);
      k.binary(op, a, pick(t));
    }
  }
  // Inner stride hints, right or wrong: a lowering must check them.
  if (coin(r, 0.3))
    for (size_t i = 0; i < k.inputs.size(); ++i)
      k.innerStrideHints.push_back((int)uni(r, -1, 1));
  bool reduce = k.rank > 0 && coin(r, 0.35);
  int nOut = (int)uni(r, 1, 3);
  for (int o = 0; o < nOut; ++o) {
    int node = (int)k.nodes.size() - 1 - (int)uni(r, 0, std::min<int64_t>(3, k.nodes.size() - 1));
    if (reduce && k.nodes[node].dtype == DType::Bool)
      node = k.cast(node, DType::I32);
    k.store(k.addOutput(k.nodes[node].dtype), node);
  }
  if (reduce) {
    std::vector<int> dims;
    for (int d = 0; d < k.rank; ++d)
      if (coin(r, 0.5))
        dims.push_back(d);
    if (dims.empty())
      dims.push_back((int)uni(r, 0, k.rank - 1));
    k.setReduce((KReduce)uni(r, 1, 3), dims);
  }
  return k;
}

/// One run-time instance of a kernel: sizes, strides, global index, inputs.
struct Case {
  std::vector<int64_t> shape, goff, gstr;
  std::vector<std::vector<int64_t>> inStr, outStr;
  std::vector<std::vector<char>> inputs;
  std::vector<int64_t> outElems;
};

inline int64_t spanOf(const std::vector<int64_t> &shape, const std::vector<int64_t> &st) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (st[d] == 0)
      continue; // broadcast / reduced: any size
    if (shape[d] == 0)
      return 1;
    n += (shape[d] - 1) * st[d];
  }
  return n;
}

/// Strides for a buffer laid out over the dims of `shape` not in `zero`,
/// in a random (or row-major) order, sometimes with a gap.
inline std::vector<int64_t> randomStrides(std::mt19937_64 &r, const std::vector<int64_t> &shape,
                                          std::vector<bool> zero, bool plain) {
  int R = (int)shape.size();
  std::vector<int> order(R);
  for (int d = 0; d < R; ++d)
    order[d] = d;
  if (!plain && coin(r, 0.3))
    std::shuffle(order.begin(), order.end(), r);
  std::vector<int64_t> st(R, 0);
  int64_t acc = (!plain && coin(r, 0.15)) ? 2 : 1;
  for (int j = R - 1; j >= 0; --j) {
    int d = order[j];
    if (zero[d])
      continue;
    st[d] = acc;
    acc *= std::max<int64_t>(shape[d], 1);
  }
  return st;
}

inline Case makeCase(const Kernel &k, std::mt19937_64 &r, bool corner) {
  Case c;
  int R = k.rank;
  if (corner)
    c.shape = {257};
  else {
    for (int d = 0; d < R; ++d)
      c.shape.push_back(coin(r, 0.08) ? 0 : uni(r, 1, 4));
    if (R > 0 && R <= 2 && coin(r, 0.5))
      c.shape[R - 1] = uni(r, 5, 70);
  }
  bool plainAll = corner || coin(r, 0.4);
  // Gathers: the source's own extent along the gathered dim, and the ids
  // input that feeds it (randomKernel loads a fresh one per gather).
  std::vector<int> gatherDim(k.inputs.size(), -1), idsOf(k.inputs.size(), -1);
  std::vector<int64_t> extent(k.inputs.size(), 0);
  for (const KNode &n : k.nodes)
    if (n.op == KOp::Gather) {
      gatherDim[n.index] = n.dim;
      extent[n.index] = uni(r, 1, 5);
      const KNode &ix = k.nodes[n.args[0]];
      if (ix.op == KOp::Load)
        idsOf[ix.index] = n.index;
    }
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    std::vector<bool> zero(R, k.isUniformInput((int)i));
    if (!plainAll)
      for (int d = 0; d < R; ++d)
        zero[d] = zero[d] || coin(r, 0.25);
    std::vector<int64_t> shape = c.shape;
    if (gatherDim[i] >= 0) {
      shape[gatherDim[i]] = extent[i];
      zero[gatherDim[i]] = false; // the gathered dim has its own stride
    }
    c.inStr.push_back(randomStrides(r, shape, zero, plainAll));
    int64_t n = spanOf(shape, c.inStr.back());
    c.inputs.emplace_back(n * dtypeSize(k.inputs[i]));
    for (int64_t e = 0; e < n; ++e) {
      if (idsOf[i] >= 0) { // an id inside its source's extent
        int64_t id = uni(r, 0, extent[idsOf[i]] - 1);
        if (k.inputs[i] == DType::I32)
          ((int32_t *)c.inputs.back().data())[e] = (int32_t)id;
        else
          ((int64_t *)c.inputs.back().data())[e] = id;
      } else {
        fillValue(r, k.inputs[i], c.inputs.back().data(), e, corner);
      }
    }
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    std::vector<bool> zero(R, false);
    for (int d : k.reduceDims)
      zero[d] = true;
    c.outStr.push_back(randomStrides(r, c.shape, zero, plainAll));
    c.outElems.push_back(spanOf(c.shape, c.outStr.back()));
  }
  if (usesGlobalIndex(k)) {
    std::vector<int64_t> full(R);
    for (int d = 0; d < R; ++d)
      c.goff.push_back(uni(r, 0, 3)), full[d] = c.shape[d] + c.goff[d] + uni(r, 0, 2);
    c.gstr.assign(R, 1);
    for (int d = R - 2; d >= 0; --d)
      c.gstr[d] = c.gstr[d + 1] * full[d + 1];
  }
  return c;
}

inline std::string describe(const Case &c) {
  std::ostringstream os;
  auto v = [&](const std::vector<int64_t> &x) {
    os << "[";
    for (size_t i = 0; i < x.size(); ++i)
      os << (i ? ", " : "") << x[i];
    os << "]";
  };
  os << "shape ";
  v(c.shape);
  for (auto &s : c.inStr)
    os << " in", v(s);
  for (auto &s : c.outStr)
    os << " out", v(s);
  return os.str();
}

/// Runs `k` on `c` through `fn` (or the interpreter when fn is null) and
/// returns the output buffers (pre-filled with a 0x5a sentinel). A lifted
/// kernel (liftConstants) reads `lifted` after its params.
inline std::vector<std::vector<char>> runCase(const Kernel &k, Case &c, CpuJIT::KernelFn fn,
                                              const std::vector<int64_t> &lifted = {}) {
  std::vector<std::vector<char>> outs;
  for (size_t o = 0; o < k.outputs.size(); ++o)
    outs.emplace_back(c.outElems[o] * dtypeSize(k.outputs[o]), (char)0x5a);
  std::vector<void *> bufs;
  for (auto &b : c.inputs)
    bufs.push_back(b.data());
  for (auto &b : outs)
    bufs.push_back(b.data());
  auto p = kernelParams(k, c.shape, c.inStr, c.outStr, c.goff, c.gstr);
  p.insert(p.end(), lifted.begin(), lifted.end());
  if (fn)
    fn(bufs.data(), p.data());
  else
    interpretKernel(k, bufs.data(), p.data());
  return outs;
}

inline double readF(DType t, const std::vector<char> &b, int64_t i) {
  if (isLowPrecision(t)) {
    uint16_t h = ((const uint16_t *)b.data())[i];
    return t == DType::BF16 ? bf16ToFloat(h) : halfToFloat(h);
  }
  return t == DType::F32 ? (double)((const float *)b.data())[i] : ((const double *)b.data())[i];
}

/// The spacing of dtype t's values just above |a| (0 for f64).
inline double ulpAbove(DType t, double a) {
  a = std::fabs(a);
  if (t == DType::F32)
    return (double)std::nextafter((float)a, INFINITY) - a;
  if (t == DType::BF16)
    return (double)bf16ToFloat((uint16_t)(doubleToBf16(a) + 1)) - a;
  if (t == DType::F16)
    return (double)halfToFloat((uint16_t)(doubleToHalf(a) + 1)) - a;
  return 0;
}

/// JIT vs interpreter on one case; "" when they agree.
inline std::string runAndCompare(CpuJIT &jit, const Kernel &k, Case &c) {
  auto ref = runCase(k, c, nullptr);
  auto got = runCase(k, c, jit.compile(k));
  bool fsum = k.reduce == KReduce::Sum;
  std::vector<std::vector<char>> mag;
  if (fsum) { // sum |x| per output element bounds the reassociation error
    Kernel tw = k;
    for (KStore &s : tw.stores)
      if (isFloat(tw.outputs[s.output]))
        s.node = tw.unary(KOp::Abs, s.node);
    mag = runCase(tw, c, nullptr);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    DType t = k.outputs[o];
    if (!isFloat(t) || !fsum) {
      if (!isFloat(t)) {
        if (ref[o] != got[o])
          return "output " + std::to_string(o) + " differs";
        continue;
      }
    }
    for (int64_t i = 0; i < c.outElems[o]; ++i) {
      double a = readF(t, ref[o], i), b = readF(t, got[o], i);
      if (std::isnan(a) && std::isnan(b))
        continue;
      if (std::memcmp(&ref[o][i * dtypeSize(t)], &got[o][i * dtypeSize(t)], dtypeSize(t)) == 0)
        continue;
      if (fsum) {
        double s = readF(t, mag[o], i);
        if (!std::isfinite(s))
          continue;
        double ulp = ulpAbove(t, a);
        if (std::fabs(a - b) <= std::ldexp(s, -40) + ulp)
          continue;
      }
      std::ostringstream os;
      os.precision(17);
      os << "output " << o << " element " << i << ": interpreter " << a << ", jit " << b;
      return os.str();
    }
  }
  return "";
}

} // namespace dt::ktest
