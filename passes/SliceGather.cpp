// This file implements the slice pattern of SPMD lowering (see SliceGather.h).
#include "passes/SliceGather.h"

#include <algorithm>

namespace dt {

void SliceGatherFacts::scan(const Block &b) {
  for (auto &in : b.insts) {
    for (int o : in.operands)
      ++uses[o];
    if (in.op == Op::Const && in.results.size() == 1 && in.operands.empty())
      intConsts[in.results[0]] = in.attrs.ints;
    for (auto &r : in.regions)
      scan(r);
  }
}

namespace {

/// The only later instruction of `b` (after `i`) that reads `v`, if `v` has
/// exactly one use and it is there.
const Inst *soleUser(const Block &b, size_t i, int v, const SliceGatherFacts &facts) {
  auto u = facts.uses.find(v);
  if (u == facts.uses.end() || u->second != 1)
    return nullptr;
  for (size_t j = i + 1; j < b.insts.size(); ++j)
    for (int o : b.insts[j].operands)
      if (o == v)
        return &b.insts[j];
  return nullptr; // read inside a region or by a terminator elsewhere
}

/// `a` and `b` have equal placements on every axis outside `axes`.
bool sameOutside(const TensorType &a, const TensorType &b, const std::vector<int64_t> &axes) {
  for (size_t k = 0; k < a.placements.size(); ++k)
    if (std::find(axes.begin(), axes.end(), (int64_t)k) == axes.end() &&
        !(a.placements[k] == b.placements[k]))
      return false;
  return true;
}

} // namespace

std::optional<SliceGatherMatch> matchSliceGather(const Function &f, const Block &b, size_t i,
                                                 const SliceGatherFacts &facts) {
  const Inst &rel = b.insts[i];
  if (rel.op != Op::Relayout || rel.operands.size() != 1 || rel.results.size() != 1)
    return std::nullopt;
  const TensorType &from = f.type(rel.operands[0]), &to = f.type(rel.results[0]);
  if (from.isHost() || to.isHost() || !isConcrete(from.shape) || from.hasPartial())
    return std::nullopt;
  const Inst *sel = soleUser(b, i, rel.results[0], facts);
  if (!sel || sel->op != Op::IndexSelect || sel->operands[0] != rel.results[0] ||
      sel->attrs.ints.size() != 1)
    return std::nullopt;
  SliceGatherMatch m;
  m.dim = sel->attrs.ints[0];
  m.select = sel->results[0];
  for (int a : from.axesShardingDim((int)m.dim))
    m.axes.push_back(a);
  std::sort(m.axes.begin(), m.axes.end());
  if (m.axes.empty() || !sameOutside(from, to, m.axes))
    return std::nullopt;
  for (auto a : m.axes)
    if (!to.placements[a].isReplicate())
      return std::nullopt;
  auto c = facts.intConsts.find(sel->operands[1]);
  if (c == facts.intConsts.end())
    return std::nullopt;
  const std::vector<int64_t> &ids = c->second;
  const int64_t n = from.shape[m.dim].value;
  m.count = (int64_t)ids.size();
  if (f.type(sel->operands[1]).rank() != 1 || f.type(sel->operands[1]).shape[0].value != m.count)
    return std::nullopt; // a splat constant
  m.lo = m.count ? ids[0] : 0;
  m.step = m.count > 1 ? ids[1] - ids[0] : 1;
  if (m.step < 1 || m.lo < 0)
    return std::nullopt;
  for (int64_t k = 0; k < m.count; ++k)
    if (ids[k] != m.lo + k * m.step || ids[k] >= n)
      return std::nullopt;
  if (m.step == 1) {
    const Inst *re = soleUser(b, i, m.select, facts);
    if (re && re->op == Op::Relayout) {
      const TensorType &zt = f.type(m.select), &rt = f.type(re->results[0]);
      bool fuse = !rt.isHost() && sameOutside(zt, rt, m.axes) && zt.shape == rt.shape;
      for (auto a : m.axes)
        fuse &= rt.placements[a].isShard() && rt.placements[a].dim == m.dim;
      if (fuse)
        m.reshard = re->results[0];
    }
  }
  return m;
}

} // namespace dt
