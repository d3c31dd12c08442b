// This file implements the return of whole values across calls in
// deterministic mode (see WholeResults.h).
#include "passes/WholeResults.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dt {

namespace {

/// A result of a callee that now returns the whole value: the partial axes
/// its callers re-make with `local_partial`.
struct WholeResult {
  size_t index;
  std::vector<int64_t> axes;
};

void countCalls(const Block &b, std::set<std::string> &called) {
  for (const Inst &in : b.insts) {
    if (in.op == Op::Call)
      called.insert(in.attrs.str);
    for (const Block &r : in.regions)
      countCalls(r, called);
  }
}

bool hasAxis(const std::vector<int64_t> &axes, size_t a) {
  return std::find(axes.begin(), axes.end(), (int64_t)a) != axes.end();
}

/// `whole` is `partial` with the partial axes `axes` replicated, nothing else.
bool wholeOf(const TensorType &partial, const TensorType &whole, const std::vector<int64_t> &axes) {
  if (partial.isHost() || whole.isHost() || partial.dtype != whole.dtype ||
      !(partial.shape == whole.shape) || partial.mesh != whole.mesh ||
      partial.placements.size() != whole.placements.size())
    return false;
  for (size_t a = 0; a < partial.placements.size(); ++a)
    if (hasAxis(axes, a) ? !(partial.placements[a].isPartial() && whole.placements[a].isReplicate())
                         : !(partial.placements[a] == whole.placements[a]))
      return false;
  return true;
}

/// `in` is a partial copy: a `local_partial` of a whole value (its operand).
bool partialCopy(const Function &f, const Inst &in) {
  return in.op == Op::LocalPartial && in.operands.size() == 1 && in.results.size() == 1 &&
         wholeOf(f.type(in.results[0]), f.type(in.operands[0]), in.attrs.ints);
}

bool elementwise(Op op) {
  OpClass c = opInfo(op).cls;
  return c == OpClass::Elementwise1 || c == OpClass::Elementwise2 || c == OpClass::Elementwise3;
}

/// Elementwise ops on partial copies run on the whole values they were made
/// from, and the result becomes a partial copy in turn: op(local_partial(a),
/// local_partial(b), r) = local_partial(op(a, b, r)) on coordinate 0, the
/// only block of a partial value that deterministic mode ever reads. So the
/// sum of two gradient contributions is a partial copy of a whole value too.
class Lifter {
public:
  explicit Lifter(Function &f) : f_(f) {}
  void run() { block(f_.body); }

private:
  struct Copy {
    int whole;
    std::vector<int64_t> axes;
  };

  void block(Block &b) {
    std::vector<Inst> out;
    out.reserve(b.insts.size());
    for (Inst &in : b.insts) {
      for (Block &r : in.regions)
        block(r);
      if (partialCopy(f_, in)) {
        copies_[in.results[0]] = {in.operands[0], in.attrs.ints};
      } else if (elementwise(in.op) && in.results.size() == 1 && in.regions.empty()) {
        if (lift(in, out))
          continue;
      }
      out.push_back(std::move(in));
    }
    b.insts = std::move(out);
  }

  bool lift(Inst &in, std::vector<Inst> &out) {
    TensorType whole = f_.type(in.results[0]); // a copy: newValue grows the table
    if (whole.isHost())
      return false;
    std::vector<int64_t> axes;
    for (size_t a = 0; a < whole.placements.size(); ++a)
      if (whole.placements[a].isPartial()) {
        axes.push_back((int64_t)a);
        whole.placements[a] = Placement::replicate();
      }
    if (axes.empty())
      return false;
    std::vector<int> operands;
    bool any = false;
    for (int o : in.operands) {
      auto c = copies_.find(o);
      if (c != copies_.end() && c->second.axes == axes) {
        operands.push_back(c->second.whole);
        any = true;
      } else if (!f_.type(o).hasPartial()) {
        operands.push_back(o);
      } else {
        return false;
      }
    }
    if (!any)
      return false;
    int w = f_.newValue(whole);
    Inst op = in;
    op.operands = operands;
    op.results = {w};
    Inst lp;
    lp.op = Op::LocalPartial;
    lp.operands = {w};
    lp.results = {in.results[0]};
    lp.attrs.ints = axes;
    lp.loc = in.loc;
    copies_[in.results[0]] = {w, axes};
    out.push_back(std::move(op));
    out.push_back(std::move(lp));
    return true;
  }

  Function &f_;
  std::map<int, Copy> copies_;
};

/// The callee side: results made by a top-level `local_partial` return its
/// operand instead. Returns them (empty: nothing changed).
std::vector<WholeResult> returnWhole(Function &f) {
  std::vector<WholeResult> changed;
  if (f.body.insts.empty() || f.body.insts.back().op != Op::Return)
    return changed;
  std::map<int, const Inst *> def;
  for (const Inst &in : f.body.insts)
    if (partialCopy(f, in))
      def[in.results[0]] = &in;
  Inst &ret = f.body.insts.back();
  for (size_t i = 0; i < ret.operands.size() && i < f.results.size(); ++i) {
    auto d = def.find(ret.operands[i]);
    if (d == def.end() || !(f.results[i] == f.type(ret.operands[i])))
      continue;
    int whole = d->second->operands[0];
    changed.push_back({i, d->second->attrs.ints});
    ret.operands[i] = whole;
    f.results[i] = f.type(whole);
  }
  return changed;
}

/// Drops the top-level `local_partial`s of `b` (and of its regions) whose
/// results lost every use.
void dropUnusedPartials(Block &b, std::map<int, int> &uses) {
  for (Inst &in : b.insts)
    for (Block &r : in.regions)
      dropUnusedPartials(r, uses);
  std::vector<Inst> kept;
  kept.reserve(b.insts.size());
  for (Inst &in : b.insts) {
    if (in.op == Op::LocalPartial && in.results.size() == 1 && uses[in.results[0]] == 0) {
      --uses[in.operands[0]];
      continue;
    }
    kept.push_back(std::move(in));
  }
  b.insts = std::move(kept);
}

class Caller {
public:
  Caller(Function &g, const std::map<std::string, std::vector<WholeResult>> &changed)
      : g_(g), changed_(changed) {}

  int run() {
    block(g_.body);
    std::map<int, int> uses = useCounts(g_.body);
    dropUnusedPartials(g_.body, uses);
    return made_;
  }

private:
  void block(Block &b) {
    std::vector<Inst> out;
    out.reserve(b.insts.size());
    for (Inst &in : b.insts) {
      for (int &o : in.operands)
        if (auto r = rename_.find(o); r != rename_.end())
          o = r->second;
      for (Block &r : in.regions)
        block(r);
      if (collective(in))
        continue; // became the whole value itself
      if (partialCopy(g_, in))
        whole_[in.results[0]] = in.operands[0];
      auto c = in.op == Op::Call ? changed_.find(in.attrs.str) : changed_.end();
      if (c == changed_.end()) {
        out.push_back(std::move(in));
        continue;
      }
      std::vector<Inst> after;
      for (const WholeResult &w : c->second) {
        if (w.index >= in.results.size())
          continue;
        int partial = in.results[w.index];
        TensorType whole = g_.type(partial); // a copy: newValue grows the table
        for (int64_t a : w.axes)
          whole.placements[(size_t)a] = Placement::replicate();
        int v = g_.newValue(whole);
        in.results[w.index] = v;
        Inst lp;
        lp.op = Op::LocalPartial;
        lp.operands = {v};
        lp.results = {partial};
        lp.attrs.ints = w.axes;
        lp.loc = in.loc;
        after.push_back(std::move(lp));
        whole_[partial] = v;
      }
      out.push_back(std::move(in));
      for (Inst &a : after)
        out.push_back(std::move(a));
    }
    b.insts = std::move(out);
  }

  /// A non-tree `all_reduce` of a partial copy is the whole value
  /// (returns true: `in` goes); its `reduce_scatter` becomes a `local_slice`
  /// of the whole value.
  bool collective(Inst &in) {
    if ((in.op != Op::AllReduce && in.op != Op::ReduceScatter) || in.operands.size() != 1 ||
        in.results.size() != 1 || in.attrs.str.rfind("tree ", 0) == 0)
      return false;
    auto w = whole_.find(in.operands[0]);
    if (w == whole_.end())
      return false;
    const TensorType &res = g_.type(in.results[0]), &whole = g_.type(w->second);
    if (in.op == Op::AllReduce) {
      if (!(res == whole))
        return false;
      rename_[in.results[0]] = w->second;
      ++made_;
      return true;
    }
    // reduce_scatter: the other axes must already be as the result has them.
    for (size_t a = 0; a < res.placements.size(); ++a)
      if (!hasAxis(in.attrs.ints, a) && !(res.placements[a] == whole.placements[a]))
        return false;
    in.op = Op::LocalSlice;
    in.operands[0] = w->second;
    ++made_;
    return false;
  }

  Function &g_;
  const std::map<std::string, std::vector<WholeResult>> &changed_;
  std::map<int, int> whole_;  ///< partial copy -> the whole value it was made from
  std::map<int, int> rename_; ///< an all_reduce's result -> the whole value
  int made_ = 0;
};

} // namespace

int returnWholeResults(Module &m) {
  if (!m.deterministic)
    return 0;
  std::set<std::string> called;
  for (const Function &f : m.functions)
    countCalls(f.body, called);
  for (Function &f : m.functions)
    Lifter(f).run();
  std::map<std::string, std::vector<WholeResult>> changed;
  for (Function &f : m.functions) {
    if (f.name == "main" || !called.count(f.name))
      continue;
    std::vector<WholeResult> w = returnWhole(f);
    if (w.empty())
      continue;
    std::map<int, int> uses = useCounts(f.body);
    dropUnusedPartials(f.body, uses);
    changed[f.name] = std::move(w);
  }
  int n = 0;
  for (Function &g : m.functions)
    n += Caller(g, changed).run();
  return n;
}

} // namespace dt
