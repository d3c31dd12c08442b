// This file implements the cpu backend (see CpuBackend.h).
#include "runtime/CpuBackend.h"

#include "codegen/CpuJIT.h"
#include "runtime/Blas.h"
#include "runtime/RefKernels.h"
#include "runtime/ThreadComm.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace dt {

std::shared_ptr<Buffer> CpuDevice::allocate(int64_t bytes) {
  return std::make_shared<Buffer>((size_t)bytes);
}

std::shared_ptr<Buffer> CpuDevice::allocateUninit(int64_t bytes) {
  return std::make_shared<Buffer>((size_t)bytes, /*zeroFill=*/false);
}

void CpuDevice::launch(const NativeKernel &k, void *const *bufs, const int64_t *params) {
  auto fn = reinterpret_cast<CpuJIT::KernelFn>(const_cast<void *>(k.handle));
  fn(const_cast<void **>(bufs), params);
}

std::optional<HostTensor> CpuDevice::matmul(const HostTensor &a, const HostTensor &b, DType out,
                                            bool transA, bool transB) {
  // OpenBLAS multiplies f32 and f64; other dtypes keep the reference kernel.
  if (!isFloat(a.dtype) || a.dtype != b.dtype || a.dtype != out || a.rank() < 1 || b.rank() < 1)
    return std::nullopt;
  HostTensor c;
  gemm(a, b, c, transA, transB, blasThreads_);
  return c;
}

void CpuDevice::copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                           const std::vector<int64_t> &srcStart, void *dst,
                           const std::vector<int64_t> &dstShape,
                           const std::vector<int64_t> &dstStart, const std::vector<int64_t> &extent,
                           int64_t esize) {
  dt::copyRegion(src, srcShape, srcStart, dst, dstShape, dstStart, extent, esize);
}

HostTensor CpuDevice::transpose(const HostTensor &a, const std::vector<int64_t> &perm) {
  return ref::transpose(a, perm);
}

HostTensor CpuDevice::gather(const HostTensor &src, const HostTensor &ids, int64_t dim) {
  return ref::indexSelect(src, ids, dim);
}

HostTensor CpuDevice::scatterAdd(const HostTensor &base, const HostTensor &ids,
                                 const HostTensor &src, int64_t dim) {
  return ref::indexAdd(base, ids, src, dim);
}

std::vector<HostTensor> CpuDevice::fallbackLocalOp(const Inst &in,
                                                   const std::vector<const HostTensor *> &args,
                                                   const std::vector<TensorType> &resultTypes,
                                                   LocalPlace place) {
  return runLocalOp(in, args, resultTypes, place);
}

CpuKernelCompiler::CpuKernelCompiler(CpuJIT *optimizing, CpuJIT *quick)
    : optimizing_(optimizing), quick_(quick) {}

CpuKernelCompiler::~CpuKernelCompiler() = default;

CpuJIT &CpuKernelCompiler::jit(bool small) {
  // Made on first use: a program without kernels never starts LLVM.
  if (small) {
    if (!quick_) {
      ownQuick_ = std::make_unique<CpuJIT>(CpuJIT::Options{0});
      quick_ = ownQuick_.get();
    }
    return *quick_;
  }
  if (!optimizing_) {
    ownOptimizing_ = std::make_unique<CpuJIT>();
    optimizing_ = ownOptimizing_.get();
  }
  return *optimizing_;
}

NativeKernel CpuKernelCompiler::compile(const Kernel &k, bool small) {
  CpuJIT::KernelFn fn = jit(small).compile(k);
  return NativeKernel{reinterpret_cast<const void *>(fn)};
}

CompileCounters CpuKernelCompiler::counters() const {
  CompileCounters c;
  const CpuJIT *seen = nullptr;
  for (const CpuJIT *j : {optimizing_, quick_}) {
    if (!j || j == seen)
      continue; // one compiler for both tiers counts once
    seen = j;
    c.compiles += j->compiles();
    c.cacheHits += j->cacheHits();
    c.seconds += j->compileSeconds();
  }
  return c;
}

namespace {

/// A rank of a ThreadWorld.
class ThreadDevice final : public CpuDevice {
public:
  ThreadDevice(ThreadWorld &w, int rank) : CpuDevice(rank), world_(w) {}
  Communicator &world() override { return world_.world(rank()); }
  Communicator &group(const std::vector<int> &members) override {
    return world_.group(rank(), members);
  }

private:
  ThreadWorld &world_;
};

} // namespace

namespace {

/// CPUs this process may run on: its affinity mask (a container or taskset
/// may allow fewer than the machine has), else hardware_concurrency.
int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return (int)std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

CpuBackend::CpuBackend(CpuJIT *optimizing, CpuJIT *quick)
    : jit_(optimizing, quick), cores_(usableCores()) {}

CpuBackend::~CpuBackend() = default;

void CpuBackend::run(int ranks, const std::function<void(Device &)> &body) {
  if (!world_ || world_->size() != ranks)
    world_ = std::make_unique<ThreadWorld>(ranks);
  ThreadWorld &world = *world_;
  try {
    world.run([&](int rank) {
      ThreadDevice dev(world, rank);
      dev.setBlasThreads(cores_ / ranks);
      body(dev);
    });
  } catch (...) {
    world_.reset(); // a failed run may leave a group mid-collective: start the next one afresh
    throw;
  }
}

} // namespace dt
