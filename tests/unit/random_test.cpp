// Unit tests for runtime/Random: bit-exact constants, determinism, layout
// independence (a rank's block generated from global indices equals the
// slice of the full tensor) and rough distribution checks.
#include "runtime/RefKernels.h"
#include "support/Random.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace dt;

TEST_CASE("random: splitmix64 and the counter stream are bit exact") {
  // SplitMix64 seeded with 0: the published first outputs.
  CHECK(splitmix64(0) == 0xE220A8397B1DCDAFull);
  CHECK(splitmix64(0x9E3779B97F4A7C15ull) == 0x6E789E6AA1B965F4ull);
  CHECK(rngBits(0, 0) == splitmix64(splitmix64(0)));
  CHECK(rngBits(7, 5) == splitmix64(splitmix64(7) ^ 5));
  CHECK(uniform01(7, 5) == (float)(rngBits(7, 5) >> 40) * 0x1p-24f);
  float u1 = uniform01(7, 10), u2 = uniform01(7, 11);
  CHECK(normal(7, 5) == sqrtf(-2.0f * logf(1.0f - u1)) * cosf(6.28318530717958647692f * u2));
}

TEST_CASE("random: normal's own log and cos equal glibc's f64 ones on every input they get") {
  // Box-Muller takes log(1 - u1) and cos(2 pi u2) with u1, u2 in {k 2^-24}:
  // 2^24 inputs each. Every one rounds to the same f32 as glibc's f64 log
  // and cos (the correctly rounded values), so support/FloatMath.h's
  // branch-free sequences change no bit of any randn.
  const float twoPi = 6.28318530717958647692f;
  int64_t badLog = 0, badCos = 0;
  for (uint32_t k = 0; k < (1u << 24); ++k) {
    float u = (float)k * 0x1p-24f;
    float x = 1.0f - u, a = twoPi * u;
    badLog += normalLog(x) != (float)std::log((double)x);
    badCos += normalCos(a) != (float)std::cos((double)a);
  }
  CHECK(badLog == 0);
  CHECK(badCos == 0);
  // The quadrants' signs and the angle's ends.
  CHECK(normalCos(0.0f) == 1.0f);
  CHECK(normalCos(3.14159265f) == -1.0f);
  CHECK(normalCos(1.57079632f) == (float)std::cos((double)1.57079632f));
  CHECK(normalLog(1.0f) == 0.0f);
  CHECK(normalLog(0x1p-24f) == (float)std::log(0x1p-24));
}

TEST_CASE("random: deterministic, seed-dependent, in range") {
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    CHECK(uniform01(3, i) == uniform01(3, i));
    CHECK(normal(3, i) == normal(3, i));
    same += uniform01(3, i) == uniform01(4, i);
    float u = uniform01(3, i);
    CHECK(u >= 0.0f);
    CHECK(u < 1.0f);
    CHECK(std::isfinite(normal(3, i)));
  }
  CHECK(same < 5);
}

TEST_CASE("random: every layout sees the same global tensor") {
  // A [7, 5] tensor on a 3 x 2 mesh, dim 0 sharded on x and dim 1 on y
  // (uneven blocks, torch.chunk rule).
  auto mesh = std::make_shared<Mesh>();
  mesh->name = "m";
  mesh->axes = {{"x", 3}, {"y", 2}};
  for (int i = 0; i < 6; ++i)
    mesh->devices.push_back(i);
  TensorType t = replicatedType(DType::F32, {Dim::lit(7), Dim::lit(5)}, mesh);
  t.placements = {Placement::shard(0), Placement::shard(1)};
  for (const char *kind : {"normal", "uniform"}) {
    HostTensor full = ref::random(kind, 42, DType::F32, {7, 5});
    int64_t covered = 0;
    for (int64_t rank = 0; rank < mesh->size(); ++rank) {
      LocalBlock b = localBlock(t, rank);
      for (int64_t i = 0; i < b.shape[0]; ++i)
        for (int64_t j = 0; j < b.shape[1]; ++j) {
          uint64_t g = (uint64_t)((b.offset[0] + i) * 5 + (b.offset[1] + j));
          float local = std::string(kind) == "normal" ? normal(42, g) : uniform01(42, g);
          CHECK(local == full.data<float>()[g]);
          ++covered;
        }
    }
    CHECK(covered == 35);
  }
  // f64 tensors hold the widened f32 values.
  HostTensor d = ref::random("normal", 9, DType::F64, {3});
  for (int i = 0; i < 3; ++i)
    CHECK(d.data<double>()[i] == (double)normal(9, (uint64_t)i));
}

TEST_CASE("random: rough distribution checks") {
  const int n = 100000;
  double s = 0, s2 = 0, us = 0;
  for (int i = 0; i < n; ++i) {
    double x = normal(2024, (uint64_t)i);
    s += x;
    s2 += x * x;
    us += uniform01(2024, (uint64_t)i);
  }
  double mean = s / n, var = s2 / n - mean * mean;
  CHECK(std::fabs(mean) < 0.02);
  CHECK(std::fabs(var - 1.0) < 0.03);
  CHECK(std::fabs(us / n - 0.5) < 0.01);
}
