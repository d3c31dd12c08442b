// This file implements CpuDevice::transpose: a permutation of a tensor's
// dims written into a new row-major tensor, at memory speed for the layouts
// models move (`transpose(q, [0, 2, 1, 3])` of attention's heads, the last
// two dims of a batch of matrices), the reference kernel otherwise.
//
// Dims that stay next to each other, in order, move as one (`[0, 2, 1, 3]`
// of [B, S, H, D] is [B, S, H, D] with S and H swapped and D carried along;
// `[2, 0, 1]` of [A, B, C] swaps [AB, C]). Then:
//  * nothing moves: one copy;
//  * the last dim stays last: each output row of it is one contiguous copy
//    from its place in the source (memcpy of D elements);
//  * the last two (merged) dims swap under a batch: 64 x 64 tiles of 8 x 8
//    blocks turned in registers (transposeTiles);
//  * anything else: ref::transpose, element by element.
// A large one splits among the rank's threads, as a large kernel launch does.
#include "runtime/CpuBackend.h"

#include "runtime/RefKernels.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace dt {

namespace {

/// dst[j][i] = src[i][j] for rows [rowLo, rowHi) of an r x c matrix of T,
/// in 64 x 64 tiles (both sides stay in cache; a row-by-row copy strides the
/// whole of dst) of 8 x 8 blocks turned in registers and written as 8
/// contiguous runs (a power-of-two row length otherwise maps a tile's
/// column writes onto a few cache sets): 1.4-1.9x the plain tiles.
template <class T>
void transposeTiles(const T *src, T *dst, int64_t r, int64_t c, int64_t rowLo, int64_t rowHi) {
  constexpr int64_t kTile = 64, kB = 8;
  for (int64_t i0 = rowLo; i0 < rowHi; i0 += kTile)
    for (int64_t j0 = 0; j0 < c; j0 += kTile) {
      int64_t i1 = std::min(rowHi, i0 + kTile), j1 = std::min(c, j0 + kTile);
      for (int64_t ib = i0; ib < i1; ib += kB)
        for (int64_t jb = j0; jb < j1; jb += kB) {
          if (ib + kB <= i1 && jb + kB <= j1) {
            T block[kB][kB];
            for (int64_t a = 0; a < kB; ++a)
              for (int64_t b = 0; b < kB; ++b)
                block[b][a] = src[(ib + a) * c + jb + b];
            for (int64_t b = 0; b < kB; ++b)
              std::memcpy(dst + (jb + b) * r + ib, block[b], sizeof(T) * kB);
            continue;
          }
          for (int64_t i = ib; i < std::min(i1, ib + kB); ++i)
            for (int64_t j = jb; j < std::min(j1, jb + kB); ++j)
              dst[j * r + i] = src[i * c + j];
        }
    }
}

/// The permutation with dims that stay adjacent and in order merged: the
/// source's merged shape, and for each output dim the merged source dim.
struct Merged {
  std::vector<int64_t> shape; ///< merged source dims, in source order
  std::vector<int64_t> perm;  ///< output dim k is merged source dim perm[k]
};

Merged mergeDims(const std::vector<int64_t> &shape, const std::vector<int64_t> &perm) {
  // Groups of source dims [lo, hi], in output order.
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (int64_t d : perm) {
    if (shape[d] == 1)
      continue; // a size-1 dim moves nothing
    if (!groups.empty() && groups.back().second + 1 == d)
      groups.back().second = d;
    else
      groups.push_back({d, d});
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  Merged m;
  m.perm.assign(groups.size(), 0);
  for (size_t s = 0; s < order.size(); ++s) {
    const auto [lo, hi] = groups[order[s]];
    int64_t n = 1;
    for (int64_t d = lo; d <= hi; ++d)
      n *= shape[d];
    m.shape.push_back(n);
    m.perm[order[s]] = (int64_t)s;
  }
  return m;
}

} // namespace

HostTensor CpuDevice::transpose(const HostTensor &a, const std::vector<int64_t> &perm) {
  const size_t es = (size_t)dtypeSize(a.dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    return ref::transpose(a, perm);
  std::vector<int64_t> shape(perm.size());
  for (size_t k = 0; k < perm.size(); ++k)
    shape[k] = a.shape[perm[k]];
  HostTensor out = uninit(a.dtype, shape);
  if (out.numel() == 0)
    return out;
  const Merged m = mergeDims(a.shape, perm);
  const int n = (int)m.shape.size();
  const char *src = static_cast<const char *>(a.raw());
  char *dst = static_cast<char *>(out.raw());
  // Runs `body(lo, hi)` over [0, count), split among the threads when big.
  const ref::SplitRun threads = splitter(a.numel());
  const bool big = (bool)threads;
  auto split = [&](int64_t count, const std::function<void(int64_t, int64_t)> &body) {
    if (!big || count < 2)
      return body(0, count);
    threads(count, body);
  };
  bool identity = true;
  for (int k = 0; k < n; ++k)
    identity = identity && m.perm[k] == k;
  if (identity) {
    const int64_t bytes = a.numel() * (int64_t)es, chunk = 1 << 20;
    split((bytes + chunk - 1) / chunk, [&](int64_t lo, int64_t hi) {
      std::memcpy(dst + lo * chunk, src + lo * chunk,
                  (size_t)(std::min(bytes, hi * chunk) - lo * chunk));
    });
    return out;
  }
  if (m.perm[n - 1] == n - 1) {
    // The last dim stays last: rows of `run` contiguous elements, read in
    // the source's order (sequential reads, the writes land a row at a time).
    std::vector<int64_t> ostride(n, 1), to(n); // source dim d -> its output stride
    for (int k = n - 2; k >= 0; --k)
      ostride[k] = ostride[k + 1] * m.shape[m.perm[k + 1]];
    for (int k = 0; k < n; ++k)
      to[m.perm[k]] = ostride[k];
    const int64_t run = m.shape[n - 1], rows = a.numel() / run, bytes = run * (int64_t)es;
    split(rows, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> idx(n - 1, 0); // source row lo's index over dims 0..n-2
      for (int64_t r = lo, d = n - 2; d >= 0; --d) {
        idx[d] = r % m.shape[d];
        r /= m.shape[d];
      }
      int64_t off = 0;
      for (int d = 0; d < n - 1; ++d)
        off += idx[d] * to[d];
      for (int64_t r = lo; r < hi; ++r) {
        std::memcpy(dst + off * (int64_t)es, src + r * bytes, (size_t)bytes);
        for (int d = n - 2; d >= 0; --d) { // the next source row: an odometer
          off += to[d];
          if (++idx[d] < m.shape[d])
            break;
          off -= idx[d] * to[d];
          idx[d] = 0;
        }
      }
    });
    return out;
  }
  bool batchSwap = n >= 2 && m.perm[n - 2] == n - 1 && m.perm[n - 1] == n - 2;
  for (int k = 0; k + 2 < n; ++k)
    batchSwap = batchSwap && m.perm[k] == k;
  if (!batchSwap)
    return ref::transpose(a, perm);
  const int64_t r = m.shape[n - 2], c = m.shape[n - 1], batch = a.numel() / (r * c);
  // A large one splits each matrix's rows (in tiles of 64) among the threads.
  auto run = [&](auto t) {
    using T = decltype(t);
    split(big && r >= 128 ? (r + 63) / 64 : 1, [&](int64_t lo, int64_t hi) {
      const int64_t rowLo = big && r >= 128 ? lo * 64 : 0;
      const int64_t rowHi = big && r >= 128 ? std::min(r, hi * 64) : r;
      for (int64_t b = 0; b < batch; ++b)
        transposeTiles(reinterpret_cast<const T *>(src) + b * r * c,
                       reinterpret_cast<T *>(dst) + b * r * c, r, c, rowLo, rowHi);
    });
  };
  switch (es) {
  case 1:
    run(uint8_t{});
    break;
  case 2:
    run(uint16_t{});
    break;
  case 4:
    run(uint32_t{});
    break;
  default:
    run(uint64_t{});
  }
  return out;
}

} // namespace dt
