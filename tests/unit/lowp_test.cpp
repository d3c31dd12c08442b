// Unit tests of the bf16/f16 conversions (support/LowPrecision.h) against an
// independent oracle: every 16-bit pattern round-trips through f32; f32 and
// f64 narrowing is checked against exact rational rounding (nearest, ties to
// even) on crafted ties, near-ties, overflow, subnormals and random values;
// and the kernel interpreter, the LLVM JIT and the reference kernels agree
// on every bf16/f16 cast.
#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"
#include "runtime/Format.h"
#include "runtime/HostTensor.h"
#include "runtime/RefKernels.h"
#include "support/LowPrecision.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace dt;

namespace {

struct Fmt {
  int mant, minExp, maxExp; ///< mantissa bits; exponents of the normal range
};
constexpr Fmt kBf16{7, -126, 127};
constexpr Fmt kF16{10, -14, 15};

/// The oracle: `v` rounded to nearest even on the grid of `f`, computed with
/// frexp/ldexp in double (exact for every input here: the grid step is a
/// power of two and the scaled value fits 53 bits). Infinity past the
/// largest finite value plus half a step.
double oracleRound(double v, Fmt f) {
  if (std::isnan(v) || std::isinf(v) || v == 0)
    return v;
  int e;
  std::frexp(std::fabs(v), &e); // |v| in [2^(e-1), 2^e)
  int exp = std::max(e - 1, f.minExp);
  double step = std::ldexp(1.0, exp - f.mant);
  double q = std::fabs(v) / step; // exact: a power-of-two scaling
  double fl = std::floor(q), frac = q - fl;
  double r = frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) == 1.0) ? fl + 1 : fl;
  double out = r * step;
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, -f.mant), f.maxExp);
  if (out > maxFinite)
    out = INFINITY;
  return std::copysign(out, v);
}

double widen(uint16_t h, bool bf) { return bf ? bf16ToFloat(h) : halfToFloat(h); }

} // namespace

TEST_CASE("lowp: every bf16 and f16 bit pattern round-trips through f32 exactly") {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = (uint16_t)b;
    float fb = bf16ToFloat(h), fh = halfToFloat(h);
    REQUIRE(floatToBf16(fb) == h);
    REQUIRE(floatToHalf(fh) == h);
    REQUIRE(doubleToBf16((double)fb) == h);
    REQUIRE(doubleToHalf((double)fh) == h);
    // bf16 is the top half of the f32; f16 agrees with the IEEE value.
    uint32_t u;
    std::memcpy(&u, &fb, 4);
    REQUIRE(u == (uint32_t)h << 16);
    int e = (h >> 10) & 31, m = h & 1023;
    double expect = e == 0    ? std::ldexp(m, -24)
                    : e == 31 ? (m ? NAN : INFINITY)
                              : std::ldexp(1024 + m, e - 25);
    if (h & 0x8000)
      expect = -expect;
    if (std::isnan(expect))
      REQUIRE(std::isnan(fh));
    else
      REQUIRE((double)fh == expect);
    REQUIRE(std::signbit(fh) == ((h & 0x8000) != 0));
  }
}

TEST_CASE("lowp: f32 and f64 narrow to nearest, ties to even, against the oracle") {
  std::vector<double> crafted = {
      1.00390625,         // bf16 tie between 1 and 1 + 2^-7: to 1 (even)
      1.01171875,         // bf16 tie between 1 + 2^-7 and 1 + 2^-6: up (even)
      1.0039062500009095, // just above the tie: up (f32 would round it onto the tie)
      1.0004882812500002, // f16: just above the tie 1 + 2^-11: up
      1.00048828125,      // f16 tie: to 1
      1.00146484375,      // f16 tie 1 + 3*2^-11: up to 1 + 2^-9
      65504,
      65519,
      65519.999,
      65520,
      65536,
      1e6, // f16 overflow at 65520
      3.3895313892515355e38,
      3.3961e38,
      3.3962e38,
      3.4e38, // bf16 overflow
      5.960464477539063e-08,
      2.9802322387695312e-08,
      2.98023224e-08,
      8.940696716308594e-08,
      6.097555160522461e-05,
      6.103515625e-05, // f16 largest subnormal / smallest normal
      9.183549615799121e-41,
      1e-40,
      1.1754942e-38,
      1e-45, // bf16 subnormals
      0.1,
      0.2,
      1.0 / 3,
      2.5,
      -2.5,
      300.7,
      -0.0,
      0.0,
      1e-300,
  };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    double mag = std::ldexp(1.0, (int)(rng() % 80) - 40);
    crafted.push_back(std::uniform_real_distribution<double>(-1, 1)(rng) * mag);
    // Exact ties of both grids, and their neighbours one f64 ulp away.
    uint16_t h = (uint16_t)(rng() & 0x7bff);
    double a = halfToFloat(h), b = halfToFloat((uint16_t)(h + 1));
    if (std::isfinite(a) && std::isfinite(b)) {
      double mid = (a + b) / 2;
      crafted.insert(crafted.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300)});
    }
    uint16_t g = (uint16_t)(rng() & 0x7f7f);
    a = bf16ToFloat(g), b = bf16ToFloat((uint16_t)(g + 1));
    double mid = (a + b) / 2;
    crafted.insert(crafted.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300)});
  }
  int checked = 0;
  for (double v : crafted)
    for (double s : {1.0, -1.0}) {
      double d = v * s;
      INFO("value " << d);
      double eb = oracleRound(d, kBf16), eh = oracleRound(d, kF16);
      CHECK(widen(doubleToBf16(d), true) == eb);
      CHECK(widen(doubleToHalf(d), false) == eh);
      CHECK(std::signbit(widen(doubleToHalf(d), false)) == std::signbit(d));
      float f = (float)d;
      if ((double)f == d) { // from f32 too (exact f32 inputs only: no double rounding)
        CHECK(widen(floatToBf16(f), true) == eb);
        CHECK(widen(floatToHalf(f), false) == eh);
      }
      ++checked;
    }
  CHECK(checked > 100000);
}

TEST_CASE("lowp: NaN stays NaN (sign kept), infinities stay infinite") {
  for (float n : {NAN, -NAN, std::numeric_limits<float>::signaling_NaN()}) {
    CHECK(std::isnan(bf16ToFloat(floatToBf16(n))));
    CHECK(std::isnan(halfToFloat(floatToHalf(n))));
    CHECK(std::signbit(bf16ToFloat(floatToBf16(n))) == std::signbit(n));
    CHECK(std::isnan(bf16ToFloat(doubleToBf16((double)n))));
  }
  float payloadLow;
  uint32_t u = 0x7f800001; // payload only in bits bf16 truncates: must not become inf
  std::memcpy(&payloadLow, &u, 4);
  CHECK(std::isnan(bf16ToFloat(floatToBf16(payloadLow))));
  CHECK(std::isnan(halfToFloat(floatToHalf(payloadLow))));
  CHECK(floatToBf16(INFINITY) == 0x7f80);
  CHECK(floatToHalf(-INFINITY) == 0xfc00);
  CHECK(floatToHalf(65520.0f) == 0x7c00);
  CHECK(floatToHalf(65519.996f) == 0x7bff);
}

TEST_CASE("lowp: printing is the shortest decimal that reads back, whole numbers in full") {
  auto show = [](DType t, double v) {
    HostTensor h(t, {});
    h.set(0, v);
    return formatTensor(h);
  };
  CHECK(show(DType::BF16, 3.14159) == "3.14");
  CHECK(show(DType::BF16, 4096) == "4096");
  CHECK(show(DType::F16, 65504) == "65504");
  CHECK(show(DType::F16, 0.1) == "0.1");
  CHECK(show(DType::F16, -0.0) == "-0");
  CHECK(show(DType::F16, 1e6) == "inf");
  CHECK(show(DType::BF16, NAN) == "nan");
  // Every finite pattern: the printed text reads back to the same bits.
  for (uint32_t b = 0; b < 65536; b += 7)
    for (DType t : {DType::BF16, DType::F16}) {
      HostTensor h(t, {});
      h.data<uint16_t>()[0] = (uint16_t)b;
      double v = h.get(0);
      if (!std::isfinite(v))
        continue;
      std::string s = formatTensor(h);
      double back = std::strtod(s.c_str(), nullptr);
      uint16_t bits = t == DType::BF16 ? doubleToBf16(back) : doubleToHalf(back);
      INFO(dtypeName(t) << " " << b << " printed " << s);
      CHECK(bits == (uint16_t)b);
    }
}

TEST_CASE("lowp: cast to and from bf16/f16 agrees in the interpreter, the JIT and the reference") {
  CpuJIT jit;
  const DType all[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                       DType::Bool, DType::BF16, DType::F16};
  std::vector<double> vals = {0,     -0.0,  1,        -1,    2.5,   1.00390625, 1.0039062500009095,
                              65519, 65520, 1e30,     -1e30, 1e-40, 6e-8,       3e-8,
                              257,   2049,  16777217, 300.7, NAN,   INFINITY,   -INFINITY};
  for (DType from : all)
    for (DType to : all) {
      if (!isLowPrecision(from) && !isLowPrecision(to))
        continue;
      Kernel k;
      k.rank = 1;
      k.addInput(from);
      k.addOutput(to);
      k.store(0, k.cast(k.load(0), to));
      int64_t n = (int64_t)vals.size();
      HostTensor in(from, {n});
      for (int64_t i = 0; i < n; ++i) // ints: only values they hold
        in.set(i, isFloat(from) || (std::isfinite(vals[i]) && std::fabs(vals[i]) < 2e9) ? vals[i]
                                                                                        : 0.0);
      HostTensor ref = ref::cast(in, to), a(to, {n}), b(to, {n});
      std::vector<int64_t> p = kernelParams(k, {n}, {{1}}, {{1}});
      void *ba[] = {in.raw(), a.raw()}, *bb[] = {in.raw(), b.raw()};
      interpretKernel(k, ba, p.data());
      jit.compile(k)(bb, p.data());
      for (int64_t i = 0; i < n; ++i) {
        INFO(dtypeName(from) << " -> " << dtypeName(to) << " of " << in.get(i));
        double r = ref.get(i);
        if (std::isnan(r)) {
          CHECK(std::isnan(a.get(i)));
          CHECK(std::isnan(b.get(i)));
          continue;
        }
        CHECK(a.get(i) == r);
        CHECK(b.get(i) == r);
        CHECK(std::signbit(b.get(i)) == std::signbit(r));
      }
    }
}
