// This file implements NcclComm, CudaCopyComm and the two device helpers they
// share (cudaCombine, cudaDivide: kernel-IR kernels, so their arithmetic is the
// IR's). See runtime/CudaComm.h.
#include "runtime/CudaComm.h"

#include "runtime/FaultWatch.h"

#include "codegen/CudaApi.h"
#include "support/Diagnostics.h"

#include <chrono>
#include <cstring>
#include <sched.h>
#include <sstream>
#include <string>

namespace dt {

namespace {
const char *bytes(const void *p, int64_t elems, DType t) {
  return static_cast<const char *>(p) + elems * dtypeSize(t);
}
char *bytes(void *p, int64_t elems, DType t) {
  return static_cast<char *>(p) + elems * dtypeSize(t);
}

bool uniform(const std::vector<int64_t> &counts) {
  for (int64_t c : counts)
    if (c != counts[0])
      return false;
  return true;
}
} // namespace

Kernel cudaCombineKernel(DType dtype, ReduceOp op) {
  Kernel k;
  k.name = "comm_combine";
  k.rank = 1;
  int x = k.load(k.addInput(dtype)), y = k.load(k.addInput(dtype));
  KOp kop = op == ReduceOp::Max ? KOp::Maximum : op == ReduceOp::Min ? KOp::Minimum : KOp::Add;
  if (dtype == DType::Bool) // Sum and Max are logical or, Min is logical and
    kop = op == ReduceOp::Min ? KOp::And : KOp::Or;
  k.store(k.addOutput(dtype), k.binary(kop, x, y));
  return k;
}

Kernel cudaDivideKernel(DType dtype, int64_t divisor) {
  Kernel k;
  k.name = "comm_divide";
  k.rank = 1;
  int x = k.load(k.addInput(dtype));
  int d = k.constantInt(divisor, DType::I64);
  k.store(k.addOutput(dtype), k.binary(KOp::Div, x, k.cast(d, dtype)));
  return k;
}

void cudaCombine(CudaContext &ctx, void *dst, const void *a, const void *b, int64_t count,
                 DType dtype, ReduceOp op, CudaStream s) {
  checkReducible(dtype, op);
  if (count <= 0)
    return;
  Kernel k = cudaCombineKernel(dtype, op);
  std::vector<int64_t> params = kernelParams(k, {count}, {{1}, {1}}, {{1}});
  void *bufs[] = {const_cast<void *>(a), const_cast<void *>(b), dst};
  ctx.launch(ctx.kernel(k), bufs, params.data(), s);
}

void cudaDivide(CudaContext &ctx, void *dst, const void *src, int64_t count, DType dtype,
                int64_t divisor, CudaStream s) {
  if (count <= 0)
    return;
  if (dtype == DType::Bool)
    throw RuntimeFault("avg is not defined on bool");
  Kernel k = cudaDivideKernel(dtype, divisor);
  std::vector<int64_t> params = kernelParams(k, {count}, {{1}}, {{1}});
  void *bufs[] = {const_cast<void *>(src), dst};
  ctx.launch(ctx.kernel(k), bufs, params.data(), s);
}

// --- NcclComm --------------------------------------------------------------------

#if DT_HAVE_CUDA_HEADERS
namespace {
ncclDataType_t ncclType(DType t) {
  switch (t) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  case DType::Bool:
    return ncclUint8;
  case DType::BF16: // NCCL adds bf16/f16 in f32 and rounds per hop
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  }
  return ncclUint8;
}
ncclRedOp_t ncclOp(ReduceOp op, DType t) {
  if (t == DType::Bool)
    return op == ReduceOp::Min ? ncclMin : ncclMax; // on 0/1: and / or
  switch (op) {
  case ReduceOp::Max:
    return ncclMax;
  case ReduceOp::Min:
    return ncclMin;
  default:
    return ncclSum; // Avg divides afterwards
  }
}
ncclComm_t nc(void *c) { return static_cast<ncclComm_t>(c); }
cudaStream_t cs(CudaStream s) { return static_cast<cudaStream_t>(s); }
} // namespace

void NcclComm::check(int result, const char *what) const {
  if (result != ncclSuccess)
    throw RuntimeFault(std::string("nccl: ") + what +
                       " failed: " + ctx_.libs().nccl().ncclGetErrorString((ncclResult_t)result));
}

NcclUniqueId NcclComm::uniqueId(CudaLibraries &libs) {
  static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId));
  ncclUniqueId id;
  ncclResult_t r = libs.nccl().ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw RuntimeFault(std::string("nccl: ncclGetUniqueId failed: ") +
                       libs.nccl().ncclGetErrorString(r));
  NcclUniqueId out;
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

NcclComm::NcclComm(CudaContext &ctx, int size, int rank, const NcclUniqueId &id, CudaStream stream)
    : ctx_(ctx), stream_(stream), size_(size), rank_(rank) {
  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof uid);
  ctx_.makeCurrent();
  ncclComm_t c = nullptr;
  check(ctx_.libs().nccl().ncclCommInitRank(&c, size, uid, rank), "ncclCommInitRank");
  comm_ = c;
}

NcclComm::~NcclComm() {
  if (comm_)
    ctx_.libs().nccl().ncclCommDestroy(nc(comm_));
}

void NcclComm::abort() {
  if (comm_)
    ctx_.libs().nccl().ncclCommAbort(nc(comm_));
  comm_ = nullptr;
}

void NcclComm::sync(const char *what) {
  if (!watch_) {
    ctx_.synchronize(stream_);
    return;
  }
  watch_->enter(what);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (unsigned spins = 1; !ctx_.query(stream_); ++spins) {
    if (spins > 64)
      sched_yield();
    if (spins & 255)
      continue;
    ncclResult_t async = ncclSuccess;
    ctx_.libs().nccl().ncclCommGetAsyncError(nc(comm_), &async);
    std::string peer = watch_->failedPeer(nullptr, false);
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (async != ncclSuccess || !peer.empty() || waited >= watch_->timeout()) {
      abort();
      std::string me = "rank " + std::to_string(watch_->rank());
      watch_->fail((async != ncclSuccess
                        ? std::string("nccl: ") + ctx_.libs().nccl().ncclGetErrorString(async)
                    : peer.empty() ? "no answer within --fault-timeout"
                                   : peer) +
                   ": " + me + " waited " + watch_->where() + " (NCCL communicator aborted)");
    }
  }
  watch_->leave();
}

void NcclComm::finish(void *recv, int64_t count, DType dtype, ReduceOp op) {
  if (op == ReduceOp::Avg && count > 0) {
    void *tmp = ctx_.alloc(count * dtypeSize(dtype), stream_);
    ctx_.copyOnDevice(tmp, recv, count * dtypeSize(dtype), stream_);
    cudaDivide(ctx_, recv, tmp, count, dtype, size_, stream_);
    ctx_.free(tmp);
  }
  sync("nccl");
}

/// Float max/min go through gatherFold: NCCL's are not NaN-propagating.
static bool needsNanFold(DType dtype, ReduceOp op) {
  return isFloat(dtype) && (op == ReduceOp::Max || op == ReduceOp::Min);
}

void NcclComm::gatherFold(const void *send, int64_t total, int64_t off, int64_t count, void *recv,
                          DType dtype, ReduceOp op) {
  const int64_t es = dtypeSize(dtype);
  if (total <= 0) {
    sync("nccl");
    return;
  }
  void *all = ctx_.alloc(total * size_ * es, stream_);
  check(ctx_.libs().nccl().ncclAllGather(send, all, (size_t)total, ncclType(dtype), nc(comm_),
                                         cs(stream_)),
        "ncclAllGather");
  if (count > 0) {
    // Ping-pong: kernel outputs never alias their inputs (the kernel ABI).
    void *scratch = ctx_.alloc(count * es, stream_);
    void *cur = recv, *next = scratch;
    ctx_.copyOnDevice(cur, bytes(all, off, dtype), count * es, stream_);
    for (int j = 1; j < size_; ++j) {
      cudaCombine(ctx_, next, cur, bytes(all, j * total + off, dtype), count, dtype, op, stream_);
      std::swap(cur, next);
    }
    if (cur != recv)
      ctx_.copyOnDevice(recv, cur, count * es, stream_);
    sync("nccl");
    ctx_.free(scratch);
  }
  sync("nccl");
  ctx_.free(all);
}

void NcclComm::allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) {
  checkReducible(dtype, op);
  const CudaNcclApi &n = ctx_.libs().nccl();
  if (needsNanFold(dtype, op))
    return gatherFold(send, count, 0, count, recv, dtype, op);
  if (count > 0)
    check(n.ncclAllReduce(send, recv, (size_t)count, ncclType(dtype), ncclOp(op, dtype), nc(comm_),
                          cs(stream_)),
          "ncclAllReduce");
  finish(recv, count, dtype, op);
}

void NcclComm::allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                          DType dtype) {
  const CudaNcclApi &n = ctx_.libs().nccl();
  std::vector<int64_t> off = countOffsets(counts);
  // A send buffer overlapping recv anywhere but at this rank's own block is
  // staged through a temporary.
  const char *s = static_cast<const char *>(send);
  char *r = static_cast<char *>(recv);
  void *tmp = nullptr;
  const int64_t es = dtypeSize(dtype), mine = counts[rank_] * es;
  bool overlap = s < r + off.back() * es && r < s + mine;
  if (overlap && s != r + off[rank_] * es) {
    tmp = ctx_.alloc(mine, stream_);
    ctx_.copyOnDevice(tmp, send, mine, stream_);
    send = tmp;
  }
  if (uniform(counts)) {
    if (counts[0] > 0)
      check(n.ncclAllGather(send, recv, (size_t)counts[0], ncclType(dtype), nc(comm_), cs(stream_)),
            "ncclAllGather");
  } else {
    check(n.ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < size_; ++j)
      if (counts[j] > 0)
        check(n.ncclBroadcast(j == rank_ ? send : bytes(recv, off[j], dtype),
                              bytes(recv, off[j], dtype), (size_t)counts[j], ncclType(dtype), j,
                              nc(comm_), cs(stream_)),
              "ncclBroadcast");
    check(n.ncclGroupEnd(), "ncclGroupEnd");
  }
  sync("nccl");
  ctx_.free(tmp);
}

void NcclComm::reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts,
                              DType dtype, ReduceOp op) {
  checkReducible(dtype, op);
  const CudaNcclApi &n = ctx_.libs().nccl();
  std::vector<int64_t> off = countOffsets(counts);
  if (needsNanFold(dtype, op))
    return gatherFold(send, off.back(), off[rank_], counts[rank_], recv, dtype, op);
  if (uniform(counts)) {
    if (counts[0] > 0)
      check(n.ncclReduceScatter(send, recv, (size_t)counts[0], ncclType(dtype), ncclOp(op, dtype),
                                nc(comm_), cs(stream_)),
            "ncclReduceScatter");
  } else {
    check(n.ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < size_; ++j)
      if (counts[j] > 0)
        check(n.ncclReduce(bytes(send, off[j], dtype), recv, // used on the root j only
                           (size_t)counts[j], ncclType(dtype), ncclOp(op, dtype), j, nc(comm_),
                           cs(stream_)),
              "ncclReduce");
    check(n.ncclGroupEnd(), "ncclGroupEnd");
  }
  finish(recv, counts[rank_], dtype, op);
}

void NcclComm::allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                         const std::vector<int64_t> &recvCounts, DType dtype) {
  const CudaNcclApi &n = ctx_.libs().nccl();
  std::vector<int64_t> so = countOffsets(sendCounts), ro = countOffsets(recvCounts);
  const int64_t es = dtypeSize(dtype);
  const char *s = static_cast<const char *>(send);
  char *r = static_cast<char *>(recv);
  void *tmp = nullptr;
  if (s < r + ro.back() * es && r < s + so.back() * es && so.back() > 0) {
    tmp = ctx_.alloc(so.back() * es, stream_);
    ctx_.copyOnDevice(tmp, send, so.back() * es, stream_);
    send = tmp;
  }
  check(n.ncclGroupStart(), "ncclGroupStart");
  for (int j = 0; j < size_; ++j) {
    if (sendCounts[j] > 0)
      check(n.ncclSend(bytes(send, so[j], dtype), (size_t)sendCounts[j], ncclType(dtype), j,
                       nc(comm_), cs(stream_)),
            "ncclSend");
    if (recvCounts[j] > 0)
      check(n.ncclRecv(bytes(recv, ro[j], dtype), (size_t)recvCounts[j], ncclType(dtype), j,
                       nc(comm_), cs(stream_)),
            "ncclRecv");
  }
  check(n.ncclGroupEnd(), "ncclGroupEnd");
  sync("nccl");
  ctx_.free(tmp);
}

void NcclComm::broadcast(void *buf, int64_t count, DType dtype, int root) {
  if (count > 0)
    check(ctx_.libs().nccl().ncclBroadcast(buf, buf, (size_t)count, ncclType(dtype), root,
                                           nc(comm_), cs(stream_)),
          "ncclBroadcast");
  sync("nccl");
}

void NcclComm::barrier() {
  void *one = ctx_.alloc(sizeof(int32_t), stream_);
  ctx_.zero(one, sizeof(int32_t), stream_);
  allReduce(one, one, 1, DType::I32, ReduceOp::Sum);
  ctx_.free(one);
}

#else // !DT_HAVE_CUDA_HEADERS

NcclUniqueId NcclComm::uniqueId(CudaLibraries &libs) {
  libs.nccl(); // throws "built without CUDA headers"
  return {};
}
NcclComm::NcclComm(CudaContext &ctx, int size, int rank, const NcclUniqueId &, CudaStream s)
    : ctx_(ctx), stream_(s), size_(size), rank_(rank) {
  ctx_.libs().nccl();
}
NcclComm::~NcclComm() = default;
void NcclComm::abort() {}
void NcclComm::sync(const char *) {}
void NcclComm::check(int, const char *) const {}
void NcclComm::finish(void *, int64_t, DType, ReduceOp) {}
void NcclComm::allReduce(const void *, void *, int64_t, DType, ReduceOp) {}
void NcclComm::allGatherV(const void *, void *, const std::vector<int64_t> &, DType) {}
void NcclComm::reduceScatterV(const void *, void *, const std::vector<int64_t> &, DType, ReduceOp) {
}
void NcclComm::allToAllV(const void *, const std::vector<int64_t> &, void *,
                         const std::vector<int64_t> &, DType) {}
void NcclComm::broadcast(void *, int64_t, DType, int) {}
void NcclComm::barrier() {}

#endif

// --- CudaCopyComm ----------------------------------------------------------------

GroupBarrier::GroupBarrier(std::vector<int> members, double timeout)
    : members_(std::move(members)), timeout_(timeout), arrived_(members_.size(), false) {}

void GroupBarrier::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

void GroupBarrier::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = false;
  waiting_ = 0;
  arrived_.assign(members_.size(), false);
  ++generation_;
}

void GroupBarrier::arrive(int rank, const char *what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_)
    throw CudaGroupAborted();
  const int size = (int)members_.size();
  int64_t gen = generation_;
  arrived_[rank] = true;
  if (++waiting_ == size) {
    waiting_ = 0;
    arrived_.assign(size, false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  auto done = [&] { return generation_ != gen || aborted_; };
  if (timeout_ > 0) {
    if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_), done)) {
      std::string in, out;
      for (int i = 0; i < size; ++i) {
        std::string &list = arrived_[i] ? in : out;
        list += (list.empty() ? "" : ", ") + std::to_string(members_[i]);
      }
      std::ostringstream secs;
      secs << timeout_;
      throw RuntimeFault("cuda: rank " + std::to_string(members_[rank]) + " waited " + secs.str() +
                         " s in " + what + " for ranks " + out + " (arrived: " + in +
                         "): a rank stopped, or the ranks run different collectives");
    }
  } else {
    cv_.wait(lock, done);
  }
  if (generation_ == gen) // woken by abort()
    throw CudaGroupAborted();
}

CudaCopyGroup::CudaCopyGroup(CudaContext &ctx, std::vector<int> members, double timeout)
    : ctx_(ctx), size_((int)members.size()), slots_(size_), barrier_(std::move(members), timeout) {}

CudaCopyComm::CudaCopyComm(CudaCopyGroup &group, int rank, CudaStream stream)
    : group_(group), rank_(rank), stream_(stream) {}

template <class Work>
void CudaCopyComm::collective(const char *what, const void *send, void *recv,
                              const std::vector<int64_t> *counts, int64_t resultBytes, Work work) {
  CudaContext &ctx = group_.context();
  ctx.synchronize(stream_); // this rank's writes to `send` are visible to the others
  group_.slots_[rank_] = {send, recv, counts};
  group_.barrier_.arrive(rank_, what); // every rank has published
  void *tmp = resultBytes > 0 ? ctx.alloc(resultBytes, stream_) : nullptr;
  try {
    work(tmp);
    ctx.synchronize(stream_);
  } catch (...) {
    // The others wait for this rank's second arrival: end theirs too.
    ctx.free(tmp);
    group_.abort();
    throw;
  }
  group_.barrier_.arrive(rank_, what); // every rank has finished reading the others' buffers
  if (recv && tmp)
    ctx.copyOnDevice(recv, tmp, resultBytes, stream_);
  ctx.synchronize(stream_);
  ctx.free(tmp);
}

void CudaCopyComm::foldRanks(void *out, int64_t off, int64_t count, DType dtype, ReduceOp op) {
  CudaContext &ctx = group_.context();
  const int64_t nb = count * dtypeSize(dtype);
  ctx.copyOnDevice(out, bytes(group_.slots_[0].send, off, dtype), nb, stream_);
  if (size() == 1 || count == 0)
    return;
  // Ping-pong between `out` and a scratch buffer: kernel outputs never alias
  // their inputs (the kernel ABI).
  void *scratch = ctx.alloc(nb, stream_);
  void *cur = out, *next = scratch;
  for (int j = 1; j < size(); ++j) {
    cudaCombine(ctx, next, cur, bytes(group_.slots_[j].send, off, dtype), count, dtype, op,
                stream_);
    std::swap(cur, next);
  }
  if (cur != out)
    ctx.copyOnDevice(out, cur, nb, stream_);
  ctx.synchronize(stream_);
  ctx.free(scratch);
}

void CudaCopyComm::allReduce(const void *send, void *recv, int64_t count, DType dtype,
                             ReduceOp op) {
  checkReducible(dtype, op);
  CudaContext &ctx = group_.context();
  collective("allReduce", send, recv, nullptr, count * dtypeSize(dtype), [&](void *tmp) {
    foldRanks(tmp, 0, count, dtype, op);
    if (op == ReduceOp::Avg && count > 0) {
      void *avg = ctx.alloc(count * dtypeSize(dtype), stream_);
      cudaDivide(ctx, avg, tmp, count, dtype, size(), stream_);
      ctx.copyOnDevice(tmp, avg, count * dtypeSize(dtype), stream_);
      ctx.synchronize(stream_);
      ctx.free(avg);
    }
  });
}

void CudaCopyComm::allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                              DType dtype) {
  CudaContext &ctx = group_.context();
  std::vector<int64_t> off = countOffsets(counts);
  collective("allGatherV", send, recv, nullptr, off.back() * dtypeSize(dtype), [&](void *tmp) {
    for (int j = 0; j < size(); ++j)
      ctx.copyOnDevice(bytes(tmp, off[j], dtype), group_.slots_[j].send,
                       counts[j] * dtypeSize(dtype), stream_);
  });
}

void CudaCopyComm::reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts,
                                  DType dtype, ReduceOp op) {
  checkReducible(dtype, op);
  CudaContext &ctx = group_.context();
  std::vector<int64_t> off = countOffsets(counts);
  const int64_t mine = counts[rank_];
  collective("reduceScatterV", send, recv, nullptr, mine * dtypeSize(dtype), [&](void *tmp) {
    foldRanks(tmp, off[rank_], mine, dtype, op);
    if (op == ReduceOp::Avg && mine > 0) {
      void *avg = ctx.alloc(mine * dtypeSize(dtype), stream_);
      cudaDivide(ctx, avg, tmp, mine, dtype, size(), stream_);
      ctx.copyOnDevice(tmp, avg, mine * dtypeSize(dtype), stream_);
      ctx.synchronize(stream_);
      ctx.free(avg);
    }
  });
}

void CudaCopyComm::allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                             const std::vector<int64_t> &recvCounts, DType dtype) {
  CudaContext &ctx = group_.context();
  std::vector<int64_t> ro = countOffsets(recvCounts);
  collective("allToAllV", send, recv, &sendCounts, ro.back() * dtypeSize(dtype), [&](void *tmp) {
    for (int j = 0; j < size(); ++j) {
      // Rank j's block for this rank starts after its blocks for ranks < rank_.
      std::vector<int64_t> so = countOffsets(*group_.slots_[j].counts);
      if ((*group_.slots_[j].counts)[rank_] != recvCounts[j])
        throw RuntimeFault("allToAllV: rank " + std::to_string(j) + " sends " +
                           std::to_string((*group_.slots_[j].counts)[rank_]) +
                           " elements but rank " + std::to_string(rank_) + " expects " +
                           std::to_string(recvCounts[j]));
      ctx.copyOnDevice(bytes(tmp, ro[j], dtype), bytes(group_.slots_[j].send, so[rank_], dtype),
                       recvCounts[j] * dtypeSize(dtype), stream_);
    }
  });
}

void CudaCopyComm::broadcast(void *buf, int64_t count, DType dtype, int root) {
  CudaContext &ctx = group_.context();
  const bool isRoot = rank_ == root;
  collective("broadcast", buf, isRoot ? nullptr : buf, nullptr,
             isRoot ? 0 : count * dtypeSize(dtype), [&](void *tmp) {
               if (!isRoot)
                 ctx.copyOnDevice(tmp, group_.slots_[root].send, count * dtypeSize(dtype), stream_);
             });
}

void CudaCopyComm::barrier() {
  group_.context().synchronize(stream_);
  group_.barrier_.arrive(rank_, "barrier");
}

} // namespace dt
