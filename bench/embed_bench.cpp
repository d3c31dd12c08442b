// The embedding API's call overhead: calls of a compiled function with small
// host buffers (4 floats in, 4 out), against the time of the same kernels
// run through the Session's own path with nothing around them. Reports the
// time per call for a host function (one rank) and for a function on a
// 2-rank mesh (the ranks' threads take part). Target: < 5 us above the
// kernel time. Then the cost of a call with a new argument shape, early and
// after 150 others: the ratio should stay near 1.
#include "dtensor/dtensor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

double perCallUs(dtensor::Session &s, const char *fn, std::vector<float> &x, int n) {
  std::vector<double> best;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      s.call(fn, {dtensor::TensorView(x.data(), {(int64_t)x.size()})});
    best.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        n);
  }
  return *std::min_element(best.begin(), best.end());
}

} // namespace

int main() {
  dtensor::Session s;
  if (!s.compile("mesh m = [x = 2]\n"
                 "fn host(a: f32[N]) -> f32[N] { return a * 2.0 + 1.0 }\n"
                 "fn mesh2(a: f32[N] @ m[x]) -> f32[N] @ m[x] { return a * 2.0 + 1.0 }\n"
                 "fn empty(a: f32[N]) -> f32[N] { return a }\n")) {
    for (auto &d : s.diagnostics())
      std::fprintf(stderr, "%s", d.rendered.c_str());
    return 1;
  }
  std::vector<float> x = {1, 2, 3, 4};
  for (const char *fn : {"host", "mesh2", "empty"})
    perCallUs(s, fn, x, 100); // compile and warm
  double empty = perCallUs(s, "empty", x, 20000);
  double host = perCallUs(s, "host", x, 20000);
  double mesh2 = perCallUs(s, "mesh2", x, 5000);
  std::printf("embed: call with 4-float host buffers: identity (no kernel) %.2f us, "
              "host fused kernel %.2f us, 2-rank mesh %.2f us per call (target < 5 us above the "
              "kernel)\n",
              empty, host, mesh2);
  // A new argument shape compiles a new instance: the 200th must cost what
  // the 1st did (each used to compile every instance the session held).
  auto newShapesMs = [&](int from, int count) {
    std::vector<float> big(2 * (from + count), 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    for (int n = from; n < from + count; ++n)
      s.call("host", {dtensor::TensorView(big.data(), {2 * (int64_t)n})});
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
               .count() /
           count;
  };
  double first = newShapesMs(10, 50);
  newShapesMs(60, 100);
  double later = newShapesMs(160, 50);
  std::printf("embed: a new argument shape: %.2f ms for shapes 1-50, %.2f ms for shapes 151-200 "
              "(ratio %.2f; target ~1: the cost does not grow with the shapes held)\n",
              first, later, later / first);
  return 0;
}
