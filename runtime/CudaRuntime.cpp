// This file implements CudaContext (runtime/CudaRuntime.h): device selection,
// the caching allocator, streams, NVRTC kernels and cuBLAS GEMM, all through
// the dlopen'ed tables of codegen/CudaApi.h. Without the CUDA headers at build
// time the constructor reports that and nothing else is reachable.
#include "runtime/CudaRuntime.h"

#include "codegen/CudaApi.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace dt {

int64_t cudaSizeClass(int64_t bytes) {
  if (bytes <= 512)
    return 512;
  if (bytes <= (1 << 20)) {
    int64_t c = 512;
    while (c < bytes)
      c <<= 1;
    return c;
  }
  const int64_t twoMiB = 2 << 20;
  return (bytes + twoMiB - 1) / twoMiB * twoMiB;
}

#if DT_HAVE_CUDA_HEADERS

namespace {
CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }
CUstream cus(CudaStream s) { return static_cast<CUstream>(s); }
} // namespace

void CudaContext::check(int result, const char *what) const {
  if (result == CUDA_SUCCESS)
    return;
  const CudaDriverApi &d = libs_.driver();
  const char *name = nullptr, *text = nullptr;
  d.cuGetErrorName((CUresult)result, &name);
  d.cuGetErrorString((CUresult)result, &text);
  throw RuntimeFault(std::string("cuda: ") + what + " failed: " + (name ? name : "?") + " (" +
                     (text ? text : "unknown error") + ")");
}

CudaContext::CudaContext(CudaLibraries &libs, CudaOptions opts)
    : libs_(libs), opts_(std::move(opts)), nvrtc_(libs, opts_.cacheDir), device_(opts_.device) {
  const CudaDriverApi *dp = nullptr;
  try {
    dp = &libs_.driver();
  } catch (const RuntimeFault &e) {
    throw RuntimeFault(std::string("--backend cuda: ") + e.what());
  }
  const CudaDriverApi &d = *dp;
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (device_ < 0 || device_ >= count)
    throw RuntimeFault("--backend cuda: device " + std::to_string(device_) + " requested but " +
                       std::to_string(count) + " CUDA device(s) present");
  CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, device_), "cuDeviceGet");
  char name[256] = {0};
  check(d.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  name_ = name;
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute");
  cc_ = major * 10 + minor;
  check(d.cuDeviceGetAttribute(&sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
        "cuDeviceGetAttribute");
  size_t total = 0;
  check(d.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  totalMem_ = (int64_t)total;
  CUcontext ctx = nullptr;
  check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  ctx_ = ctx;
  makeCurrent();
}

CudaContext::~CudaContext() {
  if (!ctx_)
    return;
  // Destructors must not throw: errors while tearing down are ignored.
  const CudaDriverApi &d = libs_.driver();
  d.cuCtxSetCurrent(static_cast<CUcontext>(ctx_));
  d.cuCtxSynchronize();
  for (auto &[text, k] : kernels_)
    if (k->module)
      d.cuModuleUnload(static_cast<CUmodule>(k->module));
  for (auto &[source, m] : rawModules_)
    d.cuModuleUnload(static_cast<CUmodule>(m));
  lt_.reset(); // its workspaces are among the blocks freed below
  for (auto &[stream, h] : cublas_)
    libs_.cublas().cublasDestroy(static_cast<cublasHandle_t>(h));
  for (auto &[key, list] : free_)
    for (void *p : list)
      d.cuMemFree(dptr(p));
  for (auto &[p, b] : live_)
    d.cuMemFree(dptr(p));
  for (auto &[rank, s] : streams_)
    d.cuStreamDestroy(cus(s));
  CUdevice dev = 0;
  if (d.cuDeviceGet(&dev, device_) == CUDA_SUCCESS)
    d.cuDevicePrimaryCtxRelease(dev);
}

void CudaContext::makeCurrent() {
  check(libs_.driver().cuCtxSetCurrent(static_cast<CUcontext>(ctx_)), "cuCtxSetCurrent");
}

// --- memory ------------------------------------------------------------------

void *CudaContext::alloc(int64_t bytes, CudaStream stream) {
  const int64_t size = cudaSizeClass(std::max<int64_t>(bytes, 1));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.find({size, stream});
  void *p = nullptr;
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    stats_.bytesCached -= size;
    ++stats_.cacheHits;
  } else {
    const CudaDriverApi &d = libs_.driver();
    CUdeviceptr dp = 0;
    CUresult r = d.cuMemAlloc(&dp, (size_t)size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && stats_.bytesCached > 0) {
      // Give the cache back and try once more before reporting OOM.
      d.cuCtxSynchronize();
      for (auto &[key, list] : free_)
        for (void *q : list)
          d.cuMemFree(dptr(q));
      free_.clear();
      stats_.bytesCached = 0;
      r = d.cuMemAlloc(&dp, (size_t)size);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw RuntimeFault("cuda: out of device memory allocating " + std::to_string(bytes) +
                         " bytes on " + name_ + " (" + std::to_string(stats_.bytesInUse) +
                         " bytes in use)");
    check(r, "cuMemAlloc");
    p = reinterpret_cast<void *>((uintptr_t)dp);
    ++stats_.deviceAllocs;
  }
  live_[p] = Block{size, stream};
  stats_.bytesInUse += size;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.bytesInUse + stats_.bytesCached);
  return p;
}

void CudaContext::free(void *p) {
  if (!p)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end())
    throw InternalError("CudaContext::free: pointer not from this allocator");
  free_[{it->second.size, it->second.stream}].push_back(p);
  stats_.bytesInUse -= it->second.size;
  stats_.bytesCached += it->second.size;
  live_.erase(it);
}

CudaAllocStats CudaContext::allocStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CudaContext::releaseCache() {
  std::lock_guard<std::mutex> lock(mu_);
  const CudaDriverApi &d = libs_.driver();
  check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  for (auto &[key, list] : free_)
    for (void *p : list)
      check(d.cuMemFree(dptr(p)), "cuMemFree");
  free_.clear();
  stats_.bytesCached = 0;
}

void CudaContext::copyToDevice(void *dst, const void *src, int64_t bytes, CudaStream s) {
  if (bytes > 0)
    check(libs_.driver().cuMemcpyHtoDAsync(dptr(dst), src, (size_t)bytes, cus(s)),
          "cuMemcpyHtoDAsync");
}
void CudaContext::copyToHost(void *dst, const void *src, int64_t bytes, CudaStream s) {
  if (bytes <= 0)
    return;
  check(libs_.driver().cuMemcpyDtoHAsync(dst, dptr(src), (size_t)bytes, cus(s)),
        "cuMemcpyDtoHAsync");
  synchronize(s); // the host reads dst next: pageable memory, so wait here
}
void CudaContext::copyOnDevice(void *dst, const void *src, int64_t bytes, CudaStream s) {
  if (bytes > 0 && dst != src)
    check(libs_.driver().cuMemcpyDtoDAsync(dptr(dst), dptr(src), (size_t)bytes, cus(s)),
          "cuMemcpyDtoDAsync");
}
void CudaContext::zero(void *dst, int64_t bytes, CudaStream s) {
  if (bytes > 0)
    check(libs_.driver().cuMemsetD8Async(dptr(dst), 0, (size_t)bytes, cus(s)), "cuMemsetD8Async");
}

// --- streams -------------------------------------------------------------------

CudaStream CudaContext::streamForRank(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(rank);
  if (it != streams_.end())
    return it->second;
  // A stream belongs to the context current on the calling thread: a rank
  // thread that has not made it current yet would get CUDA_ERROR_INVALID_CONTEXT.
  makeCurrent();
  CUstream s = nullptr;
  check(libs_.driver().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  streams_[rank] = s;
  return s;
}

void CudaContext::synchronize(CudaStream s) {
  check(libs_.driver().cuStreamSynchronize(cus(s)), "cuStreamSynchronize");
}

bool CudaContext::query(CudaStream s) {
  CUresult r = libs_.driver().cuStreamQuery(cus(s));
  if (r == CUDA_ERROR_NOT_READY)
    return false;
  check(r, "cuStreamQuery");
  return true;
}

void CudaContext::synchronizeDevice() {
  check(libs_.driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

// --- kernels -------------------------------------------------------------------

NvrtcRequest CudaContext::request(const std::string &source, const std::string &symbol) {
  NvrtcRequest req;
  req.source = source;
  req.name = symbol + ".cu";
  req.arch = arch();
  auto archs = nvrtc_.supportedArchs();
  if (std::find(archs.begin(), archs.end(), req.arch) == archs.end()) {
    int best = 0;
    for (const auto &a : archs)
      if (int v = std::atoi(a.c_str() + 3); v <= cc_)
        best = std::max(best, v);
    if (!best)
      throw RuntimeFault("--backend cuda: NVRTC cannot target " + arch() + " (" + name_ + ")");
    req.arch = "compute_" + std::to_string(best);
    req.output = NvrtcOutput::Ptx;
  }
  return req;
}

void CudaContext::load(CudaKernel &ck, const std::string &binary) {
  const CudaDriverApi &d = libs_.driver();
  CUmodule mod = nullptr;
  check(d.cuModuleLoadData(&mod, binary.data()), "cuModuleLoadData");
  CUfunction fn = nullptr;
  CUresult fr = d.cuModuleGetFunction(&fn, mod, ck.symbol.c_str());
  if (fr != CUDA_SUCCESS) {
    d.cuModuleUnload(mod);
    check(fr, "cuModuleGetFunction");
  }
  ck.module = mod;
  ck.function = fn;
  int resident = 0;
  if (d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, fn, kCudaBlock, 0) == CUDA_SUCCESS &&
      resident > 0)
    ck.residentBlocks = std::min(resident, kCudaMaxResidentBlocks);
}

const CudaKernel &CudaContext::kernel(const Kernel &k, bool quick) {
  const std::string text = cudaKernelKey(k, quick);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(text);
    if (it != kernels_.end())
      return *it->second;
  }
  auto ck = std::make_unique<CudaKernel>();
  ck->kernel = k;
  ck->symbol = cudaKernelSymbol(k);
  CudaKernelSource src = emitCudaKernel(k, ck->symbol);
  NvrtcResult r = nvrtc_.compileTier(request(src.source, ck->symbol), quick);
  if (!r.ok)
    throw InternalError("NVRTC rejected the emitted kernel " + ck->symbol + ":\n" + r.log);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(text); // another rank thread may have won the race
  if (it != kernels_.end())
    return *it->second;
  load(*ck, r.binary);
  return *(kernels_[text] = std::move(ck));
}

void *CudaContext::rawFunction(const std::string &source, const std::string &symbol) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = raw_.find(symbol); it != raw_.end())
      return it->second->function;
    if (auto m = rawModules_.find(source); m != rawModules_.end())
      return rawLookup(m->second, symbol);
  }
  // A module is compiled and loaded once; its other functions are looked up.
  CudaKernel mod;
  mod.symbol = symbol;
  NvrtcResult r = nvrtc_.compile(request(source, symbol));
  if (!r.ok)
    throw InternalError("NVRTC rejected the backend's kernel " + symbol + ":\n" + r.log);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto m = rawModules_.find(source); m != rawModules_.end()) // another rank won the race
    return rawLookup(m->second, symbol);
  load(mod, r.binary);
  rawModules_[source] = mod.module;
  auto ck = std::make_unique<CudaKernel>(std::move(mod));
  ck->module = nullptr; // owned by rawModules_
  void *f = ck->function;
  raw_[symbol] = std::move(ck);
  return f;
}

void *CudaContext::rawLookup(void *module, const std::string &symbol) {
  CUfunction fn = nullptr;
  check(libs_.driver().cuModuleGetFunction(&fn, static_cast<CUmodule>(module), symbol.c_str()),
        "cuModuleGetFunction");
  auto ck = std::make_unique<CudaKernel>();
  ck->symbol = symbol;
  ck->function = fn;
  raw_[symbol] = std::move(ck);
  return fn;
}

void CudaContext::launchRaw(void *function, int64_t grid, int block, void **args, CudaStream s) {
  if (grid <= 0)
    return;
  check(libs_.driver().cuLaunchKernel(static_cast<CUfunction>(function),
                                      (unsigned)std::min<int64_t>(grid, 1 << 30), 1, 1,
                                      (unsigned)block, 1, 1, 0, cus(s), args, nullptr),
        "cuLaunchKernel");
}

void CudaContext::launch(const CudaKernel &ck, void *const *deviceBuffers, const int64_t *params,
                         CudaStream s) {
  CudaLaunchDims dims = cudaLaunchDims(ck.kernel, params, sms_);
  if (dims.grid == 0)
    return;
  std::vector<uint64_t> words = cudaKernelArgs(ck.kernel, deviceBuffers, params);
  void *args[] = {words.data()}; // one by-value argument: struct dt_args
  auto go = [&](unsigned grid) {
    check(libs_.driver().cuLaunchKernel(static_cast<CUfunction>(ck.function), grid, 1, 1,
                                        dims.block, 1, 1, 0, cus(s), args, nullptr),
          "cuLaunchKernel");
  };
  const int64_t split = cudaReduceSplit(ck.kernel, params, sms_, ck.residentBlocks);
  if (split <= 1) {
    go(dims.grid);
    return;
  }
  // Two passes over one scratch buffer (CudaEmitter.h): chunks, then the fold.
  void *scratch = alloc(cudaSplitScratchBytes(ck.kernel, params, split), s);
  const size_t W = words.size();
  words[W - 2] = (uint64_t)split;
  words[W - 1] = (uint64_t)(uintptr_t)scratch;
  go((unsigned)cudaSplitBlocks(ck.kernel, params, split));
  words[W - 2] = (uint64_t)(-split);
  go((unsigned)cudaFoldBlocks(ck.kernel, params, sms_));
  free(scratch); // reused only on this stream, after these launches
}

// --- BLAS ----------------------------------------------------------------------

void *CudaContext::cublasHandle(CudaStream s) {
  // One handle per stream: a handle's stream is state (cublasSetStream), and
  // the rank threads multiply concurrently, each on its own stream.
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cublas_.find(s); it != cublas_.end())
    return it->second;
  const CudaCublasApi &b = libs_.cublas();
  cublasHandle_t h = nullptr;
  if (cublasStatus_t st = b.cublasCreate(&h); st != CUBLAS_STATUS_SUCCESS)
    throw RuntimeFault(std::string("cuda: cublasCreate failed: ") + b.cublasGetStatusString(st));
  // Default math: no TF32 unless the compute type asks for it (gemm()).
  b.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  b.cublasSetStream(h, cus(s));
  cublas_[s] = h;
  return h;
}

#else // !DT_HAVE_CUDA_HEADERS

void CudaContext::check(int, const char *) const {}
CudaContext::CudaContext(CudaLibraries &libs, CudaOptions opts)
    : libs_(libs), opts_(std::move(opts)), nvrtc_(libs, opts_.cacheDir) {
  try {
    libs_.driver(); // throws "built without CUDA headers"
  } catch (const RuntimeFault &e) {
    throw RuntimeFault(std::string("--backend cuda: ") + e.what());
  }
}
CudaContext::~CudaContext() = default;
void CudaContext::makeCurrent() {}
void *CudaContext::alloc(int64_t, CudaStream) { return nullptr; }
void CudaContext::free(void *) {}
CudaAllocStats CudaContext::allocStats() const { return stats_; }
void CudaContext::releaseCache() {}
void CudaContext::copyToDevice(void *, const void *, int64_t, CudaStream) {}
void CudaContext::copyToHost(void *, const void *, int64_t, CudaStream) {}
void CudaContext::copyOnDevice(void *, const void *, int64_t, CudaStream) {}
void CudaContext::zero(void *, int64_t, CudaStream) {}
CudaStream CudaContext::streamForRank(int) { return nullptr; }
void CudaContext::synchronize(CudaStream) {}
bool CudaContext::query(CudaStream) { return true; }
void CudaContext::synchronizeDevice() {}
const CudaKernel &CudaContext::kernel(const Kernel &, bool) {
  throw RuntimeFault("--backend cuda: built without CUDA headers");
}
void CudaContext::launch(const CudaKernel &, void *const *, const int64_t *, CudaStream) {}
void *CudaContext::cublasHandle(CudaStream) { return nullptr; }
void *CudaContext::rawFunction(const std::string &, const std::string &) { return nullptr; }
void CudaContext::launchRaw(void *, int64_t, int, void **, CudaStream) {}

#endif

} // namespace dt
