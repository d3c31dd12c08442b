// The REPL's latency: from a line handed to the REPL (pressing enter) to its
// printed value, for a one-line elementwise expression on a 2x2 mesh, warm
// (the same kind of line entered before, so its kernel is in the JIT cache).
// Each input is a new chunk: parse, build, pipeline, run on 4 ranks, print.
// Target: < 20 ms. Prints the median and best over the inputs.
//
// Then a session's growth: the median cost of declaring one more function
// (and of the same expression line) after 100 and after 2000 declarations.
// Target: the ratio late / early near 1 (an input costs what it adds, not
// what the session holds).
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

  int declared = 0;
  auto declare = [&] {
    std::string n = std::to_string(declared++);
    return "fn f" + n + "(x: f32[64, 64] @ m[x, y]) -> f32[64, 64] @ m[x, y] {\n  return x * " + n +
           ".5 + x\n}";
  };
  auto median = [&](const std::string &line, bool fresh) {
    std::vector<double> t;
    for (int i = 0; i < 21; ++i) {
      std::string in = fresh ? declare() : line;
      auto t0 = std::chrono::steady_clock::now();
      repl.feed(in);
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  while (declared < 100)
    repl.feed(declare());
  double fnEarly = median("", true), exprEarly = median("a * 2.0 + b", false);
  while (declared < 2000)
    repl.feed(declare());
  double fnLate = median("", true), exprLate = median("a * 2.0 + b", false);
  if (!err.str().empty()) {
    std::fprintf(stderr, "unexpected errors: %s\n", err.str().c_str());
    return 1;
  }
  std::printf("repl: one more `fn` after 100 / 2000 declarations: %.3f / %.3f ms (ratio %.2f)\n",
              fnEarly, fnLate, fnLate / fnEarly);
  std::printf("repl: `a * 2.0 + b` after 100 / 2000 declarations: %.2f / %.2f ms (ratio %.2f)\n",
              exprEarly, exprLate, exprLate / exprEarly);
  return 0;
}
