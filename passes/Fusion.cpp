// This file implements the fusion pass (see Fusion.h): per block, groups are
// grown bottom-up from a root by absorbing producers whose every use is in the
// group, then outlined into `@fused.N` kernel functions.
#include "passes/Fusion.h"
#include "passes/FusionRules.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

namespace dt {

bool isFusedKernelName(const std::string &name) {
  // `fused.` and digits: a program's own names are identifiers after each
  // dot (a module `fused` with `fn k` is `fused.k`), never a number.
  const size_t n = std::string(kFusedPrefix).size();
  return name.size() > n && name.rfind(kFusedPrefix, 0) == 0 &&
         name.find_first_not_of("0123456789", n) == std::string::npos;
}

bool isFusedKernel(const Function &f) { return isFusedKernelName(f.name); }

namespace {

using namespace fusion;

/// Elements from which a lone `random` or `fill` becomes a kernel on the
/// cpu (below, the reference loop is quicker than a compile).
constexpr int64_t kLoneSourceElements = 1 << 18;

class BlockFuser {
public:
  BlockFuser(Module &m, Function &f, int &counter, FusionOptions opts)
      : m_(m), f_(f), counter_(counter), maxOps_(opts.maxOps), loneSources_(opts.loneSources) {}

  int made = 0;

  void run(Block &b) {
    for (auto &in : b.insts)
      for (auto &r : in.regions)
        run(r);
    splitSharedSplats(b);
    splitSharedGathers(b);
    size_t n = b.insts.size();
    defIdx_.clear();
    users_.clear();
    for (size_t i = 0; i < n; ++i) {
      for (int r : b.insts[i].results)
        defIdx_[r] = (int)i;
      noteUses(b.insts[i], (int)i);
    }
    group_.assign(n, -1);
    std::vector<std::vector<int>> groups;
    for (int i = (int)n - 1; i >= 0; --i) {
      const Inst &root = b.insts[i];
      if (group_[i] >= 0 || root.results.size() != 1)
        continue;
      bool reduce = fusableReduce(root, f_);
      if (!reduce && !isPointwise(root.op) && !fusableSource(root, f_))
        continue;
      TensorType it = f_.type(reduce ? root.operands[0] : root.results[0]);
      if (!isConcrete(it.shape))
        continue;
      bool ok = true;
      for (int o : root.operands)
        ok = ok && fits(f_.type(o), it);
      if (!ok)
        continue;
      int g = (int)groups.size();
      groups.push_back({i});
      group_[i] = g;
      rootIdx_ = i;
      multiOut_ = !reduce && isPointwise(root.op);
      extraOutputs_ = 0;
      gathers_ = true;
      grow(b, groups.back(), g, it);
      if (!gathersValid(b, groups.back())) { // grow again without them
        for (int m : groups.back())
          if (m != i)
            group_[m] = -1;
        groups.back() = {i};
        extraOutputs_ = 0;
        gathers_ = false;
        grow(b, groups.back(), g, it);
      }
      // On the cpu a small lone fill or random gains nothing from a kernel
      // and would cost a compile; a large one runs split across the rank's
      // threads into a pooled buffer, without the reference loop's
      // per-element overhead or a fresh allocation's page faults (randn of
      // 4M elements: 292 ms as a reference source, 64-100 ms as a kernel on
      // 2 threads; the fill of a 16M-element concat: 38 -> 3 ms).
      // A lone iota is a kernel everywhere (its index loop is kernel IR's,
      // and nothing else generates it on a device).
      bool bigSource = (root.op == Op::Random || root.op == Op::Fill) &&
                       numElements(f_.type(root.results[0]).shape) >= kLoneSourceElements;
      if (!loneSources_ && groups.back().size() == 1 && opInfo(root.op).cls == OpClass::Source &&
          root.op != Op::Iota && !bigSource) {
        group_[i] = -1;
        groups.pop_back();
      }
    }
    if (groups.empty()) {
      mergeUnfusedGathers(b);
      return;
    }
    std::vector<int> rootOf(n, -1);
    for (auto &members : groups)
      rootOf[members.front()] = 1;
    std::vector<Inst> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (group_[i] < 0)
        out.push_back(std::move(b.insts[i]));
      else if (rootOf[i] > 0)
        out.push_back(outline(b, groups[group_[i]]));
    }
    b.insts = std::move(out);
    mergeUnfusedGathers(b);
  }

private:
  static bool isSplat(const Inst &in, const Function &f) {
    return (in.op == Op::Const || in.op == Op::Fill) && fusableSource(in, f);
  }

  /// A splat constant (fill, one-value const) used by several ops feeds
  /// none of its pointwise users' groups (a member's every use is in its
  /// group): each pointwise user gets its own copy (copyPerUser), which the
  /// user's group absorbs as a constant; the original stays for the other
  /// users and goes when none is left.
  void splitSharedSplats(Block &b) {
    std::unordered_map<int, Inst> splatDef; // value -> its defining splat
    for (size_t i = 0; i < b.insts.size(); ++i) {
      if (b.insts[i].results.size() == 1 && isSplat(b.insts[i], f_))
        splatDef[b.insts[i].results[0]] = b.insts[i];
      noteUses(b.insts[i], (int)i);
    }
    std::erase_if(splatDef, [&](const auto &d) { return users_[d.first].size() < 2; });
    users_.clear();
    copyPerUser(b, splatDef);
  }

  /// An `index_select` read by several pointwise ops or reductions feeds
  /// none of their groups (a member's every use is in its group): each such
  /// user gets its own copy (copyPerUser), which the user's group reads
  /// through a `gather` node (re-reading a few source rows instead of
  /// writing the gathered tensor once and reading it in every kernel). The
  /// original stays for the other users; copies that no group takes are
  /// merged back afterwards (mergeUnfusedGathers).
  void splitSharedGathers(Block &b) {
    std::unordered_map<int, Inst> gatherDef;
    for (size_t i = 0; i < b.insts.size(); ++i) {
      const Inst &in = b.insts[i];
      if (in.op == Op::IndexSelect && in.results.size() == 1 && in.regions.empty())
        gatherDef[in.results[0]] = in;
      noteUses(in, (int)i);
    }
    std::erase_if(gatherDef, [&](const auto &d) {
      std::vector<int> us = users_[d.first];
      us.erase(std::unique(us.begin(), us.end()), us.end());
      return std::count_if(us.begin(), us.end(), [&](int u) { return copyTaker(b.insts[u]); }) < 2;
    });
    users_.clear();
    copyPerUser(b, gatherDef);
  }

  /// A pointwise op or fusable reduction: takes its own copy in copyPerUser.
  bool copyTaker(const Inst &in) const {
    return (isPointwise(in.op) || fusableReduce(in, f_)) && in.regions.empty() &&
           in.results.size() == 1;
  }

  /// Gives every copyTaker that reads a value of `defs` its own copy of the
  /// value's defining instruction, right before it, and drops the originals
  /// nothing reads any more.
  void copyPerUser(Block &b, const std::unordered_map<int, Inst> &defs) {
    if (defs.empty())
      return;
    Block out;
    out.insts.reserve(b.insts.size() + 2 * defs.size());
    for (Inst &in : b.insts) {
      if (copyTaker(in)) {
        std::unordered_map<int, int> mine; // one copy per value for this user
        for (int &o : in.operands) {
          auto d = defs.find(o);
          if (d == defs.end())
            continue;
          auto m = mine.find(o);
          if (m == mine.end()) {
            Inst c = d->second;
            c.results = {f_.newValue(f_.type(o))};
            m = mine.emplace(o, c.results[0]).first;
            out.insts.push_back(std::move(c));
          }
          o = m->second;
        }
      }
      out.insts.push_back(std::move(in));
    }
    std::map<int, int> uses = useCounts(out);
    std::erase_if(out.insts, [&](const Inst &in) {
      return in.results.size() == 1 && defs.count(in.results[0]) && !uses.count(in.results[0]);
    });
    b.insts = std::move(out.insts);
  }

  /// Equal `index_select`s (same operands and dim) left outside every
  /// kernel are one: the later ones' uses read the first (which precedes
  /// them in the block).
  void mergeUnfusedGathers(Block &b) {
    std::map<std::pair<std::vector<int>, std::vector<int64_t>>, int> first;
    std::unordered_map<int, int> rename;
    std::function<void(Inst &)> apply = [&](Inst &in) {
      for (int &o : in.operands)
        if (auto r = rename.find(o); r != rename.end())
          o = r->second;
      for (Block &r : in.regions)
        for (Inst &sub : r.insts)
          apply(sub);
    };
    std::vector<Inst> out;
    out.reserve(b.insts.size());
    for (Inst &in : b.insts) {
      apply(in);
      if (in.op == Op::IndexSelect && in.results.size() == 1 && in.regions.empty()) {
        auto key = std::make_pair(in.operands, in.attrs.ints);
        auto [it, fresh] = first.emplace(key, in.results[0]);
        if (!fresh && f_.type(it->second) == f_.type(in.results[0])) {
          rename[in.results[0]] = it->second;
          continue;
        }
      }
      out.push_back(std::move(in));
    }
    b.insts = std::move(out);
  }

  /// A gather's source and ids are read only through gathers (a source is
  /// not loaded at the point's own index, ids run along the gathered dim):
  /// both stay outside the group and no other member reads them.
  bool gathersValid(const Block &b, const std::vector<int> &members) const {
    std::unordered_map<int, std::pair<int, int64_t>> role; // value -> (operand, dim)
    for (int m : members) {
      const Inst &in = b.insts[m];
      if (in.op != Op::IndexSelect)
        continue;
      for (int k = 0; k < 2; ++k) {
        auto [it, fresh] = role.emplace(in.operands[k], std::make_pair(k, in.attrs.ints[0]));
        if (!fresh && it->second != std::make_pair(k, in.attrs.ints[0]))
          return false;
      }
    }
    if (role.empty())
      return true;
    for (int m : members) {
      const Inst &in = b.insts[m];
      for (int r : in.results)
        if (role.count(r))
          return false; // computed in the group
      if (in.op == Op::IndexSelect)
        continue;
      for (int o : in.operands)
        if (role.count(o))
          return false;
    }
    return true;
  }

  /// Records the uses of `in` (and of everything nested in its regions) as
  /// uses by instruction `i` of the current block.
  void noteUses(const Inst &in, int i) {
    for (int o : in.operands)
      users_[o].push_back(i);
    for (auto &r : in.regions)
      for (auto &sub : r.insts)
        noteUses(sub, i);
  }

  /// Absorbs producers until no more qualify (a diamond's shared producer
  /// qualifies only once both of its users are members). Sources do not count
  /// towards maxOps (they are constants and index arithmetic, no loads),
  /// but for `random` (kRandomOpWeight).
  void grow(const Block &b, std::vector<int> &members, int g, const TensorType &it) {
    auto isSource = [&](int i) { return opInfo(b.insts[i].op).cls == OpClass::Source; };
    auto weight = [&](int i) {
      return b.insts[i].op == Op::Random ? kRandomOpWeight : isSource(i) ? 0 : 1;
    };
    int ops = 0;
    for (int i : members)
      ops += weight(i);
    // Once a producer would pass maxOps the kernel is full: the chain above
    // it starts another kernel, with its own random sources (a kernel that
    // went on through cheaper ops would leave those behind, each run alone).
    bool full = false;
    // A random source that only members read still joins a full kernel
    // (alone, it would run by itself).
    auto onlyMembersRead = [&](int i) {
      for (int u : users_[b.insts[i].results[0]])
        if (group_[u] != g)
          return false;
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t k = 0; k < members.size(); ++k) {
        for (int o : std::vector<int>(b.insts[members[k]].operands)) {
          auto d = defIdx_.find(o);
          if (d == defIdx_.end() || group_[d->second] >= 0)
            continue;
          const int w = weight(d->second);
          std::vector<int> siblings;
          if (w && (full || ops + w > maxOps_)) {
            full = true;
            if (!(b.insts[d->second].op == Op::Random && onlyMembersRead(d->second)))
              continue;
          }
          if (!absorbable(b, b.insts[d->second], g, it, siblings))
            continue;
          group_[d->second] = g;
          members.push_back(d->second);
          ops += w;
          for (int u : siblings) {
            group_[u] = g;
            members.push_back(u);
            ++ops;
          }
          changed = true;
        }
      }
    }
  }

  /// Whether pointwise `u`, an earlier user of a value the group absorbs,
  /// can join the group as one more output (sibling fusion: `up * tokens`
  /// and `up * scale` read `up` in one kernel instead of two): it can run at
  /// the root's place because nothing between uses its value, and it writes
  /// the group's iteration space.
  bool siblingJoins(const Block &b, int u, int g, const TensorType &it) const {
    const Inst &in = b.insts[u];
    if (group_[u] >= 0 || !isPointwise(in.op) || in.results.size() != 1 || !in.regions.empty() ||
        !sameLayoutAndShape(f_.type(in.results[0]), it))
      return false;
    for (int o : in.operands)
      if (!fits(f_.type(o), it))
        return false;
    auto us = users_.find(in.results[0]);
    if (us == users_.end() || us->second.empty())
      return false;
    for (int w : us->second)
      if (w <= rootIdx_ && group_[w] != g)
        return false;
    return true;
  }

  bool absorbable(const Block &b, const Inst &p, int g, const TensorType &it,
                  std::vector<int> &siblings) {
    if (p.results.size() != 1 || !p.regions.empty())
      return false;
    int v = p.results[0];
    const TensorType &t = f_.type(v);
    if (isPointwise(p.op)) {
      if (!fits(t, it))
        return false;
    } else if (gathers_ && fusableGather(p, f_, it)) {
      for (int o : p.operands) // its source and ids stay inputs
        if (auto d = defIdx_.find(o); d != defIdx_.end() && group_[d->second] == g)
          return false;
      for (int u : users_[v])
        if (group_[u] != g)
          return false; // not an extra output: it is re-gathered where needed
      return true;
    } else if (fusableSource(p, f_)) {
      bool global = p.op == Op::Random || p.op == Op::Iota;
      if (global ? !sameLayoutAndShape(t, it) : !fits(t, it))
        return false;
    } else {
      return false;
    }
    for (int o : p.operands)
      if (!fits(f_.type(o), it))
        return false;
    // A value a member gathers from, or whose ids it uses, stays outside.
    for (int u : users_[v])
      if (group_[u] == g && b.insts[u].op == Op::IndexSelect)
        return false;
    // A pointwise member whose value is also used after the root (by the
    // optimizer state's `return`, say) becomes one more output of the group:
    // one kernel writes the new parameter and both moments of an Adam step.
    // An earlier pointwise user joins as a sibling output when it can.
    bool outside = false;
    for (int u : users_[v])
      if (group_[u] != g) {
        if (!multiOut_ || !isPointwise(p.op))
          return false;
        if (u <= rootIdx_) {
          if (!siblingJoins(b, u, g, it))
            return false;
          if (std::find(siblings.begin(), siblings.end(), u) == siblings.end())
            siblings.push_back(u);
        } else {
          outside = true;
        }
      }
    int extra = (outside ? 1 : 0) + (int)siblings.size();
    if (extra) {
      if (extraOutputs_ + extra > kMaxExtraOutputs || (outside && !sameLayoutAndShape(t, it)))
        return false;
      extraOutputs_ += extra;
    }
    return true;
  }

  /// Moves the group's instructions into a new kernel function and returns
  /// the call that replaces them (at the root's position).
  Inst outline(Block &b, std::vector<int> members) {
    std::sort(members.begin(), members.end());
    const Inst &root = b.insts[members.back()];
    Function &k = m_.functions.emplace_back();
    k.name = std::string(kFusedPrefix) + std::to_string(counter_++);
    k.loc = root.loc;
    std::unordered_map<int, int> remap;
    std::vector<int> inputs;
    std::unordered_map<int, bool> internal;
    for (int i : members)
      for (int r : b.insts[i].results)
        internal[r] = true;
    for (int i : members)
      for (int o : b.insts[i].operands)
        if (!internal.count(o) && !remap.count(o)) {
          int p = k.newValue(f_.type(o), f_.values[o].name);
          remap[o] = p;
          k.params.push_back(p);
          inputs.push_back(o);
        }
    k.body.args = k.params;
    std::vector<const Inst *> splats; // copies of one splat (splitSharedSplats) are one
    for (int i : members) {
      Inst c = b.insts[i];
      if (isSplat(c, f_)) {
        const Inst *same = nullptr;
        for (const Inst *s : splats)
          if (s->op == c.op && s->attrs == c.attrs &&
              f_.type(s->results[0]) == f_.type(c.results[0]))
            same = s;
        if (same) {
          remap[c.results[0]] = remap.at(same->results[0]);
          continue;
        }
        splats.push_back(&b.insts[i]);
      }
      for (int &o : c.operands)
        o = remap.at(o);
      for (int &r : c.results) {
        int nr = k.newValue(f_.type(r), f_.values[r].name);
        remap[r] = nr;
        r = nr;
      }
      k.body.insts.push_back(std::move(c));
    }
    // Results: the root's, then every member's that is used outside.
    std::vector<int> results = {root.results.at(0)};
    int g = group_[members.back()];
    for (int i : members)
      if (i != members.back())
        for (int r : b.insts[i].results) {
          bool outside = false;
          for (int u : users_[r])
            outside = outside || group_[u] != g;
          if (outside)
            results.push_back(r);
        }
    Inst ret;
    ret.op = Op::Return;
    ret.loc = root.loc;
    for (int r : results) {
      ret.operands.push_back(remap.at(r));
      k.results.push_back(f_.type(r));
    }
    k.body.insts.push_back(std::move(ret));
    Inst call;
    call.op = Op::Call;
    call.operands = inputs;
    call.results = results;
    call.attrs.str = k.name;
    call.loc = root.loc;
    ++made;
    return call;
  }

  Module &m_;
  Function &f_;
  int &counter_;
  int maxOps_;
  bool loneSources_;
  std::unordered_map<int, int> defIdx_;
  std::unordered_map<int, std::vector<int>> users_;
  std::vector<int> group_;
  // The group being grown: its root, whether it may have several outputs
  // (an elementwise root), and how many it has beyond the root's.
  int rootIdx_ = -1;
  bool multiOut_ = false;
  int extraOutputs_ = 0;
  bool gathers_ = true; ///< index_select members allowed (gathersValid failed: no)
};

} // namespace

int fuseModule(Module &m, FusionOptions opts) {
  int counter = 0;
  for (auto &f : m.functions)
    if (isFusedKernel(f))
      ++counter;
  size_t n = m.functions.size(); // kernels appended below are not revisited
  int made = 0;
  for (size_t i = 0; i < n; ++i) {
    Function &f = m.functions[i]; // a deque: appending keeps this reference valid
    if (isFusedKernel(f))
      continue;
    BlockFuser bf(m, f, counter, opts);
    bf.run(f.body);
    made += bf.made;
  }
  return made;
}

} // namespace dt
