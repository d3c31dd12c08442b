// This file implements MpiComm and MpiWorld (see MpiComm.h) on Open MPI. When
// dtensor is built without MPI every entry point throws RuntimeFault instead.
#include "runtime/MpiComm.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#ifdef DT_HAVE_MPI
#include <mpi.h>
#endif

namespace dt {

#ifdef DT_HAVE_MPI

struct MpiComm::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false; ///< freed by the destructor (split communicators)
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
  }
  return MPI_BYTE;
}

MPI_Op mpiOp(DType t, ReduceOp op) {
  checkReducible(t, op);
  if (t == DType::Bool)
    return op == ReduceOp::Min ? MPI_BAND : MPI_BOR;
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return MPI_SUM; // divided locally afterwards
  case ReduceOp::Max:
    return MPI_MAX;
  case ReduceOp::Min:
    return MPI_MIN;
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

void checkCounts(const std::vector<int64_t> &counts, int size, const char *what) {
  if ((int)counts.size() != size)
    throw RuntimeFault(std::string(what) + ": " + std::to_string(counts.size()) +
                       " counts for a group of " + std::to_string(size));
}

} // namespace

MpiComm::MpiComm(std::unique_ptr<Handle> h) : h_(std::move(h)) {
  check(MPI_Comm_rank(h_->comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(h_->comm, &size_), "MPI_Comm_size");
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (h_->owned && !finalized)
    MPI_Comm_free(&h_->comm);
}

int MpiComm::rank() const { return rank_; }
int MpiComm::size() const { return size_; }
void *MpiComm::nativeHandle() { return &h_->comm; }

void MpiComm::allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) {
  MPI_Op mop = mpiOp(dtype, op);
  int n = toInt(count, "allReduce");
  size_t bytes = (size_t)count * dtypeSize(dtype);
  std::vector<unsigned char> staged;
  if (send != recv && overlaps(send, bytes, recv, bytes)) {
    staged.assign((const unsigned char *)send, (const unsigned char *)send + bytes);
    send = staged.data();
  }
  check(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, n, mpiType(dtype), mop, h_->comm),
        "MPI_Allreduce");
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
  check(MPI_Allgatherv(send == mine ? MPI_IN_PLACE : send, c[rank_], mpiType(dtype), recv, c.data(),
                       d.data(), mpiType(dtype), h_->comm),
        "MPI_Allgatherv");
}

void MpiComm::reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts,
                             DType dtype, ReduceOp op) {
  checkCounts(counts, size_, "reduceScatterV");
  MPI_Op mop = mpiOp(dtype, op);
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
  check(MPI_Reduce_scatter(send == recv ? MPI_IN_PLACE : send, dst, c.data(), mpiType(dtype), mop,
                           h_->comm),
        "MPI_Reduce_scatter");
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
  check(MPI_Alltoallv(send, sc.data(), sd.data(), t, recv, rc.data(), rd.data(), t, h_->comm),
        "MPI_Alltoallv");
}

void MpiComm::broadcast(void *buf, int64_t count, DType dtype, int root) {
  if (root < 0 || root >= size_)
    throw RuntimeFault("broadcast: root " + std::to_string(root) + " outside a group of " +
                       std::to_string(size_));
  check(MPI_Bcast(buf, toInt(count, "broadcast"), mpiType(dtype), root, h_->comm), "MPI_Bcast");
}

void MpiComm::barrier() { check(MPI_Barrier(h_->comm), "MPI_Barrier"); }

bool MpiWorld::available() { return true; }

MpiWorld::MpiWorld(int *argc, char ***argv) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    throw RuntimeFault("MpiWorld: MPI was already finalized in this process");
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    initializedHere_ = true;
  }
  // Report errors as RuntimeFault instead of aborting the job; split communicators inherit it.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto h = std::make_unique<MpiComm::Handle>();
  h->comm = MPI_COMM_WORLD;
  world_ = std::make_unique<MpiComm>(std::move(h));
  rank_ = world_->rank();
  size_ = world_->size();
}

MpiWorld::~MpiWorld() {
  partitions_.clear();
  groups_.clear();
  world_.reset();
  if (initializedHere_)
    MPI_Finalize();
}

Communicator *MpiWorld::split(int color, int key, const std::vector<int> &label) {
  auto h = std::make_unique<MpiComm::Handle>();
  check(MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, key, &h->comm),
        "MPI_Comm_split");
  if (h->comm == MPI_COMM_NULL)
    return nullptr;
  h->owned = true;
  auto &slot = groups_[label];
  slot = std::make_unique<MpiComm>(std::move(h));
  return slot.get();
}

#else // !DT_HAVE_MPI

struct MpiComm::Handle {};

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
MpiWorld::MpiWorld(int *, char ***) { noMpi(); }
MpiWorld::~MpiWorld() = default;
Communicator *MpiWorld::split(int, int, const std::vector<int> &) { noMpi(); }

#endif // DT_HAVE_MPI

int MpiWorld::rank() const { return rank_; }
int MpiWorld::size() const { return size_; }
Communicator &MpiWorld::world() { return *world_; }

Communicator &MpiWorld::group(const std::vector<int> &members) {
  auto it = groups_.find(members);
  if (it != groups_.end())
    return *it->second;
  int key = -1, color = INT_MAX;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= size_)
      throw RuntimeFault("MpiWorld::group: world rank " + std::to_string(members[i]) +
                         " outside a world of " + std::to_string(size_));
    if (members[i] == rank_)
      key = (int)i;
    color = std::min(color, members[i]); // disjoint groups have distinct smallest members
  }
  if (key < 0)
    throw RuntimeFault("MpiWorld::group: the members do not contain this rank " +
                       std::to_string(rank_));
  return *split(color, key, members);
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
