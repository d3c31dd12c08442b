// tests/cudasim: kernels with a scatter-add store (index_add fused into the
// kernel that makes its rows; codegen/CudaScatter.cpp) run through the shim
// with the cuda backend's launch protocol (lists from cudaScatterLists, one
// launch, or chunks then the fold), against interpretKernel: the plain
// outputs bit for bit, the scatter output bit for bit in one chunk (the
// reference's order) and, split, against the split scatter's order applied
// to the rows the kernel adds.
#include "cudasim/common.h"

#include "codegen/CudaEmitter.h"
#include "runtime/CudaDataKernels.h"

#include <cstdio>
#include <cstring>

using namespace dt;

namespace {

/// Runs scatter kernel `k` over `shape` (dim 0: the source rows) into an
/// output of `rows` rows, in `split` chunks (0: cudaScatterChunks on 2 SMs).
void runScatter(const Kernel &k, const std::vector<int64_t> &shape, int64_t rows, int64_t split,
                int tag) {
  SimKernel fn = loadKernel(k, tag);
  if (!fn)
    return;
  const KStore &sc = *scatterStore(k);
  const int R = k.rank, I = (int)k.inputs.size(), O = (int)k.outputs.size();
  const int idsIn = scatterIdsInput(k);
  std::mt19937 g(tag);
  std::vector<int64_t> outShape = shape;
  outShape[0] = rows;
  int64_t n = 1, inner = 1;
  for (auto s : shape)
    n *= s;
  for (int d = 1; d < R; ++d)
    inner *= shape[d];
  auto rm = rowMajorStrides(shape);
  std::vector<std::vector<int64_t>> inS(I, rm), outS(O, rm);
  std::vector<int64_t> elems(I, n);
  inS[idsIn] = std::vector<int64_t>(R, 0);
  inS[idsIn][0] = 1;
  elems[idsIn] = shape[0];
  outS[sc.output] = rowMajorStrides(outShape);
  std::vector<int64_t> goff(R), gstr = rm;
  for (int d = 0; d < R; ++d)
    goff[d] = d + 2;
  auto params =
      kernelParams(k, shape, inS, outS, usesGlobalIndex(k) ? goff : std::vector<int64_t>{},
                   usesGlobalIndex(k) ? gstr : std::vector<int64_t>{});
  // Inputs: random data; ids in [0, rows) (rows past 2/3 of them never
  // named: empty lists).
  HostTensor ids(k.inputs[idsIn], {shape[0]});
  std::vector<std::vector<char>> ref, sim;
  for (int i = 0; i < I; ++i) {
    ref.push_back(randomData(k.inputs[i], elems[i], g));
    if (i == idsIn)
      for (int64_t e = 0; e < shape[0]; ++e) {
        int64_t id = (int64_t)(g() % (uint64_t)std::max<int64_t>(1, rows * 2 / 3));
        if (k.inputs[i] == DType::I32)
          ((int32_t *)ref.back().data())[e] = (int32_t)id;
        else
          ((int64_t *)ref.back().data())[e] = id;
        ids.set(e, (double)id);
      }
    sim.push_back(ref.back());
  }
  const int64_t outElems = rows * inner;
  std::vector<char> base = randomData(k.outputs[sc.output], outElems, g);
  for (int o = 0; o < O; ++o) {
    if (o == sc.output) {
      ref.push_back(base);
      sim.push_back(base);
    } else {
      ref.emplace_back(n * 8 + 64, 0x55);
      sim.emplace_back(n * 8 + 64, 0x33);
    }
  }
  std::vector<void *> rb, sb;
  for (auto &b : ref)
    rb.push_back(b.data());
  for (auto &b : sim)
    sb.push_back(b.data());
  interpretKernel(k, rb.data(), params.data());
  // The launches of runtime/CudaDataKernels.cpp's cudaLaunchScatter.
  std::vector<int64_t> rs, order;
  cudaScatterLists(ids, 0, rows, rs, order);
  int64_t maxList = 0;
  for (int64_t r = 0; r < rows; ++r)
    maxList = std::max(maxList, rs[r + 1] - rs[r]);
  if (split == 0)
    split = cudaScatterChunks(outElems, maxList, 2);
  auto words = cudaKernelArgs(k, sb.data(), params.data());
  const size_t W = words.size();
  std::vector<char> scratch(cudaScatterScratchBytes(k, params.data(), rows, split) + 8, 0x77);
  words[W - 5] = (uint64_t)(uintptr_t)rs.data();
  words[W - 4] = (uint64_t)(uintptr_t)order.data();
  words[W - 3] = (uint64_t)rows;
  words[W - 2] = (uint64_t)split;
  words[W - 1] = (uint64_t)(uintptr_t)scratch.data();
  if (outElems > 0) {
    fn((const unsigned long long *)words.data(),
       (unsigned)cudaScatterBlocks(k, params.data(), rows, split, 2));
    if (split > 1) {
      words[W - 2] = (uint64_t)(-split);
      fn((const unsigned long long *)words.data(),
         (unsigned)cudaScatterBlocks(k, params.data(), rows, 1, 2));
      ++splits;
    }
  }
  // Split: the oracle is the split order over the rows the kernel adds
  // (the same kernel with a plain store of the added value).
  HostTensor want(k.outputs[sc.output], outShape);
  std::memcpy(want.raw(), ref[I + sc.output].data(), want.bytes());
  if (split > 1) {
    Kernel plain = k;
    for (KStore &s : plain.stores)
      s.key = -1;
    std::vector<std::vector<int64_t>> ps = outS;
    ps[sc.output] = rm;
    auto pp =
        kernelParams(plain, shape, inS, ps, usesGlobalIndex(k) ? goff : std::vector<int64_t>{},
                     usesGlobalIndex(k) ? gstr : std::vector<int64_t>{});
    std::vector<std::vector<char>> pb = ref; // the inputs: the interpreter left them as they were
    pb[I + sc.output].assign(n * 8 + 64, 0);
    std::vector<void *> pbp;
    for (auto &b : pb)
      pbp.push_back(b.data());
    HostTensor src(k.outputs[sc.output], shape), b0(k.outputs[sc.output], outShape);
    interpretKernel(plain, pbp.data(), pp.data());
    std::memcpy(src.raw(), pb[I + sc.output].data(), src.bytes());
    std::memcpy(b0.raw(), base.data(), b0.bytes());
    want = splitScatterOrder(b0, src, rs, order, 0, split);
  }
  for (int o = 0; o < O; ++o) {
    std::vector<int64_t> s = o == sc.output ? outShape : shape;
    HostTensor w(k.outputs[o], s), got(k.outputs[o], s);
    std::memcpy(w.raw(), o == sc.output ? want.raw() : ref[I + o].data(), w.bytes());
    std::memcpy(got.raw(), sim[I + o].data(), got.bytes());
    std::string what = k.name + " (" + shapeStr(shape) + " into " + std::to_string(rows) +
                       " rows, split " + std::to_string(split) + ") out" + std::to_string(o);
    sameBits(what.c_str(), w, got);
  }
}

} // namespace

void runScatterKernels(int &tag) {
  for (DType t : {DType::F32, DType::F64})
    for (DType it : {DType::I32, DType::I64}) {
      // Modulation's backward kernel: the token update at every point and
      // g * up * tokens added into the rows the ids name, with the scale
      // gathered by the same ids.
      Kernel k;
      k.name = std::string("scatter_mod_") + dtypeName(t) + "_" + dtypeName(it);
      k.rank = 2;
      int gIn = k.load(k.addInput(t, true));
      int up = k.load(k.addInput(t));
      int tok = k.load(k.addInput(t));
      int pss = k.addInput(t);
      int ids = k.load(k.addInput(it));
      k.addInput(t); // the base: never read
      int gu = k.binary(KOp::Mul, gIn, up);
      int x = k.binary(KOp::Mul, gu, tok);
      int sc = k.binary(KOp::Mul, gu, k.gather(pss, ids, 0));
      int upd = k.binary(KOp::Sub, tok, k.binary(KOp::Mul, k.constant(0.001, t), sc));
      k.store(k.addOutput(t), upd);
      k.scatterStore(k.addOutput(t), x, ids, 0);
      runScatter(k, {37, 13}, 5, 1, tag++); // one chunk: the reference's order
      runScatter(k, {300, 6}, 4, 0, tag++); // cudaScatterChunks' split
      runScatter(k, {300, 6}, 4, 3, tag++); // chunks of 34 with a short last one
      runScatter(k, {0, 6}, 4, 1, tag++);   // no source rows: out = base
      runScatter(k, {9, 0}, 4, 1, tag++);   // empty rows
      runScatter(k, {5, 3}, 1, 2, tag++);   // one row, more chunks than its list
      Kernel d = k;
      d.name += "_det";
      d.deterministic = true;
      runScatter(d, {700, 5}, 3, 1, tag++);
    }
  // Rank 1 (a vector's index_add) and rank 3, with the global index (iota)
  // in the added value.
  for (DType t : {DType::F32, DType::F64}) {
    Kernel k1;
    k1.name = std::string("scatter_r1_") + dtypeName(t);
    k1.rank = 1;
    int a = k1.load(k1.addInput(t));
    int ids = k1.load(k1.addInput(DType::I64));
    k1.addInput(t);
    k1.scatterStore(k1.addOutput(t), k1.binary(KOp::Mul, a, k1.iota(0, t)), ids, 0);
    runScatter(k1, {100}, 7, 1, tag++);
    runScatter(k1, {100}, 7, 4, tag++);
    Kernel k3;
    k3.name = std::string("scatter_r3_") + dtypeName(t);
    k3.rank = 3;
    int b = k3.load(k3.addInput(t));
    int ids3 = k3.load(k3.addInput(DType::I32));
    k3.addInput(t);
    int y = k3.binary(KOp::Add, b, k3.iota(2, t));
    k3.store(k3.addOutput(t), k3.unary(KOp::Neg, y));
    k3.scatterStore(k3.addOutput(t), y, ids3, 0);
    runScatter(k3, {11, 3, 5}, 4, 1, tag++);
    runScatter(k3, {60, 3, 5}, 2, 0, tag++);
  }
}
