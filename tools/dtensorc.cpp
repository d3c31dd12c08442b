// dtensorc: the command-line driver. Each subcommand is a thin consumer of a
// Session and the pipeline (passes/Pipeline.h); diagnostics are rendered by
// the one diagnostics engine. Exit codes: 0 ok, 1 program error (parse, type
// or runtime), 2 usage error, 3 internal compiler error.
#include "codegen/CpuJIT.h"
#include "codegen/CudaEmitter.h"
#include "codegen/FusedKernel.h"
#include "frontend/Session.h"
#include "ir/Printer.h"
#include "passes/Explain.h"
#include "passes/Fusion.h"
#include "passes/Pipeline.h"
#include "runtime/Backend.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"
#include "runtime/Verify.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace dt;

namespace {

struct Command {
  const char *name;
  const char *usage;
  const char *help;
};

const Command kCommands[] = {
    {"check", "dtensorc check FILE",
     "Parses and type-checks FILE (shapes and placements); prints every error with its fix."},
    {"run",
     "dtensorc run FILE [--ranks N] [--backend cpu|mpi|cuda|null] [--components]\n"
     "      [--visualize] [--reference] [--stats] [--no-jit] [--no-fusion] [--no-reuse]\n"
     "      [--print-after=PASS] [--time-passes]",
     "Runs FILE distributed: one thread per device of a virtual CPU mesh (N = the largest\n"
     "      device id of the program's meshes + 1; --ranks must equal it). `print` shows the\n"
     "      global value. --components also lists, per print, each device's local block of\n"
     "      the value as the program holds it (`device 3: [[20, 14]]`); --visualize draws\n"
     "      which devices hold which block. --reference runs the single-device reference\n"
     "      evaluator of the global IR instead. Elementwise chains run as fused kernels\n"
     "      compiled by the LLVM JIT and float matmuls through BLAS: --no-jit runs every\n"
     "      op on the reference kernels (debugging), --no-fusion skips the fusion pass\n"
     "      (elementwise ops one by one on the reference kernels),\n"
     "      --no-reuse turns the memory planner off (every buffer lives to the end).\n"
     "      --stats prints, to stderr, kernels compiled, JIT cache hits, and per rank the\n"
     "      peak memory, kernel launches (in place) and collectives. --backend picks\n"
     "      where ranks run: `cpu` (default, threads), `mpi` (one rank per process under\n"
     "      mpirun), `cuda` (virtual ranks on one GPU), `null` (runs nothing: zeros)."},
    {"explain", "dtensorc explain FILE",
     "Prints, per statement, each collective the program runs (also inside called and\n"
     "      gradient functions and loops): its mesh axes, from -> to layouts and the bytes\n"
     "      the busiest rank receives; then the totals."},
    {"verify", "dtensorc verify FILE [--mesh NAME=[a,b]]...",
     "Runs FILE distributed and on the reference evaluator and compares every printed\n"
     "      value and every value main returns: the largest absolute/relative difference\n"
     "      per output, then PASS or FAIL (exit 1). Tolerance: integers and bool exact; f32\n"
     "      |d| <= 1e-5 + 1e-4 |ref|; f64 |d| <= 1e-10 + 1e-10 |ref|. --mesh overrides a\n"
     "      mesh's axis sizes (same number of axes; devices 0..n-1), repeatable."},
    {"emit",
     "dtensorc emit ir|spmd|kernels|llvm|cuda|ast FILE [--print-after=PASS] [--time-passes]",
     "Prints a stage of the compiler: `ir` is the typed global IR (it parses back); `spmd`\n"
     "      the per-rank program after SPMD lowering (collectives explicit); `kernels` the\n"
     "      program after fusion (`call @fused.N`) and then the kernel IR of every fused\n"
     "      kernel; `llvm` the optimized LLVM IR and `cuda` the CUDA C++ (for NVRTC) of\n"
     "      every fused kernel. Passes, in order: build, spmd, fusion."},
};

int usage(const std::string &why) {
  if (!why.empty())
    std::cerr << "dtensorc: " << why << "\n";
  std::cerr << "usage: dtensorc <command> [options] FILE\n\ncommands:\n";
  for (auto &c : kCommands)
    std::cerr << "  " << c.usage << "\n      " << c.help << "\n";
  std::cerr << "\n`dtensorc <command> --help` describes one command.\n";
  return 2;
}

struct Args {
  std::string cmd, sub, file;
  std::map<std::string, std::string> flags;
  std::vector<std::string> meshes; ///< every `--mesh` value, in order
};

/// Parses `cmd [sub] FILE --flag[=value]...`; returns "" or an error.
std::string parseArgs(int argc, char **argv, Args &a) {
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0) {
      auto eq = s.find('=');
      std::string k = s.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::string v = eq == std::string::npos ? "" : s.substr(eq + 1);
      static const char *valued[] = {"ranks", "backend", "mesh", "print-after", "seed"};
      bool takesValue = false;
      for (auto *p : valued)
        takesValue |= k == p;
      if (takesValue && eq == std::string::npos) {
        if (i + 1 >= argc)
          return "`--" + k + "` needs a value";
        v = argv[++i];
      }
      a.flags[k] = v;
      if (k == "mesh")
        a.meshes.push_back(v);
    } else {
      pos.push_back(s);
    }
  }
  if (pos.empty())
    return a.flags.count("help") ? "" : "no command given";
  a.cmd = pos[0];
  size_t next = 1;
  if (a.cmd == "emit") {
    if (pos.size() < 2)
      return a.flags.count("help") ? "" : "`emit` needs a stage: ir, spmd, kernels or ast";
    a.sub = pos[1];
    next = 2;
  }
  if (pos.size() > next)
    a.file = pos[next];
  if (pos.size() > next + 1)
    return "unexpected argument `" + pos[next + 1] + "`";
  return "";
}

int commandHelp(const std::string &cmd) {
  for (auto &c : kCommands)
    if (cmd == c.name) {
      std::cout << "usage: " << c.usage << "\n\n" << c.help << "\n";
      return 0;
    }
  return usage("unknown command `" + cmd + "`");
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  std::string err = parseArgs(argc, argv, a);
  if (!err.empty())
    return usage(err);
  if (a.flags.count("help"))
    return a.cmd.empty() ? (usage(""), 0) : commandHelp(a.cmd);
  bool known = false;
  for (auto &c : kCommands)
    known |= a.cmd == c.name;
  if (!known)
    return usage("unknown command `" + a.cmd + "`");
  if (a.file.empty())
    return usage("`" + a.cmd + "` needs a FILE");
  if (a.cmd == "emit" && a.sub != "ir" && a.sub != "spmd" && a.sub != "kernels" &&
      a.sub != "llvm" && a.sub != "cuda" && a.sub != "ast")
    return usage("unknown stage `" + a.sub + "` (ir, spmd, kernels, llvm, cuda, ast)");
  std::string backend = a.flags.count("backend") ? a.flags["backend"] : "cpu";
  if (backend != "cpu" && backend != "cuda" && backend != "mpi" && backend != "null")
    return usage("unknown backend `" + backend + "` (" + backendNames() + ")");
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
    ranks = std::atoi(a.flags["ranks"].c_str());
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
    BackendOptions bo;
    bo.cpuJit = &jit;
    bo.quickJit = &quickJit;
    // Without a driver, `cuda` fails here with one line naming what is missing.
    std::unique_ptr<Backend> be = makeBackend(backend, bo);
    Executor ex(s.module, *be, std::cout, eo);
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
