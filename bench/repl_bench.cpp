// The REPL's latency: from a line handed to the REPL (pressing enter) to its
// printed value, for a one-line elementwise expression on a 2x2 mesh, warm
// (the same kind of line entered before, so its kernel is in the JIT cache).
// Each input is a new chunk: parse, build, pipeline, run on 4 ranks, print.
// Target: < 20 ms. Prints the median and best over the inputs.
#include "tools/Repl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <vector>

int main() {
  std::ostringstream out, err;
  dt::Repl repl(dt::ReplOptions{}, out, err);
  repl.feed("mesh m = [x = 2, y = 2]");
  repl.feed("let a : f32[64, 64] @ m[x, y] = ones()");
  repl.feed("let b : f32[64, 64] @ m[x, y] = ones()");
  for (int i = 0; i < 3; ++i) // warm: LLVM started, the kernel compiled
    repl.feed("a * 2.0 + b");
  std::vector<double> ms;
  for (int i = 0; i < 50; ++i) {
    out.str("");
    auto t0 = std::chrono::steady_clock::now();
    repl.feed("a * 2.0 + b");
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (out.str().find(" : f32[64, 64]") == std::string::npos || !err.str().empty()) {
      std::fprintf(stderr, "unexpected output: %s%s\n", out.str().c_str(), err.str().c_str());
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("repl: enter -> printed value, `a * 2.0 + b` on f32[64, 64] @ m[x, y] (2x2 mesh): "
              "median %.2f ms, best %.2f ms (target < 20 ms)\n",
              ms[ms.size() / 2], ms[0]);
  return 0;
}
