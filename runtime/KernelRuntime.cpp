// This file implements the executor's compiled path and memory planner (see
// KernelRuntime.h).
#include "runtime/KernelRuntime.h"

#include "passes/Fusion.h"
#include "runtime/RefKernelsUtil.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <functional>

namespace dt {

namespace {

std::vector<std::vector<char>> outputReads(const Kernel &k) {
  std::vector<std::vector<char>> dep(k.nodes.size(), std::vector<char>(k.inputs.size(), 0));
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode &n = k.nodes[i];
    if (n.op == KOp::Load)
      dep[i][n.index] = 1;
    for (int a = 0; a < nodeArity(n); ++a)
      for (size_t in = 0; in < k.inputs.size(); ++in)
        dep[i][in] |= dep[n.args[a]][in];
  }
  std::vector<std::vector<char>> reads(k.outputs.size());
  for (const KStore &st : k.stores)
    reads[st.output] = dep[st.node];
  // A gathered input is read at other points than the one stored: never
  // overwritten in place.
  std::vector<bool> gathered = gatheredInputs(k);
  for (auto &r : reads)
    for (size_t in = 0; in < k.inputs.size(); ++in)
      if (gathered[in])
        r[in] = 0;
  // Nor are a scatter's ids (a GPU plans its rows from them).
  if (int ids = scatterIdsInput(k); ids >= 0)
    for (auto &r : reads)
      r[ids] = 0;
  return reads;
}

} // namespace

KernelTable::KernelTable(const Module &m, Backend &backend)
    : slices_(backend.compilesSliceKernels()) {
  for (const Function &f : m.functions) {
    if (!isFusedKernel(f))
      continue;
    Entry e;
    e.fk = buildFusedKernel(f);
    e.fk.kernel.deterministic = m.deterministic;
    e.reads = outputReads(e.fk.kernel);
    addEntry(f.name, std::move(e));
  }
  addOpKernels(m, backend);
  compileAll(backend);
}

KernelTable::KernelTable(const std::vector<ProgramKernel> &kernels, const Module &m,
                         Backend &backend)
    : slices_(backend.compilesSliceKernels()) {
  for (const ProgramKernel &pk : kernels) {
    Entry e;
    e.fk = pk.kernel;
    e.reads = outputReads(e.fk.kernel);
    addEntry(pk.function, std::move(e));
  }
  addOpKernels(m, backend);
  compileAll(backend);
}

void KernelTable::addEntry(const std::string &name, Entry e) {
  auto [it, added] = byName_.emplace(name, std::move(e));
  if (!added)
    return;
  Entry &in = it->second; // the map's nodes stay put: pending_ points into them
  const bool small = isSmall(in.fk);
  pending_.push_back({&in.fk.kernel, small, &in.native});
  if (slices_ && !small)
    in.slice = sliceKernel(in.fk);
  if (in.slice)
    pending_.push_back({&in.slice->kernel, small, &in.sliceNative});
}

void KernelTable::compileAll(Backend &backend) {
  std::vector<Backend::KernelToCompile> all;
  for (const Pending &p : pending_)
    all.push_back({p.kernel, p.small});
  backend.precompile(all); // in parallel where the backend can (NVRTC)
  for (const Pending &p : pending_)
    *p.native = backend.compile(*p.kernel, p.small);
  pending_.clear();
}

void KernelTable::addOpKernels(const Module &m, Backend &backend) {
  const bool cpuBlas = std::string(backend.name()) == "cpu";
  for (const Function &f : m.functions) {
    if (isFusedKernel(f))
      continue;
    std::function<void(const Block &)> walk = [&](const Block &b) {
      for (const Inst &in : b.insts) {
        for (const Block &r : in.regions)
          walk(r);
        if ((in.op != Op::MatMul && in.op != Op::Einsum && in.op != Op::Transpose) ||
            in.results.size() != 1)
          continue;
        std::vector<DType> dts;
        std::vector<int> ranks;
        int64_t elements = 0;
        for (int o : in.operands) {
          const TensorType &t = f.type(o);
          dts.push_back(t.dtype);
          ranks.push_back(t.rank());
          elements = std::max(elements, isConcrete(t.shape) ? numElements(t.shape) : elements);
        }
        const TensorType &rt = f.type(in.results[0]);
        if (in.op == Op::MatMul && isFloat(rt.dtype))
          continue; // BLAS (deterministic mode: runtime/BlasDeterministic.h)
        if (in.op == Op::MatMul && (rt.dtype == DType::I32 || rt.dtype == DType::I64) &&
            backend.multipliesIntegers())
          continue; // runtime/IntGemm.h
        if (in.op == Op::Transpose && cpuBlas)
          continue; // the cpu device's tiled transpose: host memory already

        std::optional<OpKernel> ok = buildOpKernel(in, dts, ranks, rt.dtype);
        if (!ok)
          continue;
        OpEntry e;
        e.op = std::move(*ok);
        if (in.op == Op::Einsum && dts.size() == 2 && isFloat(dts[0]) && !m.deterministic)
          e.blas = einsumMatmulPlan(in.attrs.str, ranks[0], ranks[1]);
        bool small =
            std::max(elements, isConcrete(rt.shape) ? numElements(rt.shape) : 0) <= kQuickElements;
        e.op.main.deterministic = m.deterministic;
        auto [it, added] = byInst_.emplace(&in, std::move(e));
        OpEntry &oe = it->second;
        if (added && (!oe.blas || !cpuBlas)) {
          pending_.push_back({&oe.op.main, small, &oe.main});
          if (oe.op.finish)
            pending_.push_back({&*oe.op.finish, small, &oe.finish});
        }
      }
    };
    walk(f.body);
  }
}

const KernelTable::Entry *KernelTable::find(const Inst &in) const {
  if (in.op != Op::Call || !isFusedKernelName(in.attrs.str))
    return nullptr;
  auto it = byName_.find(in.attrs.str);
  return it == byName_.end() ? nullptr : &it->second;
}

void RankState::count(const Buffer *b, int delta) {
  if (!b)
    return;
  auto it = refs_.find(b);
  if (it == refs_.end()) {
    if (delta < 0)
      return; // a value this rank never held (a caller's argument)
    it = refs_.emplace(b, 0).first;
  }
  int &n = it->second;
  if (delta < 0 && n <= 0)
    return;
  if (n == 0) {
    stats.liveBytes += (int64_t)b->bytes();
    stats.peakBytes = std::max(stats.peakBytes, stats.liveBytes);
  }
  n += delta;
  if (n > 0)
    return;
  stats.liveBytes -= (int64_t)b->bytes();
  // Zero entries stay (no map churn per op) until they pile up.
  if (refs_.size() > purgeAt_) {
    std::erase_if(refs_, [](const auto &e) { return e.second <= 0; });
    purgeAt_ = std::max<size_t>(4096, 2 * refs_.size());
  }
}

void RankState::startRun() {
  stats = RankStats{};
  refs_.clear();
  purgeAt_ = 4096;
  pool_.clear();
  checkedIds_.clear();
}

CheckedIds::Progression CheckedIds::check(Device &dev, const HostTensor &ids, int64_t dim,
                                          int64_t bound, const char *op) {
  for (const Entry &c : held_)
    if (c.held.holds(ids) && c.bound == bound)
      return c.ids;
  const Progression p = ref::checkedProgression(op, dev.toHost(ids), dim, bound);
  if (!ids.buf || ids.bytes() > kMaxBytes)
    return p;
  if (held_.size() == kMax)
    held_.erase(held_.begin());
  held_.push_back({HeldTensor(ids), bound, p});
  return p;
}

void RankState::hold(const HostTensor &t) { count(t.buf.get(), +1); }

std::optional<HostTensor> RankState::takeDying(std::optional<HostTensor> &t) {
  if (!reuse_ || !t || !t->buf || t->buf.use_count() != 1)
    return std::nullopt;
  HostTensor out = std::move(*t);
  t.reset();
  count(out.buf.get(), -1); // the emptied slot's hold
  ++stats.inPlace;
  return out;
}

void RankState::release(std::optional<HostTensor> &t) {
  if (!t)
    return;
  std::shared_ptr<Buffer> b = std::move(t->buf);
  t.reset();
  if (!b)
    return;
  // The slot's reference and `b` are the same one now: pool a buffer that no
  // other value or print event shares.
  if (reuse_ && b.use_count() == 1 && b->bytes() > 0 && pool_.size() < kPoolBuffers &&
      pool_.count((int64_t)b->bytes()) < kPoolPerSize) {
    count(b.get(), +1); // the pool's hold
    pool_.emplace((int64_t)b->bytes(), b);
  }
  count(b.get(), -1);
}

std::shared_ptr<Buffer> RankState::takePooled(int64_t bytes) {
  if (!reuse_ || bytes <= 0)
    return nullptr;
  auto it = pool_.lower_bound(bytes);
  if (it == pool_.end() || it->first > bytes)
    return nullptr;
  std::shared_ptr<Buffer> b = std::move(it->second);
  pool_.erase(it);
  ++stats.reused;
  count(b.get(), -1); // the pool's hold; the new value's hold follows
  return b;
}

void RankState::dropPooled(int64_t bytes) {
  auto it = pool_.find(bytes);
  if (it == pool_.end())
    return;
  count(it->second.get(), -1); // the pool's hold
  pool_.erase(it);             // the last reference: back to the device's cache
}

std::shared_ptr<Buffer> RankState::acquire(Device &dev, int64_t bytes) {
  if (auto b = takePooled(bytes))
    return b;
  return dev.allocateUninit(bytes); // the kernel writes every element
}

RankState::CallSite &RankState::site(const Inst &in, const KernelTable &table) {
  CallSite &cs = sites_[&in];
  if (!cs.resolved) {
    cs.resolved = true;
    cs.kernel = table.find(in);
  }
  return cs;
}

void RankState::runKernel(Device &dev, CallSite &cs, std::optional<HostTensor> *const *args,
                          const unsigned char *dying, size_t n,
                          std::optional<HostTensor> *const *outs) {
  const KernelTable::Entry &e = *cs.kernel;
  const Kernel &k = e.fk.kernel;
  if (n != k.inputs.size())
    throw InternalError("executor: `" + k.name + "` takes " + std::to_string(k.inputs.size()) +
                        " inputs, got " + std::to_string(n));
  for (size_t i = 0; i < n; ++i)
    if (!*args[i])
      throw InternalError("executor: `" + k.name + "` reads a value this rank does not hold");
  if (!cs.launched) {
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < n; ++i)
      shapes.push_back((*args[i])->shape);
    cs.launch = fusedLaunch(e.fk, shapes, cs.meshRank);
    if (e.slice)
      cs.sliceParams = sliceParams(*e.slice, k, cs.launch.params);
    cs.launched = true;
  }
  // A gather reads rows its ids name: every id must be inside the source's
  // local block (the reference evaluator's check and message; the kernel
  // itself does not check).
  // A bad id names its own op's line (FaultAt), not the kernel's call.
  // Ids that step evenly in every gather (slices) launch the slice kernel,
  // each source moved to its first id and strided by the step.
  constexpr size_t kMaxSlices = 8;
  CheckedIds::Progression steps[kMaxSlices];
  bool slices = e.slice && e.fk.gathers.size() <= kMaxSlices;
  for (size_t gi = 0; gi < e.fk.gathers.size(); ++gi) {
    const KernelGather &g = e.fk.gathers[gi];
    CheckedIds::Progression p;
    try {
      p = checkedIds_.check(dev, **args[g.ids], g.dim, (*args[g.src])->shape.at(g.dim));
    } catch (const RuntimeFault &f) {
      if (typeid(f) != typeid(RuntimeFault))
        throw;
      throw FaultAt(f.what(), g.loc);
    }
    slices = slices && p.first >= 0;
    if (slices)
      steps[gi] = p;
  }
  const std::optional<KernelScatter> &sc = e.fk.scatter;
  const int64_t scatterRows = sc ? (*args[sc->base])->shape.at(sc->dim) : 0;
  if (sc)
    try {
      checkedIds_.check(dev, **args[sc->ids], sc->dim, scatterRows, "index_add");
    } catch (const RuntimeFault &f) {
      if (typeid(f) != typeid(RuntimeFault))
        throw;
      throw FaultAt(f.what(), sc->loc);
    }
  const FusedLaunch &l = cs.launch;
  size_t nOut = k.outputs.size();
  void *bufs[16];
  std::vector<void *> many;
  void **b = bufs;
  if (n + nOut > 16) {
    many.resize(n + nOut);
    b = many.data();
  }
  for (size_t i = 0; i < n; ++i)
    b[i] = (*args[i])->raw();
  for (size_t o = 0; o < nOut; ++o) {
    std::optional<HostTensor> &slot = *outs[o];
    slot.emplace();
    HostTensor &out = *slot;
    DType odt = k.outputs[o];
    const bool scatterOut = sc && sc->output == (int)o;
    // Dying input i's buffer becomes the output (its value dies here).
    auto take = [&](size_t i) {
      out = std::move(**args[i]);
      args[i]->reset();
      count(out.buf.get(), -1); // the emptied slot's hold
      out.dtype = odt;
      ++stats.inPlace;
    };
    if (scatterOut) { // starts as base: taken when it dies here, else copied below
      const HostTensor &base = **args[sc->base];
      bool alone = true; // no input the kernel reads shares base's buffer
      for (size_t i = 0; i < n; ++i)
        alone = alone && ((int)i == sc->base || !*args[i] || (*args[i])->buf != base.buf);
      if (reuse_ && alone && dying[sc->base] && base.buf && base.buf.use_count() == 1)
        take(sc->base);
    } else if (reuse_ && k.reduce == KReduce::None) {
      for (size_t i = 0; i < n; ++i) {
        if (!dying[i] || !*args[i] || !e.reads[o][i])
          continue;
        const HostTensor &a = **args[i];
        if (a.buf && a.buf.use_count() == 1 && a.shape == l.outShape &&
            dtypeSize(a.dtype) == dtypeSize(odt)) {
          take(i);
          break;
        }
      }
    }
    if (!out.buf) {
      out.dtype = odt;
      out.shape = scatterOut ? l.scatterShape : l.outShape;
      out.buf = acquire(dev, out.bytes());
      if (scatterOut && out.bytes()) {
        const HostTensor &base = **args[sc->base];
        dev.copyRegion(base.raw(), base.shape, std::vector<int64_t>(base.rank(), 0), out.raw(),
                       out.shape, std::vector<int64_t>(out.rank(), 0), out.shape, dtypeSize(odt));
      }
    }
    b[n + o] = out.raw();
  }
  if (sc && l.iterations > 0)
    dev.launchScatter(e.native, b, l.params.data(), **args[sc->ids], scatterRows);
  else if (slices && (l.iterations > 0 || k.reduce != KReduce::None))
    launchSlices(dev, e, cs, b, steps, args);
  else if (l.iterations > 0 || k.reduce != KReduce::None)
    dev.launch(e.native, b, l.params.data());
  ++stats.kernelCalls;
}

void RankState::launchSlices(Device &dev, const KernelTable::Entry &e, CallSite &cs, void *const *b,
                             const CheckedIds::Progression *ids,
                             std::optional<HostTensor> *const *args) {
  const SliceKernel &sk = *e.slice;
  const size_t n = e.fk.kernel.inputs.size(), nIn = sk.inputOf.size();
  const size_t nOut = e.fk.kernel.outputs.size();
  void *small[16];
  std::vector<void *> many;
  void **sb = small;
  if (nIn + nOut > 16) {
    many.resize(nIn + nOut);
    sb = many.data();
  }
  for (size_t j = 0; j < nIn; ++j)
    sb[j] = b[sk.inputOf[j]];
  for (size_t o = 0; o < nOut; ++o)
    sb[nIn + o] = b[n + o];
  // Each gather's source, moved to its first id along the gathered dim and
  // read every `step` indices there.
  const int64_t R = e.fk.kernel.rank;
  for (size_t gi = 0; gi < e.fk.gathers.size(); ++gi) {
    const KernelGather &g = e.fk.gathers[gi];
    const int in = sk.gatherInput[gi];
    const int64_t stride = cs.launch.params[R * (1 + g.src) + g.dim]; // elements
    cs.sliceParams[R * (1 + in) + g.dim] = stride * ids[gi].step;
    const HostTensor &src = **args[g.src];
    sb[in] = static_cast<char *>(sb[in]) + ids[gi].first * stride * dtypeSize(src.dtype);
  }
  dev.launch(e.sliceNative, sb, cs.sliceParams.data());
}

std::string formatProfile(const std::map<std::string, OpProfile> &profile, size_t top) {
  // Steady state: the runs after the first (one run: that run).
  auto steady = [](const OpProfile &p) {
    return p.count > 1 ? p.seconds - p.firstSeconds : p.seconds;
  };
  auto steadyRuns = [](const OpProfile &p) { return p.count > 1 ? p.count - 1 : p.count; };
  std::vector<std::pair<std::string, OpProfile>> rows(profile.begin(), profile.end());
  std::stable_sort(rows.begin(), rows.end(), [&](const auto &a, const auto &b) {
    return steady(a.second) > steady(b.second);
  });
  double total = 0, firsts = 0;
  for (auto &[name, p] : rows) {
    total += steady(p);
    firsts += p.count > 1 ? p.firstSeconds : 0;
  }
  char line[512];
  std::snprintf(line, sizeof line, "profile: %12s %7s %7s %9s %10s  %s\n", "ms", "%", "runs",
                "ms/run", "first ms", "instruction (rank 0; runs after the first)");
  std::string out = line;
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const OpProfile &p = rows[i].second;
    int64_t n = steadyRuns(p);
    std::snprintf(line, sizeof line, "profile: %12.3f %6.1f%% %7lld %9.4f %10.3f  %s\n",
                  steady(p) * 1e3, total > 0 ? 100 * steady(p) / total : 0.0, (long long)n,
                  n ? steady(p) * 1e3 / n : 0.0, p.firstSeconds * 1e3, rows[i].first.c_str());
    out += line;
  }
  if (rows.size() > top)
    out += "profile: ... " + std::to_string(rows.size() - top) + " more instructions\n";
  std::snprintf(line, sizeof line, "profile: %12.3f %6.1f%% %7s %9s %10.3f  total\n", total * 1e3,
                100.0, "", "", firsts * 1e3);
  return out + line;
}

} // namespace dt
