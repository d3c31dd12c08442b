// This file implements the mpi backend (see MpiBackend.h).
#include "runtime/MpiBackend.h"

#include "support/Errors.h"
#include "runtime/MpiComm.h"

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

} // namespace

MpiBackend::MpiBackend(const BackendOptions &opts) : jit_(opts.cpuJit, opts.quickJit) {
  if (!MpiWorld::available())
    throw RuntimeFault("--backend mpi: this dtensorc was built without MPI (install Open MPI's "
                       "development files and rebuild)");
  world_ = std::make_unique<MpiWorld>(opts.argc, opts.argv);
}

MpiBackend::~MpiBackend() = default;

bool MpiBackend::hosts(int r) const { return r == world_->rank(); }

void MpiBackend::run(int ranks, const std::function<void(Device &)> &body) {
  if (world_->size() != ranks)
    throw RuntimeFault("--backend mpi: the program's meshes need " + std::to_string(ranks) +
                       " ranks, but this job has " + std::to_string(world_->size()) +
                       " processes (start it with `mpirun -np " + std::to_string(ranks) + " ...`)");
  MpiDevice dev(*world_);
  try {
    body(dev);
  } catch (const std::exception &e) { // InternalError too: the executor reports it
    throw RuntimeFault("rank " + std::to_string(dev.rank()) + " failed: " + e.what());
  }
}

} // namespace dt
