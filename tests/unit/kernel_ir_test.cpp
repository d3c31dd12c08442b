// Unit tests for codegen/KernelIR: builders and verifier, the printed text and
// the hash, the params helper, the RNG against support/Random.h, and the
// reference interpreter on the semantic corner cases KernelIR.h spells out.
#include "codegen/KernelIR.h"

#include "support/Diagnostics.h"
#include "support/Random.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace dt;

namespace {

Kernel scaleAdd() {
  Kernel k;
  k.name = "scale_add";
  k.rank = 2;
  k.addInput(DType::F32);
  k.addInput(DType::F32);
  k.addOutput(DType::F32);
  int x = k.load(0);
  int c = k.constant(2, DType::F32);
  int m = k.binary(KOp::Mul, x, c);
  int y = k.load(1);
  k.store(0, k.binary(KOp::Add, m, y));
  return k;
}

/// Runs a one-input elementwise kernel `out = op(x)` on `xs` in the interpreter.
template <class Out, class In> std::vector<Out> interp1(const Kernel &k, std::vector<In> xs) {
  std::vector<Out> out(xs.size());
  void *bufs[] = {xs.data(), out.data()};
  int64_t n = (int64_t)xs.size();
  std::vector<int64_t> p = kernelParams(k, {n}, {{1}}, {{1}});
  interpretKernel(k, bufs, p.data());
  return out;
}

Kernel unaryKernel(DType in, DType out, KOp op) {
  Kernel k;
  k.rank = 1;
  k.addInput(in);
  k.addOutput(out);
  int x = k.load(0);
  k.store(0, op == KOp::Cast ? k.cast(x, out) : k.unary(op, x));
  return k;
}

Kernel binaryKernel(DType t, KOp op) {
  Kernel k;
  k.rank = 1;
  k.addInput(t);
  k.addInput(t);
  int r = k.binary(op, k.load(0), k.load(1));
  k.addOutput(k.nodes[r].dtype);
  k.store(0, r);
  return k;
}

template <class T> std::vector<T> interp2(const Kernel &k, std::vector<T> a, std::vector<T> b) {
  std::vector<T> out(a.size());
  void *bufs[] = {a.data(), b.data(), out.data()};
  std::vector<int64_t> p = kernelParams(k, {(int64_t)a.size()}, {{1}, {1}}, {{1}});
  interpretKernel(k, bufs, p.data());
  return out;
}

} // namespace

TEST_CASE("kernel ir: printed text names every node") {
  Kernel k = scaleAdd();
  CHECK(verifyKernel(k) == "");
  CHECK(printKernel(k) == "kernel @scale_add rank 2\n"
                          "  in0 : f32\n  in1 : f32\n  out0 : f32\n"
                          "  %0 = load in0 : f32\n"
                          "  %1 = const 2 : f32\n"
                          "  %2 = mul %0, %1 : f32\n"
                          "  %3 = load in1 : f32\n"
                          "  %4 = add %2, %3 : f32\n"
                          "  store out0, %4\n");
  Kernel r = k;
  r.setReduce(KReduce::Sum, {1});
  CHECK(printKernel(r, false).rfind("kernel rank 2 reduce sum dims [1]\n", 0) == 0);
}

TEST_CASE("kernel ir: the hash covers structure and dtypes, not the name") {
  Kernel a = scaleAdd(), b = scaleAdd();
  b.name = "other";
  CHECK(kernelHash(a) == kernelHash(b));
  b.nodes[1].value = 3;
  CHECK(kernelHash(a) != kernelHash(b));
  Kernel c = scaleAdd();
  c.rank = 3;
  CHECK(kernelHash(a) != kernelHash(c));
  Kernel d = scaleAdd();
  d.setReduce(KReduce::Max, {0});
  CHECK(kernelHash(a) != kernelHash(d));
}

TEST_CASE("kernel ir: the verifier and builders reject ill-typed kernels") {
  Kernel k;
  k.rank = 1;
  k.addInput(DType::I32);
  k.addOutput(DType::F32);
  int x = k.load(0);
  CHECK_THROWS_AS(k.unary(KOp::Exp, x), InternalError); // exp needs a float
  CHECK_THROWS_AS(k.unary(KOp::Not, x), InternalError); // not needs a bool
  CHECK_THROWS_AS(k.store(0, x), InternalError);        // i32 node to f32 output
  CHECK(verifyKernel(k) == "output 0 is never stored");
  k.store(0, k.cast(x, DType::F32));
  CHECK(verifyKernel(k) == "");
  k.reduce = KReduce::Sum;
  CHECK(verifyKernel(k) == "reduce op and reduced dims must be given together");
  k.reduceDims = {1};
  CHECK(verifyKernel(k) == "reduced dim out of range");
}

TEST_CASE("kernel ir: params layout") {
  Kernel k = scaleAdd();
  CHECK(numParams(k) == 2 * (1 + 2 + 1));
  auto p = kernelParams(k, {3, 4}, {{4, 1}, {0, 1}}, {{4, 1}});
  CHECK(p == std::vector<int64_t>{3, 4, 4, 1, 0, 1, 4, 1});
  Kernel r;
  r.rank = 2;
  r.addOutput(DType::F32);
  r.store(0, r.random(RandomKind::Normal, 1, DType::F32));
  CHECK(usesGlobalIndex(r));
  CHECK(numParams(r) == 2 * 2 + 2 * 2);
  CHECK(kernelParams(r, {3, 4}, {}, {{4, 1}}) == std::vector<int64_t>{3, 4, 4, 1, 0, 0, 4, 1});
}

TEST_CASE("kernel ir: RNG is bit-identical with support/Random.h") {
  for (uint64_t seed : {0ull, 7ull, 0xdeadbeefull})
    for (uint64_t i = 0; i < 2000; i += 7) {
      float u = kernelUniform01(seed, i), n = kernelNormal(seed, i);
      float ur = uniform01(seed, i), nr = normal(seed, i);
      CHECK(std::memcmp(&u, &ur, 4) == 0);
      CHECK(std::memcmp(&n, &nr, 4) == 0);
    }
}

TEST_CASE("kernel ir: interpreter integer corner cases") {
  const int32_t mn = std::numeric_limits<int32_t>::min(), mx = std::numeric_limits<int32_t>::max();
  auto d =
      interp2<int32_t>(binaryKernel(DType::I32, KOp::Div), {7, -7, 5, mn, mn}, {2, 2, 0, -1, 1});
  CHECK(d == std::vector<int32_t>{3, -3, 0, mn, mn});
  auto a = interp2<int32_t>(binaryKernel(DType::I32, KOp::Add), {mx, 1}, {1, 2});
  CHECK(a == std::vector<int32_t>{mn, 3});
  auto p = interp2<int32_t>(binaryKernel(DType::I32, KOp::Pow), {2, 3, 2, -1, -1, 5, 0},
                            {10, 3, 31, -3, -2, -1, -1});
  CHECK(p == std::vector<int32_t>{1024, 27, mn, -1, 1, 0, 0});
  CHECK(interp1<int32_t>(unaryKernel(DType::I32, DType::I32, KOp::Abs),
                         std::vector<int32_t>{-3, mn}) == std::vector<int32_t>{3, mn});
}

TEST_CASE("kernel ir: interpreter casts saturate and map NaN to 0") {
  float nan = std::nanf("");
  auto c = interp1<int32_t>(unaryKernel(DType::F32, DType::I32, KOp::Cast),
                            std::vector<float>{1.9f, -1.9f, nan, 1e20f, -1e20f, INFINITY});
  CHECK(c == std::vector<int32_t>{1, -1, 0, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max()});
  auto b = interp1<uint8_t>(unaryKernel(DType::F32, DType::Bool, KOp::Cast),
                            std::vector<float>{0.f, -0.f, 2.f, nan});
  CHECK(b == std::vector<uint8_t>{0, 0, 1, 1});
  auto w = interp1<int32_t>(unaryKernel(DType::I64, DType::I32, KOp::Cast),
                            std::vector<int64_t>{0x100000005ll, -1});
  CHECK(w == std::vector<int32_t>{5, -1});
}

TEST_CASE("kernel ir: interpreter float rules (relu, maximum, compare)") {
  float nan = std::nanf("");
  auto r = interp1<float>(unaryKernel(DType::F32, DType::F32, KOp::Relu),
                          std::vector<float>{-2.f, 3.f, -0.f, nan});
  CHECK(r[0] == 0.f);
  CHECK(r[1] == 3.f);
  CHECK(std::signbit(r[2]));
  CHECK(std::isnan(r[3]));
  auto m = interp2<float>(binaryKernel(DType::F32, KOp::Maximum), {1.f, nan, 2.f}, {nan, 1.f, 3.f});
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
  CHECK(m[2] == 3.f);
  Kernel ne = binaryKernel(DType::F32, KOp::Ne);
  std::vector<float> x{nan, 1.f}, y{nan, 1.f};
  std::vector<uint8_t> out(2);
  void *bufs[] = {x.data(), y.data(), out.data()};
  auto p = kernelParams(ne, {2}, {{1}, {1}}, {{1}});
  interpretKernel(ne, bufs, p.data());
  CHECK(out == std::vector<uint8_t>{1, 0});
}

TEST_CASE("kernel ir: interpreter reductions and empty reductions") {
  Kernel k;
  k.rank = 2;
  k.addInput(DType::I32);
  k.addOutput(DType::I32);
  k.store(0, k.load(0));
  k.setReduce(KReduce::Max, {1});
  std::vector<int32_t> x{1, 5, 2, -3, -1, -2}, out(2);
  void *bufs[] = {x.data(), out.data()};
  auto p = kernelParams(k, {2, 3}, {{3, 1}}, {{1, 0}});
  interpretKernel(k, bufs, p.data());
  CHECK(out == std::vector<int32_t>{5, -1});
  p = kernelParams(k, {2, 0}, {{0, 1}}, {{1, 0}});
  interpretKernel(k, bufs, p.data());
  CHECK(out == std::vector<int32_t>{std::numeric_limits<int32_t>::min(),
                                    std::numeric_limits<int32_t>::min()});
}
