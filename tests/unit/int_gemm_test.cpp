// Unit tests of the CPU's integer matrix product (runtime/IntGemm.h): every
// ISA path this machine has, i32 and i64, both transposes, shapes around the
// 8-row x 64-byte tiles (edges, 1-wide, k = 0 and 1), values that overflow
// (the product wraps as two's complement, as the reference evaluator's),
// and a thread split, all against a plain triple loop; and Blas.h's gemm
// (the cpu backend's entry) on integer tensors, batched.
#include "runtime/Blas.h"
#include "runtime/HostTensor.h"
#include "runtime/IntGemm.h"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

using namespace dt;

namespace {

/// The meaning: C(i, j) = sum over q of A(i, q) B(q, j), wrapping.
template <class T>
std::vector<T> naive(const std::vector<T> &A, const std::vector<T> &B, int64_t m, int64_t k,
                     int64_t n, bool ta, bool tb) {
  using U = std::make_unsigned_t<T>;
  std::vector<T> C((size_t)(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      U s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += (U)(ta ? A[q * m + i] : A[i * k + q]) * (U)(tb ? B[j * k + q] : B[q * n + j]);
      C[i * n + j] = (T)s;
    }
  return C;
}

template <class T> void checkAllPaths(std::mt19937_64 &g) {
  const bool i64 = sizeof(T) == 8;
  // Small values, and ones whose products overflow T.
  std::uniform_int_distribution<int64_t> small(-9, 9);
  const int64_t dims[] = {0, 1, 3, 7, 8, 9, 16, 17, 33, 70};
  int ran = 0;
  for (IntGemmIsa isa : {IntGemmIsa::Portable, IntGemmIsa::Avx2, IntGemmIsa::Avx512}) {
    for (int64_t m : dims)
      for (int64_t n : dims)
        for (int64_t k : {(int64_t)0, (int64_t)1, (int64_t)5, (int64_t)40})
          for (int t = 0; t < 4; ++t) {
            const bool ta = t & 1, tb = t & 2, huge = (m + n + k) % 2 == 1;
            std::vector<T> A((size_t)(m * k)), B((size_t)(k * n));
            for (T &v : A)
              v = huge ? (T)g() : (T)small(g);
            for (T &v : B)
              v = huge ? (T)g() : (T)small(g);
            std::vector<T> got((size_t)(m * n), (T)123), want = naive(A, B, m, k, n, ta, tb);
            if (!intGemmOn(isa, i64, A.data(), B.data(), got.data(), m, k, n, ta, tb, 1))
              goto nextIsa; // this CPU lacks the path
            ++ran;
            INFO("isa " << (int)isa << " m " << m << " k " << k << " n " << n << " ta " << ta
                        << " tb " << tb);
            CHECK(got == want);
          }
  nextIsa:;
  }
  CHECK(ran > 0);
  // Large enough to split rows over threads (2^22 multiply-adds).
  const int64_t m = 203, k = 170, n = 150;
  std::vector<T> A((size_t)(m * k)), B((size_t)(k * n)), got((size_t)(m * n));
  for (T &v : A)
    v = (T)g();
  for (T &v : B)
    v = (T)g();
  for (int t = 0; t < 4; ++t) {
    REQUIRE(
        intGemmOn(IntGemmIsa::Best, i64, A.data(), B.data(), got.data(), m, k, n, t & 1, t & 2, 4));
    CHECK(got == naive(A, B, m, k, n, t & 1, t & 2));
  }
}

} // namespace

TEST_CASE("int gemm: every ISA path equals the wrapping triple loop, i32 and i64") {
  std::mt19937_64 g(7);
  checkAllPaths<int32_t>(g);
  checkAllPaths<int64_t>(g);
}

TEST_CASE("int gemm: Blas.h's gemm on batched integer tensors") {
  // [2, 3, 5] @ [5, 4] (the batch folds into M) and [2, 3, 5] @ [2, 5, 4].
  for (DType t : {DType::I32, DType::I64}) {
    HostTensor a(t, {2, 3, 5}), b1(t, {5, 4}), b2(t, {2, 5, 4});
    auto fill = [&](HostTensor &x, int seed) {
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t v = (i * 7 + seed) % 11 - 5;
        if (t == DType::I32)
          x.data<int32_t>()[i] = (int32_t)v;
        else
          x.data<int64_t>()[i] = v;
      }
    };
    fill(a, 1), fill(b1, 2), fill(b2, 3);
    auto at = [&](const HostTensor &x, int64_t i) {
      return t == DType::I32 ? (int64_t)x.data<int32_t>()[i] : x.data<int64_t>()[i];
    };
    for (const HostTensor *b : {&b1, &b2}) {
      HostTensor c;
      gemm(a, *b, c, false, false, 2);
      REQUIRE(c.shape == std::vector<int64_t>{2, 3, 4});
      for (int64_t z = 0; z < 2; ++z)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 4; ++j) {
            int64_t s = 0;
            for (int64_t q = 0; q < 5; ++q)
              s += at(a, z * 15 + i * 5 + q) * at(*b, (b == &b2 ? z * 20 : 0) + q * 4 + j);
            CHECK(at(c, z * 12 + i * 4 + j) == s);
          }
    }
  }
}
