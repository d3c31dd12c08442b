// This file holds what the CPU's own matrix products share
// (BlasDeterministic.cpp, IntGemm.cpp): B packed into zero-padded strips of
// W columns, and rows split over threads in whole tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace dt::gemm_strips {

/// B (k x n; stored n x k when `tb`) as strips of W columns, each k x W
/// row-major and zero-padded past column n.
template <class T> std::vector<T> packStrips(const T *B, int64_t k, int64_t n, bool tb, int W) {
  const int64_t strips = (n + W - 1) / W;
  std::vector<T> p((size_t)(strips * k * W), T(0));
  for (int64_t s = 0; s < strips; ++s) {
    T *dst = p.data() + s * k * W;
    const int64_t j0 = s * W, w = std::min<int64_t>(W, n - j0);
    if (tb) { // B stored n x k: read each of the strip's rows along k
      for (int64_t j = 0; j < w; ++j)
        for (int64_t q = 0; q < k; ++q)
          dst[q * W + j] = B[(j0 + j) * k + q];
    } else {
      for (int64_t q = 0; q < k; ++q)
        std::memcpy(dst + q * W, B + q * n + j0, sizeof(T) * (size_t)w);
    }
  }
  return p;
}

/// Runs rows(m0, m1) over [0, m) on up to `threads` threads, in blocks of
/// whole `tile`-row tiles, when the product (`work` multiply-adds) is large
/// enough to pay for them.
template <class F>
void splitRows(int64_t m, int64_t work, int threads, const F &rows, int64_t tile = 6) {
  int64_t per = (m + threads - 1) / std::max(threads, 1);
  per = (per + tile - 1) / tile * tile;
  if (threads <= 1 || work < (int64_t(1) << 22) || per >= m)
    return rows(0, m);
  std::vector<std::thread> pool;
  for (int64_t r0 = per; r0 < m; r0 += per)
    pool.emplace_back([=, &rows] { rows(r0, std::min(m, r0 + per)); });
  rows(0, per);
  for (auto &t : pool)
    t.join();
}

} // namespace dt::gemm_strips
