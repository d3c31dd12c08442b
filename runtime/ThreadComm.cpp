// This file implements ThreadWorld and its shared-memory communicators (see
// ThreadComm.h for the algorithms). Every collective has the same shape:
//
//   enter:  publish my Slot (signature + buffer pointers), arrive at the
//           group's entry barrier. The entry barrier is abortable: a waiter
//           woken by an abort (or by a member that returned from run())
//           withdraws its arrival, so nobody ever passes the barrier and reads
//           the buffers of a rank that is unwinding.
//   check:  every rank compares all published signatures (the same comparison
//           on every rank, so all agree on whether the call is valid).
//   move:   copy/reduce directly between peers' buffers. Never blocks, never
//           throws (scratch memory is allocated before entering).
//   exit:   a second barrier, not abortable (every member is past the entry
//           barrier, so every member arrives); after it buffers may be reused.
//
// The barrier is one 64-bit word, generation << 32 | arrived: arriving is a
// fetch_add, the last arriver stores (generation + 1) << 32, withdrawing is a
// CAS that decrements `arrived` while the generation is unchanged.
#include "runtime/ThreadComm.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace dt {
namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// memcpy with non-temporal stores: for large collectives, whose output another rank (or a
/// later kernel) reads long after, this skips reading every destination line into the cache
/// before overwriting it (a third of the memory traffic of a copy). Ends with a store fence so
/// that the barrier that follows publishes the data.
void streamCopy(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__)
  auto *d = static_cast<unsigned char *>(dst);
  auto *s = static_cast<const unsigned char *>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (bytes < 256)
    return (void)std::memcpy(d, s, bytes);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (size_t i = 0, n = bytes / 64; i < n; ++i, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)),
            e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  std::memcpy(d, s, bytes % 64);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

/// Thrown in a rank woken because another rank failed; run() reports the original failure.
struct RankAborted : RuntimeFault {
  RankAborted() : RuntimeFault("collective aborted: another rank failed") {}
};

/// What a member is calling; all members of one collective must agree.
struct Signature {
  CollectiveKind kind = CollectiveKind::Barrier;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int64_t count = 0; ///< allReduce/broadcast element count
  int root = 0;      ///< broadcast root
  bool reduces() const {
    return kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatterV;
  }
  std::string str() const {
    std::string s = std::string(collectiveName(kind)) + "(";
    if (kind != CollectiveKind::Barrier)
      s += dtypeName(dtype);
    if (reduces())
      s += std::string(", ") + reduceOpName(op);
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::Broadcast)
      s += ", count " + std::to_string(count);
    if (kind == CollectiveKind::Broadcast)
      s += ", root " + std::to_string(root);
    return s + ")";
  }
  bool operator==(const Signature &o) const {
    return kind == o.kind && dtype == o.dtype && (!reduces() || op == o.op) && count == o.count &&
           root == o.root;
  }
};

/// One member's published call; written by its owner before the entry barrier.
struct alignas(64) Slot {
  Signature sig;
  const unsigned char *send = nullptr;
  unsigned char *recv = nullptr;
  const std::vector<int64_t> *counts = nullptr;     ///< V collectives (allToAllV: sendCounts)
  const std::vector<int64_t> *recvCounts = nullptr; ///< allToAllV
  /// allGatherV, reduceScatterV: a hash of `counts`, so each member compares
  /// n hashes rather than n vectors of n (which made a 4096-rank all-gather
  /// take seconds).
  uint64_t countsHash = 0;
  const std::vector<int64_t> *sendOffsets = nullptr; ///< allToAllV: where each peer's part starts
};

/// FNV-1a over the counts' bytes (a consistency check of the members' calls).
inline uint64_t hashCounts(const std::vector<int64_t> &counts) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)counts.size();
  for (int64_t c : counts)
    for (int b = 0; b < 8; ++b) {
      h ^= (uint64_t)((c >> (8 * b)) & 0xff);
      h *= 1099511628211ull;
    }
  return h;
}

class ThreadComm;

/// The shared state of one group of ranks.
struct Group {
  std::vector<int> members; ///< world ranks in group-rank order
  int n = 0;
  std::vector<Slot> slots;
  alignas(64) std::atomic<uint64_t> word{0}; ///< generation << 32 | arrived
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<int> departed{-1}; ///< a member's world rank that returned from run(), or -1
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::unique_ptr<ThreadComm>> comms; ///< one per member

  std::string str() const {
    std::string s = "[";
    for (size_t i = 0; i < members.size(); ++i)
      s += (i ? ", " : "") + std::to_string(members[i]);
    return s + "]";
  }
  void wake() {
    { std::lock_guard<std::mutex> lk(m); }
    cv.notify_all();
  }
};

constexpr uint64_t kArrivedMask = 0xffffffffu;
/// Default spin iterations before sleeping (see collectives_bench's tiny all-reduce sweep): a
/// spin only pays off when the awaited rank is running on another core at that moment.
constexpr int kSpinIdle = 4000, kSpinOversubscribed = 0;

} // namespace

struct ThreadWorld::Impl {
  int n = 0;
  std::atomic<bool> abort{false};
  std::atomic<int> spinLimit{0};
  std::mutex mu; ///< guards groups, running, failure
  std::map<std::vector<int>, std::unique_ptr<Group>> groups;
  std::vector<int> all; ///< 0..n-1
  bool running = false;
  int failedRank = -1;
  std::string failure;
  std::optional<RuntimeFault> failureFault; ///< the first failure, when a RuntimeFault (its line)
  int rankBase = 0;                         ///< added to rank numbers in messages (setRankBase)

  // The rank pool: ranks 1..n-1 are worker threads started by the first run() and kept until
  // the world is destroyed; rank 0 runs on the caller's thread. A run publishes `task`, bumps
  // `job` and wakes the workers; each worker runs task(rank) and decrements `pending`. Both
  // sides spin (up to spinLimit) before sleeping, so back-to-back runs (a host program calling
  // a mesh function in a loop) start their ranks in well under a microsecond.
  std::vector<std::thread> workers;
  const std::function<void(int)> *task = nullptr;
  alignas(64) std::atomic<uint64_t> job{0};
  alignas(64) std::atomic<int> pending{0};
  std::atomic<bool> quit{false};
  std::mutex poolMu;
  std::condition_variable jobCv, doneCv;

  Group &get(const std::vector<int> &members);
  void workerLoop(int rank);
  /// Waits until ready(): spins up to `budget` pauses, then sleeps on cv. The budget adapts as
  /// in the collectives (doubled after a spin that paid off, halved after a wasted one), so a
  /// loaded machine soon stops spinning. (No sched_yield: on a loaded machine each one can hand
  /// the core to another process for a whole time slice; measured 8.5 ms a run with 16 yields
  /// against 35 us without, at load 14 on 2 cores.)
  int callerBudget = 0;
  template <class Ready> void poolWait(Ready ready, std::condition_variable &cv, int &budget) {
    const int limit = spinLimit.load(std::memory_order_relaxed);
    budget = std::clamp(budget, std::min(limit, 32), limit);
    for (int i = 0; i < budget; ++i) {
      if (ready()) {
        budget = std::min(limit, budget * 2);
        return;
      }
      cpuRelax();
    }
    budget /= 2;
    std::unique_lock<std::mutex> lk(poolMu);
    cv.wait(lk, ready);
  }
  void startWorkers();
  void stopWorkers();
  void abortAll() {
    abort.store(true);
    std::lock_guard<std::mutex> lk(mu);
    for (auto &[k, g] : groups)
      g->wake();
  }
};

namespace {

/// Rank `rank_` of a Group: the Communicator handed to one thread.
class ThreadComm final : public Communicator {
public:
  ThreadComm(ThreadWorld::Impl &w, Group &g, int rank)
      : w_(w), g_(g), rank_(rank), srcs_((size_t)g.n) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.n; }

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
  static constexpr int64_t kBlockBytes = 32 * 1024; ///< reduction block, stays in L1/L2
  /// Collectives moving at least this many bytes per rank write with non-temporal stores (their
  /// output no longer fits in the caches anyway); smaller ones leave it in cache for the consumer.
  static constexpr size_t kStreamBytes = 4 << 20;

  Slot &mine() { return g_.slots[rank_]; }
  const Slot &peer(int j) const { return g_.slots[j]; }
  /// Entry barrier (abortable) then the signature check; returns an error message or "".
  std::string enter();
  /// Exit barrier (not abortable); throws RuntimeFault(err) when err is non-empty.
  void leave(const std::string &err);
  /// One barrier phase; when `abortable`, may withdraw and throw instead of completing.
  void phase(bool abortable);
  /// Copies [p, p + bytes) into scratch_ and returns the copy.
  const unsigned char *stage(const void *p, size_t bytes);
  /// out[0..len) = op over peers j of peerSend(j)[elemOff..elemOff+len) (Avg finished), in
  /// blocks through tmp_; calls emit(blockOffset, tmp, blockLen) for each block.
  template <class Emit>
  void reduceRange(int64_t elemOff, int64_t len, DType dtype, ReduceOp op, Emit &&emit);

  /// Copies a collective's output: streaming stores when streaming_ is set for this call.
  void copyOut(void *dst, const void *src, size_t bytes) {
    if (streaming_)
      streamCopy(dst, src, bytes);
    else
      std::memcpy(dst, src, bytes);
  }

  ThreadWorld::Impl &w_;
  Group &g_;
  int rank_;
  bool streaming_ = false;
  int spinBudget_ = 1 << 30; ///< current spin iterations before sleeping (clamped to the limit)
  std::vector<unsigned char> scratch_;
  std::vector<const void *> srcs_; ///< reduceRange's peer pointers (sized up front: the move
                                   ///< phase never allocates)
  alignas(64) unsigned char tmp_[kBlockBytes];
};

bool overlaps(const void *a, size_t an, const void *b, size_t bn) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return an && bn && pa < pb + bn && pb < pa + an;
}

void ThreadComm::phase(bool abortable) {
  Group &g = g_;
  const uint64_t old = g.word.fetch_add(1, std::memory_order_acq_rel);
  const uint64_t gen = old >> 32;
  if ((old & kArrivedMask) + 1 == (uint64_t)g.n) {
    g.word.store((gen + 1) << 32, std::memory_order_seq_cst);
    if (g.sleepers.load(std::memory_order_seq_cst) > 0)
      g.wake();
    return;
  }
  auto done = [&] { return (g.word.load(std::memory_order_acquire) >> 32) != gen; };
  // Adaptive spin: double the budget after a spin that paid off, halve it after a wasted one
  // (a loaded or oversubscribed machine quickly stops spinning).
  const int limit = w_.spinLimit.load(std::memory_order_relaxed);
  spinBudget_ = std::clamp(spinBudget_, std::min(limit, 32), limit);
  for (int i = 0; i < spinBudget_; ++i) {
    if (done()) {
      spinBudget_ = std::min(limit, spinBudget_ * 2);
      return;
    }
    cpuRelax();
  }
  spinBudget_ /= 2;
  auto interrupted = [&] { return abortable && (w_.abort.load() || g.departed.load() >= 0); };
  {
    std::unique_lock<std::mutex> lk(g.m);
    g.sleepers.fetch_add(1, std::memory_order_seq_cst);
    g.cv.wait(lk, [&] { return done() || interrupted(); });
    g.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
  if (done())
    return;
  // Interrupted: withdraw the arrival unless the barrier is already completing.
  uint64_t cur = g.word.load(std::memory_order_acquire);
  while ((cur >> 32) == gen && (cur & kArrivedMask) < (uint64_t)g.n) {
    if (g.word.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel)) {
      if (w_.abort.load())
        throw RankAborted();
      int gone = g.departed.load();
      throw RuntimeFault("collective on group " + g.str() + " can never complete: world rank " +
                         std::to_string(gone + w_.rankBase) +
                         " returned from its program without calling it");
    }
  }
  while (!done())
    cpuRelax(); // the last arriver is publishing the new generation
}

std::string ThreadComm::enter() {
  if (w_.abort.load(std::memory_order_relaxed))
    throw RankAborted();
  phase(true);
  const Signature &s0 = peer(0).sig;
  for (int j = 1; j < g_.n; ++j)
    if (!(peer(j).sig == s0))
      return "collective mismatch on group " + g_.str() + ": rank 0 calls " + s0.str() + ", rank " +
             std::to_string(j) + " calls " + peer(j).sig.str();
  return "";
}

void ThreadComm::leave(const std::string &err) {
  phase(false);
  if (!err.empty())
    throw RuntimeFault(err);
}

const unsigned char *ThreadComm::stage(const void *p, size_t bytes) {
  scratch_.resize(bytes);
  std::memcpy(scratch_.data(), p, bytes);
  return scratch_.data();
}

template <class Emit>
void ThreadComm::reduceRange(int64_t elemOff, int64_t len, DType dtype, ReduceOp op, Emit &&emit) {
  const int64_t es = dtypeSize(dtype), block = kBlockBytes / es;
  for (int64_t b = 0; b < len; b += block) {
    const int64_t m = std::min(block, len - b);
    const size_t at = (size_t)((elemOff + b) * es);
    for (int j = 0; j < g_.n; ++j)
      srcs_[j] = peer(j).send + at;
    reduceMany(tmp_, srcs_.data(), g_.n, m, dtype, op);
    finishAvg(tmp_, m, dtype, op, g_.n);
    emit(b, tmp_, m);
  }
}

void ThreadComm::allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) {
  checkReducible(dtype, op);
  if (count < 0)
    throw RuntimeFault("allReduce: negative count " + std::to_string(count));
  const size_t es = (size_t)dtypeSize(dtype), bytes = (size_t)count * es;
  const unsigned char *src = static_cast<const unsigned char *>(send);
  if (send != recv && overlaps(send, bytes, recv, bytes))
    src = stage(send, bytes);
  Slot &s = mine();
  s.sig = {CollectiveKind::AllReduce, dtype, op, count, 0};
  streaming_ = bytes >= kStreamBytes;
  s.send = src;
  s.recv = static_cast<unsigned char *>(recv);
  std::string err = enter();
  if (err.empty()) {
    // Rank r owns slice r: reduce it from every peer, write it to every peer.
    const int64_t lo = count * rank_ / g_.n, hi = count * (rank_ + 1) / g_.n;
    reduceRange(lo, hi - lo, dtype, op, [&](int64_t b, const void *tmp, int64_t m) {
      for (int k = 0; k < g_.n; ++k) {
        int j = (rank_ + k) % g_.n; // stagger the peers each rank writes to first
        copyOut(peer(j).recv + (size_t)(lo + b) * es, tmp, (size_t)m * es);
      }
    });
  }
  leave(err);
}

void ThreadComm::allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                            DType dtype) {
  if ((int)counts.size() != g_.n)
    throw RuntimeFault("allGatherV: " + std::to_string(counts.size()) + " counts for a group of " +
                       std::to_string(g_.n));
  const int64_t total = totalCount(counts);
  const std::vector<int64_t> off = countOffsets(counts);
  const size_t es = (size_t)dtypeSize(dtype);
  auto *dst = static_cast<unsigned char *>(recv);
  const unsigned char *src = static_cast<const unsigned char *>(send);
  const size_t myBytes = (size_t)counts[rank_] * es;
  if (src != dst + off[rank_] * es && overlaps(src, myBytes, dst, (size_t)total * es))
    src = stage(send, myBytes);
  Slot &s = mine();
  s.sig = {CollectiveKind::AllGatherV, dtype, ReduceOp::Sum, 0, 0};
  streaming_ = (size_t)total * es >= kStreamBytes;
  s.send = src;
  s.recv = dst;
  s.counts = &counts;
  s.countsHash = hashCounts(counts);
  std::string err = enter();
  for (int j = 0; j < g_.n && err.empty(); ++j)
    if (peer(j).countsHash != peer(0).countsHash)
      err = "allGatherV on group " + g_.str() + ": ranks 0 and " + std::to_string(j) +
            " pass different counts";
  if (err.empty()) {
    for (int k = 0; k < g_.n; ++k) {
      int j = (rank_ + k) % g_.n;
      unsigned char *to = dst + off[j] * es;
      if (counts[j] && peer(j).send != to)
        copyOut(to, peer(j).send, (size_t)counts[j] * es);
    }
  }
  leave(err);
}

void ThreadComm::reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts,
                                DType dtype, ReduceOp op) {
  checkReducible(dtype, op);
  if ((int)counts.size() != g_.n)
    throw RuntimeFault("reduceScatterV: " + std::to_string(counts.size()) +
                       " counts for a group of " + std::to_string(g_.n));
  const int64_t total = totalCount(counts);
  const std::vector<int64_t> off = countOffsets(counts);
  const size_t es = (size_t)dtypeSize(dtype), myBytes = (size_t)counts[rank_] * es;
  const auto *src = static_cast<const unsigned char *>(send);
  auto *out = static_cast<unsigned char *>(recv);
  // Writing recv during the move is safe only where no peer reads: outside my send buffer, or
  // exactly on my own block. Otherwise reduce into scratch and copy after the exit barrier.
  const bool deferred =
      out != src + off[rank_] * es && overlaps(out, myBytes, src, (size_t)total * es);
  if (deferred) {
    scratch_.resize(myBytes);
    out = scratch_.data();
  }
  Slot &s = mine();
  s.sig = {CollectiveKind::ReduceScatterV, dtype, op, 0, 0};
  streaming_ = myBytes >= kStreamBytes;
  s.send = src;
  s.recv = out;
  s.counts = &counts;
  s.countsHash = hashCounts(counts);
  std::string err = enter();
  for (int j = 0; j < g_.n && err.empty(); ++j)
    if (peer(j).countsHash != peer(0).countsHash)
      err = "reduceScatterV on group " + g_.str() + ": ranks 0 and " + std::to_string(j) +
            " pass different counts";
  if (err.empty())
    reduceRange(off[rank_], counts[rank_], dtype, op, [&](int64_t b, const void *tmp, int64_t m) {
      copyOut(out + (size_t)b * es, tmp, (size_t)m * es);
    });
  leave(err);
  if (deferred && myBytes)
    std::memcpy(recv, scratch_.data(), myBytes);
}

void ThreadComm::allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                           const std::vector<int64_t> &recvCounts, DType dtype) {
  if ((int)sendCounts.size() != g_.n || (int)recvCounts.size() != g_.n)
    throw RuntimeFault("allToAllV: counts of size " + std::to_string(sendCounts.size()) + " and " +
                       std::to_string(recvCounts.size()) + " for a group of " +
                       std::to_string(g_.n));
  const size_t es = (size_t)dtypeSize(dtype);
  const int64_t sendTotal = totalCount(sendCounts), recvTotal = totalCount(recvCounts);
  const auto *src = static_cast<const unsigned char *>(send);
  auto *dst = static_cast<unsigned char *>(recv);
  if (overlaps(src, (size_t)sendTotal * es, dst, (size_t)recvTotal * es))
    src = stage(send, (size_t)sendTotal * es);
  Slot &s = mine();
  s.sig = {CollectiveKind::AllToAllV, dtype, ReduceOp::Sum, 0, 0};
  streaming_ = (size_t)recvTotal * es >= kStreamBytes;
  s.send = src;
  s.recv = dst;
  s.counts = &sendCounts;
  s.recvCounts = &recvCounts;
  const std::vector<int64_t> sendOff = countOffsets(sendCounts);
  s.sendOffsets = &sendOff;
  std::string err = enter();
  // Each member checks what it receives against what each peer sends it
  // (n checks, not n^2): a mismatch fails that member, and it copies
  // nothing, so no member reads or writes past a buffer.
  for (int i = 0; i < g_.n && err.empty(); ++i)
    if ((*peer(i).counts)[rank_] != recvCounts[i])
      err = "allToAllV on group " + g_.str() + ": rank " + std::to_string(i) + " sends " +
            std::to_string((*peer(i).counts)[rank_]) + " elements to rank " +
            std::to_string(rank_) + ", which expects " + std::to_string(recvCounts[i]);
  if (err.empty()) {
    const std::vector<int64_t> recvOff = countOffsets(recvCounts);
    for (int k = 0; k < g_.n; ++k) {
      int j = (rank_ + k) % g_.n;
      int64_t at = (*peer(j).sendOffsets)[rank_];
      if (recvCounts[j])
        copyOut(dst + recvOff[j] * es, peer(j).send + at * es, (size_t)recvCounts[j] * es);
    }
  }
  leave(err);
}

void ThreadComm::broadcast(void *buf, int64_t count, DType dtype, int root) {
  if (root < 0 || root >= g_.n)
    throw RuntimeFault("broadcast: root " + std::to_string(root) + " outside a group of " +
                       std::to_string(g_.n));
  if (count < 0)
    throw RuntimeFault("broadcast: negative count " + std::to_string(count));
  Slot &s = mine();
  s.sig = {CollectiveKind::Broadcast, dtype, ReduceOp::Sum, count, root};
  streaming_ = (size_t)count * dtypeSize(dtype) >= kStreamBytes;
  s.send = static_cast<const unsigned char *>(buf);
  s.recv = static_cast<unsigned char *>(buf);
  std::string err = enter();
  if (err.empty() && rank_ != root && count)
    copyOut(buf, peer(root).send, (size_t)count * dtypeSize(dtype));
  leave(err);
}

void ThreadComm::barrier() {
  mine().sig = {CollectiveKind::Barrier, DType::F32, ReduceOp::Sum, 0, 0};
  leave(enter());
}

} // namespace

Group &ThreadWorld::Impl::get(const std::vector<int> &members) {
  std::lock_guard<std::mutex> lk(mu);
  auto it = groups.find(members);
  if (it != groups.end())
    return *it->second;
  auto g = std::make_unique<Group>();
  g->members = members;
  g->n = (int)members.size();
  g->slots.resize(members.size());
  for (int i = 0; i < g->n; ++i)
    g->comms.push_back(std::make_unique<ThreadComm>(*this, *g, i));
  return *groups.emplace(members, std::move(g)).first->second;
}

ThreadWorld::ThreadWorld(int numRanks) : impl_(std::make_unique<Impl>()) {
  if (numRanks < 1)
    throw RuntimeFault("ThreadWorld needs at least 1 rank, got " + std::to_string(numRanks));
  impl_->n = numRanks;
  impl_->all.resize(numRanks);
  std::iota(impl_->all.begin(), impl_->all.end(), 0);
  // Spinning only helps when every rank has a core; oversubscribed, it delays the rank that
  // everybody waits for.
  // Read once per process: it reads /sys (~10 us), and a world is made per run.
  static const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  impl_->spinLimit = (unsigned)numRanks <= hw ? kSpinIdle : kSpinOversubscribed;
}

ThreadWorld::~ThreadWorld() { impl_->stopWorkers(); }

void ThreadWorld::Impl::startWorkers() {
  workers.reserve(n - 1);
  for (int r = 1; r < n; ++r) {
    try {
      workers.emplace_back([this, r] { workerLoop(r); });
    } catch (const std::system_error &e) {
      stopWorkers();
      quit = false;
      throw RuntimeFault("cannot start the thread of rank " + std::to_string(r) + " of " +
                         std::to_string(n) + ": " + e.what() +
                         " (the cpu backend runs a thread per rank: the system's limit on "
                         "threads or memory is reached; run fewer ranks, or across processes "
                         "with `--backend mpi`)");
    }
  }
}

void ThreadWorld::Impl::stopWorkers() {
  {
    std::lock_guard<std::mutex> lk(poolMu);
    quit = true;
  }
  jobCv.notify_all();
  for (auto &t : workers)
    t.join();
  workers.clear();
}

void ThreadWorld::Impl::workerLoop(int rank) {
  uint64_t seen = 0;
  int budget = spinLimit.load(std::memory_order_relaxed);
  for (;;) {
    auto ready = [&] {
      return job.load(std::memory_order_acquire) != seen || quit.load(std::memory_order_acquire);
    };
    poolWait(ready, jobCv, budget);
    if (quit.load(std::memory_order_acquire))
      return;
    seen = job.load(std::memory_order_acquire);
    (*task)(rank); // never throws: run()'s body catches everything
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      { std::lock_guard<std::mutex> lk(poolMu); }
      doneCv.notify_one();
    }
  }
}

int ThreadWorld::size() const { return impl_->n; }

void ThreadWorld::setSpinLimit(int iterations) { impl_->spinLimit = std::max(0, iterations); }
void ThreadWorld::setRankBase(int base) { impl_->rankBase = base; }

Communicator &ThreadWorld::group(int worldRank, const std::vector<int> &members) {
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  bool ok = !members.empty() && sorted.front() >= 0 && sorted.back() < impl_->n &&
            std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  auto pos = std::find(members.begin(), members.end(), worldRank);
  if (!ok || pos == members.end()) {
    std::string s;
    for (int m : members)
      s += (s.empty() ? "" : ", ") + std::to_string(m);
    throw RuntimeFault("ThreadWorld::group: members [" + s +
                       "] must be distinct world ranks below " + std::to_string(impl_->n) +
                       " containing rank " + std::to_string(worldRank));
  }
  return *impl_->get(members).comms[pos - members.begin()];
}

Communicator &ThreadWorld::world(int worldRank) { return group(worldRank, impl_->all); }

void ThreadWorld::run(const std::function<void(int rank)> &fn) {
  Impl &w = *impl_;
  {
    std::lock_guard<std::mutex> lk(w.mu);
    if (w.running)
      throw RuntimeFault("ThreadWorld::run called while already running");
    w.running = true;
    w.abort = false;
    w.failedRank = -1;
    w.failure.clear();
    w.failureFault.reset();
    for (auto &[k, g] : w.groups) {
      g->departed = -1;
      g->word = g->word.load() & ~kArrivedMask; // no arrivals survive a previous run
    }
  }
  auto fail = [&](int r, const std::string &what, const RuntimeFault *fault = nullptr) {
    {
      std::lock_guard<std::mutex> lk(w.mu);
      if (w.failedRank < 0) {
        w.failedRank = r;
        w.failure = what;
        if (fault)
          w.failureFault = *fault;
      }
    }
    w.abortAll();
  };
  auto body = [&](int r) {
    try {
      fn(r);
      // A normal return: wake members of its groups that wait for it in vain.
      std::lock_guard<std::mutex> lk(w.mu);
      for (auto &[k, g] : w.groups)
        if (g->n > 1 && std::find(k.begin(), k.end(), r) != k.end()) {
          int none = -1;
          g->departed.compare_exchange_strong(none, r);
          g->wake();
        }
    } catch (const RankAborted &) {
    } catch (const RuntimeFault &e) {
      fail(r, e.what(), &e);
    } catch (const std::exception &e) {
      fail(r, e.what());
    } catch (...) {
      fail(r, "unknown exception");
    }
  };
  if (w.n > 1) {
    if (w.workers.empty()) {
      try {
        w.startWorkers();
      } catch (const RuntimeFault &) {
        std::lock_guard<std::mutex> lk(w.mu);
        w.running = false;
        throw;
      }
    }
    std::function<void(int)> task = body;
    w.task = &task;
    w.pending.store(w.n - 1, std::memory_order_relaxed);
    w.job.fetch_add(1, std::memory_order_release);
    { std::lock_guard<std::mutex> lk(w.poolMu); }
    w.jobCv.notify_all();
    body(0);
    w.poolWait([&] { return w.pending.load(std::memory_order_acquire) == 0; }, w.doneCv,
               w.callerBudget);
    w.task = nullptr;
  } else {
    body(0); // one rank: no thread to start (a call from a host program)
  }
  std::lock_guard<std::mutex> lk(w.mu);
  w.running = false;
  if (w.failedRank >= 0) {
    std::string prefix = "rank " + std::to_string(w.failedRank + w.rankBase) + " failed: ";
    if (w.failureFault)
      throw RuntimeFault(prefix, *w.failureFault);
    throw RuntimeFault(prefix + w.failure);
  }
}

} // namespace dt
