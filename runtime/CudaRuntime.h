// This file implements what runs on an NVIDIA GPU: a CudaContext owned by the
// Session for one device -- the driver's primary context, a caching device
// allocator with size-class free lists (one cuMemAlloc per size class and
// stream, not per op), a stream per rank, kernel-IR kernels compiled by NVRTC
// (through the on-disk cache) and launched with the GPU ABI of
// codegen/CudaEmitter.h, and cuBLAS GEMMs. The collectives live in
// runtime/CudaComm.h.
//
// Everything here goes through the tables of codegen/CudaLoader.h, so the
// binary never links a CUDA library; constructing a CudaContext on a machine
// without a driver throws RuntimeFault with one line such as
//   --backend cuda: cannot load libcuda.so.1 (no NVIDIA driver on this machine); searched: ...
//
// Pointers handed out are device pointers (as void*). Thread-safe: the ranks
// of a virtual mesh are threads sharing one context; each calls makeCurrent()
// once and uses its own stream.
//
// Numerics: f32 GEMM runs with CUBLAS_COMPUTE_32F and the default math mode,
// so TF32 tensor cores are OFF unless CudaOptions::allowTf32 (the CPU backend
// computes in full f32; TF32 would be a silent 10-bit-mantissa difference).
#pragma once

#include "codegen/CudaEmitter.h"
#include "codegen/CudaLoader.h"
#include "codegen/Nvrtc.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dt {

/// DTENSOR_CUDA_GEMM=lt: CudaOptions::cublasLt's default.
bool cudaGemmLtFromEnv();

/// Session options of the CUDA backend.
struct CudaOptions {
  int device = 0;                               ///< CUDA device ordinal
  std::string cacheDir = defaultCudaCacheDir(); ///< NVRTC cache ("" = none)
  bool allowTf32 = false;                       ///< f32 GEMM on TF32 tensor cores
  /// GEMMs through cublasLt's heuristic plans instead of cublasGemmEx
  /// (runtime/CudaGemm.cpp; env DTENSOR_CUDA_GEMM=lt).
  bool cublasLt = cudaGemmLtFromEnv();
};

/// An opaque CUDA stream (CUstream); nullptr is the legacy default stream.
using CudaStream = void *;

/// Element types cuBLAS multiplies (the language's f32/f64, plus the 16-bit
/// types device buffers may hold).
enum class GemmType { F32, F64, F16, BF16 };

/// Row-major (batched) GEMM: C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b],
/// C is m x n, op(A) is m x k, op(B) is k x n. Leading dims are row-major row
/// strides in elements; batch strides in elements. F16/BF16 inputs accumulate
/// in f32 and C has the input type.
struct GemmDesc {
  GemmType type = GemmType::F32;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  const void *a = nullptr, *b = nullptr;
  void *c = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0; ///< 0 = packed (k or m / n or k / n)
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  double alpha = 1, beta = 0;
};

/// A kernel-IR kernel compiled and loaded on the device.
struct CudaKernel {
  Kernel kernel;            ///< a copy (launch geometry and args need it)
  std::string symbol;       ///< dt_k_<hash>
  void *module = nullptr;   ///< CUmodule
  void *function = nullptr; ///< CUfunction
  /// Blocks of kCudaBlock threads a multiprocessor runs at once
  /// (cuOccupancyMaxActiveBlocksPerMultiprocessor, at most 8): a split
  /// reduction launches one wave of them.
  int residentBlocks = kCudaMaxResidentBlocks;
};

/// Caching allocator statistics.
struct CudaAllocStats {
  int64_t deviceAllocs = 0; ///< cuMemAlloc calls
  int64_t cacheHits = 0;    ///< allocations served from a free list
  int64_t bytesInUse = 0;   ///< handed out, rounded to size classes
  int64_t bytesCached = 0;  ///< held in free lists
  int64_t peakBytes = 0;    ///< max of in use + cached
};

/// The size class of a request: powers of two from 512 B up to 1 MiB, then
/// multiples of 2 MiB (bounded waste, few distinct classes).
int64_t cudaSizeClass(int64_t bytes);

struct CudaLtCache; // runtime/CudaGemm.cpp

/// One GPU, as the Session sees it.
class CudaContext {
public:
  /// Loads the driver, selects the device, retains its primary context and
  /// makes it current on the calling thread. Throws RuntimeFault
  /// ("--backend cuda: ...") when any of that is impossible.
  CudaContext(CudaLibraries &libs, CudaOptions opts = {});
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  const std::string &deviceName() const { return name_; }
  int computeCapability() const { return cc_; } ///< 90 for sm_90
  std::string arch() const { return "sm_" + std::to_string(cc_); }
  int numSMs() const { return sms_; }
  int64_t totalMemory() const { return totalMem_; }
  CudaLibraries &libs() { return libs_; }
  NvrtcCompiler &nvrtc() { return nvrtc_; }

  /// Binds the context to the calling thread (each rank thread once).
  void makeCurrent();

  // --- memory -------------------------------------------------------------
  /// Device memory of at least `bytes` usable with `stream` (reuse is stream
  /// ordered: a block freed on one stream is only reused on that stream).
  void *alloc(int64_t bytes, CudaStream stream = nullptr);
  void free(void *p);
  CudaAllocStats allocStats() const;
  /// Returns every cached block to the driver (synchronizes the device).
  void releaseCache();

  void copyToDevice(void *dst, const void *src, int64_t bytes, CudaStream s = nullptr);
  void copyToHost(void *dst, const void *src, int64_t bytes, CudaStream s = nullptr);
  void copyOnDevice(void *dst, const void *src, int64_t bytes, CudaStream s = nullptr);
  void zero(void *dst, int64_t bytes, CudaStream s = nullptr);

  // --- streams ------------------------------------------------------------
  /// The stream of `rank` (created on first use; owned by the context).
  CudaStream streamForRank(int rank);
  void synchronize(CudaStream s);
  /// Whether every operation queued on `s` finished (does not block).
  bool query(CudaStream s);
  void synchronizeDevice();

  // --- kernels ------------------------------------------------------------
  /// Emits, compiles (NVRTC + cache) and loads `k` once per structure
  /// (kernelHash + text) and tier; later calls return the loaded kernel.
  /// `quick`: a launch-bound kernel (KernelTable's `small`), compiled by
  /// NvrtcCompiler::compileTier's quick tier.
  const CudaKernel &kernel(const Kernel &k, bool quick = false);
  /// Launches with the ABI params array (KernelIR.h) and device buffers.
  void launch(const CudaKernel &ck, void *const *deviceBuffers, const int64_t *params,
              CudaStream s);
  /// A hand-written kernel of the backend's own (data movement: runtime/
  /// CudaDataKernels.h): `source` defines `extern "C" __global__ symbol`,
  /// compiled by NVRTC and loaded once per context and source (and NVRTC's
  /// disk cache); each function is then looked up in the loaded module.
  /// Returns the CUfunction.
  void *rawFunction(const std::string &source, const std::string &symbol);
  /// cuLaunchKernel of a raw function: `args` as cuLaunchKernel takes them.
  void launchRaw(void *function, int64_t grid, int block, void **args, CudaStream s);

  // --- BLAS ---------------------------------------------------------------
  void gemm(const GemmDesc &g, CudaStream s);

  /// Throws RuntimeFault("<what>: CUDA_ERROR_...") unless `result` is success.
  void check(int result, const char *what) const;

private:
  struct Block {
    int64_t size;
    CudaStream stream;
  };
  void *cublasHandle(CudaStream s); ///< one per stream, created on its first GEMM

  CudaLibraries &libs_;
  CudaOptions opts_;
  NvrtcCompiler nvrtc_;
  int device_ = 0;
  void *ctx_ = nullptr; ///< CUcontext (primary)
  std::string name_;
  int cc_ = 0, sms_ = 0;
  int64_t totalMem_ = 0;

  mutable std::mutex mu_;
  std::map<std::pair<int64_t, CudaStream>, std::vector<void *>> free_; ///< (class, stream)
  std::map<void *, Block> live_;
  CudaAllocStats stats_;
  std::map<int, CudaStream> streams_;
  std::map<std::string, std::unique_ptr<CudaKernel>> kernels_; ///< by kernel text
  std::map<std::string, std::unique_ptr<CudaKernel>> raw_;     ///< by symbol
  std::map<std::string, void *> rawModules_; ///< CUmodule by source: compiled once
  /// cuModuleGetFunction of `symbol` in a loaded raw module, recorded in raw_
  /// (under mu_).
  void *rawLookup(void *module, const std::string &symbol);
  /// The NVRTC request for `source`: a CUBIN for the device's arch when this
  /// NVRTC knows it, else PTX for the newest arch below it.
  NvrtcRequest request(const std::string &source, const std::string &symbol);
  /// cuModuleLoadData + cuModuleGetFunction of a compiled `symbol` into `ck`.
  void load(CudaKernel &ck, const std::string &binary);
  std::map<CudaStream, void *> cublas_; ///< cublasHandle_t per stream
  /// cublasLt's handle, plans and workspaces (runtime/CudaGemm.cpp), made on
  /// the first GEMM with CudaOptions::cublasLt.
  std::shared_ptr<CudaLtCache> lt_;
};

} // namespace dt
