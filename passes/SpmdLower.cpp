// This file implements SPMD lowering (see SpmdLower.h).
#include "passes/SpmdLower.h"

#include "passes/Redistribute.h"

#include <cmath>
#include <map>

namespace dt {

namespace {

class Lowerer {
public:
  Lowerer(Function &f, const Topology &topo) : f_(f), topo_(topo) {}

  int run() {
    block(f_.body);
    return inserted_;
  }

private:
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

  static TensorType replicated(const TensorType &t) {
    return replicatedType(t.dtype, t.shape, t.mesh);
  }

  void block(Block &b) {
    std::vector<Inst> out;
    out.reserve(b.insts.size());
    for (auto &in0 : b.insts) {
      Inst in = std::move(in0);
      for (auto &o : in.operands)
        o = renamed(o);
      for (auto &r : in.regions)
        block(r);
      switch (in.op) {
      case Op::Relayout: {
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
      out.push_back(std::move(in));
    }
    b.insts = std::move(out);
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
  std::map<int, int> rename_;
  int inserted_ = 0;
};

} // namespace

int lowerToSpmd(Module &m, const Topology &topology) {
  Topology topo = topology;
  if (topo.multiNode() && topo.worldIds.empty())
    topo.worldIds = programDeviceIds(m);
  int n = 0;
  for (auto &f : m.functions)
    n += Lowerer(f, topo).run();
  return n;
}

} // namespace dt
