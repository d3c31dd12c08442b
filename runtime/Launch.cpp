// This file implements launcher detection (see Launch.h).
#include "runtime/Launch.h"

#include <cstdlib>

namespace dt {

namespace {

/// The integer value of environment variable `name`, or `fallback`.
int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end && *end == 0 && n >= 0 && n < (1 << 30) ? (int)n : fallback;
}

bool has(const char *name) { return std::getenv(name) != nullptr; }

} // namespace

Launch detectLaunch() {
  Launch l;
  if (has("OMPI_COMM_WORLD_SIZE")) { // Open MPI's mpirun / mpiexec
    l.kind = Launch::Kind::Mpi;
    l.rank = envInt("OMPI_COMM_WORLD_RANK", 0);
    l.size = envInt("OMPI_COMM_WORLD_SIZE", 0);
    l.localSize = envInt("OMPI_COMM_WORLD_LOCAL_SIZE", 0);
    l.launcher = "mpirun";
  } else if (has("PMIX_RANK")) { // srun --mpi=pmix (size from Slurm when known)
    l.kind = Launch::Kind::Mpi;
    l.rank = envInt("PMIX_RANK", 0);
    l.size = envInt("SLURM_NTASKS", 0);
    l.localSize = envInt("PMIX_LOCAL_SIZE", 0);
    l.launcher = "srun";
  } else if (has("PMI_RANK") && has("PMI_SIZE")) { // MPICH's hydra
    l.kind = Launch::Kind::Mpi;
    l.rank = envInt("PMI_RANK", 0);
    l.size = envInt("PMI_SIZE", 0);
    l.localSize = envInt("MPI_LOCALNRANKS", 0);
    l.launcher = "mpiexec";
  } else if (has("RANK") && has("WORLD_SIZE") && (has("MASTER_ADDR") || has("MASTER_PORT"))) {
    l.kind = Launch::Kind::Torch;
    l.rank = envInt("RANK", 0);
    l.size = envInt("WORLD_SIZE", 0);
    l.launcher = "torchrun";
  }
  return l;
}

} // namespace dt
