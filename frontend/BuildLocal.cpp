// This file implements `to_local(x)` and `from_local(blocks..., layout)`:
// a distributed value unpacked into one host value per mesh rank (its block)
// and built back from such blocks (seed 000's unpack/pack, PyTorch's
// `DTensor.to_local` / `from_local`). Both are compositions of existing ops
// (`to_host` and slices; index_add into a filled host tensor, `distribute`
// and a local relayout to `partial`), so every backend, the reference
// evaluator and autodiff handle them with no rule of their own. The block of
// a rank is localBlock() of the layout (ir/Types.h): the one block rule of
// the compiler, multi-axis order included.
#include "frontend/BuildIR.h"
#include "frontend/SliceOps.h"

#include <algorithm>

namespace dt {

using namespace slice;

namespace {

std::string shapeText(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

} // namespace

EV IRBuilder::localBuiltin(const std::string &name, const ast::Expr &e) {
  if (name == "to_local") {
    if (e.args.size() != 1 || !e.kwargs.empty()) {
      diags().error(DiagId::ArgCount, e.loc, {name, "1", std::to_string(e.args.size())});
      return EV::bad();
    }
    EV x = expr(*e.args[0]);
    if (!x.single())
      return x.poison ? x : (diags().error<DiagId::NeedsTensor>(e.args[0]->loc, name), EV::bad());
    const TensorType t = typeOf(x.ids[0]);
    if (t.isHost()) {
      diags().error<DiagId::ToLocalNeedsDistributed>(e.args[0]->loc).hint =
          "`to_local` unpacks a distributed value into its per-rank blocks";
      return EV::bad();
    }
    for (int64_t d = 0; d < t.rank(); ++d)
      if (knownSize(*this, t, d, name, e.loc) < 0)
        return EV::bad();
    // A partial value's per-rank parts are not defined by its global value
    // (any split of the sum is the same value), so it has no blocks to show.
    EV whole = emit(Op::ToHost, {x}, {e.args[0].get()}, e.loc, {},
                    {TensorType{t.dtype, t.shape, nullptr, {}}});
    if (whole.poison)
      return whole;
    EV out;
    for (int64_t r = 0; r < t.mesh->size(); ++r) {
      LocalBlock b = localBlock(t, r);
      EV piece = whole;
      for (int64_t d = 0; d < t.rank() && !piece.poison; ++d)
        piece = pick(*this, piece, d, range(b.offset[d], b.shape[d]), e.args[0].get(), e.loc);
      if (piece.poison)
        return piece;
      out.ids.push_back(piece.ids[0]);
    }
    return out;
  }

  // from_local(b0, b1, ..., layout): the last argument is the layout.
  if (e.args.size() < 2 || !e.kwargs.empty()) {
    auto &d = diags().error(DiagId::FromLocalArgs, e.loc, {});
    d.hint = "write `from_local(b0, b1, ..., m[x, _])` (a tuple counts as its values)";
    return EV::bad();
  }
  const ast::Expr &l = *e.args.back();
  const ast::LayoutSpec *spec = l.kind == ast::Expr::Layout      ? l.layout.get()
                                : l.kind == ast::Expr::Subscript ? subscriptLayout(l)
                                                                 : nullptr;
  if (!spec) {
    diags().error<DiagId::FromLocalArgs>(l.loc).hint =
        "the last argument states the layout the blocks come from: `from_local(b0, b1, m[x])`";
    return EV::bad();
  }
  std::vector<EV> xs;
  std::vector<const ast::Expr *> exs;
  for (size_t i = 0; i + 1 < e.args.size(); ++i) {
    EV v = expr(*e.args[i]);
    if (v.poison)
      return v;
    if (v.literal || v.hasStruct()) {
      diags().error<DiagId::NeedsTensor>(e.args[i]->loc, name);
      return EV::bad();
    }
    for (int id : v.ids) {
      xs.push_back(EV::one(id));
      exs.push_back(e.args[i].get());
    }
  }
  const TensorType t0 = typeOf(xs[0].ids[0]);
  for (size_t k = 0; k < xs.size(); ++k) {
    const TensorType t = typeOf(xs[k].ids[0]);
    if (!t.isHost()) {
      auto &d = diags().error(DiagId::LocalBlockNotHost, exs[k]->loc, {std::to_string(k), t.str()});
      d.hint = "pass host values (`to_host`, `load`, literals), one per rank";
      return EV::bad();
    }
    for (int64_t d = 0; d < t.rank(); ++d)
      if (knownSize(*this, t, d, name, exs[k]->loc) < 0)
        return EV::bad();
    if (t.dtype != t0.dtype || t.rank() != t0.rank()) {
      auto &dg = diags().error(DiagId::JoinMismatch, exs[k]->loc,
                               {name, t.dtype != t0.dtype ? "dtype" : "rank", t0.str(), t.str()});
      dg.notes.push_back("block 0 is `" + t0.str() + "`, block " + std::to_string(k) + " `" +
                         t.str() + "`");
      return EV::bad();
    }
  }
  // The layout with the blocks' rank (and a provisional shape) tells the
  // groups; the global shape follows from the blocks along each group.
  auto lay = applyLayout(*spec, t0.dtype, t0.shape);
  if (!lay)
    return EV::bad();
  const Mesh &mesh = *lay->mesh;
  const int64_t nranks = mesh.size();
  if ((int64_t)xs.size() != nranks) {
    auto &d = diags().error(DiagId::LocalBlockCount, e.loc,
                            {mesh.name, std::to_string(nranks), std::to_string(xs.size())});
    d.hint =
        "one block per rank, in rank order (row-major over the mesh axes `" + mesh.str() + "`)";
    return EV::bad();
  }
  auto blockShape = [&](int64_t r) { return concreteDims(typeOf(xs[r].ids[0]).shape); };
  TensorType g = *lay;
  for (int d = 0; d < g.rank(); ++d) {
    auto ax = g.axesShardingDim(d);
    if (ax.empty())
      continue;
    // the blocks along the group (major first), every other coordinate 0
    int64_t k = 1;
    for (int a : ax)
      k *= mesh.axes[a].size;
    int64_t n = 0;
    for (int64_t i = 0; i < k; ++i) {
      std::vector<int64_t> c(mesh.axes.size(), 0);
      int64_t rest = i;
      for (size_t j = ax.size(); j-- > 0;) {
        c[ax[j]] = rest % mesh.axes[ax[j]].size;
        rest /= mesh.axes[ax[j]].size;
      }
      n += blockShape(mesh.rankOf(c))[d];
    }
    g.shape[d] = Dim::lit(n);
  }
  for (int64_t r = 0; r < nranks; ++r) {
    auto want = localBlock(g, r).shape;
    auto got = blockShape(r);
    if (want != got) {
      auto &d = diags().error(DiagId::LocalBlockShape, exs[r]->loc,
                              {std::to_string(r), shapeText(got), g.str(), shapeText(want)});
      d.hint = "a dim of size n split k ways has blocks of ceil(n / k) elements, the trailing "
               "ones smaller or empty (torch.chunk), in the order of the layout's axes";
      return EV::bad();
    }
  }
  // partial axes: the true value is `op` over their ranks
  std::vector<int> partialAxes;
  ReduceOp rop = ReduceOp::Sum;
  for (size_t a = 0; a < g.placements.size(); ++a)
    if (g.placements[a].isPartial()) {
      if (!partialAxes.empty() && g.placements[a].op != rop) {
        diags().error(DiagId::LocalPartialOps, l.loc, {});
        return EV::bad();
      }
      rop = g.placements[a].op;
      partialAxes.push_back((int)a);
    }
  if (!partialAxes.empty() && ((rop == ReduceOp::Avg && !isFloat(g.dtype)) ||
                               (rop == ReduceOp::Sum && g.dtype == DType::Bool))) {
    diags().error(DiagId::LocalPartialDType, l.loc,
                  {std::string("partial(") + reduceOpName(rop) + ")", dtypeName(g.dtype)});
    return EV::bad();
  }
  // The global host value: each distinct block (coordinate 0 on every axis
  // that neither shards it nor is partial: ranks that replicate a block hold
  // the same values) combined over the partial axes, then added at its offset
  // into a tensor filled with -0.0 (0 for integers), which keeps every float
  // bit pattern.
  TensorType host{g.dtype, g.shape, nullptr, {}};
  EV fill;
  fill.literal = true;
  fill.isInt = !isFloat(g.dtype);
  fill.isBool = g.dtype == DType::Bool;
  fill.number = isFloat(g.dtype) ? -0.0 : 0;
  EV acc = emit(Op::Fill, {}, {}, e.loc, constAttrs(fill, g.dtype), {host});
  const auto gshape = concreteDims(g.shape);
  for (int64_t r = 0; r < nranks && !acc.poison; ++r) {
    auto c = mesh.coords(r);
    bool lead = true;
    for (size_t a = 0; a < c.size(); ++a)
      lead &= g.placements[a].isShard() || c[a] == 0;
    if (!lead)
      continue;
    EV blk = xs[r];
    int64_t kp = 1;
    for (int a : partialAxes)
      kp *= mesh.axes[a].size;
    for (int64_t i = 1; i < kp && !blk.poison; ++i) {
      auto cq = c;
      int64_t rest = i;
      for (size_t j = partialAxes.size(); j-- > 0;) {
        cq[partialAxes[j]] = rest % mesh.axes[partialAxes[j]].size;
        rest /= mesh.axes[partialAxes[j]].size;
      }
      int64_t q = mesh.rankOf(cq);
      Op op = rop == ReduceOp::Max ? Op::Maximum : rop == ReduceOp::Min ? Op::Minimum : Op::Add;
      blk = emit(op, {blk, xs[q]}, {exs[r], exs[q]}, e.loc);
    }
    if (rop == ReduceOp::Avg && kp > 1 && !blk.poison) {
      EV kv;
      kv.literal = true;
      kv.number = (double)kp;
      blk = emit(Op::Div, {blk, EV::one(materialize(kv, typeOf(blk.ids[0]), e.loc))},
                 {exs[r], nullptr}, e.loc);
    }
    LocalBlock lb = localBlock(g, r);
    if (numElements(Shape(g.shape)) > 0 &&
        std::find(lb.shape.begin(), lb.shape.end(), 0) != lb.shape.end())
      continue; // an empty block adds nothing
    // widen the block to the global size along every dim but the first,
    // then add its rows into the accumulator
    for (int64_t d = g.rank() - 1; d >= 0 && !blk.poison; --d) {
      bool whole = lb.shape[d] == gshape[d];
      if (whole && d > 0)
        continue;
      TensorType bt = typeOf(blk.ids[0]);
      Attrs a;
      a.ints = {d};
      EV ids = idConst(*this, range(lb.offset[d], lb.shape[d]), bt, e.loc);
      if (d == 0) {
        acc = emit(Op::IndexAdd, {acc, ids, blk}, {nullptr, nullptr, exs[r]}, e.loc, a);
        break;
      }
      bt.shape[d] = Dim::lit(gshape[d]);
      EV z = emit(Op::Fill, {}, {}, e.loc, constAttrs(fill, g.dtype), {bt});
      blk = emit(Op::IndexAdd, {z, ids, blk}, {nullptr, nullptr, exs[r]}, e.loc, a);
    }
    if (g.rank() == 0 && !blk.poison)
      acc = blk; // a scalar: the one block is the value
  }
  if (acc.poison)
    return acc;
  TensorType dense = g;
  for (auto &p : dense.placements)
    if (p.isPartial())
      p = Placement::replicate();
  EV v = emit(Op::Distribute, {acc}, {&e}, e.loc, {}, {dense});
  if (v.poison || partialAxes.empty())
    return v;
  return emit(Op::Relayout, {v}, {&e}, e.loc, {}, {g});
}

} // namespace dt
