// Unit tests for runtime/Blas: gemm against naive loops for every dtype,
// transposes, 1-D operands, batch broadcasting, empty sizes and shape errors.
#include "runtime/Blas.h"

#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using namespace dt;

namespace {

HostTensor randomTensor(DType t, std::vector<int64_t> shape, std::mt19937_64 &r) {
  HostTensor x(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, isFloat(t) ? std::uniform_real_distribution<double>(-1, 1)(r)
                        : (double)std::uniform_int_distribution<int>(-9, 9)(r));
  return x;
}

/// Naive numpy matmul through HostTensor::get (double accumulation).
HostTensor naive(const HostTensor &a, const HostTensor &b, bool ta, bool tb) {
  std::vector<int64_t> out = gemmShape(a.shape, b.shape, ta, tb);
  auto as = a.shape, bs = b.shape;
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t m = ta && !aVec ? as.back() : as[as.size() - 2],
          k = ta && !aVec ? as[as.size() - 2] : as.back();
  int64_t n = tb && !bVec ? bs[bs.size() - 2] : bs.back();
  size_t r = std::max(as.size(), bs.size()) - 2;
  std::vector<int64_t> batch(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + as.size() >= r + 2 ? as[i + as.size() - r - 2] : 1;
    int64_t db = i + bs.size() >= r + 2 ? bs[i + bs.size() - r - 2] : 1;
    batch[i] = da == 1 ? db : da;
  }
  DType dt = a.dtype == DType::Bool ? DType::I64 : a.dtype;
  HostTensor c(dt, out);
  int64_t nb = 1;
  for (auto d : batch)
    nb *= d;
  for (int64_t blk = 0; blk < nb; ++blk) {
    // Batch index -> element offsets of each operand's matrix.
    int64_t rem = blk, oa = 0, ob = 0, sa = m * k, sb = k * n;
    for (size_t i = r; i-- > 0;) {
      int64_t ix = rem % batch[i];
      rem /= batch[i];
      int64_t ai = (int64_t)i - (int64_t)r + (int64_t)as.size() - 2,
              bi = (int64_t)i - (int64_t)r + (int64_t)bs.size() - 2;
      if (ai >= 0)
        oa += (as[ai] == 1 ? 0 : ix) * sa, sa *= as[ai];
      if (bi >= 0)
        ob += (bs[bi] == 1 ? 0 : ix) * sb, sb *= bs[bi];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.get(oa + (ta && !aVec ? p * m + i : i * k + p)) *
                 b.get(ob + (tb && !bVec ? j * k + p : p * n + j));
        c.set(blk * m * n + i * n + j, acc);
      }
  }
  return c;
}

void checkClose(const HostTensor &got, const HostTensor &want, double tol) {
  REQUIRE(got.shape == want.shape);
  REQUIRE(got.dtype == want.dtype);
  for (int64_t i = 0; i < want.numel(); ++i)
    REQUIRE(std::fabs(got.get(i) - want.get(i)) <= tol);
}

} // namespace

TEST_CASE("blas: gemm matches naive loops for every dtype, transposes and batch broadcasting") {
  std::mt19937_64 r(5);
  struct Shapes {
    std::vector<int64_t> a, b;
    bool ta, tb;
  };
  std::vector<Shapes> cases = {{{3, 4}, {4, 5}, false, false},
                               {{4, 3}, {4, 5}, true, false},
                               {{3, 4}, {5, 4}, false, true},
                               {{4, 3}, {5, 4}, true, true},
                               {{2, 3, 4}, {2, 4, 5}, false, false},
                               {{2, 3, 4}, {4, 5}, false, false},
                               {{3, 4}, {2, 4, 5}, false, false},
                               {{2, 1, 3, 4}, {3, 4, 5}, false, false},
                               {{2, 1, 4, 3}, {1, 3, 5, 4}, true, true},
                               {{4}, {4, 5}, false, false},
                               {{2, 3, 4}, {4}, false, false},
                               {{4}, {4}, false, false},
                               {{0, 4}, {4, 5}, false, false},
                               {{3, 0}, {0, 5}, false, false},
                               {{2, 0, 3, 4}, {4, 5}, false, false},
                               {{17, 33}, {33, 9}, false, false}};
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool})
    for (const Shapes &s : cases) {
      INFO(dtypeName(t) << " case a rank " << s.a.size() << " b rank " << s.b.size() << " ta "
                        << s.ta << " tb " << s.tb);
      HostTensor a = randomTensor(t, s.a, r), b = randomTensor(t, s.b, r), c;
      gemm(a, b, c, s.ta, s.tb);
      checkClose(c, naive(a, b, s.ta, s.tb), t == DType::F32 ? 1e-4 : 1e-12);
    }
}

TEST_CASE("blas: gemm reuses a matching output and rejects bad shapes") {
  std::mt19937_64 r(6);
  HostTensor a = randomTensor(DType::F32, {3, 4}, r), b = randomTensor(DType::F32, {4, 2}, r);
  HostTensor c(DType::F32, {3, 2});
  void *before = c.raw();
  gemm(a, b, c);
  CHECK(c.raw() == before);
  HostTensor bad = randomTensor(DType::F32, {5, 2}, r);
  CHECK_THROWS_AS(gemm(a, bad, c), InternalError);
  HostTensor other = randomTensor(DType::F64, {4, 2}, r);
  CHECK_THROWS_AS(gemm(a, other, c), InternalError);
  CHECK_THROWS_AS(gemmShape({2, 3, 4}, {3, 4, 5}), InternalError); // batch 2 vs 3
  CHECK(gemmShape({7, 1, 3, 4}, {5, 4, 6}) == std::vector<int64_t>{7, 5, 3, 6});
}

TEST_CASE("blas: integer gemm wraps") {
  HostTensor a(DType::I32, {1, 2}), b(DType::I32, {2, 1}), c;
  a.data<int32_t>()[0] = a.data<int32_t>()[1] = 0x40000000;
  b.data<int32_t>()[0] = b.data<int32_t>()[1] = 2;
  gemm(a, b, c);
  CHECK(c.data<int32_t>()[0] == 0); // 2^31 + 2^31 wraps to 0
}
