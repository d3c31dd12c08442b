// This file implements launcher detection: how this process was started.
// `dtensorc run` runs one rank per process when an MPI launcher started it
// (Open MPI's mpirun, or srun through PMIx), and refuses a torchrun-style
// environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT without MPI), whose
// rendezvous it does not speak, rather than run the whole mesh in every
// process. Read from the environment only; no MPI call.
#pragma once

#include <string>

namespace dt {

struct Launch {
  enum class Kind { None, Mpi, Torch };
  Kind kind = Kind::None;
  int rank = 0;         ///< this process's rank in the job
  int size = 1;         ///< processes in the job (0: unknown)
  int localSize = 0;    ///< processes of the job on this node (0: unknown)
  std::string launcher; ///< "mpirun", "srun", "mpiexec", "torchrun"
};

/// The launch this process sees in its environment.
Launch detectLaunch();

} // namespace dt
