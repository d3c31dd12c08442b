// GPU benchmarks of the cuda backend (issue 10's targets), each a ratio
// against a baseline measured in the same run on the same device:
//   * fused: an 8-op elementwise f32 chain over 1 GiB as one NVRTC kernel,
//     and as a `.dt` loop through the executor, against a device-to-device
//     copy of 1 GiB (bandwidth counting bytes read + written; >= 0.8x);
//   * gemm: bf16 8192^3 and f32 4096^3 through the backend's GEMM
//     (CudaContext::gemm, what `a @ b` runs) and as a `.dt` loop, against
//     cuBLASLt called directly with its heuristic's first algorithm (>= 0.9x);
//   * sums: full, row and column sums in deterministic mode against the
//     default mode (a ratio, and each one's read bandwidth against a copy's);
//   * index_add into 16 and 4096 rows, and f32 matmuls (square and skinny),
//     default against deterministic mode;
//   * nvrtc: every kernel of the largest example compiled cold (empty cache)
//     and warm (a new context over the same on-disk cache), ms per kernel,
//     small kernels at the quick tier as the backend compiles them
//     (<= 200 ms cold, <= 1 ms warm).
// Without a driver it prints SKIP and exits 77. `--quick` runs fewer reps.
#include "BenchUtil.h"

#include "codegen/CudaApi.h"
#include "codegen/CudaLoader.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/CudaRuntime.h"
#include "runtime/KernelRuntime.h"
#include "runtime/Session.h"
#include "support/Errors.h"
#include "support/LowPrecision.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace dt;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Best time of `reps` runs of `f` followed by a stream synchronize.
template <class F> double bestSync(CudaContext &ctx, CudaStream s, int reps, F &&f) {
  f(); // warm
  ctx.synchronize(s);
  double b = 1e30;
  for (int i = 0; i < reps; ++i) {
    double t0 = now();
    f();
    ctx.synchronize(s);
    b = std::min(b, now() - t0);
  }
  return b;
}

/// Seconds per call of `n` calls of `f` back to back between two waits (a
/// `.dt` loop's trips run so: sustained clocks, no wait between calls).
template <class F> double loopSync(CudaContext &ctx, CudaStream s, int n, F &&f) {
  f(); // warm
  ctx.synchronize(s);
  double t0 = now();
  for (int i = 0; i < n; ++i)
    f();
  ctx.synchronize(s);
  return (now() - t0) / n;
}

const char *verdict(bool met) { return met ? "MET" : "MISSED"; }

/// Seconds one iteration of `body` takes inside a `.dt` program run on
/// `--backend cuda`: one warm-up trip (kernels compiled, buffers cached),
/// then `n` trips between two `time()` readings (which wait for the rank's
/// stream), printed by the program itself.
double programStep(const std::string &setup, const std::string &body, const std::string &use, int n,
                   bool deterministic = false) {
  SessionOptions so;
  so.backend = "cuda";
  so.compile.deterministic = deterministic;
  so.pipeline.target = CodeTarget::Cuda;
  so.keepValues = false;
  Session s(so);
  std::ostringstream out, log;
  std::string text = setup + "for i in 0..1 {\n" + body + "\n}\nlet t0 = time()\nfor i in 0.." +
                     std::to_string(n) + " {\n" + body + "\n}\nlet t1 = time()\nprint(" + use +
                     ")\nprint(t1 - t0)\n";
  if (!s.compile("bench.dt", text) || !s.run(out, log))
    throw RuntimeFault("bench program failed:\n" + s.diags().renderAll() + log.str());
  std::string printed = out.str();
  size_t last = printed.find_last_not_of(" \n");
  size_t start = printed.find_last_of('\n', last == std::string::npos ? 0 : last);
  double secs = std::atof(printed.c_str() + (start == std::string::npos ? 0 : start + 1));
  if (!(secs > 0))
    throw RuntimeFault("bench program printed no time:\n" + printed);
  return secs / n;
}

/// cuBLASLt row-major C = A @ B (the heuristic's first algorithm, 32 MiB of
/// workspace): the direct-call baseline.
struct LtGemm {
  CudaContext &ctx;
  const CudaCublasLtApi &lt;
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void *ws = nullptr;
  size_t wsBytes = 32 << 20;
  bool ok = false;

  LtGemm(CudaContext &c, int64_t m, int64_t n, int64_t k, cudaDataType t, cublasComputeType_t ct)
      : ctx(c), lt(c.libs().cublasLt()) {
    ws = ctx.alloc((int64_t)wsBytes);
    lt.cublasLtCreate(&h);
    lt.cublasLtMatmulDescCreate(&desc, ct, CUDA_R_32F);
    // Column-major view of row-major: C^T (n x m) = B^T (n x k) A^T (k x m).
    lt.cublasLtMatrixLayoutCreate(&lb, t, n, k, n);
    lt.cublasLtMatrixLayoutCreate(&la, t, k, m, k);
    lt.cublasLtMatrixLayoutCreate(&lc, t, n, m, n);
    cublasLtMatmulPreference_t pref = nullptr;
    lt.cublasLtMatmulPreferenceCreate(&pref);
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &wsBytes, sizeof wsBytes);
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    ok = lt.cublasLtMatmulAlgoGetHeuristic(h, desc, lb, la, lc, lc, pref, 1, &res, &found) ==
             CUBLAS_STATUS_SUCCESS &&
         found > 0;
    algo = res.algo;
    lt.cublasLtMatmulPreferenceDestroy(pref);
  }
  ~LtGemm() {
    lt.cublasLtMatrixLayoutDestroy(la);
    lt.cublasLtMatrixLayoutDestroy(lb);
    lt.cublasLtMatrixLayoutDestroy(lc);
    lt.cublasLtMatmulDescDestroy(desc);
    lt.cublasLtDestroy(h);
    ctx.free(ws);
  }
  void run(const void *a, const void *b, void *c, CudaStream s) {
    float one = 1, zero = 0;
    auto st = lt.cublasLtMatmul(h, desc, &one, b, lb, a, la, &zero, c, lc, c, lc, &algo, ws,
                                wsBytes, static_cast<cudaStream_t>(s));
    if (st != CUBLAS_STATUS_SUCCESS)
      throw RuntimeFault("cublasLtMatmul failed");
  }
};

void benchFused(CudaContext &ctx, bool quick) {
  const int64_t bytes = 1ll << 30, n = bytes / 4;
  Kernel k = dt::bench::fused8Kernel();
  CudaStream s = ctx.streamForRank(0);
  void *in = ctx.alloc(bytes, s), *out = ctx.alloc(bytes, s);
  ctx.zero(in, bytes, s);
  const CudaKernel &ck = ctx.kernel(k);
  void *bufs[] = {in, out};
  int64_t params[] = {n, 1, 1};
  int reps = quick ? 5 : 20;
  double tk = bestSync(ctx, s, reps, [&] { ctx.launch(ck, bufs, params, s); });
  double tc = bestSync(ctx, s, reps, [&] { ctx.copyOnDevice(out, in, bytes, s); });
  ctx.free(in);
  ctx.free(out);
  double gk = 2.0 * bytes / tk / 1e9, gc = 2.0 * bytes / tc / 1e9;
  std::printf("fused8 1 GiB kernel: %.0f GB/s, device copy: %.0f GB/s, ratio %.2f (target >= "
              "0.80) %s\n",
              gk, gc, gk / gc, verdict(gk / gc >= 0.8));
  // The same chain as a program: one fused kernel per loop trip through the
  // executor (buffers from the caching allocator, in place where it can).
  std::string setup = "mesh g = [r = 1]\nlet x0 : f32[" + std::to_string(n) +
                      "] @ g[_] = iota(dim=0)\nvar y = x0 * 0.000001\n";
  std::string body = // 8 ops, 1 GiB in and 1 GiB out a trip
      "  y = minimum(abs(maximum(y * 1.0001 + 0.5, 0.1) - y) * 0.9 + y, 7.0)";
  try {
    double tp = programStep(setup, body, "sum(y)", quick ? 10 : 40);
    double gp = 2.0 * bytes / tp / 1e9;
    std::printf("fused8 1 GiB .dt loop: %.0f GB/s (%.3f ms/trip), ratio to device copy %.2f "
                "(target >= 0.80) %s\n",
                gp, tp * 1e3, gp / gc, verdict(gp / gc >= 0.8));
  } catch (const std::exception &e) {
    std::printf("fused8 .dt loop: FAILED: %s\n", e.what());
  }
}

void benchGemm(CudaContext &ctx, GemmType type, int64_t N, bool quick) {
  const bool bf = type == GemmType::BF16;
  const int64_t es = bf ? 2 : 4;
  CudaStream s = ctx.streamForRank(0);
  void *a = ctx.alloc(N * N * es, s), *b = ctx.alloc(N * N * es, s), *c = ctx.alloc(N * N * es, s);
  // Small random-ish values (a kernel-free fill: bytes of a host pattern).
  {
    std::vector<uint16_t> h16;
    std::vector<float> h32;
    if (bf) {
      h16.resize(N * N);
      for (int64_t i = 0; i < N * N; ++i)
        h16[i] = (uint16_t)(0x3c00 + (i * 2654435761u >> 24) % 256); // bf16 in [0.0078, 0.0156)
      ctx.copyToDevice(a, h16.data(), N * N * 2, s);
      ctx.copyToDevice(b, h16.data(), N * N * 2, s);
    } else {
      h32.resize(N * N);
      for (int64_t i = 0; i < N * N; ++i)
        h32[i] = (float)((i * 2654435761u >> 20) % 1000) * 1e-3f - 0.5f;
      ctx.copyToDevice(a, h32.data(), N * N * 4, s);
      ctx.copyToDevice(b, h32.data(), N * N * 4, s);
    }
  }
  GemmDesc g;
  g.type = type;
  g.m = g.n = g.k = N;
  g.a = a, g.b = b, g.c = c;
  int reps = quick ? 5 : 20;
  double ours = bestSync(ctx, s, reps, [&] { ctx.gemm(g, s); });
  LtGemm lt(ctx, N, N, N, bf ? CUDA_R_16BF : CUDA_R_32F, CUBLAS_COMPUTE_32F);
  double base = lt.ok ? bestSync(ctx, s, reps, [&] { lt.run(a, b, c, s); }) : 0;
  // The `.dt` loop's baseline: as many direct calls, back to back.
  const int trips = quick ? 10 : 40;
  double baseLoop = lt.ok ? loopSync(ctx, s, trips, [&] { lt.run(a, b, c, s); }) : 0;
  double flop = 2.0 * N * N * N;
  const char *name = bf ? "bf16" : "f32";
  if (lt.ok)
    std::printf("gemm %s %lld^3: backend %.0f TFLOP/s, cuBLASLt direct %.0f TFLOP/s, ratio %.2f "
                "(target >= 0.90) %s\n",
                name, (long long)N, flop / ours / 1e12, flop / base / 1e12, base / ours,
                verdict(base / ours >= 0.9));
  else
    std::printf("gemm %s %lld^3: backend %.0f TFLOP/s (cuBLASLt heuristic found nothing)\n", name,
                (long long)N, flop / ours / 1e12);
  ctx.free(a);
  ctx.free(b);
  ctx.free(c);
  // Through a program: `c = a @ b` in a loop.
  std::string t = bf ? "bf16" : "f32", ns = std::to_string(N);
  std::string setup = "mesh g = [r = 1]\nlet a : " + t + "[" + ns + ", " + ns +
                      "] @ g[_, _] = randn(seed=1)\nlet b : " + t + "[" + ns + ", " + ns +
                      "] @ g[_, _] = randn(seed=2)\nvar c = a @ b\n";
  try {
    double tp = programStep(setup, "  c = a @ b", "sum(cast(c, f32))", trips);
    std::printf("gemm %s %lld^3 .dt loop: %.0f TFLOP/s, ratio to %d direct cuBLASLt calls back to "
                "back %.2f (target >= 0.90) %s; to the best single call %.2f\n",
                name, (long long)N, flop / tp / 1e12, trips, lt.ok ? baseLoop / tp : 0.0,
                verdict(lt.ok && baseLoop / tp >= 0.9), lt.ok ? base / tp : 0.0);
  } catch (const std::exception &e) {
    std::printf("gemm %s .dt loop: FAILED: %s\n", name, e.what());
  }
}

void benchNvrtc(CudaLibraries &libs, const std::string &program) {
  Compilation c(pipelineCompileOptions());
  std::ifstream in(program);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!c.compile(program, ss.str())) {
    std::printf("nvrtc: %s does not compile\n%s", program.c_str(), c.diags.renderAll().c_str());
    return;
  }
  PipelineOptions po;
  po.spmd = true;
  po.target = CodeTarget::Cuda;
  std::ostringstream log;
  auto prog = compileProgram(c, po, log);
  if (!prog) {
    std::printf("nvrtc: pipeline failed\n%s", c.diags.renderAll().c_str());
    return;
  }
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("dt-nvrtc-bench-" + std::to_string((long long)(now() * 1e6))))
                        .string();
  // Per distinct kernel: the program's kernel functions repeat structures,
  // which a context compiles once (NVRTC compiles cold, disk hits warm). As
  // the backend does: KernelTable's small kernels at NVRTC's quick tier.
  size_t nk = prog->kernels().size();
  auto small = [](const ProgramKernel &k) { return KernelTable::isSmall(k.kernel); };
  double cold = 0, warm = 0;
  int64_t compiles = 0;
  {
    CudaOptions o;
    o.cacheDir = dir;
    CudaContext ctx(libs, o);
    ctx.nvrtc().supportedArchs(); // NVRTC loaded before the clock starts
    double t0 = now();
    for (auto &k : prog->kernels())
      ctx.kernel(k.kernel.kernel, small(k));
    cold = now() - t0;
    compiles = std::max<int64_t>(ctx.nvrtc().stats().compiles, 1);
  }
  {
    CudaOptions o;
    o.cacheDir = dir;
    CudaContext ctx(libs, o);
    ctx.nvrtc().supportedArchs();
    double t0 = now();
    for (auto &k : prog->kernels())
      ctx.kernel(k.kernel.kernel, small(k));
    warm = now() - t0;
    int64_t hits = std::max<int64_t>(ctx.nvrtc().stats().cacheHits, 1);
    std::printf("nvrtc: %s: %zu kernel functions, %lld distinct: cold %.1f ms/kernel (target <= "
                "200) %s, warm %.3f ms/kernel (target <= 1) %s\n",
                program.c_str(), nk, (long long)compiles, cold * 1e3 / compiles,
                verdict(cold * 1e3 / compiles <= 200), warm * 1e3 / hits,
                verdict(warm * 1e3 / hits <= 1));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

/// GB/s a device-to-device copy of 256 MiB reads (as many as it writes).
double copyReadRate(CudaContext &ctx, bool quick) {
  const int64_t bytes = 256ll << 20;
  CudaStream s = ctx.streamForRank(0);
  void *in = ctx.alloc(bytes, s), *out = ctx.alloc(bytes, s);
  ctx.zero(in, bytes, s);
  double tc = bestSync(ctx, s, quick ? 5 : 20, [&] { ctx.copyOnDevice(out, in, bytes, s); });
  ctx.free(in);
  ctx.free(out);
  return bytes / tc / 1e9;
}

/// A `.dt` loop's time a trip in default and in deterministic mode
/// (programStep), or nothing after printing "LABEL: FAILED: why".
struct ModeTimes {
  double def, det;
};
std::optional<ModeTimes> bothModes(const std::string &label, const std::string &setup,
                                   const std::string &body, const std::string &use, int trips) {
  try {
    return ModeTimes{programStep(setup, body, use, trips, false),
                     programStep(setup, body, use, trips, true)};
  } catch (const std::exception &e) {
    std::printf("%s: FAILED: %s\n", label.c_str(), e.what());
    return std::nullopt;
  }
}

/// Sums in deterministic mode against the default mode, each a `.dt` loop
/// (one reduction kernel a trip, plus the fold launch of a split sum): the
/// fixed leaf-tree order with 8 chains over the last dim (issue 14) on the
/// GPU, and the read bandwidth of each against a device copy's.
void benchSums(CudaContext &ctx, bool quick) {
  struct Case {
    const char *name, *shape, *expr;
    double bytes;
  };
  const Case cases[] = {
      {"full sum f32[16384,4096]", "16384, 4096", "sum(x)", 16384.0 * 4096 * 4},
      {"full sum(x*x) f32[16384,4096]", "16384, 4096", "sum(x * x)", 16384.0 * 4096 * 4},
      {"rows (dim 1) f32[16384,4096]", "16384, 4096", "sum(x, dim=1)", 16384.0 * 4096 * 4},
      {"cols (dim 0) f32[16384,4096]", "16384, 4096", "sum(x, dim=0)", 16384.0 * 4096 * 4},
      {"rows (dim 1) f32[1048576,64]", "1048576, 64", "sum(x, dim=1)", 1048576.0 * 64 * 4},
      {"rows (dim 1) f32[262144,256]", "262144, 256", "sum(x, dim=1)", 262144.0 * 256 * 4},
  };
  const double copyRead = copyReadRate(ctx, quick);
  const int trips = quick ? 20 : 80;
  for (const Case &c : cases) {
    std::string setup = std::string("mesh g = [r = 1]\nlet x : f32[") + c.shape +
                        "] @ g[_, _] = randn(seed=1)\nvar s = " + c.expr + "\n";
    const char *use = std::string(c.expr).find("dim") == std::string::npos ? "s" : "sum(s)";
    auto t =
        bothModes(std::string("sum ") + c.name, setup, std::string("  s = ") + c.expr, use, trips);
    if (t)
      std::printf("sum %s: default %.1f us (%.0f GB/s read, %.2fx of a copy's read), "
                  "deterministic %.1f us (%.0f GB/s, %.2fx), det/default %.2f\n",
                  c.name, t->def * 1e6, c.bytes / t->def / 1e9, c.bytes / t->def / 1e9 / copyRead,
                  t->det * 1e6, c.bytes / t->det / 1e9, c.bytes / t->det / 1e9 / copyRead,
                  t->def / t->det);
  }
}

/// `index_add` of f32[16384, 4096] rows as a `.dt` loop: into 16 rows
/// (modulation's gradient: lists of 1024 rows, which default mode splits
/// into chunks, cudaScatterChunks) and into 4096 rows (lists of 4: one thread
/// per output in both modes); default against deterministic mode (the
/// reference's order, one thread per output) and the read rate against a
/// device copy's.
void benchScatter(CudaContext &ctx, bool quick) {
  const double copyRead = copyReadRate(ctx, quick), read = 16384.0 * 4096 * 4;
  const int trips = quick ? 20 : 80;
  for (int rows : {16, 4096}) {
    const std::string r = std::to_string(rows);
    std::string setup = "mesh g = [r = 1]\nlet x : f32[16384, 4096] @ g[_, _] = randn(seed=1)\n"
                        "let ii : i32[16384] @ g[_] = iota(dim=0)\nlet ids = ii % " +
                        r + "\nlet z : f32[" + r +
                        ", 4096] @ g[_, _] = zeros()\nvar s = index_add(z, ids, x)\n";
    auto t = bothModes("index_add into " + r + " rows", setup, "  s = index_add(z, ids, x)",
                       "sum(s)", trips);
    if (t)
      std::printf("index_add f32[16384,4096] into %d rows: default %.1f us (%.0f GB/s read, "
                  "%.2fx of a copy's read), deterministic %.1f us (%.2fx), default/det %.2fx\n",
                  rows, t->def * 1e6, read / t->def / 1e9, read / t->def / 1e9 / copyRead,
                  t->det * 1e6, read / t->det / 1e9 / copyRead, t->det / t->def);
  }
}

/// Deterministic mode's matrix product (runtime/CudaDeterministicGemm.h: a
/// tile a block for a square C, a thread an element for a skinny one) against
/// the default mode's cuBLAS, each a `.dt` loop.
void benchDeterministicGemm(bool quick) {
  struct Case {
    const char *name, *a, *b, *product;
    double flop;
  };
  // The skinny ones are modulation's forward and backward products.
  const Case cases[] = {
      {"f32 4096^3", "4096, 4096", "4096, 4096", "a @ b", 2.0 * 4096 * 4096 * 4096},
      {"f32 16x4096 @ 4096x4096", "16, 4096", "4096, 4096", "a @ b", 2.0 * 16 * 4096 * 4096},
      {"f32 16x4096 @ (4096x4096)^T", "16, 4096", "4096, 4096", "a @ transpose(b)",
       2.0 * 16 * 4096 * 4096},
  };
  const int trips = quick ? 5 : 20;
  for (const Case &c : cases) {
    std::string setup = std::string("mesh g = [r = 1]\nlet a : f32[") + c.a +
                        "] @ g[_, _] = randn(seed=1)\nlet b : f32[" + c.b +
                        "] @ g[_, _] = randn(seed=2)\nvar s = " + c.product + "\n";
    auto t = bothModes(std::string("deterministic gemm ") + c.name, setup,
                       std::string("  s = ") + c.product, "sum(s)", trips);
    if (t)
      std::printf("deterministic gemm %s: default %.3f ms (%.1f TFLOP/s), deterministic %.3f ms "
                  "(%.1f TFLOP/s), det/default %.2f\n",
                  c.name, t->def * 1e3, c.flop / t->def / 1e12, t->det * 1e3,
                  c.flop / t->det / 1e12, t->def / t->det);
  }
}

/// The backend's two GEMM paths (CudaOptions::cublasLt: cublasGemmEx and
/// cublasLt's heuristic plan) on the square benchmarks and on modulation's
/// skinny f32 shapes (cond @ transpose(w), its gradient products): time per
/// call of each and the largest relative difference between their outputs
/// (a wrong layout in one path shows there).
void benchGemmPaths(CudaLibraries &libs, bool quick) {
  struct Shape {
    const char *name;
    GemmType type;
    int64_t m, n, k;
    bool transA, transB;
  };
  const Shape shapes[] = {
      {"bf16 8192^3", GemmType::BF16, 8192, 8192, 8192, false, false},
      {"f32 4096^3", GemmType::F32, 4096, 4096, 4096, false, false},
      {"f32 16x4096 @ (4096x4096)^T", GemmType::F32, 16, 4096, 4096, false, true},
      {"f32 16x4096 @ 4096x4096", GemmType::F32, 16, 4096, 4096, false, false},
      {"f32 (16x4096)^T @ 16x4096", GemmType::F32, 4096, 4096, 16, true, false},
  };
  CudaOptions oe, ol;
  oe.cublasLt = false;
  ol.cublasLt = true;
  CudaContext ex(libs, oe), lt(libs, ol);
  for (const Shape &sh : shapes) {
    const int64_t es = sh.type == GemmType::BF16 ? 2 : 4;
    const int64_t na = sh.m * sh.k, nb = sh.k * sh.n, nc = sh.m * sh.n;
    std::vector<float> ha(na), hb(nb);
    for (int64_t i = 0; i < na; ++i)
      ha[i] = (float)((i * 2654435761u >> 20) % 1000) * 1e-3f - 0.5f;
    for (int64_t i = 0; i < nb; ++i)
      hb[i] = (float)((i * 40503u >> 7) % 1000) * 1e-3f - 0.5f;
    auto upload = [&](CudaContext &ctx, const std::vector<float> &h, CudaStream s) {
      void *d = ctx.alloc((int64_t)h.size() * es, s);
      if (es == 4) {
        ctx.copyToDevice(d, h.data(), (int64_t)h.size() * 4, s);
      } else {
        std::vector<uint16_t> b(h.size());
        for (size_t i = 0; i < h.size(); ++i)
          b[i] = floatToBf16(h[i]);
        ctx.copyToDevice(d, b.data(), (int64_t)b.size() * 2, s);
      }
      return d;
    };
    std::vector<float> out[2];
    double secs[2] = {0, 0};
    CudaContext *ctxs[2] = {&ex, &lt};
    for (int path = 0; path < 2; ++path) {
      CudaContext &ctx = *ctxs[path];
      CudaStream s = ctx.streamForRank(0);
      GemmDesc g;
      g.type = sh.type;
      g.m = sh.m, g.n = sh.n, g.k = sh.k;
      g.transA = sh.transA, g.transB = sh.transB;
      g.a = upload(ctx, ha, s), g.b = upload(ctx, hb, s);
      g.c = ctx.alloc(nc * es, s);
      try {
        secs[path] = bestSync(ctx, s, quick ? 5 : 20, [&] { ctx.gemm(g, s); });
        std::vector<char> raw(nc * es);
        ctx.copyToHost(raw.data(), g.c, nc * es, s);
        ctx.synchronize(s);
        out[path].resize(nc);
        for (int64_t i = 0; i < nc; ++i)
          out[path][i] = es == 4 ? reinterpret_cast<float *>(raw.data())[i]
                                 : bf16ToFloat(reinterpret_cast<uint16_t *>(raw.data())[i]);
      } catch (const std::exception &e) {
        std::printf("gemm paths %s: %s FAILED: %s\n", sh.name, path ? "lt" : "ex", e.what());
      }
      ctx.free(const_cast<void *>(g.a));
      ctx.free(const_cast<void *>(g.b));
      ctx.free(g.c);
    }
    if (out[0].empty() || out[1].empty())
      continue;
    double diff = 0;
    for (int64_t i = 0; i < nc; ++i)
      diff = std::max(diff, (double)std::fabs(out[0][i] - out[1][i]) /
                                std::max(1.0, (double)std::fabs(out[0][i])));
    std::printf("gemm paths %s: ex %.1f us, lt %.1f us, lt speed-up %.2fx, max rel diff %.2g %s\n",
                sh.name, secs[0] * 1e6, secs[1] * 1e6, secs[0] / secs[1], diff,
                diff <= (es == 2 ? 2e-2 : 1e-4) ? "SAME" : "DIFFERENT");
  }
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  std::string program;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else
      program = a;
  }
  if (program.empty()) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
    program = std::filesystem::exists(exe / "../examples/transformer_tp.dt", ec)
                  ? (exe / "../examples/transformer_tp.dt").string()
                  : DT_SOURCE_DIR "/examples/transformer_tp.dt";
  }
  CudaLibraries libs;
  std::string why;
  if (!libs.available(CudaLib::Driver, &why)) {
    std::printf("SKIP: no CUDA driver (%s)\n", why.c_str());
    return 77;
  }
  try {
    CudaContext ctx(libs);
    std::printf("device: %s (%s, %d SMs, %.0f GiB)\n", ctx.deviceName().c_str(), ctx.arch().c_str(),
                ctx.numSMs(), ctx.totalMemory() / 1073741824.0);
    benchNvrtc(libs, program);
    benchFused(ctx, quick);
    benchSums(ctx, quick);
    benchScatter(ctx, quick);
    benchDeterministicGemm(quick);
    benchGemm(ctx, GemmType::BF16, 8192, quick);
    benchGemm(ctx, GemmType::F32, 4096, quick);
    benchGemmPaths(libs, quick);
  } catch (const std::exception &e) {
    std::printf("cuda_bench: FAILED: %s\n", e.what());
    return 1;
  }
  return 0;
}
