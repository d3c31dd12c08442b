// This file implements interpretKernel, the reference interpreter of the
// kernel IR (KernelIR.h): the executable statement of the IR's semantics and
// the oracle the LLVM and CUDA lowerings are tested against. It favours being
// obviously right over being fast: one element at a time, every node evaluated
// in its own dtype, reductions in row-major order of the reduced dims.
#include "codegen/KernelIR.h"
#include "codegen/ScalarOps.h"
#include "ir/DeterministicOrder.h"

#include "support/Diagnostics.h"
#include "support/LowPrecision.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace dt {

namespace {

/// A scalar of any dtype: floats in `f` (f32 values are exact floats), ints
/// and bools in `i` (i32 sign-extended, bool 0/1).
struct Sc {
  double f = 0;
  int64_t i = 0;
};

int64_t wrap(DType t, uint64_t v) {
  switch (t) {
  case DType::I32:
    return (int64_t)(int32_t)(uint32_t)v;
  case DType::Bool:
    return v != 0;
  default:
    return (int64_t)v;
  }
}

int64_t saturate(double v, DType t) { return saturatingInt(v, t); }

/// `v` rounded (nearest even, once) to the bf16/f16 grid, as an exact double.
double roundLow(DType t, double v) {
  return t == DType::BF16 ? bf16ToFloat(doubleToBf16(v)) : halfToFloat(doubleToHalf(v));
}

Sc castSc(Sc v, DType from, DType to) {
  Sc r;
  if (isFloat(from)) {
    if (to == DType::F32)
      r.f = (float)v.f;
    else if (to == DType::F64)
      r.f = v.f;
    else if (isLowPrecision(to))
      r.f = roundLow(to, v.f);
    else if (to == DType::Bool)
      r.i = v.f != 0;
    else
      r.i = saturate(v.f, to);
  } else {
    if (to == DType::F32)
      r.f = (float)v.i;
    else if (to == DType::F64)
      r.f = (double)v.i;
    else if (isLowPrecision(to))
      r.f = roundLow(to, (double)v.i);
    else
      r.i = wrap(to, (uint64_t)v.i);
  }
  return r;
}

/// Calls f(T{}) with T the C++ type dtype `t` computes in (ScalarOps.h):
/// bf16/f16 compute in f32.
template <class F> void withComputeType(DType t, F &&f) {
  switch (t) {
  case DType::F32:
  case DType::BF16:
  case DType::F16:
    f(float{});
    return;
  case DType::F64:
    f(double{});
    return;
  case DType::I32:
    f(int32_t{});
    return;
  case DType::I64:
    f(int64_t{});
    return;
  case DType::Bool:
    f(uint8_t{});
    return;
  }
}

/// A scalar as a T (f32 values are exact floats, i32 values fit).
template <class T> T asT(const Sc &v) {
  if constexpr (std::is_floating_point_v<T>)
    return (T)v.f;
  else
    return (T)v.i;
}
template <class T> Sc fromT(T v) {
  Sc r;
  if constexpr (std::is_floating_point_v<T>)
    r.f = v;
  else
    r.i = (int64_t)v;
  return r;
}

/// Arithmetic node `op` on operands of dtype `at`, through ScalarOps.h.
Sc scalarNode(KOp op, DType at, const Sc &a, const Sc &b) {
  Sc r;
  withComputeType(at, [&](auto z) {
    using T = decltype(z);
    if (kopArity(op) == 1)
      r = fromT(scalarUnary<T>(op, asT<T>(a)));
    else if (isPredicate(op))
      r.i = scalarPredicate<T>(op, asT<T>(a), asT<T>(b));
    else
      r = fromT(scalarBinary<T>(op, asT<T>(a), asT<T>(b)));
  });
  return r;
}

Sc loadSc(DType t, const void *base, int64_t off) {
  Sc r;
  switch (t) {
  case DType::F32:
    r.f = static_cast<const float *>(base)[off];
    break;
  case DType::F64:
    r.f = static_cast<const double *>(base)[off];
    break;
  case DType::I32:
    r.i = static_cast<const int32_t *>(base)[off];
    break;
  case DType::I64:
    r.i = static_cast<const int64_t *>(base)[off];
    break;
  case DType::Bool:
    r.i = static_cast<const uint8_t *>(base)[off] != 0;
    break;
  case DType::BF16:
    r.f = bf16ToFloat(static_cast<const uint16_t *>(base)[off]);
    break;
  case DType::F16:
    r.f = halfToFloat(static_cast<const uint16_t *>(base)[off]);
    break;
  }
  return r;
}

void storeSc(DType t, void *base, int64_t off, Sc v) {
  switch (t) {
  case DType::F32:
    static_cast<float *>(base)[off] = (float)v.f;
    break;
  case DType::F64:
    static_cast<double *>(base)[off] = v.f;
    break;
  case DType::I32:
    static_cast<int32_t *>(base)[off] = (int32_t)v.i;
    break;
  case DType::I64:
    static_cast<int64_t *>(base)[off] = v.i;
    break;
  case DType::Bool:
    static_cast<uint8_t *>(base)[off] = v.i != 0;
    break;
  case DType::BF16: // a reduction's f64 accumulator rounds here, once
    static_cast<uint16_t *>(base)[off] = doubleToBf16(v.f);
    break;
  case DType::F16:
    static_cast<uint16_t *>(base)[off] = doubleToHalf(v.f);
    break;
  }
}

/// Evaluates every node at iteration point `idx`.
void evalPoint(const Kernel &k, void **buffers, const int64_t *params, const int64_t *idx,
               std::vector<Sc> &vals) {
  const int R = k.rank;
  const int64_t nIn = (int64_t)k.inputs.size(), nOut = (int64_t)k.outputs.size();
  const int64_t *goff = params + R * (1 + nIn + nOut), *gstr = goff + R;
  const int64_t *lifted = params + numParams(k); // liftConstants' values
  for (size_t ni = 0; ni < k.nodes.size(); ++ni) {
    const KNode &n = k.nodes[ni];
    Sc r;
    auto A = [&](int a) -> const Sc & { return vals[n.args[a]]; };
    auto AT = [&](int a) { return k.nodes[n.args[a]].dtype; };
    switch (n.op) {
    case KOp::Load: {
      const int64_t *st = params + R * (1 + n.index);
      int64_t off = 0;
      for (int d = 0; d < R; ++d)
        off += idx[d] * st[d];
      r = loadSc(n.dtype, buffers[n.index], off);
      break;
    }
    case KOp::Gather: { // idx[dim] replaced by the index node's value
      const int64_t *st = params + R * (1 + n.index);
      int64_t off = (A(0).i - idx[n.dim]) * st[n.dim];
      for (int d = 0; d < R; ++d)
        off += idx[d] * st[d];
      r = loadSc(n.dtype, buffers[n.index], off);
      break;
    }
    case KOp::Const:
      if (n.slot >= 0)
        std::memcpy(&r.f, lifted + n.slot, sizeof r.f);
      else if (isFloat(n.dtype))
        r.f = kernelConstFloat(n);
      else
        r.i = kernelConstInt(n);
      break;
    case KOp::Random: {
      uint64_t lin = 0;
      for (int d = 0; d < R; ++d)
        lin += (uint64_t)(goff[d] + idx[d]) * (uint64_t)gstr[d];
      const uint64_t seed = n.args[0] >= 0 ? (uint64_t)A(0).i // sign-extended
                            : n.slot >= 0  ? (uint64_t)lifted[n.slot]
                                           : n.seed;
      r.f = n.random == RandomKind::Normal ? kernelNormal(seed, lin) : kernelUniform01(seed, lin);
      break;
    }
    case KOp::Iota: {
      Sc g;
      g.i = goff[n.index] + idx[n.index];
      r = castSc(g, DType::I64, n.dtype);
      break;
    }
    case KOp::Cast:
      r = castSc(A(0), AT(0), n.dtype);
      break;
    case KOp::Select:
      r = A(0).i ? A(1) : A(2);
      break;
    default: // arithmetic: the shared scalar meaning
      r = scalarNode(n.op, AT(0), A(0), n.args[1] >= 0 ? A(1) : Sc{});
    }
    if (isLowPrecision(n.dtype)) // computed in f32, rounded once to the storage type
      r.f = roundLow(n.dtype, r.f);
    vals[ni] = r;
  }
}

/// Identity of the kernel's reduction for dtype t.
Sc identity(KReduce op, DType t) {
  Sc r;
  if (op == KReduce::Sum)
    return r;
  bool mx = op == KReduce::Max;
  if (isFloat(t))
    r.f = mx ? -INFINITY : INFINITY;
  else if (t == DType::I32)
    r.i = mx ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max();
  else
    r.i = mx ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  return r;
}

void accumulate(KReduce op, DType t, Sc &acc, const Sc &v) {
  if (isFloat(t)) {
    // Sums accumulate in f64 for every float dtype; rounded once at the end.
    if (op == KReduce::Sum)
      acc.f += v.f;
    else
      acc.f = scalarBinary<double>(op == KReduce::Max ? KOp::Maximum : KOp::Minimum, acc.f, v.f);
  } else {
    KOp bop = op == KReduce::Sum ? KOp::Add : op == KReduce::Max ? KOp::Maximum : KOp::Minimum;
    acc = scalarNode(bop, t, acc, v);
  }
}

/// Advances `idx` over `dims` (row-major, last fastest); false when done.
bool advance(std::vector<int64_t> &idx, const std::vector<int> &dims, const int64_t *shape) {
  for (int j = (int)dims.size() - 1; j >= 0; --j) {
    int d = dims[j];
    if (++idx[d] < shape[d])
      return true;
    idx[d] = 0;
  }
  return false;
}

} // namespace

void interpretKernel(const Kernel &k, void **buffers, const int64_t *params) {
  std::string err = verifyKernel(k);
  if (!err.empty())
    throw InternalError("interpretKernel: invalid kernel: " + err);
  const int R = k.rank;
  const int64_t nIn = (int64_t)k.inputs.size();
  const int64_t *shape = params;
  std::vector<int> kept, red = k.reduceDims;
  for (int d = 0; d < R; ++d)
    if (!isReducedDim(k, d))
      kept.push_back(d);
  for (int d : kept)
    if (shape[d] == 0)
      return;
  bool emptyRed = false;
  for (int d : red)
    emptyRed |= shape[d] == 0;

  const bool treeSum = deterministicTreeSum(k);
  std::vector<int64_t> idx(R, 0);
  std::vector<Sc> vals(k.nodes.size()), acc(k.stores.size());
  auto outOffset = [&](int o) {
    const int64_t *st = params + R * (1 + nIn + o);
    int64_t off = 0;
    for (int d = 0; d < R; ++d)
      off += idx[d] * st[d];
    return off;
  };
  do {
    if (k.reduce == KReduce::None) {
      evalPoint(k, buffers, params, idx.data(), vals);
      for (const KStore &s : k.stores) {
        DType t = k.outputs[s.output];
        if (!s.scatter()) {
          storeSc(t, buffers[nIn + s.output], outOffset(s.output), vals[s.node]);
          continue;
        }
        // out[idx with idx[dim] := key] += x, in the output's own precision.
        const int64_t *st = params + R * (1 + nIn + s.output);
        int64_t off = outOffset(s.output) + (vals[s.key].i - idx[s.dim]) * st[s.dim];
        Sc old = loadSc(t, buffers[nIn + s.output], off);
        old.f = t == DType::F32 ? (double)((float)old.f + (float)vals[s.node].f)
                                : old.f + vals[s.node].f;
        storeSc(t, buffers[nIn + s.output], off, old);
      }
      continue;
    }
    for (size_t s = 0; s < k.stores.size(); ++s)
      acc[s] = identity(k.reduce, k.outputs[k.stores[s].output]);
    if (treeSum && !emptyRed) {
      // Deterministic mode: leaves of kDeterministicBlock rows of the
      // outermost reduced dim, combined in the fixed tree (ir/DeterministicOrder.h).
      // A sum over the last dim: each leaf's float sums run in
      // kDeterministicChains chains by last-dim index, combined by chainTree.
      std::vector<DeterministicTree<double>> trees(k.stores.size());
      const int d0 = red[0];
      const bool chained = deterministicChains(k);
      std::vector<double> chains(k.stores.size() * kDeterministicChains, 0.0);
      bool more = true;
      while (more) {
        const int64_t leafEnd = std::min(shape[d0], idx[d0] + kDeterministicBlock);
        do {
          evalPoint(k, buffers, params, idx.data(), vals);
          const int64_t j = chained ? idx[R - 1] % kDeterministicChains : 0;
          for (size_t s = 0; s < k.stores.size(); ++s) {
            DType t = k.outputs[k.stores[s].output];
            if (chained && isFloat(t)) {
              Sc c;
              c.f = chains[s * kDeterministicChains + j];
              accumulate(k.reduce, t, c, vals[k.stores[s].node]);
              chains[s * kDeterministicChains + j] = c.f;
            } else {
              accumulate(k.reduce, t, acc[s], vals[k.stores[s].node]);
            }
          }
          more = advance(idx, red, shape);
        } while (more && idx[d0] < leafEnd);
        for (size_t s = 0; s < k.stores.size(); ++s)
          if (isFloat(k.outputs[k.stores[s].output])) { // integer sums: any order
            double *c = &chains[s * kDeterministicChains];
            trees[s].push(chained ? chainTree(c) : acc[s].f);
            std::fill(c, c + kDeterministicChains, 0.0);
            acc[s].f = 0;
          }
      }
      for (size_t s = 0; s < k.stores.size(); ++s)
        if (isFloat(k.outputs[k.stores[s].output]))
          acc[s].f = trees[s].finish();
    } else if (!emptyRed) {
      do {
        evalPoint(k, buffers, params, idx.data(), vals);
        for (size_t s = 0; s < k.stores.size(); ++s)
          accumulate(k.reduce, k.outputs[k.stores[s].output], acc[s], vals[k.stores[s].node]);
      } while (advance(idx, red, shape));
    }
    for (size_t s = 0; s < k.stores.size(); ++s) {
      int o = k.stores[s].output;
      storeSc(k.outputs[o], buffers[nIn + o], outOffset(o), acc[s]);
    }
  } while (advance(idx, kept, shape));
}

} // namespace dt
