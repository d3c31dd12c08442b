// This file implements cudaPrelude(): the device helpers that every kernel
// emitted by codegen/CudaEmitter starts with. Each helper is the CUDA spelling
// of one rule of codegen/KernelIR.h (and of the matching code in
// KernelInterp.cpp, the oracle); keep them in step.
#include "codegen/CudaEmitter.h"
#include "support/FloatMath.h"

#include <cstdio>
#include <string>
#include <utility>

namespace dt {

namespace {

/// `{c0, c1, ...}` in hexadecimal floating point: exactly the doubles given.
std::string table(const double *c, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a", c[i]);
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + "}";
}

/// The prelude with each `@name@` replaced by support/FloatMath.h's table or
/// size of that name, so the host and the device share one set of numbers.
std::string withFloatMathTables(std::string text) {
  using namespace fmath;
  const std::pair<const char *, std::string> names[] = {
      {"@kExpTerms@", std::to_string(kExpTerms)},   {"@kExpCoef@", table(kExpCoef, kExpTerms)},
      {"@kTanhTerms@", std::to_string(kTanhTerms)}, {"@kTanhCoef@", table(kTanhCoef, kTanhTerms)},
      {"@kErfTerms@", std::to_string(kErfTerms)},   {"@kErfTaylor@", table(kErfTaylor, kErfTerms)},
      {"@kErfcTerms@", std::to_string(kErfcTerms)}, {"@kErfcCheb@", table(kErfcCheb, kErfcTerms)},
      {"@kLogTerms@", std::to_string(kLogTerms)},   {"@kLogCoef@", table(kLogCoef, kLogTerms)},
      {"@kCosTerms@", std::to_string(kCosTerms)},   {"@kCosCoef@", table(kCosCoef, kCosTerms)},
      {"@kSinCoef@", table(kSinCoef, kCosTerms)},
  };
  for (const auto &[name, value] : names)
    for (size_t at; (at = text.find(name)) != std::string::npos;)
      text.replace(at, std::string(name).size(), value);
  return text;
}

} // namespace

const char *cudaPrelude() {
  static const std::string text = withFloatMathTables(
      R"CUDA(// dtensor CUDA prelude: the kernel IR's scalar rules (codegen/KernelIR.h).
typedef unsigned long long dt_u64;
typedef long long dt_i64;

// RNG: rngBits(s, i) = splitmix64(splitmix64(s) ^ i); the emitter folds the
// inner splitmix64(s) to a constant `ks`.
__device__ __forceinline__ dt_u64 dt_splitmix64(dt_u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ float dt_uniform01(dt_u64 ks, dt_u64 i) {
  return (float)(dt_splitmix64(ks ^ i) >> 40) * 0x1p-24f;
}
// maximum/minimum: NaN in either operand gives a + b; else (a < b ? b : a)
// and (b < a ? b : a), so equal values (+0/-0) give a.
__device__ __forceinline__ float dt_fmax(float a, float b) {
  return (a != a || b != b) ? a + b : (a < b ? b : a);
}
__device__ __forceinline__ double dt_fmax(double a, double b) {
  return (a != a || b != b) ? a + b : (a < b ? b : a);
}
// exp, tanh, sigmoid, erf, log, log1p and expm1 on f32 (bf16/f16 compute in
// f32), and randn's log and cos: the steps of support/FloatMath.h, in f64,
// rounded once, so the bits equal the CPU's (--fmad=false keeps every
// a * b + c two roundings, as there). Each `@table@` is FloatMath.h's own
// table, written in by cudaPrelude() in hexadecimal (the same doubles).
// c[0] x^(N-1) + ... + c[N-1] by Horner's rule (fmath::horner).
template <int N> __device__ __forceinline__ double dt_horner(const double *c, double x) {
  double p = c[0];
#pragma unroll
  for (int i = 1; i < N; ++i)
    p = p * x + c[i];
  return p;
}
__device__ __forceinline__ double dt_exp_for_f32(double x) {
  const double coef[@kExpTerms@] = @kExpCoef@;
  x = x > 150.0 ? 150.0 : x;
  x = x < -150.0 ? -150.0 : x;
  const double t = x * 0x1.71547652b82fep+0 + 0x1.8p+52;
  const double n = t - 0x1.8p+52;
  const double r = (x - n * 0x1.62e42fee00000p-1) - n * 0x1.a39ef35793c76p-33;
  const double p = dt_horner<@kExpTerms@>(coef, r);
  const dt_i64 k = __double_as_longlong(t) - __double_as_longlong(0x1.8p+52);
  return p * __longlong_as_double((dt_i64)((dt_u64)(k + 1023) << 52));
}
__device__ __forceinline__ float dt_expf(float v) { return (float)dt_exp_for_f32((double)v); }
__device__ __forceinline__ float dt_tanhf(float v) {
  const double coef[@kTanhTerms@] = @kTanhCoef@;
  const double x = v;
  const double ax = x < 0 ? -x : x;
  const double x2 = x * x;
  const double small = x * (1.0 + x2 * dt_horner<@kTanhTerms@>(coef, x2));
  const double e = dt_exp_for_f32(ax + ax);
  const double big = (e - 1.0) / (e + 1.0);
  return (float)(ax < 0.0625 ? small : x < 0 ? -big : big);
}
__device__ __forceinline__ float dt_erff(float v) {
  const double taylor[@kErfTerms@] = @kErfTaylor@;
  const double cheb[@kErfcTerms@] = @kErfcCheb@;
  const double x = v;
  const double ax = x < 0 ? -x : x;
  const double x2 = x * x;
  const double small = x * dt_horner<@kErfTerms@>(taylor, x2);
  const double a = ax > 4.0 ? 4.0 : ax;
  const double t = (a + a - 5.0) / 3.0;
  const double t2 = t + t;
  double b1 = 0, b2 = 0;
#pragma unroll
  for (int k = @kErfcTerms@ - 1; k >= 1; --k) {
    const double b0 = (cheb[k] + t2 * b1) - b2;
    b2 = b1;
    b1 = b0;
  }
  const double g = (cheb[0] + t * b1) - b2;
  const double e = dt_exp_for_f32(-(a * a));
  const double r = ax >= 4.0 ? 1.0 : 1.0 - e * g;
  return (float)(ax < 1.0 ? small : x < 0 ? -r : r);
}
__device__ __forceinline__ double dt_log_for_f32(double x) {
  const double coef[@kLogTerms@] = @kLogCoef@;
  const dt_i64 bits = __double_as_longlong(x);
  const dt_i64 e0 = (bits >> 52) - 1023;
  const double m0 = __longlong_as_double((bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
  const bool high = m0 > 0x1.6a09e667f3bcdp+0;
  const double m = high ? m0 * 0.5 : m0;
  const double e = (double)(high ? e0 + 1 : e0);
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  const double lm = s * (2.0 + s2 * dt_horner<@kLogTerms@>(coef, s2));
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  double r = e * 0x1.62e42fee00000p-1 + (e * 0x1.a39ef35793c76p-33 + lm);
  r = x == inf ? x : r;
  r = x == 0.0 ? -inf : r;
  r = x < 0.0 ? __longlong_as_double(0x7ff8000000000000LL) : r;
  return x != x ? x : r;
}
// randn's cos (support/FloatMath.h cosForNormal) and Box-Muller with it and
// dt_log_for_f32 (support/Random.h): the host's steps, so the host's bits.
__device__ __forceinline__ double dt_cos_for_normal(double x) {
  const double cosCoef[@kCosTerms@] = @kCosCoef@;
  const double sinCoef[@kCosTerms@] = @kSinCoef@;
  const double t = x * 0x1.45f306dc9c883p-1 + 0x1.8p+52;
  const double n = t - 0x1.8p+52;
  const double r = ((x - n * 0x1.921fb54400000p+0) - n * 0x1.0b4611a600000p-34) -
                   n * 0x1.3198a2e037073p-69;
  const double r2 = r * r;
  const double cr = 1.0 + r2 * dt_horner<@kCosTerms@>(cosCoef, r2);
  const double sr = r + r * (r2 * dt_horner<@kCosTerms@>(sinCoef, r2));
  const dt_i64 q = (__double_as_longlong(t) - __double_as_longlong(0x1.8p+52)) & 3;
  return q == 0 ? cr : q == 1 ? -sr : q == 2 ? -cr : sr;
}
__device__ __forceinline__ float dt_normal(dt_u64 ks, dt_u64 i) {
  const float u1 = dt_uniform01(ks, 2 * i), u2 = dt_uniform01(ks, 2 * i + 1);
  const float twoPi = 0x1.921fb6p+2f; // (float)(2 * pi)
  const float lg = (float)dt_log_for_f32((double)(1.0f - u1));
  const float cs = (float)dt_cos_for_normal((double)(twoPi * u2));
  return sqrtf(-2.0f * lg) * cs;
}
__device__ __forceinline__ float dt_logf(float v) { return (float)dt_log_for_f32((double)v); }
__device__ __forceinline__ float dt_log1pf(float v) {
  const double x = v;
  const double u = 1.0 + x;
  const double r = dt_log_for_f32(u) * (x / (u - 1.0));
  return (float)(x == __longlong_as_double(0x7ff0000000000000LL) ? x : u == 1.0 ? x : r);
}
__device__ __forceinline__ float dt_expm1f(float v) {
  // exp's polynomial but its last term (fmath::expm1F32).
  const double coef[@kExpTerms@] = @kExpCoef@;
  const double x = v;
  const double ax = x < 0 ? -x : x;
  const double small = x * dt_horner<@kExpTerms@ - 1>(coef, x);
  return (float)(ax < 0.0625 ? small : dt_exp_for_f32(x) - 1.0);
}
__device__ __forceinline__ float dt_sigmoidf(float v) {
  return (float)(1.0 / (1.0 + dt_exp_for_f32(-(double)v)));
}

__device__ __forceinline__ float dt_fmin(float a, float b) {
  return (a != a || b != b) ? a + b : (b < a ? b : a);
}
__device__ __forceinline__ double dt_fmin(double a, double b) {
  return (a != a || b != b) ? a + b : (b < a ? b : a);
}

// float -> int: truncate toward zero, saturate, NaN -> 0 (f32 widens exactly).
__device__ __forceinline__ int dt_sat_i32(double v) {
  return v != v ? 0
       : v >= 2147483648.0 ? 2147483647
       : v <= -2147483649.0 ? (-2147483647 - 1)
       : (int)v;
}
__device__ __forceinline__ dt_i64 dt_sat_i64(double v) {
  return v != v ? 0
       : v >= 9223372036854775808.0 ? 9223372036854775807LL
       : v < -9223372036854775808.0 ? (-9223372036854775807LL - 1)
       : (dt_i64)v;
}

// Integers wrap (two's complement): arithmetic goes through unsigned types.
__device__ __forceinline__ int dt_wrap32(unsigned v) { return (int)v; }
__device__ __forceinline__ dt_i64 dt_wrap64(dt_u64 v) { return (dt_i64)v; }
// x / 0 = 0; INT_MIN / -1 = INT_MIN; otherwise truncating.
__device__ __forceinline__ int dt_idiv(int a, int b) {
  return b == 0 ? 0 : b == -1 ? dt_wrap32(0u - (unsigned)a) : a / b;
}
__device__ __forceinline__ dt_i64 dt_idiv(dt_i64 a, dt_i64 b) {
  return b == 0 ? 0 : b == -1 ? dt_wrap64(0ull - (dt_u64)a) : a / b;
}
// `//` and `%` as numpy (codegen/FloorMod.h): ints x // 0 = x % 0 = 0 and a
// divisor of -1 apart (INT_MIN / -1 traps); floats through fmod.
__device__ __forceinline__ int dt_floordiv(int a, int b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return dt_wrap32(0u - (unsigned)a);
  int q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ dt_i64 dt_floordiv(dt_i64 a, dt_i64 b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return dt_wrap64(0ull - (dt_u64)a);
  dt_i64 q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ int dt_mod(int a, int b) {
  if (b == 0 || b == -1)
    return 0;
  int r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ dt_i64 dt_mod(dt_i64 a, dt_i64 b) {
  if (b == 0 || b == -1)
    return 0;
  dt_i64 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ float dt_floordiv(float a, float b) {
  if (b == 0.0f)
    return a / b;
  float m = fmodf(a, b), d = (a - m) / b;
  if (m != 0.0f && ((b < 0.0f) != (m < 0.0f)))
    d -= 1.0f;
  if (d == 0.0f)
    return copysignf(0.0f, a / b);
  float f = floorf(d);
  return d - f > 0.5f ? f + 1.0f : f;
}
__device__ __forceinline__ double dt_floordiv(double a, double b) {
  if (b == 0.0)
    return a / b;
  double m = fmod(a, b), d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0)))
    d -= 1.0;
  if (d == 0.0)
    return copysign(0.0, a / b);
  double f = floor(d);
  return d - f > 0.5 ? f + 1.0 : f;
}
__device__ __forceinline__ float dt_mod(float a, float b) {
  float m = fmodf(a, b);
  if (m != 0.0f)
    return ((b < 0.0f) != (m < 0.0f)) ? m + b : m;
  return copysignf(0.0f, b);
}
__device__ __forceinline__ double dt_mod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0.0)
    return ((b < 0.0) != (m < 0.0)) ? m + b : m;
  return copysign(0.0, b);
}
// Exact power modulo 2^64 by square-and-multiply; a negative exponent gives
// the truncated real result (1 for base 1, +-1 for base -1, else 0).
__device__ __forceinline__ dt_u64 dt_ipow_bits(dt_i64 b, dt_i64 e) {
  if (e < 0)
    return b == 1 ? 1ull : b == -1 ? ((e & 1) ? ~0ull : 1ull) : 0ull;
  dt_u64 r = 1, x = (dt_u64)b;
  for (dt_u64 n = (dt_u64)e; n; n >>= 1) {
    if (n & 1)
      r *= x;
    x *= x;
  }
  return r;
}
__device__ __forceinline__ int dt_ipow(int b, int e) {
  return dt_wrap32((unsigned)dt_ipow_bits(b, e));
}
__device__ __forceinline__ dt_i64 dt_ipow(dt_i64 b, dt_i64 e) {
  return dt_wrap64(dt_ipow_bits(b, e));
}

// bf16/f16: 16-bit patterns in memory, f32 in registers; the algorithms of
// support/LowPrecision.h (round to nearest even, NaN kept, f16 overflow to
// inf, subnormals kept), in integer arithmetic so -ftz cannot change them.
__device__ __forceinline__ float dt_bf16_to_f32(unsigned short h) {
  return __uint_as_float((unsigned)h << 16);
}
__device__ __forceinline__ unsigned short dt_f32_to_bf16(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    const unsigned r = u >> 16;
    return (unsigned short)((r & 0x7fu) ? r : (r | 0x40u));
  }
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float dt_f16_to_f32(unsigned short h) {
  const unsigned sign = ((unsigned)h & 0x8000u) << 16, e = ((unsigned)h >> 10) & 0x1fu,
                 m = (unsigned)h & 0x3ffu;
  if (e == 0)
    return __uint_as_float(__float_as_uint((float)m * 0x1p-24f) | sign);
  if (e == 31)
    return __uint_as_float(sign | 0x7f800000u | (m << 13));
  return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}
__device__ __forceinline__ unsigned short dt_f32_to_f16(float f) {
  unsigned u = __float_as_uint(f);
  const unsigned sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  unsigned o;
  if (u >= 0x47800000u) {
    const unsigned m = (u >> 13) & 0x3ffu;
    o = u > 0x7f800000u ? (0x7c00u | (m ? m : 0x200u)) : 0x7c00u;
  } else if (u < 0x38800000u) {
    o = __float_as_uint(__fadd_rn(__uint_as_float(u), 0.5f)) - 0x3f000000u;
  } else {
    o = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
  }
  return (unsigned short)(o | sign);
}
__device__ __forceinline__ float dt_round_bf16(float f) { return dt_bf16_to_f32(dt_f32_to_bf16(f)); }
__device__ __forceinline__ float dt_round_f16(float f) { return dt_f16_to_f32(dt_f32_to_f16(f)); }
// f64 -> f32 rounding to odd: a later RNE to bf16/f16 is then one rounding.
__device__ __forceinline__ float dt_f64_to_f32_odd(double d) {
  const float f = __double2float_rn(d);
  const double back = (double)f;
  if (back == d || d != d)
    return f;
  unsigned u = __float_as_uint(f);
  if (fabs(back) > fabs(d))
    u -= 1u;
  return __uint_as_float(u | 1u);
}

// Four consecutive elements of M (the memory type) from p: one 16-byte (or
// 4-byte) load when p is aligned, else four scalar loads. A broadcast scalar
// operand (`scalar`) reads p[0] once for all four.
template <class M>
__device__ __forceinline__ void dt_ld4(const M *__restrict__ p, bool scalar, M (&x)[4]) {
  if (scalar) {
    x[0] = x[1] = x[2] = x[3] = p[0];
    return;
  }
  constexpr int kBytes = 4 * (int)sizeof(M);
  constexpr dt_u64 kAlign = kBytes < 16 ? kBytes : 16;
  if (((dt_u64)p & (kAlign - 1)) == 0) {
    if constexpr (kBytes == 4) {
      union { unsigned u; M m[4]; } v;
      v.u = *reinterpret_cast<const unsigned *>(p);
      x[0] = v.m[0]; x[1] = v.m[1]; x[2] = v.m[2]; x[3] = v.m[3];
    } else if constexpr (kBytes == 8) {
      union { uint2 u; M m[4]; } v;
      v.u = *reinterpret_cast<const uint2 *>(p);
      x[0] = v.m[0]; x[1] = v.m[1]; x[2] = v.m[2]; x[3] = v.m[3];
    } else if constexpr (kBytes == 16) {
      union { uint4 u; M m[4]; } v;
      v.u = *reinterpret_cast<const uint4 *>(p);
      x[0] = v.m[0]; x[1] = v.m[1]; x[2] = v.m[2]; x[3] = v.m[3];
    } else {
      union { uint4 u[2]; M m[4]; } v;
      v.u[0] = reinterpret_cast<const uint4 *>(p)[0];
      v.u[1] = reinterpret_cast<const uint4 *>(p)[1];
      x[0] = v.m[0]; x[1] = v.m[1]; x[2] = v.m[2]; x[3] = v.m[3];
    }
  } else {
    x[0] = p[0]; x[1] = p[1]; x[2] = p[2]; x[3] = p[3];
  }
}
template <class M>
__device__ __forceinline__ void dt_st4(M *__restrict__ p, const M (&x)[4]) {
  constexpr int kBytes = 4 * (int)sizeof(M);
  constexpr dt_u64 kAlign = kBytes < 16 ? kBytes : 16;
  if (((dt_u64)p & (kAlign - 1)) == 0) {
    if constexpr (kBytes == 4) {
      union { unsigned u; M m[4]; } v;
      v.m[0] = x[0]; v.m[1] = x[1]; v.m[2] = x[2]; v.m[3] = x[3];
      *reinterpret_cast<unsigned *>(p) = v.u;
    } else if constexpr (kBytes == 8) {
      union { uint2 u; M m[4]; } v;
      v.m[0] = x[0]; v.m[1] = x[1]; v.m[2] = x[2]; v.m[3] = x[3];
      *reinterpret_cast<uint2 *>(p) = v.u;
    } else if constexpr (kBytes == 16) {
      union { uint4 u; M m[4]; } v;
      v.m[0] = x[0]; v.m[1] = x[1]; v.m[2] = x[2]; v.m[3] = x[3];
      *reinterpret_cast<uint4 *>(p) = v.u;
    } else {
      union { uint4 u[2]; M m[4]; } v;
      v.m[0] = x[0]; v.m[1] = x[1]; v.m[2] = x[2]; v.m[3] = x[3];
      reinterpret_cast<uint4 *>(p)[0] = v.u[0];
      reinterpret_cast<uint4 *>(p)[1] = v.u[1];
    }
  } else {
    p[0] = x[0]; p[1] = x[1]; p[2] = x[2]; p[3] = x[3];
  }
}

// Warp-wide combination (all 32 lanes take part; every lane gets the result).
template <class T, class F>
__device__ __forceinline__ T dt_warp_reduce(T v, F combine) {
  for (int off = 16; off > 0; off >>= 1)
    v = combine(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
// The same in order: lane 0 gets combine over lanes 0, 1, ..., 31 as
// neighbours pair up ((v0 v1) (v2 v3)) ((v4 v5) ...), so when lane l holds
// the l-th run of a sequence, ties (max of -0 and +0) resolve as a left fold.
template <class T, class F>
__device__ __forceinline__ T dt_warp_reduce_ordered(T v, F combine) {
  const int lane = threadIdx.x & 31;
  for (int off = 1; off < 32; off <<= 1) {
    const T w = __shfl_xor_sync(0xffffffffu, v, off);
    v = (lane & off) ? combine(w, v) : combine(v, w);
  }
  return v;
}
)CUDA");
  return text.c_str();
}

} // namespace dt
