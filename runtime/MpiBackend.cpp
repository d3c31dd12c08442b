// This file implements the mpi backend (see MpiBackend.h).
#include "runtime/MpiBackend.h"

#include "runtime/HybridComm.h"
#include "runtime/MpiComm.h"
#include "runtime/ThreadComm.h"
#include "support/Diagnostics.h"
#include "support/Errors.h"

#include <iostream>
#include <optional>
#include <sys/stat.h>

namespace dt {

namespace {

/// This process's rank, with MPI communicators.
class MpiDevice final : public CpuDevice {
public:
  explicit MpiDevice(MpiWorld &w) : CpuDevice(w.rank()), world_(w) {}
  Communicator &world() override { return world_.world(); }
  Communicator &group(const std::vector<int> &members) override { return world_.group(members); }

private:
  MpiWorld &world_;
};

/// One of this process's ranks in a hybrid run, with hybrid communicators.
class HybridDevice final : public CpuDevice {
public:
  HybridDevice(HybridWorld &w, int worldRank) : CpuDevice(worldRank), world_(w) {}
  Communicator &world() override { return world_.world(rank()); }
  Communicator &group(const std::vector<int> &members) override {
    return world_.group(rank(), members);
  }

private:
  HybridWorld &world_;
};

/// An identity of this process's binary: its size (two builds of dtensorc
/// differ in size) and the layout of the values ranks exchange.
int64_t binaryId() {
  struct stat st;
  int64_t size = stat("/proc/self/exe", &st) == 0 ? (int64_t)st.st_size : 0;
  return size * 1000003 + (int64_t)sizeof(HostTensor) * 131 + (int64_t)sizeof(Inst);
}

} // namespace

MpiBackend::MpiBackend(const BackendOptions &opts)
    : jit_(opts.cpuJit, opts.quickJit), perProcess_(std::max(1, opts.ranksPerProcess)),
      cores_(usableCores()) {
  if (!MpiWorld::available())
    throw RuntimeFault("--backend mpi: this dtensorc was built without MPI (install Open MPI's "
                       "development files and rebuild)");
  world_ = std::make_unique<MpiWorld>(opts.argc, opts.argv, perProcess_ > 1, opts.faultTimeout);
  world_->watch().setRanksPerProcess(perProcess_);
  world_->watch().setTimeout(opts.faultTimeout);
  world_->watch().setSources(opts.sources);
  world_->watch().installSignalHandlers();
}

MpiBackend::~MpiBackend() = default;

bool MpiBackend::hosts(int r) const { return r / perProcess_ == world_->rank(); }

void MpiBackend::agree(int ranks, const std::function<uint64_t()> &fingerprint) {
  const int n = world_->size(), me = world_->rank();
  // Every process detects it alike: rank 0 writes it, and the others wait
  // for that (a process that exits first would make the launcher kill rank 0
  // before it wrote).
  auto agreedFault = [&](const std::string &msg) {
    if (n == 1) // one process: its caller reports it (an embedding host prints nothing)
      throw RuntimeFault(msg);
    if (me == 0)
      std::cerr << "error: " << msg << "\n" << std::flush;
    world_->world().barrier();
    throw ReportedElsewhere(msg);
  };
  if (n > 1) {
    // Every rank's [program, binary, ranks needed], gathered to all.
    int64_t mine[3] = {(int64_t)fingerprint(), binaryId(), ranks};
    std::vector<int64_t> all(3 * (size_t)n);
    world_->world().allGatherV(mine, all.data(), std::vector<int64_t>(n, 3), DType::I64);
    for (int r = 1; r < n; ++r) {
      const int64_t *o = &all[3 * (size_t)r];
      std::string why;
      if (o[1] != all[1])
        why = "a different dtensorc binary";
      else if (o[2] != all[2])
        why = "a program whose meshes need " + std::to_string(o[2]) + " ranks (rank 0's need " +
              std::to_string(all[2]) + ")";
      else if (o[0] != all[0])
        why = "a different program (its compiled statements or meshes differ)";
      if (why.empty())
        continue;
      agreedFault("rank " + std::to_string(r) + " runs " + why +
                  ": start every process with the same dtensorc and program");
    }
  }
  if ((int64_t)n * perProcess_ != ranks)
    agreedFault(sizeMismatch(ranks));
}

std::string MpiBackend::sizeMismatch(int ranks) const {
  const int n = world_->size();
  if (perProcess_ == 1)
    return formatDiag("--backend mpi: the program's meshes need {0} ranks, but this job has {1} "
                      "processes (start it with `mpirun -np {0} ...`)",
                      {std::to_string(ranks), std::to_string(n)});
  std::string how = ranks % perProcess_ == 0
                        ? "start it with `mpirun -np " + std::to_string(ranks / perProcess_) +
                              " ... --ranks-per-process " + std::to_string(perProcess_) + "`"
                        : std::to_string(ranks) + " is not a multiple of " +
                              std::to_string(perProcess_) +
                              ": pick a --ranks-per-process that "
                              "divides it";
  return formatDiag("--backend mpi: the program's meshes need {0} ranks, but this job has {1} "
                    "processes of {2} ranks ({3})",
                    {std::to_string(ranks), std::to_string(n), std::to_string(perProcess_), how});
}

void MpiBackend::run(int ranks, const std::function<void(Device &)> &body) {
  if ((int64_t)world_->size() * perProcess_ != ranks)
    throw RuntimeFault(sizeMismatch(ranks));
  if (perProcess_ > 1)
    return runThreads(body);
  MpiDevice dev(*world_);
  FaultWatch &watch = world_->watch();
  watch.setDevice(&dev);
  std::string failure;
  std::optional<RuntimeFault> fault; // the failure, when a RuntimeFault (its line)
  bool internal = false;
  try {
    body(dev);
  } catch (const InternalError &e) {
    failure = e.what();
    internal = true;
  } catch (const RuntimeFault &e) {
    failure = e.what();
    fault = e;
  } catch (const std::exception &e) {
    failure = e.what();
  }
  watch.setDevice(nullptr);
  if (failure.empty())
    return;
  std::string msg = "rank " + std::to_string(dev.rank()) + " failed: " + failure;
  // The other processes may wait for this rank in a collective: report and
  // end the job rather than leave them to the timeout.
  if (world_->size() > 1) {
    std::cout.flush();
    watch.fail(std::string(internal ? "internal error: " : "error: ") + failure);
  }
  if (internal)
    throw InternalError(msg);
  if (fault)
    throw RuntimeFault("rank " + std::to_string(dev.rank()) + " failed: ", *fault);
  throw RuntimeFault(msg);
}

bool MpiBackend::createsGroupsAhead() const { return perProcess_ > 1 && world_->size() > 1; }

void MpiBackend::prepareGroups(const std::vector<std::vector<int>> &groups) {
  makeHybrid();
  hybrid_->prepare(groups);
}

std::string MpiBackend::report() const {
  if (!hybrid_)
    return "";
  return "mpi: process " + std::to_string(world_->rank()) + ": " +
         std::to_string(hybrid_->preparedGroups()) +
         " leader communicators made before the ranks started, " +
         std::to_string(hybrid_->lateGroups()) + " by the ranks\n";
}

void MpiBackend::makeHybrid() {
  if (threads_)
    return;
  threads_ = std::make_unique<ThreadWorld>(perProcess_);
  threads_->setRankBase(world_->rank() * perProcess_);
  hybrid_ = std::make_unique<HybridWorld>(*world_, *threads_, perProcess_);
}

void MpiBackend::runThreads(const std::function<void(Device &)> &body) {
  makeHybrid();
  FaultWatch &watch = world_->watch();
  std::string failure;
  std::optional<RuntimeFault> fault; // the failure, when a RuntimeFault (its line)
  try {
    threads_->run([&](int t) {
      HybridDevice dev(*hybrid_, world_->rank() * perProcess_ + t);
      dev.setBlasThreads(cores_ / perProcess_);
      // Reports name where the process's first rank is.
      if (t == 0)
        watch.setDevice(&dev);
      try {
        body(dev);
      } catch (const std::exception &e) {
        // The process's other ranks wake through the ThreadWorld, but the
        // other processes may wait for this one in MPI: end the job now.
        if (world_->size() > 1) {
          std::cout.flush();
          watch.fail("error: rank " + std::to_string(dev.rank()) + " failed: " + e.what());
        }
        if (t == 0)
          watch.setDevice(nullptr);
        throw;
      }
      if (t == 0)
        watch.setDevice(nullptr);
    });
  } catch (const RuntimeFault &e) {
    failure = e.what(); // "rank R failed: ..." (world rank, ThreadWorld::setRankBase)
    fault = e;
  } catch (const std::exception &e) {
    failure = e.what();
  }
  if (failure.empty())
    return;
  // A failed thread may leave groups mid-collective: start afresh next time.
  hybrid_.reset();
  threads_.reset();
  if (fault)
    throw *fault;
  throw RuntimeFault(failure);
}

} // namespace dt
