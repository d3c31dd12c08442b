// This file implements the timing helper the benchmarks share.
#pragma once

#include <algorithm>
#include <chrono>

namespace dt::bench {

/// Best wall time of `reps` runs of f, in seconds.
template <class F> double best(int reps, F &&f) {
  double b = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    b = std::min(b, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return b;
}

} // namespace dt::bench
