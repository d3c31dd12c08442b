// This file defines the scalar semantics of `//` (floordiv) and `%` (mod),
// numpy's floor_divide and remainder (KernelIR.h states them in words). The
// kernel interpreter and the reference evaluator both call these; the LLVM
// and CUDA lowerings spell the same steps out and are tested against them.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace dt {

/// a // b on floats, computed in T (f32 stays f32).
template <class T> T floorDivF(T a, T b) {
  static_assert(std::is_floating_point_v<T>);
  if (b == T(0))
    return a / b;
  T m = std::fmod(a, b);
  T d = (a - m) / b;
  if (m != T(0) && ((b < T(0)) != (m < T(0))))
    d -= T(1);
  if (d == T(0))
    return std::copysign(T(0), a / b);
  T f = std::floor(d);
  if (d - f > T(0.5))
    f += T(1);
  return f;
}

/// a % b on floats: the sign of b (NaN for b = 0).
template <class T> T modF(T a, T b) {
  static_assert(std::is_floating_point_v<T>);
  T m = std::fmod(a, b);
  if (m != T(0)) {
    if ((b < T(0)) != (m < T(0)))
      m += b;
    return m;
  }
  return std::copysign(T(0), b);
}

/// a // b on signed integers: x // 0 = 0, INT_MIN // -1 wraps to INT_MIN.
template <class T> T floorDivI(T a, T b) {
  static_assert(std::is_integral_v<T> && std::is_signed_v<T>);
  if (b == 0)
    return 0;
  if (b == -1)
    return (T)(0 - (std::make_unsigned_t<T>)a);
  T q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? T(q - 1) : q;
}

/// a % b on signed integers: the sign of b; x % 0 = 0, x % -1 = 0.
template <class T> T modI(T a, T b) {
  static_assert(std::is_integral_v<T> && std::is_signed_v<T>);
  if (b == 0 || b == -1)
    return 0;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
}

} // namespace dt
