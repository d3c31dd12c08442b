// GPU execution tests (label `gpu`; need an NVIDIA GPU and driver): emitted
// kernels against the reference interpreter, the caching allocator, cuBLAS
// GEMM against a host loop, and the CudaCopyComm / NcclComm collectives.
#include "codegen/CudaEmitter.h"
#include "runtime/BlasDeterministic.h"
#include "runtime/CudaComm.h"
#include "runtime/CudaDeterministicGemm.h"
#include "runtime/CudaRuntime.h"
#include "runtime/HostTensor.h"
#include "support/Diagnostics.h"
#include "support/LowPrecision.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

using namespace dt;

namespace {

/// Fills `t` elements of dtype `dt` with small random values (a few NaN-free
/// specials for floats: 0, -0, negatives). `spread`: floats of magnitudes
/// 2^-24..2^24 instead, whose sums round differently in every order.
std::vector<char> randomData(DType t, int64_t n, std::mt19937 &g, bool spread = false) {
  std::vector<char> v(n * dtypeSize(t));
  std::uniform_int_distribution<int> d(-5, 5), e(-24, 24);
  std::uniform_real_distribution<double> m(-1, 1);
  for (int64_t i = 0; i < n; ++i) {
    int x = d(g);
    switch (t) {
    case DType::F32:
      reinterpret_cast<float *>(v.data())[i] = spread ? (float)std::ldexp(m(g), e(g)) : x * 0.75f;
      break;
    case DType::F64:
      reinterpret_cast<double *>(v.data())[i] = spread ? std::ldexp(m(g), e(g)) : x * 0.75;
      break;
    case DType::I32:
      reinterpret_cast<int32_t *>(v.data())[i] = x;
      break;
    case DType::I64:
      reinterpret_cast<int64_t *>(v.data())[i] = x;
      break;
    case DType::Bool:
      reinterpret_cast<uint8_t *>(v.data())[i] = x > 0;
      break;
    case DType::BF16:
      reinterpret_cast<uint16_t *>(v.data())[i] = doubleToBf16(x * 1.1);
      break;
    case DType::F16:
      reinterpret_cast<uint16_t *>(v.data())[i] = doubleToHalf(x * 1.1);
      break;
    }
  }
  return v;
}

/// Runs `k` on shape `shape` (row-major buffers; input 1 broadcast along dim 0
/// when `broadcast`) on the GPU and with interpretKernel; compares outputs
/// within relative tolerance `relTol` (0: exactly; NaN matches NaN).
void checkKernel(CudaContext &ctx, const Kernel &k, std::vector<int64_t> shape, bool broadcast,
                 double relTol, bool spread = false) {
  std::mt19937 g(1234);
  const int R = k.rank, I = (int)k.inputs.size(), O = (int)k.outputs.size();
  std::vector<int64_t> rm = rowMajorStrides(shape);
  int64_t n = 1;
  for (auto s : shape)
    n *= s;
  std::vector<std::vector<int64_t>> inS(I, rm), outS(O, rm);
  for (int i = 0; i < I; ++i)
    if (broadcast && i == 1 && R > 0)
      inS[i][0] = 0;
  int64_t kept = 1;
  for (int d = 0; d < R; ++d)
    if (!isReducedDim(k, d))
      kept *= shape[d];
  for (int o = 0; o < O; ++o) {
    std::vector<int64_t> keptShape;
    for (int d = 0; d < R; ++d)
      keptShape.push_back(isReducedDim(k, d) ? 1 : shape[d]);
    outS[o] = rowMajorStrides(keptShape);
    for (int d = 0; d < R; ++d)
      if (isReducedDim(k, d))
        outS[o][d] = 0;
  }
  std::vector<int64_t> params = kernelParams(k, shape, inS, outS);
  std::vector<std::vector<char>> host;
  std::vector<void *> hb, db;
  for (int i = 0; i < I; ++i)
    host.push_back(randomData(k.inputs[i], n, g, spread));
  for (int o = 0; o < O; ++o)
    host.push_back(std::vector<char>(kept * dtypeSize(k.outputs[o])));
  CudaStream s = ctx.streamForRank(0);
  for (auto &h : host) {
    hb.push_back(h.data());
    void *d = ctx.alloc((int64_t)h.size() + 1, s);
    ctx.copyToDevice(d, h.data(), (int64_t)h.size(), s);
    db.push_back(d);
  }
  interpretKernel(k, hb.data(), params.data());
  ctx.launch(ctx.kernel(k), db.data(), params.data(), s);
  for (int o = 0; o < O; ++o) {
    std::vector<char> got(host[I + o].size());
    ctx.copyToHost(got.data(), db[I + o], (int64_t)got.size(), s);
    HostTensor want(k.outputs[o], {kept}), have(k.outputs[o], {kept});
    std::memcpy(want.raw(), host[I + o].data(), got.size());
    std::memcpy(have.raw(), got.data(), got.size());
    for (int64_t i = 0; i < kept; ++i) {
      double w = want.get(i), h = have.get(i);
      INFO(k.name << " output " << o << " element " << i);
      if (std::isnan(w))
        CHECK(std::isnan(h));
      else if (relTol == 0 || std::isinf(w)) // x / 0: the same infinity
        CHECK(w == h);
      else
        CHECK(std::fabs(w - h) <= relTol * std::max(1.0, std::fabs(w)));
    }
  }
  for (void *d : db)
    ctx.free(d);
}

} // namespace

TEST_CASE("cuda gpu: context, allocator reuse and stats") {
  CudaLibraries libs;
  CudaContext ctx(libs);
  MESSAGE(ctx.deviceName() << " " << ctx.arch() << " SMs " << ctx.numSMs());
  CHECK(ctx.computeCapability() >= 70);
  void *a = ctx.alloc(1000);
  ctx.free(a);
  void *b = ctx.alloc(900); // same size class, same stream: reused
  CHECK(a == b);
  CHECK(ctx.allocStats().deviceAllocs == 1);
  CHECK(ctx.allocStats().cacheHits == 1);
  ctx.free(b);
  ctx.releaseCache();
  CHECK(ctx.allocStats().bytesCached == 0);
}

TEST_CASE("cuda gpu: elementwise and reduction kernels match the interpreter") {
  CudaLibraries libs;
  CudaContext ctx(libs);
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    Kernel k;
    k.name = std::string("arith_") + dtypeName(t);
    k.rank = 2;
    int a = k.load(k.addInput(t)), b = k.load(k.addInput(t));
    for (KOp op : {KOp::Add, KOp::Sub, KOp::Mul, KOp::Div, KOp::Maximum, KOp::Minimum, KOp::Pow,
                   KOp::Mod, KOp::FloorDiv})
      k.store(k.addOutput(t), k.binary(op, a, b));
    k.store(k.addOutput(DType::Bool), k.binary(KOp::Lt, a, b));
    k.store(k.addOutput(DType::I32), k.cast(a, DType::I32));
    double tol = isFloat(t) ? 4e-7 : 0; // powf/pow differ from libm by a few ulp
    checkKernel(ctx, k, {37, 129}, false, tol);
    checkKernel(ctx, k, {37, 129}, true, tol);
    for (KReduce r : {KReduce::Sum, KReduce::Max, KReduce::Min}) {
      Kernel rk;
      rk.name = std::string("reduce_") + kreduceName(r) + "_" + dtypeName(t);
      rk.rank = 2;
      rk.store(rk.addOutput(t), rk.load(rk.addInput(t)));
      rk.setReduce(r, {1});
      checkKernel(ctx, rk, {33, 5000}, false, isFloat(t) ? 1e-12 : 0); // block per output
      checkKernel(ctx, rk, {3000, 7}, false, isFloat(t) ? 1e-12 : 0);  // warp per output
    }
  }
  // Deterministic mode: every sum bit-identical to the interpreter's fixed
  // order (ir/DeterministicOrder.h) on data whose sums round differently in
  // any other order: over the last dim (a warp per leaf: one leaf, a few,
  // split runs, rows not a multiple of 32), over rows (a thread per output
  // and chunk), over both (a full sum: leaves of 64 rows), integer sums too.
  for (DType t : {DType::F32, DType::F64, DType::I32})
    for (const std::vector<int> &dims :
         {std::vector<int>{1}, std::vector<int>{0}, std::vector<int>{0, 1}}) {
      Kernel dk;
      dk.name = std::string("det_sum_") + dtypeName(t) + "_" + std::to_string(dims.size()) +
                std::to_string(dims[0]);
      dk.rank = 2;
      int p = dk.load(dk.addInput(t)), q = dk.load(dk.addInput(t));
      dk.store(dk.addOutput(t), dk.binary(KOp::Mul, p, q));
      dk.store(dk.addOutput(t), p);
      dk.deterministic = true;
      dk.setReduce(KReduce::Sum, dims);
      for (std::vector<int64_t> shape : {std::vector<int64_t>{3000, 7},
                                         {33, 5000},
                                         {700, 300},
                                         {1, 100000},
                                         {4096, 64},
                                         {130, 1000}})
        checkKernel(ctx, dk, shape, false, 0, true);
      checkKernel(ctx, dk, {257, 520}, true, 0, true); // input 1 broadcast along rows
    }
  Kernel u;
  u.name = "transcendental";
  u.rank = 1;
  int x = u.load(u.addInput(DType::F32));
  for (KOp op : {KOp::Exp, KOp::Tanh, KOp::Sigmoid, KOp::Sin, KOp::Cos, KOp::Sqrt, KOp::Rsqrt,
                 KOp::Erf, KOp::Log1p, KOp::Expm1})
    u.store(u.addOutput(DType::F32), u.unary(op, x));
  checkKernel(ctx, u, {4099}, false, 5e-7);
  Kernel rng;
  rng.name = "rng";
  rng.rank = 2;
  rng.store(rng.addOutput(DType::F32), rng.random(RandomKind::Uniform, 9, DType::F32));
  rng.store(rng.addOutput(DType::F32), rng.random(RandomKind::Normal, 9, DType::F32));
  rng.store(rng.addOutput(DType::I64), rng.iota(1, DType::I64));
  checkKernel(ctx, rng, {65, 33}, false, 1e-6); // normal: logf/cosf within a few ulp
}

TEST_CASE("cuda gpu: deterministic mode's matrix product has the CPU's bits") {
  CudaLibraries libs;
  CudaContext ctx(libs);
  CudaStream s = ctx.streamForRank(0);
  std::mt19937 g(7);
  struct Case {
    int64_t batch, m, k, n;
  };
  for (bool f64 : {false, true})
    for (int flags = 0; flags < 4; ++flags)
      // An element a thread (16 rows, 5 rows, 1 x 1) and a tile a block (33 x
      // 70 and larger: partial tiles, several tiles, remainder leaves).
      for (Case c :
           {Case{1, 16, 4096, 64}, Case{1, 33, 200, 70}, Case{2, 5, 129, 3}, Case{1, 1, 1, 1},
            Case{1, 4, 0, 5}, Case{2, 130, 300, 97}, Case{1, 256, 1024, 256}, Case{1, 40, 0, 40}}) {
        const bool ta = flags & 1, tb = flags & 2;
        const DType t = f64 ? DType::F64 : DType::F32;
        const int64_t es = f64 ? 8 : 4, na = c.m * c.k, nb = c.k * c.n, nc = c.m * c.n;
        std::vector<char> ha = randomData(t, c.batch * na, g, true),
                          hb = randomData(t, c.batch * nb, g, true), want(c.batch * nc * es),
                          got(c.batch * nc * es);
        for (int64_t bi = 0; bi < c.batch; ++bi) {
          if (c.k == 0)
            std::memset(want.data() + bi * nc * es, 0, nc * es);
          else
            deterministicMatrix(f64, ha.data() + bi * na * es, hb.data() + bi * nb * es,
                                want.data() + bi * nc * es, c.m, c.k, c.n, ta, tb);
        }
        GemmDesc d;
        d.type = f64 ? GemmType::F64 : GemmType::F32;
        d.m = c.m, d.k = c.k, d.n = c.n, d.transA = ta, d.transB = tb, d.batch = c.batch;
        d.strideA = na, d.strideB = nb, d.strideC = nc;
        void *da = ctx.alloc((int64_t)ha.size() + 1, s), *db = ctx.alloc((int64_t)hb.size() + 1, s),
             *dc = ctx.alloc((int64_t)got.size() + 1, s);
        ctx.copyToDevice(da, ha.data(), (int64_t)ha.size(), s);
        ctx.copyToDevice(db, hb.data(), (int64_t)hb.size(), s);
        ctx.zero(dc, (int64_t)got.size(), s);
        d.a = da, d.b = db, d.c = dc;
        cudaDeterministicGemm(ctx, d, s);
        ctx.copyToHost(got.data(), dc, (int64_t)got.size(), s);
        ctx.synchronize(s);
        INFO((f64 ? "f64 " : "f32 ")
             << c.batch << "x" << c.m << "x" << c.k << "x" << c.n << " ta " << ta << " tb " << tb);
        CHECK(std::memcmp(want.data(), got.data(), got.size()) == 0);
        ctx.free(da);
        ctx.free(db);
        ctx.free(dc);
      }
}

TEST_CASE("cuda gpu: cuBLAS f32 GEMM (no TF32) matches a host loop") {
  CudaLibraries libs;
  CudaContext ctx(libs);
  const int64_t m = 67, n = 45, kk = 129;
  std::vector<float> A(m * kk), B(kk * n), C(m * n), ref(m * n, 0);
  std::mt19937 g(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto &v : A)
    v = d(g);
  for (auto &v : B)
    v = d(g);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < kk; ++p)
        s += (double)A[i * kk + p] * B[p * n + j];
      ref[i * n + j] = (float)s;
    }
  CudaStream s = ctx.streamForRank(0);
  void *dA = ctx.alloc(A.size() * 4, s), *dB = ctx.alloc(B.size() * 4, s),
       *dC = ctx.alloc(C.size() * 4, s);
  ctx.copyToDevice(dA, A.data(), A.size() * 4, s);
  ctx.copyToDevice(dB, B.data(), B.size() * 4, s);
  GemmDesc gd;
  gd.m = m, gd.n = n, gd.k = kk, gd.a = dA, gd.b = dB, gd.c = dC;
  ctx.gemm(gd, s);
  ctx.copyToHost(C.data(), dC, C.size() * 4, s);
  for (int64_t i = 0; i < m * n; ++i)
    CHECK(std::fabs(C[i] - ref[i]) <= 1e-4f); // TF32 would be off by ~1e-2
}

TEST_CASE("cuda gpu: CudaCopyComm collectives over 4 virtual ranks on one GPU") {
  CudaLibraries libs;
  CudaContext ctx(libs);
  const int P = 4;
  const int64_t n = 1000;
  CudaCopyGroup group(ctx, {0, 1, 2, 3}, 60);
  std::vector<std::vector<float>> got(P, std::vector<float>(n));
  std::vector<std::vector<float>> gathered(P, std::vector<float>(n * P));
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      ctx.makeCurrent();
      CudaStream s = ctx.streamForRank(r);
      CudaCopyComm comm(group, r, s);
      std::vector<float> mine(n);
      for (int64_t i = 0; i < n; ++i)
        mine[i] = (float)(r + 1) * i;
      void *d = ctx.alloc(n * 4, s), *all = ctx.alloc(n * 4 * P, s);
      ctx.copyToDevice(d, mine.data(), n * 4, s);
      comm.allGatherV(d, all, std::vector<int64_t>(P, n), DType::F32);
      comm.allReduce(d, d, n, DType::F32, ReduceOp::Sum); // in place
      ctx.copyToHost(got[r].data(), d, n * 4, s);
      ctx.copyToHost(gathered[r].data(), all, n * 4 * P, s);
      comm.barrier();
      ctx.free(d);
      ctx.free(all);
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < P; ++r)
    for (int64_t i = 0; i < n; ++i) {
      CHECK(got[r][i] == 10.0f * i);
      for (int j = 0; j < P; ++j)
        CHECK(gathered[r][j * n + i] == (float)(j + 1) * i);
    }
}

TEST_CASE("cuda gpu: NcclComm with one rank per GPU (single process, rank 0 of 1)") {
  CudaLibraries libs;
  std::string why;
  if (!libs.available(CudaLib::Nccl, &why)) {
    MESSAGE("no NCCL: " << why);
    return;
  }
  CudaContext ctx(libs);
  CudaStream s = ctx.streamForRank(0);
  NcclComm comm(ctx, 1, 0, NcclComm::uniqueId(libs), s);
  std::vector<int32_t> v = {1, 2, 3, 4}, out(4);
  void *d = ctx.alloc(16, s);
  ctx.copyToDevice(d, v.data(), 16, s);
  comm.allReduce(d, d, 4, DType::I32, ReduceOp::Avg);
  ctx.copyToHost(out.data(), d, 16, s);
  CHECK(out == v);
  ctx.free(d);
}
