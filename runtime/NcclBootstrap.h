// This file implements the NCCL bootstrap of a run of one rank per process
// on GPUs (`mpirun -np N dtensorc run --backend cuda`): NCCL's unique id is
// made by the group's first member and broadcast over MPI (no home-made
// rendezvous), then every member joins with ncclCommInitRank; the
// communicator waits under the world's FaultWatch, so a timeout or a failed
// peer aborts it (ncclCommAbort) and ends the job with the named cause.
//
// Status: compiled, not yet run (no GPU where it was written), and not yet
// used by CudaBackend, whose ranks are virtual ranks on one GPU; a
// multi-process CudaDevice would call it from its group().
#pragma once

#include "runtime/CudaComm.h"
#include "runtime/MpiComm.h"

#include <memory>
#include <vector>

namespace dt {

class CudaContext;

/// The NCCL communicator of world ranks `members` (in group-rank order; this
/// process is one of them) on `stream` of `ctx`. Collective over the members.
std::unique_ptr<NcclComm> ncclCommOverMpi(CudaContext &ctx, CudaStream stream, MpiWorld &world,
                                          const std::vector<int> &members);

} // namespace dt
