// Unit tests of codegen/Nvrtc (label `nvrtc`): NVRTC compiles a trivial kernel
// for sm_80 and sm_90 to CUBIN and PTX without a GPU, reports errors and
// warnings in its log, the on-disk cache makes a second compile free, and the
// quick tier (small kernels) compiles into an entry of its own.
#include "codegen/CudaEmitter.h"
#include "codegen/Nvrtc.h"
#include "runtime/CudaComm.h"
#include "runtime/CudaDataKernels.h"
#include "runtime/CudaDeterministicGemm.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dt;

namespace {
const char *kTrivial = R"(extern "C" __global__ void scale(float *p, long long n, float a) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] *= a;
}
)";

/// A fresh cache directory under the system temp dir, removed at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    path = (std::filesystem::temp_directory_path() /
            ("dt_nvrtc_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++)))
               .string();
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  static int &counter() {
    static int c = 0;
    return c;
  }
};
} // namespace

TEST_CASE("nvrtc: a trivial kernel compiles for sm_80 and sm_90, cubin and ptx") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  auto [major, minor] = nvrtc.version();
  MESSAGE("NVRTC " << major << "." << minor);
  CHECK(major >= 12);
  auto archs = nvrtc.supportedArchs();
  CHECK(std::find(archs.begin(), archs.end(), "sm_90") != archs.end());
  for (const char *arch : {"sm_80", "sm_90"}) {
    for (NvrtcOutput out : {NvrtcOutput::Cubin, NvrtcOutput::Ptx}) {
      NvrtcRequest req;
      req.source = kTrivial;
      req.arch = arch;
      req.output = out;
      NvrtcResult r = nvrtc.compile(req);
      INFO(arch << " " << r.log);
      REQUIRE(r.ok);
      CHECK(r.log.empty());
      CHECK_FALSE(r.fromCache);
      if (out == NvrtcOutput::Cubin) {
        REQUIRE(r.binary.size() > 4);
        CHECK(r.binary.compare(0, 4,
                               "\x7f"
                               "ELF") == 0);
      } else {
        CHECK(r.binary.find(".visible .entry scale") != std::string::npos);
        CHECK(r.binary.find(std::string(".target ") + arch) != std::string::npos);
      }
    }
  }
  CHECK(nvrtc.stats().compiles == 4);
}

/// One of the backend's own modules compiles for sm_80 and sm_90 with an
/// empty log, and holds every entry point the backend looks up by name.
static void checkModule(const std::string &source, std::initializer_list<const char *> symbols) {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  for (const char *arch : {"sm_80", "sm_90"}) {
    NvrtcRequest req;
    req.source = source;
    req.arch = arch;
    NvrtcResult r = nvrtc.compile(req);
    INFO(arch << " " << r.log);
    REQUIRE(r.ok);
    CHECK(r.log.empty());
    for (const char *sym : symbols)
      CHECK(r.binary.find(sym) != std::string::npos);
  }
}

TEST_CASE("nvrtc: the cuda backend's data-movement kernels compile with an empty log") {
  checkModule(cudaDataKernelSource(),
              {"dt_strided_copy_1", "dt_strided_copy_8", "dt_gather_4_i32", "dt_gather_2_i64",
               "dt_scatter_add_f32", "dt_scatter_add_bf16", "dt_scatter_add_f16",
               "dt_scatter_add_bool", "dt_scatter_add_i64", "dt_bad_factor_f32",
               "dt_bad_factor_bf16", "dt_bad_factor_f64", "dt_cumsum_f32", "dt_cumsum_bf16",
               "dt_cumsum_i64"});
}

TEST_CASE("nvrtc: kernels with a scatter store compile with an empty log, every rank") {
  // A fused index_add (codegen/CudaScatter.cpp): rank 1 has no dims after
  // the scattered one (no row index), rank 3 two; a plain output beside it,
  // or none.
  for (int rank : {1, 2, 3})
    for (DType t : {DType::F32, DType::F64}) {
      Kernel k;
      k.rank = rank;
      int a = k.load(k.addInput(t));
      int ids = k.load(k.addInput(rank == 2 ? DType::I32 : DType::I64));
      k.addInput(t); // the base
      int x = k.binary(KOp::Mul, a, k.iota(rank - 1, t));
      if (rank > 1)
        k.store(k.addOutput(t), k.unary(KOp::Neg, x));
      k.scatterStore(k.addOutput(t), x, ids, 0);
      INFO("rank " << rank << " " << dtypeName(t));
      checkModule(emitCudaKernel(k, "dt_scatter_test").source, {"dt_scatter_test"});
      Kernel d = k;
      d.deterministic = true;
      checkModule(emitCudaKernel(d, "dt_scatter_det").source, {"dt_scatter_det"});
    }
}

TEST_CASE("nvrtc: deterministic mode's GPU matrix product compiles with an empty log") {
  checkModule(cudaDeterministicGemmSource(),
              {"dt_det_gemm_f32", "dt_det_gemm_f64", "dt_det_gemm_tiled_f32",
               "dt_det_gemm_tiled_f64", "dt_det_gemm_split_f32_leaves",
               "dt_det_gemm_split_f32_merge", "dt_det_gemm_split_f64_leaves",
               "dt_det_gemm_split_f64_merge"});
}

TEST_CASE("cuda deterministic gemm: a skinny product splits its leaves only when its elements "
          "cannot fill the device") {
  // modulation's 16 x 4096 x 4096 f32 on 132 SMs: 65536 elements, 64 leaves
  // (16 MB of leaf values).
  CHECK(cudaDeterministicGemmLeafSplit(1, 16, 4096, 4096, 4, 132));
  CHECK(!cudaDeterministicGemmLeafSplit(1, 16, 64, 4096, 4, 132));      // one leaf
  CHECK(!cudaDeterministicGemmLeafSplit(1, 16, 0, 4096, 4, 132));       // none
  CHECK(!cudaDeterministicGemmLeafSplit(64, 16, 4096, 4096, 4, 132));   // elements fill it
  CHECK(!cudaDeterministicGemmLeafSplit(1, 16, 1 << 20, 8192, 8, 132)); // leaf values too large
}

TEST_CASE("nvrtc: errors and warnings come back in the log") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  NvrtcRequest bad;
  bad.source = "extern \"C\" __global__ void k(float *p) { p[0] = undeclared; }\n";
  bad.arch = "sm_90";
  NvrtcResult r = nvrtc.compile(bad);
  CHECK_FALSE(r.ok);
  CHECK(r.log.find("undeclared") != std::string::npos);

  NvrtcRequest warn;
  warn.source = "extern \"C\" __global__ void k(float *p) { int unused = 3; p[0] = 1.0f; }\n";
  warn.arch = "sm_80";
  r = nvrtc.compile(warn);
  CHECK_FALSE(r.ok);
  CHECK(r.log.find("warnings treated as errors") != std::string::npos);
  CHECK(r.log.find("unused") != std::string::npos);
  warn.warningsAsErrors = false;
  r = nvrtc.compile(warn);
  CHECK(r.ok);
  CHECK(r.log.find("unused") != std::string::npos);
}

TEST_CASE("nvrtc: the disk cache makes the second compile free and leaves no temp files") {
  if (!cudaHeadersAvailable())
    return;
  TempDir dir;
  CudaLibraries libs;
  NvrtcRequest req;
  req.source = kTrivial;
  req.arch = "sm_90";
  std::string first;
  {
    NvrtcCompiler nvrtc(libs, dir.path);
    NvrtcResult r = nvrtc.compile(req);
    REQUIRE(r.ok);
    CHECK_FALSE(r.fromCache);
    CHECK(std::filesystem::exists(r.cacheFile));
    first = r.binary;
  }
  NvrtcCompiler again(libs, dir.path); // a "second run"
  NvrtcResult r = again.compile(req);
  REQUIRE(r.ok);
  CHECK(r.fromCache);
  CHECK(r.binary == first);
  CHECK(again.stats().compiles == 0);
  CHECK(again.stats().cacheHits == 1);
  // A different arch or option is a different entry.
  req.arch = "sm_80";
  CHECK_FALSE(again.compile(req).fromCache);
  req.options = {"-lineinfo"};
  CHECK_FALSE(again.compile(req).fromCache);
  int files = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir.path)) {
    CHECK(e.path().string().find(".tmp.") == std::string::npos);
    ++files;
  }
  CHECK(files == 3);
}

TEST_CASE("nvrtc: the cache key depends on source, arch, options and version") {
  NvrtcRequest a;
  a.source = "x";
  NvrtcRequest b = a;
  b.source = "y";
  NvrtcRequest c = a;
  c.arch = "sm_80";
  NvrtcRequest d = a;
  d.options = {"-lineinfo"};
  std::string k = nvrtcCacheKey(a, 13, 0);
  CHECK(k.size() == 32);
  CHECK(k == nvrtcCacheKey(a, 13, 0));
  CHECK(k != nvrtcCacheKey(b, 13, 0));
  CHECK(k != nvrtcCacheKey(c, 13, 0));
  CHECK(k != nvrtcCacheKey(d, 13, 0));
  CHECK(k != nvrtcCacheKey(a, 13, 1));
}

TEST_CASE("nvrtc: compiles from many threads at once give what one thread gives") {
  // The cuda backend precompiles a program's kernels on the host's cores
  // (CudaBackend::precompile): one compiler, concurrent compile() calls,
  // through the same disk cache.
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  TempDir dir;
  NvrtcCompiler nvrtc(libs, dir.path);
  const int n = 8;
  std::vector<NvrtcRequest> reqs(n);
  for (int i = 0; i < n; ++i) {
    reqs[i].source = std::string(kTrivial) + "// variant " + std::to_string(i) + "\n";
    reqs[i].source.replace(reqs[i].source.find("scale"), 5, "scale" + std::to_string(i));
  }
  std::vector<NvrtcResult> par(2 * n);
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < 2 * n; ++t) // each request twice: racing on its cache entry
      ts.emplace_back([&, t] { par[t] = nvrtc.compile(reqs[t % n]); });
    for (auto &t : ts)
      t.join();
  }
  NvrtcCompiler serial(libs, "");
  for (int t = 0; t < 2 * n; ++t) {
    INFO("request " << t % n << ": " << par[t].log);
    REQUIRE(par[t].ok);
    CHECK(par[t].log.empty());
    CHECK(par[t].binary == serial.compile(reqs[t % n]).binary);
  }
  // Every entry landed once in the cache, with no temp files left behind.
  int files = 0;
  for (auto &e : std::filesystem::recursive_directory_iterator(dir.path)) {
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
    files += e.is_regular_file();
  }
  CHECK(files == n);
}

TEST_CASE("nvrtc: the quick tier compiles with an empty log into a cache entry of its own") {
  // KernelTable's small kernels compile at the quick tier (compileTier): a
  // separate cache entry, so a kernel compiled quick for a small call site
  // never stands in for the full tier's code.
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  TempDir dir;
  NvrtcCompiler nvrtc(libs, dir.path);
  NvrtcRequest req;
  req.source = kTrivial;
  NvrtcResult full = nvrtc.compileTier(req, false), quick = nvrtc.compileTier(req, true);
  INFO(quick.log);
  REQUIRE(full.ok);
  REQUIRE(quick.ok);
  CHECK(quick.log.empty());
  const auto [major, minor] = nvrtc.version();
  if (std::make_pair(major, minor) < std::make_pair(12, 8)) { // no such option: the full tier
    CHECK(quick.cacheFile == full.cacheFile);
    return;
  }
  CHECK_FALSE(quick.fromCache);
  NvrtcRequest withOption = req;
  withOption.options.push_back(NvrtcCompiler::kQuickOption);
  CHECK(quick.cacheFile.find(nvrtcCacheKey(withOption, major, minor)) != std::string::npos);
  CHECK(quick.cacheFile != full.cacheFile);
  CHECK(nvrtc.compileTier(req, true).fromCache);
}

TEST_CASE("nvrtc: the collectives' combine and divide kernels compute as documented and compile") {
  // runtime/CudaComm.h: an `avg` divides by the group's size, a constant of
  // the kernel (nothing uploaded, no wait); the interpreter is the oracle of
  // the CUDA lowering (tests/cudasim), so it is checked here, and NVRTC
  // compiles both kernels for every dtype they take.
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    HostTensor x(t, {5}), y(t, {5});
    const double vals[] = {7, -7, 1, 0, 100};
    for (int i = 0; i < 5; ++i)
      x.set(i, vals[i]);
    Kernel k = cudaDivideKernel(t, 3);
    std::vector<int64_t> params = kernelParams(k, {5}, {{1}}, {{1}});
    void *bufs[] = {x.raw(), y.raw()};
    interpretKernel(k, bufs, params.data());
    for (int i = 0; i < 5; ++i) {
      double want = t == DType::F32   ? (double)((float)vals[i] / 3.0f)
                    : t == DType::F64 ? vals[i] / 3.0
                                      : (double)((int64_t)vals[i] / 3);
      CHECK(y.get(i) == want);
    }
  }
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  auto compiles = [&](const Kernel &k) {
    NvrtcRequest req;
    req.source = emitCudaKernel(k, "k").source;
    NvrtcResult r = nvrtc.compile(req);
    INFO(printKernel(k) << r.log);
    CHECK(r.ok);
    CHECK(r.log.empty());
  };
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::BF16, DType::F16}) {
    compiles(cudaDivideKernel(t, 8));
    compiles(cudaCombineKernel(t, ReduceOp::Sum));
  }
  compiles(cudaCombineKernel(DType::Bool, ReduceOp::Min));
}
