// This file implements the small templates shared by the reference kernels:
// dtype dispatch, the value conversions of `cast` and an odometer over a
// shape that tracks several strided offsets at once. Internal to
// runtime/RefKernels*.cpp. Wrapping integer arithmetic and the scalar ops
// come from codegen/ScalarOps.h.
#pragma once

#include "codegen/ScalarOps.h"
#include "runtime/HostTensor.h"
#include "support/Diagnostics.h"
#include "support/LowPrecision.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

namespace dt::ref {

/// Calls f(T{}) with T the C++ element type of a dtype that has arithmetic
/// (bool is uint8_t). bf16/f16 have none: callers widen them to f32 first
/// (`widen`), so reaching them here is a bug.
template <class F> void dispatchNum(DType t, F &&f) {
  switch (t) {
  case DType::F32:
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
  case DType::BF16:
  case DType::F16:
    break;
  }
  throw InternalError(std::string("reference evaluator: no arithmetic on `") + dtypeName(t) +
                      "` (widen it to f32 first)");
}

/// Calls f(T{}) for every dtype, bf16/f16 as their storage structs: for code
/// that only moves or converts elements.
template <class F> void dispatch(DType t, F &&f) {
  if (t == DType::BF16)
    f(bf16_t{});
  else if (t == DType::F16)
    f(f16_t{});
  else
    dispatchNum(t, std::forward<F>(f));
}

template <class T> constexpr bool isLowT = std::is_same_v<T, bf16_t> || std::is_same_v<T, f16_t>;

/// The `cast` conversion: to bool is `!= 0`; float -> int truncates,
/// saturates and maps NaN to 0; int -> int wraps; to bf16/f16 rounds to
/// nearest even from the value as an f64 (exact for every source but i64);
/// from bf16/f16 widens exactly to f32 first.
template <class D, class S> D convert(S v) {
  if constexpr (std::is_same_v<S, bf16_t>) {
    return convert<D>(bf16ToFloat(v.bits));
  } else if constexpr (std::is_same_v<S, f16_t>) {
    return convert<D>(halfToFloat(v.bits));
  } else if constexpr (std::is_same_v<D, bf16_t>) {
    return bf16_t{doubleToBf16((double)v)};
  } else if constexpr (std::is_same_v<D, f16_t>) {
    return f16_t{doubleToHalf((double)v)};
  } else if constexpr (std::is_same_v<D, uint8_t>) {
    return v != S(0) ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<D>) {
    return (D)v;
  } else if constexpr (std::is_floating_point_v<S>) {
    if (std::isnan(v))
      return 0;
    if (v <= (S)std::numeric_limits<D>::min())
      return std::numeric_limits<D>::min();
    if (v >= (S)std::numeric_limits<D>::max())
      return std::numeric_limits<D>::max();
    return (D)v;
  } else {
    return (D)v; // modular since C++20
  }
}

/// `x` as f32 when it is bf16/f16 (exact), else `x` itself.
HostTensor widen(const HostTensor &x);

/// Index `j` of an i32/i64 id tensor (index_select, index_add).
int64_t idAt(const HostTensor &ids, int64_t j);
/// idAt, or RuntimeFault "`op`: index I is out of range for dim D of size N"
/// unless 0 <= id < bound (every backend's message).
int64_t checkedId(const char *op, const HostTensor &ids, int64_t j, int64_t dim, int64_t bound);

/// Strides (in elements) to read a tensor of shape `in` broadcast to `out`:
/// right-aligned, 0 for stretched and missing leading dims.
inline std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                             const std::vector<int64_t> &out) {
  std::vector<int64_t> s(out.size(), 0), rs = rowMajorStrides(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    s[lead + i] = (in[i] == 1 && out[lead + i] != 1) ? 0 : rs[i];
  return s;
}

/// Visits every index of `shape` in row-major order, calling fn(offsets)
/// where offsets[j] = sum_d index[d] * strides[j][d].
template <class F>
void forEachIndex(const std::vector<int64_t> &shape,
                  std::initializer_list<const std::vector<int64_t> *> strides, F &&fn) {
  std::vector<const std::vector<int64_t> *> st(strides);
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  if (n == 0)
    return;
  int r = (int)shape.size();
  std::vector<int64_t> idx(r, 0), off(st.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    fn((const int64_t *)off.data());
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t j = 0; j < st.size(); ++j)
        off[j] += (*st[j])[d];
      if (idx[d] < shape[d])
        break;
      for (size_t j = 0; j < st.size(); ++j)
        off[j] -= (*st[j])[d] * shape[d];
      idx[d] = 0;
    }
  }
}

} // namespace dt::ref
