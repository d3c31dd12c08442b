// Unit tests of deterministic mode's kernels (docs/language.md,
// "Deterministic mode"): the matrix product whose elements' bits do not
// depend on the shape of the product they are computed in (OpenBLAS's do),
// the kernel flag that keeps reductions sequential, and the CUDA emitter's
// one-thread-per-output reduction. The whole-program property (the same bits
// on meshes 1, 2, 4, 2x2, 3x2) is the ctest `diff_bitexact_deterministic`.
#include "codegen/CudaEmitter.h"
#include "codegen/KernelIR.h"
#include "runtime/BlasDeterministic.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <doctest/doctest.h>

using namespace dt;

namespace {

template <class T> void checkProduct(int64_t m, int64_t k, int64_t n, std::mt19937_64 &rng) {
  const bool f64 = std::is_same_v<T, double>;
  std::normal_distribution<double> nd;
  std::vector<T> A(m * k), B(k * n), C(m * n), ref(m * n);
  for (auto &x : A)
    x = (T)nd(rng);
  for (auto &x : B)
    x = (T)nd(rng);
  // The definition: one fma chain over k from 0.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc = std::fma(A[i * k + p], B[p * n + j], acc);
      ref[i * n + j] = acc;
    }
  deterministicMatrix(f64, A.data(), B.data(), C.data(), m, k, n, false, false);
  INFO("m=" << m << " k=" << k << " n=" << n << (f64 ? " f64" : " f32"));
  CHECK(std::memcmp(C.data(), ref.data(), C.size() * sizeof(T)) == 0);
  // Every block of rows and every block of columns: the same bits.
  for (int64_t parts : {2, 3, 4}) {
    std::vector<T> rows(m * n, T(7)), cols(m * n, T(7));
    int64_t h = (m + parts - 1) / parts, w = (n + parts - 1) / parts;
    for (int64_t r0 = 0; r0 < m; r0 += h)
      deterministicMatrix(f64, A.data() + r0 * k, B.data(), rows.data() + r0 * n,
                          std::min(h, m - r0), k, n, false, false);
    for (int64_t c0 = 0; c0 < n; c0 += w) {
      int64_t nc = std::min(w, n - c0);
      std::vector<T> Bs(k * nc), Cs(m * nc);
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < nc; ++j)
          Bs[p * nc + j] = B[p * n + c0 + j];
      deterministicMatrix(f64, A.data(), Bs.data(), Cs.data(), m, k, nc, false, false);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < nc; ++j)
          cols[i * n + c0 + j] = Cs[i * nc + j];
    }
    CHECK(std::memcmp(rows.data(), ref.data(), rows.size() * sizeof(T)) == 0);
    CHECK(std::memcmp(cols.data(), ref.data(), cols.size() * sizeof(T)) == 0);
  }
  // Transposed operands: the same bits.
  std::vector<T> At(k * m), Bt(n * k), Ct(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      At[p * m + i] = A[i * k + p];
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      Bt[j * k + p] = B[p * n + j];
  deterministicMatrix(f64, At.data(), Bt.data(), Ct.data(), m, k, n, true, true);
  CHECK(std::memcmp(Ct.data(), ref.data(), Ct.size() * sizeof(T)) == 0);
}

Kernel sumKernel(DType t) {
  Kernel k;
  k.rank = 2;
  k.store(k.addOutput(t), k.load(k.addInput(t)));
  k.setReduce(KReduce::Sum, {1});
  return k;
}

} // namespace

TEST_CASE("deterministic matmul: every block of the product has the whole product's bits") {
  std::mt19937_64 rng(5);
  for (int64_t m : {1, 3, 4, 9, 37})
    for (int64_t k : {1, 7, 64, 301})
      for (int64_t n : {1, 5, 16, 17, 40}) {
        checkProduct<float>(m, k, n, rng);
        checkProduct<double>(m, k, n, rng);
      }
}

TEST_CASE("deterministic matmul: threads split the rows without changing a bit") {
  std::mt19937_64 rng(9);
  std::normal_distribution<float> nd;
  const int64_t m = 261, k = 130, n = 129;
  std::vector<float> A(m * k), B(k * n), C1(m * n), C3(m * n);
  for (auto &x : A)
    x = nd(rng);
  for (auto &x : B)
    x = nd(rng);
  deterministicMatrix(false, A.data(), B.data(), C1.data(), m, k, n, false, false, 1);
  deterministicMatrix(false, A.data(), B.data(), C3.data(), m, k, n, false, false, 3);
  CHECK(std::memcmp(C1.data(), C3.data(), C1.size() * sizeof(float)) == 0);
}

TEST_CASE("deterministic kernels: the flag is part of the kernel text and hash") {
  Kernel a = sumKernel(DType::F32), b = a;
  b.deterministic = true;
  CHECK(printKernel(b, false).find("deterministic") != std::string::npos);
  CHECK(printKernel(a, false).find("deterministic") == std::string::npos);
  CHECK(kernelHash(a) != kernelHash(b)); // never one cached binary for both
  CHECK(verifyKernel(b).empty());
}

TEST_CASE("deterministic CUDA reduction: one thread per output, no shuffle tree") {
  Kernel k = sumKernel(DType::F32);
  k.deterministic = true;
  std::string src = emitCudaKernel(k, "dt_det").source;
  CHECK(src.find("sequential over the reduced dims") != std::string::npos);
  CHECK(src.find("dt_warp_reduce(acc") == std::string::npos);
  CHECK(src.find("__syncthreads") == std::string::npos);
  // Grid: one thread per kept element.
  int64_t params[2] = {1000, 4096};
  CHECK(cudaLaunchDims(k, params, 100).grid == (1000 + kCudaBlock - 1) / kCudaBlock);
  Kernel d = sumKernel(DType::F32);
  CHECK(emitCudaKernel(d, "dt_def").source.find("dt_warp_reduce(acc") != std::string::npos);
}
