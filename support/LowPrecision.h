// This file implements the conversions of the 16-bit storage types `bf16`
// (bfloat16: 1 sign, 8 exponent, 7 mantissa bits) and `f16` (IEEE binary16:
// 1, 5, 10) to and from f32 and f64, by bit manipulation only: the same
// algorithms are written out in the LLVM lowering (codegen/LLVMCodegen.cpp)
// and the CUDA prelude (codegen/CudaPrelude.cpp), so every backend rounds
// alike and none needs a compiler-rt helper (`__truncsfbf2`) or a CPU feature.
//
// The rules (docs/language.md, "Low-precision types"):
//  * widening (bf16/f16 -> f32, hence f64) is exact, NaN payloads included;
//  * narrowing rounds to nearest, ties to even; a value beyond the largest
//    finite one rounds to infinity (f16: 65520 and up); subnormals are kept;
//    -0.0 stays -0.0;
//  * a NaN stays a NaN with its sign and its top payload bits (a payload that
//    would truncate to zero gets the quiet bit), so every bf16/f16 bit pattern
//    survives the round trip through f32 unchanged;
//  * f64 -> bf16/f16 rounds once, directly: the f64 is first narrowed to f32
//    with round-to-odd (exact or with the lowest mantissa bit set), which
//    carries enough information that the final RNE step equals one rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dt {

/// Storage-only element types of the reference kernels (no arithmetic: code
/// widens them to f32 to compute).
struct bf16_t {
  uint16_t bits = 0;
};
struct f16_t {
  uint16_t bits = 0;
};

inline uint32_t lpFloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float lpBitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16ToFloat(uint16_t h) { return lpBitsFloat((uint32_t)h << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t u = lpFloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) { // NaN: keep sign and top payload bits
    uint16_t r = (uint16_t)(u >> 16);
    return (r & 0x7f) ? r : (uint16_t)(r | 0x40);
  }
  // Round to nearest even: add 0x7fff plus the lowest kept bit; a carry into
  // the exponent is the correct rounding up (to infinity past the largest).
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) // zero or subnormal: m * 2^-24, exact in f32
    return lpBitsFloat(lpFloatBits((float)m * 0x1p-24f) | sign);
  if (e == 31) // inf or NaN, payload kept
    return lpBitsFloat(sign | 0x7f800000u | (m << 13));
  return lpBitsFloat(sign | ((e + 112u) << 23) | (m << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t u = lpFloatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint32_t o;
  if (u >= 0x47800000u) { // |f| >= 65536, inf or NaN
    if (u > 0x7f800000u) {
      uint32_t m = (u >> 13) & 0x3ffu;
      o = 0x7c00u | (m ? m : 0x200u);
    } else {
      o = 0x7c00u;
    }
  } else if (u < 0x38800000u) { // below 2^-14: an f16 subnormal or zero
    // Adding 0.5 aligns the f16 subnormal grid (2^-24) to the f32 mantissa's
    // last bit, so the f32 addition does the round to nearest even.
    o = lpFloatBits(lpBitsFloat(u) + 0.5f) - 0x3f000000u;
  } else {
    uint32_t odd = (u >> 13) & 1u;
    u += 0xc8000fffu + odd; // rebias exponent (15 - 127) << 23, plus rounding
    o = u >> 13;            // a carry may reach 0x7c00: rounded up to infinity
  }
  return (uint16_t)(o | sign);
}

/// f64 -> f32 rounding to odd: the truncation toward zero, with the lowest
/// mantissa bit set when inexact. A later RNE to a type of at most 22 bits
/// of precision then equals one RNE from the f64.
inline float doubleToFloatOdd(double d) {
  float f = (float)d;
  if (std::isnan(d) || (double)f == d)
    return f;
  uint32_t u = lpFloatBits(f);
  if (std::fabs((double)f) > std::fabs(d))
    u -= 1; // one step toward zero (sign-magnitude)
  return lpBitsFloat(u | 1u);
}

inline uint16_t doubleToBf16(double d) { return floatToBf16(doubleToFloatOdd(d)); }
inline uint16_t doubleToHalf(double d) { return floatToHalf(doubleToFloatOdd(d)); }

} // namespace dt
