// This file implements the SPMD executor (see Executor.h): the per-rank
// interpreter loop, print events and the assembly of global results.
#include "runtime/Executor.h"

#include "support/Diagnostics.h"
#include "passes/Fusion.h"
#include "runtime/CollectiveSteps.h"
#include "runtime/Format.h"
#include "runtime/Inspect.h"
#include "runtime/LocalOps.h"
#include "runtime/RefKernels.h"
#include "runtime/ThreadComm.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

namespace dt {

namespace {

using Slot = std::optional<HostTensor>;

/// What one rank saw at one `print`.
struct PrintEvent {
  std::string label;
  TensorType type, srcType; ///< printed operand; the value before print's gathers
  Slot block, srcBlock;     ///< this rank's blocks of them (none off the mesh)
  int64_t meshRank = -1, srcMeshRank = -1;
};

int64_t meshRankOf(const Mesh &mesh, int worldRank) {
  for (size_t i = 0; i < mesh.devices.size(); ++i)
    if (mesh.devices[i] == worldRank)
      return (int64_t)i;
  return -1;
}

} // namespace

struct Executor::Shared {
  const Module &m;
  ThreadWorld world;
  std::vector<std::vector<PrintEvent>> prints; ///< per world rank
  std::vector<std::vector<Slot>> results;      ///< per world rank
  std::mutex mu;
  std::string internal; ///< first InternalError of a rank (reported as such)
  bool wantSources = false;
  const KernelTable *kernels = nullptr;    ///< compiled kernels (null: --no-jit)
  const LivenessTable *liveness = nullptr; ///< memory plan (null: keep every value)
  bool referenceOnly = false;              ///< --no-jit: no BLAS either
  std::vector<RankState> &state;           ///< per world rank (kept across runs)

  Shared(const Module &mod, int n, std::vector<RankState> &st)
      : m(mod), world(n), prints(n), results(n), state(st) {}
};

namespace {

class RankRunner {
public:
  RankRunner(Executor::Shared &sh, int rank) : sh_(sh), rank_(rank), rs_(sh.state[rank]) {}

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
    return meshRanks_[t.mesh.get()] = meshRankOf(*t.mesh, rank_);
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
      if (cs && cs->kernel) { // fast path: a compiled kernel, one result
        Slot &r = fr.vals.at(in.results.at(0));
        fr.def[in.results[0]] = &in;
        r = kernelCall(*cs, in, fr);
        if (r)
          rs_.hold(*r);
      } else {
        auto res = inst(in, fr, depth);
        for (size_t i = 0; i < in.results.size(); ++i) {
          fr.def[in.results[i]] = &in;
          fr.vals[in.results[i]] = i < res.size() ? std::move(res[i]) : Slot{};
          if (fr.vals[in.results[i]])
            rs_.hold(*fr.vals[in.results[i]]);
        }
      }
      if (dies)
        for (int id : (*dies)[ii])
          rs_.release(fr.vals[id]);
    }
    return {};
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
    case Op::Print:
      print(in, fr);
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
    if (!holds(rt))
      return {Slot{}};
    if (in.op == Op::Distribute)
      return {blockOfGlobal(get(fr, in.operands[0], in), rt, meshRank(rt))};
    if (opInfo(in.op).cls == OpClass::Collective) {
      const TensorType &st = fr.type(in.operands[0]);
      GroupFn group = [&](const std::vector<int> &members) -> Communicator & {
        return sh_.world.group(rank_, members);
      };
      ++rs_.stats.collectives;
      return {runCollectiveStep(in, st, rt, get(fr, in.operands[0], in), meshRank(st), group)};
    }
    std::vector<const HostTensor *> args;
    for (int o : in.operands)
      args.push_back(&get(fr, o, in));
    std::vector<TensorType> types;
    for (int r : in.results)
      types.push_back(fr.type(r));
    auto out = runLocalOp(in, args, types, LocalPlace{meshRank(rt), sh_.referenceOnly});
    return std::vector<Slot>(out.begin(), out.end());
  }

  /// A call of a compiled kernel (the fast path of block()): the rank runs
  /// it on its blocks (none off the kernel's mesh); an input that dies here
  /// may be overwritten (the memory plan).
  Slot kernelCall(RankState::CallSite &cs, const Inst &in, Frame &fr) {
    if (!cs.launched) {
      cs.runs = holds(cs.kernel->fk.iterType);
      cs.meshRank = meshRank(cs.kernel->fk.iterType);
    }
    if (!cs.runs)
      return Slot{};
    argSlots_.clear();
    argDying_.clear();
    for (int o : in.operands) {
      argSlots_.push_back(&fr.vals.at(o));
      argDying_.push_back(dying_ && std::find(dying_->begin(), dying_->end(), o) != dying_->end());
    }
    return rs_.runKernel(cs, argSlots_.data(), argDying_.data(), argSlots_.size());
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
    int n = sh_.world.size();
    bool covers = st.mesh->size() == n;
    for (int64_t i = 0; covers && i < st.mesh->size(); ++i)
      covers = meshRankOf(*st.mesh, (int)i) >= 0;
    if (covers)
      return get(fr, in.operands[0], in);
    HostTensor v = holds(st) ? get(fr, in.operands[0], in).clone()
                             : HostTensor(st.dtype, concreteDims(st.shape));
    sh_.world.world(rank_).broadcast(v.raw(), v.numel(), v.dtype, (int)st.mesh->devices[0]);
    return v;
  }

  std::vector<Slot> loop(const Inst &in, Frame &fr, int depth) {
    if (in.regions.size() != 1 || in.attrs.ints.size() != 3 || in.attrs.ints[2] == 0)
      throw InternalError("executor: malformed `for`");
    const Block &body = in.regions[0];
    int64_t lo = in.attrs.ints[0], hi = in.attrs.ints[1], step = in.attrs.ints[2];
    std::vector<Slot> cur;
    for (int o : in.operands)
      cur.push_back(fr.vals.at(o));
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
      HostTensor iv(DType::I64, {});
      iv.data<int64_t>()[0] = i;
      fr.vals.at(body.args.at(0)) = iv;
      // Moved, not copied: a loop-carried value that dies in the body may then
      // be updated in place (the memory plan, runtime/KernelRuntime.h).
      for (size_t k = 0; k < cur.size(); ++k) {
        Slot &arg = fr.vals.at(body.args.at(k + 1));
        arg = std::move(cur[k]);
        if (arg)
          rs_.hold(*arg);
      }
      cur = block(body, fr, depth);
    }
    return cur;
  }

  void print(const Inst &in, Frame &fr) {
    PrintEvent ev;
    ev.label = in.attrs.str;
    int id = in.operands.at(0), src = id;
    // The value as the program wrote it: before the gathers lowering put in
    // front of this print (they carry the print's source location, which
    // spans the whole printed expression; a `relayout` the user wrote there
    // spans only its name, and is the program's, not the print's).
    while (sh_.wantSources && fr.def[src] && opInfo(fr.def[src]->op).cls == OpClass::Collective &&
           fr.def[src]->loc.line == in.loc.line && fr.def[src]->loc.col == in.loc.col &&
           fr.def[src]->loc.endCol == in.loc.endCol)
      src = fr.def[src]->operands.at(0);
    ev.type = fr.type(id);
    ev.srcType = fr.type(src);
    ev.meshRank = meshRank(ev.type);
    ev.srcMeshRank = meshRank(ev.srcType);
    ev.block = fr.vals.at(id);
    if (sh_.wantSources)
      ev.srcBlock = fr.vals.at(src);
    sh_.prints[rank_].push_back(std::move(ev));
  }

  Executor::Shared &sh_;
  int rank_;
  RankState &rs_;
  const std::vector<int> *dying_ = nullptr; ///< values dying at the current instruction
  std::vector<Slot *> argSlots_;            ///< kernel-call scratch (no allocation per op)
  std::vector<unsigned char> argDying_;
  std::map<const Mesh *, int64_t> meshRanks_;
};

/// The blocks of a value of type `t` by mesh rank, from per-world-rank slots.
std::vector<Slot> byMeshRank(const TensorType &t, const std::vector<const Slot *> &perWorld) {
  if (t.isHost())
    return {perWorld.empty() || !perWorld[0] ? Slot{} : *perWorld[0]};
  std::vector<Slot> r(t.mesh->size());
  for (int64_t i = 0; i < t.mesh->size(); ++i) {
    int64_t w = t.mesh->devices[i];
    if (w >= 0 && w < (int64_t)perWorld.size() && perWorld[w])
      r[i] = *perWorld[w];
  }
  return r;
}

} // namespace

Executor::Executor(const Module &m, std::ostream &out, ExecOptions opts)
    : m_(m), out_(out), opts_(opts) {}

Executor::~Executor() = default;

int Executor::requiredRanks(const Module &m) {
  int64_t n = 1;
  for (auto &mesh : m.meshes)
    for (auto d : mesh->devices)
      n = std::max(n, d + 1);
  return (int)n;
}

std::vector<HostTensor> Executor::run(const std::string &fn, const std::vector<HostTensor> &args) {
  const Function *f = m_.find(fn);
  if (!f)
    throw RuntimeFault("no function `" + fn + "` to run");
  int need = requiredRanks(m_);
  if (opts_.ranks != 0 && opts_.ranks != need)
    throw RuntimeFault("the program's meshes need " + std::to_string(need) + " ranks (devices 0.." +
                       std::to_string(need - 1) + "), not " + std::to_string(opts_.ranks));
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
  if (opts_.jit && stats_.kernels > 0 && !kernels_) {
    CpuJIT *jit = opts_.cpuJit, *quick = opts_.quickJit;
    if (!jit) {
      if (!ownJit_)
        ownJit_ = std::make_unique<CpuJIT>();
      jit = ownJit_.get();
    }
    if (!quick) {
      if (!ownQuickJit_)
        ownQuickJit_ = std::make_unique<CpuJIT>(CpuJIT::Options{0});
      quick = ownQuickJit_.get();
    }
    auto counters = [&](int sign) {
      for (CpuJIT *j : {jit, quick}) {
        stats_.compiles += sign * j->compiles();
        stats_.cacheHits += sign * j->cacheHits();
        stats_.compileSeconds += sign * j->compileSeconds();
      }
    };
    counters(-1);
    kernels_ = std::make_unique<KernelTable>(m_, *jit, quick);
    counters(+1);
  }
  if (opts_.memoryPlan && !liveness_)
    liveness_ = std::make_unique<LivenessTable>(m_);
  if (states_.size() != (size_t)need)
    states_.assign(need, RankState(opts_.memoryPlan));
  for (auto &st : states_)
    st.startRun();
  Shared sh(m_, need, states_);
  sh.kernels = opts_.jit ? kernels_.get() : nullptr;
  sh.referenceOnly = !opts_.jit;
  // Components/visualize read a printed value's source after its last use,
  // so they keep every value (a debugging view).
  sh.wantSources = opts_.components || opts_.visualize;
  sh.liveness = opts_.memoryPlan && !sh.wantSources ? liveness_.get() : nullptr;
  std::string failure;
  try {
    sh.world.run([&](int rank) {
      try {
        RankRunner rr(sh, rank);
        std::vector<Slot> local;
        for (size_t i = 0; i < args.size(); ++i) {
          const TensorType &t = f->values[f->params[i]].type;
          int64_t mr = t.isHost() ? -1 : meshRankOf(*t.mesh, rank);
          if (t.isHost())
            local.push_back(args[i]);
          else if (mr >= 0)
            local.push_back(blockOfGlobal(args[i], t, mr));
          else
            local.push_back(Slot{});
        }
        sh.results[rank] = rr.call(*f, local, 0);
      } catch (const InternalError &e) {
        std::lock_guard<std::mutex> lock(sh.mu);
        if (sh.internal.empty())
          sh.internal = "rank " + std::to_string(rank) + ": " + e.what();
        throw;
      }
    });
  } catch (const RuntimeFault &e) {
    failure = e.what();
  }
  // Prints every rank completed, in program order.
  size_t complete = SIZE_MAX;
  for (auto &p : sh.prints)
    complete = std::min(complete, p.size());
  for (size_t i = 0; i < complete; ++i) {
    const PrintEvent &ev0 = sh.prints[0][i];
    std::vector<const Slot *> blocks, srcBlocks;
    for (auto &p : sh.prints) {
      blocks.push_back(&p[i].block);
      srcBlocks.push_back(&p[i].srcBlock);
    }
    PrintedValue pv{ev0.label, assembleGlobal(ev0.type, byMeshRank(ev0.type, blocks)), ev0.srcType};
    out_ << formatTensor(pv.value) << "\n";
    if (opts_.components)
      out_ << "components of `" << pv.label << "`: " << ev0.srcType.str() << "\n"
           << formatComponents(ev0.srcType, byMeshRank(ev0.srcType, srcBlocks));
    if (opts_.visualize)
      out_ << visualizeLayout(ev0.srcType);
    printed_.push_back(std::move(pv));
  }
  out_.flush();
  for (auto &st : sh.state)
    stats_.ranks.push_back(st.stats);
  if (!sh.internal.empty())
    throw InternalError(sh.internal);
  if (!failure.empty())
    throw RuntimeFault(failure);
  std::vector<HostTensor> results;
  for (size_t k = 0; k < f->results.size(); ++k) {
    std::vector<const Slot *> per;
    for (auto &r : sh.results)
      per.push_back(k < r.size() ? &r[k] : nullptr);
    results.push_back(assembleGlobal(f->results[k], byMeshRank(f->results[k], per)));
  }
  return results;
}

} // namespace dt
