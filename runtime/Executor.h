// This file implements the SPMD executor: it runs a module lowered by
// passes/SpmdLower.h on a Backend (runtime/Backend.h) — the cpu backend's
// virtual mesh of threads, one process per rank under MPI, GPUs — and returns
// global values. It is written once against the backend interface: it never
// reads a buffer itself, and never knows which backend it holds.
//
// Per rank, every value is a local block: a tensor of shape
// localBlock(type, meshRank) (uneven and size-0 blocks included) in the rank
// Device's memory. Host values are held whole by every rank (every rank
// computes host ops redundantly). A value on a mesh the rank does not belong
// to has no block on that rank: the rank skips its instructions, and
// calls/loops/prints run on every rank so that collectives stay in step.
// A program may use several meshes (`mesh q = [..] devices [2, 3, 6, 7]`);
// the world has one rank per distinct device id (worldIds(): world rank w is
// the w-th smallest id), so sparse ids allocate nothing for the ids between.
//
// Local compute: calls of fused kernels run as compiled kernel-IR kernels
// (runtime/KernelRuntime.h, with the memory planner: buffers released after
// their last use, pooled and reused, kernels in place over dying inputs);
// matmul through the Device's BLAS; transpose, index_select and index_add
// through its data-movement primitives; reshape as a view of the same
// buffer; the remaining ops through the
// Device's fallbackLocalOp (the cpu backend's reference kernels). Collectives
// run through runCollectiveStep (runtime/CollectiveSteps.h) on the Device's
// group of the step's mesh axes.
//
// `print` and the returned values are assembled through the communicator:
// every rank's block is gathered to world rank 0 (allGatherV over the world),
// which assembles the global value (formatted exactly as the reference
// evaluator does) and writes it at once (streamed: a long loop shows its
// prints as it runs; a write error on the stream fails the run). A rank failure (e.g. an index out
// of range in a kernel) becomes RuntimeFault("rank 3 failed: ...") after the other ranks were woken
// up — never a hang; the prints that completed before it are still written.
//
// Needs: a verified, SPMD-lowered module (no `relayout`, no `grad`) with
// concrete shapes. No state outlives run() except the options, the output
// stream, the compiled kernel tables and the per-rank call-site caches, so one
// Executor may run several functions, and later runs do not recompile.
#pragma once

#include "ir/IR.h"
#include "runtime/Backend.h"
#include "runtime/KernelRuntime.h"

#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dt {

/// Told, on world rank 0, about each top-level `for` loop of the entry
/// function as it runs (`dtensorc run --progress` draws it on a terminal).
class LoopProgress {
public:
  virtual ~LoopProgress() = default;
  /// A loop of `trips` iterations at `loc` starts.
  virtual void begin(SrcLoc loc, uint64_t trips) = 0;
  /// `done` iterations have finished.
  virtual void step(uint64_t done) = 0;
  /// The program is about to write output (the indicator makes room).
  virtual void clear() = 0;
  /// The loop ended (or failed).
  virtual void end() = 0;
};

/// One `for` loop's report to a LoopProgress for the loop's lifetime: only a
/// loop entered while `nest` is 0 (an outermost loop) reports, and only when
/// `progress` is set. Shared by the executor and the reference evaluator.
class LoopReport {
public:
  LoopReport(int &nest, LoopProgress *progress, SrcLoc loc, uint64_t trips)
      : nest_(nest), p_(nest == 0 ? progress : nullptr) {
    ++nest_;
    if (p_)
      p_->begin(loc, trips);
  }
  ~LoopReport() {
    --nest_;
    if (p_)
      p_->end();
  }
  LoopReport(const LoopReport &) = delete;
  LoopReport &operator=(const LoopReport &) = delete;
  void step(uint64_t done) {
    if (p_)
      p_->step(done);
  }

private:
  int &nest_;
  LoopProgress *p_;
};

struct ExecOptions {
  /// World size; 0 = requiredRanks(module). Any other value must equal it.
  int ranks = 0;
  /// After each printed value, one line per device with its local component
  /// (`device 3: [[20, 14]]`) of the value as the program wrote it (before
  /// the gather that `print` needs).
  bool components = false;
  /// After each printed value, a table of which devices hold which block.
  bool visualize = false;
  /// Run fused kernels (`call @fused.N`) as JIT-compiled native code and
  /// float matmuls through BLAS; false runs every op on the reference kernels
  /// (`--no-jit`, for debugging).
  bool jit = true;
  /// Only for the Executor constructor without a Backend (it makes a cpu
  /// backend with these): the Session's kernel compilers (kernels compile
  /// once per CpuJIT), O2 for large iteration spaces, O0 (`quickJit`) for
  /// small ones; null = the backend makes its own.
  CpuJIT *cpuJit = nullptr;
  CpuJIT *quickJit = nullptr;
  /// Release buffers after their last use, reuse them and run kernels in
  /// place (runtime/KernelRuntime.h); false keeps every value to the end.
  bool memoryPlan = true;
  /// Progress of top-level loops (not owned; null: none).
  LoopProgress *progress = nullptr;
  /// Test hook: world rank 0 exits the process (as a crash would) in the
  /// middle of a `save_checkpoint`, after writing its shard and before the
  /// index, or of a `save`, after writing its blocks and before the file
  /// replaces the old one (env DTENSOR_TEST_CRASH_IN_SAVE=1 for `dtensorc run`).
  bool crashInSave = false;
  /// Set (by a signal handler: the REPL's Ctrl-C) to stop a run: every rank checks it when it
  /// enters a block (each loop iteration, each call) and the run ends with RuntimeFault
  /// "interrupted". A kernel or collective already running finishes first.
  const std::atomic<bool> *interrupt = nullptr;
  /// Iterations one `while` or `for` may run (0: no limit); past it the run
  /// ends with RuntimeFault (CompileOptions::maxLoopTrips).
  int64_t maxLoopTrips = 0;
  /// Time every leaf instruction (kernel launch, collective, local op)
  /// between two device synchronizations, into RankStats::profile
  /// (`dtensorc run --profile`). Slower: the device waits after each.
  bool profile = false;
  /// The program's sources (not owned; may be null) and the program's own
  /// file in them: a run-time fault in an instruction of another file (a
  /// module's function) names that file.
  const SourceManager *sources = nullptr;
  int programFile = 0;
};

/// Counters of the last run (`dtensorc run --stats`).
struct ExecStats {
  std::vector<RankStats> ranks; ///< per world rank
  int64_t kernels = 0;          ///< kernel functions in the module
  int64_t compiles = 0;         ///< JIT compiles during this run (cache misses)
  int64_t cacheHits = 0;        ///< JIT cache hits during this run
  int64_t diskHits = 0;         ///< kernels loaded from the disk cache during this run
  double compileSeconds = 0;    ///< JIT compile time during this run
};

/// One `print` of a run: the global value and the layout it was printed from.
struct PrintedValue {
  std::string label;
  HostTensor value;
  TensorType type;     ///< the program's type of the printed value (before any gather)
  bool isLine = false; ///< a `print` of several items (or none): `line` holds it
  std::string line;    ///< its whole line (label and value unset)
  std::vector<HostTensor> lineValues; ///< the line's values, global, on the host
};

class Executor {
public:
  /// Runs `m` on `backend` (not owned: the Session's), printing to `out`.
  Executor(const Module &m, Backend &backend, std::ostream &out, ExecOptions opts = {});
  /// Runs a compiled program (its SPMD module, the kernel IR of its
  /// `kernels` step and the memory plan of its `memplan` step; nothing is
  /// lowered or planned again) on `backend`. `prog` outlives the Executor.
  Executor(const CompiledProgram &prog, Backend &backend, std::ostream &out, ExecOptions opts = {});
  /// Runs `m` on a cpu backend of its own (opts.cpuJit / opts.quickJit).
  Executor(const Module &m, std::ostream &out, ExecOptions opts = {});
  ~Executor();

  Backend &backend() { return backend_; }

  /// The device ids of the module's meshes, sorted and distinct: world rank
  /// w runs device id worldIds(m)[w] ({0} when there is no mesh).
  static std::vector<int64_t> worldIds(const Module &m);
  /// The world size the module's meshes need: the number of distinct device ids.
  static int requiredRanks(const Module &m);

  /// Runs `fn` on every rank, with the GLOBAL argument values (each rank takes
  /// its block), and returns the global results assembled from the blocks
  /// (in the process that hosts world rank 0; empty in the others).
  /// Throws RuntimeFault for a rank failure or a bad rank count,
  /// InternalError for IR it cannot run.
  std::vector<HostTensor> run(const std::string &fn, const std::vector<HostTensor> &args);

  /// The values printed by the last run, in program order.
  const std::vector<PrintedValue> &printed() const { return printed_; }

  /// Counters of the last run.
  const ExecStats &stats() const { return stats_; }

  /// Calls deeper than this raise RuntimeFault.
  static constexpr int kMaxCallDepth = 256;

  struct Shared; ///< state shared by the rank threads of one run (Executor.cpp)

private:
  const Module &m_;
  std::ostream &out_;
  ExecOptions opts_;
  std::vector<PrintedValue> printed_;
  ExecStats stats_;
  std::unique_ptr<Backend> ownBackend_;
  Backend &backend_;
  /// Compiled kernels and the memory plan of m_, kept across runs (rebuilt
  /// when the module's functions or their bodies change).
  std::unique_ptr<KernelTable> kernels_;
  std::unique_ptr<LivenessTable> liveness_;
  /// The compiled program run (null: a bare module; kernels and plan are
  /// then made here).
  const CompiledProgram *program_ = nullptr;
  std::vector<RankState> states_; ///< per rank: call-site launch caches
  uint64_t tablesFor_ = 0;        ///< fingerprint of the module the tables describe
};

} // namespace dt
