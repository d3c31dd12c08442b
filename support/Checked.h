// This file implements overflow-checked integer arithmetic for every size,
// element count, product, offset and device id that enters the compiler from a
// program. Sizes are int64_t; a product that does not fit is `std::nullopt`,
// which the caller turns into a diagnostic at the source location (signed
// overflow is undefined behaviour in C++, and a wrapped element count makes
// the kernels read and write out of bounds).
//
// It sits in support/, the bottom layer every other layer includes, so that types,
// shape inference, the front end and the runtime share one definition.
#pragma once

#include <cstdint>
#include <optional>

namespace dt {

/// `a * b`, or nullopt when it overflows int64_t.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// `a + b`, or nullopt when it overflows int64_t.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// The product of `values` (1 when empty), or nullopt when it overflows.
template <class Range, class Proj>
std::optional<int64_t> checkedProduct(const Range &values, Proj proj) {
  int64_t n = 1;
  for (const auto &v : values) {
    auto p = checkedMul(n, proj(v));
    if (!p)
      return std::nullopt;
    n = *p;
  }
  return n;
}

/// A double that holds an integer (a number literal) as int64_t, or nullopt
/// when it is not integral or does not fit (a plain cast would be undefined).
inline std::optional<int64_t> doubleToInt64(double v) {
  // 2^63 is exactly representable; every double below it in magnitude fits.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || v != (double)(int64_t)v)
    return std::nullopt;
  return (int64_t)v;
}

} // namespace dt
