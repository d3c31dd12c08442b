// nvrtc_bench: NVRTC's cold compile of a program's kernels, by tier, on the
// host alone (NVRTC needs no GPU). Every distinct kernel of the program's
// cuda pipeline is emitted as CUDA C++ and compiled for sm_90 with no cache
// three times: every kernel at the full tier, every kernel at the quick tier
// (NvrtcCompiler::compileTier), and as the backend compiles them (the quick
// tier for KernelTable's small kernels only). Prints ms per kernel and the
// ratios, measured in this run. cuda_bench's `nvrtc` row times the same on a
// GPU machine (with the module loads).
//
// usage: nvrtc_bench [PROGRAM.dt ...]   (default: examples/transformer_tp.dt)
//        nvrtc_bench --dump DIR PROGRAM.dt ...
// --dump writes each distinct kernel's CUDA C++ to DIR/<program>_<n>.cu (its
// kernel IR in a comment at the top) and compiles nothing: what a GPU run
// of the program would compile, to read or to feed to nvcc/ptxas.
#include "codegen/CudaEmitter.h"
#include "codegen/CudaLoader.h"
#include "codegen/Nvrtc.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/KernelRuntime.h"

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace dt;

namespace {

struct Source {
  std::string text;
  bool small;
  std::string ir; ///< printKernel of the kernel
};

std::vector<Source> kernelSources(const std::string &path) {
  Compilation c(pipelineCompileOptions());
  PipelineOptions po;
  po.spmd = true;
  po.target = CodeTarget::Cuda;
  std::ostringstream log;
  std::vector<Source> out;
  std::shared_ptr<const CompiledProgram> prog;
  if (c.compileFile(path))
    prog = compileProgram(c, po, log);
  if (!prog) {
    std::printf("%s does not compile\n%s", path.c_str(), c.diags.renderAll().c_str());
    return out;
  }
  std::set<uint64_t> seen;
  for (const ProgramKernel &pk : prog->kernels()) {
    const Kernel &k = pk.kernel.kernel;
    uint64_t h = kernelHash(k);
    if (!seen.insert(h).second)
      continue;
    bool small = KernelTable::isSmall(pk.kernel);
    out.push_back({emitCudaKernel(k, "dt_k_" + std::to_string(h)).source, small, printKernel(k)});
  }
  return out;
}

/// Seconds to compile every source (`mode` 0: full, 1: quick, 2: as the
/// backend does); false when one fails.
bool compileAll(NvrtcCompiler &nvrtc, const std::vector<Source> &srcs, int mode, double &sec) {
  auto t0 = std::chrono::steady_clock::now();
  for (const Source &s : srcs) {
    NvrtcRequest req;
    req.source = s.text;
    req.arch = "sm_90";
    NvrtcResult r = nvrtc.compileTier(req, mode == 1 || (mode == 2 && s.small));
    if (!r.ok) {
      std::printf("NVRTC failed:\n%s\n", r.log.c_str());
      return false;
    }
  }
  sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

/// --dump: every distinct kernel of `programs` as a .cu file in `dir`.
int dump(const std::string &dir, const std::vector<std::string> &programs) {
  for (const std::string &p : programs) {
    std::string stem = p.substr(p.find_last_of('/') + 1);
    stem = stem.substr(0, stem.rfind(".dt"));
    std::vector<Source> srcs = kernelSources(p);
    for (size_t i = 0; i < srcs.size(); ++i) {
      std::string path = dir + "/" + stem + "_" + std::to_string(i) + ".cu";
      std::FILE *f = std::fopen(path.c_str(), "w");
      if (!f) {
        std::printf("nvrtc_bench: cannot write %s\n", path.c_str());
        return 1;
      }
      std::string text = "/* kernel IR:\n" + srcs[i].ir + "*/\n" + srcs[i].text;
      bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
      ok = std::fclose(f) == 0 && ok;
      if (!ok) {
        std::printf("nvrtc_bench: writing %s failed\n", path.c_str());
        return 1;
      }
      std::printf("%s%s\n", path.c_str(), srcs[i].small ? " (small: quick tier)" : "");
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 3 && std::string(argv[1]) == "--dump")
    return dump(argv[2], std::vector<std::string>(argv + 3, argv + argc));
  CudaLibraries libs;
  std::string why;
  if (!libs.available(CudaLib::Nvrtc, &why)) {
    std::printf("nvrtc_bench: SKIP: %s\n", why.c_str());
    return 0;
  }
  std::vector<std::string> programs;
  for (int i = 1; i < argc; ++i)
    programs.push_back(argv[i]);
  if (programs.empty())
    programs.push_back(std::string(DT_SOURCE_DIR) + "/examples/transformer_tp.dt");
  NvrtcCompiler nvrtc(libs, ""); // no cache: every compile is cold
  auto [major, minor] = nvrtc.version();
  std::printf("NVRTC %d.%d, sm_90, one host thread\n", major, minor);
  {
    NvrtcRequest warm; // NVRTC's libraries loaded before the clock starts
    warm.source = "extern \"C\" __global__ void k() {}";
    nvrtc.compile(warm);
  }
  for (const std::string &p : programs) {
    std::vector<Source> srcs = kernelSources(p);
    if (srcs.empty())
      continue;
    size_t small = 0;
    for (const Source &s : srcs)
      small += s.small;
    double full = 0, quick = 0, mixed = 0;
    if (!compileAll(nvrtc, srcs, 0, full) || !compileAll(nvrtc, srcs, 1, quick) ||
        !compileAll(nvrtc, srcs, 2, mixed))
      return 1;
    const double n = (double)srcs.size();
    std::printf("%s: %zu distinct kernels (%zu small): full tier %.1f ms/kernel, quick tier %.1f "
                "(%.2fx the full's time), as the backend compiles %.1f ms/kernel (%.2fx; target "
                "<= 200 ms/kernel cold) %s\n",
                p.c_str(), srcs.size(), small, full * 1e3 / n, quick * 1e3 / n, quick / full,
                mixed * 1e3 / n, mixed / full, mixed * 1e3 / n <= 200 ? "MET" : "MISSED");
  }
  return 0;
}
