// Differential tests of the op kernels (codegen/OpKernels.h): every
// contraction form (matmul with broadcast batches, transposed and 1-D
// operands; einsum with diagonals, full sums, outer products, implicit
// outputs) and transpose, on every dtype, with empty dims and integer
// corner values (products and sums that overflow must wrap), run through
// interpretKernel and the CPU JIT and compared with the reference kernels
// (runtime/RefKernels.h): integers and bool exactly, floats to rounding.
// The `nvrtc` case compiles each kernel's CUDA C++.
#include "codegen/CpuJIT.h"
#include "codegen/CudaEmitter.h"
#include "codegen/CudaLoader.h"
#include "codegen/Nvrtc.h"
#include "codegen/OpKernels.h"
#include "runtime/RefKernels.h"

#include "kernel_test_util.h"

#include <doctest/doctest.h>

using namespace dt;
using namespace dt::ktest;

namespace {

const DType kAll[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                      DType::Bool, DType::BF16, DType::F16};

struct OpCase {
  Op op;
  std::string spec;          ///< einsum
  std::vector<int64_t> ints; ///< matmul flags / transpose permutation
  std::vector<std::vector<int64_t>> shapes;
};

std::vector<OpCase> cases() {
  return {
      {Op::MatMul, "", {}, {{3, 4}, {4, 5}}},
      {Op::MatMul, "", {}, {{2, 1, 3, 4}, {5, 4, 2}}}, // batch broadcast
      {Op::MatMul, "", {1, 0}, {{4, 3}, {4, 5}}},      // a transposed
      {Op::MatMul, "", {0, 1}, {{2, 3, 4}, {5, 4}}},   // b transposed
      {Op::MatMul, "", {1, 1}, {{4, 3}, {5, 4}}},
      {Op::MatMul, "", {}, {{4}, {4, 5}}},    // vector @ matrix
      {Op::MatMul, "", {}, {{3, 4}, {4}}},    // matrix @ vector
      {Op::MatMul, "", {}, {{4}, {4}}},       // dot
      {Op::MatMul, "", {}, {{3, 0}, {0, 5}}}, // empty contraction: zeros
      {Op::MatMul, "", {}, {{0, 4}, {4, 5}}}, // empty result
      {Op::MatMul, "", {}, {{1, 7}, {7, 1}}},
      {Op::Einsum, "ij,jk->ik", {}, {{3, 4}, {4, 2}}},
      {Op::Einsum, "bij,bjk->bik", {}, {{2, 3, 4}, {2, 4, 5}}},
      {Op::Einsum, "bhqd,bhkd->bhqk", {}, {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {Op::Einsum, "ij,kj->ki", {}, {{3, 4}, {2, 4}}},
      {Op::Einsum, "ii->i", {}, {{4, 4}}},
      {Op::Einsum, "ii", {}, {{4, 4}}}, // trace (implicit output)
      {Op::Einsum, "ij->", {}, {{3, 5}}},
      {Op::Einsum, "ij->ji", {}, {{3, 5}}},
      {Op::Einsum, "i,j->ij", {}, {{3}, {4}}},
      {Op::Einsum, "ij,ij->ij", {}, {{3, 4}, {3, 4}}},
      {Op::Einsum, "ij,jk", {}, {{3, 4}, {4, 2}}},
      {Op::Einsum, "ijk,ik->j", {}, {{2, 3, 4}, {2, 4}}},
      {Op::Einsum, "ij,jk->ik", {}, {{0, 4}, {4, 2}}},
      {Op::Einsum, "ij,jk->ik", {}, {{3, 0}, {0, 2}}},
      {Op::Transpose, "", {1, 0}, {{3, 5}}},
      {Op::Transpose, "", {2, 0, 1}, {{2, 3, 4}}},
      {Op::Transpose, "", {1, 0, 2}, {{0, 3, 2}}},
  };
}

Inst instOf(const OpCase &c) {
  Inst in;
  in.op = c.op;
  in.attrs.str = c.spec;
  in.attrs.ints = c.ints;
  return in;
}

HostTensor randomTensor(std::mt19937_64 &rng, DType t, const std::vector<int64_t> &shape,
                        bool corner) {
  HostTensor x(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    fillValue(rng, t, x.raw(), i, corner && coin(rng, 0.5));
  if (t == DType::Bool) // the reference reads bytes as 0/1
    for (int64_t i = 0; i < x.numel(); ++i)
      ((uint8_t *)x.raw())[i] = ((uint8_t *)x.raw())[i] != 0;
  if (isFloat(t)) // finite values: NaN/inf orders differ between sum orders
    for (int64_t i = 0; i < x.numel(); ++i)
      if (!std::isfinite(x.get(i)) || std::fabs(x.get(i)) > 100)
        x.set(i, 1.5);
  return x;
}

HostTensor reference(const OpCase &c, const std::vector<HostTensor> &xs, DType out) {
  Inst in = instOf(c);
  switch (c.op) {
  case Op::MatMul:
    return ref::matmul(ref::matmulOperand(xs[0], in, 0), ref::matmulOperand(xs[1], in, 1), out);
  case Op::Einsum:
    return ref::einsum(c.spec, xs, out);
  default:
    return ref::transpose(xs[0], c.ints);
  }
}

using Runner = std::function<void(const Kernel &, void **, const int64_t *)>;

/// The op kernel of `k` on `xs`: main, then finish.
HostTensor runOpKernel(const OpKernel &k, const std::vector<HostTensor> &xs, DType out,
                       const Runner &run) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<void *> bufs;
  for (auto &x : xs) {
    shapes.push_back(x.shape);
    bufs.push_back(const_cast<void *>(x.raw()));
  }
  OpLaunch l = opKernelLaunch(k, shapes);
  HostTensor acc(k.main.outputs[0], l.outShape);
  for (int64_t i = 0; i < acc.bytes(); ++i) // garbage: the kernel must write every element
    ((uint8_t *)acc.raw())[i] = 0xA5;
  bufs.push_back(acc.raw());
  if (l.iterations > 0 || k.main.reduce != KReduce::None)
    run(k.main, bufs.data(), l.params.data());
  if (!k.finish)
    return acc;
  HostTensor r(out, l.outShape);
  void *fb[2] = {acc.raw(), r.raw()};
  if (r.numel() > 0)
    run(*k.finish, fb, l.finishParams.data());
  return r;
}

std::string compare(const HostTensor &want, const HostTensor &got) {
  if (want.shape != got.shape || want.dtype != got.dtype)
    return "shape or dtype differs: " + ref::dimsStr(want.shape) + " vs " + ref::dimsStr(got.shape);
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (!isFloat(want.dtype)) {
      if (std::memcmp((const char *)want.raw() + i * dtypeSize(want.dtype),
                      (const char *)got.raw() + i * dtypeSize(want.dtype), dtypeSize(want.dtype)))
        return "element " + std::to_string(i) + ": want " + std::to_string(want.get(i)) + ", got " +
               std::to_string(got.get(i));
      continue;
    }
    double w = want.get(i), g = got.get(i);
    double tol = want.dtype == DType::F64 ? 1e-12 : want.dtype == DType::F32 ? 1e-5 : 1e-2;
    if (std::fabs(w - g) > tol * (1 + std::fabs(w)))
      return "element " + std::to_string(i) + ": want " + std::to_string(w) + ", got " +
             std::to_string(g);
  }
  return "";
}

} // namespace

TEST_CASE("op kernels: contractions and transposes match the reference on every dtype") {
  CpuJIT jit;
  std::mt19937_64 rng(7);
  Runner interp = [](const Kernel &k, void **b, const int64_t *p) { interpretKernel(k, b, p); };
  Runner jitted = [&](const Kernel &k, void **b, const int64_t *p) { jit.compile(k)(b, p); };
  int tested = 0;
  for (const OpCase &c : cases())
    for (DType t : kAll)
      for (bool corner : {false, true}) {
        std::vector<HostTensor> xs;
        std::vector<DType> dts;
        std::vector<int> ranks;
        for (auto &s : c.shapes) {
          xs.push_back(randomTensor(rng, t, s, corner));
          dts.push_back(t);
          ranks.push_back((int)s.size());
        }
        auto k = buildOpKernel(instOf(c), dts, ranks, t);
        REQUIRE(k);
        INFO(opName(c.op) << " " << c.spec << " " << dtypeName(t) << " corner " << corner << "\n"
                          << printKernel(k->main));
        HostTensor want = reference(c, xs, t);
        CHECK(compare(want, runOpKernel(*k, xs, t, interp)) == "");
        CHECK(compare(want, runOpKernel(*k, xs, t, jitted)) == "");
        ++tested;
      }
  MESSAGE(tested << " op/dtype cases");
}

TEST_CASE("op kernels: integer matmul wraps exactly like the reference") {
  // (2^31 - 1) * 2 + 2 * 2^30 overflows i32 twice; INT64 likewise.
  for (DType t : {DType::I32, DType::I64}) {
    int64_t big = t == DType::I32 ? INT32_MAX : INT64_MAX;
    HostTensor a(t, {1, 3}), b(t, {3, 1});
    auto put = [&](HostTensor &x, int64_t i, int64_t v) {
      if (t == DType::I32)
        x.data<int32_t>()[i] = (int32_t)v;
      else
        x.data<int64_t>()[i] = v;
    };
    put(a, 0, big), put(a, 1, big / 2 + 1), put(a, 2, -big);
    put(b, 0, 3), put(b, 1, 4), put(b, 2, big);
    OpCase c{Op::MatMul, "", {}, {{1, 3}, {3, 1}}};
    auto k = buildOpKernel(instOf(c), {t, t}, {2, 2}, t);
    REQUIRE(k);
    HostTensor got = runOpKernel(*k, {a, b}, t, [](const Kernel &kk, void **bb, const int64_t *p) {
      interpretKernel(kk, bb, p);
    });
    uint64_t ub = (uint64_t)big, w = ub * 3 + (ub / 2 + 1) * 4 + (0 - ub) * ub;
    int64_t want = t == DType::I32 ? (int64_t)(int32_t)(uint32_t)w : (int64_t)w;
    int64_t have = t == DType::I32 ? got.data<int32_t>()[0] : got.data<int64_t>()[0];
    CHECK(have == want);
    CHECK(compare(ref::matmul(a, b, t), got) == "");
  }
}

TEST_CASE("op kernels: a float einsum that is one matmul has a matmul plan") {
  auto p = einsumMatmulPlan("bhqd,bhkd->bhqk", 4, 4);
  REQUIRE(p);
  CHECK(p->permA.empty());
  CHECK(p->permB.empty());
  CHECK(p->transB);
  CHECK(p->permOut.empty());
  auto q = einsumMatmulPlan("ij,kj->ki", 2, 2); // product [i, k] permuted to [k, i]
  REQUIRE(q);
  CHECK(q->permOut == std::vector<int64_t>{1, 0});
  CHECK_FALSE(einsumMatmulPlan("ii,ij->j", 2, 2)); // a diagonal
  CHECK_FALSE(einsumMatmulPlan("ij,jk->k", 2, 2)); // i summed within a alone
}

TEST_CASE("nvrtc: every op kernel's CUDA C++ compiles warning-free") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  int n = 0;
  for (const OpCase &c : cases())
    for (DType t : kAll) {
      std::vector<DType> dts(c.shapes.size(), t);
      std::vector<int> ranks;
      for (auto &s : c.shapes)
        ranks.push_back((int)s.size());
      auto k = buildOpKernel(instOf(c), dts, ranks, t);
      REQUIRE(k);
      for (const Kernel *kk : {&k->main, k->finish ? &*k->finish : nullptr}) {
        if (!kk)
          continue;
        CudaKernelSource src = emitCudaKernel(*kk, "dt_" + kk->name);
        NvrtcRequest req;
        req.source = src.source;
        req.name = kk->name + ".cu";
        req.arch = "sm_80";
        NvrtcResult r = nvrtc.compile(req);
        INFO(printKernel(*kk) << "\n" << r.log);
        CHECK(r.ok);
        ++n;
      }
    }
  MESSAGE(n << " op kernels compiled");
}
