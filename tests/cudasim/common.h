// tests/cudasim's shared helpers (cudasim.cpp defines them): the counters,
// the work folder, random data, kernel loading and the scatter oracle.
#pragma once

#include "codegen/KernelIR.h"
#include "runtime/HostTensor.h"

#include <random>
#include <string>
#include <vector>

extern int fails, checks, splits;
extern std::string gWork, gShim;

/// A kernel emitted by codegen/CudaEmitter, compiled against the shim:
/// runs its launch of `grid` blocks on the dt_args words `w`.
using SimKernel = void (*)(const unsigned long long *w, unsigned grid);
/// `k` emitted, compiled (once per distinct source) and loaded; null when
/// CUDASIM_ONLY skips it or g++ rejects it (a failure counted).
SimKernel loadKernel(const dt::Kernel &k, int tag);
std::vector<char> randomData(dt::DType t, int64_t n, std::mt19937 &g, bool spread = false);
std::string shapeStr(const std::vector<int64_t> &shape);
/// Compares two host tensors bit for bit (NaN matches NaN); counts checks.
void sameBits(const char *what, const dt::HostTensor &want, const dt::HostTensor &got);
/// index_add(base, ids, src) with each output's list cut into `chunks`
/// chunks of ceil(len / chunks), summed from zero, then added onto base in
/// chunk order (the split scatter's order).
dt::HostTensor splitScatterOrder(const dt::HostTensor &base, const dt::HostTensor &src,
                                 const std::vector<int64_t> &rs, const std::vector<int64_t> &order,
                                 int64_t dim, int64_t chunks);
/// The kernels with a scatter-add store (scatter.cpp).
void runScatterKernels(int &tag);
