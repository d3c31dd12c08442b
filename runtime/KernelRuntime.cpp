// This file implements the executor's compiled path and memory planner (see
// KernelRuntime.h).
#include "runtime/KernelRuntime.h"

#include "frontend/Diagnostics.h"
#include "passes/Fusion.h"

namespace dt {

KernelTable::KernelTable(const Module &m, CpuJIT &optimizing, CpuJIT *quick) {
  for (const Function &f : m.functions) {
    if (!isFusedKernel(f))
      continue;
    Entry e;
    e.fk = buildFusedKernel(f);
    bool small = quick && numElements(e.fk.iterType.shape) <= kQuickElements;
    e.fn = (small ? *quick : optimizing).compile(e.fk.kernel);
    byName_.emplace(f.name, std::move(e));
  }
}

const KernelTable::Entry *KernelTable::find(const Inst &in) const {
  if (in.op != Op::Call || !isFusedKernelName(in.attrs.str))
    return nullptr;
  auto it = byName_.find(in.attrs.str);
  return it == byName_.end() ? nullptr : &it->second;
}

namespace {

/// Every value `in` reads, including reads inside its regions.
void reads(const Inst &in, std::vector<int> &out) {
  out.insert(out.end(), in.operands.begin(), in.operands.end());
  for (auto &r : in.regions)
    for (auto &sub : r.insts)
      reads(sub, out);
}

} // namespace

LivenessTable::LivenessTable(const Module &m) {
  for (const Function &f : m.functions)
    add(f.body);
}

void LivenessTable::add(const Block &b) {
  std::unordered_map<int, int> last; // value defined in b -> index of its last use
  for (int a : b.args)
    last[a] = 0; // an unused block argument dies at the first instruction
  std::vector<int> rd;
  for (size_t i = 0; i < b.insts.size(); ++i) {
    rd.clear();
    reads(b.insts[i], rd);
    for (int v : rd) {
      auto it = last.find(v);
      if (it != last.end())
        it->second = (int)i;
    }
    for (int r : b.insts[i].results)
      last[r] = (int)i;
    for (auto &r : b.insts[i].regions)
      add(r);
  }
  std::vector<std::vector<int>> dies(b.insts.size());
  for (auto &[v, i] : last)
    dies[i].push_back(v);
  dies_[&b] = std::move(dies);
}

const std::vector<std::vector<int>> *LivenessTable::dies(const Block &b) const {
  auto it = dies_.find(&b);
  return it == dies_.end() ? nullptr : &it->second;
}

void RankState::count(const Buffer *b, int delta) {
  if (!b)
    return;
  if (delta < 0 && !refs_.count(b))
    return; // a value this rank never held (a caller's argument)
  int &n = refs_[b];
  if (n == 0 && delta > 0) {
    stats.liveBytes += (int64_t)b->bytes();
    stats.peakBytes = std::max(stats.peakBytes, stats.liveBytes);
  }
  n += delta;
  if (n == 0) {
    stats.liveBytes -= (int64_t)b->bytes();
    refs_.erase(b);
  }
}

void RankState::hold(const HostTensor &t) { count(t.buf.get(), +1); }

void RankState::release(std::optional<HostTensor> &t) {
  if (!t)
    return;
  std::shared_ptr<Buffer> b = std::move(t->buf);
  t.reset();
  if (!b)
    return;
  // The slot's reference and `b` are the same one now: pool a buffer that no
  // other value or print event shares.
  if (reuse_ && b.use_count() == 1 && b->bytes() > 0) {
    count(b.get(), +1); // the pool's hold
    pool_.emplace((int64_t)b->bytes(), b);
  }
  count(b.get(), -1);
}

std::shared_ptr<Buffer> RankState::acquire(int64_t bytes) {
  if (reuse_ && bytes > 0) {
    auto it = pool_.lower_bound(bytes);
    if (it != pool_.end() && it->first <= 2 * bytes) {
      std::shared_ptr<Buffer> b = std::move(it->second);
      pool_.erase(it);
      ++stats.reused;
      count(b.get(), -1); // the pool's hold; the new value's hold follows
      return b;
    }
  }
  return std::make_shared<Buffer>((size_t)bytes);
}

HostTensor RankState::runKernel(const KernelTable::Entry &e, const Inst &in,
                                const std::vector<const HostTensor *> &args,
                                const std::vector<bool> &dying, int64_t meshRank) {
  const Kernel &k = e.fk.kernel;
  if (args.size() != k.inputs.size())
    throw InternalError("executor: `@" + in.attrs.str + "` takes " +
                        std::to_string(k.inputs.size()) + " inputs");
  auto it = launches_.find(&in);
  if (it == launches_.end()) {
    std::vector<std::vector<int64_t>> shapes;
    for (auto *a : args)
      shapes.push_back(a->shape);
    it = launches_.emplace(&in, fusedLaunch(e.fk, shapes, meshRank)).first;
  }
  const FusedLaunch &l = it->second;
  HostTensor out;
  out.dtype = k.outputs[0];
  out.shape = l.outShape;
  int64_t bytes = out.bytes();
  if (reuse_ && k.reduce == KReduce::None)
    for (size_t i = 0; i < args.size() && !out.buf; ++i) {
      const HostTensor &a = *args[i];
      if (dying[i] && a.buf && a.buf.use_count() == 1 && a.shape == out.shape &&
          a.bytes() == bytes && dtypeSize(a.dtype) == dtypeSize(out.dtype)) {
        out.buf = a.buf;
        ++stats.inPlace;
      }
    }
  if (!out.buf)
    out.buf = acquire(bytes);
  void *bufs[8];
  std::vector<void *> many;
  void **b = bufs;
  if (args.size() + 1 > 8) {
    many.resize(args.size() + 1);
    b = many.data();
  }
  for (size_t i = 0; i < args.size(); ++i)
    b[i] = const_cast<void *>(args[i]->raw());
  b[args.size()] = out.raw();
  if (l.iterations > 0 || k.reduce != KReduce::None)
    e.fn(b, l.params.data());
  ++stats.kernelCalls;
  return out;
}

} // namespace dt
