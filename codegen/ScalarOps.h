// This file defines the scalar meaning of every arithmetic kernel node
// (KernelOps.def), once: the reference evaluator (runtime/RefKernels.cpp) and
// the kernel interpreter (KernelInterp.cpp) both compute through these, so
// LLVMCodegen and CudaEmitter are the only other spellings of an op, and
// both are tested against the interpreter. KernelIR.h states the same rules
// in words. Leaf and structural nodes (load, const, random, iota, gather, cast,
// select) are data movement or conversion, not arithmetic, and stay with
// their evaluators.
//
// T is the C++ type a dtype computes in: float (f32, and bf16/f16 widened),
// double, int32_t, int64_t, or uint8_t (bool). Integer arithmetic wraps
// (two's complement); float ops on float are float ops, never wider.
#pragma once

#include "codegen/FloorMod.h"
#include "codegen/KernelIR.h"
#include "support/Diagnostics.h"
#include "support/FloatMath.h"

#include <cmath>
#include <string>
#include <type_traits>

namespace dt {

template <class T> T wrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return (T)(U)((U)a + (U)b);
}
template <class T> T wrapSub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return (T)(U)((U)a - (U)b);
}
template <class T> T wrapMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return (T)(U)((U)a * (U)b);
}
template <class T> bool isNegative(T v) {
  if constexpr (std::is_signed_v<T>)
    return v < 0;
  else
    return false;
}

/// Integer `pow`: the exact power modulo 2^bits (square-and-multiply); for a
/// negative exponent the truncated real result (1, +-1 for base -1, else 0).
template <class T> T scalarPowInt(T b, T e) {
  if constexpr (std::is_signed_v<T>)
    if (e < 0)
      return b == 1 ? T(1) : b == -1 ? ((e & 1) ? T(-1) : T(1)) : T(0);
  T r = 1;
  while (e) {
    if (e & 1)
      r = wrapMul(r, b);
    b = wrapMul(b, b);
    e >>= 1;
  }
  return r;
}

[[noreturn]] inline void scalarNotDefined(KOp op, const char *what) {
  throw InternalError(std::string("scalar op `") + kopName(op) + "` is not " + what);
}

/// A unary node (arity 1, but `cast`) on a T. Transcendentals are defined on
/// floats only (the reference evaluator computes integer ones in double);
/// f32 exp, tanh, sigmoid, erf, log, log1p and expm1 are dtensor's own (support/FloatMath.h), the
/// others and every f64 one the C library's.
template <class T> T scalarUnary(KOp op, T v) {
  if constexpr (std::is_same_v<T, float>) {
    switch (op) {
    case KOp::Exp:
      return fmath::expF32(v);
    case KOp::Tanh:
      return fmath::tanhF32(v);
    case KOp::Sigmoid:
      return fmath::sigmoidF32(v);
    case KOp::Erf:
      return fmath::erfF32(v);
    case KOp::Log:
      return fmath::logF32(v);
    case KOp::Log1p:
      return fmath::log1pF32(v);
    case KOp::Expm1:
      return fmath::expm1F32(v);
    default:
      break;
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
    case KOp::Neg:
      return -v;
    case KOp::Exp:
      return std::exp(v);
    case KOp::Log:
      return std::log(v);
    case KOp::Sqrt:
      return std::sqrt(v);
    case KOp::Rsqrt:
      return T(1) / std::sqrt(v);
    case KOp::Tanh:
      return std::tanh(v);
    case KOp::Sigmoid:
      return T(1) / (T(1) + std::exp(-v));
    case KOp::Relu: // NaN and -0 pass through
      return v < T(0) ? T(0) : v;
    case KOp::Abs:
      return std::fabs(v);
    case KOp::Sin:
      return std::sin(v);
    case KOp::Cos:
      return std::cos(v);
    case KOp::Erf:
      return std::erf(v);
    case KOp::Log1p:
      return std::log1p(v);
    case KOp::Expm1:
      return std::expm1(v);
    case KOp::Not:
      return v == T(0) ? T(1) : T(0);
    default:
      break;
    }
  } else {
    switch (op) {
    case KOp::Neg:
      return wrapSub<T>(T(0), v);
    case KOp::Abs:
      return isNegative(v) ? wrapSub<T>(T(0), v) : v;
    case KOp::Relu:
      return isNegative(v) ? T(0) : v;
    case KOp::Not:
      return v == 0 ? T(1) : T(0);
    default:
      break;
    }
  }
  scalarNotDefined(op, "a unary op on this type");
}

/// An arithmetic binary node (add sub mul div pow maximum minimum mod
/// floordiv) on two T's.
template <class T> T scalarBinary(KOp op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
    case KOp::Add:
      return a + b;
    case KOp::Sub:
      return a - b;
    case KOp::Mul:
      return a * b;
    case KOp::Div:
      return a / b;
    case KOp::Pow: // a square is one multiply (numpy's `x ** 2`), not the libm call
      return b == T(2) ? a * a : std::pow(a, b);
    case KOp::Maximum:
      return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? b : a);
    case KOp::Minimum:
      return (std::isnan(a) || std::isnan(b)) ? a + b : (b < a ? b : a);
    case KOp::Mod:
      return modF(a, b);
    case KOp::FloorDiv:
      return floorDivF(a, b);
    default:
      break;
    }
  } else {
    switch (op) {
    case KOp::Add:
      return wrapAdd(a, b);
    case KOp::Sub:
      return wrapSub(a, b);
    case KOp::Mul:
      return wrapMul(a, b);
    case KOp::Div:
      if (b == 0)
        return 0;
      if constexpr (std::is_signed_v<T>)
        if (b == -1)
          return wrapSub<T>(T(0), a); // avoids INT_MIN / -1 overflow
      return a / b;
    case KOp::Pow:
      return scalarPowInt(a, b);
    case KOp::Maximum:
      return a < b ? b : a;
    case KOp::Minimum:
      return b < a ? b : a;
    case KOp::Mod:
      if constexpr (std::is_signed_v<T>)
        return modI(a, b);
      break;
    case KOp::FloorDiv:
      if constexpr (std::is_signed_v<T>)
        return floorDivI(a, b);
      break;
    default:
      break;
    }
  }
  scalarNotDefined(op, "an arithmetic op on this type");
}

/// A predicate node (eq ne lt le gt ge, and `and`/`or` on non-zero as true).
/// Floats compare ordered except `ne` (NaN != x is true).
template <class T> bool scalarPredicate(KOp op, T a, T b) {
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
  case KOp::Ge:
    return a >= b;
  case KOp::And:
    return a != T(0) && b != T(0);
  case KOp::Or:
    return a != T(0) || b != T(0);
  default:
    break;
  }
  scalarNotDefined(op, "a predicate");
}

/// True for the nodes scalarPredicate defines (bool result).
inline bool isPredicate(KOp op) { return isCompare(op) || op == KOp::And || op == KOp::Or; }

} // namespace dt
