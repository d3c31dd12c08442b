// This file implements the multi-process communicator: one process per rank,
// started by a standard launcher (`mpirun -np 6 dtensorc run prog.dt`), with
// collectives through Open MPI (no home-made network protocol). MpiWorld
// initializes MPI once per process and hands out an MpiComm for the world and
// for each mesh-axis group (MPI_Comm_create_group). The header needs no <mpi.h>: MPI
// types stay in MpiComm.cpp, so every target can include it; when dtensor is
// built without MPI (DT_HAVE_MPI unset), MpiWorld's constructor throws
// RuntimeFault and MpiWorld::available() is false.
//
// Mapping onto MPI: allReduce -> MPI_Allreduce (MPI_IN_PLACE when send ==
// recv), allGatherV -> MPI_Allgatherv, reduceScatterV -> MPI_Reduce_scatter,
// allToAllV -> MPI_Alltoallv, broadcast -> MPI_Bcast, barrier -> MPI_Barrier.
// Datatypes: f32 MPI_FLOAT, f64 MPI_DOUBLE, i32 MPI_INT32_T, i64 MPI_INT64_T,
// bool MPI_UINT8_T (sum/max -> MPI_BOR, min -> MPI_BAND). Avg is MPI_SUM then
// a local division by the group size. Overlapping send/recv buffers other than
// MPI's in-place forms go through a temporary copy.
//
// Limits: MPI-3 counts and displacements are `int`; a collective whose counts
// or offsets exceed INT_MAX elements throws RuntimeFault (split it). Unlike
// ThreadComm, MPI's reduction order is the library's (deterministic for a fixed
// process count, but not necessarily rank order). Errors returned by MPI
// (MPI_ERRORS_RETURN is installed) become RuntimeFault with MPI's message.
//
// Faults: every collective is MPI's non-blocking form, polled under the
// world's FaultWatch (FaultWatch.h): a peer on this node that exits is
// reported within 100 ms, and a wait past the fault timeout ends the job with
// one line naming the peer, the collective and the source line.
#pragma once

#include "runtime/Communicator.h"
#include "runtime/FaultWatch.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace dt {

class MpiSites;

/// A Communicator over one MPI communicator.
class MpiComm final : public Communicator {
public:
  struct Handle; ///< wraps the MPI_Comm (defined in MpiComm.cpp)
  explicit MpiComm(std::unique_ptr<Handle> h);
  ~MpiComm() override;
  MpiComm(const MpiComm &) = delete;
  MpiComm &operator=(const MpiComm &) = delete;

  int rank() const override;
  int size() const override;
  void allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) override;
  void allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                  DType dtype) override;
  void reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts, DType dtype,
                      ReduceOp op) override;
  void allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                 const std::vector<int64_t> &recvCounts, DType dtype) override;
  void broadcast(void *buf, int64_t count, DType dtype, int root) override;
  void barrier() override;

  /// Address of the underlying MPI_Comm (cast to MPI_Comm *), for code that calls MPI directly.
  void *nativeHandle();

private:
  std::unique_ptr<Handle> h_;
  int rank_ = 0, size_ = 1;
};

/// The MPI process world. Create one per process (it calls MPI_Init_thread unless MPI is already
/// initialized, and MPI_Finalize in its destructor when it initialized MPI).
class MpiWorld {
public:
  /// argc/argv may be null (MPI does not need them with Open MPI's launcher).
  /// `threads`: several threads of this process will call MPI at once (the
  /// hybrid backend, runtime/HybridComm.h): MPI_THREAD_MULTIPLE is required,
  /// and a library without it is a RuntimeFault saying so.
  /// `faultTimeout`: how long MPI_Init may wait for the other processes
  /// (a peer stopped while starting) before the watchdog ends the job; later
  /// waits take the watch's timeout (watch().setTimeout).
  explicit MpiWorld(int *argc = nullptr, char ***argv = nullptr, bool threads = false,
                    double faultTimeout = 60);
  ~MpiWorld();
  MpiWorld(const MpiWorld &) = delete;
  MpiWorld &operator=(const MpiWorld &) = delete;

  /// Whether dtensor was built with MPI support.
  static bool available();
  int rank() const; ///< this process's world rank
  int size() const;
  Communicator &world();
  /// Fault detection of this process (FaultWatch.h): every collective waits
  /// under it (timeout, failed peers); the backend sets its timeout and site.
  FaultWatch &watch();
  /// The group `members` (world ranks in group-rank order; must contain this rank), made with
  /// MPI_Comm_create_group. Collective over the MEMBERS the first time (ranks off the group
  /// take no part, so a mesh that does not cover the world works). Cached: later calls with
  /// the same list are local, which stays consistent because every rank of an SPMD program asks
  /// for its groups in the same order.
  Communicator &group(const std::vector<int> &members);
  /// Splits the world into the disjoint groups of `groups` (every rank passes the same list; ranks
  /// in no group take part and get nullptr). Collective over the world the first time; cached.
  Communicator *partition(const std::vector<std::vector<int>> &groups);
  /// A communicator over the processes `processes` (process ranks, in that
  /// order) for the group named `label` (the hybrid group's world ranks):
  /// distinct labels get distinct communicators even when they span the same
  /// processes, because each is driven by its own thread. Collective over
  /// those processes the first time (one thread per process asks for a
  /// label); thread-safe; cached.
  Communicator &processGroup(const std::vector<int> &label, const std::vector<int> &processes);
  /// Whether processGroup(label, ...) was made already.
  bool hasProcessGroup(const std::vector<int> &label);

private:
  Communicator *split(int color, int key, const std::vector<int> &label);
  Communicator *create(const std::vector<int> &members);
  std::unique_ptr<MpiComm> createComm(const std::vector<int> &members, int tag);
  /// Maps the node's table of where each process waits (FaultWatch::SiteSlot).
  void mapSiteTable(uint64_t node);
  void *sites_ = nullptr; ///< the mapped site table (null: none)
  size_t sitesBytes_ = 0;
  int tagUpperBound_ = 32767; ///< MPI_TAG_UB (at least 32767 by the standard)
  std::mutex mu_;             ///< guards processGroups_ (threads of the hybrid backend)
  std::map<std::vector<int>, std::unique_ptr<MpiComm>> processGroups_;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<FaultWatch> watch_;
  std::unique_ptr<MpiSites> remote_; ///< asks processes on other nodes (MpiSites.h)
  std::unique_ptr<MpiComm> world_;
  std::map<std::vector<int>, std::unique_ptr<MpiComm>> groups_;
  std::map<std::vector<std::vector<int>>, Communicator *> partitions_;
};

} // namespace dt
