// Unit tests of the slice kernel (codegen/FusedKernel.h sliceKernel): a
// fused kernel's gathers read as plain loads of sources moved to the first
// id. Run through the JIT with the executor's buffer moves and
// sliceParams, it must equal the gather kernel run by interpretKernel, bit
// for bit, when the ids are consecutive: along the first, a middle and the
// last dim, two gathers of one source (one more input), ids of both widths,
// every dtype the kernels store, and a sum over the gathered dim.
#include "codegen/CpuJIT.h"
#include "codegen/FusedKernel.h"
#include "kernel_test_util.h"

#include <doctest/doctest.h>

#include <cstring>
#include <random>

using namespace dt;

namespace {

std::vector<int64_t> rowMajor(const std::vector<int64_t> &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

/// out = src[ids1] * src[ids2] + other along `dim` (summed over the last
/// dim with `reduce`): the shape of `q * k` for `q, k = x[:, 0:d], x[:, d:]`.
FusedKernel twoSlices(DType t, int rank, int dim, bool reduce) {
  FusedKernel fk;
  Kernel &k = fk.kernel;
  k.name = "two_slices";
  k.rank = rank;
  int src = k.addInput(t);
  int ids1 = k.addInput(DType::I64), ids2 = k.addInput(DType::I32);
  int other = k.load(k.addInput(t));
  int a = k.gather(src, k.load(ids1), dim), b = k.gather(src, k.load(ids2), dim);
  fk.gathers.push_back({src, ids1, dim, {}});
  fk.gathers.push_back({src, ids2, dim, {}});
  int x = k.binary(KOp::Add, k.binary(KOp::Mul, a, b), other);
  k.store(k.addOutput(t), x);
  if (reduce)
    k.setReduce(KReduce::Sum, {rank - 1});
  return fk;
}

} // namespace

TEST_CASE("slice kernel: gathers become loads, one more input per extra gather of a source") {
  FusedKernel fk = twoSlices(DType::F32, 2, 1, false);
  std::optional<SliceKernel> sk = sliceKernel(fk);
  REQUIRE(sk);
  CHECK(verifyKernel(sk->kernel).empty());
  CHECK(sk->kernel.inputs.size() == 5);
  CHECK(sk->inputOf == std::vector<int>{0, 1, 2, 3, 0});
  CHECK(sk->gatherInput == std::vector<int>{0, 4});
  for (const KNode &n : sk->kernel.nodes) {
    CHECK(n.op != KOp::Gather);
    CHECK(!(n.op == KOp::Load && (n.index == 1 || n.index == 2))); // the ids' loads are gone
  }
  CHECK(kernelHash(sk->kernel) != kernelHash(fk.kernel));
  // sliceParams: the shape, then each input's source strides, then the rest.
  std::vector<int64_t> p = {2, 3, 30, 1, 0, 1, 0, 1, 3, 1, 3, 1};
  CHECK(sliceParams(*sk, fk.kernel, p) ==
        std::vector<int64_t>{2, 3, 30, 1, 0, 1, 0, 1, 3, 1, 30, 1, 3, 1});
  FusedKernel none;
  none.kernel.rank = 1;
  none.kernel.store(none.kernel.addOutput(DType::F32),
                    none.kernel.load(none.kernel.addInput(DType::F32)));
  CHECK(!sliceKernel(none));
}

TEST_CASE("slice kernel jit: equals the gather kernel on consecutive ids, bit for bit") {
  CpuJIT jit;
  std::mt19937_64 rng(5);
  int cases = 0;
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::BF16, DType::F16})
    for (int rank : {1, 2, 3})
      for (int dim = 0; dim < rank; ++dim)
        for (bool reduce : {false, true})
          for (int64_t last : {1, 5, 67}) {
            // Sums of floats: the JIT adds in another order than the
            // interpreter, so only integers are compared summed.
            if (reduce && isFloat(t))
              continue;
            FusedKernel fk = twoSlices(t, rank, dim, reduce);
            std::optional<SliceKernel> sk = sliceKernel(fk);
            REQUIRE(sk);
            std::vector<int64_t> shape(rank, 3);
            shape[rank - 1] = last;
            std::vector<int64_t> srcShape = shape;
            srcShape[dim] += 9;
            const int64_t first1 = 9, first2 = ktest::uni(rng, 0, 9);
            int64_t n = 1, ns = 1;
            for (int64_t s : shape)
              n *= s;
            for (int64_t s : srcShape)
              ns *= s;
            const size_t es = dtypeSize(t);
            std::vector<char> src(ns * es + 8), other(n * es + 8);
            for (int64_t i = 0; i < ns; ++i)
              ktest::fillValue(rng, t, src.data(), i, ktest::coin(rng, 0.05));
            for (int64_t i = 0; i < n; ++i)
              ktest::fillValue(rng, t, other.data(), i, false);
            std::vector<int64_t> ids1(shape[dim]);
            std::vector<int32_t> ids2(shape[dim]);
            for (int64_t j = 0; j < shape[dim]; ++j) {
              ids1[j] = first1 + j;
              ids2[j] = (int32_t)(first2 + j);
            }
            std::vector<int64_t> idsSt(rank, 0);
            idsSt[dim] = shape[dim] == 1 ? 0 : 1;
            std::vector<int64_t> outShape, outSt(rank, 0);
            for (int d = 0; d < rank; ++d)
              if (!(reduce && d == rank - 1))
                outShape.push_back(shape[d]);
            std::vector<int64_t> orm = rowMajor(outShape);
            for (int d = 0, o = 0; d < rank; ++d)
              if (!(reduce && d == rank - 1))
                outSt[d] = orm[o++];
            int64_t m = 1;
            for (int64_t s : outShape)
              m *= s;
            std::vector<int64_t> p = kernelParams(
                fk.kernel, shape, {rowMajor(srcShape), idsSt, idsSt, rowMajor(shape)}, {outSt});
            std::vector<char> want(m * es + 8), got(m * es + 8);
            void *ib[] = {src.data(), ids1.data(), ids2.data(), other.data(), want.data()};
            interpretKernel(fk.kernel, ib, p.data());
            // The executor's launch: the slice kernel's inputs, each gather's
            // source moved to its first id, then the outputs.
            std::vector<void *> sb;
            for (int in : sk->inputOf)
              sb.push_back(ib[in]);
            const int64_t step = rowMajor(srcShape)[dim] * (int64_t)es;
            sb[sk->gatherInput[0]] = src.data() + first1 * step;
            sb[sk->gatherInput[1]] = src.data() + first2 * step;
            sb.push_back(got.data());
            std::vector<int64_t> sp = sliceParams(*sk, fk.kernel, p);
            jit.compile(sk->kernel)(sb.data(), sp.data());
            INFO(dtypeName(t) << " rank " << rank << " dim " << dim << " reduce " << reduce
                              << " last " << last << " first2 " << first2);
            bool same = true;
            for (int64_t i = 0; i < m && same; ++i)
              same = std::memcmp(&want[i * es], &got[i * es], es) == 0 ||
                     (isFloat(t) && std::isnan(ktest::readF(t, want, i)) &&
                      std::isnan(ktest::readF(t, got, i)));
            CHECK(same);
            ++cases;
          }
  CHECK(cases > 80);
}
