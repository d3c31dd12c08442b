// This file implements the lowering of one kernel of the kernel IR
// (codegen/KernelIR.h) to CUDA C++ for NVRTC (codegen/Nvrtc.h). The emitted
// kernel has exactly the semantics of KernelIR.h, which the reference
// interpreter states; the LLVM lowering implements the same contract.
//
// Needs: a kernel that passes verifyKernel (InternalError otherwise).
// Guarantees: one self-contained translation unit (no #include: NVRTC ships
// no C++ standard headers) that compiles with NVRTC without a warning, for
// sm_80 and sm_90 at least, and defines
//
//   extern "C" __global__ void <symbol>(const dt_args a);
//   struct dt_args { unsigned long long w[W]; };   // W = cudaArgWords(k)
//
// GPU ABI: the CPU ABI's two arrays passed BY VALUE as one kernel argument, so
// a launch copies nothing to the device: words [0, I+O) are the buffers
// (device pointers: inputs, then outputs), words [I+O, W) are the int64
// params in exactly the layout of KernelIR.h. cudaKernelArgs builds it. The
// kernel reads every index it needs from literal word positions, so the
// argument stays in the constant bank.
//
// Launch: blockDim = kCudaBlock (256) threads, gridDim from cudaLaunchDims.
//  * Elementwise: a grid-stride loop over the flattened iteration space. When
//    every used input is contiguous (row-major strides on dims of size > 1) or
//    a broadcast scalar (all strides 0) and every output is contiguous, each
//    thread handles 4 consecutive elements with 16-byte vector loads/stores
//    where aligned; otherwise it unravels the index and uses the strides.
//  * Reduction: when the reduced extent is >= kCudaBlockReduceMin, one block
//    per output element (warp shuffles, then shared memory across warps);
//    otherwise one warp per output element (shuffles only). The kernel makes
//    that choice itself from the params; cudaLaunchDims makes the same one.
//    Few outputs with long reductions (a full `sum`) are split over many
//    blocks and folded by a second launch (cudaReduceSplit). When the last
//    dim is reduced and every used input is contiguous or constant along it
//    (extent a multiple of 4), each thread reads 4 points of one row per step
//    with vector loads, as the elementwise path does. When the last dim is
//    kept (a sum over rows), the column path instead gives each thread one
//    output, so that a warp reads 32 neighbours of a row (cudaColumnReduction).
//    Float sums accumulate in f64 (as the IR says) but the association order is
//    the tree order of the threads, not row-major (the IR allows it).
//
// Floating point: NVRTC runs with --fmad=false (no contraction), IEEE division
// and sqrt, no fast math, so +, -, *, /, sqrt, casts and comparisons are
// bit-identical to the CPU backend and the interpreter, and so are f32 exp,
// tanh, sigmoid, erf, log, log1p and expm1 (dtensor's own, support/FloatMath.h,
// in the prelude). CUDA's sinf, cosf, powf and the f64 transcendentals are accurate to
// a few ulp but not always correctly rounded like glibc, so their results
// may differ from the CPU in the last 1-4 ulp. `random normal` takes
// its log and cos from support/FloatMath.h too (support/Random.h), so it is
// bit-exact like `random uniform`, iota and all integer ops. Integer semantics (wrap, truncating
// division, x / 0 = 0, saturating float->int casts) are the interpreter's exactly.
#pragma once

#include "codegen/KernelIR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

/// Threads per block for every emitted kernel.
constexpr int kCudaBlock = 256;
/// Reduced extents from this size up get one block per output element.
constexpr int64_t kCudaBlockReduceMin = 1024;
/// Elements each thread handles per step on the contiguous elementwise path.
constexpr int kCudaVector = 4;

/// The emitted translation unit.
struct CudaKernelSource {
  std::string source; ///< CUDA C++ for NVRTC
  std::string symbol; ///< the extern "C" __global__ function
  int argWords = 0;   ///< W: 8-byte words of the by-value dt_args argument
};

/// Lowers `k` to CUDA C++ defining `symbol` (a C identifier).
CudaKernelSource emitCudaKernel(const Kernel &k, const std::string &symbol);

/// The symbol the cuda backend (and its dry run) gives `k`: dt_k_<kernelHash hex>.
std::string cudaKernelSymbol(const Kernel &k);

/// What a process keeps `k`'s compiled module under (CudaContext::kernel, the
/// dry run's NullBackend): its printed IR, then the NVRTC tier (`quick`:
/// NvrtcCompiler::compileTier's), so the two tiers of one kernel never share
/// a module.
std::string cudaKernelKey(const Kernel &k, bool quick);

/// W = max(1, I + O + numParams(k)). At most 512 (the 4 KiB kernel-argument
/// limit every driver accepts); emitCudaKernel rejects larger kernels.
int cudaArgWords(const Kernel &k);

/// The dt_args words for a launch: the device pointers, then the params.
std::vector<uint64_t> cudaKernelArgs(const Kernel &k, void *const *deviceBuffers,
                                     const int64_t *params);

struct CudaLaunchDims {
  unsigned grid = 0; ///< 0 means nothing to launch (empty iteration space)
  unsigned block = kCudaBlock;
};

/// Launch geometry for `params` (the ABI array) on a device with `numSMs`
/// multiprocessors; grid-stride loops cover whatever the grid does not.
CudaLaunchDims cudaLaunchDims(const Kernel &k, const int64_t *params, int numSMs);

/// Blocks of kCudaBlock threads a multiprocessor holds at most (2048 threads
/// on sm_80 and sm_90); fewer when a kernel's registers do not fit.
constexpr int kCudaMaxResidentBlocks = 8;
/// Threads a multiprocessor holds at most: a wave is numSMs times this.
constexpr int kCudaSmThreads = kCudaMaxResidentBlocks * kCudaBlock;

/// Reduced extents from this size up, with fewer outputs than would fill the
/// device, are split (cudaReduceSplit).
constexpr int64_t kCudaSplitReduceMin = 32768;

/// Whether `k`'s arguments end with the two split words (every reduction
/// but deterministic mode's max and min, one chain per output; its sums split
/// on subtree edges of the leaf tree, ir/DeterministicOrder.h).
bool cudaSplitsReduction(const Kernel &k);

/// How many chunks each output of reduction `k` is cut into (1: one pass).
/// A block or warp per output: enough blocks for one full wave,
/// `residentBlocks` blocks of kCudaBlock threads on each of `numSMs`
/// multiprocessors (the compiled kernel's occupancy, at most 8; a second
/// wave a fraction full takes as long as a full one). The column path: 8
/// blocks a multiprocessor whatever the occupancy.
/// A split reduction runs in two launches of the same kernel: the last two
/// dt_args words are (split, scratch) with grid cudaSplitBlocks -- each block
/// reduces one chunk of one output (of a tile of outputs, on the column path)
/// into `scratch` (accumulator type, 8-byte slots: cudaSplitScratchBytes) --
/// then (-split, scratch) with a warp per output (grid cudaFoldBlocks), whose
/// lane l folds the l-th run of consecutive chunks in order before the warp
/// pairs neighbouring runs: a fixed order, the same every run, and on the
/// column path (each chunk a left fold of its rows) the order of a left fold
/// wherever it matters (max of -0 and +0).
/// With (0, 0) the kernel runs in one pass.
int64_t cudaReduceSplit(const Kernel &k, const int64_t *params, int numSMs,
                        int residentBlocks = kCudaMaxResidentBlocks);
/// The grid of a split reduction's first launch (kept * split, or with
/// columns tiles of 256 outputs * split).
int64_t cudaSplitBlocks(const Kernel &k, const int64_t *params, int64_t split);
/// The grid of a split reduction's second launch (a warp per output).
int64_t cudaFoldBlocks(const Kernel &k, const int64_t *params, int numSMs);

/// Reductions whose last dim is kept, at least this wide, take the column path.
constexpr int64_t kCudaColumnMin = 32;
/// Whether reduction `k` at `params` takes the column path: a thread per
/// output, consecutive outputs in consecutive threads (a sum over rows, as a
/// bias gradient is), each folding its points in row-major order from its
/// chunk's start (split as cudaReduceSplit says).
bool cudaColumnReduction(const Kernel &k, const int64_t *params);
int64_t cudaSplitScratchBytes(const Kernel &k, const int64_t *params, int64_t split);

/// A kernel with a scatter-add store (KernelIR.h; CudaScatter.cpp) ends its
/// arguments with kCudaScatterWords words: (rowStart, order, rows, split,
/// scratch). rowStart/order are device int64 arrays: the source rows whose
/// id is r are order[rowStart[r] .. rowStart[r + 1]) in ascending order
/// (runtime/CudaDataKernels.h's cudaScatterPlan), `rows` the output's extent
/// along the scattered dim 0. The output holds index_add's base before the
/// launch. split = 1: one launch (grid cudaScatterBlocks(..., 1)) adds each
/// element's rows onto it in list order. split > 1: each element's list is
/// cut into `split` chunks of ceil(len / split) rows whose sums go to
/// `scratch` (cudaScatterScratchBytes), then a second launch with -split
/// (grid cudaScatterBlocks(..., 1)) adds them onto the output in chunk order.
/// The plain outputs are written by the first launch.
constexpr int kCudaScatterWords = 5;
/// Points of one scatter row: the product of the dims after dim 0.
int64_t cudaScatterInner(const Kernel &k, const int64_t *params);
int64_t cudaScatterBlocks(const Kernel &k, const int64_t *params, int64_t rows, int64_t split,
                          int numSMs);
int64_t cudaScatterScratchBytes(const Kernel &k, const int64_t *params, int64_t rows,
                                int64_t split);

/// The device helpers every emitted kernel starts with (splitmix64 RNG,
/// NaN-propagating maximum/minimum, saturating casts, wrapping integer
/// division and power, vector loads). Exposed for tests.
const char *cudaPrelude();

} // namespace dt
