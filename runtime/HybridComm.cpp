// This file implements the hybrid communicators (see HybridComm.h).
#include "runtime/HybridComm.h"

#include "runtime/MpiComm.h"
#include "runtime/ThreadComm.h"
#include "support/Errors.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace dt {

HybridLayout::HybridLayout(const std::vector<int> &worldRanks, int perProcess) {
  procIndex.resize(worldRanks.size());
  localIndex.resize(worldRanks.size());
  for (size_t g = 0; g < worldRanks.size(); ++g) {
    int p = worldRanks[g] / perProcess;
    auto it = std::find(processes.begin(), processes.end(), p);
    int pi = (int)(it - processes.begin());
    if (it == processes.end()) {
      processes.push_back(p);
      members.emplace_back();
    }
    procIndex[g] = pi;
    localIndex[g] = (int)members[pi].size();
    members[pi].push_back((int)g);
  }
}

namespace {

/// One world rank's communicator over one group of a hybrid run.
class HybridComm final : public Communicator {
public:
  HybridComm(HybridLayout layout, int groupRank, Communicator &local, Communicator *cross)
      : l_(std::move(layout)), me_(groupRank), myProc_(l_.procIndex[groupRank]),
        localSize_((int)l_.members[myProc_].size()), leader_(l_.localIndex[groupRank] == 0),
        local_(local), cross_(cross) {}

  int rank() const override { return me_; }
  int size() const override { return (int)l_.procIndex.size(); }

  void allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) override {
    checkReducible(dtype, op);
    if (single())
      return local_.allReduce(send, recv, count, dtype, op);
    const ReduceOp step = op == ReduceOp::Avg ? ReduceOp::Sum : op;
    if (localSize_ > 1)
      local_.allReduce(send, recv, count, dtype, step);
    else if (send != recv && count)
      std::memmove(recv, send, (size_t)count * dtypeSize(dtype));
    if (leader_)
      cross_->allReduce(recv, recv, count, dtype, step);
    if (localSize_ > 1)
      local_.broadcast(recv, count, dtype, 0);
    finishAvg(recv, count, dtype, op, size());
  }

  void allGatherV(const void *send, void *recv, const std::vector<int64_t> &counts,
                  DType dtype) override {
    checkCounts(counts, "allGatherV");
    if (single())
      return local_.allGatherV(send, recv, counts, dtype);
    const size_t es = (size_t)dtypeSize(dtype);
    Packing pk = packing(counts);
    unsigned char *packed = scratch(a_, pk.total * es);
    // This process's members' blocks, in local order, into its segment.
    local_.allGatherV(send, packed + (size_t)pk.procOff[myProc_] * es, localCounts(counts), dtype);
    if (leader_)
      cross_->allGatherV(packed + (size_t)pk.procOff[myProc_] * es, packed, pk.procCount, dtype);
    if (localSize_ > 1)
      local_.broadcast(packed, pk.total, dtype, 0);
    std::vector<int64_t> groupOff = countOffsets(counts);
    for (int g = 0; g < size(); ++g)
      if (counts[g])
        std::memcpy(static_cast<unsigned char *>(recv) + (size_t)groupOff[g] * es,
                    packed + (size_t)pk.at[g] * es, (size_t)counts[g] * es);
  }

  void reduceScatterV(const void *send, void *recv, const std::vector<int64_t> &counts, DType dtype,
                      ReduceOp op) override {
    checkCounts(counts, "reduceScatterV");
    checkReducible(dtype, op);
    if (single())
      return local_.reduceScatterV(send, recv, counts, dtype, op);
    const ReduceOp step = op == ReduceOp::Avg ? ReduceOp::Sum : op;
    const size_t es = (size_t)dtypeSize(dtype);
    const int64_t total = totalCount(counts);
    Packing pk = packing(counts);
    // The process's sum of the whole vector (a copy: recv may alias send).
    unsigned char *whole = scratch(a_, (size_t)total * es);
    if (localSize_ > 1)
      local_.allReduce(send, whole, total, dtype, step);
    else if (total)
      std::memcpy(whole, send, (size_t)total * es);
    unsigned char *part = scratch(b_, (size_t)pk.procCount[myProc_] * es);
    if (leader_) {
      std::vector<int64_t> groupOff = countOffsets(counts);
      unsigned char *packed = scratch(c_, (size_t)total * es);
      for (int g = 0; g < size(); ++g)
        if (counts[g])
          std::memcpy(packed + (size_t)pk.at[g] * es, whole + (size_t)groupOff[g] * es,
                      (size_t)counts[g] * es);
      cross_->reduceScatterV(packed, part, pk.procCount, dtype, step);
    }
    if (localSize_ > 1)
      local_.broadcast(part, pk.procCount[myProc_], dtype, 0);
    if (counts[me_])
      std::memcpy(recv, part + (size_t)(pk.at[me_] - pk.procOff[myProc_]) * es,
                  (size_t)counts[me_] * es);
    finishAvg(recv, counts[me_], dtype, op, size());
  }

  void allToAllV(const void *send, const std::vector<int64_t> &sendCounts, void *recv,
                 const std::vector<int64_t> &recvCounts, DType dtype) override {
    checkCounts(sendCounts, "allToAllV");
    checkCounts(recvCounts, "allToAllV");
    if (single())
      return local_.allToAllV(send, sendCounts, recv, recvCounts, dtype);
    const int n = size();
    const size_t es = (size_t)dtypeSize(dtype);
    // Every local member's send row and receive column of the count matrix:
    // C[s][d] = elements from s to d = sendCounts of s at d = recvCounts of d at s.
    std::vector<int64_t> row(2 * (size_t)n);
    std::copy(sendCounts.begin(), sendCounts.end(), row.begin());
    std::copy(recvCounts.begin(), recvCounts.end(), row.begin() + n);
    std::vector<int64_t> rows(2 * (size_t)n * localSize_);
    local_.allGatherV(row.data(), rows.data(), std::vector<int64_t>(localSize_, 2 * (int64_t)n),
                      DType::I64);
    auto sendOf = [&](int li, int d) { return rows[(size_t)li * 2 * n + d]; };
    auto recvOf = [&](int li, int s) { return rows[(size_t)li * 2 * n + n + s]; };
    // Local members' send buffers, side by side.
    std::vector<int64_t> localSend(localSize_);
    for (int li = 0; li < localSize_; ++li)
      for (int d = 0; d < n; ++d)
        localSend[li] += sendOf(li, d);
    std::vector<int64_t> localSendOff = countOffsets(localSend);
    unsigned char *sent = scratch(a_, (size_t)localSendOff.back() * es);
    local_.allGatherV(send, sent, localSend, dtype);
    // What each process sends this one: from its members s to local members d.
    const int procs = (int)l_.processes.size();
    std::vector<int64_t> crossRecv(procs);
    for (int j = 0; j < procs; ++j)
      for (int s : l_.members[j])
        for (int li = 0; li < localSize_; ++li)
          crossRecv[j] += recvOf(li, s);
    std::vector<int64_t> crossRecvOff = countOffsets(crossRecv);
    unsigned char *got = scratch(b_, (size_t)crossRecvOff.back() * es);
    if (leader_) {
      // Bundle per destination process j: for each local s, for each d of j.
      std::vector<int64_t> crossSend(procs);
      for (int j = 0; j < procs; ++j)
        for (int li = 0; li < localSize_; ++li)
          for (int d : l_.members[j])
            crossSend[j] += sendOf(li, d);
      unsigned char *bundle = scratch(c_, (size_t)totalCount(crossSend) * es);
      size_t pos = 0;
      for (int j = 0; j < procs; ++j)
        for (int li = 0; li < localSize_; ++li) {
          std::vector<int64_t> off(n + 1);
          for (int d = 0; d < n; ++d)
            off[d + 1] = off[d] + sendOf(li, d);
          for (int d : l_.members[j]) {
            size_t bytes = (size_t)sendOf(li, d) * es;
            if (bytes)
              std::memcpy(bundle + pos, sent + (size_t)(localSendOff[li] + off[d]) * es, bytes);
            pos += bytes;
          }
        }
      cross_->allToAllV(bundle, crossSend, got, crossRecv, dtype);
    }
    if (localSize_ > 1)
      local_.broadcast(got, crossRecvOff.back(), dtype, 0);
    // Process j's bundle: for each of its members s, for each local d.
    std::vector<int64_t> recvOff = countOffsets(recvCounts);
    const int meLocal = l_.localIndex[me_];
    for (int j = 0; j < procs; ++j) {
      size_t pos = (size_t)crossRecvOff[j] * es;
      for (int s : l_.members[j])
        for (int li = 0; li < localSize_; ++li) {
          size_t bytes = (size_t)recvOf(li, s) * es;
          if (li == meLocal && bytes)
            std::memcpy(static_cast<unsigned char *>(recv) + (size_t)recvOff[s] * es, got + pos,
                        bytes);
          pos += bytes;
        }
    }
  }

  void broadcast(void *buf, int64_t count, DType dtype, int root) override {
    if (root < 0 || root >= size())
      throw RuntimeFault("broadcast: root " + std::to_string(root) + " outside a group of " +
                         std::to_string(size()));
    if (single())
      return local_.broadcast(buf, count, dtype, root);
    const int rootProc = l_.procIndex[root];
    if (myProc_ == rootProc && localSize_ > 1)
      local_.broadcast(buf, count, dtype, l_.localIndex[root]);
    if (leader_)
      cross_->broadcast(buf, count, dtype, rootProc);
    if (myProc_ != rootProc && localSize_ > 1)
      local_.broadcast(buf, count, dtype, 0);
  }

  void barrier() override {
    if (localSize_ > 1)
      local_.barrier();
    if (leader_ && cross_)
      cross_->barrier();
    if (localSize_ > 1 && !single())
      local_.barrier();
  }

private:
  /// Where each group rank's block sits when blocks are packed process by
  /// process (processes in `l_.processes` order, members in local order).
  struct Packing {
    std::vector<int64_t> procCount, procOff, at;
    int64_t total = 0;
  };
  Packing packing(const std::vector<int64_t> &counts) const {
    Packing pk;
    const int procs = (int)l_.processes.size();
    pk.procCount.assign(procs, 0);
    pk.at.assign(counts.size(), 0);
    for (int j = 0; j < procs; ++j)
      for (int g : l_.members[j]) {
        if (counts[g] < 0)
          throw RuntimeFault("negative count " + std::to_string(counts[g]));
        pk.procCount[j] += counts[g];
      }
    pk.procOff = countOffsets(pk.procCount);
    pk.total = pk.procOff.back();
    for (int j = 0; j < procs; ++j) {
      int64_t at = pk.procOff[j];
      for (int g : l_.members[j]) {
        pk.at[g] = at;
        at += counts[g];
      }
    }
    return pk;
  }
  std::vector<int64_t> localCounts(const std::vector<int64_t> &counts) const {
    std::vector<int64_t> c;
    for (int g : l_.members[myProc_])
      c.push_back(counts[g]);
    return c;
  }
  void checkCounts(const std::vector<int64_t> &counts, const char *what) const {
    if ((int)counts.size() != size())
      throw RuntimeFault(std::string(what) + ": " + std::to_string(counts.size()) +
                         " counts for a group of " + std::to_string(size()));
  }
  /// Whether every member lives in this process.
  bool single() const { return l_.processes.size() == 1; }
  static unsigned char *scratch(std::vector<unsigned char> &v, size_t bytes) {
    if (v.size() < bytes)
      v.resize(bytes);
    return v.data();
  }

  HybridLayout l_;
  int me_, myProc_, localSize_;
  bool leader_;
  Communicator &local_;
  Communicator *cross_; ///< leaders only, when the group spans processes
  std::vector<unsigned char> a_, b_, c_;
};

} // namespace

HybridWorld::HybridWorld(MpiWorld &mpi, ThreadWorld &threads, int perProcess)
    : mpi_(mpi), threads_(threads), perProcess_(perProcess) {
  for (int r = 0; r < size(); ++r)
    all_.push_back(r);
}

HybridWorld::~HybridWorld() = default;

int HybridWorld::size() const { return mpi_.size() * perProcess_; }

Communicator &HybridWorld::group(int worldRank, const std::vector<int> &members) {
  auto key = std::make_pair(worldRank, members);
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = comms_.find(key);
    if (it != comms_.end())
      return *it->second;
  }
  const int process = mpi_.rank();
  int groupRank = -1;
  for (size_t g = 0; g < members.size(); ++g) {
    if (members[g] < 0 || members[g] >= size())
      throw RuntimeFault("HybridWorld::group: world rank " + std::to_string(members[g]) +
                         " outside a world of " + std::to_string(size()));
    if (members[g] == worldRank)
      groupRank = (int)g;
  }
  if (groupRank < 0 || worldRank / perProcess_ != process)
    throw RuntimeFault("HybridWorld::group: world rank " + std::to_string(worldRank) +
                       " is not a member hosted by process " + std::to_string(process));
  HybridLayout layout(members, perProcess_);
  const int pi = layout.procIndex[groupRank];
  std::vector<int> localThreads;
  for (int g : layout.members[pi])
    localThreads.push_back(members[g] % perProcess_);
  Communicator &local = threads_.group(worldRank % perProcess_, localThreads);
  Communicator *cross = nullptr;
  // Outside the lock: creating the leaders' communicator waits for the
  // other processes (MpiWorld::processGroup).
  if (layout.processes.size() > 1 && layout.localIndex[groupRank] == 0) {
    late_ += !mpi_.hasProcessGroup(members);
    cross = &mpi_.processGroup(members, layout.processes);
  }
  auto comm = std::make_unique<HybridComm>(layout, groupRank, local, cross);
  std::lock_guard<std::mutex> lk(mu_);
  auto &slot = comms_[key];
  slot = std::move(comm);
  return *slot;
}

Communicator &HybridWorld::world(int worldRank) { return group(worldRank, all_); }

void HybridWorld::prepare(const std::vector<std::vector<int>> &groups) {
  const int process = mpi_.rank();
  for (const std::vector<int> &members : groups) {
    HybridLayout layout(members, perProcess_);
    if (layout.processes.size() > 1 &&
        std::find(layout.processes.begin(), layout.processes.end(), process) !=
            layout.processes.end() &&
        !mpi_.hasProcessGroup(members)) {
      mpi_.processGroup(members, layout.processes);
      ++prepared_;
    }
  }
}

} // namespace dt
