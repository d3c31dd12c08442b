// This file implements the backend interface: what the one SPMD executor
// (runtime/Executor.h) needs from a machine to run a per-rank program. It is
// small on purpose (tinygrad's `Compiled(allocator, renderer, compiler,
// runtime)`): a Backend per process compiles kernel IR and runs the ranks it
// hosts, each on a Device that allocates buffers, launches kernels, multiplies
// matrices, moves data and talks to the other ranks through Communicators.
//
//   Executor ──▶ Backend  (one per Session and kind: cpu, mpi, cuda, null)
//                  compile(kernel IR) ──▶ NativeKernel     (CpuJIT / NVRTC)
//                  run(ranks, body)   ──▶ body(Device&) per hosted rank
//                                          (threads / this process / GPU streams)
//               Device   (one per rank)
//                  allocate, fromHost, toHost          buffers (pooled by the executor)
//                  launch(NativeKernel, buffers, params)
//                  matmul                              BLAS / cuBLAS
//                  copyRegion, transpose, gather, scatterAdd
//                  fallbackLocalOp                     the CPU-only reference path
//                  world(), group(members)             Communicators
//
// Values: the executor holds every local block as a HostTensor (dtype, shape,
// shared Buffer); the Buffer's `where()` says whether its pointer is host or
// device memory. Only the Device that made a buffer reads or writes it; the
// executor never dereferences one (it hands pointers to Device methods and to
// Communicators, whose buffers are the Device's memory too).
//
// Adding a backend: subclass Backend and Device (runtime/CpuBackend.h is the
// model; runtime/NullBackend.h the smallest), then name it in makeBackend()
// (runtime/Backend.cpp). Nothing in the executor changes.
//
// State: a Backend owns everything it uses (compilers, worlds, contexts);
// there are no globals, so two Sessions on two threads share nothing.
#pragma once

#include "codegen/KernelIR.h"
#include "ir/IR.h"
#include "runtime/Communicator.h"
#include "runtime/HostTensor.h"
#include "runtime/LocalOps.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt {

class CpuJIT;
class SourceManager;

/// A kernel compiled by a Backend: a CpuJIT::KernelFn on the CPU, a
/// CudaKernel* on CUDA; only the Backend's Devices interpret it.
struct NativeKernel {
  const void *handle = nullptr;
};

/// Kernel compiler counters of a Backend (cumulative).
struct CompileCounters {
  int64_t compiles = 0;  ///< kernels compiled (cache misses)
  int64_t cacheHits = 0; ///< compile requests answered from a cache
  int64_t diskHits = 0;  ///< kernels loaded from the on-disk kernel cache
  double seconds = 0;    ///< wall time compiling
};

/// One rank of a Backend.
class Device {
public:
  explicit Device(int worldRank) : rank_(worldRank) {}
  virtual ~Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// The world rank (the rank-th smallest device id of the program's meshes).
  int rank() const { return rank_; }

  /// The instruction this rank is at (set by the executor before each
  /// collective and `print`; null: gathering the results), for fault reports
  /// that name the collective and its source line. A plain store.
  void at(const Inst *in) { site_.store(in, std::memory_order_relaxed); }
  const Inst *site() const { return site_.load(std::memory_order_relaxed); }

  // --- memory -------------------------------------------------------------
  /// False for a device that computes nothing (the null backend, a cuda
  /// dry run): its values are zeros, so the executor's `save` and
  /// `save_checkpoint` write no file (RankStats::savesSkipped).
  virtual bool computes() const { return true; }

  /// A zero-filled buffer of `bytes` bytes in this device's memory.
  virtual std::shared_ptr<Buffer> allocate(int64_t bytes) = 0;
  /// A buffer whose contents are unspecified, for a result that its producer
  /// writes in full (a kernel's output): no zero-fill pass. Defaults to
  /// allocate().
  virtual std::shared_ptr<Buffer> allocateUninit(int64_t bytes) { return allocate(bytes); }
  /// A zero-filled tensor on this device.
  HostTensor empty(DType dt, const std::vector<int64_t> &shape);
  /// A tensor on this device whose contents are undefined (the caller
  /// writes every element).
  HostTensor emptyUninit(DType dt, const std::vector<int64_t> &shape);
  /// The host tensor `h` as a tensor of this device (cpu: `h` itself, shared).
  virtual HostTensor fromHost(const HostTensor &h) = 0;
  /// The device tensor `t` as a host tensor (cpu: `t` itself, shared).
  virtual HostTensor toHost(const HostTensor &t) = 0;
  /// A copy of `t` in a new buffer.
  HostTensor clone(const HostTensor &t);

  // --- kernels --------------------------------------------------------------
  /// Runs a compiled kernel with the kernel-IR ABI (codegen/KernelIR.h):
  /// `bufs` are the inputs then the output, `params` the launch params.
  virtual void launch(const NativeKernel &k, void *const *bufs, const int64_t *params) = 0;
  /// launch() for a kernel with a scatter-add store (KernelIR.h) whose output
  /// already holds index_add's base: `ids` (this device's tensor, checked
  /// against `rows`, the output's extent along the scatter's dim) are the
  /// scatter's ids. The default launches it as any kernel (the cpu's adds
  /// in point order); a GPU plans the rows from the ids.
  virtual void launchScatter(const NativeKernel &k, void *const *bufs, const int64_t *params,
                             const HostTensor &ids, int64_t rows) {
    (void)ids, (void)rows;
    launch(k, bufs, params);
  }

  // --- dense matmul ---------------------------------------------------------
  /// a @ b (numpy matmul) through the device's BLAS, or nullopt when this
  /// dtype combination has no BLAS path (the caller then uses another one).
  /// `transA` / `transB`: read that operand with its last two dims swapped
  /// (a matmul's flags, ir/IR.h matmulTransposed; ignored on a 1-D operand).
  virtual std::optional<HostTensor> matmul(const HostTensor &a, const HostTensor &b, DType out,
                                           bool transA, bool transB) = 0;
  /// matmul writing the product into `c`, which has the result's dtype and
  /// shape and a buffer of at least its bytes (a buffer the executor's pool
  /// hands back: the product then needs no new memory). False when the
  /// Device cannot (default; the caller then uses matmul()).
  virtual bool matmulInto(const HostTensor &a, const HostTensor &b, HostTensor &c, bool transA,
                          bool transB) {
    (void)a, (void)b, (void)c, (void)transA, (void)transB;
    return false;
  }
  /// matmul for deterministic mode: every element's bits independent of the
  /// operands' other rows and columns (runtime/BlasDeterministic.h), or
  /// nullopt (default): the executor then uses the reference kernel, which is
  /// (one f64 accumulation per element in k order).
  virtual std::optional<HostTensor> matmulDeterministic(const HostTensor &, const HostTensor &,
                                                        DType, bool, bool) {
    return std::nullopt;
  }
  /// matmulDeterministic writing into `c` as matmulInto does (a pooled
  /// buffer); false when the Device cannot (default).
  virtual bool matmulDeterministicInto(const HostTensor &a, const HostTensor &b, HostTensor &c,
                                       bool transA, bool transB) {
    (void)a, (void)b, (void)c, (void)transA, (void)transB;
    return false;
  }

  // --- data movement --------------------------------------------------------
  /// Copies the box `extent` at coordinate `srcStart` of a row-major tensor of
  /// shape `srcShape` to coordinate `dstStart` of one of shape `dstShape`
  /// (`esize` bytes per element; pointers into this device's buffers).
  virtual void copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                          const std::vector<int64_t> &srcStart, void *dst,
                          const std::vector<int64_t> &dstShape,
                          const std::vector<int64_t> &dstStart, const std::vector<int64_t> &extent,
                          int64_t esize) = 0;
  /// Permutes the dims of `a` (`transpose`).
  virtual HostTensor transpose(const HostTensor &a, const std::vector<int64_t> &perm) = 0;
  /// Rows of `src` along `dim` picked by `ids` (`index_select`); RuntimeFault
  /// for an id out of range.
  virtual HostTensor gather(const HostTensor &src, const HostTensor &ids, int64_t dim) = 0;
  /// `base` with the rows of `src` added at `ids` along `dim` (`index_add`).
  /// `reassociate` (default mode): a device may add an output's rows in any
  /// grouping (cuda splits long lists); else in the reference's order, ids
  /// order (deterministic mode).
  virtual HostTensor scatterAdd(const HostTensor &base, const HostTensor &ids,
                                const HostTensor &src, int64_t dim, bool reassociate) = 0;
  /// scatterAdd into `base` itself, a buffer no other value holds and that
  /// `ids` and `src` do not share (the executor's dying base: a `concat`'s
  /// rows go into its zeros without copying them first). By default through
  /// scatterAdd.
  virtual void scatterAddInPlace(HostTensor &base, const HostTensor &ids, const HostTensor &src,
                                 int64_t dim, bool reassociate) {
    base = scatterAdd(base, ids, src, dim, reassociate);
  }

  // --- the rest ----------------------------------------------------------------
  /// A local op with no kernel-IR kernel, no BLAS call and no data-movement
  /// primitive above (sources that fusion leaves alone, file and checkpoint
  /// loads, `check_factor`, and every op under `--no-jit`: einsum, integer
  /// matmul and transpose are op kernels, codegen/OpKernels.h; reshape is a view the
  /// executor makes itself). The cpu backend runs it on the reference kernels
  /// (runtime/LocalOps.h); other backends throw RuntimeFault naming the op.
  virtual std::vector<HostTensor> fallbackLocalOp(const Inst &in,
                                                  const std::vector<const HostTensor *> &args,
                                                  const std::vector<TensorType> &resultTypes,
                                                  LocalPlace place) = 0;

  /// Waits until every operation queued on this rank has finished (a GPU
  /// rank's stream; nothing on the cpu): `time()` reads the clock after it.
  virtual void synchronize() {}

  // --- communication ------------------------------------------------------------
  /// The group of all world ranks.
  virtual Communicator &world() = 0;
  /// The group of all world ranks for HOST buffers (flags, checksums, the
  /// clock): world() where device memory is host memory; a GPU backend's
  /// host-side group otherwise.
  virtual Communicator &hostWorld() { return world(); }
  /// The group `members` (world ranks in group-rank order, containing this
  /// rank); every member asks for the same list.
  virtual Communicator &group(const std::vector<int> &members) = 0;

private:
  int rank_;
  std::atomic<const Inst *> site_{nullptr}; ///< lock-free: a signal handler reads it (MpiBackend)
};

/// A way of running per-rank programs: one per Session and kind.
class Backend {
public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  /// `cpu`, `mpi`, `cuda`, `null`.
  virtual const char *name() const = 0;
  /// The backend's own lines for `--stats` after a run ("" for none).
  virtual std::string report() const { return ""; }

  /// Compiles a kernel (once per structure; later calls hit a cache).
  /// `small`: its iteration space is small, so compile speed beats code
  /// quality (the cpu backend's O0 tier).
  virtual NativeKernel compile(const Kernel &k, bool small) = 0;
  virtual CompileCounters compileCounters() const { return {}; }
  /// Whether a fused kernel with gathers also gets its slice kernel
  /// (codegen/FusedKernel.h sliceKernel), launched when every gather's ids
  /// are consecutive: where a gather's per-point id load keeps the loop from
  /// vectorizing (the cpu's LLVM kernels), not where it costs little.
  virtual bool compilesSliceKernels() const { return false; }
  /// Whether the devices' matmul() multiplies i32/i64 themselves (the cpu's
  /// runtime/IntGemm.h); else integer products run as contraction kernels.
  virtual bool multipliesIntegers() const { return false; }
  /// Compiles `kernels` (each with compile()'s `small`) ahead of their
  /// compile() calls, which then hit the cache: in parallel where the
  /// backend's compiler allows (cuda: NVRTC on the host's cores). The
  /// default does nothing.
  struct KernelToCompile {
    const Kernel *kernel;
    bool small;
  };
  virtual void precompile(const std::vector<KernelToCompile> &kernels) { (void)kernels; }

  /// Runs `body` on every rank of a world of `ranks` ranks that this process
  /// hosts (cpu: all, as threads; mpi: this process's rank) and returns when
  /// they all returned. A rank that throws wakes the others (never a hang);
  /// then run() throws RuntimeFault("rank R failed: ...") for the first
  /// failure, or rethrows its InternalError.
  virtual void run(int ranks, const std::function<void(Device &)> &body) = 0;

  /// Before run(): the processes of a multi-process backend check that they
  /// run the same program (`fingerprint`: the module with its meshes, made
  /// only when needed) on the same binary, and that the job has as many
  /// ranks as the program needs (`ranks`); RuntimeFault naming the first
  /// difference (in every process: rank 0 reports it, the others throw
  /// ReportedElsewhere after rank 0 wrote it). One process has nothing to compare.
  virtual void agree(int ranks, const std::function<uint64_t()> &fingerprint) {
    (void)ranks;
    (void)fingerprint;
  }

  /// Whether the backend wants prepareGroups() before each run().
  virtual bool createsGroupsAhead() const { return false; }
  /// Before run(), after agree(): every communicator group the program can
  /// use (world-rank member lists, sorted, the whole world included), for a
  /// backend whose group creation must run in one order on every process
  /// (mpi with --ranks-per-process: its ranks are threads that would
  /// otherwise create process groups lazily, each in its own order, and could
  /// wait on each other forever). Called only when createsGroupsAhead().
  virtual void prepareGroups(const std::vector<std::vector<int>> &groups) { (void)groups; }

  /// Whether this process hosts world rank `r` (the executor prints and
  /// returns values where rank 0 lives).
  virtual bool hosts(int r) const {
    (void)r;
    return true;
  }
};

/// Options of makeBackend.
struct BackendOptions {
  /// The Session's CPU kernel compilers (O2, and O0 for small kernels); null =
  /// the backend makes its own.
  CpuJIT *cpuJit = nullptr;
  CpuJIT *quickJit = nullptr;
  /// argc/argv for MPI_Init (may stay null).
  int *argc = nullptr;
  char ***argv = nullptr;
  /// Multi-process backends: a rank that waits this long in a collective
  /// ends the job with a report (runtime/FaultWatch.h).
  double faultTimeout = 60;
  /// The mpi backend: world ranks each process hosts as threads
  /// (`--ranks-per-process K`, runtime/HybridComm.h); 1 = one per process.
  int ranksPerProcess = 1;
  /// The program's source files, for fault reports that name a source line.
  const SourceManager *sources = nullptr;
  /// `cuda` only (`dtensorc run --backend cuda --dry-run`): plan the run
  /// without a GPU -- every kernel compiled by NVRTC for sm_90, every launch's
  /// geometry computed, every rank's collectives counted -- and compute
  /// nothing (runtime/NullBackend.h).
  bool dryRun = false;
};

/// The backend named `name` (cpu, mpi, cuda, null). RuntimeFault for an
/// unknown name, or one line saying what is missing on this machine (no MPI
/// build, no NVIDIA driver).
std::unique_ptr<Backend> makeBackend(const std::string &name, BackendOptions opts = {});

/// The names makeBackend knows, for usage messages: "cpu, mpi, cuda, null".
const char *backendNames();

} // namespace dt
