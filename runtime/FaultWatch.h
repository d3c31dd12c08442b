// This file implements fault detection for runs of one rank per process
// (runtime/MpiBackend.h): a rank that exits, crashes or stops must make every
// other rank stop with one line that names it, the collective and the source
// line — never a silent hang.
//
//  * A collective waits by polling its non-blocking MPI request
//    (MpiComm.cpp), and every 100 ms asks the FaultWatch about its peers:
//    a peer process on this node that exited is reported at once; when the
//    wait passes the fault timeout (`--fault-timeout`, default 60 s) the
//    report names a peer that is stopped (SIGSTOP, a debugger), or, when
//    every process on this node is alive, where the others wait (each
//    process publishes its collective and source line in a node-shared
//    table while it waits): ranks waiting in different collectives (a
//    deadlock) or outside any are named. Processes on other nodes are asked
//    over MPI (runtime/MpiSites.h): they answer where they wait, and one
//    that does not answer (stopped, or computing) is named with its host.
//    Every process ends its run in a watched barrier (kEndOfRun), so a peer
//    that ended early is named "at the end of its program".
//    Reporting writes one line on stderr and aborts the job (MPI_Abort): the
//    launcher then stops every process, the stopped one included.
//  * MPI calls that cannot be polled (making a group's communicator, the
//    start-up exchange) run between block() and unblock(), and a watchdog
//    thread watches them: a peer on this node that exits is reported within
//    100 ms, and a call that lasts past the fault timeout is reported like a
//    timed-out wait (naming a stopped peer, or where the others wait). The
//    watchdog also backs up the polled waits: one that has not reported 3 s
//    after its timeout (stuck inside MPI itself) is reported the same way.
//  * A rank that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) writes
//    one line naming its signal and the instruction it was at, then dies of
//    the signal; the launcher notices and stops the others.
//  * A rank stopped by the launcher (SIGTERM, after another rank failed)
//    writes one line naming where it was and which peer on this node is gone
//    or stopped, then exits 1.
//
// Peers are identified by pid and node (exchanged once at start-up). A peer
// on another node cannot be inspected from here: a timed-out wait asks it
// through MPI where it waits (runtime/MpiSites.h), and one that does not
// answer is named as stopped or computing; one that exited is reported by
// the launcher and by its own node's ranks. `DT_FAULT_PRETEND_NODES=1` (for
// tests) puts every process on a node of its own, so that one machine
// exercises the reports of a multi-node job.
//
// Signal handlers need the watch without a Session: the one FaultWatch of a
// process registers itself in a process-wide pointer (signals are
// process-wide, like MPI's world). Everything a handler runs is
// async-signal-safe: fixed buffers, write(2), kill(2), open/read of /proc.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dt {

class Device;
class SourceManager;

/// One peer process of a multi-process run, as this process sees it.
struct PeerProcess {
  int pid = 0;
  bool sameNode = false; ///< on this node: its state can be read from /proc
  std::string host;      ///< its host name (for reports on other nodes)
};

class FaultWatch {
public:
  /// `rank`: this process's world rank (one rank per process).
  FaultWatch(int rank, double timeoutSeconds);
  ~FaultWatch();
  FaultWatch(const FaultWatch &) = delete;
  FaultWatch &operator=(const FaultWatch &) = delete;

  int rank() const { return rank_; }
  /// World ranks each process hosts (`dtensorc run --ranks-per-process K`):
  /// reports then name a process and its ranks ("process 1 (ranks 2-3)")
  /// instead of "rank 1". Process p hosts ranks p*K .. p*K+K-1.
  void setRanksPerProcess(int k) { perProcess_ = k < 1 ? 1 : k; }
  /// "rank 3", or "process 1 (ranks 2-3)" (the name of process `p`).
  std::string processName(int p) const;
  double timeout() const { return timeout_; }
  void setTimeout(double seconds) { timeout_ = seconds; }
  /// World rank -> process, from the start-up exchange.
  void setPeers(std::vector<PeerProcess> peers) { peers_ = std::move(peers); }
  const std::vector<PeerProcess> &peers() const { return peers_; }
  /// Source file names for the reports (the Session's; may stay null).
  void setSources(const SourceManager *sm) { sources_ = sm; }
  /// The rank's Device, whose site() says which instruction it is at.
  void setDevice(const Device *d) { device_.store(d); }
  /// Ends the job with `code` (MPI_Abort); set by the MPI world.
  void setAbort(void (*abortJob)(int code)) { abort_ = abortJob; }

  /// The collective this rank waits in (a Communicator method name, static
  /// storage), or null between collectives. enter() also publishes where()
  /// in this process's slot of the node's site table (below); the waits call
  /// it only once a collective did not complete at once.
  void enter(const char *collective);
  void leave();
  /// Around a blocking MPI call that cannot be polled (`what`: the call, as
  /// "MPI_Comm_create_group"): the watchdog reports it when it lasts past
  /// the timeout or a peer on this node exits meanwhile (see above).
  void block(const char *what);
  void unblock() { leave(); }
  /// Starts the watchdog thread (stopped by the destructor).
  /// `abortFromAnyThread`: the MPI library lets the watchdog thread call
  /// MPI_Abort (MPI_THREAD_MULTIPLE); otherwise it ends this process with
  /// _exit(1) after its report, and the launcher stops the others.
  void startWatchdog(bool abortFromAnyThread);
  /// The name enter() takes for the barrier every process of a job waits in
  /// after its program (MpiWorld's destructor): where() then says "at the
  /// end of its program", so a peer that returned early is named as such.
  static const char *const kEndOfRun;
  /// The name block() takes for the exchange every process makes at
  /// start-up (MpiWorld's constructor): where() says "at start-up".
  static const char *const kStartUp;
  /// The name block() takes around MPI_Init, which waits for every process
  /// of the job to start (no peer is known yet).
  static const char *const kInit;

  /// Where each process of this node waits: one slot per world process in
  /// shared memory that MpiWorld maps at start-up, holding where() while the
  /// process waits in a collective (empty otherwise; a seqlock). A timeout
  /// report reads the other processes' slots, so a deadlock — ranks waiting
  /// in different collectives — names the rank and the collective it waits
  /// in instead of "no answer".
  struct SiteSlot {
    std::atomic<uint32_t> seq;
    char text[244];
  };
  /// `table` holds `count` slots, one per process, then one more: the
  /// node's report flag. The first process of the node to report a fault
  /// sets it, and the others end without a line of their own (a killed rank
  /// of four was reported by each of the other three; a stopped rank, once
  /// continued and stopped by the launcher, blamed the rank that reported
  /// it). A crash's own line is always written.
  void setSiteTable(SiteSlot *table, size_t count) {
    sites_ = table;
    siteCount_ = count;
    reported_ = table ? &table[count].seq : nullptr;
  }
  bool hasSiteTable() const { return sites_ != nullptr; }
  /// The other processes of this node among `members` (all when null) and
  /// where they wait: "rank 1 waits in barrier ..., rank 2 is outside any
  /// collective"; `differ`: some process waits elsewhere than this one or is
  /// outside any collective. Empty when there is no table or no such peer.
  std::string peerSites(const std::vector<int> *members, bool *differ) const;

  /// The first peer among world ranks `members` (all when null) that exited,
  /// or also one that is stopped: "rank 1 (pid 42) exited"; empty when none.
  std::string failedPeer(const std::vector<int> *members, bool stoppedToo) const;
  /// Where this rank is: "in allReduce for `all_reduce` at f.dt:7:3".
  std::string where() const;

  /// Writes "dtensorc: rank R: `what`" on stderr, then ends the job; never
  /// returns. Only the first caller reports.
  [[noreturn]] void fail(const std::string &what);

  /// Installs the crash and SIGTERM handlers (once per process).
  void installSignalHandlers();

  /// For the signal handlers: the process's watch (null when none).
  static FaultWatch *current();

  /// Async-signal-safe report pieces (fixed buffer, no allocation).
  struct Line {
    char buf[1536];
    size_t n = 0;
    void put(const char *s);
    void put(long long v);
  };
  void putWhere(Line &l) const;
  void putProcess(Line &l, int p) const;
  bool putFailedPeer(Line &l, const int *members, size_t count, bool stoppedToo) const;
  /// Every peer of this node that exited or is stopped, up to four: "rank 0
  /// (pid 41) exited, rank 1 (pid 42) is stopped"; false when none.
  bool putFailedPeers(Line &l) const;

private:
  int rank_;
  int perProcess_ = 1;
  double timeout_;
  std::vector<PeerProcess> peers_;
  const SourceManager *sources_ = nullptr;
  std::atomic<const Device *> device_{nullptr};
  std::atomic<const char *> collective_{nullptr};
  void (*abort_)(int) = nullptr;
  std::atomic<bool> failing_{false};
  SiteSlot *sites_ = nullptr;
  size_t siteCount_ = 0;
  std::atomic<uint32_t> *reported_ = nullptr; ///< the node's report flag (setSiteTable)
  /// Takes the node's report flag: true when no other process of this node
  /// reported first (or there is no table). Async-signal-safe.
  bool claimReport() {
    uint32_t none = 0;
    return !reported_ || reported_->compare_exchange_strong(none, 1);
  }
  std::mutex publishMu_; ///< hybrid runs: several leader threads publish

  // The watchdog (block(), startWatchdog()).
  std::atomic<int64_t> waitSince_{0}; ///< steady-clock ns when a wait began; 0: none
  std::atomic<bool> polled_{false};   ///< the wait polls (enter), or blocks (block)
  bool abortFromAnyThread_ = false;
  std::thread watchdog_;
  std::mutex dogMu_;
  std::condition_variable dogWake_;
  bool dogStop_ = false;
  void watchdogLoop();
  /// Writes "dtensorc: rank R: `what`" once (false when another report was first).
  bool report(const std::string &what);
  friend void faultSignal(int sig);
};

} // namespace dt
