// This file implements reverse-mode autodiff on the global IR (Autodiff.h).
//
// The gradient function is the primal function, made straight-line (calls
// inlined, constant-bound loops unrolled by passes/Flatten), followed by the
// backward instructions in reverse order. Every backward instruction is typed
// by ir/Infer exactly like user code, so a gradient's placement is derived
// from the primal placements: e.g. the cotangent of a replicated weight that
// meets token-sharded work comes out `partial(sum)`, and the program must
// relayout it (an all-reduce, visible) before it can be printed or applied
// to a replicated variable. Where two cotangent contributions of one value
// have different placements, they are brought to a common placement first
// (accumulate()): replicate+partial -> partial (local), shard+replicate ->
// shard (local slice), partial+shard -> shard (reduce-scatter).
// Only values that depend on a `wrt` argument get cotangents, and pure
// instructions whose results end up unused are removed (the gradient of the
// input batch is never computed). Same-rank matmuls differentiate to matmuls
// (dA = g @ B^T, dB = A^T @ g) so the backward runs on BLAS like the forward.
#include "passes/Autodiff.h"

#include "ir/Infer.h"
#include "passes/Flatten.h"

#include <algorithm>
#include <map>
#include <set>

namespace dt {

namespace {

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

/// Common placement for adding two cotangents of one value (see file header).
TensorType commonType(const TensorType &a, const TensorType &b) {
  TensorType t = a;
  for (size_t i = 0; i < t.placements.size(); ++i) {
    const Placement &pa = a.placements[i], &pb = b.placements[i];
    if (pa == pb)
      continue;
    if (pa.isShard())
      t.placements[i] = pa;
    else if (pb.isShard())
      t.placements[i] = pb;
    else
      t.placements[i] = Placement::partial(ReduceOp::Sum); // replicate + partial
  }
  return t;
}

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

  /// The backward of one forward instruction, given its result cotangent.
  void backward(const Inst &in, int g) {
    auto &B = bw_;
    B.loc_ = in.loc;
    if (!in.results.empty())
      g = align(g, g_.type(in.results[0]));
    const auto &x = in.operands;
    int out = in.results.empty() ? -1 : in.results[0];
    auto T = [&](int id) -> const TensorType & { return g_.type(id); };
    auto acc = [&](int operand, int c) {
      if (isFloat(T(x[operand]).dtype))
        accumulate(x[operand], B.unbroadcast(c, T(x[operand]).shape));
    };
    auto mask = [&](Op cmp, int a, int b) { return B.castTo(B.op(cmp, {a, b}), g); };
    switch (in.op) {
    case Op::Add:
      acc(0, g);
      acc(1, g);
      return;
    case Op::Sub:
      acc(0, g);
      acc(1, B.op(Op::Neg, {g}));
      return;
    case Op::Mul:
      acc(0, B.op(Op::Mul, {g, x[1]}));
      acc(1, B.op(Op::Mul, {g, x[0]}));
      return;
    case Op::Div: {
      acc(0, B.op(Op::Div, {g, x[1]}));
      int q = B.op(Op::Div, {B.op(Op::Mul, {g, out}), x[1]});
      acc(1, B.op(Op::Neg, {q}));
      return;
    }
    case Op::Pow: {
      // As PyTorch: an exponent of 0 gives the base no gradient (not
      // 0 * 0^-1 = nan), and a base of 0 with an exponent >= 0 gives the
      // exponent none (not 0 * log 0 = nan).
      // The selects act on the operands, never on the cotangent (which may
      // be partial).
      int bm1 = B.op(Op::Sub, {x[1], B.scalar(1, x[1])});
      bm1 = B.op(Op::Select, {B.op(Op::Eq, {x[1], B.scalar(0, x[1])}), B.scalar(1, bm1), bm1});
      acc(0, B.op(Op::Mul, {g, B.op(Op::Mul, {x[1], B.op(Op::Pow, {x[0], bm1})})}));
      if (isFloat(T(x[1]).dtype)) {
        int flat = B.op(Op::And, {B.op(Op::Eq, {x[0], B.scalar(0, x[0])}),
                                  B.op(Op::Ge, {x[1], B.scalar(0, x[1])})});
        int lg = B.op(Op::Log, {x[0]});
        lg = B.op(Op::Select, {flat, B.scalar(0, lg), lg});
        acc(1, B.op(Op::Mul, {g, B.op(Op::Mul, {out, lg})}));
      }
      return;
    }
    case Op::Neg:
      acc(0, B.op(Op::Neg, {g}));
      return;
    case Op::Exp:
      acc(0, B.op(Op::Mul, {g, out}));
      return;
    case Op::Log:
      acc(0, B.op(Op::Div, {g, x[0]}));
      return;
    case Op::Sqrt:
      acc(0, B.op(Op::Div, {B.op(Op::Mul, {g, B.scalar(0.5, g)}), out}));
      return;
    case Op::Rsqrt:
      acc(0, B.op(Op::Mul, {g, B.op(Op::Div, {B.op(Op::Mul, {out, B.scalar(-0.5, out)}), x[0]})}));
      return;
    case Op::Tanh: {
      int one = B.scalar(1, out);
      acc(0, B.op(Op::Mul, {g, B.op(Op::Sub, {one, B.op(Op::Mul, {out, out})})}));
      return;
    }
    case Op::Sigmoid: {
      int one = B.scalar(1, out);
      acc(0, B.op(Op::Mul, {g, B.op(Op::Mul, {out, B.op(Op::Sub, {one, out})})}));
      return;
    }
    case Op::Relu:
      acc(0, B.op(Op::Mul, {g, mask(Op::Gt, x[0], B.scalar(0, x[0]))}));
      return;
    case Op::Abs: {
      int m = mask(Op::Ge, x[0], B.scalar(0, x[0]));
      int sign = B.op(Op::Sub, {B.op(Op::Mul, {m, B.scalar(2, m)}), B.scalar(1, m)});
      acc(0, B.op(Op::Mul, {g, sign}));
      return;
    }
    case Op::Sin:
      acc(0, B.op(Op::Mul, {g, B.op(Op::Cos, {x[0]})}));
      return;
    case Op::Erf: { // 2 / sqrt(pi) * exp(-x^2)
      int e = B.op(Op::Exp, {B.op(Op::Neg, {B.op(Op::Mul, {x[0], x[0]})})});
      acc(0, B.op(Op::Mul, {g, B.op(Op::Mul, {e, B.scalar(1.1283791670955126, e)})}));
      return;
    }
    case Op::Log1p:
      acc(0, B.op(Op::Div, {g, B.op(Op::Add, {x[0], B.scalar(1, x[0])})}));
      return;
    case Op::Expm1:
      acc(0, B.op(Op::Mul, {g, B.op(Op::Add, {out, B.scalar(1, out)})}));
      return;
    case Op::Mod: // a - floor(a / b) * b: da = 1, db = -(a // b); `//` is flat
      acc(0, g);
      acc(1, B.op(Op::Neg, {B.op(Op::Mul, {g, B.op(Op::FloorDiv, {x[0], x[1]})})}));
      return;
    case Op::FloorDiv:
      return;
    case Op::Cos:
      acc(0, B.op(Op::Neg, {B.op(Op::Mul, {g, B.op(Op::Sin, {x[0]})})}));
      return;
    case Op::Maximum:
    case Op::Minimum: {
      Op cmp = in.op == Op::Maximum ? Op::Ge : Op::Le;
      int m = mask(cmp, x[0], x[1]);
      acc(0, B.op(Op::Mul, {g, m}));
      acc(1, B.op(Op::Mul, {g, B.op(Op::Sub, {B.scalar(1, m), m})}));
      return;
    }
    case Op::Select: {
      int m = B.castTo(x[0], g);
      acc(1, B.op(Op::Mul, {g, m}));
      acc(2, B.op(Op::Mul, {g, B.op(Op::Sub, {B.scalar(1, m), m})}));
      return;
    }
    case Op::Cast:
      if (isFloat(T(x[0]).dtype)) {
        TensorType t = T(g);
        t.dtype = T(x[0]).dtype;
        accumulate(x[0], B.op(Op::Cast, {g}, {}, {t}));
      }
      return;
    case Op::ReduceSum: {
      // reinsert the reduced dims as size 1, then broadcast
      const TensorType xt = T(x[0]); // a copy: B.op() grows the value table
      TensorType k = T(g);
      k.shape = xt.shape;
      for (auto d : in.attrs.ints)
        k.shape[d] = Dim::lit(1);
      int r = B.op(Op::Reshape, {g}, {}, {k});
      TensorType b = T(r);
      b.shape = xt.shape;
      // Broadcast straight into the operand's layout: an axis that shards a
      // reduced dim of x shards the broadcast too, so each rank fills only
      // its local block (a replicated broadcast would materialize the whole
      // global shape on every rank, then slice it).
      TensorType local = b;
      bool sharded = false;
      for (size_t a = 0; a < local.placements.size() && a < xt.placements.size(); ++a) {
        const Placement &p = xt.placements[a];
        if (p.isShard() && local.placements[a].isReplicate() &&
            std::find(in.attrs.ints.begin(), in.attrs.ints.end(), p.dim) != in.attrs.ints.end()) {
          local.placements[a] = p;
          sharded = true;
        }
      }
      if (sharded && inferTypes(Op::Broadcast, {T(r)}, {}, {local}).ok())
        b = local;
      accumulate(x[0], B.op(Op::Broadcast, {r}, {}, {b}));
      return;
    }
    case Op::ReduceMax:
    case Op::ReduceMin: {
      const TensorType xt = T(x[0]);
      TensorType k = T(out);
      k.shape = xt.shape;
      for (auto d : in.attrs.ints)
        k.shape[d] = Dim::lit(1);
      int ro = B.op(Op::Reshape, {out}, {}, {k});
      // A max over a sharded dim is partial(max); the mask compares every
      // element with the true maximum, so reduce it first (an all-reduce).
      TensorType full = T(ro);
      for (auto &p : full.placements)
        if (p.isPartial())
          p = Placement::replicate();
      ro = B.relayout(ro, full);
      int rg = B.op(Op::Reshape, {g}, {}, {[&] {
                      TensorType t = T(g);
                      t.shape = k.shape;
                      return t;
                    }()});
      int m = B.castTo(B.op(Op::Eq, {x[0], ro}), g);
      // Ties share the gradient evenly (as JAX, and PyTorch's amax), so the
      // gradient of a max sums to the incoming one: divide by the number of
      // maximal elements, counted over the reduced dims on every rank (an
      // all-reduce when they are sharded). At least 1: a NaN maximum matches
      // no element, and its gradient stays 0 rather than 0 / 0.
      Attrs sumDims;
      sumDims.ints = in.attrs.ints;
      int cnt = B.op(Op::ReduceSum, {m}, sumDims);
      TensorType cntFull = T(cnt);
      for (auto &p : cntFull.placements)
        if (p.isPartial())
          p = Placement::replicate();
      cnt = B.relayout(cnt, cntFull);
      cnt = B.op(Op::Maximum, {cnt, B.scalar(1, cnt)});
      int rc = B.op(Op::Reshape, {cnt}, {}, {[&] {
                      TensorType t = T(cnt);
                      t.shape = k.shape;
                      return t;
                    }()});
      accumulate(x[0], B.op(Op::Mul, {m, B.op(Op::Div, {rg, rc})}));
      return;
    }
    case Op::MatMul:
      return matmulBack(in, g);
    case Op::Einsum:
      return einsumBack(in.attrs.str, x, g);
    case Op::Transpose: {
      Attrs a;
      a.ints.resize(in.attrs.ints.size());
      for (size_t i = 0; i < in.attrs.ints.size(); ++i)
        a.ints[in.attrs.ints[i]] = (int64_t)i;
      accumulate(x[0], B.op(Op::Transpose, {g}, a));
      return;
    }
    case Op::Reshape: {
      TensorType t = T(g);
      t.shape = T(x[0]).shape;
      accumulate(x[0], B.op(Op::Reshape, {g}, {}, {t}));
      return;
    }
    case Op::Broadcast:
      acc(0, g);
      return;
    case Op::IndexSelect:
      return indexSelectBack(in, g);
    case Op::IndexAdd: {
      if (isFloat(T(x[0]).dtype))
        accumulate(x[0], g);
      accumulate(x[2], B.op(Op::IndexSelect, {g, x[1]}, in.attrs));
      return;
    }
    case Op::Relayout:
      accumulate(x[0], B.relayout(g, B.relayoutBackTarget(T(x[0]), T(g))));
      return;
    case Op::ToHost:
      accumulate(x[0], B.op(Op::Distribute, {g}, {}, {T(x[0])}));
      return;
    case Op::Distribute: {
      TensorType r = T(g);
      for (auto &p : r.placements)
        if (p.isPartial())
          p = Placement::replicate();
      int rg = B.relayout(g, r);
      accumulate(x[0], B.op(Op::ToHost, {rg}, {}, {T(x[0])}));
      return;
    }
    default:
      return; // comparisons, logic, sources: no gradient
    }
  }

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
      Attrs a;
      a.str = outL + "," + lo + "->" + target;
      int r = bw_.op(Op::Einsum, {g, other}, a);
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
          base.placements[a] =
              Placement::shard(p.dim < dim ? p.dim : p.dim - idsRank + 1, p.order);
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
};

/// Removes pure instructions whose results are never used: cotangents of
/// inactive operands (e.g. the input batch) and forward values that only the
/// dropped primal result needed. Prints and control stay.
void removeDeadCode(Function &g) {
  std::vector<bool> used(g.values.size(), false);
  auto &insts = g.body.insts;
  std::vector<bool> keep(insts.size(), false);
  for (size_t i = insts.size(); i-- > 0;) {
    const Inst &in = insts[i];
    OpClass cls = opInfo(in.op).cls;
    bool live = in.results.empty() || cls == OpClass::Effect || cls == OpClass::Control;
    for (int r : in.results)
      live = live || used[r];
    if (!live)
      continue;
    keep[i] = true;
    for (int o : in.operands)
      used[o] = true;
  }
  std::vector<Inst> out;
  for (size_t i = 0; i < insts.size(); ++i)
    if (keep[i])
      out.push_back(std::move(insts[i]));
  insts = std::move(out);
}

} // namespace

namespace {

constexpr const char *kFlatSuffix = ".flat";

/// Calls `fn` on every instruction of `b`, nested regions included.
template <class F> void forEachInst(Block &b, F &&fn) {
  for (Inst &in : b.insts) {
    fn(in);
    for (Block &r : in.regions)
      forEachInst(r, fn);
  }
}

/// Makes `<fn>.flat` unless it exists; false after reporting an error.
bool flatCopy(Module &m, const std::string &fn, DiagEngine &diags, SrcLoc loc, int64_t wrt0) {
  if (m.find(fn + kFlatSuffix))
    return true;
  const Function *primal = m.find(fn);
  if (!primal)
    throw InternalError("flatten: no function `" + fn + "`");
  Function g = *primal;
  g.name = fn + kFlatSuffix;
  std::string why;
  if (!flattenFunction(m, g, why)) {
    diags.error(DiagId::NotDifferentiable, loc, {std::to_string(wrt0), fn, why});
    return false;
  }
  m.functions.push_back(std::move(g));
  return true;
}

std::string expandOne(Module &m, const Inst &in, DiagEngine &diags, int depth);

/// Expands the `grad`s of the flat copy of `fn` (a gradient taken inside a
/// differentiated function) and inlines the calls they become.
bool expandInFlat(Module &m, const std::string &fn, DiagEngine &diags, SrcLoc loc, int64_t wrt0,
                  int depth) {
  Function *flat = m.find(fn + kFlatSuffix);
  bool any = false;
  for (Inst &in : flat->body.insts)
    any |= in.op == Op::Grad;
  if (!any)
    return true;
  for (size_t i = 0; i < flat->body.insts.size(); ++i) {
    Inst &in = m.find(fn + kFlatSuffix)->body.insts[i];
    if (in.op != Op::Grad)
      continue;
    std::string g = expandOne(m, in, diags, depth + 1);
    if (g.empty())
      return false;
    Inst &again = m.find(fn + kFlatSuffix)->body.insts[i];
    again.op = Op::Call;
    again.attrs = Attrs{};
    again.attrs.str = g;
  }
  flat = m.find(fn + kFlatSuffix);
  std::string why;
  if (!flattenFunction(m, *flat, why)) {
    diags.error(DiagId::NotDifferentiable, loc, {std::to_string(wrt0), fn, why});
    return false;
  }
  return true;
}

/// The gradient function of one `grad` instruction ("" after an error).
std::string expandOne(Module &m, const Inst &in, DiagEngine &diags, int depth) {
  if (depth > 64)
    throw InternalError("autodiff: `grad` nested more than 64 deep");
  const std::string fn = in.attrs.str;
  std::vector<int64_t> wrt = in.attrs.ints;
  bool withValue = in.attrs.flag;
  SrcLoc loc = in.loc;
  int64_t w0 = wrt.empty() ? 0 : wrt[0];
  // The builder checked this for source programs; IR input is checked here.
  const Function *primal = m.find(fn);
  if (!primal)
    throw InternalError("autodiff: no function `" + fn + "`");
  if (primal->results.size() != 1 || primal->results[0].rank() != 0 ||
      !isFloat(primal->results[0].dtype)) {
    std::string r;
    for (size_t i = 0; i < primal->results.size(); ++i)
      r += (i ? ", " : "") + primal->results[i].str();
    diags.error(DiagId::GradNotScalar, loc, {fn, r.empty() ? "nothing" : r});
    return "";
  }
  if (!flatCopy(m, fn, diags, loc, w0) || !expandInFlat(m, fn, diags, loc, w0, depth))
    return "";
  return differentiate(m, fn, wrt, withValue, diags, loc);
}

/// The functions reachable from `fn` through calls and grads.
void reach(const Module &m, const std::string &fn, std::set<std::string> &seen) {
  if (!seen.insert(fn).second)
    return;
  const Function *f = m.find(fn);
  if (!f)
    return;
  std::vector<std::string> callees;
  forEachInst(const_cast<Block &>(f->body), [&](Inst &in) {
    if (in.op == Op::Call || in.op == Op::Grad)
      callees.push_back(in.attrs.str);
  });
  for (auto &c : callees)
    reach(m, c, seen);
}

} // namespace

bool flattenGradients(Module &m, DiagEngine &diags) {
  std::vector<std::pair<std::string, std::pair<SrcLoc, int64_t>>> todo;
  for (Function &f : m.functions)
    forEachInst(f.body, [&](Inst &in) {
      if (in.op == Op::Grad)
        todo.push_back({in.attrs.str, {in.loc, in.attrs.ints.empty() ? 0 : in.attrs.ints[0]}});
    });
  for (auto &[fn, where] : todo)
    if (!flatCopy(m, fn, diags, where.first, where.second))
      return false;
  return true;
}

bool expandGradients(Module &m, DiagEngine &diags) {
  // Functions are appended while expanding (flat copies, gradients): index,
  // and re-find after each expansion.
  for (size_t k = 0; k < m.functions.size(); ++k) {
    const std::string &name = m.functions[k].name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, kFlatSuffix) == 0)
      continue; // flat copies are expanded when they are differentiated
    std::vector<Inst *> grads;
    forEachInst(m.functions[k].body, [&](Inst &in) {
      if (in.op == Op::Grad)
        grads.push_back(&in);
    });
    for (Inst *in : grads) {
      std::string g = expandOne(m, *in, diags, 0);
      if (g.empty())
        return false;
      // The builder typed the `grad` by the same derivation; IR input may not have.
      const Function *gf = m.find(g);
      std::string want, got;
      for (size_t i = 0; i < gf->results.size(); ++i)
        want += (i ? ", " : "") + gf->results[i].str();
      for (size_t i = 0; i < in->results.size(); ++i)
        got += (i ? ", " : "") + m.functions[k].type(in->results[i]).str();
      if (want != got) {
        diags.error(DiagId::GradMistyped, in->loc, {g, want, got});
        return false;
      }
      in->op = Op::Call;
      in->attrs = Attrs{};
      in->attrs.str = g;
    }
  }
  // The flat copies were only autodiff's input: nothing calls them, and later
  // steps would lower, fuse and compile them for nothing.
  auto isFlat = [](const Function &f) {
    return f.name.size() > 5 && f.name.compare(f.name.size() - 5, 5, kFlatSuffix) == 0;
  };
  m.functions.erase(std::remove_if(m.functions.begin(), m.functions.end(), isFlat),
                    m.functions.end());
  return true;
}

bool gradientTypes(const Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                   bool withValue, DiagEngine &diags, SrcLoc loc, std::vector<TensorType> &out) {
  std::set<std::string> seen;
  reach(m, fn, seen);
  Module scratch;
  scratch.meshes = m.meshes;
  for (const Function &f : m.functions)
    if (seen.count(f.name))
      scratch.functions.push_back(f);
  Inst g;
  g.op = Op::Grad;
  g.attrs.str = fn;
  g.attrs.ints = wrt;
  g.attrs.flag = withValue;
  g.loc = loc;
  std::string name = expandOne(scratch, g, diags, 0);
  if (name.empty())
    return false;
  out = scratch.find(name)->results;
  return true;
}

std::string differentiate(Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                          bool withValue, DiagEngine &diags, SrcLoc loc) {
  std::string name = fn + (withValue ? ".value_and_grad" : ".grad");
  for (auto w : wrt)
    name += "." + std::to_string(w);
  if (m.find(name))
    return name;
  const Function *primal = m.find(fn + kFlatSuffix);
  if (!primal)
    primal = m.find(fn);
  if (!primal)
    throw InternalError("differentiate: no function `" + fn + "`");
  for (auto w : wrt)
    if (!isFloat(primal->type(primal->params[w]).dtype)) {
      diags.error(
          DiagId::NotDifferentiable, loc,
          {std::to_string(w), fn,
           "its type `" + primal->type(primal->params[w]).str() + "` is not floating-point"});
      return "";
    }
  Function g = *primal;
  g.name = name;
  std::string why;
  if (!flattenFunction(m, g, why)) {
    diags.error(DiagId::NotDifferentiable, loc, {std::to_string(wrt[0]), fn, why});
    return "";
  }
  Inst ret = g.body.insts.back();
  g.body.insts.pop_back();
  int y = ret.operands[0];
  // Active values depend on a `wrt` argument; only they need cotangents.
  std::vector<bool> active(g.values.size(), false);
  for (auto w : wrt)
    active[g.params[w]] = true;
  auto anyActive = [&](const Inst &in) {
    for (int o : in.operands)
      if (active[o])
        return true;
    return false;
  };
  for (const Inst &in : g.body.insts)
    if (anyActive(in))
      for (int r : in.results)
        active[r] = true;
  Differentiator d(g);
  try {
    const TensorType &yt = g.type(y);
    d.cot_[y] = d.bw_.fill(1, replicatedType(yt.dtype, {}, yt.mesh));
    for (auto it = g.body.insts.rbegin(); it != g.body.insts.rend(); ++it) {
      if (it->results.empty() || !anyActive(*it))
        continue;
      auto c = d.cot_.find(it->results[0]);
      if (c == d.cot_.end())
        continue;
      d.backward(*it, c->second);
    }
  } catch (const NotDiff &e) {
    diags.error(DiagId::NotDifferentiable, loc, {std::to_string(wrt[0]), fn, e.why});
    return "";
  }
  Inst r;
  r.op = Op::Return;
  r.loc = loc;
  if (withValue)
    r.operands.push_back(y);
  for (auto w : wrt) {
    int p = g.params[w];
    auto c = d.cot_.find(p);
    r.operands.push_back(c != d.cot_.end() ? c->second : d.bw_.fill(0, g.type(p)));
  }
  for (auto &in : d.insts_)
    g.body.insts.push_back(std::move(in));
  g.body.insts.push_back(std::move(r));
  removeDeadCode(g);
  g.results.clear();
  for (int id : g.body.insts.back().operands)
    g.results.push_back(g.type(id));
  m.functions.push_back(std::move(g));
  return name;
}

} // namespace dt
