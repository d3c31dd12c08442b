// This file implements the mpi backend: one rank per process, started by a
// standard launcher (`mpirun -np 4 dtensorc run prog.dt`; dtensorc picks this
// backend by itself under mpirun, tools/dtensorc.cpp). Each process compiles
// the program once and runs only its own rank, on a CpuDevice (host memory,
// CpuJIT, OpenBLAS, runtime/CpuBackend.h) whose communicators are MPI's
// (runtime/MpiComm.h, MPI_Comm_create_group over each group's members, so a
// mesh that does not cover the world works); world rank 0's process prints
// and returns the values.
//
// Start-up (agree()): the processes compare a fingerprint of their compiled
// program (module and meshes) and of their binary, and the world size with
// the program's need — a difference is one error line from rank 0, never a
// hang or a wrong result.
//
// Faults (runtime/FaultWatch.h): every collective polls under a deadline
// (`--fault-timeout`, default 60 s); a rank that fails (an exception in its
// program) reports it and aborts the job (MPI_Abort), so the others never
// wait on it; a rank that crashes or is stopped is reported by its peers.
// Without an MPI build, constructing it throws one line saying so.
//
// `--ranks-per-process K` (BackendOptions::ranksPerProcess): each process
// hosts K consecutive world ranks as threads (process p: ranks p*K ..
// p*K+K-1), talking through shared memory inside the process and MPI between
// processes (runtime/HybridComm.h); reports then name processes with their
// ranks.
#pragma once

#include "runtime/CpuBackend.h"

#include <memory>
#include <string>

namespace dt {

class MpiWorld;
class ThreadWorld;
class HybridWorld;

class MpiBackend : public Backend {
public:
  explicit MpiBackend(const BackendOptions &opts);
  ~MpiBackend() override;
  const char *name() const override { return "mpi"; }
  NativeKernel compile(const Kernel &k, bool small) override { return jit_.compile(k, small); }
  CompileCounters compileCounters() const override { return jit_.counters(); }
  bool compilesSliceKernels() const override { return true; }
  bool multipliesIntegers() const override { return true; }
  void precompile(const std::vector<KernelToCompile> &kernels) override {
    jit_.precompile(kernels, cores_);
  }
  /// Runs this process's rank; a rank whose program throws reports it and
  /// ends the job (when there are other processes).
  void run(int ranks, const std::function<void(Device &)> &body) override;
  bool hosts(int r) const override;
  void agree(int ranks, const std::function<uint64_t()> &fingerprint) override;
  /// K > 1 over several processes: the leaders' communicators are made
  /// before the ranks start (HybridWorld::prepare).
  bool createsGroupsAhead() const override;
  /// K > 1: the leader communicators this process made before and during runs.
  std::string report() const override;
  void prepareGroups(const std::vector<std::vector<int>> &groups) override;

private:
  /// K > 1: the thread and hybrid worlds (made once, and again after a failure).
  void makeHybrid();
  /// K > 1: this process's ranks as threads over hybrid communicators.
  void runThreads(const std::function<void(Device &)> &body);
  /// The error for a job whose processes x ranks-per-process is not `ranks`.
  std::string sizeMismatch(int ranks) const;
  std::unique_ptr<MpiWorld> world_;
  CpuKernelCompiler jit_;
  int perProcess_ = 1;
  int cores_ = 1;
  std::unique_ptr<ThreadWorld> threads_;
  std::unique_ptr<HybridWorld> hybrid_;
};

} // namespace dt
