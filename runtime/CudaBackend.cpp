// This file implements the cuda backend (see CudaBackend.h).
#include "runtime/CudaBackend.h"

#include "runtime/Blas.h"
#include "runtime/CudaComm.h"
#include "runtime/CudaDataKernels.h"
#include "runtime/CudaDeterministicGemm.h"
#include "runtime/CudaRuntime.h"
#include "runtime/KernelRuntime.h"
#include "runtime/RefKernels.h"
#include "runtime/ThreadComm.h"
#include "support/Errors.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace dt {

namespace {

class CudaDevice final : public Device {
public:
  CudaDevice(CudaBackend &b, int rank, int worldSize, ThreadWorld &threads)
      : Device(rank), b_(b), ctx_(current(b.context())), stream_(ctx_.streamForRank(rank)),
        hostWorld_(threads.world(rank)) {
    std::vector<int> all;
    for (int r = 0; r < worldSize; ++r)
      all.push_back(r);
    world_ = &group(all);
  }

  std::shared_ptr<Buffer> allocate(int64_t bytes) override {
    auto b = allocateUninit(bytes);
    ctx_.zero(b->data(), std::max<int64_t>(bytes, 1), stream_);
    return b;
  }
  /// A kernel's or gemm's output, written in full: no zero-fill launch.
  std::shared_ptr<Buffer> allocateUninit(int64_t bytes) override {
    void *p = ctx_.alloc(std::max<int64_t>(bytes, 1), stream_);
    CudaContext *ctx = &ctx_;
    return std::make_shared<Buffer>(p, (size_t)bytes, Where::Device,
                                    [ctx](void *q) { ctx->free(q); });
  }
  HostTensor fromHost(const HostTensor &h) override {
    if (h.buf && h.buf->where() == Where::Device)
      return h;
    HostTensor t = empty(h.dtype, h.shape);
    if (t.bytes())
      ctx_.copyToDevice(t.raw(), h.raw(), t.bytes(), stream_);
    ctx_.synchronize(stream_); // `h` may die when this returns
    return t;
  }
  HostTensor toHost(const HostTensor &t) override {
    if (!t.buf || t.buf->where() == Where::Host)
      return t;
    HostTensor h(t.dtype, t.shape);
    if (h.bytes())
      ctx_.copyToHost(h.raw(), t.raw(), h.bytes(), stream_);
    ctx_.synchronize(stream_);
    return h;
  }
  void launch(const NativeKernel &k, void *const *bufs, const int64_t *params) override {
    ctx_.launch(*static_cast<const CudaKernel *>(k.handle), bufs, params, stream_);
  }
  void launchScatter(const NativeKernel &k, void *const *bufs, const int64_t *params,
                     const HostTensor &ids, int64_t rows) override {
    const CudaKernel &ck = *static_cast<const CudaKernel *>(k.handle);
    withScatterPlan(ids, scatterStore(ck.kernel)->dim, rows, [&](const CudaScatterPlan &p) {
      cudaLaunchScatter(ctx_, ck, bufs, params, p, rows, stream_);
    });
  }

  std::optional<HostTensor> matmul(const HostTensor &a, const HostTensor &b, DType out, bool transA,
                                   bool transB) override {
    GemmDesc g;
    HostTensor c;
    if (!describeGemm(a, b, out, transA, transB, g, c))
      return std::nullopt;
    if (c.numel() > 0 && g.k > 0)
      ctx_.gemm(g, stream_);
    return c;
  }

  /// Deterministic mode's product on the device (CudaDeterministicGemm.h):
  /// the CPU's bits, f32 and f64.
  std::optional<HostTensor> matmulDeterministic(const HostTensor &a, const HostTensor &b, DType out,
                                                bool transA, bool transB) override {
    if (a.dtype != DType::F32 && a.dtype != DType::F64)
      return std::nullopt;
    GemmDesc g;
    HostTensor c;
    if (!describeGemm(a, b, out, transA, transB, g, c))
      return std::nullopt;
    if (c.numel() > 0 && g.k > 0)
      cudaDeterministicGemm(ctx_, g, stream_);
    return c;
  }

  void copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                  const std::vector<int64_t> &srcStart, void *dst,
                  const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstStart,
                  const std::vector<int64_t> &extent, int64_t esize) override {
    int64_t n = 1;
    for (auto e : extent)
      n *= e;
    if (n == 0)
      return;
    size_t r = extent.size();
    auto ss = rowMajorStrides(srcShape), ds = rowMajorStrides(dstShape);
    int64_t so = 0, doff = 0;
    for (size_t k = 0; k < r; ++k) {
      so += srcStart[k] * ss[k];
      doff += dstStart[k] * ds[k];
    }
    // One contiguous run (a whole block, or one row): a device memcpy.
    bool contiguous = true;
    for (size_t k = 1; k < r; ++k)
      contiguous &= extent[k] == srcShape[k] && extent[k] == dstShape[k];
    if (r == 0 || contiguous || n == extent[r - 1]) {
      ctx_.copyOnDevice(static_cast<char *>(dst) + doff * esize,
                        static_cast<const char *>(src) + so * esize, n * esize, stream_);
      return;
    }
    cudaStridedCopy(ctx_, src, dst, extent, ss, so, ds, doff, esize, stream_);
  }

  HostTensor transpose(const HostTensor &a, const std::vector<int64_t> &perm) override {
    std::vector<int64_t> shape(perm.size()), srcStrides(perm.size());
    auto as = rowMajorStrides(a.shape);
    for (size_t i = 0; i < perm.size(); ++i) {
      shape[i] = a.shape[perm[i]];
      srcStrides[i] = as[perm[i]];
    }
    if (perm.size() > 8) // beyond the device copy's rank: staged
      return fromHost(ref::transpose(toHost(a), perm));
    HostTensor t;
    t.dtype = a.dtype;
    t.shape = shape;
    t.buf = allocateUninit(t.bytes());
    cudaStridedCopy(ctx_, a.raw(), t.raw(), shape, srcStrides, 0, rowMajorStrides(shape), 0,
                    dtypeSize(a.dtype), stream_);
    return t;
  }
  HostTensor gather(const HostTensor &src, const HostTensor &ids, int64_t dim) override {
    HostTensor t;
    t.dtype = src.dtype;
    t.shape = src.shape;
    t.shape[dim] = ids.numel();
    t.buf = allocateUninit(t.bytes());
    checkedIds_.check(*this, ids, dim, src.shape.at(dim)); // once while the ids are held
    cudaGather(ctx_, src, ids, dim, t, stream_);
    return t;
  }
  HostTensor scatterAdd(const HostTensor &base, const HostTensor &ids, const HostTensor &src,
                        int64_t dim, bool reassociate) override {
    if (src.dtype != base.dtype) // the reference casts first: staged
      return fromHost(ref::indexAdd(toHost(base), toHost(ids), toHost(src), dim));
    HostTensor t;
    t.dtype = base.dtype;
    t.shape = base.shape;
    t.buf = allocateUninit(t.bytes());
    withScatterPlan(ids, dim, base.shape.at(dim), [&](const CudaScatterPlan &p) {
      cudaScatterAdd(ctx_, base, p, src, dim, t, reassociate, stream_);
    });
    return t;
  }
  /// Runs `use` with the lists of `ids` against `n` rows: the held plan
  /// (scatterPlan), or, for ids past kScatterPlanBytes, one made for this
  /// call and freed after it.
  template <class Use>
  void withScatterPlan(const HostTensor &ids, int64_t dim, int64_t n, Use &&use) {
    if (ids.bytes() <= kScatterPlanBytes) {
      use(scatterPlan(ids, dim, n));
      return;
    }
    CudaScatterPlan p = cudaScatterPlan(ctx_, toHost(ids), dim, n, stream_);
    use(p);
    ctx_.free(p.lists); // stream ordered: reused after the launches that read it
  }
  /// The device lists of `ids` against `n` rows, planned once while the ids
  /// cannot change (HeldTensor), so a loop-invariant index_add neither copies
  /// its ids to the host nor waits on each trip.
  const CudaScatterPlan &scatterPlan(const HostTensor &ids, int64_t dim, int64_t n) {
    for (const ScatterEntry &e : plans_)
      if (e.ids.holds(ids) && e.dim == dim && e.n == n)
        return e.plan;
    if (plans_.size() == kScatterPlans) {
      ctx_.free(plans_.front().plan.lists); // stream ordered: after the launches that read it
      plans_.erase(plans_.begin());
    }
    plans_.push_back(
        {HeldTensor(ids), dim, n, cudaScatterPlan(ctx_, toHost(ids), dim, n, stream_)});
    return plans_.back().plan;
  }
  ~CudaDevice() override {
    for (ScatterEntry &e : plans_)
      ctx_.free(e.plan.lists);
  }
  std::vector<HostTensor> fallbackLocalOp(const Inst &in,
                                          const std::vector<const HostTensor *> &args,
                                          const std::vector<TensorType> &resultTypes,
                                          LocalPlace place) override {
    // check_factor scans on the device; only a bad factor is staged, for the
    // reference's message naming it.
    if (in.op == Op::CheckFactor && args.size() == 1 && args[0] && isFloat(args[0]->dtype) &&
        !cudaBadFactor(ctx_, *args[0], in.attrs.str == "nonzero", stream_))
      return {*args[0]};
    // cumsum: a device kernel (the block holds the whole dim).
    if (in.op == Op::Cumsum && args.size() == 1 && args[0] && args[0]->dtype != DType::Bool &&
        in.attrs.ints.size() == 1) {
      HostTensor r;
      r.dtype = args[0]->dtype;
      r.shape = args[0]->shape;
      r.buf = allocateUninit(r.bytes());
      cudaCumsum(ctx_, *args[0], in.attrs.ints[0], in.attrs.flag, r, stream_);
      return {r};
    }
    // A fill (or a one-value const): one element uploaded, broadcast on the
    // device; a partial(sum) component other than the first is zeros
    // (applyPartialSource), so the value counts once in the sum.
    if ((in.op == Op::Fill || in.op == Op::Const) && resultTypes.size() == 1 &&
        isConcrete(resultTypes[0].shape) && constCount(in.attrs, resultTypes[0].dtype) == 1) {
      const TensorType &t = resultTypes[0];
      HostTensor one = ref::constantOf(in.attrs, t.dtype, {});
      HostTensor r;
      r.dtype = t.dtype;
      r.shape = blockOf(t, place.meshRank).shape;
      bool zero = true; // all bytes 0: the zero-filled allocation is the fill
      for (int64_t b = 0; b < dtypeSize(t.dtype); ++b)
        zero &= static_cast<const unsigned char *>(one.raw())[b] == 0;
      zero |= isZeroPartialComponent(t, place.meshRank);
      r.buf = zero ? allocate(r.bytes()) : allocateUninit(r.bytes());
      if (!zero)
        cudaFill(ctx_, one, r, stream_);
      return {r};
    }
    std::vector<HostTensor> host;
    for (auto *a : args)
      host.push_back(a ? toHost(*a) : HostTensor{});
    std::vector<const HostTensor *> ptrs;
    for (size_t i = 0; i < args.size(); ++i)
      ptrs.push_back(args[i] ? &host[i] : nullptr);
    place.referenceOnly = true; // no host BLAS on staged values
    std::vector<HostTensor> out;
    for (auto &t : runLocalOp(in, ptrs, resultTypes, place))
      out.push_back(fromHost(t));
    return out;
  }

  void synchronize() override { ctx_.synchronize(stream_); }
  Communicator &world() override { return *world_; }
  /// Host buffers go through the rank threads' shared-memory groups.
  Communicator &hostWorld() override { return hostWorld_; }
  Communicator &group(const std::vector<int> &members) override {
    auto it = comms_.find(members);
    if (it != comms_.end())
      return *it->second;
    int me = -1;
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == rank())
        me = (int)i;
    if (me < 0)
      throw InternalError("cuda backend: a group without the calling rank");
    auto c = std::make_unique<CudaCopyComm>(b_.copyGroup(members), me, stream_);
    return *comms_.emplace(members, std::move(c)).first->second;
  }

private:
  /// `a @ b` as one (batched) GEMM of cuBLAS's: f32/f64/bf16/f16, 1-D or
  /// 2-D operands, or equal batch dims on both; `c` allocated with the
  /// product's shape (zeros when k is 0). False when it is not one.
  bool describeGemm(const HostTensor &a, const HostTensor &b, DType out, bool transA, bool transB,
                    GemmDesc &g, HostTensor &c) {
    if (!isFloat(a.dtype) || a.dtype != b.dtype || a.dtype != out || a.rank() < 1 || b.rank() < 1)
      return false;
    // bf16/f16 multiply on tensor cores with f32 accumulation (GemmDesc).
    g.type = a.dtype == DType::F64    ? GemmType::F64
             : a.dtype == DType::BF16 ? GemmType::BF16
             : a.dtype == DType::F16  ? GemmType::F16
                                      : GemmType::F32;
    int ra = a.rank(), rb = b.rank();
    // Transpose flags go to cuBLAS (a flag on a 1-D operand means nothing):
    // a transposed operand is stored with its last two dims swapped.
    g.transA = transA && ra >= 2;
    g.transB = transB && rb >= 2;
    g.m = ra == 1 ? 1 : a.shape[ra - (g.transA ? 1 : 2)];
    g.k = a.shape[ra - (g.transA ? 2 : 1)];
    g.n = rb == 1 ? 1 : b.shape[rb - (g.transB ? 2 : 1)];
    int64_t kb = rb == 1 ? b.shape[0] : b.shape[rb - (g.transB ? 1 : 2)];
    if (kb != g.k)
      return false; // the fallback reports the mismatch
    std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - std::min(ra, 2)),
        batchB(b.shape.begin(), b.shape.end() - std::min(rb, 2));
    if (!batchA.empty() && !batchB.empty() && batchA != batchB)
      return false; // broadcast batches: staged fallback
    std::vector<int64_t> batch = batchA.empty() ? batchB : batchA;
    for (auto d : batch)
      g.batch *= d;
    // The GEMM writes every element; an empty k is zeros.
    c.dtype = out;
    c.shape = gemmShape(a.shape, b.shape, g.transA, g.transB);
    c.buf = g.k > 0 ? allocateUninit(c.bytes()) : allocate(c.bytes());
    g.strideA = batchA.empty() ? 0 : g.m * g.k;
    g.strideB = batchB.empty() ? 0 : g.k * g.n;
    g.strideC = g.m * g.n;
    g.a = a.raw();
    g.b = b.raw();
    g.c = c.raw();
    return true;
  }

  /// `ctx` made current on this rank's thread (before its stream is made).
  static CudaContext &current(CudaContext &ctx) {
    ctx.makeCurrent();
    return ctx;
  }
  CudaBackend &b_;
  CudaContext &ctx_;
  CudaStream stream_;
  Communicator &hostWorld_;
  Communicator *world_ = nullptr;
  std::map<std::vector<int>, std::unique_ptr<CudaCopyComm>> comms_;
  struct ScatterEntry {
    HeldTensor ids;
    int64_t dim, n;
    CudaScatterPlan plan;
  };
  static constexpr size_t kScatterPlans = 8;
  static constexpr int64_t kScatterPlanBytes = 4 << 20; ///< larger ids are planned each call
  std::vector<ScatterEntry> plans_;                     ///< most recent last
  CheckedIds checkedIds_;                               ///< an unfused gather's
};

} // namespace

CudaBackend::CudaBackend(const BackendOptions &opts) : faultTimeout_(opts.faultTimeout) {
  libs_ = std::make_unique<CudaLibraries>();
  ctx_ = std::make_unique<CudaContext>(*libs_); // throws the one-line message without a driver
}

CudaBackend::~CudaBackend() = default;

NativeKernel CudaBackend::compile(const Kernel &k, bool small) {
  auto t0 = std::chrono::steady_clock::now();
  const CudaKernel &ck = ctx_->kernel(k, small);
  counters_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++counters_.compiles;
  return NativeKernel{&ck};
}

void CudaBackend::precompile(const std::vector<KernelToCompile> &kernels) {
  const size_t threads =
      std::min<size_t>({kernels.size(), std::max(1u, std::thread::hardware_concurrency()), 16});
  if (threads < 2)
    return; // compile() does it
  auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::mutex errMu;
  std::exception_ptr err;
  std::vector<std::thread> pool;
  auto work = [&] {
    try {
      ctx_->makeCurrent(); // module loads need the context on this thread
      for (size_t i; (i = next++) < kernels.size();)
        ctx_->kernel(*kernels[i].kernel, kernels[i].small);
    } catch (...) {
      std::lock_guard<std::mutex> lock(errMu);
      if (!err)
        err = std::current_exception();
      next = kernels.size();
    }
  };
  try {
    for (size_t t = 0; t < threads; ++t)
      pool.emplace_back(work);
  } catch (const std::system_error &) {
    // No more threads to be had (a process limit): fewer compile in parallel.
  }
  if (pool.empty())
    work();
  for (auto &t : pool)
    t.join();
  counters_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (err)
    std::rethrow_exception(err);
}

CudaCopyGroup &CudaBackend::copyGroup(const std::vector<int> &members) {
  std::lock_guard<std::mutex> lock(mu_);
  auto &g = groups_[members];
  if (!g)
    g = std::make_unique<CudaCopyGroup>(*ctx_, members, faultTimeout_);
  return *g;
}

void CudaBackend::run(int ranks, const std::function<void(Device &)> &body) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &[m, g] : groups_)
      g->reset(); // nothing of a failed run stays
  }
  // ThreadWorld runs the rank threads; its shared-memory groups carry the
  // host-buffer collectives (Device::hostWorld).
  // A rank that fails aborts every copy group, so no rank waits for it, and
  // the run reports the first failure (not the aborts it caused).
  std::mutex fm;
  int failedRank = -1;
  std::string failure;
  std::optional<RuntimeFault> failureFault; // the first failure, when a RuntimeFault (its line)
  ThreadWorld threads(ranks);
  try {
    threads.run([&](int rank) {
      try {
        CudaDevice dev(*this, rank, ranks, threads);
        body(dev);
        ctx_->synchronize(ctx_->streamForRank(rank));
      } catch (const CudaGroupAborted &) {
        throw;
      } catch (const std::exception &e) {
        {
          std::lock_guard<std::mutex> lock(fm);
          if (failedRank < 0) {
            failedRank = rank;
            failure = e.what();
            if (auto *f = dynamic_cast<const RuntimeFault *>(&e))
              failureFault = *f;
          }
        }
        std::lock_guard<std::mutex> lock(mu_);
        for (auto &[m, g] : groups_)
          g->abort();
        throw;
      }
    });
  } catch (const RuntimeFault &) {
    if (failedRank >= 0 && ranks > 1) {
      std::string prefix = "rank " + std::to_string(failedRank) + " failed: ";
      if (failureFault)
        throw RuntimeFault(prefix, *failureFault);
      throw RuntimeFault(prefix + failure);
    }
    throw;
  }
}

} // namespace dt
