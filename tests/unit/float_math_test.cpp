// Unit tests of dtensor's own f32 exp, tanh, sigmoid, erf, log, log1p and expm1
// (support/FloatMath.h):
// their accuracy against long double over a million f32 bit patterns spread
// over the whole range (at most 0.501 ulp), their special values (NaN, +-inf,
// +-0, the overflow and underflow edges), and the JIT's vectorized loops
// against the C++ functions bit for bit on the same inputs.
#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"
#include "support/FloatMath.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace dt;

namespace {

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// |got - want| in units of the last place of the f32 nearest `want`.
double ulpError(float got, long double want) {
  if (std::isnan((double)want))
    return std::isnan(got) ? 0 : 1e9;
  const float w = (float)want;
  if (std::isinf(w))
    return got == w ? 0 : 1e9;
  const float a = std::fabs(w);
  const double ulp = a == 0 ? 0x1p-149 : (double)std::nextafter(a, INFINITY) - a;
  return (double)(std::fabs((long double)got - want) / ulp);
}

/// Every `step`-th f32 bit pattern (both signs), NaNs left out.
std::vector<float> sample(uint32_t step) {
  std::vector<float> v;
  for (uint64_t b = 0; b < (1ull << 32); b += step)
    if (float f = fromBits((uint32_t)b); !std::isnan(f))
      v.push_back(f);
  return v;
}

} // namespace

TEST_CASE("float math: every f32 function within 0.501 ulp over the f32 range") {
  double worstExp = 0, worstTanh = 0, worstSig = 0, worstErf = 0, worstLog = 0, worstLog1p = 0,
         worstExpm1 = 0;
  for (float x : sample(4099)) {
    const long double lx = x;
    worstExp = std::max(worstExp, ulpError(fmath::expF32(x), expl(lx)));
    worstTanh = std::max(worstTanh, ulpError(fmath::tanhF32(x), tanhl(lx)));
    worstSig = std::max(worstSig, ulpError(fmath::sigmoidF32(x), 1.0L / (1.0L + expl(-lx))));
    worstErf = std::max(worstErf, ulpError(fmath::erfF32(x), erfl(lx)));
    worstLog = std::max(worstLog, ulpError(fmath::logF32(x), logl(lx)));
    worstLog1p = std::max(worstLog1p, ulpError(fmath::log1pF32(x), log1pl(lx)));
    worstExpm1 = std::max(worstExpm1, ulpError(fmath::expm1F32(x), expm1l(lx)));
  }
  INFO("exp " << worstExp << " tanh " << worstTanh << " sigmoid " << worstSig << " erf " << worstErf
              << " log " << worstLog << " log1p " << worstLog1p << " expm1 " << worstExpm1);
  CHECK(worstExp <= 0.501);
  CHECK(worstTanh <= 0.501);
  CHECK(worstSig <= 0.501);
  CHECK(worstErf <= 0.501);
  CHECK(worstLog <= 0.501);
  CHECK(worstLog1p <= 0.501);
  CHECK(worstExpm1 <= 0.501);
}

TEST_CASE("float math: special values and edges") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  CHECK(std::isnan(fmath::expF32(nan)));
  CHECK(fmath::expF32(inf) == inf);
  CHECK(fmath::expF32(-inf) == 0.0f);
  CHECK(fmath::expF32(0.0f) == 1.0f);
  CHECK(fmath::expF32(-0.0f) == 1.0f);
  CHECK(fmath::expF32(1.0f) == 0x1.5bf0a8p+1f); // e, correctly rounded
  // The largest f32 with a finite exp, and the next one; the last nonzero
  // subnormal result and the first zero; the first subnormal result.
  CHECK(fmath::expF32(0x1.62e42ep+6f) == 0x1.ffff08p+127f);
  CHECK(fmath::expF32(0x1.62e430p+6f) == inf);
  CHECK(fmath::expF32(-103.97207641601562f) == 0x1p-149f);
  CHECK(fmath::expF32(std::nextafter(-103.97207641601562f, -200.0f)) == 0.0f);
  CHECK(fmath::expF32(-87.33654022216796875f) == 0x1.00004cp-126f);
  CHECK(fmath::expF32(-87.3365478515625f) == 0x1.ffff98p-127f);
  CHECK(fmath::expF32(-104.0f) == 0.0f);
  CHECK(fmath::expF32(1e30f) == inf);
  CHECK(fmath::expF32(-1e30f) == 0.0f);
  CHECK(std::isnan(fmath::tanhF32(nan)));
  CHECK(fmath::tanhF32(inf) == 1.0f);
  CHECK(fmath::tanhF32(-inf) == -1.0f);
  CHECK(std::signbit(fmath::tanhF32(-0.0f)));
  CHECK(fmath::tanhF32(-0.0f) == 0.0f);
  CHECK(fmath::tanhF32(0x1p-149f) == 0x1p-149f);
  CHECK(fmath::tanhF32(-1e-20f) == -1e-20f);
  CHECK(fmath::tanhF32(20.0f) == 1.0f);
  CHECK(fmath::tanhF32(-9.5f) == -1.0f);
  CHECK(fmath::tanhF32(0.0625f) == (float)tanhl(0.0625L)); // the two formulas' seam
  CHECK(fmath::tanhF32(std::nextafter(0.0625f, 0.0f)) ==
        (float)tanhl((long double)std::nextafter(0.0625f, 0.0f)));
  CHECK(std::isnan(fmath::erfF32(nan)));
  CHECK(fmath::erfF32(inf) == 1.0f);
  CHECK(fmath::erfF32(-inf) == -1.0f);
  CHECK(std::signbit(fmath::erfF32(-0.0f)));
  CHECK(fmath::erfF32(0x1p-149f) == (float)erfl(0x1p-149L)); // subnormal in, subnormal out
  CHECK(fmath::erfF32(1.0f) == (float)erfl(1.0L));           // the two formulas' seam
  CHECK(fmath::erfF32(std::nextafter(1.0f, 0.0f)) == (float)erfl(std::nextafter(1.0f, 0.0f)));
  CHECK(fmath::erfF32(-3.9f) == (float)erfl(-3.9L));
  CHECK(fmath::erfF32(4.0f) == 1.0f);
  CHECK(fmath::erfF32(-1e30f) == -1.0f);
  CHECK(fmath::logF32(0.0f) == -inf);
  CHECK(fmath::logF32(-0.0f) == -inf);
  CHECK(std::isnan(fmath::logF32(-1.0f)));
  CHECK(std::isnan(fmath::logF32(-inf)));
  CHECK(std::isnan(fmath::logF32(nan)));
  CHECK(fmath::logF32(inf) == inf);
  CHECK(fmath::logF32(1.0f) == 0.0f);
  CHECK(fmath::logF32(0x1p-149f) == (float)logl(0x1p-149L)); // a subnormal
  CHECK(fmath::logF32(0x1.fffffep+127f) == (float)logl(0x1.fffffep+127L));
  CHECK(fmath::log1pF32(-1.0f) == -inf);
  CHECK(std::isnan(fmath::log1pF32(-2.0f)));
  CHECK(fmath::log1pF32(inf) == inf);
  CHECK(std::signbit(fmath::log1pF32(-0.0f)));
  CHECK(fmath::log1pF32(1e-30f) == 1e-30f);
  CHECK(fmath::log1pF32(1e20f) == (float)log1pl(1e20L));
  CHECK(std::signbit(fmath::expm1F32(-0.0f)));
  CHECK(fmath::expm1F32(-inf) == -1.0f);
  CHECK(fmath::expm1F32(inf) == inf);
  CHECK(std::isnan(fmath::expm1F32(nan)));
  CHECK(fmath::expm1F32(1e-30f) == 1e-30f);
  CHECK(fmath::expm1F32(0.0625f) == (float)expm1l(0.0625L)); // the two formulas' seam
  CHECK(std::isnan(fmath::sigmoidF32(nan)));
  CHECK(fmath::sigmoidF32(inf) == 1.0f);
  CHECK(fmath::sigmoidF32(-inf) == 0.0f);
  CHECK(fmath::sigmoidF32(0.0f) == 0.5f);
  CHECK(fmath::sigmoidF32(-200.0f) == 0.0f);
  CHECK(fmath::sigmoidF32(-100.0f) == (float)(1.0L / (1.0L + expl(100.0L)))); // subnormal
  CHECK(fmath::sigmoidF32(-100.0f) > 0.0f);
  CHECK(fmath::sigmoidF32(20.0f) == (float)(1.0L / (1.0L + expl(-20.0L))));
}

TEST_CASE("float math jit: the vectorized loops equal the C++ functions bit for bit") {
  // out_k = op_k(x) over 1M f32 patterns (a vector loop and its tail), and
  // bf16, whose ops compute in f32 and round once.
  CpuJIT jit;
  for (DType t : {DType::F32, DType::BF16}) {
    Kernel k;
    k.name = "float_math";
    k.rank = 1;
    int x = k.load(k.addInput(t));
    const std::vector<KOp> ops = {KOp::Exp, KOp::Tanh,  KOp::Sigmoid, KOp::Erf,
                                  KOp::Log, KOp::Log1p, KOp::Expm1};
    for (KOp op : ops)
      k.store(k.addOutput(t), k.unary(op, x));
    std::vector<float> in = sample(4093);
    in.push_back(std::numeric_limits<float>::quiet_NaN());
    in.push_back(-std::numeric_limits<float>::quiet_NaN());
    const int64_t n = (int64_t)in.size();
    const size_t es = dtypeSize(t);
    std::vector<char> src(n * es);
    for (int64_t i = 0; i < n; ++i)
      if (t == DType::F32)
        std::memcpy(&src[i * es], &in[i], 4);
      else { // bf16: the upper half of the f32 pattern
        uint32_t u;
        std::memcpy(&u, &in[i], 4);
        uint16_t h = (uint16_t)(u >> 16);
        std::memcpy(&src[i * es], &h, 2);
      }
    const size_t nOut = ops.size();
    std::vector<std::vector<char>> jitOut(nOut, std::vector<char>(n * es)),
        refOut(nOut, std::vector<char>(n * es));
    std::vector<int64_t> p =
        kernelParams(k, {n}, {{1}}, std::vector<std::vector<int64_t>>(nOut, {1}));
    std::vector<void *> jb = {src.data()}, ib = {src.data()};
    for (size_t o = 0; o < nOut; ++o) {
      jb.push_back(jitOut[o].data());
      ib.push_back(refOut[o].data());
    }
    jit.compile(k)(jb.data(), p.data());
    interpretKernel(k, ib.data(), p.data());
    for (size_t o = 0; o < nOut; ++o) {
      int64_t differ = 0;
      for (int64_t i = 0; i < n; ++i)
        differ += std::memcmp(&jitOut[o][i * es], &refOut[o][i * es], es) != 0;
      INFO(std::string(dtypeName(t)) << " output " << o);
      CHECK(differ == 0);
    }
    if (t == DType::F32) // and the interpreter is FloatMath.h
      for (int64_t i = 0; i < n; ++i) {
        float e;
        std::memcpy(&e, &refOut[0][i * 4], 4);
        float want = fmath::expF32(in[i]);
        if (std::memcmp(&e, &want, 4) != 0) {
          CHECK(std::memcmp(&e, &want, 4) == 0);
          break;
        }
      }
  }
}
