// dt_diff: the differential test driver (ctest label `diff`). For every .dt
// file given, it runs `dtensorc verify`'s engine (runtime/Verify.h) on five
// mesh shapes — 1, 2, 4, 6 (3x2) and 8 (2x4) devices, each mesh of the
// program resized by its axis count — so every layout of the program runs
// with even, uneven and empty blocks against the reference evaluator.
// With `--fuzz N --seed S` it also checks N random programs
// (tests/SpmdProgramGen.h) and prints the seed and text of any failure.
#include "SpmdProgramGen.h"

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Verify.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace dt;

namespace {

/// Axis sizes for a mesh with `axes` axes, configuration `i` of 5.
std::vector<int64_t> meshConfig(size_t axes, int i) {
  static const std::vector<std::vector<int64_t>> one = {{1}, {2}, {4}, {6}, {8}};
  static const std::vector<std::vector<int64_t>> two = {{1, 1}, {2, 1}, {2, 2}, {3, 2}, {2, 4}};
  static const std::vector<std::vector<int64_t>> three = {
      {1, 1, 1}, {2, 1, 1}, {2, 2, 1}, {3, 2, 1}, {2, 2, 2}};
  std::vector<int64_t> r = axes == 1 ? one[i] : axes == 2 ? two[i] : three[i];
  r.resize(axes, 1);
  return r;
}

std::string configStr(const std::vector<MeshOverride> &ov) {
  std::string s;
  for (auto &o : ov) {
    s += (s.empty() ? "" : " ") + std::string("--mesh ") + o.mesh + "=[";
    for (size_t i = 0; i < o.sizes.size(); ++i)
      s += (i ? "," : "") + std::to_string(o.sizes[i]);
    s += "]";
  }
  return s;
}

/// Verifies `path` on every mesh configuration; returns the number of
/// failures and counts in `skips` the meshes the program is not valid on.
int checkFile(const std::string &path, const std::string &shownAs, bool quiet, int &skips) {
  Compilation probe(pipelineCompileOptions());
  if (!probe.compileFile(path)) {
    std::cout << "FAIL " << shownAs << ": does not compile\n" << probe.diags.renderAll();
    return 1;
  }
  int failures = 0;
  for (int i = 0; i < 5; ++i) {
    std::vector<MeshOverride> ov;
    for (auto &m : probe.module.meshes)
      ov.push_back({m->name, meshConfig(m->axes.size(), i)});
    std::string what = shownAs + " " + configStr(ov);
    try {
      VerifyResult vr = verifyFile(path, ov);
      if (!vr.compiled) {
        // Some placement rules depend on axis sizes (reshape of a sharded
        // dim); the program compiled on its own mesh, so this is a skip.
        std::string first = vr.diagnostics.substr(0, vr.diagnostics.find('\n'));
        std::cout << "skip " << what << ": not valid on this mesh: " << first << "\n";
        ++skips;
      } else if (!allPass(vr.checks)) {
        std::cout << "FAIL " << what << "\n" << formatChecks(vr.checks);
        ++failures;
      } else if (!quiet) {
        std::cout << "ok   " << what << " (" << vr.checks.size() << " outputs)\n";
      }
    } catch (const std::exception &e) {
      std::cout << "FAIL " << what << ": " << e.what() << "\n";
      ++failures;
    }
  }
  return failures;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> files;
  int fuzz = 0;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--fuzz" && i + 1 < argc)
      fuzz = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else
      files.push_back(a);
  }
  int failures = 0, checked = 0, skips = 0;
  for (auto &f : files) {
    failures += checkFile(f, f, false, skips);
    ++checked;
  }
  std::string tmp = "dt_diff_fuzz_" + std::to_string(seed) + ".dt";
  for (int k = 0; k < fuzz; ++k) {
    uint64_t s = seed + (uint64_t)k;
    std::string text = generateSpmdProgram(s);
    {
      std::ofstream out(tmp);
      out << text;
    }
    int bad = checkFile(tmp, "random program (seed " + std::to_string(s) + ")", true, skips);
    if (bad)
      std::cout << "--- program (reproduce: dt_diff --fuzz 1 --seed " << s << ")\n" << text;
    failures += bad;
    ++checked;
  }
  if (fuzz)
    std::remove(tmp.c_str());
  std::cout << (failures ? "FAIL" : "PASS") << ": " << checked << " programs x 5 meshes, "
            << failures << " failures, " << skips << " skipped\n";
  return failures ? 1 : 0;
}
