// This file implements the cpu backend (see CpuBackend.h).
#include "runtime/CpuBackend.h"

#include "codegen/CpuJIT.h"
#include "runtime/Blas.h"
#include "runtime/RefKernels.h"
#include "runtime/ThreadComm.h"

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <system_error>
#include <thread>

namespace dt {

/// Worker threads that run parts of one kernel launch with the calling rank
/// thread (part 0). One launch at a time; the caller waits for every part.
class KernelPool {
public:
  explicit KernelPool(int parts) : parts_(parts) {
    try {
      for (int i = 1; i < parts; ++i)
        threads_.emplace_back([this, i] { work(i); });
    } catch (const std::system_error &) {
      // No more threads to be had (a process limit): the launch splits into
      // as many parts as there are threads.
      parts_ = (int)threads_.size() + 1;
    }
  }
  ~KernelPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto &t : threads_)
      t.join();
  }
  int parts() const { return parts_; }
  void run(const std::function<void(int)> &part) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &part;
      pending_ = parts_ - 1;
      ++generation_;
    }
    wake_.notify_all();
    part(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

private:
  void work(int i) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)> *job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        job = job_;
      }
      (*job)(i);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0)
        done_.notify_one();
    }
  }
  int parts_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *job_ = nullptr;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

CpuDevice::CpuDevice(int rank) : Device(rank), cache_(BufferCache::make()) {}
CpuDevice::~CpuDevice() = default;

std::shared_ptr<Buffer> CpuDevice::allocate(int64_t bytes) {
  return cache_->get((size_t)bytes, /*zero=*/true);
}

std::shared_ptr<Buffer> CpuDevice::allocateUninit(int64_t bytes) {
  return cache_->get((size_t)bytes, /*zero=*/false);
}

HostTensor CpuDevice::uninit(DType dt, const std::vector<int64_t> &shape) {
  HostTensor t;
  t.dtype = dt;
  t.shape = shape;
  t.buf = cache_->get((size_t)t.bytes(), false); // host memory, even in a subclass
  return t;
}

/// Iteration points from which a launch is split across the rank's threads
/// (below, a thread hand-off costs more than it saves).
constexpr int64_t kSplitPoints = 1 << 17;

void CpuDevice::launch(const NativeKernel &k, void *const *bufs, const int64_t *params) {
  const CpuKernel &ck = *static_cast<const CpuKernel *>(k.handle);
  void **b = const_cast<void **>(bufs);
  int R = ck.rank;
  const int d = ck.splitDim;
  int nb = ck.inputs + ck.outputs;
  int64_t np = (int64_t)R * (1 + nb) + (ck.global ? 2 * R : 0);
  // The params, then the lifted values (copied on the stack for a usual
  // kernel; a kernel without any reads the params as they are).
  int64_t small[64];
  std::vector<int64_t> large;
  const int64_t total = np + (int64_t)ck.lifted.size();
  const int64_t *all = params;
  if (!ck.lifted.empty()) {
    int64_t *p = total <= 64 ? small : (large.resize(total), large.data());
    std::copy(params, params + np, p);
    std::copy(ck.lifted.begin(), ck.lifted.end(), p + np);
    all = p;
  }
  if (blasThreads_ <= 1 || R == 0 || d < 0) {
    ck.fn(b, all);
    return;
  }
  int64_t points = 1;
  for (int i = 0; i < R; ++i)
    points *= params[i];
  const int64_t extent = params[d];
  if (points < kSplitPoints || extent < 2) {
    ck.fn(b, all);
    return;
  }
  KernelPool &pool = threads();
  // Each part runs the slice [lo, hi) of dim d: its own params (shape[d], and
  // the global offset of dim d for random/iota) and buffers moved to the
  // slice (but for an input gathered along d: the ids pick its index there).
  int parts = (int)std::min<int64_t>(pool.parts(), extent);
  pool.run([&](int part) {
    if (part >= parts)
      return;
    int64_t lo = extent * part / parts, hi = extent * (part + 1) / parts;
    std::vector<int64_t> p(all, all + total);
    p[d] = hi - lo;
    if (ck.global)
      p[(int64_t)R * (1 + nb) + d] += lo;
    std::vector<void *> pb(nb);
    for (int i = 0; i < nb; ++i)
      pb[i] =
          !b[i] ? nullptr
          : i < ck.inputs && ck.gatheredSplit[i]
              ? b[i]
              : static_cast<char *>(b[i]) + lo * params[R + (int64_t)i * R + d] * ck.elemBytes[i];
    ck.fn(pb.data(), p.data());
  });
}

namespace {
/// The dtypes Blas.h's gemm multiplies itself (OpenBLAS for floats, IntGemm.h
/// for integers, exact and so deterministic); bf16/f16 round into a new
/// buffer, bool becomes i64: those keep the reference kernel.
bool gemmDtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::I32 || t == DType::I64;
}
} // namespace

std::optional<HostTensor> CpuDevice::matmul(const HostTensor &a, const HostTensor &b, DType out,
                                            bool transA, bool transB) {
  if (!(isFloat(a.dtype) || gemmDtype(a.dtype)) || a.dtype != b.dtype || a.dtype != out ||
      a.rank() < 1 || b.rank() < 1)
    return std::nullopt;
  // gemm writes every element (BLAS: beta = 0): the result needs no zero-fill.
  HostTensor c = uninit(out, gemmShape(a.shape, b.shape, transA, transB));
  gemm(a, b, c, transA, transB, blasThreads_);
  return c;
}

bool CpuDevice::matmulInto(const HostTensor &a, const HostTensor &b, HostTensor &c, bool transA,
                           bool transB) {
  if (!(isFloat(a.dtype) || gemmDtype(a.dtype)) || a.dtype != b.dtype || a.dtype != c.dtype ||
      a.rank() < 1 || b.rank() < 1)
    return false;
  gemm(a, b, c, transA, transB, blasThreads_); // c has the result's shape: gemm writes into it
  return true;
}

std::optional<HostTensor> CpuDevice::matmulDeterministic(const HostTensor &a, const HostTensor &b,
                                                         DType out, bool transA, bool transB) {
  if (!(isFloat(a.dtype) || gemmDtype(a.dtype)) || a.dtype != b.dtype || a.dtype != out ||
      a.rank() < 1 || b.rank() < 1)
    return std::nullopt;
  HostTensor c;
  gemm(a, b, c, transA, transB, blasThreads_, true);
  return c;
}

bool CpuDevice::matmulDeterministicInto(const HostTensor &a, const HostTensor &b, HostTensor &c,
                                        bool transA, bool transB) {
  if (!gemmDtype(a.dtype) || a.dtype != b.dtype || a.dtype != c.dtype || a.rank() < 1 ||
      b.rank() < 1)
    return false;
  gemm(a, b, c, transA, transB, blasThreads_, true);
  return true;
}

void CpuDevice::copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                           const std::vector<int64_t> &srcStart, void *dst,
                           const std::vector<int64_t> &dstShape,
                           const std::vector<int64_t> &dstStart, const std::vector<int64_t> &extent,
                           int64_t esize) {
  dt::copyRegion(src, srcShape, srcStart, dst, dstShape, dstStart, extent, esize);
}

HostTensor CpuDevice::gather(const HostTensor &src, const HostTensor &ids, int64_t dim) {
  HostTensor out = uninit(src.dtype, ref::indexSelectShape(src, ids, dim));
  ref::indexSelectInto(src, ids, dim, out);
  return out;
}

KernelPool &CpuDevice::threads() {
  if (!pool_ || pool_->parts() != blasThreads_)
    pool_ = std::make_unique<KernelPool>(blasThreads_);
  return *pool_;
}

ref::SplitRun CpuDevice::splitter(int64_t points) {
  if (blasThreads_ < 2 || points < kSplitPoints)
    return {};
  return [this](int64_t n, const std::function<void(int64_t, int64_t)> &body) {
    KernelPool &pool = threads();
    const int parts = (int)std::min<int64_t>(pool.parts(), n);
    pool.run([&](int part) {
      if (part < parts)
        body(n * part / parts, n * (part + 1) / parts);
    });
  };
}

HostTensor CpuDevice::scatterAdd(const HostTensor &base, const HostTensor &ids,
                                 const HostTensor &src, int64_t dim, bool) {
  HostTensor out = uninit(base.dtype, base.shape);
  ref::indexAddInto(base, ids, src, dim, out, splitter(src.numel()));
  return out;
}

void CpuDevice::scatterAddInPlace(HostTensor &base, const HostTensor &ids, const HostTensor &src,
                                  int64_t dim, bool) {
  // The rows before `dim` split among the rank's threads.
  ref::indexAddInto(base, ids, src, dim, base, splitter(src.numel()));
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
      ownQuick_ = std::make_unique<CpuJIT>(CpuJIT::Options{0, {}});
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
  CpuKernel ck;
  // Kernels that differ only in constants and seeds share one function.
  ck.fn = jit(small).compile(liftConstants(k, ck.lifted));
  ck.rank = k.rank;
  ck.inputs = (int)k.inputs.size();
  ck.outputs = (int)k.outputs.size();
  // Parts must write disjoint outputs: never split a scatter's dim (two
  // parts could add into one row).
  const KStore *scatter = scatterStore(k);
  for (int d = 0; d < k.rank && ck.splitDim < 0; ++d)
    if (!isReducedDim(k, d) && !(scatter && scatter->dim == d))
      ck.splitDim = d;
  ck.global = usesGlobalIndex(k);
  for (DType t : k.inputs)
    ck.elemBytes.push_back(dtypeSize(t));
  ck.gatheredSplit = gatheredInputs(k, std::max(ck.splitDim, 0));
  for (DType t : k.outputs)
    ck.elemBytes.push_back(dtypeSize(t));
  std::lock_guard<std::mutex> lock(mu_);
  kernels_.push_back(std::move(ck));
  return NativeKernel{&kernels_.back()};
}

void CpuKernelCompiler::precompile(const std::vector<Backend::KernelToCompile> &kernels,
                                   int threads) {
  std::vector<const Kernel *> quick, optimized;
  std::vector<Kernel> lifted; // compile() compiles this form
  lifted.reserve(kernels.size());
  for (const Backend::KernelToCompile &k : kernels) {
    std::vector<int64_t> values;
    lifted.push_back(liftConstants(*k.kernel, values));
    (k.small ? quick : optimized).push_back(&lifted.back());
  }
  threads = std::min(threads, 16);
  if (!optimized.empty())
    jit(false).precompile(optimized, threads);
  if (!quick.empty())
    jit(true).precompile(quick, threads);
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
    c.diskHits += j->diskHits();
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

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return (int)std::max(1u, std::thread::hardware_concurrency());
}

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
