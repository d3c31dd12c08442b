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

/// Row `a` (k contiguous values) times column `b` (stride n) over the leaves
/// [l0, l1) of k (the last may be short): the tree of the leaves' fma chains,
/// written as the recursion of BlasDeterministic.h.
template <class T> T definition(const T *a, const T *b, int64_t n, int64_t l0, int64_t l1) {
  const int64_t kb = kDeterministicBlock;
  if (l1 - l0 <= kb) {
    T acc = 0;
    for (int64_t p = l0; p < l1; ++p)
      acc = std::fma(a[p], b[p * n], acc);
    return acc;
  }
  int64_t leaves = (l1 - l0 + kb - 1) / kb, h = 1;
  while (h * 2 < leaves)
    h *= 2;
  T left = definition(a, b, n, l0, l0 + h * kb), right = definition(a, b, n, l0 + h * kb, l1);
  return left + right;
}

template <class T> void checkProduct(int64_t m, int64_t k, int64_t n, std::mt19937_64 &rng) {
  const bool f64 = std::is_same_v<T, double>;
  std::normal_distribution<double> nd;
  std::vector<T> A(m * k), B(k * n), C(m * n), ref(m * n);
  for (auto &x : A)
    x = (T)nd(rng);
  for (auto &x : B)
    x = (T)nd(rng);
  // The definition (BlasDeterministic.h): leaves of 64 k indices, each one
  // fma chain from 0, combined by the fixed tree.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ref[i * n + j] = definition(A.data() + i * k, B.data() + j, n, 0, k);
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

TEST_CASE("deterministic matmul: every instruction set gives the same bits") {
  // AVX-512, AVX2+FMA and the portable path: one lane per element's chain,
  // so the vector width never shows. Sizes straddle every tile and strip
  // edge of both widths (6 rows; strips of 16/32 floats, 8/16 doubles).
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd;
  int compared = 0;
  for (bool f64 : {false, true})
    for (int64_t m : {1, 5, 7, 13})
      for (int64_t k : {3, 64, 129})
        for (int64_t n : {1, 15, 17, 33, 65})
          for (bool ta : {false, true})
            for (bool tb : {false, true}) {
              const size_t es = f64 ? 8 : 4;
              std::vector<unsigned char> A(m * k * es), B(k * n * es);
              auto fill = [&](std::vector<unsigned char> &v) {
                for (size_t i = 0; i < v.size() / es; ++i)
                  if (f64)
                    reinterpret_cast<double *>(v.data())[i] = nd(rng);
                  else
                    reinterpret_cast<float *>(v.data())[i] = (float)nd(rng);
              };
              fill(A);
              fill(B);
              std::vector<unsigned char> want(m * n * es, 1);
              REQUIRE(deterministicMatrixOn(DeterministicIsa::Portable, f64, A.data(), B.data(),
                                            want.data(), m, k, n, ta, tb));
              for (DeterministicIsa isa :
                   {DeterministicIsa::Avx2, DeterministicIsa::Avx512, DeterministicIsa::Best}) {
                std::vector<unsigned char> got(m * n * es, 2);
                if (!deterministicMatrixOn(isa, f64, A.data(), B.data(), got.data(), m, k, n, ta,
                                           tb))
                  continue; // this CPU lacks it
                INFO("isa " << (int)isa << " m=" << m << " k=" << k << " n=" << n << " ta=" << ta
                            << " tb=" << tb << (f64 ? " f64" : " f32"));
                CHECK(std::memcmp(got.data(), want.data(), got.size()) == 0);
                ++compared;
              }
            }
  MESSAGE("compared " << compared << " vector products with the portable path");
  CHECK(compared > 0);
}

/// The product computed by `parts` ranks that each hold a chunk of k of
/// `chunk` indices (the last ones shorter or absent), combined by
/// deterministicTree: the distributed contraction of SPMD lowering.
template <class T>
std::vector<T> byChunks(const std::vector<T> &A, const std::vector<T> &B, int64_t m, int64_t k,
                        int64_t n, int64_t chunk) {
  const bool f64 = std::is_same_v<T, double>;
  std::vector<std::vector<T>> nodes;
  for (int64_t k0 = 0; k0 < k; k0 += chunk) {
    int64_t kc = std::min(chunk, k - k0);
    std::vector<T> As(m * kc), Bs(kc * n), Cs(m * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < kc; ++p)
        As[i * kc + p] = A[i * k + k0 + p];
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t j = 0; j < n; ++j)
        Bs[p * n + j] = B[(k0 + p) * n + j];
    deterministicMatrix(f64, As.data(), Bs.data(), Cs.data(), m, kc, n, false, false);
    nodes.push_back(std::move(Cs));
  }
  std::vector<const void *> ps;
  for (auto &c : nodes)
    ps.push_back(c.data());
  std::vector<T> out(m * n);
  deterministicTree(f64, ps, out.data(), m * n);
  return out;
}

template <class T> void checkChunks(std::mt19937_64 &rng, bool specials) {
  const bool f64 = std::is_same_v<T, double>;
  const int64_t kb = kDeterministicBlock;
  std::normal_distribution<double> nd;
  const int64_t m = 7, n = 19;
  // k = 8 leaves split 1, 2, 4 or 8 ways; 5 leaves in chunks of 2 (the last
  // rank holds one) and of 4; 3 leaves and a short last leaf in chunks of 2.
  struct Split {
    int64_t k, chunk;
  } splits[] = {{8 * kb, 8 * kb}, {8 * kb, 4 * kb}, {8 * kb, 2 * kb},     {8 * kb, kb},
                {5 * kb, 2 * kb}, {5 * kb, 4 * kb}, {2 * kb + 9, 2 * kb}, {2 * kb + 9, kb}};
  for (auto [k, chunk] : splits) {
    std::vector<T> A(m * k), B(k * n), whole(m * n);
    for (auto &x : A)
      x = (T)nd(rng);
    for (auto &x : B)
      x = (T)nd(rng);
    if (specials) { // inf, -inf and NaN in a few rows and columns, in different chunks
      A[0 * k + 3] = INFINITY;
      A[1 * k + k - 1] = -INFINITY;
      B[(k / 2) * n + 4] = NAN;
      A[2 * k + kb + 1] = INFINITY;
      A[2 * k + k - 2] = -INFINITY; // inf - inf: NaN from two chunks
    }
    deterministicMatrix(f64, A.data(), B.data(), whole.data(), m, k, n, false, false);
    std::vector<T> parts = byChunks(A, B, m, k, n, chunk);
    INFO("k=" << k << " chunk=" << chunk << (f64 ? " f64" : " f32"));
    CHECK(std::memcmp(parts.data(), whole.data(), whole.size() * sizeof(T)) == 0);
  }
}

TEST_CASE("deterministic matmul: k chunks on subtree edges, combined by the tree, give the "
          "whole product's bits") {
  std::mt19937_64 rng(11);
  checkChunks<float>(rng, false);
  checkChunks<double>(rng, false);
  checkChunks<float>(rng, true);
  checkChunks<double>(rng, true);
}

TEST_CASE("deterministic matmul: a chunk off the subtree edges would change bits") {
  // The reason SPMD lowering gathers operands instead when a shard does not
  // start on a subtree edge: chunks of 3 leaves are not subtrees of the tree.
  std::mt19937_64 rng(13);
  std::normal_distribution<float> nd;
  const int64_t m = 16, n = 16, k = 6 * kDeterministicBlock;
  std::vector<float> A(m * k), B(k * n), whole(m * n);
  for (auto &x : A)
    x = nd(rng) * 1000;
  for (auto &x : B)
    x = nd(rng);
  deterministicMatrix(false, A.data(), B.data(), whole.data(), m, k, n, false, false);
  std::vector<float> off = byChunks(A, B, m, k, n, 3 * kDeterministicBlock);
  CHECK(std::memcmp(off.data(), whole.data(), whole.size() * sizeof(float)) != 0);
}

TEST_CASE("deterministic kernels: the flag is part of the kernel text and hash") {
  Kernel a = sumKernel(DType::F32), b = a;
  b.deterministic = true;
  CHECK(printKernel(b, false).find("deterministic") != std::string::npos);
  CHECK(printKernel(a, false).find("deterministic") == std::string::npos);
  CHECK(kernelHash(a) != kernelHash(b)); // never one cached binary for both
  CHECK(verifyKernel(b).empty());
}

TEST_CASE("deterministic CUDA reduction: the layouts of the fixed order, never dt_warp_reduce") {
  // A sum over the last dim: a lane per chain (short leaves) or a warp per
  // leaf (long ones), both in the kernel, ordered shuffles only; the
  // unordered warp reduction of the default mode never appears.
  Kernel k = sumKernel(DType::F32);
  k.deterministic = true;
  std::string src = emitCudaKernel(k, "dt_det").source;
  CHECK(src.find("leaves a chunk") != std::string::npos);
  CHECK(src.find("a warp per leaf") != std::string::npos);
  CHECK(src.find("runs of per leaves a warp") != std::string::npos);
  CHECK(src.find("dt_warp_reduce(acc") == std::string::npos);
  // One pass over 4 leaves a row: a warp per output, 8 a block.
  int64_t params[2] = {1000, 256};
  CHECK(cudaReduceSplit(k, params, 100) == 1);
  CHECK(cudaLaunchDims(k, params, 100).grid == (1000 + 7) / 8);
  // A sum over rows: a thread per output, no shuffles at all.
  Kernel c = sumKernel(DType::F32);
  c.setReduce(KReduce::Sum, {0});
  c.deterministic = true;
  std::string csrc = emitCudaKernel(c, "dt_detc").source;
  csrc = csrc.substr(csrc.find("__global__")); // the kernel, not the prelude's helpers
  CHECK(csrc.find("__shfl") == std::string::npos);
  CHECK(csrc.find("__syncthreads") == std::string::npos);
  int64_t cparams[2] = {64, 1000};
  CHECK(cudaLaunchDims(c, cparams, 100).grid == (1000 + kCudaBlock - 1) / kCudaBlock);
  Kernel d = sumKernel(DType::F32);
  CHECK(emitCudaKernel(d, "dt_def").source.find("dt_warp_reduce(acc") != std::string::npos);
}
