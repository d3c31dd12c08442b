// This file implements the entry-point tables of the CUDA libraries that
// CudaLibraries (codegen/CudaLoader.h) fills with dlsym. Internal: include it
// only from the dtensor library's own .cpp files, which see the CUDA headers
// (a PRIVATE include directory with DT_HAVE_CUDA_HEADERS=1).
//
// Every table is listed once as an X-macro; `decltype(&::fn)` takes each
// signature from the real header, and the symbol looked up is the name after
// macro expansion (`cuMemAlloc` is `cuMemAlloc_v2`, `cublasCreate` is
// `cublasCreate_v2`), exactly what an application linked against the library
// would bind. Overloaded C++ wrappers (cublasGemmEx) get an explicit type.
// Without the headers the tables are empty and nothing can be loaded.
#pragma once

#include "codegen/CudaLoader.h"

#if DT_HAVE_CUDA_HEADERS
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <nccl.h>
#include <nvrtc.h>

// clang-format off
#define DT_CUDA_DRIVER_FNS(X)                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                    \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)            \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)             \
  X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize)                                \
  X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)       \
  X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuOccupancyMaxActiveBlocksPerMultiprocessor)   \
  X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemAllocHost) X(cuMemFreeHost)            \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD)                                          \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async)        \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)         \
  X(cuStreamQuery)                                                                         \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)                \
  X(cuEventElapsedTime)

#define DT_CUDA_NVRTC_FNS(X)                                                               \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcGetNumSupportedArchs)                      \
  X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)                   \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)                   \
  X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

#define DT_CUDA_CUBLAS_FNS(X)                                                              \
  X(cublasCreate) X(cublasDestroy) X(cublasGetVersion) X(cublasSetStream)                  \
  X(cublasSetMathMode) X(cublasSetWorkspace) X(cublasGetStatusString) X(cublasSgemm)       \
  X(cublasDgemm)

#define DT_CUDA_CUBLASLT_FNS(X)                                                            \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtMatmul)             \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                                 \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)                          \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                       \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                     \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)

#define DT_CUDA_NCCL_FNS(X)                                                                \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommInitAll)              \
  X(ncclCommDestroy) X(ncclCommAbort) X(ncclGetErrorString) X(ncclCommGetAsyncError)       \
  X(ncclCommCount) X(ncclCommUserRank) X(ncclAllReduce) X(ncclAllGather)                   \
  X(ncclReduceScatter) X(ncclReduce) X(ncclBroadcast) X(ncclBcast) X(ncclSend) X(ncclRecv)  \
  X(ncclGroupStart) X(ncclGroupEnd)
// clang-format on

#define DT_CUDA_FN_MEMBER(fn) decltype(&::fn) fn = nullptr;

namespace dt {

/// libcuda (driver API) entry points.
struct CudaDriverApi {
  DT_CUDA_DRIVER_FNS(DT_CUDA_FN_MEMBER)
  int version = 0; ///< cuDriverGetVersion, e.g. 13000
};

/// libnvrtc entry points.
struct CudaNvrtcApi {
  DT_CUDA_NVRTC_FNS(DT_CUDA_FN_MEMBER)
  int major = 0, minor = 0; ///< nvrtcVersion
};

/// libcublas entry points. cublasGemmEx / cublasGemmStridedBatchedEx are
/// overloaded in C++ (a legacy cudaDataType wrapper), so they are typed here.
struct CudaCublasApi {
  DT_CUDA_CUBLAS_FNS(DT_CUDA_FN_MEMBER)
  using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const void *, const void *, cudaDataType, int,
                                      const void *, cudaDataType, int, const void *, void *,
                                      cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                    cublasOperation_t, int, int, int, const void *,
                                                    const void *, cudaDataType, int, long long,
                                                    const void *, cudaDataType, int, long long,
                                                    const void *, void *, cudaDataType, int,
                                                    long long, int, cublasComputeType_t,
                                                    cublasGemmAlgo_t);
  GemmExFn cublasGemmEx = nullptr;
  GemmStridedBatchedExFn cublasGemmStridedBatchedEx = nullptr;
};

/// libcublasLt entry points.
struct CudaCublasLtApi {
  DT_CUDA_CUBLASLT_FNS(DT_CUDA_FN_MEMBER)
};

/// libnccl entry points.
struct CudaNcclApi {
  DT_CUDA_NCCL_FNS(DT_CUDA_FN_MEMBER)
  int version = 0; ///< ncclGetVersion, e.g. 22809
};

} // namespace dt

#else // !DT_HAVE_CUDA_HEADERS

namespace dt {
struct CudaDriverApi {};
struct CudaNvrtcApi {};
struct CudaCublasApi {};
struct CudaCublasLtApi {};
struct CudaNcclApi {};
} // namespace dt

#endif
