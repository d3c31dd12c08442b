// Unit tests of codegen/CudaEmitter: the text of emitted kernels, the launch
// geometry and argument words, and (label `nvrtc`) that a representative set
// of kernels -- every unary and binary node on every dtype it accepts, every
// cast, select, constants, sum/max/min reductions, RNG, iota, several outputs,
// rank 0 -- compiles with NVRTC for sm_80 and sm_90 without a single warning.
#include "codegen/CudaEmitter.h"
#include "codegen/Nvrtc.h"
#include "runtime/CudaDataKernels.h"
#include "support/Diagnostics.h"

#include <cmath>
#include <cstdio>

#include <doctest/doctest.h>

using namespace dt;

namespace {

const DType kAll[] = {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool};
const DType kNumeric[] = {DType::F32, DType::F64, DType::I32, DType::I64};

/// Every unary node valid on `t`, each stored to its own output.
Kernel unaryKernel(DType t) {
  Kernel k;
  k.name = std::string("unary_") + dtypeName(t);
  k.rank = 2;
  int x = k.load(k.addInput(t));
  for (int i = 0; i < kNumKOps; ++i) { // every unary node of KernelOps.def
    KOp op = (KOp)i;
    if (kopArity(op) != 1 || op == KOp::Cast || op == KOp::Gather)
      continue;
    bool ok = op == KOp::Not         ? t == DType::Bool
              : isTranscendental(op) ? isFloat(t)
                                     : t != DType::Bool;
    if (ok)
      k.store(k.addOutput(t), k.unary(op, x));
  }
  return k;
}

/// Every binary node valid on `t` (two inputs, one a broadcast in tests).
Kernel binaryKernel(DType t) {
  Kernel k;
  k.name = std::string("binary_") + dtypeName(t);
  k.rank = 2;
  int a = k.load(k.addInput(t)), b = k.load(k.addInput(t));
  for (int i = 0; i < kNumKOps; ++i) { // every binary node of KernelOps.def
    KOp op = (KOp)i;
    if (kopArity(op) != 2)
      continue;
    if (isCompare(op))
      k.store(k.addOutput(DType::Bool), k.binary(op, a, b));
    else if (op == KOp::And || op == KOp::Or) {
      if (t == DType::Bool)
        k.store(k.addOutput(DType::Bool), k.binary(op, a, b));
    } else if (t != DType::Bool)
      k.store(k.addOutput(t), k.binary(op, a, b));
  }
  return k;
}

/// `t` cast to every dtype, plus select and constants (incl. inf/nan/extremes).
Kernel castKernel(DType t) {
  Kernel k;
  k.name = std::string("cast_") + dtypeName(t);
  k.rank = 1;
  int x = k.load(k.addInput(t));
  for (DType to : kAll)
    k.store(k.addOutput(to), k.cast(x, to));
  int c = k.load(k.addInput(DType::Bool));
  double special = isFloat(t) ? INFINITY : t == DType::I32 ? -2147483648.0 : 1.0;
  int s = k.select(c, x, k.constant(special, t));
  k.store(k.addOutput(t), s);
  if (isFloat(t))
    k.store(k.addOutput(t), k.binary(KOp::Add, x, k.constant(NAN, t)));
  return k;
}

Kernel reduceKernel(KReduce r, DType t, int rank, std::vector<int> dims) {
  Kernel k;
  k.name = std::string("reduce_") + kreduceName(r) + "_" + dtypeName(t);
  k.rank = rank;
  int x = k.load(k.addInput(t));
  int y = k.binary(KOp::Mul, x, k.load(k.addInput(t)));
  k.store(k.addOutput(t), y);
  k.store(k.addOutput(t), x);
  k.setReduce(r, std::move(dims));
  return k;
}

Kernel sourceKernel(DType t) {
  Kernel k;
  k.name = std::string("source_") + dtypeName(t);
  k.rank = 3;
  if (isFloat(t)) {
    k.store(k.addOutput(t), k.random(RandomKind::Uniform, 42, t));
    k.store(k.addOutput(t), k.random(RandomKind::Normal, 7, t));
    // Run-time seeds (dropout's `seed=step`): a uniform i64 and i32 input.
    int s64 = k.load(k.addInput(DType::I64, true)), s32 = k.load(k.addInput(DType::I32, true));
    k.store(k.addOutput(t), k.randomSeeded(RandomKind::Normal, s64, t));
    k.store(k.addOutput(t), k.randomSeeded(RandomKind::Uniform, s32, t));
  }
  for (int d = 0; d < 3; ++d)
    k.store(k.addOutput(t), t == DType::Bool ? k.cast(k.iota(d, DType::I64), t) : k.iota(d, t));
  return k;
}

std::vector<Kernel> representativeKernels() {
  std::vector<Kernel> ks;
  for (DType t : kAll) {
    ks.push_back(unaryKernel(t));
    ks.push_back(binaryKernel(t));
    ks.push_back(castKernel(t));
    ks.push_back(sourceKernel(t));
  }
  for (DType t : kNumeric)
    for (KReduce r : {KReduce::Sum, KReduce::Max, KReduce::Min})
      ks.push_back(reduceKernel(r, t, 2, {1}));
  ks.push_back(reduceKernel(KReduce::Sum, DType::F32, 2, {0, 1})); // to a scalar
  ks.push_back(reduceKernel(KReduce::Max, DType::F64, 3, {0, 2}));
  Kernel r0; // rank 0: one element, a constant plus an input
  r0.name = "rank0";
  r0.inputs = {};
  int in = r0.addInput(DType::F32);
  r0.store(r0.addOutput(DType::F32),
           r0.binary(KOp::Add, r0.load(in), r0.constant(1.5, DType::F32)));
  ks.push_back(r0);
  Kernel dead; // a node no store uses must not leave an unused variable
  dead.name = "dead_node";
  dead.rank = 1;
  int a = dead.load(dead.addInput(DType::F32));
  dead.unary(KOp::Exp, a);
  dead.store(dead.addOutput(DType::F32), a);
  ks.push_back(dead);
  return ks;
}

} // namespace

TEST_CASE("cuda emitter: text, symbol and argument words") {
  Kernel k = reduceKernel(KReduce::Sum, DType::F32, 2, {1});
  CudaKernelSource s = emitCudaKernel(k, "dt_k_sum");
  CHECK(s.symbol == "dt_k_sum");
  // buffers, params, then the split words of a reduction (CudaEmitter.h)
  CHECK(s.argWords == 4 + numParams(k) + 2);
  CHECK(s.source.find("const dt_i64 split = (dt_i64)a.w[" + std::to_string(s.argWords - 2) + "]") !=
        std::string::npos);
  Kernel e = binaryKernel(DType::F32);
  CHECK(cudaArgWords(e) == (int)(e.inputs.size() + e.outputs.size()) + (int)numParams(e));
  CHECK(s.source.find(
            "extern \"C\" __global__ void __launch_bounds__(256) dt_k_sum(const dt_args a)") !=
        std::string::npos);
  CHECK(s.source.find("// kernel rank 2") == 0);
  // The name is not in the source: a kernel called otherwise in another
  // program has the same text (and NVRTC cache entry).
  Kernel renamed = k;
  renamed.name = "fused_7";
  CHECK(emitCudaKernel(renamed, "dt_k_sum").source == s.source);
  CHECK(s.source.find("#include") == std::string::npos);
  CHECK_THROWS_AS(emitCudaKernel(k, "1bad"), InternalError);
  // The RNG's inner splitmix64(seed) is folded to a constant.
  Kernel r = sourceKernel(DType::F32);
  char ks[40];
  std::snprintf(ks, sizeof ks, "0x%llxull", (unsigned long long)kernelSplitmix64(42));
  CHECK(emitCudaKernel(r, "rng").source.find(ks) != std::string::npos);
}

TEST_CASE("cuda emitter: few outputs over long reductions are split, others are not") {
  Kernel k = reduceKernel(KReduce::Sum, DType::F32, 2, {1});
  auto split = [&](const Kernel &kk, int64_t rows, int64_t cols, int sms) {
    std::vector<std::vector<int64_t>> in(kk.inputs.size(), {cols, 1}),
        out(kk.outputs.size(), {1, 0});
    std::vector<int64_t> params = kernelParams(kk, {rows, cols}, in, out);
    int64_t s = cudaReduceSplit(kk, params.data(), sms);
    if (s > 1) // every chunk holds work, and the scratch has a slot for each
      CHECK(cudaSplitScratchBytes(kk, params.data(), s) ==
            (int64_t)kk.stores.size() * 8 * rows * s);
    return s;
  };
  CHECK(split(k, 1, 1 << 20, 132) > 1); // a full sum: many blocks
  CHECK(split(k, 1, 1 << 20, 132) <= (1 << 20) / (kCudaSplitReduceMin / 8));
  CHECK(split(k, 4, 1 << 20, 132) > 1);     // few outputs
  CHECK(split(k, 4096, 1 << 20, 132) == 1); // outputs fill the device
  CHECK(split(k, 1, 1000, 132) == 1);       // short: one block is enough
  CHECK(split(k, 0, 1 << 20, 132) == 1);    // nothing to store
  // One wave of the blocks the kernel's occupancy lets an SM hold: a full
  // sum of 2^26 points on 132 SMs in 132 * 8 blocks, in 132 * 5 where only 5
  // fit (1056 would run as 1.6 waves), never more than 8 an SM.
  std::vector<std::vector<int64_t>> in(k.inputs.size(), {1 << 26, 1}),
      out(k.outputs.size(), {1, 0});
  std::vector<int64_t> full = kernelParams(k, {1, 1 << 26}, in, out);
  CHECK(cudaReduceSplit(k, full.data(), 132) == 132 * 8);
  CHECK(cudaReduceSplit(k, full.data(), 132, 5) == 132 * 5);
  CHECK(cudaReduceSplit(k, full.data(), 132, 16) == 132 * 8);
  CHECK(cudaReduceSplit(k, full.data(), 132, 0) == 132);
  // Deterministic sums over the last dim (a lane per chain: 4 leaves of 64
  // a warp) split into runs of 4 leaves whatever the outputs: 2^20 points a
  // row are 16384 leaves, 4096 runs, 8 runs (warps) a block.
  Kernel d = k;
  d.deterministic = true;
  CHECK(cudaArgWords(d) == cudaArgWords(k));
  CHECK(split(d, 1, 1 << 20, 132) == 4096);
  CHECK(cudaSplitBlocks(d, std::vector<int64_t>{1, 1 << 20}.data(), 4096) == 4096 / 8);
  CHECK(split(d, 4096, 1 << 20, 132) == 4096);
  CHECK(split(d, 1, 256, 132) == 1); // 4 leaves: one run
  CHECK(split(d, 1, 64, 132) == 1);  // one leaf
  // Other deterministic sums (over rows: the last dim kept) split into
  // chunks of 2^j whole leaves of 64 rows, a thread each: 2^20 rows are
  // 16384 leaves; one output fills 132 SMs' 270336 threads with a leaf a
  // chunk, 4096 outputs leave 66 chunks to each, so chunks of 256 leaves
  // (64 of them).
  Kernel dc = reduceKernel(KReduce::Sum, DType::F32, 2, {0});
  dc.deterministic = true;
  auto splitRows = [&](int64_t rows, int64_t cols) {
    std::vector<std::vector<int64_t>> in(dc.inputs.size(), {cols, 1}),
        out(dc.outputs.size(), {0, 1});
    std::vector<int64_t> params = kernelParams(dc, {rows, cols}, in, out);
    return cudaReduceSplit(dc, params.data(), 132);
  };
  CHECK(splitRows(1 << 20, 1) == 16384);
  CHECK(cudaSplitBlocks(dc, std::vector<int64_t>{1 << 20, 1}.data(), 16384) == 16384 / kCudaBlock);
  CHECK(splitRows(1 << 20, 4096) == 64);
  CHECK(splitRows(1 << 20, 1 << 20) == 1); // outputs fill the device
  CHECK(splitRows(64, 1) == 1);            // one leaf
  // Max and min keep one chain per output: never split.
  Kernel dm = reduceKernel(KReduce::Max, DType::F32, 2, {1});
  dm.deterministic = true;
  CHECK(cudaArgWords(dm) == cudaArgWords(reduceKernel(KReduce::Max, DType::F32, 2, {1})) - 2);
  CHECK(split(dm, 1, 1 << 20, 132) == 1);
}

TEST_CASE("cuda emitter: sums over rows take the column path, split into chunks of rows") {
  Kernel k = reduceKernel(KReduce::Sum, DType::F32, 2, {0});
  auto params = [&](int64_t rows, int64_t cols) {
    std::vector<std::vector<int64_t>> in(k.inputs.size(), {cols, 1}), out(k.outputs.size(), {0, 1});
    return kernelParams(k, {rows, cols}, in, out);
  };
  auto p = params(4096, 16384); // a bias gradient: 64 tiles of 256 columns
  CHECK(cudaColumnReduction(k, p.data()));
  int64_t s = cudaReduceSplit(k, p.data(), 132);
  CHECK(s == 17); // 64 tiles * 17 chunks fill 132 SMs with 8 blocks each
  CHECK(cudaSplitBlocks(k, p.data(), s) == 64 * 17);
  CHECK(cudaLaunchDims(k, p.data(), 132).grid == 64);
  auto wide = params(64, 1 << 20); // tiles enough: one pass
  CHECK(cudaReduceSplit(k, wide.data(), 132) == 1);
  auto narrow = params(1 << 20, 8); // 8 columns: the row path
  CHECK_FALSE(cudaColumnReduction(k, narrow.data()));
  CHECK(cudaReduceSplit(k, narrow.data(), 132) > 1);
  CHECK(cudaSplitBlocks(k, narrow.data(), 4) == 8 * 4);
  Kernel d = k;
  d.deterministic = true; // its own thread-per-output kernel
  CHECK_FALSE(cudaColumnReduction(d, p.data()));
  CHECK(emitCudaKernel(k, "col").source.find("cudaColumnReduction") != std::string::npos);
}

TEST_CASE("cuda emitter: kernel args and launch dims follow the ABI") {
  Kernel k = binaryKernel(DType::F32);
  std::vector<int64_t> shape = {3, 5};
  std::vector<std::vector<int64_t>> in = {{5, 1}, {0, 1}};
  std::vector<std::vector<int64_t>> out(k.outputs.size(), {5, 1});
  std::vector<int64_t> params = kernelParams(k, shape, in, out);
  std::vector<void *> bufs(k.inputs.size() + k.outputs.size());
  for (size_t i = 0; i < bufs.size(); ++i)
    bufs[i] = reinterpret_cast<void *>(0x1000 * (i + 1));
  auto w = cudaKernelArgs(k, bufs.data(), params.data());
  REQUIRE((int)w.size() == cudaArgWords(k));
  CHECK(w[0] == 0x1000);
  CHECK(w[bufs.size()] == 3);
  CHECK(w[bufs.size() + 1] == 5);
  CHECK(cudaLaunchDims(k, params.data(), 132).grid == 1);
  std::vector<int64_t> big = params;
  big[0] = 1 << 20;
  CHECK(cudaLaunchDims(k, big.data(), 132).grid == 132 * 32);
  big[0] = 0;
  CHECK(cudaLaunchDims(k, big.data(), 132).grid == 0);

  Kernel r = reduceKernel(KReduce::Sum, DType::F32, 2, {1});
  std::vector<int64_t> rp = kernelParams(r, {100, 10}, {{10, 1}, {10, 1}}, {{1, 0}, {1, 0}});
  CHECK(cudaLaunchDims(r, rp.data(), 132).grid == 13); // warp per output: 8 per block
  rp = kernelParams(r, {100, 5000}, {{5000, 1}, {5000, 1}}, {{1, 0}, {1, 0}});
  CHECK(cudaLaunchDims(r, rp.data(), 132).grid == 100); // block per output
  rp = kernelParams(r, {7, 0}, {{0, 1}, {0, 1}}, {{1, 0}, {1, 0}});
  CHECK(cudaLaunchDims(r, rp.data(), 132).grid == 1); // empty reduction stores identities
}

TEST_CASE("nvrtc: every representative emitted kernel compiles for sm_80 and sm_90 warning-free") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  int n = 0;
  for (const Kernel &k : representativeKernels()) {
    CudaKernelSource src = emitCudaKernel(k, "dt_" + k.name);
    for (const char *arch : {"sm_80", "sm_90"}) {
      NvrtcRequest req;
      req.source = src.source;
      req.name = k.name + ".cu";
      req.arch = arch;
      req.warningsAsErrors = true;
      NvrtcResult r = nvrtc.compile(req);
      INFO(k.name << " for " << std::string(arch) << ":\n"
                  << r.log << "\n"
                  << (r.ok ? "" : src.source));
      CHECK(r.ok);
      ++n;
    }
  }
  MESSAGE(n << " NVRTC compilations");
}

TEST_CASE("cuda scatter-add: a list is split only when the outputs cannot fill the device") {
  // modulation's index_add into 16 rows of 4096 (1024 rows a list) on 132
  // SMs: 8 chunks of 128 rows, 524k threads, 1.94 of the 270k a wave holds
  // (9 chunks would be 2.18 waves: a third wave a fifth full).
  CHECK(cudaScatterChunks(16 * 4096, 1024, 132) == 8);
  // Too many outputs for two chunks' waves: one thread per output.
  CHECK(cudaScatterChunks(300000, 1024, 132) == 1);
  // Enough outputs (an embedding's gradient): one thread per output.
  CHECK(cudaScatterChunks(50000 * 1024, 40, 132) == 1);
  // Lists too short to cut into chunks of kScatterChunkMin.
  CHECK(cudaScatterChunks(16, kScatterChunkMin * 2 - 1, 132) == 1);
  CHECK(cudaScatterChunks(16, kScatterChunkMin * 3, 132) == 3);
  CHECK(cudaScatterChunks(0, 1 << 20, 132) == 1);
}
