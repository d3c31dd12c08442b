// This file implements interpretKernel, the reference interpreter of the
// kernel IR (KernelIR.h): the executable statement of the IR's semantics and
// the oracle the LLVM and CUDA lowerings are tested against. It favours being
// obviously right over being fast: one element at a time, every node evaluated
// in its own dtype, reductions in row-major order of the reduced dims.
#include "codegen/KernelIR.h"
#include "codegen/FloorMod.h"

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

/// bf16/f16 compute in f32: the dtype their arithmetic is done in.
DType computeType(DType t) { return isLowPrecision(t) ? DType::F32 : t; }

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

int64_t intPow(DType t, int64_t b, int64_t e) {
  if (e < 0) {
    if (b == 1)
      return 1;
    if (b == -1)
      return (e & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, x = (uint64_t)b;
  for (uint64_t n = (uint64_t)e; n; n >>= 1) {
    if (n & 1)
      r *= x;
    x *= x;
  }
  return wrap(t, r);
}

// Float maximum/minimum as the reference evaluator (runtime/RefKernels.cpp).
double fmaximum(double a, double b) {
  return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? b : a);
}
double fminimum(double a, double b) {
  return (std::isnan(a) || std::isnan(b)) ? a + b : (b < a ? b : a);
}

/// Transcendental `op` on a float of dtype `t`, through the same libm entry
/// points the LLVM lowering calls.
double mathF(KOp op, DType t, double x) {
  if (computeType(t) == DType::F32) {
    float v = (float)x;
    switch (op) {
    case KOp::Exp:
      return ::expf(v);
    case KOp::Log:
      return ::logf(v);
    case KOp::Sqrt:
      return ::sqrtf(v);
    case KOp::Rsqrt:
      return 1.0f / ::sqrtf(v);
    case KOp::Tanh:
      return ::tanhf(v);
    case KOp::Sigmoid:
      return 1.0f / (1.0f + ::expf(-v));
    case KOp::Sin:
      return ::sinf(v);
    case KOp::Cos:
      return ::cosf(v);
    case KOp::Erf:
      return ::erff(v);
    case KOp::Log1p:
      return ::log1pf(v);
    case KOp::Expm1:
      return ::expm1f(v);
    default:
      break;
    }
  } else {
    switch (op) {
    case KOp::Exp:
      return ::exp(x);
    case KOp::Log:
      return ::log(x);
    case KOp::Sqrt:
      return ::sqrt(x);
    case KOp::Rsqrt:
      return 1.0 / ::sqrt(x);
    case KOp::Tanh:
      return ::tanh(x);
    case KOp::Sigmoid:
      return 1.0 / (1.0 + ::exp(-x));
    case KOp::Sin:
      return ::sin(x);
    case KOp::Cos:
      return ::cos(x);
    case KOp::Erf:
      return ::erf(x);
    case KOp::Log1p:
      return ::log1p(x);
    case KOp::Expm1:
      return ::expm1(x);
    default:
      break;
    }
  }
  throw InternalError("interpretKernel: not a transcendental op");
}

/// Binary float op in dtype t (f32 ops are computed as f32).
double binF(KOp op, DType t, double a, double b) {
  bool f32 = computeType(t) == DType::F32;
  float x = (float)a, y = (float)b;
  switch (op) {
  case KOp::Add:
    return f32 ? (double)(x + y) : a + b;
  case KOp::Sub:
    return f32 ? (double)(x - y) : a - b;
  case KOp::Mul:
    return f32 ? (double)(x * y) : a * b;
  case KOp::Div:
    return f32 ? (double)(x / y) : a / b;
  case KOp::Pow:
    return f32 ? (double)::powf(x, y) : ::pow(a, b);
  case KOp::Maximum:
    return fmaximum(a, b);
  case KOp::Minimum:
    return fminimum(a, b);
  case KOp::Mod:
    return f32 ? (double)modF(x, y) : modF(a, b);
  case KOp::FloorDiv:
    return f32 ? (double)floorDivF(x, y) : floorDivF(a, b);
  default:
    throw InternalError("interpretKernel: not a float binary op");
  }
}

int64_t binI(KOp op, DType t, int64_t a, int64_t b) {
  uint64_t x = (uint64_t)a, y = (uint64_t)b;
  switch (op) {
  case KOp::Add:
    return wrap(t, x + y);
  case KOp::Sub:
    return wrap(t, x - y);
  case KOp::Mul:
    return wrap(t, x * y);
  case KOp::Div:
    if (b == 0)
      return 0;
    if (b == -1)
      return wrap(t, 0 - x);
    return a / b;
  case KOp::Pow:
    return intPow(t, a, b);
  case KOp::Maximum:
    return a > b ? a : b;
  case KOp::Minimum:
    return a < b ? a : b;
  case KOp::Mod:
    return t == DType::I32 ? modI<int32_t>((int32_t)a, (int32_t)b) : modI(a, b);
  case KOp::FloorDiv:
    return t == DType::I32 ? floorDivI<int32_t>((int32_t)a, (int32_t)b) : floorDivI(a, b);
  default:
    throw InternalError("interpretKernel: not an int binary op");
  }
}

template <class T> bool compare(KOp op, T a, T b) {
  switch (op) {
  case KOp::Eq:
    return a == b;
  case KOp::Ne:
    return a != b;
  case KOp::Lt:
    return a < b;
  case KOp::Le:
    return a <= b;
  case KOp::Gt:
    return a > b;
  default:
    return a >= b;
  }
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
    case KOp::Const:
      if (isFloat(n.dtype))
        r.f = kernelConstFloat(n);
      else
        r.i = kernelConstInt(n);
      break;
    case KOp::Random: {
      uint64_t lin = 0;
      for (int d = 0; d < R; ++d)
        lin += (uint64_t)(goff[d] + idx[d]) * (uint64_t)gstr[d];
      r.f =
          n.random == RandomKind::Normal ? kernelNormal(n.seed, lin) : kernelUniform01(n.seed, lin);
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
    case KOp::Not:
      r.i = !A(0).i;
      break;
    case KOp::Neg:
      if (isFloat(n.dtype))
        r.f = -A(0).f;
      else
        r.i = wrap(n.dtype, 0 - (uint64_t)A(0).i);
      break;
    case KOp::Abs:
      if (isFloat(n.dtype))
        r.f = std::fabs(A(0).f);
      else
        r.i = A(0).i < 0 ? wrap(n.dtype, 0 - (uint64_t)A(0).i) : A(0).i;
      break;
    case KOp::Relu:
      if (isFloat(n.dtype))
        r.f = fmaximum(A(0).f, 0.0);
      else
        r.i = A(0).i > 0 ? A(0).i : 0;
      break;
    case KOp::Select:
      r = A(0).i ? A(1) : A(2);
      break;
    case KOp::And:
      r.i = A(0).i & A(1).i;
      break;
    case KOp::Or:
      r.i = A(0).i | A(1).i;
      break;
    default:
      if (isTranscendental(n.op))
        r.f = mathF(n.op, n.dtype, A(0).f);
      else if (isCompare(n.op))
        r.i = isFloat(AT(0)) ? compare(n.op, A(0).f, A(1).f) : compare(n.op, A(0).i, A(1).i);
      else if (isFloat(n.dtype))
        r.f = binF(n.op, n.dtype, A(0).f, A(1).f);
      else
        r.i = binI(n.op, n.dtype, A(0).i, A(1).i);
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
      acc.f = op == KReduce::Max ? fmaximum(acc.f, v.f) : fminimum(acc.f, v.f);
  } else {
    KOp bop = op == KReduce::Sum ? KOp::Add : op == KReduce::Max ? KOp::Maximum : KOp::Minimum;
    acc.i = binI(bop, t, acc.i, v.i);
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
      for (const KStore &s : k.stores)
        storeSc(k.outputs[s.output], buffers[nIn + s.output], outOffset(s.output), vals[s.node]);
      continue;
    }
    for (size_t s = 0; s < k.stores.size(); ++s)
      acc[s] = identity(k.reduce, k.outputs[k.stores[s].output]);
    if (!emptyRed) {
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
