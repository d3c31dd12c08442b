// This file implements dtensor's layout-independent random numbers: a
// stateless counter-based generator keyed by (seed, global element index).
//
// Every backend (reference evaluator, CPU JIT kernels, CUDA kernels) must
// re-implement exactly these formulas, bit for bit: a `random` op gives the
// element at GLOBAL row-major linear index i the value f(seed, i), so a rank
// that generates only its local block produces exactly the slice of the full
// tensor that one device would have generated. All math below is f32 (the
// f64 variant of a tensor computes the same f32 value and widens it), but
// for normal()'s log and cos, taken in f64 and rounded (support/FloatMath.h).
#pragma once

#include "support/FloatMath.h"

#include <cmath>
#include <cstdint>

namespace dt {

/// SplitMix64's output function (Steele, Lea, Flood 2014).
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// 64 random bits for element `counter` of the stream keyed by `seed`.
inline uint64_t rngBits(uint64_t seed, uint64_t counter) {
  return splitmix64(splitmix64(seed) ^ counter);
}

/// Uniform in [0, 1) with 24 random bits (exactly representable in f32).
inline float uniform01(uint64_t seed, uint64_t i) {
  return (float)(rngBits(seed, i) >> 40) * 0x1p-24f;
}

/// Standard normal by Box-Muller over counters 2i and 2i+1 in f32 math, with
/// the logarithm and cosine evaluated in f64 by support/FloatMath.h's fixed
/// sequences of IEEE operations and rounded to f32. On each of the 2^24
/// values `1 - u1` and `2 pi u2` can take they equal glibc's f64 log and cos
/// rounded (tests/unit/random_test.cpp checks every one), which are the
/// correctly rounded f32 values; the LLVM lowering and the CUDA prelude spell
/// out the same steps, so every backend gives the same bits, and a kernel
/// makes them without a libm call (a loop of them vectorizes). The product
/// 2*pi*u2 is an f32 product on every backend. `1 - u1` lies in (0, 1], so
/// the logarithm is finite.
inline float normalLog(float x) { return (float)fmath::logForF32(x); }
inline float normalCos(float x) { return (float)fmath::cosForNormal(x); }
inline float normal(uint64_t seed, uint64_t i) {
  float u1 = uniform01(seed, 2 * i);
  float u2 = uniform01(seed, 2 * i + 1);
  const float twoPi = 6.28318530717958647692f;
  return sqrtf(-2.0f * normalLog(1.0f - u1)) * normalCos(twoPi * u2);
}

} // namespace dt
