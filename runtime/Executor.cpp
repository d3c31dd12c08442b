// This file implements the SPMD executor (see Executor.h): the per-rank
// interpreter loop over a Device, prints and results gathered to world rank
// 0 through the world communicator.
#include "runtime/Executor.h"
#include "runtime/RankRunner.h"

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

/// The mesh rank of device id `id` in `mesh` (-1: not a member).
int64_t meshRankOf(const Mesh &mesh, int64_t id) {
  for (size_t i = 0; i < mesh.devices.size(); ++i)
    if (mesh.devices[i] == id)
      return (int64_t)i;
  return -1;
}

} // namespace

namespace exec {

std::vector<Slot> RankRunner::call(const Function &f, const std::vector<Slot> &args, int depth) {
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

int64_t RankRunner::meshRank(const TensorType &t) {
  if (t.isHost())
    return -1;
  auto it = meshRanks_.find(t.mesh.get());
  if (it != meshRanks_.end())
    return it->second;
  return meshRanks_[t.mesh.get()] = meshRankOf(*t.mesh, sh_.ids[rank_]);
}

const HostTensor &RankRunner::get(const Frame &fr, int id, const Inst &in) {
  if (id < 0 || id >= (int)fr.vals.size() || !fr.vals[id])
    throw InternalError(std::string("executor: `") + opName(in.op) + "` in `" + fr.f.name +
                        "` reads %" + std::to_string(id) + ", which rank " + std::to_string(rank_) +
                        " does not hold");
  return *fr.vals[id];
}

/// Runs instruction `in` (not a return or yield) and binds its results.
void RankRunner::step(const Inst &in, Frame &fr, int depth, RankState::CallSite *cs) {
  if (cs && cs->kernel) { // fast path: a compiled kernel
    kernelCall(*cs, in, fr);
  } else if (auto skip = sh_.ownerOnly.find(&in);
             skip != sh_.ownerOnly.end() && notOwner(fr.type(in.results[0]), skip->second)) {
    // Deterministic mode: only coordinate 0 keeps this product (Shared::ownerOnly).
    const TensorType &rt = fr.type(in.results[0]);
    fr.def[in.results[0]] = &in;
    rs_.release(fr.vals[in.results[0]]);
    fr.vals[in.results[0]] =
        holds(rt) ? Slot{dev_.empty(rt.dtype, localBlock(rt, meshRank(rt)).shape)} : Slot{};
    if (fr.vals[in.results[0]])
      rs_.hold(*fr.vals[in.results[0]]);
  } else {
    auto res = inst(in, fr, depth);
    for (size_t i = 0; i < in.results.size(); ++i) {
      fr.def[in.results[i]] = &in;
      // Without the memory plan a loop's previous trip's value is still
      // here: dropped, and no longer counted (--stats), as it is freed.
      rs_.release(fr.vals[in.results[i]]);
      fr.vals[in.results[i]] = i < res.size() ? std::move(res[i]) : Slot{};
      if (fr.vals[in.results[i]])
        rs_.hold(*fr.vals[in.results[i]]);
    }
  }
}

std::vector<Slot> RankRunner::block(const Block &b, Frame &fr, int depth) {
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
    try {
      step(in, fr, depth, cs);
    } catch (const RuntimeFault &f) {
      rethrowAt(f, in.loc, moduleFileOf(sh_.opts.sources, in.loc, sh_.opts.programFile),
                in.op == Op::Call);
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

bool RankRunner::isControl(Op op) {
  return op == Op::For || op == Op::While || op == Op::If || op == Op::Call;
}

std::string RankRunner::profileLabel(const Inst &in) const {
  std::string what = in.op == Op::Call ? in.attrs.str : opName(in.op);
  if (in.loc.line <= 0)
    return what;
  // A line of a module (the stdlib's nn.dt) names its file.
  std::string file = moduleFileOf(sh_.opts.sources, in.loc, sh_.opts.programFile);
  if (!file.empty())
    return what + " " + file.substr(file.find_last_of('/') + 1) + ":" + std::to_string(in.loc.line);
  return what + " line " + std::to_string(in.loc.line);
}

bool RankRunner::notOwner(const TensorType &t, const std::vector<int64_t> &axes) {
  if (t.isHost() || !holds(t))
    return false;
  auto c = t.mesh->coords(meshRank(t));
  for (auto a : axes)
    if (c[a] != 0)
      return true;
  return false;
}

std::vector<Slot> RankRunner::inst(const Inst &in, Frame &fr, int depth) {
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
  if (in.op == Op::IndexAdd && in.operands.size() == 3 && in.attrs.ints.size() == 1 &&
      !sh_.referenceOnly && dying_ &&
      std::find(dying_->begin(), dying_->end(), in.operands[0]) != dying_->end()) {
    // A base dying here, unshared: its rows are added in place (a join's
    // zeros take each input without a copy of the whole result per input).
    const HostTensor &ids = get(fr, in.operands[1], in), &src = get(fr, in.operands[2], in);
    Slot &bs = fr.vals.at(in.operands[0]);
    if (bs && bs->buf != ids.buf && bs->buf != src.buf)
      if (Slot base = rs_.takeDying(bs)) {
        dev_.scatterAddInPlace(*base, ids, src, in.attrs.ints[0], !sh_.m.deterministic);
        return {std::move(base)};
      }
  }
  if (opInfo(in.op).cls == OpClass::Collective) {
    const TensorType &st = fr.type(in.operands[0]);
    ++rs_.stats.collectives;
    dev_.at(&in);
    return {runCollectiveStep(dev_, in, st, rt, get(fr, in.operands[0], in), meshRank(st), sh_.ids,
                              sh_.m.deterministic,
                              [&](int64_t bytes) { return rs_.takePooled(bytes); })};
  }
  std::vector<const HostTensor *> args;
  for (int o : in.operands)
    args.push_back(&get(fr, o, in));
  std::vector<TensorType> types;
  for (int r : in.results)
    types.push_back(fr.type(r));
  return localOp(in, args, types, LocalPlace{meshRank(rt), sh_.referenceOnly});
}

HostTensor RankRunner::blockOf(const HostTensor &global, const TensorType &t, int64_t meshRank) {
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

std::vector<Slot> RankRunner::gather(const TensorType &t, const Slot &block, bool everyBlock) {
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

std::vector<Slot> RankRunner::distributeArgs(const Function &f,
                                             const std::vector<HostTensor> &args) {
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

int64_t RankRunner::numElementsOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

void RankRunner::kernelCall(RankState::CallSite &cs, const Inst &in, Frame &fr) {
  if (!cs.launched) {
    cs.runs = holds(cs.kernel->fk.iterType);
    cs.meshRank = meshRank(cs.kernel->fk.iterType);
  }
  resSlots_.clear();
  for (int r : in.results) {
    fr.def[r] = &in;
    Slot &s = fr.vals.at(r);
    rs_.release(s); // a loop's previous trip's value (without the memory plan)
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

Slot RankRunner::toHost(const Inst &in, Frame &fr) {
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

std::vector<Slot> RankRunner::loop(const Inst &in, Frame &fr, int depth) {
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
      rs_.release(arg);
      arg = std::move(cur[k]);
      if (arg)
        rs_.hold(*arg);
    }
    cur = block(body, fr, depth);
    report.step(k + 1);
  }
  return cur;
}

std::vector<Slot> RankRunner::branch(const Inst &in, Frame &fr, int depth) {
  if (in.regions.size() != 2 || in.operands.size() != 1)
    throw InternalError("executor: malformed `if`");
  bool c = hostScalar(fr, in.operands[0], in).data<uint8_t>()[0] != 0;
  return block(in.regions[c ? 0 : 1], fr, depth);
}

void RankRunner::checkTrips(uint64_t trips, const Inst &in) const {
  const int64_t limit = sh_.opts.maxLoopTrips;
  if (limit > 0 && trips > (uint64_t)limit)
    throw RuntimeFault(std::string("`") + opName(in.op) + "` loop at line " +
                       std::to_string(in.loc.line) + " runs more than " + std::to_string(limit) +
                       " iterations (the run's loop limit)");
}

std::vector<Slot> RankRunner::whileLoop(const Inst &in, Frame &fr, int depth) {
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
      rs_.release(arg);
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

} // namespace exec

using exec::RankRunner;
using exec::Slot;

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
    throw RuntimeFault(
        formatDiag("the program's meshes need {0} ranks ({0} distinct device ids), not {1}",
                   {std::to_string(need), std::to_string(opts_.ranks)}));
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
  if (backend_.createsGroupsAhead())
    backend_.prepareGroups(collectiveGroups(m_, ids));
  Shared sh(m_, std::move(ids), states_, out_, opts_, &printed_);
  sh.kernels = opts_.jit ? kernels_.get() : nullptr;
  sh.referenceOnly = !opts_.jit;
  // Components/visualize read a printed value's source after its last use,
  // so they keep every value (a debugging view).
  sh.wantSources = opts_.components || opts_.visualize;
  sh.liveness = opts_.memoryPlan && !sh.wantSources ? plan : nullptr;
  std::optional<RuntimeFault> failure; // kept whole: its line renders the fault
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
    failure = e;
  }
  for (auto &st : sh.state)
    stats_.ranks.push_back(st.stats);
  if (!sh.internal.empty())
    throw InternalError(sh.internal);
  if (failure)
    throw *failure;
  std::vector<HostTensor> results = std::move(sh.results);
  return results;
}

} // namespace dt
