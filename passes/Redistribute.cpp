// This file implements the redistribution planner (see Redistribute.h): a
// Dijkstra search over layouts whose edges are the collective steps that
// ir/Collectives.h accepts.
#include "passes/Redistribute.h"

#include "ir/Collectives.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

namespace dt {

namespace {

std::string key(const std::vector<Placement> &ps) {
  std::string k;
  for (auto &p : ps)
    k += p.str() + (p.isShard() ? "#" + std::to_string(p.order) : "") + ";";
  return k;
}

/// The placements after a step that made `axes` shard dim `d`, in each order
/// the group of `d` can take: mesh order, the old members first with the new
/// ones after them, and the target's order when every member is in the
/// target's group. Tiling (checkCollective) decides which of them are steps.
std::vector<std::vector<Placement>> orderVariants(const std::vector<Placement> &ps,
                                                  const std::vector<int64_t> &axes, int d,
                                                  const std::vector<Placement> &target,
                                                  bool ordered) {
  std::vector<std::vector<Placement>> out;
  auto push = [&](std::vector<Placement> v) {
    canonicalizeShardOrder(v);
    if (std::find(out.begin(), out.end(), v) == out.end())
      out.push_back(std::move(v));
  };
  auto isNew = [&](size_t a) {
    return std::find(axes.begin(), axes.end(), (int64_t)a) != axes.end();
  };
  std::vector<Placement> mesh = ps, append = ps, tgt = ps;
  bool inTarget = true;
  for (size_t a = 0; a < ps.size(); ++a) {
    if (!ps[a].isShard() || ps[a].dim != d)
      continue;
    mesh[a].order = (int)a;
    append[a].order = isNew(a) ? 1000 + (int)a : ps[a].order;
    inTarget &= target[a].isShard() && target[a].dim == d;
    tgt[a].order = target[a].order;
  }
  push(mesh);
  // Other orders only when the move involves one: a mesh-order transition
  // keeps the plans (and costs) it always had.
  if (ordered) {
    push(append);
    if (inTarget)
      push(tgt);
  }
  return out;
}

/// Search cost: bytes, then communicating steps, then steps.
using Cost = std::tuple<int64_t, int, int>;

struct Node {
  Cost cost;
  std::vector<Placement> placements;
  int prev = -1; ///< index into the settled-node table
  RedistStep step{Op::AllGather, {}, {}, 0};
};

bool communicates(Op op) { return op != Op::LocalSlice && op != Op::LocalPartial; }

/// Axes a plan never touches: those whose placement is already the target's,
/// and, for a shard, whose dim keeps the same set of sharding axes. Only the
/// steps the transition needs are ordered, so a plan never adds a detour such
/// as slicing a replicated axis to all-reduce less data and gathering again.
int settledAxes(const TensorType &from, const TensorType &to) {
  int mask = 0;
  for (size_t a = 0; a < from.placements.size(); ++a) {
    const Placement &p = from.placements[a];
    if (p != to.placements[a])
      continue;
    if (p.isShard() && from.axesShardingDim(p.dim) != to.axesShardingDim(p.dim))
      continue;
    mask |= 1 << a;
  }
  return mask;
}

/// The candidate steps out of `t` (before validation): every subset of
/// unsettled axes with one common placement, to every placement that a step
/// can produce.
std::vector<RedistStep> candidates(const TensorType &t, const std::vector<ReduceOp> &targetOps,
                                   int settled, const std::vector<Placement> &target,
                                   bool ordered) {
  std::vector<RedistStep> out;
  int n = (int)t.placements.size();
  for (int mask = 1; mask < (1 << n); ++mask) {
    if (mask & settled)
      continue;
    std::vector<int64_t> axes;
    for (int a = 0; a < n; ++a)
      if (mask & (1 << a))
        axes.push_back(a);
    const Placement &p = t.placements[axes[0]];
    bool same = true;
    for (auto a : axes)
      same &= t.placements[a].sameKind(p);
    if (!same)
      continue;
    auto add = [&](Op op, Placement q) {
      std::vector<Placement> ps = t.placements;
      for (auto a : axes)
        ps[a] = q;
      std::vector<std::vector<Placement>> variants{ps};
      if (q.isShard())
        variants = orderVariants(ps, axes, q.dim, target, ordered);
      else
        canonicalizeShardOrder(variants[0]);
      for (auto &v : variants) {
        if (v == t.placements)
          continue;
        RedistStep s{op, axes, t, 0};
        s.to.placements = v;
        out.push_back(std::move(s));
      }
    };
    if (p.isPartial()) {
      add(Op::AllReduce, Placement::replicate());
      for (int d = 0; d < t.rank(); ++d)
        add(Op::ReduceScatter, Placement::shard(d));
    } else if (p.isShard()) {
      add(Op::AllGather, Placement::replicate());
      // to another dim, or (the same dim) a reorder of a multi-axis group
      for (int d = 0; d < t.rank(); ++d)
        add(Op::AllToAll, Placement::shard(d));
    } else {
      for (int d = 0; d < t.rank(); ++d)
        add(Op::LocalSlice, Placement::shard(d));
      for (auto op : targetOps)
        add(Op::LocalPartial, Placement::partial(op));
    }
  }
  return out;
}

} // namespace

RedistPlan planRedistribution(const TensorType &fromIn, const TensorType &toIn,
                              const Topology &topo) {
  // The search compares placements by their canonical group numbering.
  TensorType from = fromIn, to = toIn;
  canonicalizeShardOrder(from.placements);
  canonicalizeShardOrder(to.placements);
  if (from.isHost() || to.isHost() || !(*from.mesh == *to.mesh) || from.dtype != to.dtype ||
      from.shape != to.shape)
    throw InternalError("redistribution planner: cannot move `" + from.str() + "` to `" + to.str() +
                        "`");
  if (!isConcrete(from.shape))
    throw InternalError("redistribution planner: `" + from.str() + "` has a symbolic shape");
  RedistPlan plan;
  if (from.placements == to.placements)
    return plan;
  std::vector<ReduceOp> targetOps;
  for (auto &p : to.placements)
    if (p.isPartial() && std::find(targetOps.begin(), targetOps.end(), p.op) == targetOps.end())
      targetOps.push_back(p.op);

  const int settledMask = settledAxes(from, to);
  bool ordered = false;
  for (int d = 0; d < from.rank(); ++d)
    ordered |= !from.meshOrdered(d) || !to.meshOrdered(d);
  const std::string goal = key(to.placements);
  std::vector<Node> settled;
  std::map<std::string, Cost> best;
  // Queue entries: (cost, sequence number, node); the sequence number keeps
  // the order among equal costs deterministic (first generated first).
  using Entry = std::tuple<Cost, int64_t, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  std::vector<Node> pending;
  int64_t seq = 0;
  pending.push_back(Node{{0, 0, 0}, from.placements, -1, {}});
  queue.push({pending[0].cost, seq++, 0});
  best[key(from.placements)] = pending[0].cost;
  std::map<std::string, bool> done;
  while (!queue.empty()) {
    auto [cost, s, idx] = queue.top();
    queue.pop();
    (void)s;
    Node node = pending[idx];
    std::string k = key(node.placements);
    if (done[k])
      continue;
    done[k] = true;
    settled.push_back(node);
    int here = (int)settled.size() - 1;
    if (k == goal) {
      for (int i = here; settled[i].prev >= 0; i = settled[i].prev)
        plan.steps.insert(plan.steps.begin(), settled[i].step);
      for (auto &st : plan.steps)
        plan.bytes += st.bytes;
      return plan;
    }
    TensorType cur = from;
    cur.placements = node.placements;
    for (auto &step : candidates(cur, targetOps, settledMask, to.placements, ordered)) {
      std::string nk = key(step.to.placements);
      if (done[nk])
        continue;
      if (!checkCollective(step.op, cur, step.to, step.axes).empty())
        continue;
      step.bytes = collectiveBytes(step.op, cur, step.to, step.axes);
      step.crossNode = communicates(step.op) && topo.crosses(*from.mesh, step.axes);
      int64_t weighted = step.crossNode ? step.bytes * topo.crossNodeCost : step.bytes;
      Cost c{std::get<0>(cost) + weighted, std::get<1>(cost) + (communicates(step.op) ? 1 : 0),
             std::get<2>(cost) + 1};
      auto it = best.find(nk);
      if (it != best.end() && !(c < it->second))
        continue;
      best[nk] = c;
      pending.push_back(Node{c, step.to.placements, here, step});
      queue.push({c, seq++, (int)pending.size() - 1});
    }
  }
  throw InternalError("redistribution planner: no plan from `" + from.str() + "` to `" + to.str() +
                      "`");
}

std::string describeStep(const TensorType &from, const RedistStep &step) {
  return std::string(opName(step.op)) + " over " + axesName(*from.mesh, step.axes) + ": " +
         from.layoutStr() + " -> " + step.to.layoutStr() + ", " + std::to_string(step.bytes) + " B";
}

} // namespace dt
