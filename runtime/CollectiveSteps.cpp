// This file implements the per-rank collective steps (see CollectiveSteps.h).
#include "runtime/CollectiveSteps.h"

#include "runtime/BlasDeterministic.h"

#include "ir/Collectives.h"
#include "support/Diagnostics.h"

#include <functional>
#include <set>

namespace dt {

namespace {

std::vector<int64_t> minus(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> r(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    r[i] = a[i] - b[i];
  return r;
}

/// Copies the global box `region` out of `block` (whose global box is `at`)
/// into the flat buffer `dst`.
void pack(Device &dev, const HostTensor &block, const Box &at, const Box &region, char *dst) {
  dev.copyRegion(block.raw(), block.shape, minus(region.offset, at.offset), dst, region.shape,
                 std::vector<int64_t>(region.shape.size(), 0), region.shape,
                 dtypeSize(block.dtype));
}

/// Copies the flat `src` holding the global box `region` into `block` (global box `at`).
void unpack(Device &dev, const char *src, const Box &region, HostTensor &block, const Box &at) {
  dev.copyRegion(src, region.shape, std::vector<int64_t>(region.shape.size(), 0), block.raw(),
                 block.shape, minus(region.offset, at.offset), region.shape,
                 dtypeSize(block.dtype));
}

/// True when the non-empty `parts`, in order, are consecutive slabs of `box`
/// along dim 0 (full extent in every other dim): their concatenation is `box`
/// in row-major order.
bool concatenates(const std::vector<Box> &parts, const Box &box) {
  if (box.shape.empty())
    return false;
  int64_t next = box.offset[0];
  for (auto &p : parts) {
    if (p.volume() == 0)
      continue;
    if (p.offset[0] != next)
      return false;
    for (size_t d = 1; d < box.shape.size(); ++d)
      if (p.offset[d] != box.offset[d] || p.shape[d] != box.shape[d])
        return false;
    next += p.shape[0];
  }
  return next == box.offset[0] + box.shape[0];
}

/// Deterministic mode's distributed contraction (passes/SpmdLower.cpp,
/// distributeContraction): the group's first `g` members each hold the node
/// of their subtree of the fixed contraction order; every member gathers the
/// nodes and combines them in the tree's order (runtime/BlasDeterministic.h),
/// so all get the one-device bits. Members past `g` hold no leaves.
HostTensor treeAllReduce(Device &dev, Communicator &comm, const HostTensor &block, int64_t g,
                         size_t members, int me) {
  const int64_t count = block.numel(), es = dtypeSize(block.dtype);
  if (block.dtype != DType::F32 && block.dtype != DType::F64)
    throw InternalError("executor: `all_reduce` in tree order of a " +
                        std::string(dtypeName(block.dtype)) + " value");
  if (g < 1 || g > (int64_t)members)
    throw InternalError("executor: `all_reduce` in tree order over " + std::to_string(g) + " of " +
                        std::to_string(members) + " ranks");
  // Shaped as a reduce-scatter and an all-gather: member r combines slice r
  // of the elements (the tree is elementwise, so the bits are those of a
  // whole combination), receiving that slice of each of the g nodes; the
  // all-gather then spreads the slices. Each rank moves about 2x the value
  // instead of g x, and combines 1/members of it.
  const int64_t n = (int64_t)members;
  std::vector<int64_t> lens(members), sendCounts(members, 0), recvCounts(members, 0);
  for (int64_t r = 0; r < n; ++r)
    lens[r] = count * (r + 1) / n - count * r / n;
  for (int64_t r = 0; r < n; ++r) {
    if (me < g)
      sendCounts[r] = lens[r]; // node slices in rank order: the node as it lies
    if (r < g)
      recvCounts[r] = lens[me];
  }
  HostTensor recv = dev.emptyUninit(block.dtype, {g * lens[me]});
  comm.allToAllV(block.raw(), sendCounts, recv.raw(), recvCounts, block.dtype);
  HostTensor nodes = dev.toHost(recv), slice(block.dtype, {lens[me]});
  std::vector<const void *> parts;
  for (int64_t q = 0; q < g; ++q)
    parts.push_back(static_cast<const char *>(nodes.raw()) + q * lens[me] * es);
  if (lens[me])
    deterministicTree(block.dtype == DType::F64, parts, slice.raw(), lens[me]);
  HostTensor mine = dev.fromHost(slice), whole = dev.emptyUninit(block.dtype, block.shape);
  comm.allGatherV(mine.raw(), whole.raw(), lens, block.dtype);
  return whole;
}

} // namespace

HostTensor runCollectiveStep(Device &dev, const Inst &in, const TensorType &src,
                             const TensorType &dst, const HostTensor &block, int64_t meshRank,
                             const std::vector<int64_t> &worldIds, bool deterministic,
                             const std::function<std::shared_ptr<Buffer>(int64_t)> &pooled) {
  const Mesh &mesh = *src.mesh;
  const std::vector<int64_t> &axes = in.attrs.ints;
  Box oldB = blockBox(src, meshRank), newB = blockBox(dst, meshRank);
  if (block.shape != oldB.shape)
    throw InternalError(std::string("executor: `") + opName(in.op) + "` got a block of the " +
                        "wrong shape for `" + src.str() + "`");
  auto meshGroup = axesGroup(mesh, meshRank, axes);
  std::vector<int> members;
  int me = -1;
  for (size_t i = 0; i < meshGroup.size(); ++i) {
    members.push_back(worldRankOf(worldIds, mesh.devices[meshGroup[i]]));
    if (meshGroup[i] == meshRank)
      me = (int)i;
  }
  if (me < 0)
    throw InternalError("executor: rank is not in its own axis group");
  const DType dt = src.dtype;
  const int64_t es = dtypeSize(dt);
  // A group of one (an axis of size 1): an all-reduce, and a gather or a
  // scatter whose block does not change, is the block itself (shared, as
  // local_partial shares it: the memory plan writes in place only into a
  // buffer no other value holds).
  // (Deterministic mode's tree all-reduce combines its node in the tree's
  // order: it keeps its own path.)
  const bool tree = in.op == Op::AllReduce && in.attrs.str.rfind("tree ", 0) == 0;
  if (members.size() == 1 && oldB.shape == newB.shape && oldB.offset == newB.offset && !tree &&
      (in.op == Op::AllReduce || in.op == Op::AllGather || in.op == Op::ReduceScatter ||
       in.op == Op::AllToAll))
    return block;
  // Every step writes its whole result but local_partial's zeros.
  HostTensor out;
  if (in.op != Op::LocalPartial && pooled) {
    out.dtype = dt;
    out.shape = newB.shape;
    out.buf = pooled(out.bytes());
  }
  if (!out.buf)
    out = in.op == Op::LocalPartial ? dev.empty(dt, newB.shape) : dev.emptyUninit(dt, newB.shape);
  auto peersOld = [&]() {
    std::vector<Box> r;
    for (auto q : meshGroup)
      r.push_back(blockBox(src, q));
    return r;
  };
  auto peersNew = [&]() {
    std::vector<Box> r;
    for (auto q : meshGroup)
      r.push_back(blockBox(dst, q));
    return r;
  };
  switch (in.op) {
  case Op::LocalSlice:
    pack(dev, block, oldB, newB, static_cast<char *>(out.raw()));
    return out;
  case Op::LocalPartial: {
    auto c = mesh.coords(meshRank);
    const Placement &p = dst.placements[axes[0]];
    if (p.op == ReduceOp::Sum)
      for (auto a : axes)
        if (c[a] != 0)
          return out; // zeros
    return block;
  }
  case Op::AllReduce: {
    Communicator &comm = dev.group(members);
    if (deterministic && in.attrs.str.rfind("tree ", 0) == 0)
      return treeAllReduce(dev, comm, block, std::stoll(in.attrs.str.substr(5)), members.size(),
                           me);
    if (deterministic) { // the value is whole on the group's first member
      if (me == 0)
        dev.copyRegion(block.raw(), block.shape, std::vector<int64_t>(block.shape.size(), 0),
                       out.raw(), out.shape, std::vector<int64_t>(out.shape.size(), 0), block.shape,
                       es);
      comm.broadcast(out.raw(), out.numel(), dt, 0);
      return out;
    }
    comm.allReduce(block.raw(), out.raw(), block.numel(), dt, src.placements[axes[0]].op);
    return out;
  }
  case Op::AllGather: {
    auto olds = peersOld();
    std::vector<int64_t> counts;
    for (auto &b : olds)
      counts.push_back(b.volume());
    if (concatenates(olds, newB)) { // blocks in group order along dim 0: no unpacking
      dev.group(members).allGatherV(block.raw(), out.raw(), counts, dt);
      return out;
    }
    HostTensor recv = dev.emptyUninit(dt, {totalCount(counts)});
    dev.group(members).allGatherV(block.raw(), recv.raw(), counts, dt);
    auto offs = countOffsets(counts);
    for (size_t q = 0; q < olds.size(); ++q)
      if (counts[q])
        unpack(dev, static_cast<const char *>(recv.raw()) + offs[q] * es, olds[q], out, newB);
    return out;
  }
  case Op::ReduceScatter: {
    // Every peer's new block of my old one, packed in group order. In
    // deterministic mode the value is whole on the group's first member,
    // which alone packs and sends each peer its block: no arithmetic, no
    // order to depend on.
    auto news = peersNew();
    std::vector<int64_t> counts;
    for (auto &b : news)
      counts.push_back(b.volume());
    if (!deterministic && concatenates(news, oldB)) { // blocks in group order along dim 0
      dev.group(members).reduceScatterV(block.raw(), out.raw(), counts, dt,
                                        src.placements[axes[0]].op);
      return out;
    }
    const bool packs = !deterministic || me == 0;
    HostTensor send = dev.emptyUninit(dt, {packs ? totalCount(counts) : 0});
    auto offs = countOffsets(counts);
    for (size_t q = 0; packs && q < news.size(); ++q)
      if (counts[q])
        pack(dev, block, oldB, news[q], static_cast<char *>(send.raw()) + offs[q] * es);
    if (deterministic) {
      std::vector<int64_t> sendCounts = packs ? counts : std::vector<int64_t>(counts.size(), 0);
      std::vector<int64_t> recvCounts(counts.size(), 0);
      recvCounts[0] = counts[(size_t)me]; // packed row-major: the block as it lies
      // (the members that send nothing still pass a valid buffer)
      dev.group(members).allToAllV(packs ? send.raw() : block.raw(), sendCounts, out.raw(),
                                   recvCounts, dt);
      return out;
    }
    dev.group(members).reduceScatterV(send.raw(), out.raw(), counts, dt,
                                      src.placements[axes[0]].op);
    return out;
  }
  case Op::AllToAll:
  case Op::SliceGather: {
    // Each rank sends every peer the part of its old block that lies in the
    // peer's new block. slice_gather is the same exchange with the old
    // blocks seen in the slice's rows: a peer whose block misses my new block
    // sends nothing.
    auto olds = peersOld();
    auto news = peersNew();
    Box mine = oldB;
    if (in.op == Op::SliceGather) {
      const int64_t d = src.placements[axes[0]].dim, lo = sliceOffset(in.attrs);
      mine = shiftedBox(oldB, d, lo);
      for (Box &b : olds)
        b = shiftedBox(b, d, lo);
    }
    std::vector<Box> sendBoxes, recvBoxes;
    std::vector<int64_t> sendCounts, recvCounts;
    for (size_t q = 0; q < meshGroup.size(); ++q) {
      sendBoxes.push_back(intersect(mine, news[q]));
      recvBoxes.push_back(intersect(olds[q], newB));
      sendCounts.push_back(sendBoxes.back().volume());
      recvCounts.push_back(recvBoxes.back().volume());
    }
    HostTensor send = dev.emptyUninit(dt, {totalCount(sendCounts)});
    HostTensor recv = dev.emptyUninit(dt, {totalCount(recvCounts)});
    auto so = countOffsets(sendCounts), ro = countOffsets(recvCounts);
    for (size_t q = 0; q < sendBoxes.size(); ++q)
      if (sendCounts[q])
        pack(dev, block, mine, sendBoxes[q], static_cast<char *>(send.raw()) + so[q] * es);
    dev.group(members).allToAllV(send.raw(), sendCounts, recv.raw(), recvCounts, dt);
    for (size_t q = 0; q < recvBoxes.size(); ++q)
      if (recvCounts[q])
        unpack(dev, static_cast<const char *>(recv.raw()) + ro[q] * es, recvBoxes[q], out, newB);
    return out;
  }
  default:
    break;
  }
  throw InternalError(std::string("executor: `") + opName(in.op) + "` is not a collective");
}

std::vector<std::vector<int>> collectiveGroups(const Module &m,
                                               const std::vector<int64_t> &worldIds) {
  std::set<std::vector<int>> groups;
  std::vector<int> all(worldIds.size());
  for (size_t r = 0; r < all.size(); ++r)
    all[r] = (int)r;
  groups.insert(all);
  // Each (mesh, axes) pair once: a program repeats its collectives.
  std::set<std::pair<const Mesh *, std::vector<int64_t>>> seen;
  for (const Function &fn : m.functions) {
    std::function<void(const Block &)> visit = [&](const Block &b) {
      for (const Inst &in : b.insts) {
        for (const Block &r : in.regions)
          visit(r);
        // The steps that talk (local_slice and local_partial do not).
        if (opInfo(in.op).cls != OpClass::Collective || in.op == Op::LocalSlice ||
            in.op == Op::LocalPartial || in.operands.empty())
          continue;
        const TensorType &t = fn.type(in.operands[0]);
        if (!t.mesh || !seen.insert({t.mesh.get(), in.attrs.ints}).second)
          continue;
        for (int64_t r = 0; r < t.mesh->size(); ++r) {
          std::vector<int> members;
          for (int64_t q : axesGroup(*t.mesh, r, in.attrs.ints))
            members.push_back(worldRankOf(worldIds, t.mesh->devices[q]));
          groups.insert(std::move(members));
        }
      }
    };
    visit(fn.body);
  }
  return {groups.begin(), groups.end()};
}

} // namespace dt
