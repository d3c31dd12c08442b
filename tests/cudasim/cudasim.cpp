// tests/cudasim: runs kernels emitted by codegen/CudaEmitter on the CPU
// through tests/cudasim/shim.h (g++ per distinct kernel, dlopen) and compares every
// output with interpretKernel, bitwise (float sums within 1e-6). Covers every
// unary/binary node and cast on every dtype, the contiguous vector path and
// its tail, broadcast (strided) inputs, scalars, warp- and block-per-output
// reductions, split reductions (two launches), empty reductions, RNG and iota
// with global offsets, rank 0, gathers (index_select inside a kernel),
// scatter stores (index_add fused into a kernel: scatter.cpp); and
// the cuda backend's data-movement kernels
// (runtime/CudaDataKernels.h: strided copy as transpose, gather, scatter-add,
// its split form, fills) against the reference kernels on every dtype; and
// deterministic mode's matrix product (both kernels) against the CPU's.
// Build and run with scripts/cuda-host-sim.sh (minutes: one g++ per distinct kernel).
//
// usage: cudasim WORK_DIR SHIM_H
#include "cudasim/common.h"

#include "codegen/CudaEmitter.h"
#include "runtime/BlasDeterministic.h"
#include "runtime/CudaDataKernels.h"
#include "runtime/CudaDeterministicGemm.h"
#include "runtime/HostTensor.h"
#include "runtime/RefKernels.h"
#include "support/LowPrecision.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
using namespace dt;
int fails = 0, checks = 0, splits = 0;
std::string gWork, gShim;
/// g++'s flags for every kernel and for the shim's precompiled header.
static const char *kFlags = "-std=c++20 -O1 -w -fPIC -ffp-contract=off";
/// `spread` (deterministic kernels): f32/f64 of magnitudes 2^-20..2^20,
/// whose sums round differently in every order, so that a kernel which sums
/// in another order than the interpreter's shows.
std::vector<char> randomData(DType t, int64_t n, std::mt19937 &g, bool spread) {
  std::vector<char> v(n * dtypeSize(t) + 64);
  std::uniform_int_distribution<int> d(-5, 5), e(-20, 20);
  std::uniform_real_distribution<double> m(-1, 1);
  for (int64_t i = 0; i < n; ++i) {
    int x = d(g);
    if (spread && (t == DType::F32 || t == DType::F64)) {
      double y = std::ldexp(m(g), e(g));
      if (t == DType::F32)
        reinterpret_cast<float *>(v.data())[i] = (float)y;
      else
        reinterpret_cast<double *>(v.data())[i] = y;
      continue;
    }
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
int gKernels = 0;  ///< kernels run (CUDASIM_ONLY skips some)
int gCompiles = 0; ///< g++ runs for them (one a distinct kernel)

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s;
  for (auto d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

/// `base`.cpp compiled against the shim and loaded; nullptr (a failure
/// counted, `what` named) when g++ rejects it.
void *compileAndLoad(const std::string &base, const std::string &what) {
  std::string cmd = "g++ " + std::string(kFlags) + " -shared -include " + gShim + " " + base +
                    ".cpp -o " + base + ".so";
  if (system(cmd.c_str())) {
    printf("compile failed %s\n", what.c_str());
    fails++;
    return nullptr;
  }
  return dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
}

/// `bcast`: 0 every input contiguous; 1 input 1 broadcast along dim 0; 2
/// input 1 and every ids input broadcast along the last dim (one value per
/// row: the vector path's row mode when that dim is a multiple of 4).
SimKernel loadKernel(const Kernel &k, int tag) {
  if (const char *only = std::getenv("CUDASIM_ONLY");
      only && k.name.find(only) == std::string::npos)
    return nullptr; // CUDASIM_ONLY=NAME: only the kernels whose name holds NAME
  ++gKernels;
  // One g++ a distinct kernel (its source does not depend on the shape):
  // a kernel run on several shapes and launch paths is compiled once.
  static std::map<std::string, void *> loaded; // open until the process ends
  const std::string source = emitCudaKernel(k, "simk").source;
  void *&h = loaded[source];
  if (!h) {
    std::string base = gWork + "/k" + std::to_string(tag);
    {
      std::ofstream f(base + ".cpp");
      f << source << "\nextern \"C\" void sim_run(const unsigned long long *w, unsigned grid) {\n"
        << "  dt_args a; std::memcpy(&a, w, sizeof a);\n  simLaunch(grid, 256, [&] { simk(a); "
           "});\n}\n";
    }
    h = compileAndLoad(base, k.name);
    if (!h) {
      loaded.erase(source);
      return nullptr;
    }
    ++gCompiles;
  }
  return (SimKernel)dlsym(h, "sim_run");
}

void run(const Kernel &k, std::vector<int64_t> shape, int bcast, double tol, int tag) {
  SimKernel fn = loadKernel(k, tag);
  if (!fn)
    return;
  std::mt19937 g(tag);
  const int R = k.rank, I = k.inputs.size(), O = k.outputs.size();
  auto rm = rowMajorStrides(shape);
  int64_t n = 1;
  for (auto s : shape)
    n *= s;
  std::vector<std::vector<int64_t>> inS(I, rm), outS(O, rm);
  for (int i = 0; i < I; ++i)
    if (k.isUniformInput(i)) // one element for every point (a run-time seed)
      inS[i].assign(R, 0);
  if (bcast == 1 && I > 1 && R > 0)
    inS[1][0] = 0;
  if (bcast == 2 && I > 1 && R > 1)
    inS[1][R - 1] = 0;
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
  // Gathers: the source has its own extent kGatherExtent along the gathered
  // dim, and the ids input feeding it holds ids inside that extent.
  constexpr int64_t kGatherExtent = 4;
  std::vector<int64_t> elems(I, n);
  std::vector<bool> isIds(I, false);
  for (const KNode &nd : k.nodes)
    if (nd.op == KOp::Gather) {
      std::vector<int64_t> s = shape;
      s[nd.dim] = kGatherExtent;
      inS[nd.index] = rowMajorStrides(s);
      elems[nd.index] = 1;
      for (auto e : s)
        elems[nd.index] *= e;
      const KNode &ix = k.nodes[nd.args[0]];
      if (ix.op == KOp::Load) {
        isIds[ix.index] = true;
        if (bcast == 2 && R > 1)
          inS[ix.index][R - 1] = 0;
      }
    }
  auto params =
      kernelParams(k, shape, inS, outS, usesGlobalIndex(k) ? goff : std::vector<int64_t>{},
                   usesGlobalIndex(k) ? gstr : std::vector<int64_t>{});
  std::vector<std::vector<char>> ref, sim;
  for (int i = 0; i < I; ++i) {
    ref.push_back(randomData(k.inputs[i], elems[i], g, k.deterministic));
    if (isIds[i])
      for (int64_t e = 0; e < n; ++e) {
        int64_t id = (int64_t)(g() % kGatherExtent);
        if (k.inputs[i] == DType::I32)
          ((int32_t *)ref.back().data())[e] = (int32_t)id;
        else
          ((int64_t *)ref.back().data())[e] = id;
      }
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
  const int64_t split = cudaReduceSplit(k, params.data(), 2);
  std::vector<char> scratch;
  if (split > 1) { // the two launches of CudaContext::launch
    scratch.assign(cudaSplitScratchBytes(k, params.data(), split), 0x77);
    words[words.size() - 2] = (uint64_t)split;
    words[words.size() - 1] = (uint64_t)(uintptr_t)scratch.data();
    fn((const unsigned long long *)words.data(),
       (unsigned)cudaSplitBlocks(k, params.data(), split));
    words[words.size() - 2] = (uint64_t)(-split);
    fn((const unsigned long long *)words.data(), (unsigned)cudaFoldBlocks(k, params.data(), 2));
    ++splits;
  } else if (dims.grid) {
    fn((const unsigned long long *)words.data(), dims.grid);
  }
  for (int o = 0; o < O; ++o) {
    HostTensor a(k.outputs[o], {kept}), b(k.outputs[o], {kept});
    std::memcpy(a.raw(), ref[I + o].data(), a.bytes());
    std::memcpy(b.raw(), sim[I + o].data(), b.bytes());
    // A reassociated max/min (KernelIR.h) may pick either zero where -0 and
    // +0 tie; everything else is exact.
    const bool eitherZero = k.reduce == KReduce::Max || k.reduce == KReduce::Min;
    for (int64_t i = 0; i < kept; ++i) {
      double x = a.get(i), y = b.get(i);
      ++checks;
      bool ok = std::isnan(x) ? std::isnan(y)
                : tol == 0    ? (x == y && (eitherZero || std::signbit(x) == std::signbit(y)))
                              : std::fabs(x - y) <= tol * std::max(1.0, std::fabs(x));
      if (!ok) {
        if (fails < 30)
          printf("MISMATCH %s (%s) out%d[%ld]: ref %.17g sim %.17g\n", k.name.c_str(),
                 shapeStr(shape).c_str(), o, (long)i, x, y);
        ++fails;
      }
    }
  }
}
/// Compares two host tensors bit for bit (NaN matches NaN); counts checks.
void sameBits(const char *what, const HostTensor &want, const HostTensor &got) {
  ++checks;
  if (want.shape != got.shape || want.dtype != got.dtype) {
    printf("MISMATCH %s: shape or dtype\n", what);
    ++fails;
    return;
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    double x = want.get(i), y = got.get(i);
    if (!(std::isnan(x) ? std::isnan(y) : x == y && std::signbit(x) == std::signbit(y))) {
      printf("MISMATCH %s %s[%ld]: ref %.17g sim %.17g\n", what, dtypeName(want.dtype), (long)i, x,
             y);
      ++fails;
      return;
    }
  }
}

/// index_add(base, ids, src) as the split scatter adds it (runtime/
/// CudaDataKernels.cpp): each output's list cut into `chunks` chunks of
/// ceil(len / chunks), each summed from zero in list order in the kernels'
/// accumulator (Op::A: f32 for bf16/f16), then base and the chunks in order.
HostTensor splitScatterOrder(const HostTensor &base, const HostTensor &src,
                             const std::vector<int64_t> &rs, const std::vector<int64_t> &order,
                             int64_t dim, int64_t chunks) {
  HostTensor out(base.dtype, base.shape);
  int64_t outer = 1, n = base.shape[dim], inner = 1, k = src.shape[dim];
  for (int64_t d = 0; d < dim; ++d)
    outer *= base.shape[d];
  for (size_t d = dim + 1; d < base.shape.size(); ++d)
    inner *= base.shape[d];
  auto each = [&](auto in, auto add, auto outOf) {
    for (int64_t i = 0; i < base.numel(); ++i) {
      int64_t e = i % inner, r = (i / inner) % n, o = i / (inner * n);
      int64_t first = rs[r], len = rs[r + 1] - first, per = (len + chunks - 1) / chunks;
      auto acc = in(base, i);
      for (int64_t c = 0; c < chunks; ++c) {
        decltype(acc) part = 0;
        for (int64_t p = std::min(first + c * per, first + len);
             p < std::min(first + c * per + per, first + len); ++p)
          part = add(part, in(src, (o * k + order[p]) * inner + e));
        acc = add(acc, part);
      }
      outOf(i, acc);
    }
  };
  auto raw = [](const HostTensor &x, auto tag) {
    return static_cast<const decltype(tag) *>(x.raw());
  };
  auto dst = [&](auto tag) { return static_cast<decltype(tag) *>(out.raw()); };
  auto sum = [](auto a, auto b) { return (decltype(a))(a + b); };
  switch (base.dtype) {
  case DType::F32:
    each([&](const HostTensor &x, int64_t j) { return raw(x, 0.0f)[j]; }, sum,
         [&](int64_t i, float v) { dst(0.0f)[i] = v; });
    break;
  case DType::F64:
    each([&](const HostTensor &x, int64_t j) { return raw(x, 0.0)[j]; }, sum,
         [&](int64_t i, double v) { dst(0.0)[i] = v; });
    break;
  case DType::I32:
    each([&](const HostTensor &x, int64_t j) { return raw(x, 0u)[j]; }, sum,
         [&](int64_t i, uint32_t v) { dst(0u)[i] = v; });
    break;
  case DType::I64:
    each([&](const HostTensor &x, int64_t j) { return raw(x, (uint64_t)0)[j]; }, sum,
         [&](int64_t i, uint64_t v) { dst((uint64_t)0)[i] = v; });
    break;
  case DType::Bool:
    each([&](const HostTensor &x, int64_t j) { return raw(x, (uint8_t)0)[j]; },
         [](uint8_t a, uint8_t b) { return (uint8_t)((a || b) ? 1 : 0); },
         [&](int64_t i, uint8_t v) { dst((uint8_t)0)[i] = v; });
    break;
  default: { // bf16 / f16: widened exactly, summed in f32, rounded once
    const bool bf = base.dtype == DType::BF16;
    each(
        [&](const HostTensor &x, int64_t j) {
          uint16_t b = raw(x, (uint16_t)0)[j];
          return bf ? bf16ToFloat(b) : halfToFloat(b);
        },
        sum,
        [&](int64_t i, float v) { dst((uint16_t)0)[i] = bf ? floatToBf16(v) : floatToHalf(v); });
  }
  }
  return out;
}

/// The data-movement kernels of the cuda backend, through the shim, against
/// ref::transpose / indexSelect / indexAdd on every dtype.
void runDataKernels() {
  std::string base = gWork + "/data";
  {
    std::ofstream f(base + ".cpp");
    f << cudaDataKernelSource() << R"(
extern "C" void sim_copy(int es, const void *src, void *dst, long long n, int rank, Dims8 ext,
                         Dims8 ss, long long so, Dims8 ds, long long dof, unsigned grid) {
  simLaunch(grid, 256, [&] {
    if (es == 1) dt_strided_copy_1((const u8 *)src, (u8 *)dst, n, rank, ext, ss, so, ds, dof);
    if (es == 2) dt_strided_copy_2((const u16 *)src, (u16 *)dst, n, rank, ext, ss, so, ds, dof);
    if (es == 4) dt_strided_copy_4((const u32 *)src, (u32 *)dst, n, rank, ext, ss, so, ds, dof);
    if (es == 8) dt_strided_copy_8((const u64 *)src, (u64 *)dst, n, rank, ext, ss, so, ds, dof);
  });
}
extern "C" void sim_fill(int es, void *dst, long long n, unsigned long long bits) {
  simLaunch(2, 256, [&] {
    if (es == 1) dt_fill_1((u8 *)dst, n, bits);
    if (es == 2) dt_fill_2((u16 *)dst, n, bits);
    if (es == 4) dt_fill_4((u32 *)dst, n, bits);
    if (es == 8) dt_fill_8((u64 *)dst, n, bits);
  });
}
extern "C" unsigned sim_bad(const char *t, const void *x, long long n, int nonzero) {
  unsigned flag = 0;
  simLaunch(3, 256, [&] {
    if (!std::strcmp(t, "f32")) dt_bad_factor_f32((const float *)x, n, nonzero, &flag);
    if (!std::strcmp(t, "f64")) dt_bad_factor_f64((const double *)x, n, nonzero, &flag);
    if (!std::strcmp(t, "bf16")) dt_bad_factor_bf16((const Bf16In *)x, n, nonzero, &flag);
    if (!std::strcmp(t, "f16")) dt_bad_factor_f16((const F16In *)x, n, nonzero, &flag);
  });
  return flag;
}
extern "C" void sim_gather(int es, bool i64, const void *src, const void *ids, void *dst,
                           long long total, long long k, long long inner, long long n) {
  simLaunch(4, 256, [&] {
#define G(E, T) if (es == E) { if (i64) dt_gather_##E##_i64((const T *)src, (const long long *)ids, \
    (T *)dst, total, k, inner, n); else dt_gather_##E##_i32((const T *)src, (const int *)ids, \
    (T *)dst, total, k, inner, n); }
    G(1, u8) G(2, u16) G(4, u32) G(8, u64)
  });
}
extern "C" void sim_scatter(const char *t, const void *base, const long long *rs,
                            const long long *order, const void *src, void *dst, long long total,
                            long long n, long long k, long long inner) {
  simLaunch(4, 256, [&] {
#define S(N, OP) if (!std::strcmp(t, #N)) dt_scatter_add_##N((const OP::T *)base, rs, order, \
    (const OP::T *)src, (OP::T *)dst, total, n, k, inner);
    S(f32, AddF32) S(f64, AddF64) S(i32, AddI32) S(i64, AddI64) S(bool, AddBool)
    S(bf16, AddBF16) S(f16, AddF16)
  });
}
extern "C" void sim_scatter_split(const char *t, const void *base, const long long *rs,
                                  const long long *order, const void *src, void *part, void *dst,
                                  long long total, long long n, long long k, long long inner,
                                  long long chunks) {
  simLaunch(5, 256, [&] {
#define C(N, OP) if (!std::strcmp(t, #N)) dt_scatter_chunks_##N(rs, order, (const OP::T *)src, \
    (OP::A *)part, total, n, k, inner, chunks);
    C(f32, AddF32) C(f64, AddF64) C(i32, AddI32) C(i64, AddI64) C(bool, AddBool)
    C(bf16, AddBF16) C(f16, AddF16)
  });
  simLaunch(3, 256, [&] {
#define F(N, OP) if (!std::strcmp(t, #N)) dt_scatter_fold_##N((const OP::T *)base, \
    (const OP::A *)part, (OP::T *)dst, total, chunks);
    F(f32, AddF32) F(f64, AddF64) F(i32, AddI32) F(i64, AddI64) F(bool, AddBool)
    F(bf16, AddBF16) F(f16, AddF16)
  });
}
extern "C" void sim_cumsum(const char *t, const void *src, void *dst, long long outer, long long n,
                           long long inner, int reverse) {
  simLaunch(3, 256, [&] {
#define CS(N, OP) if (!std::strcmp(t, #N)) dt_cumsum_##N((const OP::T *)src, (OP::T *)dst, outer, \
    n, inner, reverse);
    CS(f32, ScanF32) CS(f64, ScanF64) CS(i32, ScanI32) CS(i64, ScanI64) CS(bf16, ScanBF16)
    CS(f16, ScanF16)
  });
}
)";
  }
  void *h = compileAndLoad(base, "data kernels");
  if (!h)
    return;
  struct Dims8 {
    long long v[8] = {0};
  };
  auto d8 = [](const std::vector<int64_t> &v) {
    Dims8 d;
    for (size_t i = 0; i < v.size(); ++i)
      d.v[i] = v[i];
    return d;
  };
  auto copy = (void (*)(int, const void *, void *, long long, int, Dims8, Dims8, long long, Dims8,
                        long long, unsigned))dlsym(h, "sim_copy");
  auto gather = (void (*)(int, bool, const void *, const void *, void *, long long, long long,
                          long long, long long))dlsym(h, "sim_gather");
  auto scatter =
      (void (*)(const char *, const void *, const long long *, const long long *, const void *,
                void *, long long, long long, long long, long long))dlsym(h, "sim_scatter");
  auto bad = (unsigned (*)(const char *, const void *, long long, int))dlsym(h, "sim_bad");
  auto split = (void (*)(const char *, const void *, const long long *, const long long *,
                         const void *, void *, void *, long long, long long, long long, long long,
                         long long))dlsym(h, "sim_scatter_split");
  auto fill = (void (*)(int, void *, long long, unsigned long long))dlsym(h, "sim_fill");
  auto cumsum = (void (*)(const char *, const void *, void *, long long, long long, long long,
                          int))dlsym(h, "sim_cumsum");
  std::mt19937 g(99);
  const DType all[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                       DType::Bool, DType::BF16, DType::F16};
  auto tensor = [&](DType t, std::vector<int64_t> shape) {
    HostTensor x(t, shape);
    auto v = randomData(t, x.numel(), g);
    std::memcpy(x.raw(), v.data(), (size_t)x.bytes());
    return x;
  };
  for (DType t : all) {
    // cumsum (cudaCumsum's parameters) along each dim, both directions:
    // bit-identical to the reference (f64 sums, one rounding, wrapping ints).
    if (t != DType::Bool) {
      HostTensor a = tensor(t, {3, 50, 7});
      for (int64_t d = 0; d < 3; ++d)
        for (bool rev : {false, true}) {
          int64_t outer = 1, inner = 1;
          for (int64_t i = 0; i < d; ++i)
            outer *= a.shape[i];
          for (int64_t i = d + 1; i < 3; ++i)
            inner *= a.shape[i];
          HostTensor got(t, a.shape);
          cumsum(dtypeName(t), a.raw(), got.raw(), outer, a.shape[d], inner, rev ? 1 : 0);
          sameBits("cumsum", ref::cumsum(a, d, rev), got);
        }
    }
    // Transpose as the strided copy (CudaDevice::transpose's parameters).
    HostTensor a = tensor(t, {3, 5, 7});
    for (std::vector<int64_t> perm : {std::vector<int64_t>{2, 0, 1}, {1, 0, 2}, {0, 2, 1}}) {
      std::vector<int64_t> shape(3), ss(3), as = rowMajorStrides(a.shape);
      for (int i = 0; i < 3; ++i)
        shape[i] = a.shape[perm[i]], ss[i] = as[perm[i]];
      HostTensor got(t, shape);
      copy((int)dtypeSize(t), a.raw(), got.raw(), got.numel(), 3, d8(shape), d8(ss), 0,
           d8(rowMajorStrides(shape)), 0, 2);
      sameBits("transpose", ref::transpose(a, perm), got);
    }
    // A fill (cudaFill: the element's bytes as the kernel's argument), over
    // more elements than the grid's threads; and a broadcast as the strided
    // copy with source strides 0.
    {
      HostTensor one = tensor(t, {}), got(t, {5, 217}), bcast(t, {5, 7});
      unsigned long long bits = 0;
      std::memcpy(&bits, one.raw(), (size_t)dtypeSize(t));
      fill((int)dtypeSize(t), got.raw(), got.numel(), bits);
      sameBits("fill", ref::broadcastTo(one, {5, 217}), got);
      copy((int)dtypeSize(t), one.raw(), bcast.raw(), bcast.numel(), 1, d8({35}), d8({0}), 0,
           d8({1}), 0, 2);
      sameBits("broadcast copy", ref::broadcastTo(one, {5, 7}), bcast);
    }
    // check_factor's scan: a flag exactly when the reference's check fails.
    if (isFloat(t))
      for (double v : {1.5, 0.0, -0.0, (double)INFINITY, -(double)INFINITY, (double)NAN})
        for (int nonzero : {0, 1}) {
          HostTensor x(t, {300});
          for (int64_t i = 0; i < 300; ++i)
            x.set(i, i == 257 ? v : 0.25 * (i % 7 + 1));
          bool want = nonzero ? v == 0 : std::isinf(v);
          ++checks;
          if ((bad(dtypeName(t), x.raw(), 300, nonzero) != 0) != want) {
            printf("MISMATCH bad_factor %s value %g nonzero %d\n", dtypeName(t), v, nonzero);
            ++fails;
          }
        }
    // Gather and scatter-add along every dim, i32 and i64 ids, repeated ids;
    // 27 and 40 ids into 2 rows: lists of 14 and 13, 20 and 20 (scatter-add's
    // batches of 8 and their remainders).
    for (int64_t dim = 0; dim < 3; ++dim)
      for (DType it : {DType::I32, DType::I64})
        for (int64_t K : {6, 27, 40}) {
          const int64_t n = a.shape[dim];
          HostTensor ids(it, {K});
          for (int64_t j = 0; j < K; ++j)
            ids.set(j, (double)(K == 6 ? (j * 5 + 1) % n : j % std::min<int64_t>(n, 2)));
          HostTensor want = ref::indexSelect(a, ids, dim), got(t, want.shape);
          int64_t outer = 1, inner = 1;
          for (int64_t d = 0; d < dim; ++d)
            outer *= a.shape[d];
          for (int64_t d = dim + 1; d < 3; ++d)
            inner *= a.shape[d];
          gather((int)dtypeSize(t), it == DType::I64, a.raw(), ids.raw(), got.raw(), got.numel(), K,
                 inner, n);
          sameBits("gather", want, got);
          HostTensor src = tensor(t, want.shape);
          HostTensor sum = ref::indexAdd(a, ids, src, dim), out(t, a.shape);
          std::vector<int64_t> rs, order;
          cudaScatterLists(ids, dim, n, rs, order);
          scatter(dtypeName(t), a.raw(), (const long long *)rs.data(),
                  (const long long *)order.data(), src.raw(), out.raw(), a.numel(), n, K, inner);
          sameBits("scatter_add", sum, out);
          // Default mode's split lists: chunks of 2, 3 and 7 (some empty),
          // against splitScatterOrder's sums in the kernels' order, on the
          // data above (NaN, -0, wrapping ints) and on f32/f64 spread over
          // 2^-20..2^20, whose sums round differently in another order (the
          // one-pass kernel on those too).
          HostTensor spreadBase(t, a.shape), spreadSrc(t, want.shape);
          auto sb = randomData(t, a.numel(), g, true), ss = randomData(t, src.numel(), g, true);
          std::memcpy(spreadBase.raw(), sb.data(), (size_t)a.bytes());
          std::memcpy(spreadSrc.raw(), ss.data(), (size_t)src.bytes());
          HostTensor ordered(t, a.shape); // the one-pass kernel keeps the reference's order
          scatter(dtypeName(t), spreadBase.raw(), (const long long *)rs.data(),
                  (const long long *)order.data(), spreadSrc.raw(), ordered.raw(), a.numel(), n, K,
                  inner);
          sameBits("scatter_add (spread)", ref::indexAdd(spreadBase, ids, spreadSrc, dim), ordered);
          for (int64_t chunks : {2, 3, 7})
            for (const auto &[b, x] : {std::pair{&a, &src}, std::pair{&spreadBase, &spreadSrc}}) {
              HostTensor got(t, a.shape);
              std::vector<double> part((size_t)(chunks * a.numel()));
              split(dtypeName(t), b->raw(), (const long long *)rs.data(),
                    (const long long *)order.data(), x->raw(), part.data(), got.raw(), a.numel(), n,
                    K, inner, chunks);
              sameBits("scatter_add split", splitScatterOrder(*b, *x, rs, order, dim, chunks), got);
            }
        }
  }
  dlclose(h);
}

/// Deterministic mode's GPU matrix product (runtime/CudaDeterministicGemm.h),
/// an element a thread and a tile a block, through the shim, against the
/// CPU's deterministicMatrix bitwise: f32/f64 spread over 2^-20..2^20, every
/// transpose, partial tiles, a remainder leaf, k = 0, two batches.
void runDeterministicGemm() {
  std::string base = gWork + "/det_gemm";
  {
    std::ofstream f(base + ".cpp");
    f << cudaDeterministicGemmSource() << R"(
extern "C" void sim_det_gemm(int tiled, int f64, const void *A, const void *B, void *C,
                             long long m, long long k, long long n, int ta, int tb,
                             long long batch, long long sA, long long sB, long long sC) {
  simLaunch(3, 256, [&] {
    if (tiled && f64) dt_det_gemm_tiled_f64((const double *)A, (const double *)B, (double *)C, m,
                                            k, n, ta, tb, batch, sA, sB, sC);
    if (tiled && !f64) dt_det_gemm_tiled_f32((const float *)A, (const float *)B, (float *)C, m,
                                             k, n, ta, tb, batch, sA, sB, sC);
    if (!tiled && f64) dt_det_gemm_f64((const double *)A, (const double *)B, (double *)C, m, k,
                                       n, ta, tb, batch, sA, sB, sC);
    if (!tiled && !f64) dt_det_gemm_f32((const float *)A, (const float *)B, (float *)C, m, k, n,
                                        ta, tb, batch, sA, sB, sC);
  });
}
// The leaf-split pair: each leaf's chains into L, then the merge into C.
extern "C" void sim_det_gemm_split(int f64, const void *A, const void *B, void *C, long long m,
                                   long long k, long long n, int ta, int tb, long long batch,
                                   long long sA, long long sB, long long sC) {
  const long long leaves = (k + LEAF - 1) / LEAF;
  std::vector<double> L(batch * leaves * m * n + 1);
  simLaunch(3, 256, [&] {
    if (f64) dt_det_gemm_split_f64_leaves((const double *)A, (const double *)B, (double *)L.data(),
                                          m, k, n, ta, tb, batch, sA, sB, leaves);
    else dt_det_gemm_split_f32_leaves((const float *)A, (const float *)B, (float *)L.data(), m, k,
                                      n, ta, tb, batch, sA, sB, leaves);
  });
  simLaunch(2, 256, [&] {
    if (f64) dt_det_gemm_split_f64_merge((const double *)L.data(), (double *)C, m, n, batch, sC,
                                         leaves);
    else dt_det_gemm_split_f32_merge((const float *)L.data(), (float *)C, m, n, batch, sC, leaves);
  });
}
)";
  }
  void *h = compileAndLoad(base, "deterministic gemm");
  if (!h)
    return;
  auto gemm =
      (void (*)(int, int, const void *, const void *, void *, long long, long long, long long, int,
                int, long long, long long, long long, long long))dlsym(h, "sim_det_gemm");
  auto split =
      (void (*)(int, const void *, const void *, void *, long long, long long, long long, int, int,
                long long, long long, long long, long long))dlsym(h, "sim_det_gemm_split");
  std::mt19937 g(7);
  struct Shape {
    int64_t m, k, n;
  };
  // The leaf split too: 16 rows (one group), 33 (a short third group), 3
  // columns with 65 rows (5 groups), one leaf and none.
  for (Shape sh : {Shape{70, 200, 45}, Shape{64, 64, 64}, Shape{33, 1, 130}, Shape{16, 130, 40},
                   Shape{40, 0, 40}, Shape{65, 257, 3}, Shape{16, 700, 9}})
    for (DType t : {DType::F32, DType::F64})
      for (int ta : {0, 1})
        for (int tb : {0, 1}) {
          const int64_t batch = 2, sA = sh.m * sh.k, sB = sh.k * sh.n, sC = sh.m * sh.n;
          auto a = randomData(t, batch * sA, g, true), b = randomData(t, batch * sB, g, true);
          HostTensor want(t, {batch, sh.m, sh.n});
          const int64_t es = dtypeSize(t);
          for (int64_t bi = 0; bi < batch; ++bi)
            deterministicMatrix(t == DType::F64, a.data() + bi * sA * es, b.data() + bi * sB * es,
                                static_cast<char *>(want.raw()) + bi * sC * es, sh.m, sh.k, sh.n,
                                ta, tb);
          for (int tiled : {0, 1}) {
            HostTensor got(t, {batch, sh.m, sh.n});
            gemm(tiled, t == DType::F64, a.data(), b.data(), got.raw(), sh.m, sh.k, sh.n, ta, tb,
                 batch, sA, sB, sC);
            sameBits(tiled ? "det gemm tiled" : "det gemm", want, got);
          }
          HostTensor got(t, {batch, sh.m, sh.n});
          split(t == DType::F64, a.data(), b.data(), got.raw(), sh.m, sh.k, sh.n, ta, tb, batch, sA,
                sB, sC);
          sameBits("det gemm leaf split", want, got);
        }
  dlclose(h);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cudasim WORK_DIR SHIM_H\n");
    return 2;
  }
  gWork = argv[1];
  std::filesystem::create_directories(gWork);
  // The shim, copied beside a precompiled header built with the kernels'
  // flags (g++ takes the .gch for -include, else the header: 2.5x faster).
  gShim = gWork + "/shim.h";
  std::filesystem::copy_file(argv[2], gShim, std::filesystem::copy_options::overwrite_existing);
  if (system(("g++ " + std::string(kFlags) + " -x c++-header " + gShim + " -o " + gShim + ".gch")
                 .c_str()))
    printf("note: no precompiled shim (compiling it in every kernel)\n");
  int tag = 0;
  runDataKernels();
  runDeterministicGemm();
  const DType all[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                       DType::Bool, DType::BF16, DType::F16};
  for (DType t : all) {
    Kernel k;
    k.name = std::string("un_") + dtypeName(t);
    k.rank = 2;
    int x = k.load(k.addInput(t));
    for (KOp op :
         {KOp::Neg, KOp::Abs, KOp::Relu, KOp::Exp, KOp::Log, KOp::Sqrt, KOp::Rsqrt, KOp::Tanh,
          KOp::Sigmoid, KOp::Sin, KOp::Cos, KOp::Not, KOp::Erf, KOp::Log1p, KOp::Expm1}) {
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
    run(b, {6, 36}, 2, 0, tag++);     // one value per row: the vector path's row mode
    run(b, {6, 35}, 2, 0, tag++);     // rows of 35: the strided path
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
        run(rk, {9, 5, 11}, false, tol, tag++);    // warp per output
        run(rk, {40, 3, 30}, false, tol, tag++);   // block per output (1200 >= 1024)
        run(rk, {0, 3, 4}, false, 0, tag++);       // empty reduction: identities
        run(rk, {190, 2, 181}, false, tol, tag++); // few outputs, 34390 each: split in 4
        // The last dim a multiple of 4: the vector path, per warp, per block
        // with one value per row of input 1, split with input 1 broadcast.
        run(rk, {9, 5, 12}, false, tol, tag++);
        run(rk, {40, 3, 32}, 2, tol, tag++);
        run(rk, {190, 2, 184}, 1, tol, tag++);
        // Sums over rows (the last dim kept): the column path, in one pass
        // and split in 4 (300 rows), and a last dim too narrow for it.
        Kernel ck = rk;
        ck.name = std::string("col_") + kreduceName(r) + dtypeName(t);
        ck.setReduce(r, {0});
        run(ck, {9, 2, 40}, false, tol, tag++);
        run(ck, {300, 1, 33}, 1, tol, tag++);
        run(ck, {9, 2, 31}, 2, tol, tag++);
        ck.setReduce(r, {0, 1});
        run(ck, {7, 11, 36}, 2, tol, tag++);
        // Deterministic mode: one thread per output in the interpreter's
        // order, exactly (float sums: leaves of 64 rows of the outermost
        // reduced dim in the fixed tree, ir/DeterministicOrder.h; 8 chains
        // a leaf when the last dim is summed).
        Kernel dk = rk;
        dk.name = std::string("det_") + kreduceName(r) + dtypeName(t);
        dk.deterministic = true;
        run(dk, {200, 3, 7}, false, 0, tag++); // 4 leaves of 64 x 7, the last short
        run(dk, {64, 2, 3}, 1, 0, tag++);      // one whole leaf
        run(dk, {0, 3, 4}, false, 0, tag++);
        run(dk, {5, 3, 0}, false, 0, tag++);
        run(dk, {3000, 2, 5}, false, 0, tag++); // sums split: 47 chunks of a leaf
        dk.setReduce(r, {0});
        run(dk, {449, 2, 5}, 2, 0, tag++);    // 8 leaves: the stack carries 3 times
        run(dk, {1500, 300, 1}, 1, 0, tag++); // sums split: 12 chunks of 2 leaves
        // Sums over the last dim: each leaf in 8 chains by last-dim index,
        // rows of the last dim not a multiple of 8; leaves along the last
        // dim itself, split (few outputs) or not.
        dk.setReduce(r, {2});
        run(dk, {3, 2, 300}, false, 0, tag++);
        run(dk, {1, 1, 5000}, 2, 0, tag++);
        dk.setReduce(r, {1, 2});
        run(dk, {2, 130, 9}, false, 0, tag++);
        // Leaves of >= 2048 points: a warp per leaf (rows of 40, 3 leaves a
        // run of 4, the last short), then split in runs of 8 leaves with
        // rows of 33 (not a multiple of 32).
        run(dk, {2, 130, 40}, false, 0, tag++);
        dk.setReduce(r, {0, 2});
        run(dk, {700, 1, 33}, 1, 0, tag++);
      }
  }
  // Gathers (index_select inside a kernel) along the outer and the inner
  // dim, elementwise (fast path with its tail, strided) and in a reduction.
  for (DType t : all)
    for (int dim = 0; dim < 2; ++dim) {
      Kernel gk;
      gk.name = std::string("gather") + std::to_string(dim) + "_" + dtypeName(t);
      gk.rank = 2;
      int src = gk.addInput(t);
      int x = gk.load(gk.addInput(t)); // input 1: broadcast along dim 0 when bcast
      int ids = gk.load(gk.addInput(dim ? DType::I64 : DType::I32));
      int v = gk.gather(src, ids, dim);
      gk.store(gk.addOutput(t), v);
      gk.store(gk.addOutput(DType::Bool), gk.binary(KOp::Lt, v, x));
      run(gk, {6, 35}, false, 0, tag++);
      run(gk, {6, 35}, true, 0, tag++);
      run(gk, {6, 36}, 2, 0, tag++); // ids per row (index_select's broadcast): row mode
      // Rank 3: the vector path's index carries across two dims (rows of 7),
      // and the row mode with rows of 8.
      Kernel g3;
      g3.name = std::string("gather3_") + std::to_string(dim) + "_" + dtypeName(t);
      g3.rank = 3;
      int src3 = g3.addInput(t);
      int x3 = g3.load(g3.addInput(t));
      int v3 = g3.gather(src3, g3.load(g3.addInput(DType::I32)), dim);
      g3.store(g3.addOutput(t), v3);
      g3.store(g3.addOutput(DType::Bool), g3.binary(KOp::Eq, v3, x3));
      run(g3, {3, 5, 7}, 0, 0, tag++);
      run(g3, {3, 5, 8}, 2, 0, tag++);
      if (t == DType::Bool)
        continue;
      Kernel rk;
      rk.name = std::string("gather_red") + std::to_string(dim) + "_" + dtypeName(t);
      rk.rank = 3;
      int a = rk.load(rk.addInput(t));
      int rs = rk.addInput(t);
      int ri = rk.load(rk.addInput(DType::I32));
      rk.store(rk.addOutput(t), rk.binary(KOp::Mul, a, rk.gather(rs, ri, dim ? 2 : 0)));
      rk.setReduce(KReduce::Sum, {0, 2});
      run(rk, {9, 5, 11}, false, isFloat(t) ? 1e-6 : 0, tag++);
      run(rk, {9, 5, 12}, false, isFloat(t) ? 1e-6 : 0, tag++); // the vector path
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
    if (!isFloat(t))
      continue;
    // Run-time seeds: a uniform i64 / i32 input's value, sign-extended.
    Kernel rs;
    rs.name = std::string("seeded_") + dtypeName(t);
    rs.rank = 2;
    int s64 = rs.load(rs.addInput(DType::I64, true)), s32 = rs.load(rs.addInput(DType::I32, true));
    rs.store(rs.addOutput(t), rs.randomSeeded(RandomKind::Normal, s64, t));
    rs.store(rs.addOutput(t), rs.randomSeeded(RandomKind::Uniform, s32, t));
    run(rs, {7, 9}, false, 0, tag++);
  }
  Kernel r0;
  r0.name = "rank0";
  int in0 = r0.addInput(DType::F32);
  r0.store(r0.addOutput(DType::F32),
           r0.binary(KOp::Add, r0.load(in0), r0.constant(1.5, DType::F32)));
  run(r0, {}, false, 0, tag++);
  runScatterKernels(tag);
  printf("%d kernel runs (%d compiled, %d split reductions), %d checks, %d mismatches\n", gKernels,
         gCompiles, splits, checks, fails);
  return fails != 0 || splits == 0;
}
