// This file implements the NCCL bootstrap over MPI (see NcclBootstrap.h).
#include "runtime/NcclBootstrap.h"

#include "runtime/CudaRuntime.h"

namespace dt {

std::unique_ptr<NcclComm> ncclCommOverMpi(CudaContext &ctx, CudaStream stream, MpiWorld &world,
                                          const std::vector<int> &members) {
  Communicator &group = world.group(members);
  NcclUniqueId id{};
  if (group.rank() == 0)
    id = NcclComm::uniqueId(ctx.libs());
  // 128 opaque bytes, sent as bytes (Bool is one byte) under the fault watch.
  group.broadcast(id.data(), (int64_t)id.size(), DType::Bool, 0);
  auto comm = std::make_unique<NcclComm>(ctx, group.size(), group.rank(), id, stream);
  comm->setWatch(&world.watch());
  return comm;
}

} // namespace dt
