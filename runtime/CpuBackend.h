// This file implements the cpu backend (runtime/Backend.h): host memory,
// kernels compiled by the LLVM ORC JIT (codegen/CpuJIT.h, two tiers: O0 for
// small kernels, O2 otherwise), matmul through OpenBLAS (runtime/Blas.h),
// data movement and the CPU-only fallback on the reference kernels
// (runtime/LocalOps.h, runtime/RefKernels.h).
//
// CpuDevice is everything but the communicator, so it serves two backends:
//  * CpuBackend: every rank a thread of this process over a virtual mesh,
//    collectives through shared memory (runtime/ThreadComm.h). The embedded
//    default: `dtensorc run` on a mesh of 6 devices starts 6 threads.
//  * MpiBackend (runtime/MpiBackend.h): one rank per process under mpirun.
//
// State: the JITs (the Session's, or the backend's own) and one ThreadWorld
// per run; no globals.
#pragma once

#include "runtime/Backend.h"
#include "runtime/BufferCache.h"
#include "runtime/RefKernels.h"

#include <deque>
#include <memory>
#include <mutex>

namespace dt {

class ThreadWorld;
class KernelPool;

/// What a cpu NativeKernel's handle points to: the JIT's function and what a
/// launch needs to split the iteration space across threads along its
/// outermost kept dim (dim 0, or for a sum over rows the columns).
struct CpuKernel {
  void (*fn)(void **, const int64_t *) = nullptr;
  int rank = 0, inputs = 0, outputs = 0;
  int splitDim = -1;              ///< the outermost dim not reduced (chunks write disjoint outputs)
  bool global = false;            ///< reads the global offsets (random, iota)
  std::vector<int64_t> elemBytes; ///< per buffer (inputs, then outputs)
  /// Per input: gathered along splitDim (its index there comes from the ids,
  /// not from the point), so a chunk reads it from its own base.
  std::vector<bool> gatheredSplit;
  /// The kernel's lifted constants and seeds (codegen/KernelIR.h: `fn` is
  /// compiled from liftConstants' form and reads them after the params).
  std::vector<int64_t> lifted;
};

/// A rank whose buffers are host memory; subclasses supply the communicators.
class CpuDevice : public Device {
public:
  explicit CpuDevice(int rank);

  /// OpenBLAS threads for this rank's gemms: cores / ranks in the process
  /// (at least 1), set by the backend that hosts the rank (runtime/Blas.h).
  void setBlasThreads(int n) { blasThreads_ = n < 1 ? 1 : n; }
  int blasThreads() const { return blasThreads_; }
  ~CpuDevice() override;

  std::shared_ptr<Buffer> allocate(int64_t bytes) override;
  std::shared_ptr<Buffer> allocateUninit(int64_t bytes) override;
  HostTensor fromHost(const HostTensor &h) override { return h; }
  HostTensor toHost(const HostTensor &t) override { return t; }
  void launch(const NativeKernel &k, void *const *bufs, const int64_t *params) override;
  std::optional<HostTensor> matmulDeterministic(const HostTensor &a, const HostTensor &b, DType out,
                                                bool transA, bool transB) override;
  bool matmulDeterministicInto(const HostTensor &a, const HostTensor &b, HostTensor &c, bool transA,
                               bool transB) override;
  bool matmulInto(const HostTensor &a, const HostTensor &b, HostTensor &c, bool transA,
                  bool transB) override;
  std::optional<HostTensor> matmul(const HostTensor &a, const HostTensor &b, DType out, bool transA,
                                   bool transB) override;
  void copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                  const std::vector<int64_t> &srcStart, void *dst,
                  const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstStart,
                  const std::vector<int64_t> &extent, int64_t esize) override;
  HostTensor transpose(const HostTensor &a, const std::vector<int64_t> &perm) override;
  HostTensor gather(const HostTensor &src, const HostTensor &ids, int64_t dim) override;
  void scatterAddInPlace(HostTensor &base, const HostTensor &ids, const HostTensor &src,
                         int64_t dim, bool reassociate) override;
  HostTensor scatterAdd(const HostTensor &base, const HostTensor &ids, const HostTensor &src,
                        int64_t dim, bool reassociate) override;
  /// Splits `points` of work among the rank's threads (runtime/RefKernels.h's
  /// SplitRun), or nothing for a small one or one thread.
  ref::SplitRun splitter(int64_t points);
  /// The CPU-only fallback: the reference kernels (runtime/LocalOps.h).
  std::vector<HostTensor> fallbackLocalOp(const Inst &in,
                                          const std::vector<const HostTensor *> &args,
                                          const std::vector<TensorType> &resultTypes,
                                          LocalPlace place) override;

  /// Freed buffers kept for reuse (runtime/BufferCache.h).
  const BufferCache &bufferCache() const { return *cache_; }

private:
  /// A tensor of `dt` and `shape` from the buffer cache, contents unset.
  HostTensor uninit(DType dt, const std::vector<int64_t> &shape);

  std::shared_ptr<BufferCache> cache_;
  int blasThreads_ = 1;
  /// Threads that share a large kernel's iteration space with this rank's
  /// own (blasThreads_ - 1 of them), made on the first such launch.
  std::unique_ptr<KernelPool> pool_;
  /// The rank's thread pool, of blasThreads_ parts (made, or remade, here).
  KernelPool &threads();
};

/// Compiles kernel IR for the CPU: through `quick` (O0) when small, else
/// `optimizing` (O2); either may be null, then the compiler makes its own.
class CpuKernelCompiler {
public:
  CpuKernelCompiler(CpuJIT *optimizing, CpuJIT *quick);
  ~CpuKernelCompiler();
  NativeKernel compile(const Kernel &k, bool small);
  /// Compiles `kernels` on up to `threads` threads (CpuJIT::precompile), so
  /// that their compile() calls hit the cache.
  void precompile(const std::vector<Backend::KernelToCompile> &kernels, int threads);
  CompileCounters counters() const;

private:
  CpuJIT &jit(bool small);
  CpuJIT *optimizing_, *quick_;
  std::unique_ptr<CpuJIT> ownOptimizing_, ownQuick_;
  std::mutex mu_;
  std::deque<CpuKernel> kernels_; ///< the handles' targets (stable addresses)
};

/// CPUs this process may run on: its affinity mask (a container or taskset
/// may allow fewer than the machine has), else hardware_concurrency.
int usableCores();

/// Ranks as threads of this process.
class CpuBackend : public Backend {
public:
  explicit CpuBackend(CpuJIT *optimizing = nullptr, CpuJIT *quick = nullptr);
  ~CpuBackend() override;
  const char *name() const override { return "cpu"; }
  NativeKernel compile(const Kernel &k, bool small) override { return jit_.compile(k, small); }
  CompileCounters compileCounters() const override { return jit_.counters(); }
  bool compilesSliceKernels() const override { return true; }
  bool multipliesIntegers() const override { return true; }
  void precompile(const std::vector<KernelToCompile> &kernels) override {
    jit_.precompile(kernels, cores_);
  }
  void run(int ranks, const std::function<void(Device &)> &body) override;

private:
  CpuKernelCompiler jit_;
  int cores_; ///< CPUs this process may run on (its affinity mask), read once
  /// The rank threads, kept between runs of the same number of ranks (a host program calling a
  /// mesh function pays no thread start per call).
  std::unique_ptr<ThreadWorld> world_;
};

} // namespace dt
