// This file implements the parts of the backend interface shared by every
// backend (see Backend.h) and makeBackend, the one place that names them.
#include "runtime/Backend.h"

#include "runtime/CpuBackend.h"
#include "runtime/CudaBackend.h"
#include "runtime/MpiBackend.h"
#include "runtime/NullBackend.h"
#include "support/Errors.h"

namespace dt {

namespace {
HostTensor shaped(Device &d, DType dt, const std::vector<int64_t> &shape, bool zeroed) {
  HostTensor t;
  t.dtype = dt;
  t.shape = shape;
  t.buf = zeroed ? d.allocate(t.bytes()) : d.allocateUninit(t.bytes());
  return t;
}
} // namespace

HostTensor Device::empty(DType dt, const std::vector<int64_t> &shape) {
  return shaped(*this, dt, shape, true);
}

HostTensor Device::emptyUninit(DType dt, const std::vector<int64_t> &shape) {
  return shaped(*this, dt, shape, false);
}

HostTensor Device::clone(const HostTensor &t) {
  HostTensor r = empty(t.dtype, t.shape);
  int64_t n = t.numel();
  if (n > 0)
    copyRegion(t.raw(), {n}, {0}, r.raw(), {n}, {0}, {n}, dtypeSize(t.dtype));
  return r;
}

const char *backendNames() { return "cpu, mpi, cuda, null"; }

std::unique_ptr<Backend> makeBackend(const std::string &name, BackendOptions opts) {
  if (name == "cpu")
    return std::make_unique<CpuBackend>(opts.cpuJit, opts.quickJit);
  if (name == "null")
    return std::make_unique<NullBackend>();
  if (name == "mpi")
    return std::make_unique<MpiBackend>(opts);
  if (name == "cuda" && opts.dryRun)
    return std::make_unique<NullBackend>(NullBackend::Plan::Cuda);
  if (name == "cuda")
    return std::make_unique<CudaBackend>(opts);
  throw RuntimeFault("unknown backend `" + name + "` (" + backendNames() + ")");
}

} // namespace dt
