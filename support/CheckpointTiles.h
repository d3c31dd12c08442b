// The tile grid of a saved checkpoint block (see Checkpoint.h), and the
// copy of a box between two row-major arrays: shared by the shard writer,
// the region reader and the index checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dt {

/// A block of `shape` stored as tiles of `tile`: tiles in row-major order of
/// the grid, each row-major and clipped at the block's far edges.
struct TileGrid {
  std::vector<int64_t> shape, tile, count; ///< count: tiles along each dim

  TileGrid(const std::vector<int64_t> &blockShape, const std::vector<int64_t> &tileShape)
      : shape(blockShape), tile(tileShape), count(blockShape.size()) {
    for (size_t d = 0; d < shape.size(); ++d)
      count[d] = (shape[d] + tile[d] - 1) / tile[d];
  }
  uint64_t tiles() const {
    uint64_t n = 1;
    for (int64_t c : count)
      n *= (uint64_t)c;
    return n;
  }
  /// The extent of tile `g` (grid index) along dim d.
  int64_t extent(const std::vector<int64_t> &g, size_t d) const {
    return std::min(tile[d], shape[d] - g[d] * tile[d]);
  }
  /// The tile's position in storage order.
  uint64_t linear(const std::vector<int64_t> &g) const {
    uint64_t i = 0;
    for (size_t d = 0; d < g.size(); ++d)
      i = i * (uint64_t)count[d] + (uint64_t)g[d];
    return i;
  }
  /// The element offset of tile `g` in storage: the tiles before it in
  /// row-major grid order are, for the first dim d where they differ from g,
  /// g[d] * tile[d] whole slabs along d, full in every later dim and of g's
  /// extent in every earlier one.
  uint64_t offset(const std::vector<int64_t> &g) const {
    uint64_t off = 0, earlier = 1;
    for (size_t d = 0; d < g.size(); ++d) {
      uint64_t later = 1;
      for (size_t e = d + 1; e < g.size(); ++e)
        later *= (uint64_t)shape[e];
      off += earlier * (uint64_t)(g[d] * tile[d]) * later;
      earlier *= (uint64_t)extent(g, d);
    }
    return off;
  }
  /// Elements of tile `g`.
  uint64_t elements(const std::vector<int64_t> &g) const {
    uint64_t n = 1;
    for (size_t d = 0; d < g.size(); ++d)
      n *= (uint64_t)extent(g, d);
    return n;
  }
};

/// Advances `idx` (its dims, the first idx.size() of the box) to the next
/// index of the box [lo, hi) in row-major order; false, with `idx` back at
/// `lo`, after the last.
inline bool nextIndex(std::vector<int64_t> &idx, const std::vector<int64_t> &lo,
                      const std::vector<int64_t> &hi) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < hi[d])
      return true;
    idx[d] = lo[d];
  }
  return false;
}

/// Calls `run(srcElem, dstElem, elems)` for each contiguous run of the box
/// [lo, hi) (in global coordinates), where the source is a row-major array
/// of shape `ss` whose first element is at global `s0`, and the destination
/// one of shape `ds` at `d0`. Innermost dims that the box spans whole in both
/// arrays merge into one run. The box must be non-empty.
template <class F>
void forEachRun(const std::vector<int64_t> &lo, const std::vector<int64_t> &hi,
                const std::vector<int64_t> &s0, const std::vector<int64_t> &ss,
                const std::vector<int64_t> &d0, const std::vector<int64_t> &ds, F &&run) {
  const size_t rank = lo.size();
  std::vector<int64_t> sst(rank, 1), dst(rank, 1); // row-major strides
  for (size_t d = rank; d-- > 1;) {
    sst[d - 1] = sst[d] * ss[d];
    dst[d - 1] = dst[d] * ds[d];
  }
  size_t outer = rank; // dims [0, outer) are iterated, [outer, rank) are one run
  int64_t len = 1;
  while (outer > 0) {
    size_t d = outer - 1;
    len *= hi[d] - lo[d];
    --outer;
    if (hi[d] - lo[d] != ss[d] || hi[d] - lo[d] != ds[d])
      break;
  }
  std::vector<int64_t> idx(lo.begin(), lo.begin() + (long)outer);
  for (;;) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = d < outer ? idx[d] : lo[d];
      s += (i - s0[d]) * sst[d];
      t += (i - d0[d]) * dst[d];
    }
    run((uint64_t)s, (uint64_t)t, (uint64_t)len);
    if (!nextIndex(idx, lo, hi))
      return;
  }
}

} // namespace dt
