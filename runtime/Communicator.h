// This file implements the interface every collective backend of dtensor
// provides: a Communicator is a group of ranks (the ranks along one mesh axis
// at a fixed coordinate on the other axes, or the whole world) that run
// all-reduce, all-gather, reduce-scatter, all-to-all, broadcast and barrier
// together. SPMD lowering turns every placement change into calls on it; the
// CPU backend implements it with threads over shared memory (ThreadComm.h),
// multi-process runs with MPI (MpiComm.h), GPUs with NCCL.
//
// Contract shared by all implementations:
//  * Counts are in elements of `dtype`; buffers are raw, row-major, unaligned
//    pointers are fine. A count of 0 is valid (a size-0 shard), and a buffer
//    of 0 elements may be nullptr.
//  * Every member calls the same collectives in the same order with agreeing
//    arguments (same dtype/op/count/root; the same `counts` vector for the V
//    collectives; sendCounts[j] of rank i == recvCounts[i] of rank j).
//    Backends that can detect a disagreement throw RuntimeFault.
//  * Reductions combine ranks in rank order 0, 1, ..., size-1 for every
//    element, so floating-point results are deterministic and identical on
//    every rank. Avg = Sum / size (integers: C++ truncating division).
//    Integer Sum wraps around on overflow (two's complement). Max/Min on
//    floats propagate NaN: an element that is NaN on any rank is NaN in the
//    result (as the reference evaluator's reduce_max/reduce_min).
//  * Bool (one byte, 0 or 1): Sum and Max are logical or, Min is logical and;
//    Avg is rejected with RuntimeFault (it has no Bool result).
//  * Aliasing: send == recv is allowed for allReduce (in place). The other
//    collectives accept any overlap of send and recv (implementations copy
//    through a temporary when needed); the cheap in-place forms are NCCL's:
//    allGatherV with send == recv + offset of this rank's block, and
//    reduceScatterV with recv == send + offset of this rank's block.
#pragma once

#include "ir/Types.h"

#include <cstdint>
#include <vector>

namespace dt {

/// A group of ranks that run collectives together: the ranks along one mesh axis
/// at a fixed coordinate on the other axes, or the whole world. Counts are in elements
/// of `dtype`; buffers are raw. Every member must call the same collectives in the same order.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0; ///< rank within the group, 0..size-1
  virtual int size() const = 0;
  /// recv[i] = op over ranks of send[i]. send may equal recv (in place). Avg = Sum / size (ints:
  /// truncating).
  virtual void allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) = 0;
  /// Rank r contributes counts[r] elements; recv gets the concatenation in rank order (sum(counts)
  /// elements).
  virtual void allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                          DType dtype) = 0;
  /// send holds sum(counts) elements (rank r's block at offset sum(counts[0..r))); rank r receives
  /// counts[r] reduced elements.
  virtual void reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts,
                              DType dtype, ReduceOp op) = 0;
  /// sendCounts[j] elements go to rank j (send is their concatenation in j order); recvCounts[j]
  /// come from rank j (recv is their concatenation in j order).
  virtual void allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                         const std::vector<int64_t> &recvCounts, DType dtype) = 0;
  /// Copies root's `count` elements of buf into every other rank's buf.
  virtual void broadcast(void *buf, int64_t count, DType dtype, int root) = 0;
  /// Returns once every member has entered the barrier.
  virtual void barrier() = 0;
};

// --- Helpers shared by the backends (and by local Partial reductions) --------------------------

/// Throws RuntimeFault unless `op` is defined on `dtype` (Bool has no Avg).
void checkReducible(DType dtype, ReduceOp op);

/// acc[i] = op(acc[i], src[i]) for i < count; Avg combines like Sum (see finishAvg). acc and src
/// must not overlap. Vectorized loops, one instantiation per dtype and op.
void reduceInto(void *acc, const void *src, int64_t count, DType dtype, ReduceOp op);

/// dst[i] = op over j = 0..n-1 of srcs[j][i], in order j (n >= 1): up to 4 sources in one
/// pass (like reduceInto, but writing a buffer of its own). dst must not overlap a source.
void reduceMany(void *dst, const void *const *srcs, int n, int64_t count, DType dtype, ReduceOp op);

/// buf[i] /= groupSize when op is Avg (truncating for integers); a no-op for other ops.
void finishAvg(void *buf, int64_t count, DType dtype, ReduceOp op, int groupSize);

/// Sum of counts; throws RuntimeFault on a negative count.
int64_t totalCount(const std::vector<int64_t> &counts);

/// Exclusive prefix sums of counts: offsets[r] = sum(counts[0..r)), one more entry = total.
std::vector<int64_t> countOffsets(const std::vector<int64_t> &counts);

/// The world ranks (device ids, `mesh.devices`; identity when empty) of the ranks along mesh axis
/// `axis` through mesh rank `meshRank`, in axis-coordinate order: the members of the group that
/// a collective over `axis` runs on. Group rank i is coordinate i along the axis.
std::vector<int> meshAxisGroup(const Mesh &mesh, int64_t meshRank, int axis);

/// World rank of device id `id`: its index in `worldIds`, the sorted distinct device ids of a
/// program's meshes (so sparse ids such as `devices [1, 1000000]` need two ranks, not a million);
/// -1 when `id` is not one of them.
int worldRankOf(const std::vector<int64_t> &worldIds, int64_t id);

/// Name of a collective for messages: "allReduce", ...
enum class CollectiveKind { AllReduce, AllGatherV, ReduceScatterV, AllToAllV, Broadcast, Barrier };
const char *collectiveName(CollectiveKind k);

} // namespace dt
