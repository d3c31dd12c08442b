// tests/cudasim: runs kernels emitted by codegen/CudaEmitter on the CPU
// through tests/cudasim/shim.h (g++ per kernel, dlopen) and compares every
// output with interpretKernel, bitwise (float sums within 1e-6). Covers every
// unary/binary node and cast on every dtype, the contiguous vector path and
// its tail, broadcast (strided) inputs, scalars, warp- and block-per-output
// reductions, empty reductions, RNG and iota with global offsets, rank 0.
// Build and run with scripts/cuda-host-sim.sh (minutes: one g++ per kernel).
//
// usage: cudasim WORK_DIR SHIM_H
#include "codegen/CudaEmitter.h"
#include "runtime/HostTensor.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include "support/LowPrecision.h"
#include <dlfcn.h>
#include <fstream>
#include <random>
using namespace dt;
static int fails = 0, checks = 0;
static std::string gWork, gShim;
std::vector<char> randomData(DType t, int64_t n, std::mt19937 &g) {
  std::vector<char> v(n * dtypeSize(t) + 64);
  std::uniform_int_distribution<int> d(-5, 5);
  for (int64_t i = 0; i < n; ++i) {
    int x = d(g);
    switch (t) {
    case DType::F32:
      reinterpret_cast<float *>(v.data())[i] = x == 5 ? NAN : x * 0.75f;
      break;
    case DType::F64:
      reinterpret_cast<double *>(v.data())[i] = x == 5 ? -0.0 : x * 0.75;
      break;
    case DType::I32:
      reinterpret_cast<int32_t *>(v.data())[i] = x == 5 ? INT32_MIN : x;
      break;
    case DType::I64:
      reinterpret_cast<int64_t *>(v.data())[i] = x == 5 ? INT64_MIN : x;
      break;
    case DType::Bool:
      reinterpret_cast<uint8_t *>(v.data())[i] = x > 0;
      break;
    case DType::BF16: // includes values that round (1.1) and NaN
      reinterpret_cast<uint16_t *>(v.data())[i] = doubleToBf16(x == 5 ? NAN : x * 1.1);
      break;
    case DType::F16:
      reinterpret_cast<uint16_t *>(v.data())[i] = doubleToHalf(x == 5 ? -0.0 : x * 1.1);
      break;
    }
  }
  return v;
}
void run(const Kernel &k, std::vector<int64_t> shape, bool bcast, double tol, int tag) {
  std::string sym = "simk" + std::to_string(tag);
  auto src = emitCudaKernel(k, sym);
  std::string base = gWork + "/k" + std::to_string(tag);
  {
    std::ofstream f(base + ".cpp");
    f << src.source << "\nextern \"C\" void sim_run(const unsigned long long *w, unsigned grid) {\n"
      << "  dt_args a; std::memcpy(&a, w, sizeof a);\n  simLaunch(grid, 256, [&] { " << sym
      << "(a); });\n}\n";
  }
  std::string cmd = "g++ -std=c++20 -O1 -w -fPIC -shared -include " + gShim + " " + base +
                    ".cpp -o " + base + ".so";
  if (system(cmd.c_str())) {
    printf("compile failed %s\n", k.name.c_str());
    fails++;
    return;
  }
  void *h = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  auto fn = (void (*)(const unsigned long long *, unsigned))dlsym(h, "sim_run");
  std::mt19937 g(tag);
  const int R = k.rank, I = k.inputs.size(), O = k.outputs.size();
  auto rm = rowMajorStrides(shape);
  int64_t n = 1;
  for (auto s : shape)
    n *= s;
  std::vector<std::vector<int64_t>> inS(I, rm), outS(O, rm);
  if (bcast && I > 1 && R > 0)
    inS[1][0] = 0;
  int64_t kept = 1;
  std::vector<int64_t> ks;
  for (int d = 0; d < R; ++d) {
    ks.push_back(isReducedDim(k, d) ? 1 : shape[d]);
    if (!isReducedDim(k, d))
      kept *= shape[d];
  }
  for (int o = 0; o < O; ++o) {
    outS[o] = rowMajorStrides(ks);
    for (int d = 0; d < R; ++d)
      if (isReducedDim(k, d))
        outS[o][d] = 0;
  }
  std::vector<int64_t> goff(R), gstr(R);
  for (int d = 0; d < R; ++d)
    goff[d] = 3 * d + 1;
  std::vector<int64_t> gshape = shape;
  for (int d = 0; d < R; ++d)
    gshape[d] += 7;
  gstr = rowMajorStrides(gshape);
  auto params =
      kernelParams(k, shape, inS, outS, usesGlobalIndex(k) ? goff : std::vector<int64_t>{},
                   usesGlobalIndex(k) ? gstr : std::vector<int64_t>{});
  std::vector<std::vector<char>> ref, sim;
  for (int i = 0; i < I; ++i) {
    ref.push_back(randomData(k.inputs[i], n, g));
    sim.push_back(ref.back());
  }
  for (int o = 0; o < O; ++o) {
    ref.emplace_back(kept * 8 + 64, 0x55);
    sim.emplace_back(kept * 8 + 64, 0x33);
  }
  std::vector<void *> rb, sb;
  for (auto &b : ref)
    rb.push_back(b.data());
  for (auto &b : sim)
    sb.push_back(b.data());
  interpretKernel(k, rb.data(), params.data());
  auto words = cudaKernelArgs(k, sb.data(), params.data());
  auto dims = cudaLaunchDims(k, params.data(), 2);
  if (dims.grid)
    fn((const unsigned long long *)words.data(), dims.grid);
  for (int o = 0; o < O; ++o) {
    HostTensor a(k.outputs[o], {kept}), b(k.outputs[o], {kept});
    std::memcpy(a.raw(), ref[I + o].data(), a.bytes());
    std::memcpy(b.raw(), sim[I + o].data(), b.bytes());
    for (int64_t i = 0; i < kept; ++i) {
      double x = a.get(i), y = b.get(i);
      ++checks;
      bool ok = std::isnan(x) ? std::isnan(y)
                : tol == 0    ? (x == y && std::signbit(x) == std::signbit(y))
                              : std::fabs(x - y) <= tol * std::max(1.0, std::fabs(x));
      if (!ok) {
        if (fails < 30)
          printf("MISMATCH %s out%d[%ld]: ref %.17g sim %.17g\n", k.name.c_str(), o, (long)i, x, y);
        ++fails;
      }
    }
  }
  dlclose(h);
}
int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cudasim WORK_DIR SHIM_H\n");
    return 2;
  }
  gWork = argv[1];
  gShim = argv[2];
  int tag = 0;
  const DType all[] = {DType::F32, DType::F64,  DType::I32, DType::I64,
                       DType::Bool, DType::BF16, DType::F16};
  for (DType t : all) {
    Kernel k;
    k.name = std::string("un_") + dtypeName(t);
    k.rank = 2;
    int x = k.load(k.addInput(t));
    for (KOp op : {KOp::Neg, KOp::Abs, KOp::Relu, KOp::Exp, KOp::Log, KOp::Sqrt, KOp::Rsqrt,
                   KOp::Tanh, KOp::Sigmoid, KOp::Sin, KOp::Cos, KOp::Not,
                   KOp::Erf, KOp::Log1p, KOp::Expm1}) {
      bool ok = op == KOp::Not         ? t == DType::Bool
                : isTranscendental(op) ? isFloat(t)
                                       : t != DType::Bool;
      if (ok)
        k.store(k.addOutput(t), k.unary(op, x));
    }
    for (DType to : all)
      k.store(k.addOutput(to), k.cast(x, to));
    run(k, {5, 37}, false, 0, tag++);
    Kernel b;
    b.name = std::string("bin_") + dtypeName(t);
    b.rank = 2;
    int p = b.load(b.addInput(t)), q = b.load(b.addInput(t));
    if (t != DType::Bool)
      for (KOp op : {KOp::Add, KOp::Sub, KOp::Mul, KOp::Div, KOp::Pow, KOp::Maximum, KOp::Minimum,
                     KOp::Mod, KOp::FloorDiv})
        b.store(b.addOutput(t), b.binary(op, p, q));
    for (KOp op : {KOp::Eq, KOp::Ne, KOp::Lt, KOp::Le, KOp::Gt, KOp::Ge})
      b.store(b.addOutput(DType::Bool), b.binary(op, p, q));
    if (t == DType::Bool)
      for (KOp op : {KOp::And, KOp::Or})
        b.store(b.addOutput(DType::Bool), b.binary(op, p, q));
    else
      b.store(b.addOutput(t), b.select(b.binary(KOp::Lt, p, q), p, b.constant(-2.5, t)));
    run(b, {6, 35}, false, 0, tag++); // contiguous fast path (+ tail)
    run(b, {6, 35}, true, 0, tag++);  // broadcast along dim 0: strided path
    run(b, {1, 1}, true, 0, tag++);   // scalars
    if (t != DType::Bool)
      for (KReduce r : {KReduce::Sum, KReduce::Max, KReduce::Min}) {
        Kernel rk;
        rk.name = std::string("red_") + kreduceName(r) + dtypeName(t);
        rk.rank = 3;
        int a = rk.load(rk.addInput(t)), c = rk.load(rk.addInput(t));
        rk.store(rk.addOutput(t), rk.binary(KOp::Mul, a, c));
        rk.store(rk.addOutput(t), a);
        rk.setReduce(r, {0, 2});
        double tol = isFloat(t) && r == KReduce::Sum ? 1e-6 : 0;
        run(rk, {9, 5, 11}, false, tol, tag++);  // warp per output
        run(rk, {40, 3, 30}, false, tol, tag++); // block per output (1200 >= 1024)
        run(rk, {0, 3, 4}, false, 0, tag++);     // empty reduction: identities
      }
  }
  for (DType t : {DType::F32, DType::F64, DType::I32}) {
    Kernel s;
    s.name = std::string("src_") + dtypeName(t);
    s.rank = 2;
    if (isFloat(t)) {
      s.store(s.addOutput(t), s.random(RandomKind::Uniform, 77, t));
      s.store(s.addOutput(t), s.random(RandomKind::Normal, 77, t));
    }
    s.store(s.addOutput(t), s.iota(0, t));
    s.store(s.addOutput(t), s.iota(1, t));
    run(s, {7, 9}, false, 0, tag++);
  }
  Kernel r0;
  r0.name = "rank0";
  int in0 = r0.addInput(DType::F32);
  r0.store(r0.addOutput(DType::F32),
           r0.binary(KOp::Add, r0.load(in0), r0.constant(1.5, DType::F32)));
  run(r0, {}, false, 0, tag++);
  printf("%d kernels, %d checks, %d mismatches\n", tag, checks, fails);
  return fails != 0;
}
