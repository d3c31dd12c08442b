// This file implements the CPU backend's virtual mesh: a ThreadWorld runs N
// ranks as threads of one process, and its communicators move data through
// shared memory. It is the embedded default (like the virtual CPUs of
// TensorFlow DTensor): `dtensorc run` on a mesh of 6 devices starts one
// ThreadWorld(6) and every rank's program asks it for the group of each mesh
// axis it communicates along.
//
// How a collective works (bandwidth-optimal, no staging copies): every member
// publishes pointers to its send/recv buffers (and counts) in the group's
// shared state, all meet at a barrier, then every rank copies or reduces
// directly from its peers' buffers, and all meet at a second barrier before
// any buffer may be reused. all-reduce: rank r reduces slice r of all peers'
// send buffers (rank order, in cache-sized blocks) and writes the result into
// every peer's recv; all-gather: every rank copies the peers' blocks into its
// own recv; reduce-scatter: every rank reduces its own block across peers;
// all-to-all: every rank copies its incoming blocks. Each byte is read once
// and written once per rank that needs it.
//
// Failure handling: if a rank's function throws inside run(), every rank
// blocked in (or later entering) a collective wakes up and aborts, and run()
// throws RuntimeFault("rank R failed: <what>") for the first failure. A rank
// that returns from its function while a group it belongs to still waits for
// it (mismatched collective sequences) makes the waiters fail with a message
// naming it instead of hanging. Agreeing arguments are checked: a mismatched
// collective kind, dtype, op, count, root or counts vector throws
// RuntimeFault on every member.
//
// Waiting: a rank spins on the group's generation counter, then sleeps on a
// condition variable. The spin budget adapts (doubled after a spin that paid
// off, halved after a wasted one) up to a limit that is 0 when there are more
// ranks than cores: there a spin steals the core from the awaited rank.
// Large collectives (>= 4 MiB of output per rank) write with non-temporal
// stores.
//
// All state lives in the ThreadWorld; no globals. Communicators returned by
// group() stay valid for the ThreadWorld's lifetime and are meant to be used
// by the thread of their world rank inside run().
#pragma once

#include "runtime/Communicator.h"

#include <functional>
#include <memory>
#include <vector>

namespace dt {

class ThreadWorld {
public:
  explicit ThreadWorld(int numRanks);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld &) = delete;
  ThreadWorld &operator=(const ThreadWorld &) = delete;

  int size() const;
  /// Communicator for world rank `worldRank` over the group `members` (sorted world ranks, must
  /// contain worldRank). All members asking for the same `members` list share one group; cached,
  /// so asking again is cheap. Extension: `members` may be in any order of distinct world ranks;
  /// group rank i is then members[i] (meshAxisGroup() of a mesh with a permuted device list),
  /// and lists of the same ranks in different orders are different groups.
  Communicator &group(int worldRank, const std::vector<int> &members);
  /// The group of all ranks 0..size-1.
  Communicator &world(int worldRank);
  /// Runs fn(rank) for every rank and returns when all have returned: rank 0 on the calling
  /// thread, ranks 1..n-1 on the world's worker threads, started by the first run() and kept
  /// (asleep between runs, after a short spin) until the world is destroyed; so a world made
  /// once and run many times starts its ranks in about a microsecond. If any rank throws, the
  /// others blocked in a collective wake up and abort (never deadlock); run() then throws
  /// RuntimeFault("rank 3 failed: <what>") for the first failure.
  void run(const std::function<void(int rank)> &fn);

  /// Spin iterations before a waiting rank sleeps (default: chosen from the number of ranks
  /// and hardware threads). For benchmarks and tuning.
  void setSpinLimit(int iterations);
  /// The world rank of thread rank 0, when this world is one process's share
  /// of a larger one (runtime/HybridComm.h): messages then name world ranks.
  void setRankBase(int base);

  struct Impl; ///< shared state of the world (public only for the .cpp's helper classes)

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace dt
