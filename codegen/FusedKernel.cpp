// This file implements the global-IR -> kernel-IR bridge (see FusedKernel.h).
#include "codegen/FusedKernel.h"

#include "support/Diagnostics.h"

#include <unordered_map>

namespace dt {

namespace {

KReduce kreduceOf(Op op) {
  switch (op) {
  case Op::ReduceSum:
    return KReduce::Sum;
  case Op::ReduceMax:
    return KReduce::Max;
  case Op::ReduceMin:
    return KReduce::Min;
  default:
    return KReduce::None;
  }
}

std::vector<int64_t> rowMajor(const std::vector<int64_t> &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

/// The stride a local input of global type `t` has along the iteration's
/// last dim (local blocks are row-major): 1 when its last dim runs with the
/// iteration's, 0 when it broadcasts there, -1 when a size-1 local block
/// could make either hold. `along`: the dim it is gathered along, or whose
/// ids it holds (`ids`).
int innerHint(const TensorType &t, const TensorType &it, int along, bool ids) {
  int R = it.rank();
  if (R == 0 || t.rank() == 0 || !isConcrete(t.shape) || it.shape[R - 1].value == 1)
    return -1;
  if (ids)
    return along == R - 1 ? 1 : 0;
  if (along == R - 1)
    return -1; // the gather's own index
  int64_t last = t.shape.back().value;
  return last == it.shape[R - 1].value ? 1 : last == 1 ? 0 : -1;
}

} // namespace

FusedKernel buildFusedKernel(const Function &f) {
  auto fail = [&](const std::string &why) -> InternalError {
    return InternalError("fused kernel `@" + f.name + "`: " + why);
  };
  if (f.results.empty() || f.body.insts.empty() || f.body.insts.back().op != Op::Return ||
      f.body.insts.back().operands.size() != f.results.size())
    throw fail("must return its results");
  FusedKernel fk;
  Kernel &k = fk.kernel;
  k.name = f.name;
  for (char &c : k.name)
    if (c == '.')
      c = '_';
  fk.resultTypes = f.results;
  const Inst *reduce = nullptr;
  size_t n = f.body.insts.size() - 1;
  if (n > 0 && opInfo(f.body.insts[n - 1].op).cls == OpClass::Reduce)
    reduce = &f.body.insts[n - 1];
  if (reduce && f.results.size() != 1)
    throw fail("a reduction kernel has one result");
  // An index_add member: its source's type is the iteration type, its result
  // one of the kernel's.
  const Inst *scatter = nullptr;
  for (size_t i = 0; i < n; ++i)
    if (f.body.insts[i].op == Op::IndexAdd) {
      if (scatter || reduce)
        throw fail("an `index_add` member is the only one, in a kernel without a reduction");
      scatter = &f.body.insts[i];
    }
  const Inst &ret = f.body.insts.back();
  int scatterResult = -1;
  if (scatter)
    for (size_t r = 0; r < ret.operands.size(); ++r)
      if (ret.operands[r] == scatter->results.at(0))
        scatterResult = (int)r;
  if (scatter && scatterResult < 0)
    throw fail("an `index_add` member's result must be returned");
  fk.iterType = reduce    ? f.type(reduce->operands.at(0))
                : scatter ? f.type(scatter->operands.at(2))
                          : f.results[0];
  for (size_t r = 0; r < f.results.size(); ++r) {
    const TensorType &t = f.results[r];
    if (!reduce && (int)r != scatterResult &&
        (t.shape != fk.iterType.shape || t.placements != fk.iterType.placements))
      throw fail("a result of type `" + t.str() + "` is not the iteration type `" +
                 fk.iterType.str() + "`");
  }
  if (!isConcrete(fk.iterType.shape))
    throw fail("has a symbolic iteration shape");
  k.rank = fk.iterType.rank();
  // index_select members: their sources are read only through `gather`
  // nodes (no load: a load at the point's own index could fall outside the
  // source), their ids run along the gathered dim.
  std::unordered_map<int, int> gatherSrc, gatherIds; // param -> dim
  for (size_t i = 0; i + 1 < f.body.insts.size(); ++i) {
    const Inst &in = f.body.insts[i];
    if (in.op != Op::IndexSelect)
      continue;
    int d = (int)in.attrs.ints.at(0);
    if (f.type(in.results.at(0)).rank() != k.rank || f.type(in.operands.at(1)).rank() != 1)
      throw fail("an `index_select` member must have the iteration rank and rank-1 ids");
    gatherSrc[in.operands.at(0)] = d;
    gatherIds[in.operands.at(1)] = d;
  }
  // The scatter's ids run along its dim as a gather's do; its base is never
  // read by the kernel.
  int scatterBase = -1;
  if (scatter) {
    int d = (int)scatter->attrs.ints.at(0);
    const TensorType &x = f.type(scatter->operands.at(2)), &b = f.type(scatter->operands.at(0));
    if (d != 0 || b.rank() != k.rank || f.type(scatter->operands.at(1)).rank() != 1 ||
        (x.dtype != DType::F32 && x.dtype != DType::F64) || b.dtype != x.dtype)
      throw fail("an `index_add` member adds f32/f64 rows along dim 0 with rank-1 ids");
    auto g = gatherIds.find(scatter->operands.at(1));
    if (g != gatherIds.end() && g->second != d)
      throw fail("one ids value runs along two dims");
    gatherIds[scatter->operands.at(1)] = d;
    scatterBase = scatter->operands.at(0);
    if (gatherSrc.count(scatterBase) || gatherIds.count(scatterBase))
      throw fail("an `index_add` member's base is read by the kernel");
  }
  std::unordered_map<int, int> node, input;
  for (int p : f.params) {
    // A rank-0 input reads one element everywhere: uniform (hoistable).
    int in = k.addInput(f.type(p).dtype, f.type(p).rank() == 0 && k.rank > 0);
    input[p] = in;
    auto s = gatherSrc.find(p), i = gatherIds.find(p);
    if (s != gatherSrc.end() && i != gatherIds.end())
      throw fail("a value is both the source and the ids of a gather");
    int along = s != gatherSrc.end() ? s->second : i != gatherIds.end() ? i->second : -1;
    if (s == gatherSrc.end() && p != scatterBase)
      node[p] = k.load(in);
    k.innerStrideHints.push_back(
        p == scatterBase ? -1 : innerHint(f.type(p), fk.iterType, along, i != gatherIds.end()));
  }
  auto arg = [&](const Inst &in, size_t i) {
    auto it = node.find(in.operands.at(i));
    if (it == node.end())
      throw fail("operand %" + std::to_string(in.operands[i]) + " is not computed in the kernel");
    return it->second;
  };
  for (size_t i = 0; i < n; ++i) {
    const Inst &in = f.body.insts[i];
    if (&in == reduce)
      break;
    if (in.results.size() != 1)
      throw fail(std::string("`") + opName(in.op) + "` must have one result");
    const TensorType &rt = f.type(in.results[0]);
    int x = -1;
    if (in.op == Op::Broadcast) { // the operand's load already broadcasts
      node[in.results[0]] = arg(in, 0);
      continue;
    }
    if (&in == scatter)
      continue; // stored below
    if (in.op == Op::IndexSelect) {
      auto src = input.find(in.operands.at(0)), ids = input.find(in.operands.at(1));
      if (src == input.end() || ids == input.end())
        throw fail("an `index_select` member must read inputs");
      int d = (int)in.attrs.ints.at(0);
      x = k.gather(src->second, arg(in, 1), d);
      fk.gathers.push_back({src->second, ids->second, d, in.loc});
      node[in.results[0]] = x;
      continue;
    }
    switch (opInfo(in.op).cls) {
    case OpClass::Elementwise1:
      x = in.op == Op::Cast ? k.cast(arg(in, 0), rt.dtype) : k.unary(*kopFromOp(in.op), arg(in, 0));
      break;
    case OpClass::Elementwise2:
      x = k.binary(*kopFromOp(in.op), arg(in, 0), arg(in, 1));
      break;
    case OpClass::Elementwise3:
      x = k.select(arg(in, 0), arg(in, 1), arg(in, 2));
      break;
    case OpClass::Source:
      if (in.op == Op::Random) {
        RandomKind kind = in.attrs.str == "normal" ? RandomKind::Normal : RandomKind::Uniform;
        x = in.operands.size() == 1 // a run-time seed
                ? k.randomSeeded(kind, arg(in, 0), rt.dtype)
                : k.random(kind, (uint64_t)in.attrs.ints.at(0), rt.dtype);
      } else if (in.op == Op::Iota && rt.dtype == DType::Bool) // iota is numeric: index != 0
        x = k.cast(k.iota((int)in.attrs.ints.at(0) + k.rank - rt.rank(), DType::I64), rt.dtype);
      else if (in.op == Op::Iota)
        x = k.iota((int)in.attrs.ints.at(0) + k.rank - rt.rank(), rt.dtype);
      else if (constCount(in.attrs, rt.dtype) == 1)
        x = constInInts(rt.dtype) ? k.constantInt(in.attrs.ints[0], rt.dtype)
                                  : k.constant(in.attrs.floats[0], rt.dtype);
      else
        throw fail("a `const` with data cannot be fused");
      break;
    default:
      throw fail(std::string("`") + opName(in.op) + "` is not a kernel op");
    }
    if (k.nodes[x].dtype != rt.dtype)
      throw fail(std::string("`") + opName(in.op) + "` computes " + dtypeName(k.nodes[x].dtype) +
                 " but the IR says " + dtypeName(rt.dtype));
    node[in.results[0]] = x;
  }
  if (reduce) {
    k.store(k.addOutput(f.results[0].dtype), arg(*reduce, 0));
    std::vector<int> dims(reduce->attrs.ints.begin(), reduce->attrs.ints.end());
    k.setReduce(kreduceOf(reduce->op), dims);
  } else {
    for (size_t r = 0; r < f.results.size(); ++r) {
      int o = k.addOutput(f.results[r].dtype);
      if ((int)r != scatterResult) {
        k.store(o, arg(ret, r));
        continue;
      }
      int d = (int)scatter->attrs.ints.at(0);
      k.scatterStore(o, arg(*scatter, 2), arg(*scatter, 1), d);
      fk.scatter = KernelScatter{o, input.at(scatter->operands[0]), input.at(scatter->operands[1]),
                                 d, scatter->loc};
    }
  }
  std::string err = verifyKernel(k);
  if (!err.empty())
    throw fail(err);
  return fk;
}

std::optional<SliceKernel> sliceKernel(const FusedKernel &fk) {
  const Kernel &k = fk.kernel;
  if (fk.gathers.empty() || fk.scatter)
    return std::nullopt;
  SliceKernel sk;
  Kernel &s = sk.kernel;
  s = k;
  s.name += "_slice";
  for (int i = 0; i < (int)k.inputs.size(); ++i)
    sk.inputOf.push_back(i);
  std::vector<bool> taken(k.inputs.size(), false);
  size_t gi = 0; // the gather nodes are fk.gathers, in order
  for (KNode &n : s.nodes) {
    if (n.op != KOp::Gather)
      continue;
    if (gi == fk.gathers.size() || fk.gathers[gi].src != n.index || fk.gathers[gi].dim != n.dim)
      return std::nullopt;
    int in = n.index;
    if (taken[n.index]) { // another gather of this source: its own input
      in = s.addInput(k.inputs[n.index]);
      s.innerStrideHints.resize(s.inputs.size(), -1);
      s.innerStrideHints[in] = k.innerStrideHint(n.index);
      sk.inputOf.push_back(n.index);
    }
    taken[n.index] = true;
    sk.gatherInput.push_back(in);
    n.op = KOp::Load;
    n.index = in;
    n.args = {-1, -1, -1};
    n.dim = 0;
    ++gi;
  }
  if (gi != fk.gathers.size())
    return std::nullopt;
  // Keep what a store reads; renumber the kept nodes in order.
  std::vector<char> live(s.nodes.size(), 0);
  for (const KStore &st : s.stores) {
    live[st.node] = 1;
    if (st.key >= 0)
      live[st.key] = 1;
  }
  for (size_t i = s.nodes.size(); i-- > 0;)
    if (live[i])
      for (int a = 0; a < nodeArity(s.nodes[i]); ++a)
        live[s.nodes[i].args[a]] = 1;
  std::vector<int> renum(s.nodes.size(), -1);
  std::vector<KNode> kept;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    if (!live[i])
      continue;
    KNode n = s.nodes[i];
    for (int a = 0; a < nodeArity(n); ++a)
      n.args[a] = renum[n.args[a]];
    renum[i] = (int)kept.size();
    kept.push_back(n);
  }
  s.nodes = std::move(kept);
  for (KStore &st : s.stores) {
    st.node = renum[st.node];
    if (st.key >= 0)
      st.key = renum[st.key];
  }
  if (usesGlobalIndex(s) != usesGlobalIndex(k) || !verifyKernel(s).empty())
    return std::nullopt; // the params would not line up
  return sk;
}

std::vector<int64_t> sliceParams(const SliceKernel &sk, const Kernel &k,
                                 const std::vector<int64_t> &params) {
  const int64_t R = k.rank, nIn = (int64_t)k.inputs.size();
  std::vector<int64_t> p(params.begin(), params.begin() + R); // the shape
  for (int src : sk.inputOf)
    p.insert(p.end(), params.begin() + R * (1 + src), params.begin() + R * (2 + src));
  p.insert(p.end(), params.begin() + R * (1 + nIn), params.end()); // outputs, global
  return p;
}

FusedLaunch fusedLaunch(const FusedKernel &fk, const std::vector<std::vector<int64_t>> &inShapes,
                        int64_t meshRank) {
  const TensorType &it = fk.iterType;
  const Kernel &k = fk.kernel;
  LocalBlock blk = it.isHost() || meshRank < 0
                       ? localBlock(TensorType{it.dtype, it.shape, nullptr, {}}, 0)
                       : localBlock(it, meshRank);
  const std::vector<int64_t> &shape = blk.shape;
  int R = k.rank;
  if (inShapes.size() != k.inputs.size())
    throw InternalError("fused kernel `" + k.name + "`: wrong number of inputs");
  std::vector<std::vector<int64_t>> inSt, outSt;
  for (size_t i = 0; i < inShapes.size(); ++i) {
    const std::vector<int64_t> &s = inShapes[i];
    int r = (int)s.size();
    if (r > R)
      throw InternalError("fused kernel `" + k.name + "`: input of rank " + std::to_string(r) +
                          " in a rank-" + std::to_string(R) + " iteration space");
    auto rm = rowMajor(s);
    std::vector<int64_t> st(R, 0);
    // A gather's source has its own extent along the gathered dim; its
    // rank-1 ids run along that dim.
    int along = -1;
    bool ids = false;
    for (const KernelGather &g : fk.gathers)
      if (g.src == (int)i || g.ids == (int)i) {
        along = g.dim;
        ids = g.ids == (int)i;
      }
    if (fk.scatter && fk.scatter->ids == (int)i) {
      along = fk.scatter->dim;
      ids = true;
    }
    if (fk.scatter && fk.scatter->base == (int)i) { // never read: no strides
      inSt.push_back(std::vector<int64_t>(R, 0));
      continue;
    }
    if (ids) { // rank-1 ids of a gather along dim `along`
      if (s[0] != shape[along])
        throw InternalError("fused kernel `" + k.name + "`: " + std::to_string(s[0]) +
                            " ids for a dim of size " + std::to_string(shape[along]));
      st[along] = shape[along] == 1 ? 0 : 1;
      inSt.push_back(std::move(st));
      continue;
    }
    if (along >= 0 && r != R)
      throw InternalError("fused kernel `" + k.name + "`: a gather source of rank " +
                          std::to_string(r) + " in a rank-" + std::to_string(R) +
                          " iteration space");
    for (int j = 0; j < r; ++j) {
      int d = j + R - r;
      if (d == along) // a gather source: its own extent and stride along d
        st[d] = rm[j];
      else if (s[j] == shape[d])
        st[d] = s[j] == 1 ? 0 : rm[j];
      else if (s[j] != 1)
        throw InternalError("fused kernel `" + k.name + "`: a local input of size " +
                            std::to_string(s[j]) + " in a dim of size " + std::to_string(shape[d]));
    }
    inSt.push_back(std::move(st));
  }
  FusedLaunch l;
  std::vector<int64_t> ost(R, 0);
  for (int d = 0; d < R; ++d)
    if (!isReducedDim(k, d))
      l.outShape.push_back(shape[d]);
  auto orm = rowMajor(l.outShape);
  for (int d = 0, o = 0; d < R; ++d)
    if (!isReducedDim(k, d))
      ost[d] = orm[o++];
  outSt.assign(k.outputs.size(), ost); // every output has the iteration block's shape
  if (fk.scatter) { // but the scatter's: base's local block, its own extent along dim
    const std::vector<int64_t> &bs = inShapes.at(fk.scatter->base);
    if ((int)bs.size() != R)
      throw InternalError("fused kernel `" + k.name + "`: an index_add base of rank " +
                          std::to_string(bs.size()));
    for (int d = 0; d < R; ++d)
      if (d != fk.scatter->dim && bs[d] != shape[d])
        throw InternalError("fused kernel `" + k.name + "`: an index_add base of size " +
                            std::to_string(bs[d]) + " in a dim of size " +
                            std::to_string(shape[d]));
    l.scatterShape = bs;
    outSt[fk.scatter->output] = rowMajor(bs);
  }
  l.iterations = 1;
  for (auto s : shape)
    l.iterations *= s;
  std::vector<int64_t> goff, gst;
  if (usesGlobalIndex(k)) {
    goff = blk.offset;
    gst = rowMajor(concreteDims(it.shape));
  }
  l.params = kernelParams(k, shape, inSt, outSt, goff, gst);
  return l;
}

} // namespace dt
