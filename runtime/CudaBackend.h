// This file implements the cuda backend: the ranks of a virtual mesh as
// threads on ONE GPU, each with its own stream (runtime/CudaRuntime.h's
// CudaContext: caching allocator, NVRTC kernels from the one kernel IR,
// cuBLAS), collectives as device copies plus kernel-IR reductions
// (CudaCopyComm, runtime/CudaComm.h). Buffers are device memory (Buffer
// where() == Device) freed back to the context's caching allocator.
//
// Status (first run on an H100 in the eighth session; compiles without a GPU
// or CUDA headers):
//  * constructing it on a machine without a driver throws the loader's one
//    line (`--backend cuda: cannot load libcuda.so.1 ...`), so `dtensorc run
//    --backend cuda` fails cleanly where there is no GPU;
//  * fused kernels launch as NVRTC kernels; float matmul runs on cuBLAS (one
//    handle per rank stream);
//  * copyRegion, transpose, index_select and index_add are device kernels of
//    the backend's own (runtime/CudaDataKernels.h); the fallback ops (loads,
//    check_factor, --no-jit) are STAGED through host memory (download,
//    reference kernel, upload): correct but slow;
//  * one process per GPU with NCCL (NcclComm) needs the mpi launcher's id
//    exchange: not wired (issue 15);
//  * a failing rank aborts every copy group (the others stop waiting) and the
//    run reports its failure; a rank waiting longer than the fault timeout in
//    one collective ends the run with who arrived.
#pragma once

#include "runtime/Backend.h"

#include <map>
#include <memory>
#include <mutex>

namespace dt {

class CudaLibraries;
class CudaContext;
class CudaCopyGroup;

class CudaBackend : public Backend {
public:
  /// Loads the driver and opens device 0; RuntimeFault (one line) without one.
  explicit CudaBackend(const BackendOptions &opts);
  ~CudaBackend() override;
  const char *name() const override { return "cuda"; }
  NativeKernel compile(const Kernel &k, bool small) override;
  CompileCounters compileCounters() const override { return counters_; }
  /// NVRTC on up to 16 host threads (CudaContext::kernel is thread-safe).
  void precompile(const std::vector<KernelToCompile> &kernels) override;
  void run(int ranks, const std::function<void(Device &)> &body) override;

  CudaContext &context() { return *ctx_; }
  /// The shared state of the group `members` (made by its first member).
  CudaCopyGroup &copyGroup(const std::vector<int> &members);

private:
  std::unique_ptr<CudaLibraries> libs_;
  std::unique_ptr<CudaContext> ctx_;
  CompileCounters counters_;
  std::mutex mu_; ///< guards groups_ (rank threads ask concurrently)
  std::map<std::vector<int>, std::unique_ptr<CudaCopyGroup>> groups_;
  double faultTimeout_; ///< seconds a rank waits in a collective (BackendOptions)
};

} // namespace dt
