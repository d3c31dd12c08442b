// This file implements MpiComm and MpiWorld (see MpiComm.h) on Open MPI. When
// dtensor is built without MPI every entry point throws RuntimeFault instead.
#include "runtime/MpiComm.h"
#include "runtime/MpiSites.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#ifdef DT_HAVE_MPI
#include <mpi.h>
#endif

namespace dt {

#ifdef DT_HAVE_MPI

struct MpiComm::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false; ///< freed by the destructor (split communicators)
  /// NaN-propagating max/min on floats (MPI_MAX/MPI_MIN drop a NaN that is
  /// not in the first operand); created and freed with the communicator.
  MPI_Op nanMax = MPI_OP_NULL, nanMin = MPI_OP_NULL;
  /// bf16/f16 (sent as MPI_UINT16_T): sum/max/min, indexed [bf16 ? 0 : 1][op],
  /// combining in f32 and rounding once per step (Communicator.cpp).
  MPI_Op low[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                      {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
  FaultWatch *watch = nullptr; ///< the world's (null: wait without a deadline)
  MpiSites *remote = nullptr;  ///< the world's questions to other nodes (null: none)
  std::vector<int> members;    ///< world ranks, by group rank
};

namespace {

void check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RuntimeFault(std::string(what) + " failed: " + std::string(msg, len));
}

MPI_Datatype mpiType(DType t) {
  switch (t) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  case DType::Bool:
    return MPI_UINT8_T;
  case DType::BF16:
  case DType::F16:
    return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

/// The user functions of Handle::nanMax/nanMin: inout = in op inout with
/// the combine of Communicator.cpp (NaN-propagating); only float types reach them.
template <ReduceOp Op> void nanCombine(void *in, void *inout, int *len, MPI_Datatype *dt) {
  reduceInto(inout, in, *len, *dt == MPI_DOUBLE ? DType::F64 : DType::F32, Op);
}

/// The user functions of Handle::low: inout = in op inout on bf16/f16 bits.
template <DType D, ReduceOp Op> void lowCombine(void *in, void *inout, int *len, MPI_Datatype *) {
  reduceInto(inout, in, *len, D, Op);
}

MPI_Op mpiOp(const MpiComm::Handle &h, DType t, ReduceOp op) {
  checkReducible(t, op);
  if (isLowPrecision(t))
    return h.low[t == DType::BF16 ? 0 : 1][op == ReduceOp::Max ? 1 : op == ReduceOp::Min ? 2 : 0];
  if (t == DType::Bool)
    return op == ReduceOp::Min ? MPI_BAND : MPI_BOR;
  bool fl = t == DType::F32 || t == DType::F64;
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return MPI_SUM; // divided locally afterwards
  case ReduceOp::Max:
    return fl ? h.nanMax : MPI_MAX;
  case ReduceOp::Min:
    return fl ? h.nanMin : MPI_MIN;
  }
  return MPI_SUM;
}

/// MPI-3 counts are int: refuse what does not fit rather than truncate.
int toInt(int64_t v, const char *what) {
  if (v < 0)
    throw RuntimeFault(std::string(what) + ": negative count " + std::to_string(v));
  if (v > INT_MAX)
    throw RuntimeFault(std::string(what) + ": " + std::to_string(v) +
                       " elements exceed MPI's int counts; split the collective");
  return (int)v;
}

std::vector<int> toInts(const std::vector<int64_t> &v, const char *what) {
  std::vector<int> r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = toInt(v[i], what);
  return r;
}

std::vector<int> displacements(const std::vector<int64_t> &counts, const char *what) {
  std::vector<int64_t> off = countOffsets(counts);
  off.pop_back();
  return toInts(off, what);
}

bool overlaps(const void *a, size_t an, const void *b, size_t bn) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return an && bn && pa < pb + bn && pb < pa + an;
}

/// Waits for the non-blocking collective `req` (`what`: the Communicator
/// method). It polls, so that a peer that exited is reported within 100 ms
/// and a wait past the fault timeout ends the job with a report naming the
/// failed peer and this rank's collective and source line (FaultWatch.h);
/// after a short spin it yields the core (ranks may share cores).
void waitFor(MpiComm::Handle &h, MPI_Request &req, const char *what) {
  int done = 0;
  check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
  if (done)
    return;
  FaultWatch *w = h.watch;
  if (w)
    w->enter(what);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point next = start + std::chrono::milliseconds(100);
  for (unsigned spins = 1; !done; ++spins) {
    if (spins > 64)
      sched_yield();
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done || !w || (spins & 15))
      continue;
    Clock::time_point now = Clock::now();
    if (now < next)
      continue;
    next = now + std::chrono::milliseconds(100);
    if (h.remote)
      h.remote->serve(*w);
    std::string me = w->processName(w->rank());
    std::string peer = w->failedPeer(&h.members, false);
    if (!peer.empty())
      w->fail(peer + " while " + me + " waited " + w->where());
    double waited = std::chrono::duration<double>(now - start).count();
    if (waited >= w->timeout()) {
      peer = w->failedPeer(&h.members, true);
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", w->timeout());
      std::string waitedLine = me + " waited " + secs + " s " + w->where();
      if (!peer.empty())
        w->fail(peer + ": " + waitedLine);
      // Every process of this node is alive: say where the others wait, on
      // this node from the site table, on the others from their answers.
      bool differ = false;
      std::string sites = w->peerSites(nullptr, &differ);
      std::vector<int> silent;
      bool remoteDiffer = false;
      bool asked = h.remote && h.remote->describe(*w, &silent, &sites, &remoteDiffer);
      if (!silent.empty())
        w->fail(MpiSites::silentPeers(*w, silent) + ": " + waitedLine +
                (sites.empty() ? "" : "; elsewhere: " + sites));
      if (differ || remoteDiffer)
        w->fail("no answer: " + waitedLine + "; the ranks wait in different places (a deadlock, " +
                "or a rank computing longer than --fault-timeout): " + sites);
      w->fail("no answer: " + waitedLine + " (every process of its group " +
              (asked ? "is alive and waits there too, on this node and the others"
                     : std::string("on this node is alive") +
                           (w->hasSiteTable() ? " and waits there too" : "") +
                           ": a deadlock, a rank on another node that stopped, or one computing "
                           "longer than --fault-timeout") +
              ")");
    }
  }
  if (w)
    w->leave();
}

/// Runs a blocking MPI call that cannot be polled under the watchdog
/// (FaultWatch::block): a peer that exits or stops meanwhile is reported.
struct Blocked {
  FaultWatch *w;
  Blocked(FaultWatch *watch, const char *what) : w(watch) {
    if (w)
      w->block(what);
  }
  ~Blocked() {
    if (w)
      w->unblock();
  }
  Blocked(const Blocked &) = delete;
  Blocked &operator=(const Blocked &) = delete;
};

void checkCounts(const std::vector<int64_t> &counts, int size, const char *what) {
  if ((int)counts.size() != size)
    throw RuntimeFault(std::string(what) + ": " + std::to_string(counts.size()) +
                       " counts for a group of " + std::to_string(size));
}

} // namespace

MpiComm::MpiComm(std::unique_ptr<Handle> h) : h_(std::move(h)) {
  check(MPI_Comm_rank(h_->comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(h_->comm, &size_), "MPI_Comm_size");
  check(MPI_Op_create(&nanCombine<ReduceOp::Max>, 1, &h_->nanMax), "MPI_Op_create");
  check(MPI_Op_create(&nanCombine<ReduceOp::Min>, 1, &h_->nanMin), "MPI_Op_create");
  MPI_User_function *low[2][3] = {
      {&lowCombine<DType::BF16, ReduceOp::Sum>, &lowCombine<DType::BF16, ReduceOp::Max>,
       &lowCombine<DType::BF16, ReduceOp::Min>},
      {&lowCombine<DType::F16, ReduceOp::Sum>, &lowCombine<DType::F16, ReduceOp::Max>,
       &lowCombine<DType::F16, ReduceOp::Min>}};
  for (int d = 0; d < 2; ++d)
    for (int o = 0; o < 3; ++o)
      check(MPI_Op_create(low[d][o], 1, &h_->low[d][o]), "MPI_Op_create");
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  for (MPI_Op *op : {&h_->nanMax, &h_->nanMin})
    if (*op != MPI_OP_NULL)
      MPI_Op_free(op);
  for (auto &row : h_->low)
    for (MPI_Op &op : row)
      if (op != MPI_OP_NULL)
        MPI_Op_free(&op);
  if (h_->owned)
    MPI_Comm_free(&h_->comm);
}

int MpiComm::rank() const { return rank_; }
int MpiComm::size() const { return size_; }
void *MpiComm::nativeHandle() { return &h_->comm; }

void MpiComm::allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) {
  MPI_Op mop = mpiOp(*h_, dtype, op);
  int n = toInt(count, "allReduce");
  size_t bytes = (size_t)count * dtypeSize(dtype);
  std::vector<unsigned char> staged;
  if (send != recv && overlaps(send, bytes, recv, bytes)) {
    staged.assign((const unsigned char *)send, (const unsigned char *)send + bytes);
    send = staged.data();
  }
  MPI_Request req;
  check(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, n, mpiType(dtype), mop, h_->comm,
                       &req),
        "MPI_Iallreduce");
  waitFor(*h_, req, "allReduce");
  finishAvg(recv, count, dtype, op, size_);
}

void MpiComm::allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                         DType dtype) {
  checkCounts(counts, size_, "allGatherV");
  std::vector<int> c = toInts(counts, "allGatherV"), d = displacements(counts, "allGatherV");
  const size_t es = (size_t)dtypeSize(dtype);
  auto *dst = static_cast<unsigned char *>(recv);
  const void *mine = dst + (size_t)d[rank_] * es;
  std::vector<unsigned char> staged;
  if (send != mine && overlaps(send, c[rank_] * es, recv, totalCount(counts) * es)) {
    staged.assign((const unsigned char *)send, (const unsigned char *)send + c[rank_] * es);
    send = staged.data();
  }
  MPI_Request req;
  check(MPI_Iallgatherv(send == mine ? MPI_IN_PLACE : send, c[rank_], mpiType(dtype), recv,
                        c.data(), d.data(), mpiType(dtype), h_->comm, &req),
        "MPI_Iallgatherv");
  waitFor(*h_, req, "allGatherV");
}

void MpiComm::reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts,
                             DType dtype, ReduceOp op) {
  checkCounts(counts, size_, "reduceScatterV");
  MPI_Op mop = mpiOp(*h_, dtype, op);
  std::vector<int> c = toInts(counts, "reduceScatterV");
  displacements(counts, "reduceScatterV"); // the offsets must fit in int too
  const size_t es = (size_t)dtypeSize(dtype), myBytes = (size_t)c[rank_] * es;
  // MPI_IN_PLACE means "input in recv, result at its start": exactly send == recv. Any other
  // overlap reduces into a temporary.
  std::vector<unsigned char> out;
  void *dst = recv;
  if (send != recv && overlaps(recv, myBytes, send, totalCount(counts) * es)) {
    out.resize(myBytes);
    dst = out.data();
  }
  MPI_Request req;
  check(MPI_Ireduce_scatter(send == recv ? MPI_IN_PLACE : send, dst, c.data(), mpiType(dtype), mop,
                            h_->comm, &req),
        "MPI_Ireduce_scatter");
  waitFor(*h_, req, "reduceScatterV");
  if (dst != recv && myBytes)
    std::memcpy(recv, dst, myBytes);
  finishAvg(recv, counts[rank_], dtype, op, size_);
}

void MpiComm::allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                        const std::vector<int64_t> &recvCounts, DType dtype) {
  checkCounts(sendCounts, size_, "allToAllV");
  checkCounts(recvCounts, size_, "allToAllV");
  std::vector<int> sc = toInts(sendCounts, "allToAllV"), rc = toInts(recvCounts, "allToAllV");
  std::vector<int> sd = displacements(sendCounts, "allToAllV"),
                   rd = displacements(recvCounts, "allToAllV");
  const size_t es = (size_t)dtypeSize(dtype);
  const size_t sendBytes = totalCount(sendCounts) * es, recvBytes = totalCount(recvCounts) * es;
  std::vector<unsigned char> staged;
  if (overlaps(send, sendBytes, recv, recvBytes)) {
    staged.assign((const unsigned char *)send, (const unsigned char *)send + sendBytes);
    send = staged.data();
  }
  MPI_Datatype t = mpiType(dtype);
  MPI_Request req;
  check(
      MPI_Ialltoallv(send, sc.data(), sd.data(), t, recv, rc.data(), rd.data(), t, h_->comm, &req),
      "MPI_Ialltoallv");
  waitFor(*h_, req, "allToAllV");
}

void MpiComm::broadcast(void *buf, int64_t count, DType dtype, int root) {
  if (root < 0 || root >= size_)
    throw RuntimeFault("broadcast: root " + std::to_string(root) + " outside a group of " +
                       std::to_string(size_));
  MPI_Request req;
  check(MPI_Ibcast(buf, toInt(count, "broadcast"), mpiType(dtype), root, h_->comm, &req),
        "MPI_Ibcast");
  waitFor(*h_, req, "broadcast");
}

void MpiComm::barrier() {
  MPI_Request req;
  check(MPI_Ibarrier(h_->comm, &req), "MPI_Ibarrier");
  waitFor(*h_, req, "barrier");
}

bool MpiWorld::available() { return true; }

namespace {
/// MPI's start and end are the process's, not a world's (MPI cannot start
/// again once finalized): a world that starts MPI has it finalized at the
/// process's exit, so a host program's next mpi session can still run after
/// the first one ends. The lock keeps two worlds made at once on two threads
/// from both starting it.
std::mutex &mpiStartLock() {
  static std::mutex m;
  return m;
}
void finalizeAtExit() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    });
  });
}
} // namespace

/// The MPI_Comm of a communicator (a world's own copy of MPI_COMM_WORLD).
static MPI_Comm commOf(MpiComm &c) { return *static_cast<MPI_Comm *>(c.nativeHandle()); }

MpiWorld::MpiWorld(int *argc, char ***argv, bool threads, double faultTimeout) {
  std::unique_lock<std::mutex> startLock(mpiStartLock());
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    throw RuntimeFault("MpiWorld: MPI was already finalized in this process");
  if (!initialized) {
    // MPI_Init waits for every process of the job: one stopped while it
    // starts would hold the others forever. The launcher's rank names this
    // process; no peer is known yet, so a report says where it waits.
    int envRank = -1;
    for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
      if (const char *v = std::getenv(var)) {
        envRank = std::atoi(v);
        break;
      }
    FaultWatch starting(envRank, faultTimeout);
    starting.startWatchdog(false); // no MPI_Abort before MPI_Init returns
    int provided = 0;
    {
      starting.block(FaultWatch::kInit);
      int rc = MPI_Init_thread(argc, argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                               &provided);
      starting.unblock();
      check(rc, "MPI_Init_thread");
    }
    finalizeAtExit();
  }
  startLock.unlock();
  if (threads) {
    int level = 0;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
      throw RuntimeFault("--ranks-per-process: this MPI library does not support "
                         "MPI_THREAD_MULTIPLE (several ranks per process need it; run one rank "
                         "per process)");
  }
  {
    void *ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    if (found && ub && *(int *)ub > 0)
      tagUpperBound_ = *(int *)ub;
  }
  // Report errors as RuntimeFault instead of aborting the job; split communicators inherit it.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // This world's own copy of MPI_COMM_WORLD, which every collective and
  // group of it goes through: two worlds of one process (two embedded
  // sessions, made in the same order on every process) never match each
  // other's messages, even when their calls run at once.
  auto h = std::make_unique<MpiComm::Handle>();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &h->comm), "MPI_Comm_dup");
  h->owned = true;
  MpiComm::Handle &wh = *h;
  world_ = std::make_unique<MpiComm>(std::move(h));
  rank_ = world_->rank();
  size_ = world_->size();
  // Every process's pid and node, for the fault reports (FaultWatch.h).
  watch_ = std::make_unique<FaultWatch>(rank_, faultTimeout);
  watch_->setAbort([](int code) { MPI_Abort(MPI_COMM_WORLD, code); });
  {
    int level = 0;
    MPI_Query_thread(&level);
    watch_->startWatchdog(level == MPI_THREAD_MULTIPLE);
  }
  constexpr int kHost = 64; // the host name, truncated, for the reports
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  uint64_t node = 1469598103934665603ull;
  for (const char *p = host; *p; ++p)
    node = (node ^ (unsigned char)*p) * 1099511628211ull;
  const char *pretend = std::getenv("DT_FAULT_PRETEND_NODES");
  if (pretend && std::strcmp(pretend, "1") == 0)
    node = (node ^ (uint64_t)(rank_ + 1)) * 1099511628211ull; // a node per process (tests)
  int64_t mine[2 + kHost / 8] = {(int64_t)getpid(), (int64_t)node};
  std::memcpy(&mine[2], host, kHost - 1);
  const int words = 2 + kHost / 8;
  std::vector<int64_t> all(words * (size_t)size_);
  Blocked blocked(watch_.get(), FaultWatch::kStartUp);
  check(MPI_Allgather(mine, words, MPI_INT64_T, all.data(), words, MPI_INT64_T, commOf(*world_)),
        "MPI_Allgather");
  std::vector<PeerProcess> peers(size_);
  for (int r = 0; r < size_; ++r) {
    const int64_t *o = &all[(size_t)words * r];
    peers[r].pid = (int)o[0];
    peers[r].sameNode = o[1] == (int64_t)node;
    const char *h = reinterpret_cast<const char *>(&o[2]);
    peers[r].host.assign(h, strnlen(h, kHost - 1));
    wh.members.push_back(r);
  }
  watch_->setPeers(std::move(peers));
  wh.watch = watch_.get();
  remote_ = std::make_unique<MpiSites>(commOf(*world_));
  wh.remote = remote_.get();
  mapSiteTable(node);
}

void MpiWorld::mapSiteTable(uint64_t node) {
  // The lowest world rank of this node creates the table, every process of
  // the node maps it, then the creator unlinks the name (nothing is left
  // behind, even after a crash). Any failure leaves the reports without it.
  int leader = rank_;
  std::vector<int64_t> nodes(size_);
  int64_t mine = (int64_t)node;
  MPI_Allgather(&mine, 1, MPI_INT64_T, nodes.data(), 1, MPI_INT64_T, commOf(*world_));
  for (int r = 0; r < size_; ++r)
    if (nodes[r] == mine) {
      leader = r;
      break;
    }
  int leaderPid = rank_ == leader ? (int)getpid() : 0;
  std::vector<int> pids(size_);
  MPI_Allgather(&leaderPid, 1, MPI_INT, pids.data(), 1, MPI_INT, commOf(*world_));
  const std::string name = "/dtensor-sites-" + std::to_string(pids[leader]);
  // One slot per process, then the node's report flag (FaultWatch.h).
  const size_t bytes = sizeof(FaultWatch::SiteSlot) * ((size_t)size_ + 1);
  int fd = -1;
  if (rank_ == leader) {
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0 && ftruncate(fd, (off_t)bytes) != 0) {
      close(fd);
      fd = -1;
    }
  }
  MPI_Barrier(commOf(*world_));
  if (rank_ != leader)
    fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd >= 0) {
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) {
      sites_ = p;
      sitesBytes_ = bytes;
      watch_->setSiteTable(static_cast<FaultWatch::SiteSlot *>(p), (size_t)size_);
    }
  }
  MPI_Barrier(commOf(*world_));
  if (rank_ == leader)
    shm_unlink(name.c_str());
}

MpiWorld::~MpiWorld() {
  // Every process waits for the others to end their programs, under the
  // fault watch: a peer stopped or stuck after this one's last collective is
  // reported instead of hanging in MPI_Finalize, and a peer still waiting in
  // a collective learns that this process has ended (FaultWatch::kEndOfRun).
  if (size_ > 1 && world_ && watch_ && remote_) {
    try {
      // On the duplicate communicator: a barrier on the world's could match a
      // collective that a peer still waits in.
      MpiComm::Handle h;
      h.comm = remote_->comm();
      h.watch = watch_.get();
      h.remote = remote_.get();
      for (int r = 0; r < size_; ++r)
        h.members.push_back(r);
      MPI_Request req;
      check(MPI_Ibarrier(h.comm, &req), "MPI_Ibarrier");
      waitFor(h, req, FaultWatch::kEndOfRun);
    } catch (const std::exception &) {
      // MPI failed at exit: nothing is left to report it to.
    }
  }
  if (watch_)
    watch_->setSiteTable(nullptr, 0);
  if (sites_)
    munmap(sites_, sitesBytes_);
  processGroups_.clear();
  partitions_.clear();
  groups_.clear();
  world_.reset();
  remote_.reset();
  watch_.reset();
  // MPI itself ends at the process's exit (finalizeAtExit).
}

Communicator *MpiWorld::split(int color, int key, const std::vector<int> &label) {
  auto h = std::make_unique<MpiComm::Handle>();
  {
    Blocked blocked(watch_.get(), "MPI_Comm_split");
    check(MPI_Comm_split(commOf(*world_), color < 0 ? MPI_UNDEFINED : color, key, &h->comm),
          "MPI_Comm_split");
  }
  if (h->comm == MPI_COMM_NULL)
    return nullptr;
  h->owned = true;
  h->watch = watch_.get();
  h->remote = remote_.get();
  if (label.size() > 1)
    h->members.assign(label.begin() + 1, label.end());
  auto &slot = groups_[label];
  slot = std::make_unique<MpiComm>(std::move(h));
  return slot.get();
}

/// A communicator over the world ranks `members` (in that order), made by
/// MPI_Comm_create_group: collective over the members only, so ranks off the
/// group never take part. `tag` keeps creations that run at once apart.
std::unique_ptr<MpiComm> MpiWorld::createComm(const std::vector<int> &members, int tag) {
  MPI_Group worldGroup, g;
  check(MPI_Comm_group(commOf(*world_), &worldGroup), "MPI_Comm_group");
  check(MPI_Group_incl(worldGroup, (int)members.size(), members.data(), &g), "MPI_Group_incl");
  auto h = std::make_unique<MpiComm::Handle>();
  int rc;
  {
    Blocked blocked(watch_.get(), "MPI_Comm_create_group");
    rc = MPI_Comm_create_group(commOf(*world_), g, tag, &h->comm);
  }
  MPI_Group_free(&g);
  MPI_Group_free(&worldGroup);
  check(rc, "MPI_Comm_create_group");
  h->owned = true;
  h->watch = watch_.get();
  h->remote = remote_.get();
  h->members = members;
  return std::make_unique<MpiComm>(std::move(h));
}

Communicator *MpiWorld::create(const std::vector<int> &members) {
  // The tag separates groups created concurrently by overlapping member sets.
  uint32_t tag = 2166136261u;
  for (int m : members)
    tag = (tag ^ (uint32_t)m) * 16777619u;
  auto &slot = groups_[members];
  slot = createComm(members, (int)(tag & 0x7fff));
  return slot.get();
}

Communicator &MpiWorld::processGroup(const std::vector<int> &label,
                                     const std::vector<int> &processes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = processGroups_.find(label);
    if (it != processGroups_.end())
      return *it->second;
  }
  // Created outside the lock: it waits for the other processes, whose
  // threads may first need this process to create another group. The tag
  // (from the label: every process computes the same one) keeps creations
  // that run at once in several threads apart.
  uint64_t hash = 1469598103934665603ull;
  for (int m : label)
    hash = (hash ^ (uint32_t)m) * 1099511628211ull;
  auto comm = createComm(processes, (int)(hash % ((uint64_t)tagUpperBound_ + 1)));
  std::lock_guard<std::mutex> lk(mu_);
  auto &slot = processGroups_[label];
  slot = std::move(comm);
  return *slot;
}

bool MpiWorld::hasProcessGroup(const std::vector<int> &label) {
  std::lock_guard<std::mutex> lk(mu_);
  return processGroups_.count(label) != 0;
}

#else // !DT_HAVE_MPI

struct MpiComm::Handle {};
class MpiSites {};

namespace {
[[noreturn]] void noMpi() {
  throw RuntimeFault("dtensor was built without MPI (install libopenmpi-dev and reconfigure)");
}
} // namespace

MpiComm::MpiComm(std::unique_ptr<Handle> h) : h_(std::move(h)) { noMpi(); }
MpiComm::~MpiComm() = default;
int MpiComm::rank() const { return rank_; }
int MpiComm::size() const { return size_; }
void *MpiComm::nativeHandle() { return nullptr; }
void MpiComm::allReduce(const void *, void *, int64_t, DType, ReduceOp) { noMpi(); }
void MpiComm::allGatherV(const void *, void *, const std::vector<int64_t> &, DType) { noMpi(); }
void MpiComm::reduceScatterV(const void *, void *, const std::vector<int64_t> &, DType, ReduceOp) {
  noMpi();
}
void MpiComm::allToAllV(const void *, const std::vector<int64_t> &, void *,
                        const std::vector<int64_t> &, DType) {
  noMpi();
}
void MpiComm::broadcast(void *, int64_t, DType, int) { noMpi(); }
void MpiComm::barrier() { noMpi(); }
bool MpiWorld::available() { return false; }
MpiWorld::MpiWorld(int *, char ***, bool, double) { noMpi(); }
Communicator &MpiWorld::processGroup(const std::vector<int> &, const std::vector<int> &) {
  noMpi();
}
bool MpiWorld::hasProcessGroup(const std::vector<int> &) { noMpi(); }
MpiWorld::~MpiWorld() = default;
Communicator *MpiWorld::split(int, int, const std::vector<int> &) { noMpi(); }
Communicator *MpiWorld::create(const std::vector<int> &) { noMpi(); }
std::unique_ptr<MpiComm> MpiWorld::createComm(const std::vector<int> &, int) { noMpi(); }

#endif // DT_HAVE_MPI

int MpiWorld::rank() const { return rank_; }
int MpiWorld::size() const { return size_; }
Communicator &MpiWorld::world() { return *world_; }
FaultWatch &MpiWorld::watch() { return *watch_; }

Communicator &MpiWorld::group(const std::vector<int> &members) {
  auto it = groups_.find(members);
  if (it != groups_.end())
    return *it->second;
  bool member = false;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= size_)
      throw RuntimeFault("MpiWorld::group: world rank " + std::to_string(members[i]) +
                         " outside a world of " + std::to_string(size_));
    member |= members[i] == rank_;
  }
  if (!member)
    throw RuntimeFault("MpiWorld::group: the members do not contain this rank " +
                       std::to_string(rank_));
  return *create(members);
}

Communicator *MpiWorld::partition(const std::vector<std::vector<int>> &groups) {
  auto it = partitions_.find(groups);
  if (it != partitions_.end())
    return it->second;
  int color = -1, key = 0;
  std::vector<int> seen(size_, 0);
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].size(); ++i) {
      int m = groups[g][i];
      if (m < 0 || m >= size_ || seen[m]++)
        throw RuntimeFault("MpiWorld::partition: world rank " + std::to_string(m) +
                           " is out of range or in two groups");
      if (m == rank_)
        color = (int)g, key = (int)i;
    }
  // Own the communicator under a label no group() list can have (a leading -1 - index).
  std::vector<int> label = {-1 - (int)partitions_.size()};
  if (color >= 0)
    label.insert(label.end(), groups[color].begin(), groups[color].end());
  Communicator *c = split(color, key, label);
  partitions_[groups] = c;
  return c;
}

} // namespace dt
