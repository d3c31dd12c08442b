// This file implements the two GPU Communicators (runtime/Communicator.h),
// whose buffers are DEVICE pointers:
//  * NcclComm: one rank per process or per GPU, over NCCL (opened at run time
//    through CudaLibraries). The caller creates the unique id on rank 0 with
//    NcclComm::uniqueId and exchanges it (MPI, a file, a launcher's store).
//  * CudaCopyComm: several virtual ranks on ONE GPU, each a thread with its own
//    stream: collectives are device-to-device copies plus reduction kernels,
//    so the multi-rank GPU path can be tested on a single-GPU machine.
// Both are synchronous: a call returns when the result is in `recv` (the
// rank's stream is synchronized), like the CPU ThreadComm.
//
// Reductions: CudaCopyComm combines ranks in rank order 0..size-1 through the
// kernel IR (add/maximum/minimum; bool as or/and), so it meets the contract's
// determinism. NCCL chooses its own reduction order (ring/tree): results are
// identical on every rank but may differ from rank order by float
// reassociation -- the contract's determinism holds up to that. Avg is always
// Sum followed by a division by the group size in a kernel (truncating for
// integers), never ncclAvg (which multiplies by 1/size for floats).
#pragma once

#include "runtime/Communicator.h"
#include "runtime/CudaRuntime.h"
#include "support/Errors.h"

#include <array>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace dt {

class FaultWatch;

/// dst[i] = op(a[i], b[i]) on the device (dst must not overlap a or b);
/// Avg combines like Sum. A kernel-IR kernel, compiled once per context.
void cudaCombine(CudaContext &ctx, void *dst, const void *a, const void *b, int64_t count,
                 DType dtype, ReduceOp op, CudaStream s);
/// dst[i] = src[i] / divisor (integers truncate); dst must not overlap src.
/// The divisor is a constant of the kernel (one compile per group size), so
/// nothing is uploaded and nothing waits.
void cudaDivide(CudaContext &ctx, void *dst, const void *src, int64_t count, DType dtype,
                int64_t divisor, CudaStream s);
/// The kernel-IR kernels of the two above (rank 1; inputs a, b or src).
Kernel cudaCombineKernel(DType dtype, ReduceOp op);
Kernel cudaDivideKernel(DType dtype, int64_t divisor);

/// NCCL's opaque unique id (ncclUniqueId), exchanged by the caller.
using NcclUniqueId = std::array<char, 128>;

class NcclComm : public Communicator {
public:
  /// A new id (call on one rank, send to the others).
  static NcclUniqueId uniqueId(CudaLibraries &libs);
  /// Joins the communicator (collective over all `size` ranks; blocks until
  /// they all arrive). `stream` is the rank's stream on `ctx`.
  NcclComm(CudaContext &ctx, int size, int rank, const NcclUniqueId &id, CudaStream stream);
  ~NcclComm() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) override;
  void allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                  DType dtype) override;
  void reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts, DType dtype,
                      ReduceOp op) override;
  void allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                 const std::vector<int64_t> &recvCounts, DType dtype) override;
  void broadcast(void *buf, int64_t count, DType dtype, int root) override;
  void barrier() override;

  /// Waits for its collectives under `watch` (one rank per process): the
  /// stream is polled, and a wait past the fault timeout or an asynchronous
  /// NCCL error aborts the communicator (ncclCommAbort, so no kernel is left
  /// waiting on a dead peer) and ends the job with the watch's report.
  void setWatch(FaultWatch *watch) { watch_ = watch; }
  /// ncclCommAbort: every pending operation of this communicator stops.
  void abort();

private:
  void check(int result, const char *what) const;
  void sync(const char *what); ///< the stream's work done (under the watch, if any)
  void finish(void *recv, int64_t count, DType dtype, ReduceOp op); ///< Avg, then sync
  /// NCCL's float max/min (fmaxf) drop NaN: gathers every rank's `total`
  /// elements and folds elements [off, off + count) of each in rank order with
  /// the NaN-propagating combine kernel into `recv`.
  void gatherFold(const void *send, int64_t total, int64_t off, int64_t count, void *recv,
                  DType dtype, ReduceOp op);
  CudaContext &ctx_;
  CudaStream stream_;
  void *comm_ = nullptr; ///< ncclComm_t
  int size_, rank_;
  FaultWatch *watch_ = nullptr;
};

/// What a member waiting in a GroupBarrier throws when another member failed
/// (the backend then reports that member's own failure instead).
struct CudaGroupAborted : RuntimeFault {
  CudaGroupAborted() : RuntimeFault("collective aborted: another rank failed") {}
};

/// A reusable barrier of a group's members (threads) that a failure can break:
/// abort() wakes every waiting member, which throws CudaGroupAborted, and a
/// member that waits longer than `timeout` seconds throws a RuntimeFault that
/// names the members that arrived and those that did not. Needs no GPU.
class GroupBarrier {
public:
  /// `members`: the world ranks of the group (for messages); `timeout` 0:
  /// wait forever.
  GroupBarrier(std::vector<int> members, double timeout);
  /// Member `rank` (group rank) arrives and waits for all; `what` names the
  /// collective in the timeout's report.
  void arrive(int rank, const char *what);
  /// Wakes every waiting member; later arrivals throw too, until reset().
  void abort();
  /// Clears an abort and any arrival left by a failed run.
  void reset();

private:
  std::vector<int> members_;
  double timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  std::vector<bool> arrived_;
  int64_t generation_ = 0;
  bool aborted_ = false;
};

/// The shared state of one group of virtual ranks on one GPU.
class CudaCopyGroup {
public:
  /// `members`: the world ranks of the group; `timeout`: seconds a member
  /// waits for the others in one collective (GroupBarrier; 0: forever).
  CudaCopyGroup(CudaContext &ctx, std::vector<int> members, double timeout = 0);
  int size() const { return size_; }
  CudaContext &context() { return ctx_; }
  void abort() { barrier_.abort(); }
  void reset() { barrier_.reset(); }

private:
  friend class CudaCopyComm;
  struct Slot {
    const void *send = nullptr;
    void *recv = nullptr;
    const std::vector<int64_t> *counts = nullptr; ///< sendCounts for allToAllV
  };
  CudaContext &ctx_;
  int size_;
  std::vector<Slot> slots_;
  GroupBarrier barrier_;
};

class CudaCopyComm : public Communicator {
public:
  /// Member `rank` of `group`, running on `stream` (one thread per member).
  CudaCopyComm(CudaCopyGroup &group, int rank, CudaStream stream);

  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  void allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) override;
  void allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                  DType dtype) override;
  void reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts, DType dtype,
                      ReduceOp op) override;
  void allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                 const std::vector<int64_t> &recvCounts, DType dtype) override;
  void broadcast(void *buf, int64_t count, DType dtype, int root) override;
  void barrier() override;

private:
  /// Publishes this rank's buffers, computes into a temporary with `work`
  /// (reading the other ranks' published buffers), waits for every rank to
  /// finish reading, then copies the temporary to `recv`.
  template <class Work>
  void collective(const char *what, const void *send, void *recv,
                  const std::vector<int64_t> *counts, int64_t resultBytes, Work work);
  /// Folds `count` elements at byte offset `off` of every rank's send buffer
  /// in rank order into `out`.
  void foldRanks(void *out, int64_t off, int64_t count, DType dtype, ReduceOp op);
  CudaCopyGroup &group_;
  int rank_;
  CudaStream stream_;
};

} // namespace dt
