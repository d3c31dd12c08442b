// This file implements sinking consumer chains into callees (SinkIntoCalls.h).
#include "passes/SinkIntoCalls.h"

#include "passes/FusionRules.h"
#include "passes/ReduceEarly.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
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

/// Every operand `from` of `b` (nested blocks too) read as renames[from].
void renameAll(Block &b, const std::unordered_map<int, int> &renames) {
  if (renames.empty())
    return;
  forEachBlock(b, [&](Block &blk) {
    for (Inst &in : blk.insts)
      for (int &o : in.operands)
        if (auto it = renames.find(o); it != renames.end())
          o = it->second;
  });
}

/// The chain of one call result: the ops that move, in order, and the
/// constants they read (copied into the callee; the caller keeps its own).
struct Chain {
  std::vector<size_t> ops; ///< indices in the caller's block
  std::vector<size_t> constants;
  int last = -1; ///< the value the callee returns instead
};

/// The bookkeeping is linear in the program: use counts once per function,
/// updated as ops move; per block the constants and each value's first
/// reader once, moved ops left in place as tombstones and dropped after the
/// block; a moved chain's value renamed to the call's result once per
/// function; callees found by name in a table.
class Sinker {
public:
  Sinker(Module &m, const std::string &entry) : m_(m), entry_(entry) {
    for (Function &f : m_.functions) {
      byName_.emplace(f.name, &f);
      forEachBlock(f.body, [&](Block &b) {
        for (Inst &in : b.insts)
          if (in.op == Op::Call)
            ++sites_[in.attrs.str];
      });
    }
  }

  int run() {
    int moved = 0;
    // A deque: appending copies of callees keeps references valid, and the
    // copies are visited too (their own calls may sink further).
    for (size_t i = 0; i < m_.functions.size(); ++i) {
      Function &f = m_.functions[i];
      int n = 0;
      std::map<int, int> uses = useCounts(f.body);
      renames_.clear();
      forEachBlock(f.body, [&](Block &b) { n += block(f, b, uses); });
      renameAll(f.body, renames_);
      flush();
      if (n)
        dropDeadConstants(f);
      moved += n;
    }
    return moved;
  }

private:
  /// One block's tables (see the class comment).
  struct BlockState {
    std::unordered_map<int, size_t> constantAt;  ///< constant value -> its index
    std::unordered_map<int, size_t> firstReader; ///< value -> first inst reading it
    std::vector<char> moved;                     ///< per inst: moved into a callee
  };

  Function *find(const std::string &name) {
    auto it = byName_.find(name);
    return it == byName_.end() ? nullptr : it->second;
  }

  int block(Function &f, Block &b, std::map<int, int> &uses) {
    int moved = 0;
    BlockState st;
    st.moved.assign(b.insts.size(), 0);
    for (size_t k = 0; k < b.insts.size(); ++k) {
      if (isConstant(b.insts[k]))
        st.constantAt[b.insts[k].results[0]] = k;
      for (int o : b.insts[k].operands)
        st.firstReader.emplace(o, k);
    }
    for (size_t ci = 0; ci < b.insts.size(); ++ci) {
      if (b.insts[ci].op != Op::Call || st.moved[ci])
        continue;
      Function *g = find(b.insts[ci].attrs.str);
      if (!g || g == &f)
        continue;
      for (size_t j = 0; j < b.insts[ci].results.size(); ++j) {
        Chain c = chainOf(f, b, ci, j, uses, st);
        if (c.ops.empty())
          continue;
        moved += (int)c.ops.size();
        sink(f, b, ci, j, c, uses, st);
      }
    }
    if (moved) {
      std::vector<Inst> kept;
      kept.reserve(b.insts.size());
      for (size_t k = 0; k < b.insts.size(); ++k)
        if (!st.moved[k])
          kept.push_back(std::move(b.insts[k]));
      b.insts = std::move(kept);
    }
    return moved;
  }

  /// The elementwise ops after b.insts[ci] that only result j feeds, each
  /// reading the previous one's value once and otherwise only the call's
  /// arguments and constants of this block.
  Chain chainOf(const Function &f, const Block &b, size_t ci, size_t j, std::map<int, int> &uses,
                const BlockState &st) {
    const Inst &call = b.insts[ci];
    Chain c;
    const auto &constantAt = st.constantAt;
    int cur = call.results[j];
    if (f.type(cur).isHost())
      return c;
    while (uses[cur] == 1) {
      // Its one reader: the first inst of this block that reads it (none: a
      // region reads it). A value is read only after its definition, and a
      // moved inst no longer reads anything here.
      auto r = st.firstReader.find(cur);
      size_t k = r == st.firstReader.end() ? b.insts.size() : r->second;
      if (k == b.insts.size() || st.moved[k] || !isMovable(b.insts[k]))
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
    }
    c.last = cur;
    return c;
  }

  bool returnReducesEarly(const Inst &call, size_t j, const Inst &allReduce) {
    Function *g = find(call.attrs.str);
    auto ed = edits_.find(g);
    const Inst *ret = ed != edits_.end() ? ed->second.ret : returnOf(*g);
    if (!ret || j >= ret->operands.size())
      return false;
    auto uses = usesOf_.find(g);
    if (uses == usesOf_.end())
      uses = usesOf_.emplace(g, useCounts(g->body)).first;
    return reducesEarly(*g, ret->operands[j], allReduce.attrs.ints, uses->second);
  }

  /// The callee to change for this call: g itself, or a copy of it.
  Function &target(Inst &call) {
    Function *g = find(call.attrs.str);
    if (sites_[g->name] == 1 && g->name != entry_)
      return *g;
    if (edits_.count(g))
      flush(); // the copy gets the ops already sunk into g
    Function copy = *g;
    std::string name;
    for (int &n = nextCopy_[g->name]; find(name = g->name + ".sink" + std::to_string(n)); ++n) {
    }
    copy.name = name;
    --sites_[g->name];
    sites_[name] = 1;
    m_.functions.push_back(std::move(copy));
    byName_.emplace(name, &m_.functions.back());
    call.attrs.str = name;
    forEachBlock(m_.functions.back().body, [&](Block &b) {
      for (Inst &in : b.insts)
        if (in.op == Op::Call)
          ++sites_[in.attrs.str];
    });
    return m_.functions.back();
  }

  void sink(Function &f, Block &b, size_t ci, size_t j, const Chain &c, std::map<int, int> &uses,
            BlockState &st) {
    Function &g = target(b.insts[ci]);
    const Inst &call = b.insts[ci];
    Edits &ed = editsOf(g);
    Inst *ret = ed.ret;
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
    // Inserted when the caller is done (flush), so that many results sunk
    // into one callee shift its body once.
    auto def = ed.defAt.find(ret->operands[j]);
    ed.inserts.push_back({def == ed.defAt.end() ? 0 : def->second + 1, std::move(added)});
    if (auto u = usesOf_.find(&g); u != usesOf_.end()) { // the return reads another value
      --u->second[ret->operands[j]];
      ++u->second[map.at(c.last)];
    }
    ret->operands[j] = map.at(c.last);
    g.results[j] = f.type(c.last);
    // The caller: the call's result is the chain's value now. The moved ops
    // stay as tombstones until the block is done (indices stay put) and no
    // longer count as readers; c.last's readers read the result once the
    // function is done (renames_), the tables meanwhile keep c.last's id.
    const int result = b.insts[ci].results[j];
    f.values[result].type = f.type(c.last);
    for (size_t k : c.ops) {
      st.moved[k] = 1;
      for (int o : b.insts[k].operands)
        --uses[o];
      b.insts[k].operands.clear();
    }
    renames_[c.last] = result;
  }

  /// The ops sunk into one callee, waiting to be inserted into its body
  /// (whose instructions do not move meanwhile).
  struct Edits {
    Inst *ret = nullptr;                   ///< the body's `return`
    std::unordered_map<int, size_t> defAt; ///< value -> index of its defining inst
    std::vector<std::pair<size_t, std::vector<Inst>>> inserts; ///< (before index, ops)
  };

  Edits &editsOf(Function &g) {
    auto [it, added] = edits_.try_emplace(&g);
    if (added) {
      for (size_t k = 0; k < g.body.insts.size(); ++k)
        for (int r : g.body.insts[k].results)
          it->second.defAt[r] = k;
      it->second.ret = returnOf(g);
    }
    return it->second;
  }

  /// Inserts every pending op into its callee: each body rebuilt once.
  void flush() {
    for (auto &[g, ed] : edits_) {
      std::stable_sort(ed.inserts.begin(), ed.inserts.end(),
                       [](const auto &a, const auto &b) { return a.first < b.first; });
      std::vector<Inst> body;
      size_t next = 0;
      for (size_t k = 0; k <= g->body.insts.size(); ++k) {
        // The later insert of one position first, as one insert at a time did.
        size_t end = next;
        while (end < ed.inserts.size() && ed.inserts[end].first == k)
          ++end;
        for (size_t e = end; e-- > next;)
          for (Inst &in : ed.inserts[e].second)
            body.push_back(std::move(in));
        next = end;
        if (k < g->body.insts.size())
          body.push_back(std::move(g->body.insts[k]));
      }
      g->body.insts = std::move(body);
    }
    edits_.clear();
    usesOf_.clear();
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
  std::unordered_map<std::string, Function *> byName_;
  std::unordered_map<std::string, int> nextCopy_; ///< next `.sinkN` to try per callee
  std::unordered_map<int, int> renames_;          ///< this function's moved values -> results
  std::unordered_map<Function *, Edits> edits_;   ///< callees with ops to insert
  /// useCounts of callees' bodies, for returnReducesEarly (its body changes
  /// only at flush; a sink that changes a return updates its counts).
  std::unordered_map<const Function *, std::map<int, int>> usesOf_;
};

} // namespace

int sinkIntoCalls(Module &m, const std::string &entry) { return Sinker(m, entry).run(); }

} // namespace dt
