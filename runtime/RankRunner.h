// This file declares the executor's per-rank interpreter (runtime/Executor.h),
// shared by its files: runtime/Executor.cpp (calls, blocks, instructions,
// control flow, moving values between blocks and the host),
// runtime/ExecutorOps.cpp (local ops on the Device: BLAS, deterministic
// products, op kernels) and runtime/ExecutorOutput.cpp (print, time, save and
// checkpoints). Internal to runtime/.
#pragma once

#include "runtime/Executor.h"
#include "runtime/LocalOps.h"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dt {

struct Executor::Shared {
  const Module &m;
  std::vector<HostTensor> results; ///< written by world rank 0 only
  std::mutex mu;
  std::string internal; ///< first InternalError of a rank (reported as such)
  bool wantSources = false;
  const KernelTable *kernels = nullptr;    ///< compiled kernels (null: --no-jit)
  const LivenessTable *liveness = nullptr; ///< memory plan (null: keep every value)
  bool referenceOnly = false;              ///< --no-jit: no BLAS either
  std::vector<RankState> &state;           ///< per world rank (kept across runs)
  std::vector<int64_t> ids;                ///< world rank -> device id (sorted, distinct)
  int worldSize;
  std::ostream &out;
  const ExecOptions &opts;
  std::vector<PrintedValue> *printed; ///< rank 0 appends what it printed

  /// Deterministic mode: the matmuls whose one use is a `local_partial`
  /// (sum) step, with its axes. SPMD lowering computes a contraction over a
  /// sharded dim whole on every rank and `local_partial` keeps it on
  /// coordinate 0 of those axes only, so the other ranks skip the product.
  std::map<const Inst *, std::vector<int64_t>> ownerOnly;

  Shared(const Module &mod, std::vector<int64_t> worldIds, std::vector<RankState> &st,
         std::ostream &o, const ExecOptions &eo, std::vector<PrintedValue> *pv)
      : m(mod), state(st), ids(std::move(worldIds)), worldSize((int)ids.size()), out(o), opts(eo),
        printed(pv) {
    if (m.deterministic)
      for (const Function &f : m.functions)
        findOwnerOnly(f);
  }

  void findOwnerOnly(const Function &f) {
    std::map<int, int> uses;
    std::map<int, const Inst *> partialOf; // operand -> its local_partial step
    std::vector<const Inst *> products;
    std::function<void(const Block &)> walk = [&](const Block &b) {
      for (const Inst &in : b.insts) {
        for (int o : in.operands)
          ++uses[o];
        if (in.op == Op::LocalPartial && !in.operands.empty())
          partialOf[in.operands[0]] = &in;
        if ((in.op == Op::MatMul || in.op == Op::Einsum) && in.results.size() == 1)
          products.push_back(&in);
        for (const Block &r : in.regions)
          walk(r);
      }
    };
    walk(f.body);
    for (const Inst *p : products) {
      int r = p->results[0];
      auto it = partialOf.find(r);
      if (it == partialOf.end() || uses[r] != 1)
        continue;
      const TensorType &to = f.type(it->second->results[0]);
      const std::vector<int64_t> &axes = it->second->attrs.ints;
      if (!axes.empty() && !to.isHost() && to.placements[axes[0]].isPartial() &&
          to.placements[axes[0]].op == ReduceOp::Sum)
        ownerOnly[p] = axes;
    }
  }
};

namespace exec {

using Slot = std::optional<HostTensor>;

/// One rank's interpreter of the program: a thread of the run, over its
/// Device, with the run's Shared state.
class RankRunner {
public:
  RankRunner(Executor::Shared &sh, Device &dev)
      : sh_(sh), dev_(dev), rank_(dev.rank()), rs_(sh.state[dev.rank()]) {}

  std::vector<Slot> call(const Function &f, const std::vector<Slot> &args, int depth);

  /// The blocks of a value of type `t` (this rank's: `block`) by mesh rank,
  /// gathered to world rank 0 as host tensors through the world
  /// communicator; empty on the other ranks. Every rank calls it. Unless
  /// `everyBlock`, a replicated value is only rank 0's block (enough to assemble it).
  std::vector<Slot> gather(const TensorType &t, const Slot &block, bool everyBlock = false);

  /// This rank's blocks of the global host values `args` of `f`'s params.
  std::vector<Slot> distributeArgs(const Function &f, const std::vector<HostTensor> &args);

private:
  struct Frame {
    const Function &f;
    std::vector<Slot> vals;
    std::vector<const Inst *> def; ///< defining instruction of each value
    explicit Frame(const Function &fn) : f(fn), vals(fn.values.size()), def(fn.values.size()) {}
    const TensorType &type(int id) const { return f.values.at(id).type; }
  };

  /// This rank's index in the mesh of `t` (-1: host value or not a member).
  int64_t meshRank(const TensorType &t);

  /// Whether this rank holds a block of values of type `t`.
  bool holds(const TensorType &t) { return t.isHost() || meshRank(t) >= 0; }

  const HostTensor &get(const Frame &fr, int id, const Inst &in);

  std::vector<Slot> block(const Block &b, Frame &fr, int depth);
  /// The value print `in` shows for its operand `id`, as the program wrote
  /// it: before the gathers lowering put in front of the print.
  static int printedSource(const Inst &in, const Frame &fr, int id);
  /// Runs instruction `in` (`cs`: its kernel call site) and binds its results.
  void step(const Inst &in, Frame &fr, int depth, RankState::CallSite *cs);

  /// Control flow and calls of program functions: their instructions are
  /// timed, not they (ExecOptions::profile).
  static bool isControl(Op op);

  std::string profileLabel(const Inst &in) const;

  /// Whether this rank's coordinate on one of `axes` of `t`'s mesh is not 0.
  bool notOwner(const TensorType &t, const std::vector<int64_t> &axes);

  std::vector<Slot> inst(const Inst &in, Frame &fr, int depth);

  /// Deterministic mode's matmul: the device's (matmulDeterministic), and
  /// for f32 and f64 on any device and with --no-jit the order of
  /// runtime/BlasDeterministic.h on the host, since SPMD lowering may
  /// combine ranks' subtree nodes of that order (distributeContraction) and
  /// every run of the program must then compute it. nullopt: the reference
  /// kernel (other dtypes).
  std::optional<HostTensor> deterministicProduct(const Inst &in, const HostTensor &a,
                                                 const HostTensor &b, DType out, LocalPlace place);

  /// A local op on the Device: BLAS, a data-movement primitive, a view
  /// (reshape) or the fallback (fused elementwise work never gets here: it
  /// is a kernel call).
  std::vector<Slot> localOp(const Inst &in, const std::vector<const HostTensor *> &args,
                            const std::vector<TensorType> &types, LocalPlace place);

  /// An op kernel (KernelTable::OpEntry) on the Device: a float einsum
  /// that is one matmul through the Device's BLAS, else the kernel IR (and
  /// its `finish` cast). nullopt: neither runs here (the caller falls back).
  std::optional<HostTensor> opKernel(const KernelTable::OpEntry &e,
                                     const std::vector<const HostTensor *> &args, DType out);

  /// A float matmul into a buffer of the rank's pool when one fits (the
  /// product of BLAS then takes no new memory, as a kernel output would not);
  /// `deterministic`: the Device's deterministic product.
  std::optional<HostTensor> matmulPooled(const Inst &in, const HostTensor &a, const HostTensor &b,
                                         DType out, bool deterministic = false);

  /// The product of `a` and `b` (Device::matmulInto, or
  /// matmulDeterministicInto) in a buffer of the
  /// rank's pool of exactly `shape`'s bytes; nullopt (the buffer back in the
  /// pool) when none fits or the Device has no such product.
  std::optional<HostTensor> productPooled(const HostTensor &a, const HostTensor &b, DType out,
                                          std::vector<int64_t> shape, bool ta, bool tb,
                                          bool deterministic = false);

  /// A float einsum as one batched matmul (EinsumMatmulPlan): operands
  /// permuted where the plan says, viewed as [batch, m, k] and [batch, k, n]
  /// (or transposed), multiplied by the Device's BLAS, the product viewed
  /// in the letters' dims and permuted to the output's order. nullopt when
  /// the Device has no BLAS path for the dtype or a dim is empty.
  std::optional<HostTensor> einsumByMatmul(const EinsumMatmulPlan &p, const HostTensor &a0,
                                           const HostTensor &b0, DType out);

  /// Rank `meshRank`'s block of the global value `global` (on this device)
  /// of type `t`: partial(sum) axes keep it on coordinate 0, zeros elsewhere.
  HostTensor blockOf(const HostTensor &global, const TensorType &t, int64_t meshRank);

  static int64_t numElementsOf(const std::vector<int64_t> &shape);

  /// A call of a compiled kernel (the fast path of block()): the rank runs
  /// it on its blocks (none off the kernel's mesh); an input that dies here
  /// may be overwritten (the memory plan).
  void kernelCall(RankState::CallSite &cs, const Inst &in, Frame &fr);

  /// Every rank holds host values, so a value read to the host from a mesh
  /// that does not cover the world is broadcast from the mesh's first device.
  Slot toHost(const Inst &in, Frame &fr);

  std::vector<Slot> loop(const Inst &in, Frame &fr, int depth);

  /// A host scalar's value in host memory (a condition or a loop bound):
  /// every rank computes it from the same host values or reads its identical
  /// replica, so every rank takes the same branch.
  HostTensor hostScalar(Frame &fr, int id, const Inst &in) { return dev_.toHost(get(fr, id, in)); }

  std::vector<Slot> branch(const Inst &in, Frame &fr, int depth);

  /// RuntimeFault when a loop would run more than ExecOptions::maxLoopTrips.
  void checkTrips(uint64_t trips, const Inst &in) const;

  /// `while`: the body yields the next condition, then the carried values.
  /// block() checks the interrupt flag on every iteration, so an endless
  /// loop stops on Ctrl-C.
  std::vector<Slot> whileLoop(const Inst &in, Frame &fr, int depth);

  /// Every rank gathers the printed value (and, for --components, its
  /// source) to world rank 0, which records it.
  void print(const Inst &in, Frame &fr);

  /// A `print` of several items (Ops.def): each value gathered to world rank
  /// 0, which writes the one line.
  void printLine(const Inst &in, Frame &fr);

  /// Written as the program runs (a long loop shows its prints as it goes);
  /// a stream that cannot take them (a full disk, a closed pipe) fails the
  /// run rather than losing values.
  void writeOutput(const std::string &text);

  /// `time()`: world rank 0 reads the monotonic clock and every rank gets its
  /// reading, so a host value is the same on every rank.
  HostTensor timeValue(const Inst &in);

  /// `save`: world rank 0 creates the file, then each block is written by
  /// the one rank that holds it at coordinate 0 of every axis it is not
  /// sharded over (no rank holds another's block, none the whole value).
  /// Every rank takes part, so the file is whole when any rank goes on.
  void saveFile(const Inst &in, Frame &fr);
  /// This rank's blocks of a `save` into the temporary file `temp`.
  void writeSaveBlocks(const Inst &in, Frame &fr, const std::vector<TensorType> &types,
                       const std::string &temp);

  /// `save_checkpoint` (support/Checkpoint.h): world rank 0 makes the
  /// temporary folder; each rank writes and syncs its shard (the blocks the
  /// plan gives it, one on the host at a time); one all-reduce brings every
  /// chunk checksum (disjoint slots) and every rank's failure flag to all;
  /// rank 0 writes the index and swaps the folder in; a broadcast tells
  /// every rank it is done, so a later `load_checkpoint` sees it.
  void saveCheckpoint(const Inst &in, Frame &fr);

  Executor::Shared &sh_;
  Device &dev_;
  int rank_;
  RankState &rs_;
  const std::vector<int> *dying_ = nullptr; ///< values dying at the current instruction
  std::vector<Slot *> argSlots_, resSlots_; ///< kernel-call scratch (no allocation per op)
  std::vector<unsigned char> argDying_;
  std::map<const Mesh *, int64_t> meshRanks_;
  int loopNest_ = 0; ///< `for` loops this rank is inside
};

} // namespace exec
} // namespace dt
