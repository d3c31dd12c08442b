// This file implements sinking consumer chains into callees (SinkIntoCalls.h).
#include "passes/SinkIntoCalls.h"

#include "passes/FusionRules.h"
#include "passes/ReduceEarly.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

namespace dt {

namespace {

/// An op a chain may move: elementwise, or an `all_reduce` of a sum (every
/// rank runs the same program, so the collective keeps its place in every
/// rank's order; ReduceEarly may then reduce the product's operand instead).
bool isMovable(const Inst &in) {
  return in.results.size() == 1 &&
         (fusion::isElementwise(in.op) ||
          (in.op == Op::AllReduce && in.attrs.str.empty() && in.operands.size() == 1));
}

/// The `return` of `g`'s body (its last instruction in a verified function).
Inst *returnOf(Function &g) {
  auto r = std::find_if(g.body.insts.begin(), g.body.insts.end(),
                        [](const Inst &in) { return in.op == Op::Return; });
  return r == g.body.insts.end() ? nullptr : &*r;
}

bool isConstant(const Inst &in) {
  return (in.op == Op::Const || in.op == Op::Fill) && in.operands.empty() && in.results.size() == 1;
}

void rename(Block &b, int from, int to) {
  forEachBlock(b, [&](Block &blk) {
    for (Inst &in : blk.insts)
      std::replace(in.operands.begin(), in.operands.end(), from, to);
  });
}

/// The chain of one call result: the ops that move, in order, and the
/// constants they read (copied into the callee; the caller keeps its own).
struct Chain {
  std::vector<size_t> ops; ///< indices in the caller's block
  std::vector<size_t> constants;
  int last = -1; ///< the value the callee returns instead
};

class Sinker {
public:
  Sinker(Module &m, const std::string &entry) : m_(m), entry_(entry) {
    for (Function &f : m_.functions)
      forEachBlock(f.body, [&](Block &b) {
        for (Inst &in : b.insts)
          if (in.op == Op::Call)
            ++sites_[in.attrs.str];
      });
  }

  int run() {
    int moved = 0;
    // A deque: appending copies of callees keeps references valid, and the
    // copies are visited too (their own calls may sink further).
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      Function &f = m_.functions[i];
      int n = 0;
      forEachBlock(f.body, [&](Block &b) { n += block(f, b); });
      if (n)
        dropDeadConstants(f);
      moved += n;
    }
    return moved;
  }

private:
  int block(Function &f, Block &b) {
    int moved = 0;
    for (size_t ci = 0; ci < b.insts.size(); ++ci) {
      if (b.insts[ci].op != Op::Call)
        continue;
      Function *g = m_.find(b.insts[ci].attrs.str);
      if (!g || g == &f)
        continue;
      std::map<int, int> uses = useCounts(f.body);
      for (size_t j = 0; j < b.insts[ci].results.size(); ++j) {
        Chain c = chainOf(f, b, ci, j, uses);
        if (c.ops.empty())
          continue;
        moved += (int)c.ops.size();
        sink(f, b, ci, j, c);
        uses = useCounts(f.body); // the moved ops' operands are read in the callee now
      }
    }
    return moved;
  }

  /// The elementwise ops after b.insts[ci] that only result j feeds, each
  /// reading the previous one's value once and otherwise only the call's
  /// arguments and constants of this block.
  Chain chainOf(const Function &f, const Block &b, size_t ci, size_t j, std::map<int, int> &uses) {
    const Inst &call = b.insts[ci];
    Chain c;
    std::map<int, size_t> constantAt;
    for (size_t k = 0; k < b.insts.size(); ++k)
      if (isConstant(b.insts[k]))
        constantAt[b.insts[k].results[0]] = k;
    int cur = call.results[j];
    if (f.type(cur).isHost())
      return c;
    size_t from = ci + 1;
    while (uses[cur] == 1) {
      size_t k = from;
      while (k < b.insts.size() && std::find(b.insts[k].operands.begin(), b.insts[k].operands.end(),
                                             cur) == b.insts[k].operands.end())
        ++k;
      if (k == b.insts.size() || !isMovable(b.insts[k]))
        break; // read by a region, a terminator or another op
      const Inst &u = b.insts[k];
      // An all_reduce moves only straight after the result and only where
      // ReduceEarly then reduces a smaller operand: elsewhere it would only
      // allocate its result while the callee's temporaries are alive.
      if (u.op == Op::AllReduce && !(cur == call.results[j] && returnReducesEarly(call, j, u)))
        break;
      std::vector<size_t> consts;
      bool ok = true;
      for (int o : u.operands) {
        if (o == cur ||
            std::find(call.operands.begin(), call.operands.end(), o) != call.operands.end())
          continue;
        auto at = constantAt.find(o);
        if (at == constantAt.end()) {
          ok = false;
          break;
        }
        consts.push_back(at->second);
      }
      if (!ok)
        break;
      c.ops.push_back(k);
      c.constants.insert(c.constants.end(), consts.begin(), consts.end());
      cur = u.results[0];
      from = k + 1;
    }
    c.last = cur;
    return c;
  }

  bool returnReducesEarly(const Inst &call, size_t j, const Inst &allReduce) {
    Function *g = m_.find(call.attrs.str);
    const Inst *ret = returnOf(*g);
    return ret && j < ret->operands.size() &&
           reducesEarly(*g, ret->operands[j], allReduce.attrs.ints);
  }

  /// The callee to change for this call: g itself, or a copy of it.
  Function &target(Inst &call) {
    Function *g = m_.find(call.attrs.str);
    if (sites_[g->name] == 1 && g->name != entry_)
      return *g;
    Function copy = *g;
    std::string name;
    for (int n = 0; m_.find(name = g->name + ".sink" + std::to_string(n)); ++n) {
    }
    copy.name = name;
    --sites_[g->name];
    sites_[name] = 1;
    m_.functions.push_back(std::move(copy));
    call.attrs.str = name;
    forEachBlock(m_.functions.back().body, [&](Block &b) {
      for (Inst &in : b.insts)
        if (in.op == Op::Call)
          ++sites_[in.attrs.str];
    });
    return m_.functions.back();
  }

  void sink(Function &f, Block &b, size_t ci, size_t j, const Chain &c) {
    Function &g = target(b.insts[ci]);
    const Inst &call = b.insts[ci];
    const Inst *ret = returnOf(g);
    if (!ret || j >= ret->operands.size())
      return;
    std::map<int, int> map; // caller value -> callee value
    map[call.results[j]] = ret->operands[j];
    for (size_t p = 0; p < call.operands.size() && p < g.params.size(); ++p)
      map.emplace(call.operands[p], g.params[p]);
    std::vector<Inst> added;
    auto copyOf = [&](const Inst &in) {
      Inst n = in;
      for (int &o : n.operands)
        o = map.at(o);
      TensorType t = f.type(in.results[0]);
      n.results = {g.newValue(t, f.values[in.results[0]].name)};
      map[in.results[0]] = n.results[0];
      added.push_back(std::move(n));
    };
    for (size_t k : c.constants)
      if (!map.count(b.insts[k].results[0]))
        copyOf(b.insts[k]);
    for (size_t k : c.ops)
      copyOf(b.insts[k]);
    // The ops go right after the returned value's definition (the start of
    // the body for a parameter): next to the ops that make it, so fusion
    // joins them into that kernel even when the callee reads other values
    // of the kernel (an `index_add` of a sibling output) before it returns.
    const int rv = ret->operands[j];
    size_t at = 0;
    for (size_t k = 0; k < g.body.insts.size(); ++k)
      if (std::find(g.body.insts[k].results.begin(), g.body.insts[k].results.end(), rv) !=
          g.body.insts[k].results.end())
        at = k + 1;
    g.body.insts.insert(g.body.insts.begin() + (long)at, added.begin(), added.end());
    returnOf(g)->operands[j] = map.at(c.last); // `ret` moved with the insert
    g.results[j] = f.type(c.last);
    // The caller: the call's result is the chain's value now.
    const int result = b.insts[ci].results[j];
    f.values[result].type = f.type(c.last);
    std::set<size_t> gone(c.ops.begin(), c.ops.end());
    std::vector<Inst> kept;
    kept.reserve(b.insts.size());
    for (size_t k = 0; k < b.insts.size(); ++k)
      if (!gone.count(k))
        kept.push_back(std::move(b.insts[k]));
    b.insts = std::move(kept);
    rename(f.body, c.last, result);
  }

  /// Drops the constants of `f` that nothing reads any more (the moved ops'
  /// constants, copied into the callee).
  static void dropDeadConstants(Function &f) {
    std::map<int, int> uses = useCounts(f.body);
    forEachBlock(f.body, [&](Block &b) {
      b.insts.erase(std::remove_if(b.insts.begin(), b.insts.end(),
                                   [&](const Inst &in) {
                                     return isConstant(in) && uses[in.results[0]] == 0 &&
                                            f.type(in.results[0]).rank() == 0;
                                   }),
                    b.insts.end());
    });
  }

  Module &m_;
  std::string entry_;
  std::map<std::string, int> sites_;
};

} // namespace

int sinkIntoCalls(Module &m, const std::string &entry) { return Sinker(m, entry).run(); }

} // namespace dt
