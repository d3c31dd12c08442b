// This file implements inferTypes: dtype rules, mesh/host mixing rules, shape
// rules via index signatures, and the derived placement rule (see Infer.h).
#include "ir/Infer.h"

#include "ir/Collectives.h"

#include <algorithm>
#include <map>

namespace dt {

namespace {

enum class Lin { None, Single, Joint };

const char *displayName(Op op) { return opDisplayName(op); }

/// How an op treats partial operands: which operand slots are linear and
/// whether partials combine jointly (add: all linear slots partial) or singly
/// (mul: exactly one partial factor). Reductions allowed per op.
struct Linearity {
  Lin kind = Lin::None;
  std::vector<int> slots; ///< linear operand indices (empty = all)
  std::vector<ReduceOp> reduces;
};

const std::vector<ReduceOp> kSumLike = {ReduceOp::Sum, ReduceOp::Avg};

Linearity linearityAnyDType(Op op, const std::vector<TensorType> &operands) {
  switch (op) {
  case Op::Add:
  case Op::Sub:
    return {Lin::Joint, {0, 1}, kSumLike};
  case Op::Maximum:
    return {Lin::Joint, {0, 1}, {ReduceOp::Max}};
  case Op::Minimum:
    return {Lin::Joint, {0, 1}, {ReduceOp::Min}};
  case Op::Select:
    return {Lin::Joint, {1, 2}, kSumLike};
  case Op::IndexAdd:
    return {Lin::Joint, {0, 2}, kSumLike};
  case Op::Neg:
  case Op::ReduceSum:
  case Op::Cumsum:
    return {Lin::Single, {0}, kSumLike};
  case Op::Mul:
  case Op::MatMul:
  case Op::Einsum:
    return {Lin::Single, {0, 1}, kSumLike};
  case Op::Div:
    return {Lin::Single, {0}, kSumLike};
  case Op::ReduceMax:
    return {Lin::Single, {0}, {ReduceOp::Max}};
  case Op::ReduceMin:
    return {Lin::Single, {0}, {ReduceOp::Min}};
  case Op::Transpose:
  case Op::Reshape:
  case Op::Broadcast:
    return {Lin::Single, {0}, {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}};
  case Op::IndexSelect:
    return {Lin::Single, {0}, {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}};
  case Op::Cast:
    // Widening or narrowing between floats is linear; anything touching ints is not.
    return {operands.size() == 1 && isFloat(operands[0].dtype) ? Lin::Single : Lin::None,
            {0},
            kSumLike};
  default:
    return {};
  }
}

/// Whether `op` only moves or copies elements (never combines two values), so
/// it commutes with any per-rank reduction on any dtype.
bool movesElementsOnly(Op op) {
  return op == Op::Transpose || op == Op::Reshape || op == Op::Broadcast || op == Op::IndexSelect;
}

/// The linearity of `op` producing `result` (see Linearity), per dtype.
/// On integers, wrap-around arithmetic is a ring, so `+ - *`, sums and
/// contractions are linear in a `partial(sum)` exactly; but truncating
/// division is not (`(1 + 1) / 2 != 1 / 2 + 1 / 2`), and neither is anything
/// after a `partial(avg)`, whose reduction truncates (`avg` = sum / n).
Linearity linearity(Op op, const std::vector<TensorType> &operands, DType result) {
  Linearity lin = linearityAnyDType(op, operands);
  if (isFloat(result) || movesElementsOnly(op))
    return lin;
  if (op == Op::Div)
    return {};
  std::erase(lin.reduces, ReduceOp::Avg);
  return lin;
}

TypeError err(DiagId id, std::vector<std::string> args) {
  TypeError e;
  e.id = id;
  e.args = std::move(args);
  return e;
}

/// `t` with axis `a` replaced by `p`.
TensorType withAxis(TensorType t, int a, Placement p) {
  t.placements[a] = p;
  canonicalizeShardOrder(t.placements);
  return t;
}

bool isNumeric(DType t) { return t != DType::Bool; }

std::optional<TypeError> checkDTypes(Op op, const std::vector<TensorType> &ops) {
  auto cls = opInfo(op).cls;
  auto name = displayName(op);
  auto need = [&](bool ok, DiagId id, int i) -> std::optional<TypeError> {
    if (ok)
      return std::nullopt;
    auto e = err(id, {name, ops[i].str()});
    e.operand = i;
    return e;
  };
  auto same = [&](int i, int j) -> std::optional<TypeError> {
    if (ops[i].dtype == ops[j].dtype)
      return std::nullopt;
    return err(DiagId::DTypeMismatch, {name, dtypeName(ops[i].dtype), dtypeName(ops[j].dtype)});
  };
  switch (op) {
  case Op::Exp:
  case Op::Log:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Tanh:
  case Op::Sigmoid:
  case Op::Sin:
  case Op::Cos:
  case Op::Erf:
  case Op::Log1p:
  case Op::Expm1:
  case Op::Pow:
    if (auto e = need(isFloat(ops[0].dtype), DiagId::FloatOnly, 0))
      return e;
    break;
  case Op::Not:
  case Op::And:
  case Op::Or:
    for (size_t i = 0; i < ops.size(); ++i)
      if (auto e = need(ops[i].dtype == DType::Bool, DiagId::BoolOnly, (int)i))
        return e;
    break;
  case Op::Select:
    if (auto e = need(ops[0].dtype == DType::Bool, DiagId::BoolOnly, 0))
      return e;
    return same(1, 2);
  case Op::IndexSelect:
    if (auto e =
            need(ops[1].dtype == DType::I32 || ops[1].dtype == DType::I64, DiagId::IntegerOnly, 1))
      return e;
    break;
  case Op::IndexAdd:
    if (auto e =
            need(ops[1].dtype == DType::I32 || ops[1].dtype == DType::I64, DiagId::IntegerOnly, 1))
      return e;
    return same(0, 2);
  case Op::Cast:
  case Op::Eq:
  case Op::Ne:
  case Op::Reshape:
  case Op::Transpose:
  case Op::Broadcast:
    break;
  default:
    for (size_t i = 0; i < ops.size(); ++i)
      if (auto e = need(isNumeric(ops[i].dtype), DiagId::NumericOnly, (int)i))
        return e;
  }
  if ((cls == OpClass::Elementwise2 || cls == OpClass::Contract) && ops.size() == 2)
    return same(0, 1);
  return std::nullopt;
}

DType resultDType(Op op, const std::vector<TensorType> &ops) {
  switch (op) {
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
    return DType::Bool;
  case Op::Select:
    return ops[1].dtype;
  default:
    return ops[0].dtype;
  }
}

/// All distributed operands on one mesh, and no host value mixed in.
std::optional<TypeError> checkMeshes(const std::vector<TensorType> &ops, MeshRef &mesh) {
  mesh = nullptr;
  int firstDist = -1, firstHost = -1;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].isHost()) {
      if (firstHost < 0)
        firstHost = (int)i;
      continue;
    }
    if (!mesh) {
      mesh = ops[i].mesh;
      firstDist = (int)i;
    } else if (!(*mesh == *ops[i].mesh)) {
      auto e = err(DiagId::MeshMismatch, {mesh->name, ops[i].mesh->name});
      e.notes = {"operand " + std::to_string(firstDist) + " is `" + ops[firstDist].str() + "`",
                 "operand " + std::to_string(i) + " is `" + ops[i].str() + "`"};
      return e;
    }
  }
  if (mesh && firstHost >= 0) {
    auto e = err(DiagId::HostDistributedMix, {});
    e.operand = firstHost;
    e.suggest = replicatedType(ops[firstHost].dtype, ops[firstHost].shape, mesh);
    e.notes = {"host operand is `" + ops[firstHost].str() + "`",
               "distributed operand is `" + ops[firstDist].str() + "`"};
    return e;
  }
  return std::nullopt;
}

/// Operand `j` relaid out to agree with operand `owner` on every axis: each
/// factor `owner` shards is sharded the same way in `j` where `j` has it;
/// everything else replicated. This is the relayout the hint proposes.
TensorType matchLayout(const IndexSignature &sig, const std::vector<TensorType> &ops, int owner,
                       int j, const MeshRef &mesh) {
  TensorType t = ops[j];
  t.mesh = mesh;
  t.placements.assign(mesh->axes.size(), Placement::replicate());
  for (size_t a = 0; a < t.placements.size(); ++a) {
    const Placement &p = ops[owner].placements[a];
    if (!p.isShard())
      continue;
    int d = sig.dimOf(j, sig.operands[owner][p.dim]);
    if (d >= 0)
      t.placements[a] = Placement::shard(d, p.order);
  }
  canonicalizeShardOrder(t.placements);
  return t;
}

} // namespace

Inferred derivePlacements(Op op, const IndexSignature &sig, const std::vector<TensorType> &ops,
                          const TensorType &base) {
  Inferred out;
  TensorType r = base;
  if (!r.mesh) {
    out.results = {r};
    return out;
  }
  const Mesh &mesh = *r.mesh;
  r.placements.assign(mesh.axes.size(), Placement::replicate());
  bool contract = opInfo(op).cls == OpClass::Contract;
  auto fail = [&](TypeError e) {
    for (size_t i = 0; i < ops.size(); ++i)
      e.notes.push_back("operand " + std::to_string(i) + " is `" + ops[i].str() + "`");
    out.error = std::move(e);
    return out;
  };
  for (int a = 0; a < (int)mesh.axes.size(); ++a) {
    const std::string &axis = mesh.axes[a].name;
    std::vector<int> partials;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].placements[a].isPartial())
        partials.push_back((int)i);

    // index_add of rows sharded on this axis into a partial(sum) base: every
    // rank adds its rows into its part of the sum (autodiff of index_select).
    if (op == Op::IndexAdd && ops[0].placements[a].isPartial() &&
        ops[0].placements[a].op == ReduceOp::Sum) {
      int t = sig.operands[1][0];
      const Placement &pi = ops[1].placements[a], &ps = ops[2].placements[a];
      if (pi.isShard() && pi.dim == 0 && ps.isShard() && sig.operands[2][ps.dim] == t) {
        r.placements[a] = Placement::partial(ReduceOp::Sum);
        continue;
      }
    }
    if (!partials.empty()) {
      ReduceOp rop = ops[partials[0]].placements[a].op;
      for (int i : partials)
        if (ops[i].placements[a].op != rop) {
          auto e = err(DiagId::PartialOpMismatch, {displayName(op), axis});
          e.notes.push_back("relayout both partial operands to `replicate` on `" + axis + "`");
          e.operand = i;
          e.suggest = withAxis(ops[i], a, Placement::replicate());
          return fail(e);
        }
      Linearity lin = linearity(op, ops, base.dtype);
      if (op == Op::Cast && !isFloat(base.dtype))
        lin.kind = Lin::None; // truncation
      // A fix replicates operand `i` on every axis where keeping it partial
      // fails the same way (`keep(b)`: it may stay partial on axis b), not
      // only on this one: following it must not meet the error again on the
      // next axis.
      auto replicateWhere = [&](int i, const std::function<bool(size_t)> &keep) {
        TensorType t = ops[i];
        for (size_t b = 0; b < t.placements.size(); ++b)
          if (t.placements[b].isPartial() && (b == (size_t)a || !keep(b)))
            t.placements[b] = Placement::replicate();
        return t;
      };
      auto never = [](size_t) { return false; };
      // ... where another operand is not partial (a sum of partials is one).
      auto jointWith = [&](int i) {
        return [&, i](size_t b) {
          for (int j : lin.slots)
            if (j != i && !ops[j].placements[b].isPartial())
              return false;
          return true;
        };
      };
      auto replicateFix = [&](DiagId id, std::vector<std::string> args, int i) {
        auto e = err(id, std::move(args));
        e.operand = i;
        e.suggest = replicateWhere(i, jointWith(i));
        return fail(e);
      };
      bool opOk = std::find(lin.reduces.begin(), lin.reduces.end(), rop) != lin.reduces.end();
      if (lin.kind != Lin::None && !opOk && (rop != ReduceOp::Avg || isFloat(base.dtype))) {
        // Linear, but in another kind of partial (`sum` of a partial(max)).
        auto e = err(DiagId::PartialKind,
                     {displayName(op), reduceOpName(rop), reduceOpName(lin.reduces[0])});
        e.operand = partials[0];
        e.suggest = replicateWhere(partials[0], never);
        return fail(e);
      }
      if (lin.kind == Lin::None || !opOk) {
        auto e = err(DiagId::NonLinearPartial, {displayName(op)});
        if (op == Op::Div && !isFloat(base.dtype))
          e.notes.push_back(std::string("on `") + dtypeName(base.dtype) + "`, `" + displayName(op) +
                            "` is not linear (integer division truncates)");
        else if (lin.kind != Lin::None && rop == ReduceOp::Avg && !isFloat(base.dtype))
          e.notes.push_back(std::string("on `") + dtypeName(base.dtype) +
                            "`, `partial(avg)` is not linear under `" + displayName(op) +
                            "` (the integer average truncates)");
        e.operand = partials[0];
        e.suggest = replicateWhere(partials[0], never);
        return fail(e);
      }
      auto inSlots = [&](int i) {
        return std::find(lin.slots.begin(), lin.slots.end(), i) != lin.slots.end();
      };
      for (int i : partials)
        if (!inSlots(i)) {
          auto e = err(DiagId::NonLinearPartial, {displayName(op)});
          e.notes.push_back(
              std::string("`") + displayName(op) + "` is linear in " +
              (lin.slots.size() == 1 ? "its first operand only" : "its data operands only") +
              "; operand " + std::to_string(i + 1) + " is partial");
          e.operand = i;
          e.suggest = replicateWhere(i, never);
          return fail(e);
        }
      if (lin.kind == Lin::Joint) {
        for (int i : lin.slots)
          if (!ops[i].placements[a].isPartial()) {
            // fix: all-reduce the partial side (cheapest correct change)
            return replicateFix(DiagId::PartialMixed, {displayName(op), axis}, partials[0]);
          }
      } else if (partials.size() > 1) {
        auto e = err(DiagId::NonLinearPartial, {displayName(op)});
        e.notes.push_back(std::string("`") + displayName(op) +
                          "` is linear in one operand at a time, and both are partial");
        e.operand = partials[1];
        // ... where another operand is partial too.
        e.suggest = replicateWhere(partials[1], [&](size_t b) {
          for (size_t j = 0; j < ops.size(); ++j)
            if ((int)j != partials[1] && ops[j].placements[b].isPartial())
              return false;
          return true;
        });
        return fail(e);
      }
      // every non-partial operand must be replicated on this axis
      for (size_t i = 0; i < ops.size(); ++i)
        if (!ops[i].placements[a].isPartial() && !ops[i].placements[a].isReplicate()) {
          auto e = err(DiagId::PartialMixed, {displayName(op), axis});
          e.operand = (int)i;
          e.suggest = withAxis(ops[i], a, Placement::replicate());
          return fail(e);
        }
      r.placements[a] = Placement::partial(rop);
      continue;
    }

    // No partial operand: find the one sharded factor.
    int factor = -1, owner = -1;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Placement &p = ops[i].placements[a];
      if (!p.isShard())
        continue;
      int f = sig.operands[i][p.dim];
      if (f < 0) {
        auto e = err(DiagId::ShardingMismatch, {axis});
        e.operand = (int)i;
        e.suggest = withAxis(ops[i], a, Placement::replicate());
        e.notes.push_back("dim " + std::to_string(p.dim) + " of operand " + std::to_string(i) +
                          " has size 1 and is broadcast");
        return fail(e);
      }
      if (factor < 0) {
        factor = f;
        owner = (int)i;
      } else if (f != factor) {
        // One axis shards two different dims of the op (two letters of an
        // einsum): a contraction mismatch only when one of them is summed.
        bool summed = contract && (sig.roles[f] == FactorRole::Summed ||
                                   sig.roles[factor] == FactorRole::Summed);
        auto e = err(summed ? DiagId::ContractionMismatch : DiagId::ShardingMismatch,
                     summed ? std::vector<std::string>{displayName(op), axis}
                            : std::vector<std::string>{axis});
        e.notes.push_back("`" + axis + "` shards dim " + std::to_string(sig.dimOf(owner, factor)) +
                          " of operand " + std::to_string(owner) + " and dim " +
                          std::to_string(p.dim) + " of operand " + std::to_string(i) +
                          ", which the op does not pair");
        e.operand = (int)i;
        e.suggest = matchLayout(sig, ops, owner, (int)i, r.mesh);
        return fail(e);
      }
    }
    if (factor < 0)
      continue; // replicate
    for (size_t i = 0; i < ops.size(); ++i) {
      int d = sig.dimOf((int)i, factor);
      if (d < 0)
        continue;
      const Placement &p = ops[i].placements[a];
      // A dim of size 1 against a sharded dim of size 1 is a broadcast too
      // (as against a sharded dim of any other size): a replicated operand
      // goes whole to every rank's block, which holds that one row or none.
      const OpClass cls = opInfo(op).cls;
      if (p.isReplicate() && sig.roles[factor] == FactorRole::Kept &&
          !sig.sizes[factor].isSym() && sig.sizes[factor].value == 1 &&
          (cls == OpClass::Elementwise1 || cls == OpClass::Elementwise2 ||
           cls == OpClass::Elementwise3))
        continue;
      if (!(p.isShard() && p.dim == d)) {
        auto e =
            err(contract && sig.roles[factor] == FactorRole::Summed ? DiagId::ContractionMismatch
                                                                    : DiagId::ShardingMismatch,
                contract && sig.roles[factor] == FactorRole::Summed
                    ? std::vector<std::string>{displayName(op), axis}
                    : std::vector<std::string>{axis});
        e.operand = (int)i;
        e.suggest = matchLayout(sig, ops, owner, (int)i, r.mesh);
        return fail(e);
      }
    }
    switch (sig.roles[factor]) {
    case FactorRole::Kept:
      r.placements[a] = Placement::shard(sig.resultDimOf(factor));
      break;
    case FactorRole::Summed:
      if (op == Op::IndexAdd) {
        // Rows scattered from a sharded source sum into every rank's base:
        // the base must itself be a partial sum (zeros elsewhere).
        auto e = err(DiagId::ShardingMismatch, {axis});
        e.operand = 0;
        e.suggest = withAxis(ops[0], a, Placement::partial(ReduceOp::Sum));
        e.notes.push_back("`index_add` of rows sharded on `" + axis +
                          "` needs a `partial(sum)` base");
        return fail(e);
      }
      r.placements[a] = Placement::partial(ReduceOp::Sum);
      break;
    case FactorRole::MaxReduced:
      r.placements[a] = Placement::partial(ReduceOp::Max);
      break;
    case FactorRole::MinReduced:
      r.placements[a] = Placement::partial(ReduceOp::Min);
      break;
    case FactorRole::Pinned: {
      // An axis of one device holds the whole dim: nothing moves, and the
      // result is whole on it (replicate).
      if (mesh.axes[a].size == 1) {
        r.placements[a] = Placement::replicate();
        break;
      }
      int d = sig.dimOf(owner, factor);
      auto e = op == Op::Reshape
                   ? err(DiagId::ReshapeSharded, {std::to_string(d), axis})
                   : err(DiagId::ShardedGatherDim, {opName(op), std::to_string(d), axis});
      e.operand = owner;
      e.suggest = withAxis(ops[owner], a, Placement::replicate());
      return fail(e);
    }
    }
  }
  // A dim split by several axes: every operand carrying its factor must split
  // it in the same axis order (their blocks line up only then), and a kept
  // factor's result dim takes that order.
  {
    std::map<int, std::pair<std::vector<int>, int>> order; // factor -> (axes, operand)
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].isHost())
        continue;
      for (int d = 0; d < ops[i].rank(); ++d) {
        auto ax = ops[i].axesShardingDim(d);
        int f = sig.operands[i][d];
        if (ax.size() < 2 || f < 0)
          continue;
        auto it = order.find(f);
        if (it == order.end()) {
          order[f] = {ax, (int)i};
          continue;
        }
        if (it->second.first == ax)
          continue;
        auto names = [&](const std::vector<int> &v) {
          std::string s;
          for (size_t k = 0; k < v.size(); ++k)
            s += (k ? ", " : "") + mesh.axes[v[k]].name;
          return "(" + s + ")";
        };
        auto e = err(contract && sig.roles[f] == FactorRole::Summed ? DiagId::ContractionMismatch
                                                                    : DiagId::ShardingMismatch,
                     contract && sig.roles[f] == FactorRole::Summed
                         ? std::vector<std::string>{displayName(op), mesh.axes[ax[0]].name}
                         : std::vector<std::string>{mesh.axes[ax[0]].name});
        e.notes.push_back("operand " + std::to_string(it->second.second) + " splits dim " +
                          std::to_string(ops[it->second.second].rank() > 0
                                             ? sig.dimOf(it->second.second, f)
                                             : 0) +
                          " over " + names(it->second.first) + " (first axis major), operand " +
                          std::to_string(i) + " over " + names(ax));
        TensorType s = ops[i];
        const auto &want = it->second.first;
        for (size_t k = 0; k < want.size(); ++k)
          s.placements[want[k]].order = (int)k;
        e.operand = (int)i;
        e.suggest = s;
        return fail(e);
      }
    }
    for (int d = 0; d < r.rank(); ++d) {
      auto it = order.find(sig.result[d]);
      if (it == order.end())
        continue;
      const auto &want = it->second.first;
      for (size_t k = 0; k < want.size(); ++k)
        if (r.placements[want[k]].isShard() && r.placements[want[k]].dim == d)
          r.placements[want[k]].order = (int)k;
    }
    canonicalizeShardOrder(r.placements);
  }
  // reshape: a sharded compound dim must split evenly on both sides
  if (op == Op::Reshape) {
    for (int d = 0; d < r.rank(); ++d) {
      auto ax = r.axesShardingDim(d);
      if (ax.empty())
        continue;
      int64_t k = 1;
      for (int a : ax)
        k *= mesh.axes[a].size;
      int inDim = sig.dimOf(0, sig.result[d]);
      const Dim &din = ops[0].shape[inDim], &dout = r.shape[d];
      bool even = !din.isSym() && !dout.isSym() && din.value % k == 0 && dout.value % k == 0;
      if (!even && din != dout) {
        auto e = err(DiagId::ReshapeSharded, {std::to_string(inDim), mesh.axes[ax[0]].name});
        e.notes.push_back("its " + std::to_string(k) + " shards do not split both " + din.str() +
                          " and " + dout.str() + " evenly");
        e.operand = 0;
        TensorType s = ops[0];
        for (int a : ax)
          s.placements[a] = Placement::replicate();
        e.suggest = s;
        return fail(e);
      }
    }
  }
  out.results = {r};
  return out;
}

std::optional<TypeError> checkLayout(const TensorType &t) {
  if (!t.mesh)
    return std::nullopt;
  for (size_t a = 0; a < t.placements.size(); ++a) {
    const Placement &p = t.placements[a];
    if (p.isShard() && (p.dim < 0 || p.dim >= t.rank()))
      return err(DiagId::ShardDimOutOfRange, {std::to_string(p.dim), std::to_string(t.rank())});
  }
  return std::nullopt;
}

namespace {

/// A `broadcast` may shard a dim it creates (the operand has no such dim, or
/// size 1 there) on a mesh axis where the derived result is replicated: each
/// rank fills only its block of a value that is the same everywhere, so no
/// communication is needed. Takes the given result type's shard on such axes
/// (autodiff's `sum` gradient broadcasts straight into the operand's layout).
void shardBroadcastDims(TensorType &r, const TensorType &operand, const TensorType &given) {
  if (r.isHost() || given.isHost() || r.placements.size() != given.placements.size())
    return;
  auto isOne = [](const Dim &d) { return !d.isSym() && d.value == 1; };
  TensorType t = r;
  int extra = r.rank() - operand.rank();
  for (size_t a = 0; a < t.placements.size(); ++a) {
    const Placement &g = given.placements[a];
    if (!t.placements[a].isReplicate() || !g.isShard() || g.dim < 0 || g.dim >= r.rank())
      continue;
    int od = g.dim - extra;
    bool created = od < 0 || (isOne(operand.shape[od]) && !isOne(r.shape[g.dim]));
    if (created && operand.placements[a].isReplicate())
      t.placements[a] = g;
  }
  if (!checkLayout(t))
    r = t;
}

} // namespace

Inferred inferTypes(Op op, const std::vector<TensorType> &ops, const Attrs &attrs,
                    const std::vector<TensorType> &given) {
  Inferred out;
  const OpInfo &info = opInfo(op);
  if (info.numOperands >= 0 && (int)ops.size() != info.numOperands)
    throw InternalError(std::string("`") + info.name + "` built with " +
                        std::to_string(ops.size()) + " operands");
  auto fail = [&](TypeError e) {
    out.error = std::move(e);
    return out;
  };
  auto givenType = [&]() -> const TensorType & {
    if (given.empty())
      throw InternalError(std::string("`") + info.name + "` needs a result type");
    return given[0];
  };

  switch (info.cls) {
  case OpClass::Source: {
    const TensorType &t = givenType();
    if (op == Op::Random && !isFloat(t.dtype))
      return fail(err(DiagId::FloatOnly, {"random", t.str()}));
    if (auto e = checkLayout(t))
      return fail(*e);
    out.results = {t};
    return out;
  }
  case OpClass::Layout: {
    const TensorType &src = ops[0], &dst = givenType();
    if (op == Op::Relayout) {
      if (src.isHost())
        return fail(err(DiagId::RelayoutHost, {}));
      if (dst.isHost() || !(*src.mesh == *dst.mesh))
        return fail(
            err(DiagId::RelayoutMesh, {src.mesh->name, dst.isHost() ? "host" : dst.mesh->name}));
    } else if (op == Op::Distribute) {
      if (!src.isHost())
        return fail(err(DiagId::DistributeNeedsHost, {}));
    } else { // ToHost
      if (src.isHost())
        return fail(err(DiagId::ToHostNeedsDistributed, {}));
      if (src.hasPartial()) {
        auto e = err(DiagId::PartialToHost, {});
        e.operand = 0;
        TensorType s = src;
        for (auto &p : s.placements)
          if (p.isPartial())
            p = Placement::replicate();
        e.suggest = s;
        e.notes.push_back("the value is `" + src.str() + "`");
        return fail(e);
      }
    }
    if (src.shape != dst.shape)
      return fail(
          err(DiagId::ShapeMismatch, {info.name, shapeStr(src.shape), shapeStr(dst.shape)}));
    if (src.dtype != dst.dtype)
      return fail(
          err(DiagId::DTypeMismatch, {info.name, dtypeName(src.dtype), dtypeName(dst.dtype)}));
    if (auto e = checkLayout(dst))
      return fail(*e);
    out.results = {dst};
    return out;
  }
  case OpClass::Effect: {
    if (op == Op::CheckFactor) {
      out.results = {ops[0]};
      return out;
    }
    for (size_t k = 0; k < ops.size(); ++k) { // print, save
      if (ops[k].isHost() || !ops[k].hasPartial())
        continue;
      auto e = err(DiagId::PartialToHost, {});
      e.operand = (int)k;
      TensorType s = ops[k];
      for (auto &p : s.placements)
        if (p.isPartial())
          p = Placement::replicate();
      e.suggest = s;
      e.notes.push_back(std::string("`") +
                        (op == Op::Print            ? "print"
                         : op == Op::SaveCheckpoint ? "save_checkpoint"
                                                    : "save") +
                        "` reads the value to the host; it is `" + ops[k].str() + "`");
      return fail(e);
    }
    return out;
  }
  case OpClass::Collective: { // SPMD IR only: one step of a placement change
    std::string why = checkCollective(op, ops[0], givenType(), attrs.ints, sliceOffset(attrs));
    if (!why.empty())
      return fail(err(DiagId::BadCollective, {why}));
    out.results = {givenType()};
    return out;
  }
  case OpClass::Control:
    throw InternalError("control ops are typed by the IR builder");
  default:
    break;
  }

  MeshRef mesh;
  auto meshErr = checkMeshes(ops, mesh);
  if (meshErr && meshErr->id != DiagId::HostDistributedMix)
    return fail(*meshErr);
  if (auto e = checkDTypes(op, ops))
    return fail(*e);
  std::vector<Shape> shapes;
  for (auto &t : ops)
    shapes.push_back(t.shape);
  const Shape *givenShape =
      (op == Op::Reshape || op == Op::Broadcast) ? &givenType().shape : nullptr;
  ShapeError se;
  auto sig = buildSignature(op, shapes, attrs, givenShape, se);
  if (!sig)
    return fail(err(se.id, se.args));
  if (meshErr) {
    // propose the layout that agrees with the distributed operand
    int owner = 0;
    while (ops[owner].isHost())
      ++owner;
    meshErr->suggest = matchLayout(*sig, ops, owner, meshErr->operand, mesh);
    return fail(*meshErr);
  }
  TensorType base;
  base.dtype = op == Op::Cast ? givenType().dtype : resultDType(op, ops);
  base.shape = sig->resultShape;
  base.mesh = mesh;
  Inferred r = derivePlacements(op, *sig, ops, base);
  // No elements: nothing can move, whatever the shards (`reshape(e, [5, 0])`
  // of an `f32[0, 5] @ m[x, _]`), so the result is whole on every axis.
  if (op == Op::Reshape && !r.ok() && isConcrete(ops[0].shape) && numElements(ops[0].shape) == 0) {
    TensorType t = base;
    t.placements = ops[0].placements;
    for (auto &p : t.placements)
      if (p.isShard())
        p = Placement::replicate();
    r = Inferred{{t}, std::nullopt};
  }
  if (op == Op::Broadcast && r.ok() && !given.empty())
    shardBroadcastDims(r.results[0], ops[0], givenType());
  for (auto &t : r.results)
    canonicalizeShardOrder(t.placements);
  return r;
}

} // namespace dt
