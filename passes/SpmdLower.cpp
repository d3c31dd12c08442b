// This file implements SPMD lowering (see SpmdLower.h).
#include "passes/SpmdLower.h"

#include "ir/DeterministicOrder.h"
#include "passes/Redistribute.h"
#include "passes/SliceGather.h"
#include "passes/WholeResults.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace dt {

namespace {

class Lowerer {
public:
  Lowerer(Function &f, const Topology &topo, bool deterministic)
      : f_(f), topo_(topo), deterministic_(deterministic) {}

  int run() {
    slices_.scan(f_.body);
    block(f_.body);
    return inserted_;
  }

private:
  /// What follows an op gatherReduced changed: `value` (the op's new
  /// result) moves to `result`'s type; with treeRanks > 0 it holds each
  /// rank's subtree node on mesh axis treeAxis (distributeContraction).
  struct After {
    int value, result;
    int treeAxis = -1;
    int64_t treeRanks = 0;
  };

  int renamed(int id) const {
    auto it = rename_.find(id);
    return it == rename_.end() ? id : it->second;
  }

  /// Emits the steps that move `src` to type `to` into `out`; the last step
  /// defines `result` (a fresh value when result < 0). Returns the value that
  /// holds the moved data (src itself when nothing moves).
  int emitMove(int src, const TensorType &to, int result, SrcLoc loc, std::vector<Inst> &out) {
    TensorType from = f_.type(src);
    RedistPlan plan = planRedistribution(from, to, topo_);
    int cur = src;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const RedistStep &st = plan.steps[i];
      bool last = i + 1 == plan.steps.size();
      int r = last && result >= 0 ? result : f_.newValue(st.to);
      Inst in;
      in.op = st.op;
      in.operands = {cur};
      in.results = {r};
      in.attrs.ints = st.axes;
      in.loc = loc;
      out.push_back(std::move(in));
      cur = r;
      ++inserted_;
    }
    return cur;
  }

  /// Whether `t` is partial(sum) or partial(avg) over more than one rank.
  static bool sumPartialOverRanks(const TensorType &t) {
    if (t.isHost())
      return false;
    int64_t ranks = 1;
    for (size_t a = 0; a < t.placements.size(); ++a)
      if (t.placements[a].isPartial() &&
          (t.placements[a].op == ReduceOp::Sum || t.placements[a].op == ReduceOp::Avg))
        ranks *= t.mesh->axes[a].size;
    return ranks > 1;
  }

  /// A product with a partial(sum) operand is computed per rank; that is
  /// exact for a finite factor (and a nonzero divisor) only (IR.h). Routes the
  /// other operand through `check_factor`, which stops the program instead of
  /// letting the ranks produce a different value than one device.
  void guardFactor(Inst &in, std::vector<Inst> &out) {
    if (in.operands.size() != 2)
      return;
    for (int p = 0; p < 2; ++p) {
      int q = 1 - p;
      if (!sumPartialOverRanks(f_.type(in.operands[p])) || (in.op == Op::Div && q != 1))
        continue;
      TensorType qt = f_.type(in.operands[q]); // a copy: newValue grows the table
      if (!isFloat(qt.dtype) || qt.hasPartial())
        continue; // integer factors are finite; two partials are a type error
      auto known = constFactor_.find(in.operands[q]);
      if (known != constFactor_.end() && (in.op == Op::Div ? known->second.nonzero : true) &&
          known->second.finite)
        return; // a constant already known to be a fine factor: nothing to check
      Inst c;
      c.op = Op::CheckFactor;
      c.operands = {in.operands[q]};
      c.results = {f_.newValue(qt)};
      c.attrs.str = in.op == Op::Div ? "nonzero" : "finite";
      c.loc = in.loc;
      in.operands[q] = c.results[0];
      out.push_back(std::move(c));
      return;
    }
  }

  /// Deterministic mode: an op whose result is partial on a mesh axis on
  /// which an operand is sharded reduces (or contracts) a dim sharded there,
  /// and each rank would hold a contribution that collectives then sum in
  /// whatever order. Instead the operands sharded on those axes are gathered,
  /// the op computes the whole reduction on every rank (the one-device
  /// kernel, hence the one-device order), and `local_partial` (emitted into
  /// `after` once the op is placed) keeps the value on coordinate 0 of the
  /// axes and zeros elsewhere: every partial value is then whole on one rank
  /// and the executor moves it without arithmetic (runtime/CollectiveSteps.h).
  void gatherReduced(Inst &in, std::vector<Inst> &out, std::vector<After> &after) {
    if (!deterministic_ || !in.regions.empty() || in.op == Op::Call || in.results.empty())
      return;
    std::vector<int64_t> axes;
    for (int r : in.results) {
      const TensorType &rt = f_.type(r);
      if (rt.isHost())
        continue;
      for (size_t a = 0; a < rt.placements.size(); ++a) {
        if (!rt.placements[a].isPartial())
          continue;
        for (int o : in.operands) {
          const TensorType &ot = f_.type(o);
          if (!ot.isHost() && ot.mesh == rt.mesh && ot.placements[a].isShard() &&
              std::find(axes.begin(), axes.end(), (int64_t)a) == axes.end())
            axes.push_back((int64_t)a);
        }
      }
    }
    if (axes.empty() || distributeContraction(in, axes, after) ||
        distributeSum(in, axes, out, after) || reshardReduction(in, axes, out, after))
      return;
    for (int &o : in.operands) {
      TensorType t = f_.type(o); // a copy: newValue grows the table
      if (t.isHost())
        continue;
      TensorType target = t;
      for (auto a : axes) // partial operands too (`index_add` into a partial value)
        if ((size_t)a < t.placements.size() && !t.placements[a].isReplicate())
          target.placements[a] = Placement::replicate();
      if (!(target == t))
        o = emitMove(o, target, -1, in.loc, out);
    }
    for (int &r : in.results) {
      TensorType t = f_.type(r);
      if (t.isHost())
        continue;
      TensorType whole = t;
      for (auto a : axes)
        if ((size_t)a < t.placements.size() && t.placements[a].isPartial())
          whole.placements[a] = Placement::replicate();
      if (whole == t)
        continue;
      int nv = f_.newValue(whole);
      after.push_back({nv, r});
      r = nv;
    }
  }

  /// Emits `cast v` to dtype `to` (the same layout) into `out`; returns it.
  int emitCast(int v, DType to, SrcLoc loc, std::vector<Inst> &out) {
    TensorType t = f_.type(v); // a copy: newValue grows the table
    t.dtype = to;
    Inst c;
    c.op = Op::Cast;
    c.operands = {v};
    c.results = {f_.newValue(t)};
    c.loc = loc;
    out.push_back(std::move(c));
    ++inserted_;
    return out.back().results[0];
  }

  /// The ranks holding leaves when a dim of extent k is sharded in chunks over
  /// `ranks` ranks and every chunk is a whole subtree of the fixed order
  /// (ir/DeterministicOrder.h: 2^j leaves of kDeterministicBlock, the last
  /// one shorter or empty): those ranks form a prefix. 0 when not so.
  static int64_t subtreeRanks(int64_t k, int64_t ranks) {
    const int64_t chunk = chunkRange(k, ranks, 0).second;
    const int64_t leaves = chunk / kDeterministicBlock;
    if (ranks < 2 || k == 0 || chunk % kDeterministicBlock || (leaves & (leaves - 1)))
      return 0;
    int64_t g = 0; // ranks holding leaves: a prefix, each at i * chunk
    for (int64_t i = 0; i < ranks; ++i) {
      auto [off, len] = chunkRange(k, ranks, i);
      if (len == 0)
        continue;
      if (off != i * chunk || g != i || (len != chunk && off + len != k))
        return 0;
      g = i + 1;
    }
    return g;
  }

  /// Deterministic mode, a float `reduce_sum` whose outermost reduced dim is
  /// sharded on one mesh axis in chunks that are whole subtrees of the kernel
  /// sums' leaf tree (ir/DeterministicOrder.h): each rank sums its shard in
  /// f64 (its subtree's node; an f32 or bf16 operand is cast up first, which
  /// the kernel fuses: the same f64 chain as the one-device sum's), `all_reduce`
  /// marked `tree G` combines the nodes in the tree's order and a cast rounds
  /// once to the result's dtype. The one-device bits, moving one node per
  /// output instead of the operand.
  bool distributeSum(Inst &in, const std::vector<int64_t> &axes, std::vector<Inst> &out,
                     std::vector<After> &after) {
    if (in.op != Op::ReduceSum || in.operands.size() != 1 || in.results.size() != 1 ||
        axes.size() != 1 || in.attrs.ints.empty())
      return false;
    const int x = (int)axes[0];
    TensorType t = f_.type(in.operands[0]), r = f_.type(in.results[0]);
    if (t.isHost() || r.isHost() || !isConcrete(t.shape) || !isFloat(t.dtype) ||
        !isFloat(r.dtype) || !t.placements[x].isShard() || !r.placements[x].isPartial() ||
        r.placements[x].op != ReduceOp::Sum)
      return false;
    const int d0 = (int)*std::min_element(in.attrs.ints.begin(), in.attrs.ints.end());
    if (t.placements[x].dim != d0 || t.axesShardingDim(d0) != std::vector<int>{x})
      return false;
    const int64_t g = subtreeRanks(concreteDims(t.shape)[d0], t.mesh->axes[x].size);
    if (g == 0)
      return false;
    if (t.dtype != DType::F64)
      in.operands[0] = emitCast(in.operands[0], DType::F64, in.loc, out);
    TensorType nodeType = r;
    nodeType.dtype = DType::F64;
    int node = f_.newValue(nodeType);
    after.push_back({node, in.results[0], x, g});
    in.results[0] = node;
    return true;
  }

  /// Deterministic mode, the distributed case of gatherReduced: a 2-D f32 or
  /// f64 matmul contracting k sharded on one mesh axis, where every rank's
  /// shard of k is a whole subtree of the fixed contraction order
  /// (ir/DeterministicOrder.h: shards of 2^j leaves of kDeterministicBlock,
  /// the last one shorter or empty), runs on the shards: each rank's product
  /// is its subtree's node, and `all_reduce` marked `tree G` combines the
  /// first G ranks' nodes in the tree's order (runtime/CollectiveSteps.h),
  /// which gives the one-device bits without gathering the operands. Other
  /// shards (uneven chunks off the leaf edges, several axes on k) return
  /// false: gatherReduced gathers.
  bool distributeContraction(Inst &in, const std::vector<int64_t> &axes,
                             std::vector<After> &after) {
    if (in.op != Op::MatMul || in.operands.size() != 2 || in.results.size() != 1 ||
        axes.size() != 1)
      return false;
    const int x = (int)axes[0];
    TensorType a = f_.type(in.operands[0]), b = f_.type(in.operands[1]), r = f_.type(in.results[0]);
    if (a.isHost() || b.isHost() || r.isHost() || a.rank() != 2 || b.rank() != 2 || r.rank() != 2 ||
        !isConcrete(a.shape) || !isConcrete(r.shape))
      return false;
    if ((r.dtype != DType::F32 && r.dtype != DType::F64) || a.dtype != r.dtype ||
        b.dtype != r.dtype)
      return false;
    const int ka = matmulTransposed(in.attrs, 0) ? 0 : 1;
    const int kb = matmulTransposed(in.attrs, 1) ? 1 : 0;
    const Placement &pa = a.placements[x], &pb = b.placements[x], &pr = r.placements[x];
    if (!pa.isShard() || pa.dim != ka || !pb.isShard() || pb.dim != kb || !pr.isPartial() ||
        pr.op != ReduceOp::Sum || a.axesShardingDim(ka) != std::vector<int>{x} ||
        b.axesShardingDim(kb) != std::vector<int>{x})
      return false;
    const int64_t g = subtreeRanks(concreteDims(a.shape)[ka], a.mesh->axes[x].size);
    if (g == 0)
      return false;
    int node = f_.newValue(r);
    after.push_back({node, in.results[0], x, g});
    in.results[0] = node;
    return true;
  }

  /// Deterministic mode, a reduction (`reduce_sum`, `reduce_max`,
  /// `reduce_min`) over a dim sharded on one mesh axis, with a kept dim that
  /// no axis shards and that has at least as many elements as the axis has
  /// ranks: instead of gathering the operand whole on every rank, an
  /// `all_to_all` moves the shard to that kept dim, so each rank reduces its
  /// block of outputs over the whole reduced dims in the one-device order (an
  /// output's order never depends on the other outputs), without redundant
  /// work and moving 1/ranks of the data; the result, sharded on the kept
  /// dim, then gathers (small) and becomes partial as in gatherReduced.
  bool reshardReduction(Inst &in, const std::vector<int64_t> &axes, std::vector<Inst> &out,
                        std::vector<After> &after) {
    if (opInfo(in.op).cls != OpClass::Reduce || in.operands.size() != 1 || in.results.size() != 1 ||
        axes.size() != 1)
      return false;
    const int x = (int)axes[0];
    TensorType t = f_.type(in.operands[0]), r = f_.type(in.results[0]);
    if (t.isHost() || r.isHost() || !isConcrete(t.shape) || !t.placements[x].isShard() ||
        t.axesShardingDim(t.placements[x].dim) != std::vector<int>{x})
      return false;
    const std::vector<int64_t> &dims = in.attrs.ints;
    auto reduced = [&](int d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
    if (!reduced(t.placements[x].dim))
      return false;
    const std::vector<int64_t> shape = concreteDims(t.shape);
    int keep = -1;
    for (int d = 0; d < t.rank(); ++d)
      if (!reduced(d) && t.axesShardingDim(d).empty() && (keep < 0 || shape[d] > shape[keep]))
        keep = d;
    if (keep < 0 || shape[keep] < t.mesh->axes[x].size)
      return false;
    int keepOut = keep; // its index in the result (reduced dims are dropped)
    for (int64_t d : dims)
      keepOut -= d < keep;
    TensorType moved = t, part = r;
    moved.placements[x] = Placement::shard(keep);
    part.placements[x] = Placement::shard(keepOut);
    in.operands[0] = emitMove(in.operands[0], moved, -1, in.loc, out);
    int v = f_.newValue(part);
    after.push_back({v, in.results[0]});
    in.results[0] = v;
    return true;
  }

  /// Emits the steps after an op that gatherReduced changed: `tree` all-reduce
  /// of the nodes (distributeContraction), then the move to the result's type.
  void emitAfter(const After &w, SrcLoc loc, std::vector<Inst> &out) {
    int whole = w.value;
    if (w.treeRanks > 0) {
      TensorType rep = f_.type(w.result);
      rep.placements[w.treeAxis] = Placement::replicate();
      TensorType repNode = rep; // a sum's f64 nodes (distributeSum)
      repNode.dtype = f_.type(w.value).dtype;
      whole = f_.newValue(repNode);
      Inst s;
      s.op = Op::AllReduce;
      s.operands = {w.value};
      s.results = {whole};
      s.attrs.ints = {w.treeAxis};
      s.attrs.str = "tree " + std::to_string(w.treeRanks);
      s.loc = loc;
      out.push_back(std::move(s));
      ++inserted_;
      if (repNode.dtype != rep.dtype)
        whole = emitCast(whole, rep.dtype, loc, out);
    }
    // `whole` holds the value without a partial axis (the same bits on every
    // rank, or sharded on a kept dim): a relayout of the result moves from
    // there instead of from the partial copy made of it.
    treeWhole_[w.result] = whole;
    emitMove(whole, f_.type(w.result), w.result, loc, out);
  }

  static TensorType replicated(const TensorType &t) {
    return replicatedType(t.dtype, t.shape, t.mesh);
  }

  void block(Block &b) {
    std::vector<Inst> out;
    out.reserve(b.insts.size());
    for (size_t idx = 0; idx < b.insts.size(); ++idx) {
      if (b.insts[idx].results.size() == 1 && sliced_.count(b.insts[idx].results[0]))
        continue; // folded into a slice_gather
      auto slice = matchSliceGather(f_, b, idx, slices_);
      Inst in = std::move(b.insts[idx]);
      for (auto &o : in.operands)
        o = renamed(o);
      for (auto &r : in.regions)
        block(r);
      switch (in.op) {
      case Op::Relayout: {
        if (slice) {
          lowerSlice(in, *slice, out);
          continue;
        }
        // Deterministic mode: the value a partial result was made from
        // (a tree all-reduce's, a gathered reduction's) holds it whole: move
        // from there (a local slice, a gather, or nothing) instead of
        // broadcasting the partial copy made from it.
        if (auto t = treeWhole_.find(in.operands[0]); t != treeWhole_.end())
          in.operands[0] = t->second;
        int got = emitMove(in.operands[0], f_.type(in.results[0]), in.results[0], in.loc, out);
        if (got != in.results[0])
          rename_[in.results[0]] = got;
        continue;
      }
      case Op::Distribute: {
        TensorType target = f_.type(in.results[0]);
        TensorType rep = replicated(target);
        if (rep == target)
          break;
        int result = in.results[0];
        int r = f_.newValue(rep);
        in.results = {r};
        out.push_back(std::move(in));
        emitMove(r, target, result, out.back().loc, out);
        continue;
      }
      case Op::ToHost:
      case Op::Print:
        for (int &o : in.operands) {
          TensorType t = f_.type(o);
          if (!t.isHost())
            o = emitMove(o, replicated(t), -1, in.loc, out);
        }
        break;
      case Op::Mul:
      case Op::Div:
      case Op::MatMul:
      case Op::Einsum:
        guardFactor(in, out);
        break;
      case Op::Const:
      case Op::Fill:
        noteConstant(in);
        break;
      default:
        break;
      }
      std::vector<After> after;
      gatherReduced(in, out, after);
      SrcLoc loc = in.loc;
      out.push_back(std::move(in));
      for (const After &w : after)
        emitAfter(w, loc, out);
    }
    b.insts = std::move(out);
  }

  /// A slice of a sharded dim (passes/SliceGather.h): one `slice_gather` of
  /// the rows the ids span instead of the relayout's gather of the whole dim;
  /// the index_select (and the resharding relayout it fuses) are skipped.
  void lowerSlice(const Inst &rel, const SliceGatherMatch &m, std::vector<Inst> &out) {
    int64_t span = m.count ? (m.count - 1) * m.step + 1 : 0;
    TensorType t =
        f_.type(m.reshard >= 0 ? m.reshard : m.select); // a copy: newValue grows the table
    t.shape[m.dim] = Dim::lit(span);
    Inst g;
    g.op = Op::SliceGather;
    g.operands = {rel.operands[0]};
    g.results = {m.reshard >= 0 ? m.reshard : m.step == 1 ? m.select : f_.newValue(t)};
    g.attrs.ints = m.axes;
    g.attrs.floats = {(double)m.lo};
    g.loc = rel.loc;
    out.push_back(g);
    ++inserted_;
    sliced_.insert(m.select);
    if (m.reshard >= 0)
      sliced_.insert(m.reshard);
    if (m.step == 1)
      return;
    Inst c; // rows 0, step, 2 step, ... of the span, picked locally
    c.op = Op::Const;
    c.results = {f_.newValue(replicatedType(DType::I64, {Dim::lit(m.count)}, t.mesh))};
    for (int64_t k = 0; k < m.count; ++k)
      c.attrs.ints.push_back(k * m.step);
    c.loc = rel.loc;
    Inst s;
    s.op = Op::IndexSelect;
    s.operands = {g.results[0], c.results[0]};
    s.results = {m.select};
    s.attrs.ints = {m.dim};
    s.loc = rel.loc;
    out.push_back(std::move(c));
    out.push_back(std::move(s));
  }

  /// Records whether a float constant's values are all finite / all nonzero
  /// (its factor needs no run-time check_factor).
  void noteConstant(const Inst &in) {
    if (in.results.size() != 1 || !isFloat(f_.type(in.results[0]).dtype) || in.attrs.floats.empty())
      return;
    Known k;
    bool f32 = f_.type(in.results[0]).dtype == DType::F32;
    for (double v0 : in.attrs.floats) {
      double v = f32 ? (double)(float)v0 : v0; // 1e300 is inf in f32
      k.finite &= std::isfinite(v);
      k.nonzero &= v != 0;
    }
    constFactor_[in.results[0]] = k;
  }

  struct Known {
    bool finite = true, nonzero = true;
  };
  std::map<int, Known> constFactor_; ///< float constants by value id

  Function &f_;
  const Topology &topo_;
  bool deterministic_ = false;
  std::map<int, int> rename_;
  SliceGatherFacts slices_;
  std::set<int> sliced_;         ///< results of instructions a slice_gather replaced
  std::map<int, int> treeWhole_; ///< partial result -> the value it was made from (emitAfter)
  int inserted_ = 0;
};

} // namespace

int lowerToSpmd(Module &m, const Topology &topology) {
  Topology topo = topology;
  if (topo.multiNode() && topo.worldIds.empty())
    topo.worldIds = programDeviceIds(m);
  int n = 0;
  for (auto &f : m.functions)
    n += Lowerer(f, topo, m.deterministic).run();
  returnWholeResults(m); // deterministic mode: whole values cross calls
  return n;
}

} // namespace dt
