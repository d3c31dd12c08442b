// This file implements the null backend (see NullBackend.h).
#include "runtime/NullBackend.h"

#include "support/Errors.h"
#include "runtime/Blas.h"

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

class NullDevice final : public Device {
public:
  NullDevice(int rank, int worldSize) : Device(rank), world_(rank, worldSize) {}

  std::shared_ptr<Buffer> allocate(int64_t bytes) override {
    return std::make_shared<Buffer>((size_t)bytes);
  }
  HostTensor fromHost(const HostTensor &h) override { return h; }
  HostTensor toHost(const HostTensor &t) override { return t; }
  void launch(const NativeKernel &, void *const *, const int64_t *) override {}
  std::optional<HostTensor> matmul(const HostTensor &a, const HostTensor &b, DType out, bool transA,
                                   bool transB) override {
    if (a.rank() < 1 || b.rank() < 1)
      return std::nullopt;
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
  HostTensor scatterAdd(const HostTensor &base, const HostTensor &, const HostTensor &,
                        int64_t) override {
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
  NullComm world_;
  std::map<std::vector<int>, NullComm> groups_;
};

} // namespace

NativeKernel NullBackend::compile(const Kernel &, bool) {
  ++counters_.compiles;
  return NativeKernel{};
}

void NullBackend::run(int ranks, const std::function<void(Device &)> &body) {
  for (int r = 0; r < ranks; ++r) {
    NullDevice dev(r, ranks);
    try {
      body(dev);
    } catch (const std::exception &e) { // InternalError too: the executor reports it
      throw RuntimeFault("rank " + std::to_string(r) + " failed: " + e.what());
    }
  }
}

} // namespace dt
