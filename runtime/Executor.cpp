// This file implements the SPMD executor (see Executor.h): the per-rank
// interpreter loop over a Device, prints and results gathered to world rank
// 0 through the world communicator.
#include "runtime/Executor.h"

#include "ir/Topology.h"

#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "runtime/Blas.h"
#include "runtime/CheckpointIO.h"
#include "runtime/CollectiveSteps.h"
#include "runtime/CpuBackend.h"
#include "runtime/Format.h"
#include "runtime/Inspect.h"
#include "runtime/LocalOps.h"
#include "runtime/RefKernels.h"
#include "runtime/TensorIO.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

namespace dt {

namespace {

using Slot = std::optional<HostTensor>;

/// The mesh rank of device id `id` in `mesh` (-1: not a member).
int64_t meshRankOf(const Mesh &mesh, int64_t id) {
  for (size_t i = 0; i < mesh.devices.size(); ++i)
    if (mesh.devices[i] == id)
      return (int64_t)i;
  return -1;
}

} // namespace

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

namespace {

class RankRunner {
public:
  RankRunner(Executor::Shared &sh, Device &dev)
      : sh_(sh), dev_(dev), rank_(dev.rank()), rs_(sh.state[dev.rank()]) {}

  std::vector<Slot> call(const Function &f, const std::vector<Slot> &args, int depth) {
    if (depth > Executor::kMaxCallDepth)
      throw RuntimeFault("calls nest deeper than " + std::to_string(Executor::kMaxCallDepth) +
                         " at `" + f.name + "`");
    if (args.size() != f.params.size())
      throw RuntimeFault("`" + f.name + "` takes " + std::to_string(f.params.size()) +
                         " arguments, got " + std::to_string(args.size()));
    Frame fr(f);
    for (size_t i = 0; i < args.size(); ++i)
      fr.vals[f.params[i]] = args[i];
    return block(f.body, fr, depth);
  }

private:
  struct Frame {
    const Function &f;
    std::vector<Slot> vals;
    std::vector<const Inst *> def; ///< defining instruction of each value
    explicit Frame(const Function &fn) : f(fn), vals(fn.values.size()), def(fn.values.size()) {}
    const TensorType &type(int id) const { return f.values.at(id).type; }
  };

  /// This rank's index in the mesh of `t` (-1: host value or not a member).
  int64_t meshRank(const TensorType &t) {
    if (t.isHost())
      return -1;
    auto it = meshRanks_.find(t.mesh.get());
    if (it != meshRanks_.end())
      return it->second;
    return meshRanks_[t.mesh.get()] = meshRankOf(*t.mesh, sh_.ids[rank_]);
  }
  /// Whether this rank holds a block of values of type `t`.
  bool holds(const TensorType &t) { return t.isHost() || meshRank(t) >= 0; }

  const HostTensor &get(const Frame &fr, int id, const Inst &in) {
    if (id < 0 || id >= (int)fr.vals.size() || !fr.vals[id])
      throw InternalError(std::string("executor: `") + opName(in.op) + "` in `" + fr.f.name +
                          "` reads %" + std::to_string(id) + ", which rank " +
                          std::to_string(rank_) + " does not hold");
    return *fr.vals[id];
  }

  std::vector<Slot> block(const Block &b, Frame &fr, int depth) {
    if (sh_.opts.interrupt && sh_.opts.interrupt->load(std::memory_order_relaxed))
      throw RuntimeFault("interrupted");
    // The memory plan: values whose last use is instruction i (KernelRuntime.h).
    const std::vector<std::vector<int>> *dies = sh_.liveness ? sh_.liveness->dies(b) : nullptr;
    for (size_t ii = 0; ii < b.insts.size(); ++ii) {
      const Inst &in = b.insts[ii];
      if (in.op == Op::Return || in.op == Op::Yield) {
        std::vector<Slot> r;
        for (int id : in.operands)
          r.push_back(fr.vals.at(id));
        if (dies)
          for (int id : (*dies)[ii])
            rs_.release(fr.vals[id]);
        return r;
      }
      dying_ = dies ? &(*dies)[ii] : nullptr;
      RankState::CallSite *cs =
          in.op == Op::Call && sh_.kernels ? &rs_.site(in, *sh_.kernels) : nullptr;
      const bool timed = sh_.opts.profile && (cs ? cs->kernel != nullptr : !isControl(in.op));
      std::chrono::steady_clock::time_point t0;
      if (timed) {
        dev_.synchronize();
        t0 = std::chrono::steady_clock::now();
      }
      if (cs && cs->kernel) { // fast path: a compiled kernel
        kernelCall(*cs, in, fr);
      } else if (auto skip = sh_.ownerOnly.find(&in);
                 skip != sh_.ownerOnly.end() && notOwner(fr.type(in.results[0]), skip->second)) {
        // Deterministic mode: only coordinate 0 keeps this product (Shared::ownerOnly).
        const TensorType &rt = fr.type(in.results[0]);
        fr.def[in.results[0]] = &in;
        fr.vals[in.results[0]] =
            holds(rt) ? Slot{dev_.empty(rt.dtype, localBlock(rt, meshRank(rt)).shape)} : Slot{};
        if (fr.vals[in.results[0]])
          rs_.hold(*fr.vals[in.results[0]]);
      } else {
        auto res = inst(in, fr, depth);
        for (size_t i = 0; i < in.results.size(); ++i) {
          fr.def[in.results[i]] = &in;
          fr.vals[in.results[i]] = i < res.size() ? std::move(res[i]) : Slot{};
          if (fr.vals[in.results[i]])
            rs_.hold(*fr.vals[in.results[i]]);
        }
      }
      if (timed) {
        dev_.synchronize();
        OpProfile &p = rs_.stats.profile[profileLabel(in)];
        double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (p.count++ == 0)
          p.firstSeconds = sec;
        p.seconds += sec;
      }
      if (dies)
        for (int id : (*dies)[ii])
          rs_.release(fr.vals[id]);
    }
    return {};
  }

  /// Control flow and calls of program functions: their instructions are
  /// timed, not they (ExecOptions::profile).
  static bool isControl(Op op) {
    return op == Op::For || op == Op::While || op == Op::If || op == Op::Call;
  }
  static std::string profileLabel(const Inst &in) {
    std::string what = in.op == Op::Call ? in.attrs.str : opName(in.op);
    return in.loc.line > 0 ? what + " line " + std::to_string(in.loc.line) : what;
  }

  /// Whether this rank's coordinate on one of `axes` of `t`'s mesh is not 0.
  bool notOwner(const TensorType &t, const std::vector<int64_t> &axes) {
    if (t.isHost() || !holds(t))
      return false;
    auto c = t.mesh->coords(meshRank(t));
    for (auto a : axes)
      if (c[a] != 0)
        return true;
    return false;
  }

  std::vector<Slot> inst(const Inst &in, Frame &fr, int depth) {
    switch (in.op) {
    case Op::Call: {
      const Function *callee = sh_.m.find(in.attrs.str);
      if (!callee)
        throw InternalError("executor: unknown callee `" + in.attrs.str + "`");
      std::vector<Slot> args;
      for (int o : in.operands)
        args.push_back(fr.vals.at(o));
      return call(*callee, args, depth + 1);
    }
    case Op::For:
      return loop(in, fr, depth);
    case Op::If:
      return branch(in, fr, depth);
    case Op::While:
      return whileLoop(in, fr, depth);
    case Op::Print:
      print(in, fr);
      return {};
    case Op::SaveFile:
      saveFile(in, fr);
      return {};
    case Op::SaveCheckpoint:
      saveCheckpoint(in, fr);
      return {};
    case Op::Grad:
      throw InternalError("executor: `grad` must be expanded by autodiff first");
    case Op::Relayout:
      throw InternalError("executor: `relayout` must be lowered by SPMD lowering");
    default:
      break;
    }
    const TensorType &rt = fr.type(in.results.at(0));
    if (in.op == Op::ToHost)
      return {toHost(in, fr)};
    if (in.op == Op::Time)
      return {dev_.fromHost(timeValue(in))};
    if (!holds(rt))
      return {Slot{}};
    if (in.op == Op::Distribute)
      return {blockOf(get(fr, in.operands[0], in), rt, meshRank(rt))};
    if (in.op == Op::Random && in.operands.size() == 1) {
      // A run-time seed: the same source as with a constant seed, so the
      // values are layout-invariant alike (every rank reads the same seed).
      Inst c = in;
      c.operands.clear();
      c.attrs.ints = {hostScalar(fr, in.operands[0], in).data<int64_t>()[0]};
      return localOp(c, {}, {rt}, LocalPlace{meshRank(rt), sh_.referenceOnly});
    }
    if (opInfo(in.op).cls == OpClass::Collective) {
      const TensorType &st = fr.type(in.operands[0]);
      ++rs_.stats.collectives;
      dev_.at(&in);
      return {runCollectiveStep(dev_, in, st, rt, get(fr, in.operands[0], in), meshRank(st),
                                sh_.ids, sh_.m.deterministic)};
    }
    std::vector<const HostTensor *> args;
    for (int o : in.operands)
      args.push_back(&get(fr, o, in));
    std::vector<TensorType> types;
    for (int r : in.results)
      types.push_back(fr.type(r));
    return localOp(in, args, types, LocalPlace{meshRank(rt), sh_.referenceOnly});
  }

  /// Deterministic mode's matmul: the device's (matmulDeterministic), and
  /// for f32 and f64 on any device and with --no-jit the order of
  /// runtime/BlasDeterministic.h on the host, since SPMD lowering may
  /// combine ranks' subtree nodes of that order (distributeContraction) and
  /// every run of the program must then compute it. nullopt: the reference
  /// kernel (other dtypes).
  std::optional<HostTensor> deterministicProduct(const Inst &in, const HostTensor &a,
                                                 const HostTensor &b, DType out, LocalPlace place) {
    const bool ta = matmulTransposed(in.attrs, 0), tb = matmulTransposed(in.attrs, 1);
    if (!place.referenceOnly)
      if (auto c = matmulPooled(in, a, b, out, true))
        return c;
    if (!place.referenceOnly)
      if (auto c = dev_.matmulDeterministic(a, b, out, ta, tb))
        return c;
    if ((out != DType::F32 && out != DType::F64) || a.dtype != out || b.dtype != out ||
        a.rank() < 1 || b.rank() < 1)
      return std::nullopt;
    HostTensor c;
    gemm(dev_.toHost(a), dev_.toHost(b), c, ta, tb, 1, true);
    return dev_.fromHost(c);
  }

  /// A local op on the Device: BLAS, a data-movement primitive, a view
  /// (reshape) or the fallback (fused elementwise work never gets here: it
  /// is a kernel call).
  std::vector<Slot> localOp(const Inst &in, const std::vector<const HostTensor *> &args,
                            const std::vector<TensorType> &types, LocalPlace place) {
    size_t n = args.size();
    bool oneDim = in.attrs.ints.size() == 1;
    if (sh_.m.deterministic && in.op == Op::MatMul && n == 2 && types.size() == 1)
      if (auto c = deterministicProduct(in, *args[0], *args[1], types[0].dtype, place))
        return {std::move(*c)};
    if (sh_.kernels && types.size() == 1)
      if (const KernelTable::OpEntry *oe = sh_.kernels->findOp(in))
        if (auto r = opKernel(*oe, args, types[0].dtype))
          return {std::move(*r)};
    if (!place.referenceOnly && types.size() == 1) {
      switch (in.op) {
      case Op::MatMul:
        if (n == 2 && !sh_.m.deterministic)
          if (auto c = matmulPooled(in, *args[0], *args[1], types[0].dtype))
            return {std::move(*c)};
        if (n == 2)
          if (auto c =
                  sh_.m.deterministic
                      ? dev_.matmulDeterministic(*args[0], *args[1], types[0].dtype,
                                                 matmulTransposed(in.attrs, 0),
                                                 matmulTransposed(in.attrs, 1))
                      : dev_.matmul(*args[0], *args[1], types[0].dtype,
                                    matmulTransposed(in.attrs, 0), matmulTransposed(in.attrs, 1)))
            return {std::move(*c)};
        break;
      case Op::Transpose:
        if (n == 1)
          return {dev_.transpose(*args[0], in.attrs.ints)};
        break;
      case Op::IndexSelect:
        if (n == 2 && oneDim)
          return {dev_.gather(*args[0], *args[1], in.attrs.ints[0])};
        break;
      case Op::IndexAdd:
        if (n == 3 && oneDim)
          return {dev_.scatterAdd(*args[0], *args[1], *args[2], in.attrs.ints[0])};
        break;
      default:
        break;
      }
    }
    // reshape is a view on every backend: the local block keeps its elements
    // in row-major order (the placement rule guarantees it), so the result
    // shares the buffer under the result block's shape.
    if (in.op == Op::Reshape && n == 1 && types.size() == 1 && isConcrete(types[0].shape)) {
      const TensorType &rt = types[0];
      HostTensor r = *args[0];
      r.shape = rt.isHost() || place.meshRank < 0 ? concreteDims(rt.shape)
                                                  : localBlock(rt, place.meshRank).shape;
      if (r.numel() == args[0]->numel())
        return {std::move(r)};
    }
    ++rs_.stats.fallbackOps[opName(in.op)];
    auto out = dev_.fallbackLocalOp(in, args, types, place);
    return std::vector<Slot>(out.begin(), out.end());
  }

  /// An op kernel (KernelTable::OpEntry) on the Device: a float einsum
  /// that is one matmul through the Device's BLAS, else the kernel IR (and
  /// its `finish` cast). nullopt: neither runs here (the caller falls back).
  std::optional<HostTensor> opKernel(const KernelTable::OpEntry &e,
                                     const std::vector<const HostTensor *> &args, DType out) {
    if (e.blas && args.size() == 2)
      if (auto c = einsumByMatmul(*e.blas, *args[0], *args[1], out))
        return c;
    if (!e.main.handle)
      return std::nullopt;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<void *> bufs;
    for (const HostTensor *a : args) {
      shapes.push_back(a->shape);
      bufs.push_back(const_cast<void *>(a->raw())); // kernels only read their inputs
    }
    OpLaunch l = opKernelLaunch(e.op, shapes);
    const Kernel &k = e.op.main;
    HostTensor acc;
    acc.dtype = k.outputs.at(0);
    acc.shape = l.outShape;
    acc.buf = e.op.finish ? dev_.allocateUninit(acc.bytes()) : rs_.acquire(dev_, acc.bytes());
    bufs.push_back(acc.raw());
    if (l.iterations > 0 || k.reduce != KReduce::None)
      dev_.launch(e.main, bufs.data(), l.params.data());
    ++rs_.stats.kernelCalls;
    if (!e.op.finish)
      return acc;
    HostTensor r;
    r.dtype = out;
    r.shape = l.outShape;
    r.buf = rs_.acquire(dev_, r.bytes());
    void *fb[2] = {acc.raw(), r.raw()};
    if (r.numel() > 0)
      dev_.launch(e.finish, fb, l.finishParams.data());
    ++rs_.stats.kernelCalls;
    return r;
  }

  /// A float matmul into a buffer of the rank's pool when one fits (the
  /// product of BLAS then takes no new memory, as a kernel output would not);
  /// `deterministic`: the Device's deterministic product.
  std::optional<HostTensor> matmulPooled(const Inst &in, const HostTensor &a, const HostTensor &b,
                                         DType out, bool deterministic = false) {
    const bool ta = matmulTransposed(in.attrs, 0), tb = matmulTransposed(in.attrs, 1);
    if (!isFloat(out) || a.dtype != out || b.dtype != out || a.rank() < 1 || b.rank() < 1)
      return std::nullopt;
    return productPooled(a, b, out,
                         gemmShape(a.shape, b.shape, ta && a.rank() > 1, tb && b.rank() > 1), ta,
                         tb, deterministic);
  }

  /// The product of `a` and `b` (Device::matmulInto, or
  /// matmulDeterministicInto) in a buffer of the
  /// rank's pool of exactly `shape`'s bytes; nullopt (the buffer back in the
  /// pool) when none fits or the Device has no such product.
  std::optional<HostTensor> productPooled(const HostTensor &a, const HostTensor &b, DType out,
                                          std::vector<int64_t> shape, bool ta, bool tb,
                                          bool deterministic = false) {
    HostTensor c;
    c.dtype = out;
    c.shape = std::move(shape);
    c.buf = rs_.takePooled(c.bytes());
    if (!c.buf)
      return std::nullopt;
    if (deterministic ? dev_.matmulDeterministicInto(a, b, c, ta, tb)
                      : dev_.matmulInto(a, b, c, ta, tb))
      return c;
    std::optional<HostTensor> back = std::move(c);
    rs_.hold(*back); // the pool's buffer goes back to the pool
    rs_.release(back);
    return std::nullopt;
  }

  /// A float einsum as one batched matmul (EinsumMatmulPlan): operands
  /// permuted where the plan says, viewed as [batch, m, k] and [batch, k, n]
  /// (or transposed), multiplied by the Device's BLAS, the product viewed
  /// in the letters' dims and permuted to the output's order. nullopt when
  /// the Device has no BLAS path for the dtype or a dim is empty.
  std::optional<HostTensor> einsumByMatmul(const EinsumMatmulPlan &p, const HostTensor &a0,
                                           const HostTensor &b0, DType out) {
    if (a0.numel() == 0 || b0.numel() == 0)
      return std::nullopt;
    HostTensor a = p.permA.empty() ? a0 : dev_.transpose(a0, p.permA);
    HostTensor b = p.permB.empty() ? b0 : dev_.transpose(b0, p.permB);
    auto size = [](const HostTensor &t, int from, int n, std::vector<int64_t> *dims) {
      int64_t s = 1;
      for (int i = from; i < from + n; ++i) {
        s *= t.shape.at(i);
        if (dims)
          dims->push_back(t.shape[i]);
      }
      return s;
    };
    std::vector<int64_t> outShape;
    int64_t nb = size(a, 0, p.batch, &outShape);
    int64_t m = size(a, p.batch + (p.transA ? p.k : 0), p.m, &outShape);
    int64_t k = size(a, p.batch + (p.transA ? 0 : p.m), p.k, nullptr);
    int64_t n = size(b, p.batch + (p.transB ? 0 : p.k), p.n, &outShape);
    a.shape = p.transA ? std::vector<int64_t>{nb, k, m} : std::vector<int64_t>{nb, m, k};
    b.shape = p.transB ? std::vector<int64_t>{nb, n, k} : std::vector<int64_t>{nb, k, n};
    // The product goes into a buffer of the rank's pool when one fits, as a
    // matmul's does (matmulPooled); else the Device allocates it.
    std::optional<HostTensor> c;
    if (p.permOut.empty() && a.dtype == out && b.dtype == out)
      c = productPooled(a, b, out, {nb, m, n}, p.transA, p.transB);
    if (!c)
      c = dev_.matmul(a, b, out, p.transA, p.transB);
    if (!c)
      return std::nullopt;
    c->shape = outShape;
    if (!p.permOut.empty())
      return dev_.transpose(*c, p.permOut);
    return c;
  }

  /// Rank `meshRank`'s block of the global value `global` (on this device)
  /// of type `t`: partial(sum) axes keep it on coordinate 0, zeros elsewhere.
  HostTensor blockOf(const HostTensor &global, const TensorType &t, int64_t meshRank) {
    if (t.isHost() || meshRank < 0)
      return global;
    LocalBlock b = localBlock(t, meshRank);
    HostTensor out = dev_.empty(global.dtype, b.shape);
    if (isZeroPartialComponent(t, meshRank))
      return out; // zeros
    dev_.copyRegion(global.raw(), global.shape, b.offset, out.raw(), b.shape,
                    std::vector<int64_t>(b.shape.size(), 0), b.shape, dtypeSize(global.dtype));
    return out;
  }

public:
  /// The blocks of a value of type `t` (this rank's: `block`) by mesh rank,
  /// gathered to world rank 0 as host tensors through the world
  /// communicator; empty on the other ranks. Every rank calls it. Unless
  /// `everyBlock`, a replicated value is only rank 0's block (enough to assemble it).
  std::vector<Slot> gather(const TensorType &t, const Slot &block, bool everyBlock = false) {
    if (t.isHost()) {
      if (rank_ != 0)
        return {};
      if (!block)
        throw InternalError("executor: world rank 0 does not hold a host value");
      return {dev_.toHost(*block)};
    }
    if (!isConcrete(t.shape))
      throw InternalError("executor: `" + t.str() + "` has a symbolic shape");
    // A replicated value rank 0 holds is whole on rank 0: no communication
    // (every rank decides this from the type alone, so all skip together).
    int64_t rank0 = meshRankOf(*t.mesh, sh_.ids[0]);
    if (rank0 >= 0 && !everyBlock) {
      bool replicated = true;
      for (auto &p : t.placements)
        replicated &= p.isReplicate();
      if (replicated) {
        if (rank_ != 0)
          return {};
        if (!block)
          throw InternalError("executor: world rank 0 holds no block of `" + t.str() + "`");
        return std::vector<Slot>(t.mesh->size(), dev_.toHost(*block)); // every block is it
      }
    }
    std::vector<int64_t> counts(sh_.worldSize, 0);
    std::vector<std::vector<int64_t>> shapes(t.mesh->size());
    for (int64_t i = 0; i < t.mesh->size(); ++i) {
      int w = worldRankOf(sh_.ids, t.mesh->devices[i]);
      shapes[i] = localBlock(t, i).shape;
      if (w >= 0 && w < sh_.worldSize)
        counts[w] = numElementsOf(shapes[i]);
    }
    if (counts[rank_] > 0 && (!block || block->numel() != counts[rank_]))
      throw InternalError("executor: rank " + std::to_string(rank_) + " holds no block of `" +
                          t.str() + "` to gather");
    HostTensor all = dev_.empty(t.dtype, {totalCount(counts)});
    dev_.world().allGatherV(counts[rank_] ? block->raw() : nullptr, all.raw(), counts, t.dtype);
    if (rank_ != 0)
      return {};
    HostTensor host = dev_.toHost(all);
    auto offs = countOffsets(counts);
    const int64_t es = dtypeSize(t.dtype);
    std::vector<Slot> r(t.mesh->size());
    for (int64_t i = 0; i < t.mesh->size(); ++i) {
      int w = worldRankOf(sh_.ids, t.mesh->devices[i]);
      if (w < 0 || w >= sh_.worldSize)
        continue;
      HostTensor b(t.dtype, shapes[i]);
      if (b.bytes())
        std::memcpy(b.raw(), static_cast<const char *>(host.raw()) + offs[w] * es, b.bytes());
      r[i] = std::move(b);
    }
    return r;
  }

  /// This rank's blocks of the global host values `args` of `f`'s params.
  std::vector<Slot> distributeArgs(const Function &f, const std::vector<HostTensor> &args) {
    std::vector<Slot> local;
    for (size_t i = 0; i < args.size(); ++i) {
      const TensorType &t = f.values[f.params[i]].type;
      if (t.isHost())
        local.push_back(dev_.fromHost(args[i]));
      else if (meshRank(t) >= 0)
        local.push_back(blockOf(dev_.fromHost(args[i]), t, meshRank(t)));
      else
        local.push_back(Slot{});
    }
    return local;
  }

private:
  static int64_t numElementsOf(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (auto d : shape)
      n *= d;
    return n;
  }

  /// A call of a compiled kernel (the fast path of block()): the rank runs
  /// it on its blocks (none off the kernel's mesh); an input that dies here
  /// may be overwritten (the memory plan).
  void kernelCall(RankState::CallSite &cs, const Inst &in, Frame &fr) {
    if (!cs.launched) {
      cs.runs = holds(cs.kernel->fk.iterType);
      cs.meshRank = meshRank(cs.kernel->fk.iterType);
    }
    resSlots_.clear();
    for (int r : in.results) {
      fr.def[r] = &in;
      Slot &s = fr.vals.at(r);
      s.reset();
      resSlots_.push_back(&s);
    }
    if (!cs.runs)
      return;
    if (resSlots_.size() != cs.kernel->fk.kernel.outputs.size())
      throw InternalError("executor: `call` of `" + in.attrs.str + "` has " +
                          std::to_string(resSlots_.size()) + " results for " +
                          std::to_string(cs.kernel->fk.kernel.outputs.size()) + " outputs");
    argSlots_.clear();
    argDying_.clear();
    for (int o : in.operands) {
      argSlots_.push_back(&fr.vals.at(o));
      argDying_.push_back(dying_ && std::find(dying_->begin(), dying_->end(), o) != dying_->end());
    }
    rs_.runKernel(dev_, cs, argSlots_.data(), argDying_.data(), argSlots_.size(), resSlots_.data());
    for (Slot *s : resSlots_)
      rs_.hold(**s);
  }

  /// Every rank holds host values, so a value read to the host from a mesh
  /// that does not cover the world is broadcast from the mesh's first device.
  Slot toHost(const Inst &in, Frame &fr) {
    const TensorType &st = fr.type(in.operands[0]);
    if (st.isHost())
      return get(fr, in.operands[0], in);
    for (auto &p : st.placements)
      if (!p.isReplicate())
        throw InternalError("executor: `to_host` of `" + st.str() + "` needs SPMD lowering");
    // Device ids are distinct and all in the world: a mesh as large as the
    // world covers it.
    if (st.mesh->size() == sh_.worldSize)
      return get(fr, in.operands[0], in);
    HostTensor v = holds(st) ? dev_.clone(get(fr, in.operands[0], in))
                             : dev_.empty(st.dtype, concreteDims(st.shape));
    dev_.at(&in);
    dev_.world().broadcast(v.raw(), v.numel(), v.dtype, worldRankOf(sh_.ids, st.mesh->devices[0]));
    return v;
  }

  std::vector<Slot> loop(const Inst &in, Frame &fr, int depth) {
    if (in.regions.size() != 1 || in.attrs.ints.size() != 3 || in.attrs.ints[2] == 0)
      throw InternalError("executor: malformed `for`");
    const Block &body = in.regions[0];
    int64_t lo = in.attrs.ints[0], hi = in.attrs.ints[1], step = in.attrs.ints[2];
    size_t skip = 0;
    if (in.attrs.flag) { // run-time bounds: host scalars, the same on every rank
      lo = hostScalar(fr, in.operands.at(0), in).data<int64_t>()[0];
      hi = hostScalar(fr, in.operands.at(1), in).data<int64_t>()[0];
      skip = 2;
    }
    std::vector<Slot> cur;
    for (size_t o = skip; o < in.operands.size(); ++o)
      cur.push_back(fr.vals.at(in.operands[o]));
    uint64_t n = forTripCount(lo, hi, step);
    checkTrips(n, in);
    // Only the outermost loops of the entry function report progress.
    LoopReport report(loopNest_, rank_ == 0 && depth == 0 ? sh_.opts.progress : nullptr, in.loc, n);
    for (uint64_t k = 0; k < n; ++k) {
      int64_t i = (int64_t)((uint64_t)lo + k * (uint64_t)step); // no overflow near the limits
      HostTensor iv(DType::I64, {});
      iv.data<int64_t>()[0] = i; // a host scalar, then on the device
      fr.vals.at(body.args.at(0)) = dev_.fromHost(iv);
      // Moved, not copied: a loop-carried value that dies in the body may then
      // be updated in place (the memory plan, runtime/KernelRuntime.h).
      for (size_t k = 0; k < cur.size(); ++k) {
        Slot &arg = fr.vals.at(body.args.at(k + 1));
        arg = std::move(cur[k]);
        if (arg)
          rs_.hold(*arg);
      }
      cur = block(body, fr, depth);
      report.step(k + 1);
    }
    return cur;
  }

  /// A host scalar's value in host memory (a condition or a loop bound):
  /// every rank computes it from the same host values or reads its identical
  /// replica, so every rank takes the same branch.
  HostTensor hostScalar(Frame &fr, int id, const Inst &in) { return dev_.toHost(get(fr, id, in)); }

  std::vector<Slot> branch(const Inst &in, Frame &fr, int depth) {
    if (in.regions.size() != 2 || in.operands.size() != 1)
      throw InternalError("executor: malformed `if`");
    bool c = hostScalar(fr, in.operands[0], in).data<uint8_t>()[0] != 0;
    return block(in.regions[c ? 0 : 1], fr, depth);
  }

  /// RuntimeFault when a loop would run more than ExecOptions::maxLoopTrips.
  void checkTrips(uint64_t trips, const Inst &in) const {
    const int64_t limit = sh_.opts.maxLoopTrips;
    if (limit > 0 && trips > (uint64_t)limit)
      throw RuntimeFault(std::string("`") + opName(in.op) + "` loop at line " +
                         std::to_string(in.loc.line) + " runs more than " + std::to_string(limit) +
                         " iterations (the run's loop limit)");
  }

  /// `while`: the body yields the next condition, then the carried values.
  /// block() checks the interrupt flag on every iteration, so an endless
  /// loop stops on Ctrl-C.
  std::vector<Slot> whileLoop(const Inst &in, Frame &fr, int depth) {
    if (in.regions.size() != 1 || in.operands.empty() ||
        in.regions[0].args.size() + 1 != in.operands.size())
      throw InternalError("executor: malformed `while`");
    const Block &body = in.regions[0];
    bool go = hostScalar(fr, in.operands[0], in).data<uint8_t>()[0] != 0;
    std::vector<Slot> cur;
    for (size_t o = 1; o < in.operands.size(); ++o)
      cur.push_back(fr.vals.at(in.operands[o]));
    ++loopNest_;
    struct Nest {
      int &n;
      ~Nest() { --n; }
    } nest{loopNest_};
    for (uint64_t trips = 1; go; ++trips) {
      checkTrips(trips, in);
      for (size_t k = 0; k < cur.size(); ++k) {
        Slot &arg = fr.vals.at(body.args.at(k));
        arg = std::move(cur[k]);
        if (arg)
          rs_.hold(*arg);
      }
      std::vector<Slot> next = block(body, fr, depth);
      if (next.empty() || !next[0])
        throw InternalError("executor: `while` body yields no condition");
      go = dev_.toHost(*next[0]).data<uint8_t>()[0] != 0;
      cur.assign(std::make_move_iterator(next.begin() + 1), std::make_move_iterator(next.end()));
    }
    return cur;
  }

  /// Every rank gathers the printed value (and, for --components, its
  /// source) to world rank 0, which records it.
  void print(const Inst &in, Frame &fr) {
    if (in.attrs.flag)
      return printLine(in, fr);
    int id = in.operands.at(0), src = id;
    // The value as the program wrote it: before the gathers lowering put in
    // front of this print (they carry the print's source location, which
    // spans the whole printed expression; a `relayout` the user wrote there
    // spans only its name, and is the program's, not the print's).
    while (sh_.wantSources && fr.def[src] && opInfo(fr.def[src]->op).cls == OpClass::Collective &&
           fr.def[src]->loc.line == in.loc.line && fr.def[src]->loc.col == in.loc.col &&
           fr.def[src]->loc.endCol == in.loc.endCol)
      src = fr.def[src]->operands.at(0);
    const TensorType &type = fr.type(id), &srcType = fr.type(src);
    dev_.at(&in);
    std::vector<Slot> blocks = gather(type, fr.vals.at(id));
    std::vector<Slot> srcBlocks;
    if (sh_.wantSources)
      srcBlocks = gather(srcType, fr.vals.at(src), true); // every device's component
    if (rank_ != 0)
      return;
    // Written as the program runs (a long loop shows its prints as it goes);
    // a stream that cannot take them (a full disk, a closed pipe) fails the
    // run rather than losing values.
    PrintedValue pv{
        in.attrs.str, assembleGlobal(type, blocks, sh_.m.deterministic), srcType, false, {}, {}};
    std::string text = formatTensor(pv.value) + "\n";
    if (sh_.opts.components)
      text += "components of `" + pv.label + "`: " + pv.type.str() + "\n" +
              formatComponents(pv.type, srcBlocks);
    if (sh_.opts.visualize)
      text += visualizeLayout(pv.type);
    writeOutput(text);
    sh_.printed->push_back(std::move(pv));
  }

  /// A `print` of several items (Ops.def): each value gathered to world rank
  /// 0, which writes the one line.
  void printLine(const Inst &in, Frame &fr) {
    dev_.at(&in);
    std::vector<HostTensor> globals;
    std::string extra; // --components and --layout, after the line
    for (size_t k = 0; k < in.operands.size(); ++k) {
      int id = in.operands[k];
      const TensorType &type = fr.type(id);
      std::vector<Slot> blocks = gather(type, fr.vals.at(id));
      std::vector<Slot> srcBlocks;
      if (sh_.opts.components)
        srcBlocks = gather(type, fr.vals.at(id), true);
      if (rank_ != 0)
        continue;
      globals.push_back(assembleGlobal(type, blocks, sh_.m.deterministic));
      if (sh_.opts.components)
        extra += "components of `" + printItemLabel(in.attrs, k) + "`: " + type.str() + "\n" +
                 formatComponents(type, srcBlocks);
      if (sh_.opts.visualize)
        extra += visualizeLayout(type);
    }
    if (rank_ != 0)
      return;
    std::vector<const HostTensor *> vals;
    PrintedValue pv;
    for (auto &g : globals)
      vals.push_back(&g);
    pv.isLine = true;
    pv.line = formatPrintLine(in.attrs, vals);
    pv.lineValues = std::move(globals);
    writeOutput(pv.line + "\n" + extra);
    sh_.printed->push_back(std::move(pv));
  }

  /// Written as the program runs (a long loop shows its prints as it goes);
  /// a stream that cannot take them (a full disk, a closed pipe) fails the
  /// run rather than losing values.
  void writeOutput(const std::string &text) {
    if (sh_.opts.progress)
      sh_.opts.progress->clear();
    std::ostream &out = sh_.out;
    errno = 0;
    out << text;
    out.flush();
    if (!out)
      throw RuntimeFault(std::string("cannot write the output of `print`") +
                         (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  }

  /// `time()`: world rank 0 reads the monotonic clock and every rank gets its
  /// reading, so a host value is the same on every rank.
  HostTensor timeValue(const Inst &in) {
    HostTensor t(DType::F64, {});
    dev_.synchronize(); // the work before `time()` has run (a GPU's stream)
    t.data<double>()[0] =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    dev_.at(&in);
    dev_.hostWorld().broadcast(t.raw(), 1, DType::F64, 0);
    return t;
  }

  /// `save`: world rank 0 creates the file, then each block is written by
  /// the one rank that holds it at coordinate 0 of every axis it is not
  /// sharded over (no rank holds another's block, none the whole value).
  /// Every rank takes part, so the file is whole when any rank goes on.
  void saveFile(const Inst &in, Frame &fr) {
    std::vector<TensorType> types;
    for (int o : in.operands)
      types.push_back(fr.type(o));
    Communicator &world = dev_.hostWorld(); // host flags and checksums
    // A failure to create the file on rank 0 is every rank's: it is
    // broadcast as a flag so no rank waits for a file that will not come.
    int32_t ok = 1;
    std::string why;
    if (rank_ == 0) {
      try {
        createSaveFile(in, types);
      } catch (const RuntimeFault &f) {
        ok = 0;
        why = f.what();
      }
    }
    world.broadcast(&ok, 1, DType::I32, 0);
    if (!ok) {
      if (rank_ == 0)
        throw RuntimeFault(why);
      throw RuntimeFault("save (line " + std::to_string(in.loc.line) +
                         "): rank 0 could not create the file");
    }
    for (size_t k = 0; k < in.operands.size(); ++k) {
      const TensorType &t = types[k];
      if (t.isHost()) {
        if (rank_ == 0)
          writeFileBlock(in, k, t, std::vector<int64_t>(t.rank(), 0),
                         dev_.toHost(get(fr, in.operands[k], in)));
        continue;
      }
      int64_t mr = meshRank(t);
      if (mr < 0)
        continue;
      auto c = t.mesh->coords(mr);
      bool writer = true;
      for (size_t a = 0; a < t.placements.size(); ++a)
        writer &= t.placements[a].isShard() || c[a] == 0;
      if (!writer)
        continue;
      LocalBlock b = localBlock(t, mr);
      writeFileBlock(in, k, t, b.offset, dev_.toHost(get(fr, in.operands[k], in)));
    }
    world.barrier();
  }

  /// `save_checkpoint` (support/Checkpoint.h): world rank 0 makes the
  /// temporary folder; each rank writes and syncs its shard (the blocks the
  /// plan gives it, one on the host at a time); one all-reduce brings every
  /// chunk checksum (disjoint slots) and every rank's failure flag to all;
  /// rank 0 writes the index and swaps the folder in; a broadcast tells
  /// every rank it is done, so a later `load_checkpoint` sees it.
  void saveCheckpoint(const Inst &in, Frame &fr) {
    std::vector<TensorType> types;
    for (int o : in.operands)
      types.push_back(fr.type(o));
    CheckpointPlan plan = planCheckpoint(in, types, sh_.ids);
    Communicator &world = dev_.hostWorld(); // host flags and checksums
    dev_.at(&in);
    // A failure is every rank's, with the failing rank's message (sent as
    // bytes), so the run reports the cause whichever rank it names.
    auto failWith = [&](std::string why, int root) {
      int64_t n = (int64_t)why.size();
      world.broadcast(&n, 1, DType::I64, root);
      why.resize((size_t)n);
      world.broadcast(why.data(), n, DType::Bool, root);
      throw RuntimeFault(why);
    };
    auto agree = [&](int32_t ok, const std::string &why) {
      world.broadcast(&ok, 1, DType::I32, 0);
      if (!ok)
        failWith(why, 0);
    };
    std::string why;
    int32_t ok = 1;
    if (rank_ == 0) {
      try {
        beginCheckpointSave(plan.dir);
      } catch (const TensorFileError &e) {
        ok = 0;
        why = checkpointWhere(in) + ": " + e.what();
      }
    }
    agree(ok, why);
    // Slots: every chunk's checksum, then this rank's failure flag.
    std::vector<int64_t> slots(plan.chunks + 1, 0), all(plan.chunks + 1, 0);
    try {
      std::optional<CheckpointShardWriter> w;
      for (auto &b : plan.blocks) {
        if (b.writer != rank_)
          continue;
        if (!w)
          w.emplace(plan.dir, checkpointShardName(rank_), plan.index.chunkBytes);
        const CheckpointBlock &cb =
            plan.index.tensors.at(plan.names[b.operand]).blocks.at(b.tensorBlock);
        HostTensor h = dev_.toHost(get(fr, in.operands[b.operand], in));
        if ((uint64_t)h.bytes() != b.bytes)
          throw InternalError("executor: rank " + std::to_string(rank_) + " holds " +
                              std::to_string(h.bytes()) + " bytes of `" + plan.names[b.operand] +
                              "`, its checkpoint block has " + std::to_string(b.bytes));
        auto crcs = w->write(cb, (uint64_t)dtypeSize(h.dtype), h.raw());
        for (size_t i = 0; i < crcs.size(); ++i)
          slots[b.firstChunk + i] = crcs[i];
      }
      if (w)
        w->finish();
    } catch (const TensorFileError &e) {
      slots.back() = 1;
      why = checkpointWhere(in) + ": " + e.what();
    }
    // Test hook (tests/ckpt): die as a crash would, between shards.
    if (rank_ == 0 && sh_.opts.crashInSave)
      std::_Exit(86);
    world.allReduce(slots.data(), all.data(), (int64_t)all.size(), DType::I64, ReduceOp::Sum);
    if (all.back()) {
      if (rank_ == 0)
        abandonCheckpointSave(plan.dir);
      int64_t mine = slots.back() ? rank_ : INT64_MAX, first = 0;
      world.allReduce(&mine, &first, 1, DType::I64, ReduceOp::Min);
      failWith(why, (int)first);
    }
    if (rank_ == 0) {
      try {
        all.pop_back();
        fillCheckpointChecksums(plan, all);
        commitCheckpointSave(plan.dir, plan.index);
      } catch (const TensorFileError &e) {
        ok = 0;
        why = checkpointWhere(in) + ": " + e.what();
        abandonCheckpointSave(plan.dir);
      }
    }
    agree(ok, why);
  }

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

} // namespace

Executor::Executor(const Module &m, Backend &backend, std::ostream &out, ExecOptions opts)
    : m_(m), out_(out), opts_(opts), backend_(backend) {}

Executor::Executor(const CompiledProgram &prog, Backend &backend, std::ostream &out,
                   ExecOptions opts)
    : m_(prog.module()), out_(out), opts_(opts), backend_(backend), program_(&prog) {}

Executor::Executor(const Module &m, std::ostream &out, ExecOptions opts)
    : m_(m), out_(out), opts_(opts),
      ownBackend_(std::make_unique<CpuBackend>(opts.cpuJit, opts.quickJit)),
      backend_(*ownBackend_) {}

Executor::~Executor() = default;

std::vector<int64_t> Executor::worldIds(const Module &m) { return programDeviceIds(m); }

int Executor::requiredRanks(const Module &m) { return (int)worldIds(m).size(); }

std::vector<HostTensor> Executor::run(const std::string &fn, const std::vector<HostTensor> &args) {
  const Function *f = m_.find(fn);
  if (!f)
    throw RuntimeFault("no function `" + fn + "` to run");
  std::vector<int64_t> ids = worldIds(m_);
  int need = (int)ids.size();
  if (opts_.ranks != 0 && opts_.ranks != need)
    throw RuntimeFault("the program's meshes need " + std::to_string(need) + " ranks (" +
                       std::to_string(need) + " distinct device ids), not " +
                       std::to_string(opts_.ranks));
  if (args.size() != f->params.size())
    throw RuntimeFault("`" + fn + "` takes " + std::to_string(f->params.size()) +
                       " arguments, got " + std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType &t = f->values.at(f->params[i]).type;
    if (!isConcrete(t.shape) || args[i].dtype != t.dtype || args[i].shape != concreteDims(t.shape))
      throw RuntimeFault("argument " + std::to_string(i) + " of `" + fn + "`: expected `" +
                         t.str() + "`, got " + dtypeName(args[i].dtype) +
                         ref::dimsStr(args[i].shape));
  }
  printed_.clear();
  // Kernels compile before the rank threads start; ranks share the table.
  // The tables are kept for later runs of the same module.
  stats_ = ExecStats{};
  // The tables and call-site caches point into the module: any function
  // added, or a body that grew or moved (the REPL appends to `main`),
  // invalidates them.
  uint64_t key = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { key = (key ^ v) * 1099511628211ull; };
  mix(m_.functions.size());
  for (auto &fn : m_.functions) {
    mix((uint64_t)(uintptr_t)fn.body.insts.data());
    mix(fn.body.insts.size());
  }
  if (tablesFor_ != key) {
    kernels_.reset();
    liveness_.reset();
    tablesFor_ = key;
    states_.clear();
  }
  for (auto &fn : m_.functions)
    stats_.kernels += isFusedKernel(fn);
  if (opts_.jit && !kernels_) {
    CompileCounters before = backend_.compileCounters();
    // The program's kernel IR when its `kernels` step ran, else lowered here.
    kernels_ = program_ && program_->last() >= Step::Kernels
                   ? std::make_unique<KernelTable>(program_->kernels(), m_, backend_)
                   : std::make_unique<KernelTable>(m_, backend_);
    CompileCounters after = backend_.compileCounters();
    stats_.compiles += after.compiles - before.compiles;
    stats_.cacheHits += after.cacheHits - before.cacheHits;
    stats_.diskHits += after.diskHits - before.diskHits;
    stats_.compileSeconds += after.seconds - before.seconds;
  }
  // The program's memory plan when its `memplan` step ran, else made here.
  const LivenessTable *plan = program_ ? program_->memoryPlan() : nullptr;
  if (opts_.memoryPlan && !plan && !liveness_)
    liveness_ = std::make_unique<LivenessTable>(m_);
  if (!plan)
    plan = liveness_.get();
  if (states_.size() != (size_t)need)
    states_.assign(need, RankState(opts_.memoryPlan));
  for (auto &st : states_)
    st.startRun();
  // Processes of a multi-process backend check that they run one program.
  backend_.agree(need, [&] {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : printModule(m_))
      h = (h ^ ch) * 1099511628211ull;
    for (int64_t id : ids)
      h = (h ^ (uint64_t)id) * 1099511628211ull;
    return h;
  });
  Shared sh(m_, std::move(ids), states_, out_, opts_, &printed_);
  sh.kernels = opts_.jit ? kernels_.get() : nullptr;
  sh.referenceOnly = !opts_.jit;
  // Components/visualize read a printed value's source after its last use,
  // so they keep every value (a debugging view).
  sh.wantSources = opts_.components || opts_.visualize;
  sh.liveness = opts_.memoryPlan && !sh.wantSources ? plan : nullptr;
  std::string failure;
  try {
    backend_.run(need, [&](Device &dev) {
      try {
        RankRunner rr(sh, dev);
        std::vector<Slot> res = rr.call(*f, rr.distributeArgs(*f, args), 0);
        // The results, assembled on world rank 0 through the communicator.
        for (size_t k = 0; k < f->results.size(); ++k) {
          dev.at(nullptr);
          auto blocks = rr.gather(f->results[k], k < res.size() ? res[k] : Slot{});
          if (dev.rank() == 0)
            sh.results.push_back(assembleGlobal(f->results[k], blocks, sh.m.deterministic));
        }
      } catch (const InternalError &e) {
        std::lock_guard<std::mutex> lock(sh.mu);
        if (sh.internal.empty())
          sh.internal = "rank " + std::to_string(dev.rank()) + ": " + e.what();
        throw;
      }
    });
  } catch (const RuntimeFault &e) {
    failure = e.what();
  }
  for (auto &st : sh.state)
    stats_.ranks.push_back(st.stats);
  if (!sh.internal.empty())
    throw InternalError(sh.internal);
  if (!failure.empty())
    throw RuntimeFault(failure);
  std::vector<HostTensor> results = std::move(sh.results);
  return results;
}

} // namespace dt
