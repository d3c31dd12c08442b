// This file implements the communicators of `dtensorc run --ranks-per-process
// K` under mpirun: N processes, each hosting K world ranks as threads, so a
// run of N*K ranks has one MPI rank per node or socket and shared memory
// inside it (the layout NCCL and torchrun users know: processes between
// nodes, threads or devices within one).
//
// World rank w lives in process w / K as thread w % K. A group (a mesh axis's
// ranks, or the world) is split by process: the members in this process form
// a local group over the process's ThreadWorld (shared memory,
// runtime/ThreadComm.h), and the first local member of each process (in group
// order), its leader, talks to the other processes' leaders over one MPI
// communicator per group (runtime/MpiComm.h, MpiWorld::processGroup). Every
// collective is local step, leader step, local step:
//
//   allReduce       local all-reduce, leaders all-reduce, local broadcast
//   allGatherV      local all-gather into the process's segment, leaders
//                   all-gather the segments, local broadcast, each rank
//                   unpacks into group-rank order
//   reduceScatterV  local all-reduce of the whole vector, leaders
//                   reduce-scatter by process, local broadcast of the
//                   process's part, each rank keeps its block
//   allToAllV       ranks exchange their counts and send buffers locally,
//                   leaders exchange per-process bundles, local broadcast,
//                   each rank unpacks the blocks addressed to it
//   broadcast       root's process locally, leaders, then the other processes
//   barrier         local, leaders, local
//
// A group whose members all live in one process is the local group itself.
// Reductions combine within a process first, then across processes (MPI's
// order), so sums may differ from the thread mesh in the last bits, as
// with one rank per process. Faults: the leaders' MPI waits run under the
// process's FaultWatch, and a failing thread wakes the others through the
// ThreadWorld, so a dead peer process or rank never leaves a rank waiting.
//
// State: one HybridWorld per MpiBackend run; communicators are made per
// (thread, group) on first use and cached; no globals.
#pragma once

#include "runtime/Communicator.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace dt {

class MpiWorld;
class ThreadWorld;

/// Which process holds each member of a group, and each member's place in
/// its process's share of the group.
struct HybridLayout {
  std::vector<int> procIndex;            ///< per group rank: index into `processes`
  std::vector<int> localIndex;           ///< per group rank: index among its process's members
  std::vector<int> processes;            ///< process ranks, in order of first appearance
  std::vector<std::vector<int>> members; ///< per process index: group ranks, in order

  /// `members`: world ranks in group-rank order; `perProcess`: K.
  HybridLayout(const std::vector<int> &worldRanks, int perProcess);
};

/// The world of one process of a hybrid run: its K thread ranks and the MPI
/// world of the processes.
class HybridWorld {
public:
  /// `mpi`: this process's MPI world (initialized with threads); `threads`:
  /// the ThreadWorld of K ranks that runs this process's share.
  HybridWorld(MpiWorld &mpi, ThreadWorld &threads, int perProcess);
  ~HybridWorld();
  HybridWorld(const HybridWorld &) = delete;
  HybridWorld &operator=(const HybridWorld &) = delete;

  int perProcess() const { return perProcess_; }
  int size() const; ///< world ranks: processes * K
  /// The communicator of world rank `worldRank` (hosted here) over `members`
  /// (world ranks in group-rank order, containing it). Cached.
  Communicator &group(int worldRank, const std::vector<int> &members);
  Communicator &world(int worldRank);
  /// Creates, from one thread and in the order given, the MPI communicator
  /// between process leaders of each of `groups` (world-rank member lists)
  /// that spans processes and has a member here. Every process must pass the
  /// same list (Backend::prepareGroups): then each creation finds all its
  /// processes ready, where rank threads creating them lazily, each in its
  /// own order, could wait on each other forever.
  void prepare(const std::vector<std::vector<int>> &groups);
  /// Leader communicators made by prepare(), and made lazily by a rank
  /// thread for a group prepare() was not given (the risky path: `--stats`
  /// reports it).
  int preparedGroups() const { return prepared_; }
  int lateGroups() const { return late_; }

private:
  MpiWorld &mpi_;
  ThreadWorld &threads_;
  int perProcess_;
  std::vector<int> all_;
  int prepared_ = 0;
  std::atomic<int> late_{0};
  std::mutex mu_;
  std::map<std::pair<int, std::vector<int>>, std::unique_ptr<Communicator>> comms_;
};

} // namespace dt
