// This file implements the mpi backend: one rank per process, started by a
// standard launcher (`mpirun -np 6 dtensorc run --backend mpi prog.dt`). Each
// process runs its own rank on a CpuDevice (host memory, CpuJIT, OpenBLAS,
// runtime/CpuBackend.h) whose communicators are MPI's (runtime/MpiComm.h);
// world rank 0's process prints and returns the values.
//
// Status (execution proper is the next issue): programs whose every mesh
// covers the whole world run. Known gaps, each said here rather than hit
// silently:
//  * MpiWorld::group splits communicators with MPI_Comm_split, collective
//    over the WORLD on first use: a collective on a mesh that does not cover
//    every process would wait for the processes off the mesh
//    (MPI_Comm_create_group over the members is the fix);
//  * a rank that fails does not wake the others (MPI_Abort of the job is the
//    fix); the failing process reports it.
// Without an MPI build, constructing it throws one line saying so.
#pragma once

#include "runtime/CpuBackend.h"

#include <memory>

namespace dt {

class MpiWorld;

class MpiBackend : public Backend {
public:
  explicit MpiBackend(const BackendOptions &opts);
  ~MpiBackend() override;
  const char *name() const override { return "mpi"; }
  NativeKernel compile(const Kernel &k, bool small) override { return jit_.compile(k, small); }
  CompileCounters compileCounters() const override { return jit_.counters(); }
  /// Runs this process's rank; RuntimeFault when the job's size is not `ranks`.
  void run(int ranks, const std::function<void(Device &)> &body) override;
  bool hosts(int r) const override;

private:
  std::unique_ptr<MpiWorld> world_;
  CpuKernelCompiler jit_;
};

} // namespace dt
