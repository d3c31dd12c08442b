// This file implements the CI check that every kernel the test programs
// generate compiles with NVRTC: each .dt file given on the command line is
// compiled through the whole pipeline (build, spmd, fusion, kernels) for the
// cpu and for the cuda backend (whose fusion makes kernels of lone sources
// too), every kernel is lowered to CUDA C++ by codegen/CudaEmitter, and
// NVRTC compiles it for sm_80 and sm_90 at the tier the backend gives it (a
// small kernel at the quick one). Any NVRTC error or warning fails the test.
// Programs that do not compile (the fail_* golden tests) are skipped; NVRTC
// needs no GPU, so this runs in CI.
//
// `--cache DIR` (emptied first): the sm_90 compiles go through an NVRTC
// cache there, under the keys the cuda backend's dry run uses (its symbol,
// its options), so the dry-run
// test that runs after this one (tests/cudaplan) reads what was compiled
// here instead of compiling every kernel a second time.
#include "codegen/CudaEmitter.h"
#include "codegen/CudaLoader.h"
#include "codegen/FusedKernel.h"
#include "codegen/KernelIR.h"
#include "codegen/Nvrtc.h"
#include "frontend/Compilation.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "runtime/KernelRuntime.h"

#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

using namespace dt;

int main(int argc, char **argv) {
  CudaLibraries libs;
  std::string why;
  if (!libs.available(CudaLib::Nvrtc, &why)) {
    std::cout << "SKIP: " << why << "\n";
    return 77;
  }
  std::vector<std::string> files;
  std::string cacheDir;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--cache" && i + 1 < argc)
      cacheDir = argv[++i];
    else
      files.push_back(argv[i]);
  }
  if (!cacheDir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(cacheDir, ec); // every kernel compiles for real
    if (ec) {
      std::cout << "FAIL: cannot empty " << cacheDir << ": " << ec.message() << "\n";
      return 1;
    }
  }
  NvrtcCompiler nvrtc(libs, ""), cached(libs, cacheDir);
  std::set<uint64_t> seen;
  int programs = 0, kernels = 0, compiles = 0, failures = 0;
  for (const std::string &file : files)
    // The cpu pipeline's kernels, and the cuda pipeline's (`--backend cuda`:
    // lone sources become kernels there, nothing is filled on the host).
    for (CodeTarget target : {CodeTarget::Llvm, CodeTarget::Cuda}) {
      Compilation s(pipelineCompileOptions());
      PipelineOptions po;
      po.spmd = true;
      po.fusion = true;
      po.target = target;
      std::ostringstream log;
      std::shared_ptr<const CompiledProgram> prog;
      try {
        if (s.compileFile(file))
          prog = compileProgram(s, po, log);
      } catch (const std::exception &e) {
        std::cout << "FAIL " << file << ": the pipeline threw: " << e.what() << "\n";
        ++failures;
        continue;
      }
      if (!prog)
        continue; // an invalid program: nothing to generate
      programs += target == CodeTarget::Llvm;
      for (auto &pk : prog->kernels()) {
        const std::string &fname = pk.function;
        Kernel k0 = pk.kernel.kernel;
        // A reduction also in deterministic mode (one thread per output,
        // sequential over the reduced dims: CudaEmitter's deterministic path).
        std::vector<Kernel> variants{k0};
        if (k0.reduce != KReduce::None) {
          variants.push_back(k0);
          variants.back().deterministic = true;
        }
        for (const Kernel &k : variants) {
          uint64_t h = kernelHash(k);
          if (!seen.insert(h).second)
            continue;
          ++kernels;
          const std::string sym = cudaKernelSymbol(k);
          CudaKernelSource src = emitCudaKernel(k, sym);
          // sm_80 and sm_90 at the tier the backend compiles the kernel at:
          // a small one at NVRTC's quick tier (the option itself:
          // compileTier would hide its failure), others at the full tier.
          const bool quick = KernelTable::isSmall(pk.kernel);
          for (const char *arch : {"sm_80", "sm_90"}) {
            NvrtcRequest req;
            req.source = src.source;
            req.name = sym + ".cu";
            req.arch = arch;
            req.warningsAsErrors = true;
            if (quick)
              req.options.push_back(NvrtcCompiler::kQuickOption);
            ++compiles;
            // sm_90 as the dry run asks for it, through the shared cache.
            const bool shared = std::string(arch) == "sm_90";
            NvrtcResult r = (shared ? cached : nvrtc).compile(req);
            if (r.ok && r.fromCache) {
              r.ok = false;
              r.log = "came from the cache that was emptied at the start";
            }
            if (!r.ok) {
              ++failures;
              std::cout << "FAIL " << file << " " << fname << " (" << arch
                        << (quick ? ", quick tier" : "") << "):\n"
                        << r.log << "\n--- kernel IR ---\n"
                        << printKernel(k) << "\n";
            }
          }
        }
      }
    }
  std::cout << programs << " programs, " << kernels << " distinct kernels, " << compiles
            << " NVRTC compiles (sm_80, sm_90; small kernels at the quick tier), " << failures
            << " failed\n";
  if (kernels == 0) {
    std::cout << "FAIL: the programs generated no kernels; the test would prove nothing\n";
    return 1;
  }
  return failures ? 1 : 0;
}
