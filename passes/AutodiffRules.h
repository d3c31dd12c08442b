// This file declares the internals of reverse-mode autodiff (Autodiff.h)
// shared by its two files: Autodiff.cpp (the flatten/autodiff steps and the
// gradient function) and AutodiffRules.cpp (the backward table: one rule per
// differentiable op). Internal to passes/Autodiff*.cpp.
#pragma once

#include "passes/Autodiff.h"

#include "codegen/OpKernels.h"
#include "ir/Infer.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace dt::ad {

struct NotDiff {
  std::string why;
};

class Backward {
public:
  Backward(Function &f, std::vector<Inst> &out) : f_(f), out_(out) {}

  /// Emits `op` typed by inferTypes; throws NotDiff if it does not check.
  int op(Op o, std::vector<int> operands, Attrs attrs = {}, std::vector<TensorType> given = {}) {
    std::vector<TensorType> types;
    for (int id : operands)
      types.push_back(f_.type(id));
    Inferred inf = inferTypes(o, types, attrs, given);
    if (!inf.ok()) {
      std::string m = formatDiag(diagFormat(inf.error->id), inf.error->args);
      for (auto &n : inf.error->notes)
        m += "; " + n;
      throw NotDiff{std::string("the backward `") + opName(o) + "` does not type-check: " + m};
    }
    Inst in;
    in.op = o;
    in.operands = std::move(operands);
    in.attrs = std::move(attrs);
    in.loc = loc_;
    in.results = {f_.newValue(inf.results[0])};
    out_.push_back(std::move(in));
    return out_.back().results[0];
  }
  int fill(double v, const TensorType &t) {
    return op(Op::Fill, {}, scalarConstAttrs(v, t.dtype), {t});
  }
  /// A rank-0 constant with `like`'s dtype and mesh, replicated.
  int scalar(double v, int like) {
    TensorType t = replicatedType(f_.type(like).dtype, {}, f_.type(like).mesh);
    return op(Op::Const, {}, scalarConstAttrs(v, t.dtype), {t});
  }
  int relayout(int id, const TensorType &target) {
    if (f_.type(id) == target)
      return id;
    return op(Op::Relayout, {id}, {}, {target});
  }
  /// relayout(), but a relayout of `id` to `target` that the forward (the
  /// flattened body, all before the backward) or the backward already has
  /// is reused: the backward of `relayout(max(z, dim=1), m[_])` needs the
  /// same all-reduce the forward ran.
  int relayoutReusing(int id, const TensorType &target) {
    if (f_.type(id) == target)
      return id;
    for (const std::vector<Inst> *insts : {&f_.body.insts, &out_})
      for (const Inst &in : *insts)
        if (in.op == Op::Relayout && in.operands.size() == 1 && in.operands[0] == id &&
            in.results.size() == 1 && f_.type(in.results[0]) == target)
          return in.results[0];
    return relayout(id, target);
  }
  /// `x` cast to `like`'s dtype (for masks).
  int castTo(int x, int like) {
    TensorType t = f_.type(x);
    t.dtype = f_.type(like).dtype;
    return op(Op::Cast, {x}, {}, {t});
  }
  /// Sums `g` down to `shape` (undoing numpy broadcasting). `shape` is taken
  /// by value: op() grows the value table, so a reference into it would dangle.
  int unbroadcast(int g, Shape shape) {
    const TensorType gt = f_.type(g);
    if (gt.shape == shape)
      return g;
    int extra = gt.rank() - (int)shape.size();
    Attrs a;
    for (int d = 0; d < gt.rank(); ++d) {
      bool ones = d >= extra && !shape[d - extra].isSym() && shape[d - extra].value == 1 &&
                  !(gt.shape[d] == shape[d - extra]);
      if (d < extra || ones)
        a.ints.push_back(d);
    }
    int r = a.ints.empty() ? g : op(Op::ReduceSum, {g}, a);
    if (f_.type(r).shape == shape)
      return r;
    TensorType t = f_.type(r);
    t.shape = shape;
    return op(Op::Reshape, {r}, {}, {t});
  }
  /// Cotangent target of a relayout's source: shard stays shard, partial
  /// becomes replicate, replicate stays (partial cotangents stay partial).
  TensorType relayoutBackTarget(const TensorType &src, const TensorType &g) {
    TensorType t = src;
    for (size_t a = 0; a < t.placements.size(); ++a) {
      if (src.placements[a].isPartial())
        t.placements[a] = Placement::replicate();
      else if (src.placements[a].isReplicate() && g.placements[a].isPartial())
        t.placements[a] = Placement::partial(ReduceOp::Sum);
    }
    return t;
  }

  Function &f_;
  std::vector<Inst> &out_;
  /// The forward instruction's location, given to its backward instructions
  /// (so `explain` names the source line of a backward collective).
  SrcLoc loc_;
};

/// Common placement for adding two cotangents of one value (see the file
/// header of Autodiff.cpp).
TensorType commonType(const TensorType &a, const TensorType &b);

class Differentiator {
public:
  Differentiator(Function &g) : g_(g), bw_(g, insts_) {}

  void accumulate(int v, int c) {
    auto it = cot_.find(v);
    if (it == cot_.end()) {
      cot_[v] = c;
      return;
    }
    TensorType t = commonType(g_.type(it->second), g_.type(c));
    int a = bw_.relayout(it->second, t), b = bw_.relayout(c, t);
    it->second = bw_.op(Op::Add, {a, b});
  }

  /// The cotangent moved to the primal result's sharding, so the backward
  /// ops type-check like the forward ones did: replicate -> shard is a local
  /// slice, partial -> shard a reduce-scatter; other axes keep their placement.
  int align(int g, const TensorType &result) {
    TensorType t = g_.type(g);
    if (!t.mesh || t.shape != result.shape)
      return g;
    for (size_t a = 0; a < t.placements.size(); ++a)
      if (result.placements[a].isShard())
        t.placements[a] = result.placements[a];
    return bw_.relayout(g, t);
  }
  /// The backward of one forward instruction, given its result cotangent:
  /// its rule from the backward table (AutodiffRules.cpp).
  void backward(const Inst &in, int g);

  /// `x` with its last two dims swapped.
  int swapLast(int x) {
    Attrs a;
    int r = g_.type(x).rank();
    for (int i = 0; i < r; ++i)
      a.ints.push_back(i);
    std::swap(a.ints[r - 2], a.ints[r - 1]);
    return bw_.op(Op::Transpose, {x}, a);
  }

  void matmulBack(const Inst &in, int g) {
    const TensorType a = g_.type(in.operands[0]), b = g_.type(in.operands[1]);
    // Same-rank matmuls (2-D, or batched with equal batch dims) stay matmuls:
    // dA = g @ B^T, dB = A^T @ g. They have the einsum's index signature, so
    // the same placements, and run as BLAS gemms where an einsum would not.
    bool sameBatch = a.rank() >= 2 && a.rank() == b.rank();
    for (int d = 0; sameBatch && d + 2 < a.rank(); ++d)
      sameBatch = a.shape[d] == b.shape[d];
    if (sameBatch) {
      int x = in.operands[0], y = in.operands[1];
      if (isFloat(a.dtype))
        accumulate(x, bw_.op(Op::MatMul, {g, swapLast(y)}));
      if (isFloat(b.dtype))
        accumulate(y, bw_.op(Op::MatMul, {swapLast(x), g}));
      return;
    }
    // Otherwise spell the matmul as an einsum and reuse its backward.
    std::string batch = "abcdefgh";
    auto spell = [&](const TensorType &t, bool left) {
      std::string s;
      int nb = std::max(0, t.rank() - 2);
      int total = std::max(std::max(a.rank(), b.rank()) - 2, 0);
      for (int i = 0; i < nb; ++i)
        s += batch[total - nb + i];
      if (t.rank() == 1)
        return std::string(left ? "k" : "k");
      return s + (left ? "mk" : "kn");
    };
    std::string sa = spell(a, true), sb = spell(b, false);
    std::string so;
    int total = std::max(std::max(a.rank(), b.rank()) - 2, 0);
    for (int i = 0; i < total; ++i)
      so += batch[i];
    if (a.rank() > 1)
      so += "m";
    if (b.rank() > 1)
      so += "n";
    bool stretched = false; // a size-1 batch dim broadcast against the other's
    for (int i = 0; i < total; ++i) {
      char c = batch[i];
      int da = (int)sa.find(c), db = (int)sb.find(c);
      stretched |= da >= 0 && db >= 0 && a.shape[da] != b.shape[db];
    }
    if (stretched) {
      // Size-1 batch dims cannot share an einsum letter: each cotangent is
      // the matmul against the broadcast operand, summed back over the batch
      // dims its operand stretched (numpy's rule, as for elementwise ops).
      int x = in.operands[0], y = in.operands[1];
      if (isFloat(a.dtype))
        accumulate(x, bw_.unbroadcast(bw_.op(Op::MatMul, {g, swapLast(y)}), a.shape));
      if (isFloat(b.dtype))
        accumulate(y, bw_.unbroadcast(bw_.op(Op::MatMul, {swapLast(x), g}), b.shape));
      return;
    }
    einsumBack(sa + "," + sb + "->" + so, in.operands, g);
  }

  void einsumBack(const std::string &spec, const std::vector<int> &x, int g) {
    std::vector<std::string> ins;
    std::string outL, why;
    parseEinsum(spec, ins, outL, why);
    for (size_t i = 0; i < 2; ++i) {
      int self = x[i], other = x[1 - i];
      if (!isFloat(g_.type(self).dtype))
        continue;
      const std::string &ls = ins[i], &lo = ins[1 - i];
      std::string avail = outL + lo, target;
      for (char c : ls)
        if (avail.find(c) != std::string::npos)
          target += c;
      // The operand order whose product is one matmul with the fewest
      // permuted copies: `asd,ashe->hed` would make [d, h, e] and permute it,
      // `ashe,asd->hed` makes [h, e, d] as it is.
      Attrs a;
      a.str = outL + "," + lo + "->" + target;
      std::string swapped = lo + "," + outL + "->" + target;
      int ro = g_.type(g).rank(), rl = g_.type(other).rank();
      bool swap = copies(swapped, rl, ro) < copies(a.str, ro, rl);
      if (swap)
        a.str = swapped;
      int r = bw_.op(Op::Einsum, swap ? std::vector<int>{other, g} : std::vector<int>{g, other}, a);
      if (target != ls) {
        // letters only in this operand were summed: broadcast back over them
        TensorType k = g_.type(r);
        Shape full = g_.type(self).shape, kept;
        for (size_t d = 0; d < ls.size(); ++d)
          kept.push_back(target.find(ls[d]) != std::string::npos ? full[d] : Dim::lit(1));
        k.shape = kept;
        r = bw_.op(Op::Reshape, {r}, {}, {k});
        TensorType bt = g_.type(r);
        bt.shape = full;
        r = bw_.op(Op::Broadcast, {r}, {}, {bt});
      }
      accumulate(self, r);
    }
  }

  /// Permuted copies (of an operand or the product) the einsum `spec` needs
  /// as one batched matmul; 9 when it is not one.
  static int copies(const std::string &spec, int ra, int rb) {
    auto p = einsumMatmulPlan(spec, ra, rb);
    if (!p)
      return 9;
    return !p->permA.empty() + !p->permB.empty() + !p->permOut.empty();
  }

  void indexSelectBack(const Inst &in, int g) {
    int xv = in.operands[0], ids = in.operands[1];
    const TensorType &xt = g_.type(xv), &gt = g_.type(g);
    if (!isFloat(xt.dtype))
      return;
    int dim = in.attrs.ints.empty() ? 0 : (int)in.attrs.ints[0];
    int idsRank = g_.type(ids).rank();
    TensorType base = xt;
    if (base.mesh)
      for (size_t a = 0; a < base.placements.size(); ++a) {
        const Placement &p = gt.placements[a];
        if (p.isPartial())
          base.placements[a] = Placement::partial(ReduceOp::Sum);
        else if (p.isShard() && p.dim >= dim && p.dim < dim + idsRank)
          base.placements[a] = Placement::partial(ReduceOp::Sum);
        else if (p.isShard())
          base.placements[a] = Placement::shard(p.dim < dim ? p.dim : p.dim - idsRank + 1, p.order);
        else
          base.placements[a] = Placement::replicate();
      }
    if (base.mesh)
      canonicalizeShardOrder(base.placements);
    int zeros = bw_.fill(0, base);
    accumulate(xv, bw_.op(Op::IndexAdd, {zeros, ids, g}, in.attrs));
  }

  Function &g_;
  std::vector<Inst> insts_;
  Backward bw_;
  std::map<int, int> cot_;
  /// Which values depend on a `wrt` argument (only they need cotangents);
  /// empty: all of them.
  std::vector<bool> active_;
};

} // namespace dt::ad
