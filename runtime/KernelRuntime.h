// This file implements the compiled path of the CPU executor and its memory
// planner: the JIT-compiled fused kernels of a module (KernelTable), the
// per-block liveness of values (LivenessTable) and, per rank, the buffer pool,
// the launch cache and the statistics (RankState).
//
// Kernels: every fusion-pass kernel function (passes/Fusion.h) is turned into
// kernel IR (codegen/FusedKernel.h) and compiled through the Backend
// (runtime/Backend.h; the cpu backend's two CpuJIT tiers: O0 for small
// iteration spaces, O2 otherwise) BEFORE the ranks start, so ranks only read
// the table; the backend's cache makes a kernel compile once whatever the
// sizes and however many call sites or ranks use it. Buffers come from, and
// kernels launch on, the rank's Device: this file is backend-independent.
//
// Memory plan (per rank, by liveness): a value defined in a block (or a block
// argument) is released right after its last use in that block (a use inside a nested region counts
// as a use by the instruction that owns the region; an unused value dies at
// its definition). A released buffer that no other value shares goes to the
// rank's pool, and a later kernel output (or float matmul product, or
// collective result) of exactly its byte size takes it instead of a new
// allocation; the pool keeps at most 4 buffers of one size. Only an exact
// fit: a smaller output that took a larger buffer would leave the next output
// of that larger size to allocate anew while the pool's smaller buffers
// stay unused (the "at least half" rule this replaced kept mlp_tp's peak at
// 14028 bytes a rank, exact fits 5496; tests/memory/peak_check.sh). A kernel
// without a reduction writes its output in place into an input that dies at
// the call, has exactly the output's local shape and byte size and is not
// shared: that is what makes `var` updates in place. The accounting counts
// every distinct buffer held by a value of the rank or by its pool; the peak of
// that sum is the rank's peak memory.
//
// State: the tables are built per Executor::run and read-only afterwards;
// each RankState is touched by its rank's thread only.
#pragma once

#include "codegen/FusedKernel.h"
#include "codegen/OpKernels.h"
#include "passes/MemoryPlan.h"
#include "passes/Pipeline.h"
#include "runtime/Backend.h"
#include "runtime/HostTensor.h"
#include "runtime/RefKernels.h"

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace dt {

/// The compiled kernels of one module.
class KernelTable {
public:
  struct Entry {
    FusedKernel fk;
    NativeKernel native;
    /// reads[o][i]: output o's stored value depends on input i. An output may
    /// overwrite a dying input in place only then: its store follows the
    /// input's load at every point (another output's need not).
    std::vector<std::vector<char>> reads;
    /// The slice kernel (codegen/FusedKernel.h), where the backend compiles
    /// one and the kernel is not small; `sliceNative` its handle.
    std::optional<SliceKernel> slice;
    NativeKernel sliceNative;
  };
  /// Builds and compiles the kernel of every kernel function of `m` through
  /// `backend`, as `small` when the kernel's whole iteration space has at most
  /// kQuickElements elements (launch overhead dominates there anyway, so the
  /// cpu backend compiles it at O0: ~5x faster).
  /// Also compiles the op kernels (codegen/OpKernels.h) of `m`'s other
  /// functions.
  KernelTable(const Module &m, Backend &backend);
  /// Compiles the kernel IR the pipeline's `kernels` step made (a
  /// CompiledProgram's kernels(); nothing is lowered again), and the op
  /// kernels of `m` (the program's module).
  KernelTable(const std::vector<ProgramKernel> &kernels, const Module &m, Backend &backend);
  static constexpr int64_t kQuickElements = 1 << 14;
  /// A fused kernel compiled `small`: its iteration space has at most
  /// kQuickElements elements (the cpu backend's O0, NVRTC's quick tier).
  static bool isSmall(const FusedKernel &fk) {
    return numElements(fk.iterType.shape) <= kQuickElements;
  }
  /// The kernel `in` calls, or null when `in` is not a kernel call.
  const Entry *find(const Inst &in) const;

  /// A local op that runs as kernel IR outside the fused kernels: an
  /// `einsum`, a `matmul` BLAS has no dtype for (integers, bool), a
  /// `transpose` on a device backend (the cpu device's own transpose is a
  /// tiled host loop: its memory is the host's). A float einsum that is one matmul (`blas`) goes to
  /// the Device's matmul, and to the kernel only where that has no BLAS path
  /// (`main` is then compiled on every backend but the cpu's, whose BLAS
  /// takes every float dtype).
  struct OpEntry {
    OpKernel op;
    NativeKernel main, finish; ///< null handles: not compiled
    std::optional<EinsumMatmulPlan> blas;
  };
  /// The op kernel of `in`, or null.
  const OpEntry *findOp(const Inst &in) const {
    auto it = byInst_.find(&in);
    return it == byInst_.end() ? nullptr : &it->second;
  }
  /// Op kernels compiled (for the statistics).
  int64_t opKernels() const { return (int64_t)byInst_.size(); }

private:
  void addEntry(const std::string &name, Entry e);
  void addOpKernels(const Module &m, Backend &backend);
  /// Compiles every pending kernel: Backend::precompile on all of them (in
  /// parallel where the backend can), then compile() on each in order.
  void compileAll(Backend &backend);
  std::unordered_map<std::string, Entry> byName_;
  std::unordered_map<const Inst *, OpEntry> byInst_;
  struct Pending {
    const Kernel *kernel;
    bool small;
    NativeKernel *native; ///< where the compiled handle goes
  };
  std::vector<Pending> pending_; ///< built, not yet compiled
  bool slices_ = false;          ///< the backend compiles slice kernels
};

/// The memory plan (passes/MemoryPlan.h) the executor releases buffers by.
using LivenessTable = MemoryPlan;

/// One line of `--profile`: an instruction's runs and their wall time (the
/// first run apart: it carries one-time costs, a GPU's module loads).
struct OpProfile {
  int64_t count = 0;
  double seconds = 0;      ///< all runs
  double firstSeconds = 0; ///< the first run
};

/// Per-rank counters of one run.
struct RankStats {
  int64_t liveBytes = 0;
  int64_t peakBytes = 0;
  int64_t kernelCalls = 0; ///< compiled kernel launches
  int64_t inPlace = 0;     ///< launches that wrote into a dying input
  int64_t reused = 0;      ///< outputs that took a pooled buffer
  int64_t collectives = 0; ///< collective steps run
  /// `save`/`save_checkpoint` statements that wrote nothing because the
  /// device computes nothing (Device::computes: the null backend, a cuda dry
  /// run): their zeros would have replaced the files.
  int64_t savesSkipped = 0;
  /// Local ops run by the Device's fallback (reference kernels on the host,
  /// not kernel IR), by op name: what the CUDA backend could not run.
  std::map<std::string, int64_t> fallbackOps;
  /// ExecOptions::profile: wall time per instruction ("fused.3 line 7",
  /// "all_reduce line 9"), each timed between two device synchronizations.
  std::map<std::string, OpProfile> profile;
};

/// `--profile`'s table: the `top` instructions of a profile by the time of
/// their runs after the first (ms, share, runs, ms per run), each with its
/// first run's time apart, then the totals.
std::string formatProfile(const std::map<std::string, OpProfile> &profile, size_t top = 25);

/// Gather ids checked against a bound. check() tests that every id of `ids`
/// lies in [0, bound) (RuntimeFault as the reference evaluator's) unless
/// these very ids were checked against `bound` already: checked ids are held
/// (HeldTensor), so they cannot change while listed. A loop-invariant ids
/// tensor is thus checked once, not on every launch (on a GPU, a copy to the
/// host and a wait each time).
class CheckedIds {
public:
  using Progression = ref::IdProgression;
  /// `op` names the op in the fault (index_select, index_add).
  Progression check(Device &dev, const HostTensor &ids, int64_t dim, int64_t bound,
                    const char *op = "index_select");
  void clear() { held_.clear(); }

private:
  struct Entry {
    HeldTensor held;
    int64_t bound;
    Progression ids; ///< check's answer
  };
  static constexpr size_t kMax = 8;             ///< remembered at most
  static constexpr int64_t kMaxBytes = 4 << 20; ///< larger ids are checked each time
  std::vector<Entry> held_;                     ///< most recent last
};

/// One rank's pool, launch cache and accounting.
class RankState {
public:
  explicit RankState(bool reuse) : reuse_(reuse) {}

  /// Starts a run: clears the counters, the accounting and the pool; keeps
  /// the call sites (their launches stay valid for the same module).
  void startRun();

  /// Buffers the pool keeps at most, in all and of one byte size (a released
  /// buffer beyond that goes back to the device, whose own cache serves
  /// every allocation: kernel outputs, matmul products and collective
  /// results take pooled buffers, other ops allocate).
  static constexpr size_t kPoolBuffers = 32, kPoolPerSize = 4;

  /// A value slot now holds `t`.
  void hold(const HostTensor &t);
  /// A value's last use: drops `t` (pooling its buffer when nothing else holds it).
  void release(std::optional<HostTensor> &t);
  /// A value dying at the current op, moved out of its slot for the op to
  /// overwrite in place; nothing (the slot as it was) when no-reuse is on or
  /// another value or print event shares its buffer.
  std::optional<HostTensor> takeDying(std::optional<HostTensor> &t);

  /// What a rank knows about one `call` instruction: whether it calls a
  /// compiled kernel and, after its first launch, the launch params (local
  /// shapes are static, so they are computed once per rank and call site).
  struct CallSite {
    bool resolved = false;
    const KernelTable::Entry *kernel = nullptr; ///< null: not a kernel call
    bool runs = false;                          ///< the rank holds the kernel's mesh
    int64_t meshRank = -1;
    bool launched = false;
    FusedLaunch launch;
    std::vector<int64_t> sliceParams; ///< the slice kernel's, when it has one
  };
  /// Launches the slice kernel of `e` for runKernel: `b` holds the kernel's
  /// buffers, `ids` each gather's ids as a progression.
  void launchSlices(Device &dev, const KernelTable::Entry &e, CallSite &cs, void *const *b,
                    const CheckedIds::Progression *ids, std::optional<HostTensor> *const *args);
  /// The call site of `in` (resolved through `table` on first use).
  CallSite &site(const Inst &in, const KernelTable &table);

  /// Runs the site's kernel on the values in `args`; `dying[i]` says that
  /// args[i]'s value dies at this call: an unshared one of an output's shape
  /// and byte size that the output reads is then moved out of its slot and
  /// overwritten in place.
  /// New buffers come from, and the kernel runs on, `dev`.
  /// The kernel's results (the root's first) go to `outs[0..]`, one per
  /// kernel output.
  void runKernel(Device &dev, CallSite &cs, std::optional<HostTensor> *const *args,
                 const unsigned char *dying, size_t n, std::optional<HostTensor> *const *outs);

  /// A buffer of `bytes` for an output its producer writes in full: a
  /// pooled one when one fits, else a new uninitialised one of `dev`.
  std::shared_ptr<Buffer> acquire(Device &dev, int64_t bytes);
  /// A pooled buffer of exactly `bytes`, or null when the pool has none
  /// (nothing is allocated).
  std::shared_ptr<Buffer> takePooled(int64_t bytes);
  /// Gives one pooled buffer of exactly `bytes` back to the device (its
  /// cache then serves an op that allocates there).
  void dropPooled(int64_t bytes);

  RankStats stats;

private:
  void count(const Buffer *b, int delta);
  CheckedIds checkedIds_; ///< a fused gather's ids, checked before its launches

  bool reuse_;
  std::unordered_map<const Buffer *, int> refs_; ///< holds per buffer (0: none now)
  size_t purgeAt_ = 4096;
  std::multimap<int64_t, std::shared_ptr<Buffer>> pool_;
  std::unordered_map<const Inst *, CallSite> sites_;
};

} // namespace dt
