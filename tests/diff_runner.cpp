// dt_diff: the differential test driver (ctest label `diff`). For every .dt
// file given, it runs `dtensorc verify`'s engine (runtime/Verify.h) on five
// mesh shapes — 1, 2, 4, 6 (3x2) and 8 (2x4) devices, each mesh of the
// program resized by its axis count — so every layout of the program runs
// with even, uneven and empty blocks against the reference evaluator.
// With `--fuzz N --seed S` it also checks N random programs
// (tests/SpmdProgramGen.h) and prints the seed and text of any failure;
// with `--grad-fuzz N`, N random gradient programs (tests/GradProgramGen.h).
//
// With `--bitexact` it instead runs every program (and the random ones) on
// meshes of 1, 2, 4, 2x2 and 3x2 devices (exactConfig) and compares every
// printed value and result with the one-device run bit for bit; with
// `--deterministic` in deterministic mode (CompileOptions::deterministic),
// `--no-jit` on the reference kernels. `--expect-differences` inverts the
// verdict: it passes when some program's bits do depend on the mesh (default
// mode), which shows that the bit-exact check can fail.
#include "GradProgramGen.h"
#include "SpmdProgramGen.h"

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Verify.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

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

/// Mesh sizes of the bit-exactness check: 1, 2, 4, 2x2 and 3x2 devices.
std::vector<int64_t> exactConfig(size_t axes, int i) {
  static const std::vector<std::vector<int64_t>> one = {{1}, {2}, {4}, {3}, {6}};
  static const std::vector<std::vector<int64_t>> two = {{1, 1}, {2, 1}, {1, 4}, {2, 2}, {3, 2}};
  static const std::vector<std::vector<int64_t>> three = {
      {1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {2, 2, 1}, {3, 2, 1}};
  std::vector<int64_t> r = axes == 1 ? one[i] : axes == 2 ? two[i] : three[i];
  r.resize(axes, 1);
  return r;
}

/// `--bitexact`: runs `path` on every mesh of exactConfig and compares every
/// output bit for bit with the run on one device. Returns the failures.
int checkBits(const std::string &path, bool deterministic, bool jit, int &skips) {
  std::string text;
  {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  CompileOptions opts;
  opts.deterministic = deterministic;
  Compilation probe(pipelineCompileOptions());
  if (!probe.compileFile(path)) {
    std::cout << "FAIL " << path << ": does not compile\n" << probe.diags.renderAll();
    return 1;
  }
  RunOutputs base;
  std::string baseWhat;
  int failures = 0;
  for (int i = 0; i < 5; ++i) {
    std::vector<MeshOverride> ov;
    for (auto &m : probe.module.meshes)
      ov.push_back({m->name, exactConfig(m->axes.size(), i)});
    std::string what = path + " " + configStr(ov);
    try {
      RunOutputs r = runDistributed(path, text, ov, opts, jit);
      if (!r.compiled) {
        std::string first = r.diagnostics.substr(0, r.diagnostics.find('\n'));
        std::cout << "skip " << what << ": not valid on this mesh: " << first << "\n";
        ++skips;
        continue;
      }
      if (!base.compiled) {
        base = std::move(r);
        baseWhat = what;
        std::cout << "base " << what << "\n";
        continue;
      }
      std::string d = compareBits(base, r);
      if (!d.empty()) {
        std::cout << "FAIL " << what << " differs from " << baseWhat << ": " << d << "\n";
        ++failures;
      } else {
        std::cout << "ok   " << what << " (bit-identical)\n";
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
  int fuzz = 0, gradFuzz = 0;
  uint64_t seed = 1;
  bool bitexact = false, deterministic = false, expectDiff = false, jit = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--fuzz" && i + 1 < argc)
      fuzz = std::atoi(argv[++i]);
    else if (a == "--grad-fuzz" && i + 1 < argc)
      gradFuzz = std::atoi(argv[++i]);
    else if (a == "--bitexact")
      bitexact = true;
    else if (a == "--no-jit")
      jit = false;
    else if (a == "--deterministic")
      deterministic = true;
    else if (a == "--expect-differences")
      expectDiff = true;
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else
      files.push_back(a);
  }
  int failures = 0, checked = 0, skips = 0;
  if (bitexact) {
    int differing = 0;
    for (auto &f : files) {
      int bad = checkBits(f, deterministic, jit, skips);
      failures += bad;
      differing += bad ? 1 : 0;
    }
    // Named by the process too: ctest runs several dt_diff at once in one
    // folder (diff_random and diff_grad_random share seed 1).
    std::string tmp =
        "dt_diff_bits_" + std::to_string(seed) + "_" + std::to_string(getpid()) + ".dt";
    for (int k = 0; k < fuzz; ++k) {
      uint64_t s = seed + (uint64_t)k;
      std::string text = generateSpmdProgram(s);
      {
        std::ofstream out(tmp);
        out << text;
      }
      int bad = checkBits(tmp, deterministic, jit, skips);
      if (bad)
        std::cout << "--- program (reproduce: dt_diff --bitexact --fuzz 1 --seed " << s << ")\n"
                  << text;
      failures += bad;
      differing += bad ? 1 : 0;
    }
    for (int k = 0; k < gradFuzz; ++k) {
      uint64_t s = seed + (uint64_t)k;
      std::string text = gradgen::generateGradProgram(s);
      {
        std::ofstream out(tmp);
        out << text;
      }
      int bad = checkBits(tmp, deterministic, jit, skips);
      if (bad)
        std::cout << "--- program (reproduce: dt_diff --bitexact --grad-fuzz 1 --seed " << s
                  << ")\n"
                  << text;
      failures += bad;
      differing += bad ? 1 : 0;
    }
    if (fuzz || gradFuzz)
      std::remove(tmp.c_str());
    size_t programs = files.size() + (size_t)fuzz + (size_t)gradFuzz;
    // --expect-differences: the check must be able to fail, so default mode
    // has to show at least one program whose bits depend on the mesh.
    bool ok = expectDiff ? differing > 0 : failures == 0;
    std::cout << (ok ? "PASS" : "FAIL") << ": " << programs << " programs x 5 meshes, " << differing
              << " programs differ across meshes, " << skips << " skipped\n";
    return ok ? 0 : 1;
  }
  for (auto &f : files) {
    failures += checkFile(f, f, false, skips);
    ++checked;
  }
  std::string tmp = "dt_diff_fuzz_" + std::to_string(seed) + "_" + std::to_string(getpid()) + ".dt";
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
  for (int k = 0; k < gradFuzz; ++k) {
    uint64_t s = seed + (uint64_t)k;
    std::string text = gradgen::generateGradProgram(s);
    {
      std::ofstream out(tmp);
      out << text;
    }
    int bad =
        checkFile(tmp, "random gradient program (seed " + std::to_string(s) + ")", true, skips);
    if (bad)
      std::cout << "--- program (reproduce: dt_diff --grad-fuzz 1 --seed " << s << ")\n" << text;
    failures += bad;
    ++checked;
  }
  if (fuzz || gradFuzz)
    std::remove(tmp.c_str());
  std::cout << (failures ? "FAIL" : "PASS") << ": " << checked << " programs x 5 meshes, "
            << failures << " failures, " << skips << " skipped\n";
  return failures ? 1 : 0;
}
