// This file defines dtensor's own f32 `exp`, `tanh`, `sigmoid`, `erf` (and
// so `gelu`), `log`, `log1p` and `expm1`: computed in f64 by a fixed sequence of IEEE additions,
// multiplications and one division, then rounded once to f32. The sequence
// has no table and no branch (both arms of a choice are computed, then one
// is selected), so a loop of them vectorizes; the kernel interpreter and the
// reference evaluator call these functions (codegen/ScalarOps.h), the LLVM
// lowering (codegen/LLVMMath.cpp) and the CUDA prelude spell out the same
// steps, so every backend gives the same bits. Nothing may contract a * b + c
// into an FMA (CMakeLists.txt: -ffp-contract=off; NVRTC: --fmad=false).
//
// exp: x clamped to [-150, 150] (beyond, the f32 result is 0 or inf already);
// n = x / ln 2 rounded to nearest-even by adding and subtracting 1.5 * 2^52;
// r = x - n ln 2 in two steps (ln 2 split so n * hi is exact), |r| <= ln2 / 2;
// exp(r) by its Taylor polynomial of degree 10 (relative error < 2^-41);
// times 2^n built from the bits. Checked over every 7th f32: at most 0.5004
// ulp from the true value (glibc's expf: 0.5016), NaN stays NaN.
// tanh: |x| < 1/16 by the odd Taylor polynomial x (1 + x^2 q(x^2)) to x^9;
// else (e - 1) / (e + 1) with e = exp(2|x|) in f64, the sign of x. At most
// 0.5000 ulp (glibc's tanhf: 2.16); -0 stays -0, +-inf give +-1.
// sigmoid: 1 / (1 + exp(-x)) all in f64, so it stays within 0.5 ulp where
// the f32 formula's exp(-x) overflows (x < -88: subnormal results, not 0).
// erf: see erfF32. At most 0.5000 ulp over every 7th f32 (glibc's erff: 0.90).
// log, log1p, expm1: see logForF32, log1pF32, expm1F32; at most 0.5000 ulp
// each over every 7th f32 (glibc's: 0.82, 0.83, 0.80).
// randn's log and cos (support/Random.h) are logForF32 and cosForNormal,
// equal to glibc's f64 log and cos rounded to f32 on every input randn has.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dt::fmath {

constexpr double kExpMax = 150.0, kExpMin = -150.0;
constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kShifter = 0x1.8p+52;          ///< 1.5 * 2^52: x + it rounds x to an integer
constexpr double kLn2Hi = 0x1.62e42fee00000p-1; ///< ln 2's leading 32 bits
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
/// exp(r)'s Taylor coefficients, highest first (Horner): 1/10! .. 1/1!, 1.
constexpr int kExpTerms = 11;
constexpr double kExpCoef[kExpTerms] = {1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
                                        1.0 / 720,     1.0 / 120,    1.0 / 24,    1.0 / 6,
                                        0.5,           1.0,          1.0};
constexpr double kTanhSmall = 0.0625;
/// tanh(x) = x (1 + x^2 q) for small x; q's coefficients in x^2, highest first.
constexpr int kTanhTerms = 4;
constexpr double kTanhCoef[kTanhTerms] = {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3};

inline double bitsToDouble(int64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
inline int64_t doubleToBits(double d) {
  int64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

/// c[0] x^(n-1) + ... + c[n-1] by Horner's rule.
inline double horner(const double *c, int n, double x) {
  double p = c[0];
  for (int i = 1; i < n; ++i)
    p = p * x + c[i];
  return p;
}

/// e^x in f64, relative error < 2^-40, for the f32 functions below (x
/// clamped to [kExpMin, kExpMax]; NaN gives NaN).
inline double expForF32(double x) {
  x = x > kExpMax ? kExpMax : x;
  x = x < kExpMin ? kExpMin : x;
  const double t = x * kInvLn2 + kShifter;
  const double n = t - kShifter;
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  const double p = horner(kExpCoef, kExpTerms, r);
  const int64_t k = doubleToBits(t) - doubleToBits(kShifter); // n, exactly
  return p * bitsToDouble((int64_t)((uint64_t)(k + 1023) << 52));
}

inline float expF32(float v) { return (float)expForF32(v); }

inline float tanhF32(float v) {
  const double x = v;
  const double ax = x < 0 ? -x : x;
  const double x2 = x * x;
  const double small = x * (1.0 + x2 * horner(kTanhCoef, kTanhTerms, x2));
  const double e = expForF32(ax + ax);
  const double big = (e - 1.0) / (e + 1.0);
  return (float)(ax < kTanhSmall ? small : x < 0 ? -big : big);
}

/// erf(x) / x for |x| < 1: its Taylor polynomial in x^2 to x^26 (the
/// coefficients 2 / sqrt(pi) (-1)^n / (n! (2n + 1)), highest first).
constexpr int kErfTerms = 14;
constexpr double kErfTaylor[kErfTerms] = {
    -0x1.d8453cb0c46eap-38, 0x1.9e6ad5e55a730p-34, -0x1.51d7181c5d36dp-30, 0x1.fcc5720624c1cp-27,
    -0x1.5f742ec43e71ap-23, 0x1.b9e6c9dc651a3p-20, -0x1.f4d25c3e0c2ebp-17, 0x1.f9a326f9b89b7p-14,
    -0x1.c02db40040b86p-11, 0x1.565bcd0e6a53fp-8,  -0x1.b82ce31288b51p-6,  0x1.ce2f21a042be2p-4,
    -0x1.812746b0379e7p-2,  0x1.20dd750429b6dp+0,
};
/// erfc(x) e^(x^2) on [1, 4] as a Chebyshev series in t = (2x - 5) / 3,
/// c0 halved (absolute error 1.4e-12; Clenshaw's recurrence sums it).
constexpr int kErfcTerms = 17;
constexpr double kErfcCheb[kErfcTerms] = {
    0x1.f4957d364d195p-3,  -0x1.165205361f2fcp-3,  0x1.23ec403b6e0e2p-5,  -0x1.231d388285abap-7,
    0x1.15aa8393bd21ap-9,  -0x1.fcfa3d136cb88p-12, 0x1.c1f0511e0a0cdp-14, -0x1.80d018509abbcp-16,
    0x1.3f3a7c23fd99ap-18, -0x1.016d995d87777p-20, 0x1.94598f602aaabp-23, -0x1.35c7d46eeeeefp-25,
    0x1.cfb1112444444p-28, -0x1.5372da2222222p-30, 0x1.e6ad4c0000000p-33, -0x1.55fca6eeeeeefp-35,
    0x1.d790377777777p-38,
};

/// erf: x (Taylor) for |x| < 1; 1 - exp(-x^2) erfcx(|x|) with the sign of x
/// for 1 <= |x| < 4; +-1 beyond (erfc(4) is below half an f32 ulp of 1).
/// NaN stays NaN, -0 stays -0.
inline float erfF32(float v) {
  const double x = v;
  const double ax = x < 0 ? -x : x;
  const double x2 = x * x;
  const double small = x * horner(kErfTaylor, kErfTerms, x2);
  const double a = ax > 4.0 ? 4.0 : ax;
  const double t = (a + a - 5.0) / 3.0;
  const double t2 = t + t;
  double b1 = 0, b2 = 0;
  for (int k = kErfcTerms - 1; k >= 1; --k) {
    const double b0 = (kErfcCheb[k] + t2 * b1) - b2;
    b2 = b1;
    b1 = b0;
  }
  const double g = (kErfcCheb[0] + t * b1) - b2;
  const double e = expForF32(-(a * a));
  const double r = ax >= 4.0 ? 1.0 : 1.0 - e * g;
  return (float)(ax < 1.0 ? small : x < 0 ? -r : r);
}

/// log(m) = s (2 + s^2 q(s^2)), s = (m - 1) / (m + 1): q's coefficients
/// 2 / (2k + 1) for k = 8 .. 1, highest first (|s| <= 0.172: error < 2^-50).
constexpr int kLogTerms = 8;
constexpr double kLogCoef[kLogTerms] = {2.0 / 17, 2.0 / 15, 2.0 / 13, 2.0 / 11,
                                        2.0 / 9,  2.0 / 7,  2.0 / 5,  2.0 / 3};
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;
/// expm1(x) = x p(x) for |x| < 1/16, p exp's polynomial but its last term
/// (kExpCoef's first kExpTerms - 1: 1/10! .. 1/1!).
constexpr double kExpm1Small = 0.0625;

/// log(x) in f64 for the f32 functions below, relative error < 2^-49: x =
/// m 2^e with m in [sqrt(1/2), sqrt(2)) from the bits, log m by its atanh
/// series, e ln 2 in two parts. 0 gives -inf, +inf gives +inf, a negative x
/// NaN, NaN itself.
inline double logForF32(double x) {
  const int64_t bits = doubleToBits(x);
  const int64_t e0 = (bits >> 52) - 1023;
  const double m0 = bitsToDouble((bits & 0x000fffffffffffff) | 0x3ff0000000000000);
  const bool high = m0 > kSqrt2;
  const double m = high ? m0 * 0.5 : m0;
  const double e = (double)(high ? e0 + 1 : e0);
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  const double lm = s * (2.0 + s2 * horner(kLogCoef, kLogTerms, s2));
  double r = e * kLn2Hi + (e * kLn2Lo + lm);
  r = x == INFINITY ? x : r;
  r = x == 0.0 ? -INFINITY : r;
  r = x < 0.0 ? NAN : r;
  return x != x ? x : r;
}

inline float logF32(float v) { return (float)logForF32(v); }

/// log(1 + x): with u = 1 + x rounded, log(u) x / (u - 1) (x when u is 1);
/// +inf stays +inf.
inline float log1pF32(float v) {
  const double x = v;
  const double u = 1.0 + x;
  const double r = logForF32(u) * (x / (u - 1.0));
  return (float)(x == INFINITY ? x : u == 1.0 ? x : r);
}

/// exp(x) - 1: x p(x) for |x| < 1/16, else exp(x) - 1 in f64.
inline float expm1F32(float v) {
  const double x = v;
  const double ax = x < 0 ? -x : x;
  const double small = x * horner(kExpCoef, kExpTerms - 1, x);
  return (float)(ax < kExpm1Small ? small : expForF32(x) - 1.0);
}

/// cos(x) in f64 for randn's Box-Muller angle (support/Random.h; x an f32 in
/// [0, 2 pi)): n = x 2/pi rounded, r = x - n pi/2 with pi/2 in three parts
/// (the first two of 33 bits, so n * part is exact and r is exact to its
/// last step), then cos r, -sin r, -cos r or sin r by n mod 4, each by its
/// Taylor polynomial to r^14 / r^15 (|r| <= pi/4). Rounded to f32 it equals
/// glibc's f64 cos rounded to f32 on every one of randn's 2^24 angles
/// (tests/unit/random_test.cpp checks them all).
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kPio2Part[3] = {0x1.921fb54400000p+0, 0x1.0b4611a600000p-34,
                                 0x1.3198a2e037073p-69};
/// cos r = 1 + r^2 c(r^2): (-1)^k / (2k)! for k = 7 .. 1, highest first.
constexpr int kCosTerms = 7;
constexpr double kCosCoef[kCosTerms] = {
    -1.0 / 87178291200, 1.0 / 479001600, -1.0 / 3628800, 1.0 / 40320,
    -1.0 / 720,         1.0 / 24,        -1.0 / 2};
/// sin r = r + r (r^2 s(r^2)): (-1)^k / (2k + 1)! for k = 7 .. 1.
constexpr double kSinCoef[kCosTerms] = {
    -1.0 / 1307674368000, 1.0 / 6227020800, -1.0 / 39916800, 1.0 / 362880,
    -1.0 / 5040,          1.0 / 120,        -1.0 / 6};

inline double cosForNormal(double x) {
  const double t = x * kTwoOverPi + kShifter;
  const double n = t - kShifter;
  const double r = ((x - n * kPio2Part[0]) - n * kPio2Part[1]) - n * kPio2Part[2];
  const double r2 = r * r;
  const double c = 1.0 + r2 * horner(kCosCoef, kCosTerms, r2);
  const double s = r + r * (r2 * horner(kSinCoef, kCosTerms, r2));
  const int64_t q = (doubleToBits(t) - doubleToBits(kShifter)) & 3; // n mod 4
  return q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

inline float sigmoidF32(float v) { return (float)(1.0 / (1.0 + expForF32(-(double)v))); }

} // namespace dt::fmath
