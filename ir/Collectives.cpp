// This file implements the transition and tiling checks and the cost model of
// the collective ops (see Collectives.h).
#include "ir/Collectives.h"

#include <algorithm>
#include <tuple>

namespace dt {

int64_t Box::volume() const {
  int64_t v = 1;
  for (auto s : shape)
    v *= s;
  return v;
}

Box blockBox(const TensorType &t, int64_t meshRank) {
  LocalBlock b = localBlock(t, meshRank);
  return Box{b.offset, b.shape};
}

Box intersect(const Box &a, const Box &b) {
  Box r;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    int64_t lo = std::max(a.offset[d], b.offset[d]);
    int64_t hi = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    r.offset.push_back(lo);
    r.shape.push_back(std::max<int64_t>(0, hi - lo));
  }
  return r;
}

bool contains(const Box &outer, const Box &inner) {
  if (inner.volume() == 0)
    return true;
  for (size_t d = 0; d < outer.shape.size(); ++d)
    if (inner.offset[d] < outer.offset[d] ||
        inner.offset[d] + inner.shape[d] > outer.offset[d] + outer.shape[d])
      return false;
  return true;
}

std::string axesName(const Mesh &mesh, const std::vector<int64_t> &axes) {
  std::string r;
  for (size_t i = 0; i < axes.size(); ++i) {
    bool ok = axes[i] >= 0 && axes[i] < (int64_t)mesh.axes.size();
    r += (i ? ", " : "") + (ok ? mesh.axes[axes[i]].name : std::string("?"));
  }
  return axes.size() == 1 ? r : "(" + r + ")";
}

std::vector<int64_t> axesGroup(const Mesh &mesh, int64_t meshRank,
                               const std::vector<int64_t> &axes) {
  auto c = mesh.coords(meshRank);
  int64_t k = 1;
  for (auto a : axes)
    k *= mesh.axes[a].size;
  std::vector<int64_t> out;
  for (int64_t g = 0; g < k; ++g) {
    int64_t rest = g;
    for (size_t i = axes.size(); i-- > 0;) {
      int64_t n = mesh.axes[axes[i]].size;
      c[axes[i]] = rest % n;
      rest /= n;
    }
    out.push_back(mesh.rankOf(c));
  }
  return out;
}

namespace {

/// True when the non-empty `parts` are disjoint, lie inside `box` and cover it.
/// Near-linear for the grids torch.chunk blocks form: when, in every dim, the
/// distinct intervals of the parts do not overlap, two distinct parts differ
/// in some dim and are therefore disjoint, so disjointness is a duplicate
/// check on sorted parts. Otherwise it falls back to comparing every pair.
bool tiles(const std::vector<Box> &parts, const Box &box) {
  std::vector<const Box *> live;
  const int64_t total = box.volume();
  int64_t sum = 0;
  for (auto &p : parts) {
    int64_t v = p.volume();
    if (v == 0)
      continue;
    if (!contains(box, p))
      return false;
    sum += v; // each part lies inside `box`, whose volume fits int64_t
    if (sum > total)
      return false;
    live.push_back(&p);
  }
  if (sum != total)
    return false;
  auto key = [](const Box *b) { return std::tie(b->offset, b->shape); };
  std::sort(live.begin(), live.end(), [&](auto *a, auto *b) { return key(a) < key(b); });
  for (size_t i = 1; i < live.size(); ++i)
    if (key(live[i]) == key(live[i - 1]))
      return false; // the same block twice overlaps itself
  bool grid = true;
  size_t rank = box.shape.size();
  for (size_t d = 0; d < rank && grid; ++d) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    for (auto *p : live)
      iv.emplace_back(p->offset[d], p->offset[d] + p->shape[d]);
    std::sort(iv.begin(), iv.end());
    iv.erase(std::unique(iv.begin(), iv.end()), iv.end());
    for (size_t i = 1; i < iv.size() && grid; ++i)
      grid = iv[i].first >= iv[i - 1].second;
  }
  if (grid)
    return true;
  for (size_t i = 0; i < live.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (intersect(*live[i], *live[j]).volume() != 0)
        return false;
  return true;
}

/// The smallest box around the non-empty `parts` (volume 0 when all are empty).
Box boundingBox(const std::vector<Box> &parts, size_t rank) {
  Box r{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0)};
  bool any = false;
  std::vector<int64_t> hi(rank, 0);
  for (auto &p : parts) {
    if (p.volume() == 0)
      continue;
    for (size_t d = 0; d < rank; ++d) {
      int64_t lo = any ? std::min(r.offset[d], p.offset[d]) : p.offset[d];
      hi[d] = any ? std::max(hi[d], p.offset[d] + p.shape[d]) : p.offset[d] + p.shape[d];
      r.offset[d] = lo;
    }
    any = true;
  }
  for (size_t d = 0; d < rank && any; ++d)
    r.shape[d] = hi[d] - r.offset[d];
  return r;
}

/// Checks the block arithmetic of a structurally valid step on every rank.
std::string checkTiling(Op op, const TensorType &src, const TensorType &dst,
                        const std::vector<int64_t> &axes) {
  const Mesh &mesh = *src.mesh;
  // The group ops check one group at a time: every member of a group sees the
  // same blocks (the new layout replicates, or the old one is partial, over
  // `axes`), so the group's first rank stands for it. Checking every member
  // against its whole group was cubic in the mesh size.
  bool perGroup = op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    std::vector<Box> olds, news;
    if (perGroup) {
      auto c = mesh.coords(r);
      bool first = true;
      for (auto a : axes)
        first &= c[a] == 0;
      if (!first)
        continue;
      for (auto q : axesGroup(mesh, r, axes)) {
        olds.push_back(blockBox(src, q));
        news.push_back(blockBox(dst, q));
      }
    }
    Box oldB = blockBox(src, r), newB = blockBox(dst, r);
    bool ok = true;
    switch (op) {
    case Op::AllGather:
      ok = tiles(olds, newB);
      break;
    case Op::AllReduce:
    case Op::LocalPartial:
      ok = oldB.offset == newB.offset && oldB.shape == newB.shape;
      break;
    case Op::ReduceScatter:
      for (auto &o : olds)
        ok &= o.offset == oldB.offset && o.shape == oldB.shape;
      ok = ok && tiles(news, oldB);
      break;
    case Op::AllToAll: {
      Box bb = boundingBox(olds, oldB.shape.size());
      ok = tiles(olds, bb) && tiles(news, bb);
      break;
    }
    case Op::LocalSlice:
      ok = contains(oldB, newB);
      break;
    default:
      break;
    }
    if (!ok)
      return "the blocks of mesh rank " + std::to_string(r) + "'s group over " +
             axesName(mesh, axes) + " do not tile (uneven torch.chunk blocks of a different " +
             "axis set); gather over the joint group and slice instead";
  }
  return "";
}

} // namespace

int64_t sliceOffset(const Attrs &a) { return a.floats.empty() ? 0 : (int64_t)a.floats[0]; }

Box shiftedBox(const Box &b, int64_t d, int64_t offset) {
  Box r = b;
  r.offset[d] -= offset;
  return r;
}

namespace {

/// The slice_gather-specific checks (the rest is checkCollective's).
std::string checkSliceGather(const TensorType &src, const TensorType &dst,
                             const std::vector<int64_t> &axes, int64_t offset) {
  const Placement &s0 = src.placements[axes[0]];
  if (!s0.isShard())
    return "`slice_gather` needs an operand sharded on its axes";
  int d = s0.dim;
  if (src.dtype != dst.dtype || src.rank() != dst.rank())
    return "`slice_gather` cannot change the dtype or rank";
  for (int k = 0; k < src.rank(); ++k)
    if (k != d && !(src.shape[k] == dst.shape[k]))
      return "`slice_gather` changes only the size of the dim it cuts";
  std::vector<int> sharding = src.axesShardingDim(d);
  if (sharding.size() != axes.size())
    return "`slice_gather` must run over every axis that shards the dim it cuts";
  for (auto a : axes) {
    const Placement &s = src.placements[a], &t = dst.placements[a];
    if (!s.isShard() || s.dim != d || !(t.isReplicate() || (t.isShard() && t.dim == d)))
      return "`slice_gather` over " + axesName(*src.mesh, axes) + " cannot take `" +
             src.layoutStr() + "` to `" + dst.layoutStr() + "`";
  }
  if (!src.shape[d].isSym() && !dst.shape[d].isSym() &&
      (offset < 0 || offset + dst.shape[d].value > src.shape[d].value))
    return "`slice_gather` rows [" + std::to_string(offset) + ", " +
           std::to_string(offset + dst.shape[d].value) + ") lie outside dim " + std::to_string(d) +
           " of `" + src.str() + "`";
  return "";
}

} // namespace

std::string checkCollective(Op op, const TensorType &src, const TensorType &dst,
                            const std::vector<int64_t> &axes, int64_t offset) {
  std::string name = opName(op);
  if (src.isHost() || dst.isHost())
    return "`" + name + "` needs distributed values";
  if (!(*src.mesh == *dst.mesh))
    return "`" + name + "` cannot change the mesh";
  if (op != Op::SliceGather && (src.dtype != dst.dtype || src.shape != dst.shape))
    return "`" + name + "` cannot change the dtype or shape";
  if (axes.empty())
    return "`" + name + "` needs at least one mesh axis";
  const Mesh &mesh = *src.mesh;
  if (src.placements.size() != mesh.axes.size() || dst.placements.size() != mesh.axes.size())
    return "`" + name + "` needs one placement per mesh axis";
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= (int64_t)mesh.axes.size() || (i && axes[i] <= axes[i - 1]))
      return "`" + name + "` axes must be ascending mesh axis indices";
  // An axis outside the step keeps its placement; its position in a
  // multi-axis group may change with the group's other members (the tiling
  // check below decides whether the blocks still line up).
  for (size_t a = 0; a < mesh.axes.size(); ++a)
    if (std::find(axes.begin(), axes.end(), (int64_t)a) == axes.end() &&
        !src.placements[a].sameKind(dst.placements[a]))
      return "`" + name + "` changes the placement of axis `" + mesh.axes[a].name +
             "`, which it does not run over";
  if (op == Op::SliceGather)
    return checkSliceGather(src, dst, axes, offset);
  using K = Placement::Kind;
  K from = K::Replicate, to = K::Replicate;
  switch (op) {
  case Op::AllGather:
    from = K::Shard, to = K::Replicate;
    break;
  case Op::AllReduce:
    from = K::Partial, to = K::Replicate;
    break;
  case Op::ReduceScatter:
    from = K::Partial, to = K::Shard;
    break;
  case Op::AllToAll:
    from = K::Shard, to = K::Shard;
    break;
  case Op::LocalSlice:
    from = K::Replicate, to = K::Shard;
    break;
  case Op::LocalPartial:
    from = K::Replicate, to = K::Partial;
    break;
  default:
    return "`" + name + "` is not a collective";
  }
  const Placement &s0 = src.placements[axes[0]], &d0 = dst.placements[axes[0]];
  for (auto a : axes) {
    const Placement &s = src.placements[a], &d = dst.placements[a];
    if (s.kind != from || d.kind != to || !s.sameKind(s0) || !d.sameKind(d0))
      return "`" + name + "` over " + axesName(mesh, axes) + " cannot take `" + src.layoutStr() +
             "` to `" + dst.layoutStr() + "`";
  }
  // all_to_all within one dim reorders a multi-axis group (x-major to
  // y-major): every rank's new block comes from other ranks' old ones.
  if (op == Op::AllToAll && s0.dim == d0.dim &&
      src.axesShardingDim(s0.dim) == dst.axesShardingDim(d0.dim))
    return "`all_to_all` must move the shard to another dim or reorder its axes";
  if (!isConcrete(src.shape))
    return "";
  return checkTiling(op, src, dst, axes);
}

int64_t collectiveBytes(Op op, const TensorType &src, const TensorType &dst,
                        const std::vector<int64_t> &axes, int64_t offset) {
  const Mesh &mesh = *src.mesh;
  int64_t k = 1;
  for (auto a : axes)
    k *= mesh.axes[a].size;
  int64_t worst = 0;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    Box o = blockBox(src, r), n = blockBox(dst, r);
    int64_t e = 0;
    switch (op) {
    case Op::AllGather:
      e = n.volume() - o.volume();
      break;
    case Op::AllToAll:
      e = n.volume() - intersect(n, o).volume();
      break;
    case Op::SliceGather:
      e = n.volume() - intersect(n, shiftedBox(o, src.placements[axes[0]].dim, offset)).volume();
      break;
    case Op::ReduceScatter:
      e = (k - 1) * n.volume();
      break;
    case Op::AllReduce:
      e = 2 * (k - 1) * o.volume() / k;
      break;
    default:
      break;
    }
    worst = std::max(worst, e);
  }
  return worst * dtypeSize(src.dtype);
}

} // namespace dt
