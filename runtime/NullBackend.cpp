// This file implements the null backend (see NullBackend.h).
#include "runtime/NullBackend.h"

#include "codegen/CudaEmitter.h"
#include "codegen/CudaLoader.h"
#include "codegen/Nvrtc.h"
#include "runtime/Blas.h"
#include "support/Errors.h"

#include <algorithm>
#include <map>

namespace dt {

namespace {

/// A group whose collectives move nothing.
class NullComm final : public Communicator {
public:
  NullComm(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allReduce(const void *, void *, int64_t, DType, ReduceOp) override {}
  void allGatherV(const void *, void *, const std::vector<int64_t> &, DType) override {}
  void reduceScatterV(const void *, void *, const std::vector<int64_t> &, DType,
                      ReduceOp) override {}
  void allToAllV(const void *, const std::vector<int64_t> &, void *, const std::vector<int64_t> &,
                 DType) override {}
  void broadcast(void *, int64_t, DType, int) override {}
  void barrier() override {}

private:
  int rank_, size_;
};

/// The device an H100 has (the plan's launch geometry).
constexpr int kPlanSMs = 132;

class NullDevice final : public Device {
public:
  NullDevice(NullBackend &b, int rank, int worldSize)
      : Device(rank), b_(b), world_(rank, worldSize) {}
  bool computes() const override { return false; }

  std::shared_ptr<Buffer> allocate(int64_t bytes) override {
    return std::make_shared<Buffer>((size_t)bytes);
  }
  HostTensor fromHost(const HostTensor &h) override { return h; }
  HostTensor toHost(const HostTensor &t) override { return t; }
  void launch(const NativeKernel &k, void *const *, const int64_t *params) override {
    if (b_.planning() && k.handle)
      b_.planLaunch(*static_cast<const Kernel *>(k.handle), params);
  }
  void launchScatter(const NativeKernel &k, void *const *, const int64_t *params,
                     const HostTensor &, int64_t rows) override {
    if (b_.planning() && k.handle)
      b_.planScatter(*static_cast<const Kernel *>(k.handle), params, rows);
  }
  std::optional<HostTensor> matmul(const HostTensor &a, const HostTensor &b, DType out, bool transA,
                                   bool transB) override {
    if (a.rank() < 1 || b.rank() < 1)
      return std::nullopt;
    if (b_.planning()) {
      if (!isFloat(a.dtype) || a.dtype != b.dtype || a.dtype != out)
        return std::nullopt; // the cuda backend's cuBLAS path takes float only
      b_.planGemm();
    }
    return empty(out, gemmShape(a.shape, b.shape, transA && a.rank() > 1, transB && b.rank() > 1));
  }
  void copyRegion(const void *, const std::vector<int64_t> &, const std::vector<int64_t> &, void *,
                  const std::vector<int64_t> &, const std::vector<int64_t> &,
                  const std::vector<int64_t> &, int64_t) override {}
  HostTensor transpose(const HostTensor &a, const std::vector<int64_t> &perm) override {
    if (perm.size() != a.shape.size())
      throw InternalError("null backend: bad `transpose` permutation");
    std::vector<int64_t> shape;
    for (auto p : perm)
      shape.push_back(a.shape.at(p));
    return empty(a.dtype, shape);
  }
  HostTensor gather(const HostTensor &src, const HostTensor &ids, int64_t dim) override {
    std::vector<int64_t> shape = src.shape;
    shape.at(dim) = ids.numel();
    return empty(src.dtype, shape);
  }
  HostTensor scatterAdd(const HostTensor &base, const HostTensor &, const HostTensor &, int64_t,
                        bool) override {
    return empty(base.dtype, base.shape);
  }
  std::vector<HostTensor> fallbackLocalOp(const Inst &in, const std::vector<const HostTensor *> &,
                                          const std::vector<TensorType> &resultTypes,
                                          LocalPlace place) override {
    std::vector<HostTensor> r;
    for (const TensorType &t : resultTypes) {
      if (!isConcrete(t.shape))
        throw InternalError(std::string("null backend: `") + opName(in.op) +
                            "` has a symbolic shape");
      bool whole = t.isHost() || place.meshRank < 0;
      r.push_back(
          empty(t.dtype, whole ? concreteDims(t.shape) : localBlock(t, place.meshRank).shape));
    }
    return r;
  }
  Communicator &world() override { return world_; }
  Communicator &group(const std::vector<int> &members) override {
    auto it = groups_.find(members);
    if (it == groups_.end()) {
      int me = -1;
      for (size_t i = 0; i < members.size(); ++i)
        if (members[i] == rank())
          me = (int)i;
      if (me < 0)
        throw InternalError("null backend: a group without the calling rank");
      it = groups_.emplace(members, NullComm(me, (int)members.size())).first;
    }
    return it->second;
  }

private:
  NullBackend &b_;
  NullComm world_;
  std::map<std::vector<int>, NullComm> groups_;
};

} // namespace

NullBackend::NullBackend(Plan plan) : plan_(plan) {
  if (plan_ == Plan::Cuda) {
    libs_ = std::make_unique<CudaLibraries>();
    std::string why;
    if (!libs_->available(CudaLib::Nvrtc, &why))
      throw RuntimeFault("--backend cuda --dry-run: " + why);
    nvrtc_ = std::make_unique<NvrtcCompiler>(*libs_, defaultCudaCacheDir());
  }
}

NullBackend::~NullBackend() = default;

NativeKernel NullBackend::compile(const Kernel &k, bool small) {
  if (plan_ != Plan::Cuda) {
    ++counters_.compiles;
    return NativeKernel{};
  }
  // As CudaContext::kernel: once per kernel text, NVRTC through its cache.
  std::string text = cudaKernelKey(k, small);
  if (auto it = compiled_.find(text); it != compiled_.end()) {
    ++counters_.cacheHits;
    return NativeKernel{it->second};
  }
  const std::string sym = cudaKernelSymbol(k);
  NvrtcRequest req;
  req.source = emitCudaKernel(k, sym).source;
  req.name = sym + ".cu";
  req.arch = "sm_90";
  NvrtcResult r = nvrtc_->compileTier(req, small);
  if (!r.ok)
    throw InternalError("NVRTC rejected the emitted kernel " + sym + ":\n" + r.log);
  ++(r.fromCache ? counters_.diskHits : counters_.compiles);
  kernels_.push_back(k);
  compiled_[text] = &kernels_.back();
  return NativeKernel{&kernels_.back()};
}

void NullBackend::planLaunch(const Kernel &k, const int64_t *params) {
  CudaLaunchDims d = cudaLaunchDims(k, params, kPlanSMs);
  int64_t split = cudaReduceSplit(k, params, kPlanSMs);
  if (d.grid == 0)
    return;
  ++plan_stats_.launches;
  int64_t grid = d.grid;
  if (split > 1) {
    ++plan_stats_.splitLaunches;
    grid = cudaSplitBlocks(k, params, split);
  }
  if (grid > 0x7fffffff)
    throw RuntimeFault("--dry-run: kernel " + k.name + " would launch " + std::to_string(grid) +
                       " blocks, more than CUDA's grid limit");
  plan_stats_.maxGrid = std::max(plan_stats_.maxGrid, grid);
}

void NullBackend::planScatter(const Kernel &k, const int64_t *params, int64_t rows) {
  // One chunk: the plan knows no ids (the null device's are zeros).
  const int64_t grid = cudaScatterBlocks(k, params, rows, 1, kPlanSMs);
  if (grid == 0)
    return;
  ++plan_stats_.launches;
  plan_stats_.maxGrid = std::max(plan_stats_.maxGrid, grid);
}

std::string NullBackend::report() const {
  if (plan_ != Plan::Cuda)
    return "";
  return "plan: cuda sm_90 (" + std::to_string(kPlanSMs) +
         " SMs): " + std::to_string(kernels_.size()) + " kernels compiled by NVRTC (" +
         std::to_string(counters_.diskHits) + " from its cache), " +
         std::to_string(plan_stats_.launches) + " launches (" +
         std::to_string(plan_stats_.splitLaunches) + " split reductions, largest grid " +
         std::to_string(plan_stats_.maxGrid) + " blocks), " + std::to_string(plan_stats_.gemms) +
         " cuBLAS GEMMs\n";
}

void NullBackend::run(int ranks, const std::function<void(Device &)> &body) {
  for (int r = 0; r < ranks; ++r) {
    NullDevice dev(*this, r, ranks);
    try {
      body(dev);
    } catch (const RuntimeFault &f) {
      throw RuntimeFault("rank " + std::to_string(r) + " failed: ", f);
    } catch (const std::exception &e) { // InternalError too: the executor reports it
      throw RuntimeFault("rank " + std::to_string(r) + " failed: " + e.what());
    }
  }
}

} // namespace dt
