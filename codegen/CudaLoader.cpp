// This file implements CudaLibraries: the dlopen search over a printed list of
// candidate sonames and directories, and the dlsym of every entry point listed
// in codegen/CudaApi.h. A failure becomes one line (RuntimeFault) naming the
// library, why it is probably missing, and every place that was searched.
#include "codegen/CudaLoader.h"
#include "codegen/CudaApi.h"

#include "support/Diagnostics.h"

#include <cstdlib>
#include <dlfcn.h>
#include <glob.h>
#include <sstream>
#include <type_traits>

#define DT_CUDA_STR_(x) #x
/// Stringifies after macro expansion: DT_CUDA_STR(cuMemAlloc) is "cuMemAlloc_v2".
#define DT_CUDA_STR(x) DT_CUDA_STR_(x)

namespace dt {

namespace {

struct LibInfo {
  const char *name;                  ///< for messages
  std::vector<const char *> sonames; ///< most specific first
  bool inToolkit;                    ///< searched under the toolkit dir
  const char *missing;               ///< the likely reason, for the message
};

const LibInfo &libInfo(CudaLib lib) {
  static const LibInfo kInfo[kNumCudaLibs] = {
      {"libcuda", {"libcuda.so.1", "libcuda.so"}, false, "no NVIDIA driver on this machine"},
      {"libnvrtc",
       {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
       true,
       "no CUDA toolkit NVRTC found; install the toolkit or set CUDA_HOME"},
      {"libcublas",
       {"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
       true,
       "no cuBLAS found; install the CUDA toolkit or set CUDA_HOME"},
      {"libcublasLt",
       {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
       true,
       "no cuBLASLt found; install the CUDA toolkit or set CUDA_HOME"},
      {"libnccl", {"libnccl.so.2", "libnccl.so"}, true, "no NCCL found; install libnccl2"},
  };
  return kInfo[(int)lib];
}

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

#if DT_HAVE_CUDA_HEADERS
// The typed overloads in CudaApi.h must match the header's real C symbols
// (unevaluated, so nothing is linked).
static_assert(std::is_same_v<decltype(static_cast<CudaCublasApi::GemmExFn>(&::cublasGemmEx)),
                             CudaCublasApi::GemmExFn>);
static_assert(std::is_same_v<decltype(static_cast<CudaCublasApi::GemmStridedBatchedExFn>(
                                 &::cublasGemmStridedBatchedEx)),
                             CudaCublasApi::GemmStridedBatchedExFn>);

/// Binds one symbol; records the first missing one in `missing`.
template <class Fn> void bind(void *h, const char *sym, Fn &out, std::string &missing) {
  out = reinterpret_cast<Fn>(dlsym(h, sym));
  if (!out && missing.empty())
    missing = sym;
}
#define DT_CUDA_BIND(fn) bind(h, DT_CUDA_STR(fn), t->fn, missing);

std::string driverError(const CudaDriverApi &d, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  d.cuGetErrorName(r, &name);
  d.cuGetErrorString(r, &text);
  return std::string(name ? name : "CUresult " + std::to_string((int)r)) + " (" +
         (text ? text : "unknown error") + ")";
}
#endif

/// The `lib/` folders of the `nvidia-*` wheels of the Python installations
/// this process can see (where pip puts NVRTC, cuBLAS and NCCL: CUDA 13's
/// `nvidia/cu13/lib`, `nvidia/nccl/lib`, CUDA 12's `nvidia/<name>/lib`):
/// site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, every $PATH folder that
/// holds a `python3` (a venv's bin/), $PYTHONPATH, the user's and the
/// system's. Only globbed, never a Python started.
std::vector<std::string> pythonWheelLibDirs() {
  std::vector<std::string> prefixes, sites;
  for (const char *var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *v = std::getenv(var); v && *v)
      prefixes.push_back(v);
  if (const char *path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && dir.size() > 4 && dir.compare(dir.size() - 4, 4, "/bin") == 0)
        prefixes.push_back(dir.substr(0, dir.size() - 4));
  }
  if (const char *home = std::getenv("HOME"); home && *home)
    prefixes.push_back(std::string(home) + "/.local");
  for (const char *p : {"/usr/local", "/usr", "/opt/conda"})
    prefixes.push_back(p);
  for (auto &p : prefixes)
    for (const char *sub : {"/lib/python3*/site-packages", "/lib/python3*/dist-packages",
                            "/lib/python3/dist-packages"})
      sites.push_back(p + sub);
  if (const char *pp = std::getenv("PYTHONPATH")) {
    std::stringstream ss(pp);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty())
        sites.insert(sites.begin(), dir);
  }
  std::vector<std::string> out;
  for (auto &site : sites) {
    glob_t g{};
    if (glob((site + "/nvidia/*/lib").c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        std::string d = g.gl_pathv[i];
        bool seen = false;
        for (auto &x : out)
          seen = seen || x == d;
        if (!seen)
          out.push_back(d);
      }
    globfree(&g);
  }
  return out;
}

} // namespace

const char *cudaLibName(CudaLib lib) { return libInfo(lib).name; }

bool cudaHeadersAvailable() {
#if DT_HAVE_CUDA_HEADERS
  return true;
#else
  return false;
#endif
}

CudaLoaderOptions CudaLoaderOptions::fromEnvironment() {
  CudaLoaderOptions o;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v) {
      o.toolkitDir = v;
      break;
    }
  return o;
}

CudaLibraries::CudaLibraries(CudaLoaderOptions opts) : opts_(std::move(opts)) {}

CudaLibraries::~CudaLibraries() {
  // Libraries are closed in reverse dependency order (NCCL and cuBLAS use the
  // driver). Handles opened by the dynamic linker are reference counted.
  for (int i = kNumCudaLibs - 1; i >= 0; --i)
    if (slots_[i].handle)
      dlclose(slots_[i].handle);
}

std::vector<std::string> CudaLibraries::searchList(CudaLib lib) const {
  const LibInfo &info = libInfo(lib);
  std::vector<std::string> dirs = opts_.extraDirs;
  if (info.inToolkit && !opts_.toolkitDir.empty()) {
    dirs.push_back(opts_.toolkitDir + "/lib64");
    dirs.push_back(opts_.toolkitDir + "/lib");
  }
  for (const char *d : {"/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"})
    dirs.push_back(d);
  if (lib != CudaLib::Driver) // the wheels carry NVRTC, cuBLAS and NCCL, never the driver
    for (auto &d : pythonWheelLibDirs())
      dirs.push_back(d);
  if (lib == CudaLib::Driver) {
    dirs.push_back("/usr/local/nvidia/lib64"); // NVIDIA container runtime
    dirs.push_back("/usr/lib/wsl/lib");        // WSL2
  }
  std::vector<std::string> out;
  auto add = [&](std::string s) {
    for (const auto &x : out)
      if (x == s)
        return;
    out.push_back(std::move(s));
  };
  for (const char *so : info.sonames)
    add(so);
  for (const auto &d : dirs)
    for (const char *so : info.sonames)
      add(d + "/" + so);
  return out;
}

void *CudaLibraries::openFirst(CudaLib lib, std::string *opened, std::string *error) const {
  std::vector<std::string> list = searchList(lib);
  for (const auto &cand : list) {
    // RTLD_LOCAL: the symbols stay in their table, never interpose ours. RTLD_NODELETE: a
    // dlclose leaves the library mapped. The CUDA libraries start threads and register exit
    // handlers that must not outlive their code, and their process-lifetime allocations stay
    // attributable to them (LeakSanitizer suppresses them by library name).
    if (void *h = dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
      char path[4096] = {0};
      if (dlinfo(h, RTLD_DI_ORIGIN, path) == 0 && path[0])
        *opened = std::string(path) + "/" + cand.substr(cand.rfind('/') + 1);
      else
        *opened = cand;
      return h;
    }
  }
  const LibInfo &info = libInfo(lib);
  *error = std::string("cannot load ") + info.sonames[0] + " (" + info.missing +
           "); searched: " + joined(list);
  return nullptr;
}

void CudaLibraries::load(CudaLib lib) {
  Slot &s = slots_[(int)lib];
  if (s.tried)
    return;
  s.tried = true;
#if !DT_HAVE_CUDA_HEADERS
  s.error = std::string("cannot use ") + cudaLibName(lib) +
            ": dtensor was built without CUDA headers (no nvrtc.h at build time); rebuild "
            "with the CUDA toolkit installed";
#else
  void *h = openFirst(lib, &s.path, &s.error);
  if (!h)
    return;
  std::string missing;
  switch (lib) {
  case CudaLib::Driver: {
    auto t = std::make_unique<CudaDriverApi>();
    DT_CUDA_DRIVER_FNS(DT_CUDA_BIND)
    if (missing.empty()) {
      CUresult r = t->cuInit(0);
      if (r != CUDA_SUCCESS) {
        s.error = s.path + " loaded but cuInit failed: " + driverError(*t, r);
        if (r == CUDA_ERROR_STUB_LIBRARY)
          s.error += "; this is the toolkit's link stub, not a driver";
        dlclose(h);
        return;
      }
      t->cuDriverGetVersion(&t->version);
      driver_ = std::move(t);
    }
    break;
  }
  case CudaLib::Nvrtc: {
    auto t = std::make_unique<CudaNvrtcApi>();
    DT_CUDA_NVRTC_FNS(DT_CUDA_BIND)
    if (missing.empty()) {
      t->nvrtcVersion(&t->major, &t->minor);
      nvrtc_ = std::move(t);
      // NVRTC opens its builtins library itself on every compile and closes it after; pinned
      // here (RTLD_NODELETE, from NVRTC's own folder), it is loaded once per process and its
      // allocations stay attributable. Optional: NVRTC reports a missing one itself.
      std::string dir = s.path.substr(0, s.path.rfind('/') + 1);
      for (const char *b : {"libnvrtc-builtins.so.13.0", "libnvrtc-builtins.so"})
        if (dlopen((dir + b).c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))
          break;
    }
    break;
  }
  case CudaLib::Cublas: {
    auto t = std::make_unique<CudaCublasApi>();
    DT_CUDA_CUBLAS_FNS(DT_CUDA_BIND)
    bind(h, "cublasGemmEx", t->cublasGemmEx, missing);
    bind(h, "cublasGemmStridedBatchedEx", t->cublasGemmStridedBatchedEx, missing);
    if (missing.empty())
      cublas_ = std::move(t);
    break;
  }
  case CudaLib::CublasLt: {
    auto t = std::make_unique<CudaCublasLtApi>();
    DT_CUDA_CUBLASLT_FNS(DT_CUDA_BIND)
    if (missing.empty())
      cublasLt_ = std::move(t);
    break;
  }
  case CudaLib::Nccl: {
    auto t = std::make_unique<CudaNcclApi>();
    DT_CUDA_NCCL_FNS(DT_CUDA_BIND)
    if (missing.empty()) {
      t->ncclGetVersion(&t->version);
      nccl_ = std::move(t);
    }
    break;
  }
  }
  if (!missing.empty()) {
    s.error = s.path + " has no symbol `" + missing + "` (a version older than dtensor needs)";
    dlclose(h);
    return;
  }
  s.handle = h;
#endif
}

void CudaLibraries::require(CudaLib lib) {
  std::lock_guard<std::mutex> lock(mu_);
  load(lib);
  if (!slots_[(int)lib].handle)
    throw RuntimeFault(slots_[(int)lib].error);
}

bool CudaLibraries::available(CudaLib lib, std::string *why) {
  std::lock_guard<std::mutex> lock(mu_);
  load(lib);
  if (why)
    *why = slots_[(int)lib].error;
  return slots_[(int)lib].handle != nullptr;
}

std::string CudaLibraries::loadedPath(CudaLib lib) {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[(int)lib].handle ? slots_[(int)lib].path : "";
}

const CudaDriverApi &CudaLibraries::driver() {
  require(CudaLib::Driver);
  return *driver_;
}
const CudaNvrtcApi &CudaLibraries::nvrtc() {
  require(CudaLib::Nvrtc);
  return *nvrtc_;
}
const CudaCublasApi &CudaLibraries::cublas() {
  require(CudaLib::Cublas);
  return *cublas_;
}
const CudaCublasLtApi &CudaLibraries::cublasLt() {
  require(CudaLib::CublasLt);
  return *cublasLt_;
}
const CudaNcclApi &CudaLibraries::nccl() {
  require(CudaLib::Nccl);
  return *nccl_;
}

} // namespace dt
