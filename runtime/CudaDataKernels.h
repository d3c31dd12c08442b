// This file implements the cuda backend's data-movement primitives
// (runtime/Backend.h's copyRegion, transpose, gather, scatterAdd) as device
// kernels of the backend's own: CUDA C++ compiled by NVRTC once per context
// (CudaContext::rawFunction), so none of them stages a value through host
// memory.
//
//  * a strided copy of an N-d box (rank <= 8): copyRegion's boxes and
//    transpose's permutations, one thread per element, by element size;
//  * row gather (`index_select`): out[o, j, i] = src[o, ids[j], i];
//  * `check_factor`'s scan (a flag on the device, read back), and fills of
//    one value (its bits a kernel argument);
//  * `cumsum`: a thread per column, in order along the dim;
//  * row scatter-add (`index_add`): the ids are sorted on the host into
//    per-row lists (stable, so in id order) and each output element adds its
//    rows in that order -- the reference kernel's order, so f32/f64 sums are
//    bit-identical to it; bf16/f16 accumulate in f32 and round once (as the
//    reference widens); integers wrap; bool is `or`. In default mode, few
//    outputs over long lists (index_add into a few rows) split each list
//    into chunks summed in parallel, then folded in chunk order.
//
// A scatter's ids are checked on the host (they are downloaded for its lists
// anyway), with the reference kernels' messages; a gather's by the device
// before the call (CheckedIds: once while the ids are held).
#pragma once

#include "runtime/CudaRuntime.h"
#include "runtime/HostTensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

/// The CUDA C++ of every data-movement kernel (one translation unit: the
/// emitter's prelude, then the kernels).
const std::string &cudaDataKernelSource();

/// The strided box copy: for every index c of `extent`,
/// dst[dstOffset + sum c[d] * dstStrides[d]] = src[srcOffset + sum c[d] * srcStrides[d]]
/// (offsets and strides in elements of `esize` bytes: 1, 2, 4 or 8).
void cudaStridedCopy(CudaContext &ctx, const void *src, void *dst,
                     const std::vector<int64_t> &extent, const std::vector<int64_t> &srcStrides,
                     int64_t srcOffset, const std::vector<int64_t> &dstStrides, int64_t dstOffset,
                     int64_t esize, CudaStream s);

/// `index_select` along `dim` of the device tensor `src` by the device ids
/// `ids` into `out`. The ids must have been checked against src's extent
/// (CudaDevice does, once while the ids are held: CheckedIds).
void cudaGather(CudaContext &ctx, const HostTensor &src, const HostTensor &ids, int64_t dim,
                HostTensor &out, CudaStream s);

/// `check_factor` on the device: whether some element of the float tensor
/// `x` is zero (`nonzero`) or infinite (else). Waits for the stream.
bool cudaBadFactor(CudaContext &ctx, const HostTensor &x, bool nonzero, CudaStream s);

/// Fills the device tensor `out` with the one host element of `one`: its
/// bits go to the kernel by value, so the fill is queued without a wait.
void cudaFill(CudaContext &ctx, const HostTensor &one, HostTensor &out, CudaStream s);

/// `cumsum` of the device tensor `x` along `dim` into `out` (x's type, its
/// own buffer), from the end with `reverse`; the reference's numerics.
/// A thread per column, in order along the dim: a long scan over few columns
/// is sequential (a parallel scan is for a GPU session to write and measure).
void cudaCumsum(CudaContext &ctx, const HostTensor &x, int64_t dim, bool reverse, HostTensor &out,
                CudaStream s);

/// The scatter-add's per-row lists: rows r of the output get the source rows
/// order[rowStart[r] .. rowStart[r + 1]), in id order. RuntimeFault (the
/// reference's message) for an id outside [0, n).
void cudaScatterLists(const HostTensor &ids, int64_t dim, int64_t n, std::vector<int64_t> &rowStart,
                      std::vector<int64_t> &order);

/// cudaScatterLists on the device: one allocation (`lists`, freed with
/// ctx.free) holding rowStart then order. Waits for the upload (the host
/// lists die on return).
struct CudaScatterPlan {
  void *lists = nullptr; ///< rowStart (n + 1 entries)
  void *order = nullptr; ///< inside `lists`
  int64_t k = 0;         ///< ids
  int64_t maxList = 0;   ///< the longest row list
};
CudaScatterPlan cudaScatterPlan(CudaContext &ctx, const HostTensor &idsOnHost, int64_t dim,
                                int64_t n, CudaStream s);

/// `index_add`: out = base with the rows of `src` added at the planned ids
/// along `dim` (`out` has base's type and its own buffer). Queued on `s`.
/// `reassociate` (default mode): when the outputs are too few to fill the
/// device, each output's list is cut into cudaScatterChunks chunks, summed by
/// a thread each, then folded onto base in chunk order (two launches).
void cudaScatterAdd(CudaContext &ctx, const HostTensor &base, const CudaScatterPlan &plan,
                    const HostTensor &src, int64_t dim, HostTensor &out, bool reassociate,
                    CudaStream s);

/// Launches kernel `ck`, which has a scatter-add store (codegen/CudaEmitter.h,
/// kCudaScatterWords), on `s`: its output (in `deviceBuffers`) holds
/// index_add's base, `plan` lists the ids' rows against `rows`. Default mode
/// (a kernel not deterministic) cuts long lists into cudaScatterChunks chunks
/// and folds them in a second launch; deterministic mode adds each element's
/// rows in list order in one.
void cudaLaunchScatter(CudaContext &ctx, const CudaKernel &ck, void *const *deviceBuffers,
                       const int64_t *params, const CudaScatterPlan &plan, int64_t rows,
                       CudaStream s);

/// The chunks each output's list is cut into (1: one thread per output, in
/// list order): as many (output, chunk) threads as two waves of `sms` full
/// SMs hold, no more, each chunk at least kScatterChunkMin entries of the
/// longest list.
int64_t cudaScatterChunks(int64_t total, int64_t maxList, int64_t sms);
constexpr int64_t kScatterChunkMin = 64;

} // namespace dt
