// This file implements the question "where do you wait?" between processes on
// different nodes, for the fault reports of one rank per process
// (runtime/FaultWatch.h). On one node, each process publishes where it waits
// in a shared-memory table; a process on another node cannot be read that
// way, so it is asked through MPI instead:
//
//  * Every process waiting in a collective answers, every 100 ms of its wait
//    (serve()), the queries on a duplicate of MPI_COMM_WORLD kept for this
//    (tags kQuery and kAnswer, so no program message can match them) with its
//    FaultWatch::where().
//  * A process whose wait passed the fault timeout asks every process on
//    another node (ask()), answering the others' queries meanwhile, for at
//    most a short window. A process that answers says where it waits (a
//    deadlock names it, as the node table does); one that does not answer is
//    stopped, or computing outside any collective, and the report names it
//    with its pid and host.
//
// Internal to runtime/MpiComm.cpp (it needs <mpi.h>); built only with MPI.
#pragma once

#ifdef DT_HAVE_MPI

#include "runtime/FaultWatch.h"

#include <list>
#include <map>
#include <mpi.h>
#include <mutex>
#include <string>
#include <vector>

namespace dt {

class MpiSites {
public:
  /// Duplicates MPI_COMM_WORLD (collective over the world).
  /// Made on a copy of `world` (collective over it, as MPI_Comm_dup).
  explicit MpiSites(MPI_Comm world);
  ~MpiSites();
  MpiSites(const MpiSites &) = delete;
  MpiSites &operator=(const MpiSites &) = delete;

  /// The duplicate communicator (also the end-of-run barrier's, MpiComm.cpp).
  MPI_Comm comm() const { return comm_; }

  /// Answers the queries that arrived (a waiting process calls it every
  /// 100 ms); a no-op while another thread of this process asks or serves.
  void serve(const FaultWatch &w);

  /// What the processes on other nodes say: world rank -> where it waits,
  /// for those that answered within `windowSeconds`; `silent` gets those
  /// that did not. Asks nobody (and returns at once) when every process is
  /// on this node.
  std::map<int, std::string> ask(const FaultWatch &w, double windowSeconds,
                                 std::vector<int> *silent);

  /// ask()s, then adds the processes waiting elsewhere than this one to
  /// `sites` (the node table's list, FaultWatch::peerSites) and sets
  /// `differ`; `silent` gets those that did not answer. False when every
  /// process is on this node (nobody was asked).
  bool describe(const FaultWatch &w, std::vector<int> *silent, std::string *sites, bool *differ);
  /// "rank 3 (pid 4711 on host b) does not answer (...)" for `silent`.
  static std::string silentPeers(const FaultWatch &w, const std::vector<int> &silent);

private:
  void serveLocked(const FaultWatch &w);
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::mutex mu_;
  /// Answers in flight (the strings stay put while MPI sends them).
  std::list<std::pair<std::string, MPI_Request>> sends_;
};

} // namespace dt

#endif // DT_HAVE_MPI
