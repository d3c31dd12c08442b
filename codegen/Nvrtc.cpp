// This file implements NvrtcCompiler: one NVRTC program per request, the log
// and output read back, and the content-addressed on-disk cache.
#include "codegen/Nvrtc.h"

#include "codegen/CacheFile.h"
#include "codegen/CudaApi.h"
#include "support/Diagnostics.h"

#include <cstdio>
#include <cstdlib>

namespace dt {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() &&
         (s.back() == '\0' || s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
    s.pop_back();
  return s;
}

/// A `compute_XY` arch has no CUBIN: NVRTC then produces PTX whatever was asked.
bool producesPtx(const NvrtcRequest &req) {
  return req.output == NvrtcOutput::Ptx || req.arch.rfind("compute_", 0) == 0;
}

} // namespace

std::string defaultCudaCacheDir() {
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/dtensor";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/dtensor";
  return "";
}

std::vector<std::string> nvrtcBaseOptions(const std::string &arch) {
  // --fmad=false: no contraction of a*b+c into an FMA, so elementwise float
  // chains round exactly like the CPU backend (which does not contract).
  // Division and sqrt stay IEEE-rounded (the NVRTC defaults without fast math).
  return {"--gpu-architecture=" + arch, "--std=c++17", "--fmad=false"};
}

std::string nvrtcCacheKey(const NvrtcRequest &req, int nvrtcMajor, int nvrtcMinor) {
  std::string meta = "dtensor-nvrtc-v1\n" + req.arch + "\n" + (producesPtx(req) ? "ptx" : "cubin") +
                     "\n" + std::to_string(nvrtcMajor) + "." + std::to_string(nvrtcMinor) + "\n" +
                     (req.warningsAsErrors ? "werror" : "") + "\n";
  for (const auto &o : nvrtcBaseOptions(req.arch))
    meta += o + "\n";
  for (const auto &o : req.options)
    meta += o + "\n";
  meta += std::to_string(req.source.size()) + "\n";
  std::string all = meta + req.source;
  return hex64(fnv1a(all, 0xcbf29ce484222325ull)) + hex64(fnv1a(all, 0x84222325cbf29ce4ull));
}

NvrtcCompiler::NvrtcCompiler(CudaLibraries &libs, std::string cacheDir)
    : libs_(libs), cacheDir_(std::move(cacheDir)) {}

std::pair<int, int> NvrtcCompiler::version() {
#if DT_HAVE_CUDA_HEADERS
  const CudaNvrtcApi &n = libs_.nvrtc();
  return {n.major, n.minor};
#else
  libs_.nvrtc(); // throws "built without CUDA headers"
  return {0, 0};
#endif
}

std::vector<std::string> NvrtcCompiler::supportedArchs() {
  std::vector<std::string> out;
#if DT_HAVE_CUDA_HEADERS
  const CudaNvrtcApi &n = libs_.nvrtc();
  int count = 0;
  if (n.nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return out;
  std::vector<int> archs(count);
  if (n.nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return out;
  for (int a : archs)
    out.push_back("sm_" + std::to_string(a));
#else
  libs_.nvrtc();
#endif
  return out;
}

NvrtcCompiler::Stats NvrtcCompiler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

NvrtcResult NvrtcCompiler::compile(const NvrtcRequest &req) {
  auto [major, minor] = version();
  std::string file;
  if (!cacheDir_.empty()) {
    file =
        cacheDir_ + "/" + nvrtcCacheKey(req, major, minor) + (producesPtx(req) ? ".ptx" : ".cubin");
    NvrtcResult hit;
    if (readCacheFile(file, &hit.binary) && !hit.binary.empty()) {
      hit.ok = true;
      hit.fromCache = true;
      hit.cacheFile = file;
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.cacheHits;
      return hit;
    }
  }
  NvrtcResult r = compileUncached(req);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.compiles;
  }
  if (r.ok && !file.empty()) {
    writeCacheFile(cacheDir_, file, r.binary);
    r.cacheFile = file;
  }
  return r;
}

NvrtcResult NvrtcCompiler::compileTier(NvrtcRequest req, bool quick) {
  if (quick && version() >= std::make_pair(12, 8)) {
    req.options.push_back(kQuickOption);
    NvrtcResult r = compile(req);
    if (r.ok)
      return r;
    req.options.pop_back(); // rejected: the full compile says why, if it fails too
  }
  return compile(req);
}

NvrtcResult NvrtcCompiler::compileUncached(const NvrtcRequest &req) {
  NvrtcResult r;
#if DT_HAVE_CUDA_HEADERS
  const CudaNvrtcApi &n = libs_.nvrtc();
  auto fail = [&](nvrtcResult code, const char *what) {
    r.ok = false;
    std::string msg = std::string(what) + ": " + n.nvrtcGetErrorString(code);
    r.log = r.log.empty() ? msg : msg + "\n" + r.log;
    return r;
  };
  nvrtcProgram prog = nullptr;
  nvrtcResult rc =
      n.nvrtcCreateProgram(&prog, req.source.c_str(), req.name.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS)
    return fail(rc, "nvrtcCreateProgram");
  // The program is destroyed on every path out.
  struct Guard {
    const CudaNvrtcApi &n;
    nvrtcProgram &p;
    ~Guard() { n.nvrtcDestroyProgram(&p); }
  } guard{n, prog};

  std::vector<std::string> opts = nvrtcBaseOptions(req.arch);
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  std::vector<const char *> argv;
  for (const auto &o : opts)
    argv.push_back(o.c_str());
  rc = n.nvrtcCompileProgram(prog, (int)argv.size(), argv.data());

  size_t logSize = 0;
  if (n.nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    std::string log(logSize, '\0');
    if (n.nvrtcGetProgramLog(prog, log.data()) == NVRTC_SUCCESS)
      r.log = trimmed(log);
  }
  if (rc != NVRTC_SUCCESS)
    return fail(rc, "nvrtcCompileProgram");
  if (req.warningsAsErrors && !r.log.empty()) {
    r.ok = false;
    r.log = "warnings treated as errors:\n" + r.log;
    return r;
  }

  size_t size = 0;
  if (producesPtx(req)) {
    if ((rc = n.nvrtcGetPTXSize(prog, &size)) != NVRTC_SUCCESS)
      return fail(rc, "nvrtcGetPTXSize");
    r.binary.assign(size, '\0');
    if ((rc = n.nvrtcGetPTX(prog, r.binary.data())) != NVRTC_SUCCESS)
      return fail(rc, "nvrtcGetPTX");
  } else {
    if ((rc = n.nvrtcGetCUBINSize(prog, &size)) != NVRTC_SUCCESS)
      return fail(rc, "nvrtcGetCUBINSize");
    r.binary.assign(size, '\0');
    if ((rc = n.nvrtcGetCUBIN(prog, r.binary.data())) != NVRTC_SUCCESS)
      return fail(rc, "nvrtcGetCUBIN");
  }
  r.ok = !r.binary.empty();
  if (!r.ok)
    r.log = "nvrtc produced no output for " + req.arch;
#else
  (void)req;
  libs_.nvrtc(); // throws "built without CUDA headers"
#endif
  return r;
}

} // namespace dt
