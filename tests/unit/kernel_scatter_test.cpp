// Unit tests of the kernel IR's scatter-add store (index_add fused into the
// kernel that makes its rows): its verifier rules, and the LLVM lowering
// against interpretKernel, bit for bit (both add each output element's rows
// in ascending source-row order), over dtypes, id types, ranks, row widths
// around the vector loop's, empty sources and rows no id names, NaN/inf.
#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"
#include "kernel_test_util.h"

#include <doctest/doctest.h>

#include <cstring>
#include <random>

using namespace dt;

namespace {

/// out0 = a - 0.5 * c (plain), out1[ids] += a * c + iota(last dim):
/// modulation's backward kernel's shape.
Kernel scatterKernel(DType t, DType it, int rank) {
  Kernel k;
  k.name = "scatter";
  k.rank = rank;
  int a = k.load(k.addInput(t));
  int c = k.load(k.addInput(t));
  int ids = k.load(k.addInput(it));
  k.addInput(t); // index_add's base: never read
  int x = k.binary(KOp::Add, k.binary(KOp::Mul, a, c), k.iota(rank - 1, t));
  k.store(k.addOutput(t), k.binary(KOp::Sub, a, k.binary(KOp::Mul, k.constant(0.5, t), c)));
  k.scatterStore(k.addOutput(t), x, ids, 0);
  return k;
}

} // namespace

TEST_CASE("kernel ir: a scatter store's rules") {
  Kernel k = scatterKernel(DType::F32, DType::I32, 2);
  CHECK(verifyKernel(k).empty());
  CHECK(printKernel(k).find("store out1, %5 scatter %2 dim 0") != std::string::npos);
  CHECK(scatterIdsInput(k) == 2);
  Kernel r = k;
  r.setReduce(KReduce::Sum, {1});
  CHECK(verifyKernel(r) == "a kernel with a scatter store has no reduction");
  Kernel key = k;
  key.stores[1].key = 0; // a load of f32
  CHECK(verifyKernel(key) == "a scatter store's key must be a load of i32/i64 ids");
  Kernel dim = k;
  dim.stores[1].dim = 2;
  CHECK(verifyKernel(dim) == "a scatter store's dim is out of range");
  Kernel two = k;
  two.stores[0].key = two.stores[1].key;
  CHECK(verifyKernel(two) == "a kernel has at most one scatter store");
  Kernel ints;
  ints.rank = 1;
  int v = ints.load(ints.addInput(DType::I32));
  ints.scatterStore(ints.addOutput(DType::I32), v, v, 0);
  CHECK(verifyKernel(ints) == "a scatter store adds f32 or f64");
  // The hash (and the JIT cache) tells a scatter from a plain store.
  Kernel plain = k;
  plain.stores[1].key = -1;
  CHECK(kernelHash(plain) != kernelHash(k));
}

TEST_CASE("kernel jit: a scatter store adds rows bitwise as the interpreter") {
  CpuJIT jit;
  std::mt19937_64 rng(11);
  int cases = 0;
  for (DType t : {DType::F32, DType::F64})
    for (DType it : {DType::I32, DType::I64})
      for (int rank : {1, 2, 3})
        for (int64_t width : {1, 7, 512, 513})
          for (int64_t src : {0, 1, 9, 40}) {
            if (rank == 1 && width != 1)
              continue;
            Kernel k = scatterKernel(t, it, rank);
            const int64_t rows = 6;
            std::vector<int64_t> shape = {src}, outShape = {rows};
            for (int d = 1; d < rank; ++d) {
              shape.push_back(d == rank - 1 ? width : 2);
              outShape.push_back(shape.back());
            }
            int64_t n = 1, m = 1;
            for (auto s : shape)
              n *= s;
            for (auto s : outShape)
              m *= s;
            const size_t es = dtypeSize(t), is = dtypeSize(it);
            std::vector<char> a(n * es + 8), c(n * es + 8), ids(src * is + 8), base(m * es + 8);
            for (int64_t i = 0; i < n; ++i) {
              ktest::fillValue(rng, t, a.data(), i, ktest::coin(rng, 0.01));
              ktest::fillValue(rng, t, c.data(), i, false);
            }
            for (int64_t i = 0; i < m; ++i)
              ktest::fillValue(rng, t, base.data(), i, false);
            for (int64_t j = 0; j < src; ++j) { // rows 4 and 5 never named
              int64_t id = ktest::uni(rng, 0, 3);
              if (it == DType::I32)
                reinterpret_cast<int32_t *>(ids.data())[j] = (int32_t)id;
              else
                reinterpret_cast<int64_t *>(ids.data())[j] = id;
            }
            auto rm = [](const std::vector<int64_t> &s) {
              std::vector<int64_t> st(s.size(), 1);
              for (size_t d = s.size(); d-- > 1;)
                st[d - 1] = st[d] * s[d];
              return st;
            };
            std::vector<int64_t> idsSt(rank, 0);
            idsSt[0] = 1;
            std::vector<int64_t> goff(rank, 1);
            auto p =
                kernelParams(k, shape, {rm(shape), rm(shape), idsSt, std::vector<int64_t>(rank, 0)},
                             {rm(shape), rm(outShape)}, goff, rm(shape));
            std::vector<char> o0a(n * es + 8), o0b(n * es + 8), o1a = base, o1b = base;
            void *ja[] = {a.data(), c.data(), ids.data(), base.data(), o0a.data(), o1a.data()};
            void *ib[] = {a.data(), c.data(), ids.data(), base.data(), o0b.data(), o1b.data()};
            jit.compile(k)(ja, p.data());
            interpretKernel(k, ib, p.data());
            INFO(dtypeName(t) << " ids " << dtypeName(it) << " rank " << rank << " width " << width
                              << " rows " << src);
            CHECK(std::memcmp(o0a.data(), o0b.data(), n * es) == 0);
            bool same = true;
            for (int64_t i = 0; i < m && same; ++i) {
              same = std::memcmp(&o1a[i * es], &o1b[i * es], es) == 0 ||
                     (std::isnan(ktest::readF(t, o1a, i)) && std::isnan(ktest::readF(t, o1b, i)));
            }
            CHECK(same);
            ++cases;
          }
  CHECK(cases > 50);
}
