// This file implements the SPMD executor of the CPU backend: it runs a module
// lowered by passes/SpmdLower.h on a virtual mesh — a ThreadWorld with one
// thread per rank (runtime/ThreadComm.h) — and returns global values.
//
// Per rank, every value is a local block: a HostTensor of shape
// localBlock(type, meshRank) (uneven and size-0 blocks included). Host values
// are held whole by every rank (every rank computes host ops redundantly). A
// value on a mesh the rank does not belong to has no block on that rank: the
// rank skips its instructions, and calls/loops run on every rank so that
// collectives stay in step. World rank w is device id w: a program may use
// several meshes (`mesh q = [..] devices [2, 3, 6, 7]`), and the world has
// max(device id) + 1 ranks (requiredRanks()).
//
// Local compute goes through runLocalOp (runtime/LocalOps.h), except calls of
// fused kernels, which run JIT-compiled (runtime/KernelRuntime.h, with the
// memory planner: buffers released after their last use, pooled and reused,
// kernels in place over dying inputs); collectives
// through runCollectiveStep (runtime/CollectiveSteps.h) on the group of world
// ranks of the step's mesh axes. `print` prints, once, the global value
// (formatted exactly as the reference evaluator does) in program order; the
// first device of the value's mesh provides it. A rank failure (e.g. an
// index out of range in a kernel) becomes RuntimeFault("rank 3 failed: ...")
// after the other ranks were woken up — never a hang; the prints that
// completed before it are still written.
//
// Needs: a verified, SPMD-lowered module (no `relayout`, no `grad`) with
// concrete shapes. No state outlives run() except the options, the output
// stream and the compiled kernel tables, so one Executor may run several
// functions, and later runs do not recompile.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"
#include "runtime/KernelRuntime.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dt {

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
  /// The Session's kernel compilers (kernels compile once per CpuJIT): O2
  /// for large iteration spaces, O0 (`quickJit`) for small ones; null = the
  /// Executor makes its own when the module has kernels.
  CpuJIT *cpuJit = nullptr;
  CpuJIT *quickJit = nullptr;
  /// Release buffers after their last use, reuse them and run kernels in
  /// place (runtime/KernelRuntime.h); false keeps every value to the end.
  bool memoryPlan = true;
};

/// Counters of the last run (`dtensorc run --stats`).
struct ExecStats {
  std::vector<RankStats> ranks; ///< per world rank
  int64_t kernels = 0;          ///< kernel functions in the module
  int64_t compiles = 0;         ///< JIT compiles during this run (cache misses)
  int64_t cacheHits = 0;        ///< JIT cache hits during this run
  double compileSeconds = 0;    ///< JIT compile time during this run
};

/// One `print` of a run: the global value and the layout it was printed from.
struct PrintedValue {
  std::string label;
  HostTensor value;
  TensorType type; ///< the program's type of the printed value (before any gather)
};

class Executor {
public:
  Executor(const Module &m, std::ostream &out, ExecOptions opts = {});
  ~Executor();

  /// The world size the module's meshes need: max over meshes of their
  /// largest device id + 1 (1 when there is no mesh).
  static int requiredRanks(const Module &m);

  /// Runs `fn` on every rank, with the GLOBAL argument values (each rank takes
  /// its block), and returns the global results assembled from the blocks.
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
  std::unique_ptr<CpuJIT> ownJit_, ownQuickJit_;
  /// Compiled kernels and the memory plan of m_, kept across runs (rebuilt
  /// when the module's functions or their bodies change).
  std::unique_ptr<KernelTable> kernels_;
  std::unique_ptr<LivenessTable> liveness_;
  std::vector<RankState> states_; ///< per rank: call-site launch caches
  uint64_t tablesFor_ = 0;        ///< fingerprint of the module the tables describe
};

} // namespace dt
