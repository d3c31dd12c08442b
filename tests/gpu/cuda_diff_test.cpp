// The differential suite on the GPU (label `gpu`): every program of
// tests/diff and examples/, and seeded random programs (tests/SpmdProgramGen.h),
// run as 1, 2, 4 and 8 virtual ranks on one GPU (--backend cuda) and checked
// against the single-device reference evaluator, as `dt_diff` does on the
// cpu backend (runtime/Verify.h; its tolerances, bf16/f16 included).
//
// Programs are found in $DT_GPU_PROGRAMS (folders, ':'-separated), else next
// to the binary (the bundle of scripts/build-gpu-bundle.sh: ../tests/diff and
// ../examples), else in the source tree. $DT_GPU_RANDOM sets how many random
// programs run (default 40), $DT_GPU_SEED the first seed (default 1),
// $DT_GPU_FAULT_TIMEOUT the seconds a rank waits in a collective (default 20).
#include "../SpmdProgramGen.h"

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Backend.h"
#include "runtime/Verify.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace dt;
namespace fs = std::filesystem;

namespace {

/// Axis sizes giving 1, 2, 4 and 8 devices for a mesh with `axes` axes.
std::vector<int64_t> gpuMeshConfig(size_t axes, int i) {
  static const std::vector<std::vector<int64_t>> one = {{1}, {2}, {4}, {8}};
  static const std::vector<std::vector<int64_t>> two = {{1, 1}, {2, 1}, {2, 2}, {2, 4}};
  static const std::vector<std::vector<int64_t>> three = {
      {1, 1, 1}, {2, 1, 1}, {2, 2, 1}, {2, 2, 2}};
  std::vector<int64_t> r = axes == 1 ? one[i] : axes == 2 ? two[i] : three[i];
  r.resize(axes, 1);
  return r;
}

std::vector<std::string> programDirs() {
  std::vector<std::string> dirs;
  if (const char *env = std::getenv("DT_GPU_PROGRAMS")) {
    std::stringstream ss(env);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty())
        dirs.push_back(d);
    return dirs;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (!ec && fs::is_directory(exe / "../tests/diff", ec))
    return {(exe / "../tests/diff").string(), (exe / "../examples").string()};
  return {DT_SOURCE_DIR "/tests/diff", DT_SOURCE_DIR "/examples"};
}

/// The cuda backend with the fault timeout of $DT_GPU_FAULT_TIMEOUT (default
/// 20 s): a rank left waiting in a collective fails its run, not the suite.
std::unique_ptr<Backend> gpuBackend() {
  BackendOptions bo;
  bo.faultTimeout = 20;
  if (const char *e = std::getenv("DT_GPU_FAULT_TIMEOUT"))
    bo.faultTimeout = std::atof(e);
  return makeBackend("cuda", bo);
}

struct Tally {
  int runs = 0, failures = 0, skips = 0;
};

/// Verifies the program `text` on the four GPU meshes; prints failures.
void checkProgram(Backend &gpu, const std::string &name, const std::string &text, Tally &t) {
  Compilation probe(pipelineCompileOptions());
  if (!probe.compile(name, text)) {
    std::cout << "FAIL " << name << ": does not compile\n" << probe.diags.renderAll();
    ++t.failures;
    return;
  }
  for (int i = 0; i < 4; ++i) {
    std::vector<MeshOverride> ov;
    std::string what = name;
    for (auto &m : probe.module.meshes) {
      ov.push_back({m->name, gpuMeshConfig(m->axes.size(), i)});
      what += " --mesh " + m->name + "=[";
      for (size_t k = 0; k < ov.back().sizes.size(); ++k)
        what += (k ? "," : "") + std::to_string(ov.back().sizes[k]);
      what += "]";
    }
    ++t.runs;
    auto t0 = std::chrono::steady_clock::now();
    try {
      VerifyResult vr = verifySource(name, text, ov, 0, {}, &gpu);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!vr.compiled) {
        ++t.skips;
        std::cout << "skip " << what << ": " << vr.diagnostics.substr(0, vr.diagnostics.find('\n'))
                  << "\n";
      } else if (!allPass(vr.checks)) {
        ++t.failures;
        std::cout << "FAIL " << what << "\n" << formatChecks(vr.checks);
      } else {
        std::printf("ok   %s (%zu outputs, %.0f ms)\n", what.c_str(), vr.checks.size(), ms);
      }
    } catch (const std::exception &e) {
      ++t.failures;
      std::cout << "FAIL " << what << ": " << e.what() << "\n";
    }
    std::cout.flush();
  }
}

} // namespace

TEST_CASE("cuda diff: tests/diff and examples on 1, 2, 4 and 8 virtual ranks") {
  std::unique_ptr<Backend> gpu = gpuBackend();
  std::vector<std::string> files;
  for (auto &d : programDirs()) {
    std::error_code ec;
    for (auto &e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".dt")
        files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 10);
  Tally t;
  for (auto &f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    checkProgram(*gpu, f, ss.str(), t);
  }
  std::printf("cuda diff: %zu programs, %d runs, %d failures, %d skipped\n", files.size(), t.runs,
              t.failures, t.skips);
  CHECK(t.failures == 0);
}

TEST_CASE("cuda diff: random programs on 1, 2, 4 and 8 virtual ranks") {
  std::unique_ptr<Backend> gpu = gpuBackend();
  int n = 40;
  uint64_t seed = 1;
  if (const char *e = std::getenv("DT_GPU_RANDOM"))
    n = std::atoi(e);
  if (const char *e = std::getenv("DT_GPU_SEED"))
    seed = std::strtoull(e, nullptr, 10);
  Tally t;
  for (int k = 0; k < n; ++k) {
    uint64_t s = seed + (uint64_t)k;
    std::string text = generateSpmdProgram(s);
    int before = t.failures;
    checkProgram(*gpu, "random-" + std::to_string(s) + ".dt", text, t);
    if (t.failures > before)
      std::cout << "--- program (seed " << s << ")\n" << text;
  }
  std::printf("cuda diff: %d random programs, %d runs, %d failures, %d skipped\n", n, t.runs,
              t.failures, t.skips);
  CHECK(t.failures == 0);
}
