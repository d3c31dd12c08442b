// dtensorc: the command-line driver. Each subcommand is a thin consumer of a
// Session and the pipeline (passes/Pipeline.h); diagnostics are rendered by
// the one diagnostics engine; the command line is checked against the table
// of commands and flags in CommandLine.cpp. Exit codes: 0 ok, 1 program error
// (parse, type or runtime), 2 usage error, 3 internal compiler error.
#include "codegen/CpuJIT.h"
#include "codegen/CudaEmitter.h"
#include "codegen/FusedKernel.h"
#include "frontend/Session.h"
#include "ir/Printer.h"
#include "passes/Explain.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "runtime/CudaRuntime.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"
#include "runtime/Verify.h"
#include "tools/CommandLine.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace dt;

int main(int argc, char **argv) {
  dtcli::Args a;
  dtcli::ParseResult parsed =
      dtcli::parseCommandLine(argc, argv, a, "dtensorc " DT_VERSION " (LLVM " DT_LLVM_VERSION ")");
  if (parsed.outcome == dtcli::Outcome::Exit) {
    std::cout << parsed.out;
    std::cerr << parsed.err;
    return parsed.code;
  }
  auto usage = [&](const std::string &why) {
    std::cerr << "dtensorc: " << why << "\n`dtensorc " << a.cmd << " --help` describes it.\n";
    return 2;
  };
  std::string backend = a.flags.count("backend") ? a.flags["backend"] : "cpu";
  if (backend != "cpu" && backend != "cuda")
    return usage("unknown backend `" + backend + "` (cpu, cuda)");
  std::vector<MeshOverride> overrides;
  for (auto &text : a.meshes) {
    MeshOverride o;
    std::string why = parseMeshOverride(text, o);
    if (!why.empty())
      return usage("--mesh: " + why);
    overrides.push_back(o);
  }
  int ranks = 0;
  if (a.flags.count("ranks")) {
    const std::string &text = a.flags["ranks"];
    char *end = nullptr;
    long n = std::strtol(text.c_str(), &end, 10);
    ranks = end && *end == 0 && n > 0 && n <= 1 << 20 ? (int)n : 0;
    if (ranks < 1)
      return usage("--ranks needs a positive number");
  }

  PipelineOptions po;
  po.printAfter = a.flags.count("print-after") ? a.flags["print-after"] : "";
  po.timePasses = a.flags.count("time-passes") > 0;
  bool reference = a.flags.count("reference") > 0;
  bool kernelStage = a.sub == "kernels" || a.sub == "llvm" || a.sub == "cuda";
  po.spmd = a.cmd == "explain" || (a.cmd == "run" && !reference) || a.sub == "spmd" || kernelStage;
  // Fusion makes the program the CPU backend runs; `emit spmd` and `explain`
  // show the program before it.
  po.fusion = ((a.cmd == "run" && !reference) || kernelStage) && !a.flags.count("no-fusion");
  try {
    if (a.cmd == "verify") {
      VerifyResult vr = verifyFile(a.file, overrides, ranks);
      std::cerr << vr.diagnostics;
      if (!vr.compiled)
        return 1;
      std::cout << formatChecks(vr.checks);
      return allPass(vr.checks) ? 0 : 1;
    }
    // Compiles FILE into `s` (mesh overrides applied) and runs the pipeline.
    auto build = [&](Session &s, PipelineOptions p) {
      bool ok = s.compileFile(a.file) && runPipeline(s, p, std::cerr);
      std::cerr << s.diags.renderAll();
      if (!ok && s.diags.errorCount() > 1)
        std::cerr << s.diags.errorCount() << " errors\n";
      return ok;
    };
    Session s;
    if (!build(s, po))
      return 1;
    if (a.cmd == "check")
      return 0;
    if (a.cmd == "emit" && (a.sub == "llvm" || a.sub == "cuda")) {
      CpuJIT jit;
      for (auto &f : s.module.functions) {
        if (!isFusedKernel(f))
          continue;
        Kernel k = buildFusedKernel(f).kernel;
        std::cout << "// " << f.name << "\n";
        if (a.sub == "llvm")
          std::cout << jit.emitLLVM(k, true) << "\n";
        else
          std::cout << emitCudaKernel(k, "dt_k_" + std::to_string(kernelHash(k))).source << "\n";
      }
      return 0;
    }
    if (a.cmd == "emit") {
      if (a.sub == "ast")
        std::cout << emitAst(s);
      else
        std::cout << printModule(s.module);
      if (a.sub == "kernels")
        for (auto &f : s.module.functions)
          if (isFusedKernel(f))
            std::cout << "\n" << printKernel(buildFusedKernel(f).kernel);
      return 0;
    }
    if (a.cmd == "explain") {
      std::cout << explainModule(s.module, s.sources);
      return 0;
    }
    // run
    if (backend == "cuda") {
      // Fails here with one line naming what is missing on a machine without
      // a GPU; where a GPU is present, program execution is not wired yet.
      CudaLibraries libs;
      CudaContext ctx(libs);
      throw RuntimeFault("--backend cuda: running programs on the CUDA backend is not "
                         "implemented yet (the kernels, allocator, cuBLAS and NCCL layers are; "
                         "the executor does not dispatch to them)");
    }
    if (reference) {
      ReferenceEvaluator ev(s.module, std::cout);
      ev.run("main", {});
      return 0;
    }
    ExecOptions eo;
    eo.ranks = ranks;
    eo.components = a.flags.count("components") > 0;
    eo.visualize = a.flags.count("visualize") > 0;
    eo.jit = !a.flags.count("no-jit");
    eo.memoryPlan = !a.flags.count("no-reuse");
    CpuJIT jit, quickJit(CpuJIT::Options{0}); // the Session's kernel compilers
    eo.cpuJit = &jit;
    eo.quickJit = &quickJit;
    Executor ex(s.module, std::cout, eo);
    ex.run("main", {});
    if (a.flags.count("stats")) {
      const ExecStats &st = ex.stats();
      std::cerr << "stats: " << st.kernels << " fused kernels, " << st.compiles << " compiled, "
                << st.cacheHits << " cache hits, " << st.compileSeconds * 1e3 << " ms compiling\n";
      for (size_t r = 0; r < st.ranks.size(); ++r) {
        const RankStats &rs = st.ranks[r];
        std::cerr << "stats: rank " << r << ": peak " << rs.peakBytes << " bytes, "
                  << rs.kernelCalls << " kernel launches (" << rs.inPlace << " in place, "
                  << rs.reused << " reused buffers), " << rs.collectives << " collectives\n";
      }
    }
    return 0;
  } catch (const RuntimeFault &f) {
    std::cout.flush();
    std::cerr << "error: " << f.what() << "\n";
    return 1;
  } catch (const InternalError &e) {
    std::cout.flush();
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
}
