// dtensorc: the command-line driver. Each subcommand is a thin consumer of a
// Session (runtime/Session.h: the JIT caches, the run) and the pipeline
// (passes/Pipeline.h: the named steps); diagnostics are rendered by
// the one diagnostics engine. Exit codes: 0 ok, 1 program error (parse, type
// or runtime), 2 usage error, 3 internal compiler error.
#include "ir/Printer.h"
#include "passes/Explain.h"
#include "passes/Pipeline.h"
#include "runtime/CudaRuntime.h"
#include "runtime/Session.h"
#include "runtime/Verify.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
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
     "dtensorc run FILE [--ranks N] [--backend cpu|cuda] [--components] [--visualize]\n"
     "      [--reference] [--stats] [--no-jit] [--no-fusion] [--no-reuse] [--print-after=STEP]\n"
     "      [--time-passes] [-x dt|ir]",
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
     "      peak memory, kernel launches (in place) and collectives."},
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
     "dtensorc emit STEP FILE [--backend cpu|cuda] [--no-fusion] [--print-after=STEP]\n"
     "      [--time-passes] [-x dt|ir]",
     "Prints the output of one step of the compiler. The steps, in order:\n"
     "        parse     the AST, printed back as source\n"
     "        build     the typed global IR (it parses back: `-x ir` reads it as input)\n"
     "        flatten   + `@f.flat`, the straight-line copy of a function `grad` takes\n"
     "        autodiff  every `grad` a call of its generated gradient function\n"
     "        spmd      the per-rank program after SPMD lowering (collectives explicit)\n"
     "        fusion    the program after fusion (`call @fused.N`)\n"
     "        kernels   the program after fusion, then the kernel IR of every kernel\n"
     "        memplan   per block, the values that die at each instruction\n"
     "        codegen   every kernel's LLVM IR (optimized for the host), or its CUDA C++\n"
     "                  (for NVRTC) with --backend cuda\n"
     "      `-x ir` reads FILE as IR text (the `build` output) and runs the steps after\n"
     "      build on it. --print-after=STEP (also for run) prints a step's output to\n"
     "      stderr; --time-passes times every step, the front end included."},
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
    if (s == "-x") { // the input language: dt (default) or ir
      if (i + 1 >= argc)
        return "`-x` needs a value: dt or ir";
      a.flags["x"] = argv[++i];
      continue;
    }
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
      return a.flags.count("help") ? "" : "`emit` needs a step: " + stepNameList();
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
  std::optional<Step> emitStep;
  if (a.cmd == "emit" && !(emitStep = parseStep(a.sub)))
    return usage("unknown step `" + a.sub + "` (the steps: " + stepNameList() + ")");
  std::string printAfter = a.flags.count("print-after") ? a.flags["print-after"] : "";
  if (a.flags.count("print-after") && !parseStep(printAfter))
    return usage("--print-after: unknown step `" + printAfter + "` (the steps: " + stepNameList() +
                 ")");
  std::string lang = a.flags.count("x") ? a.flags["x"] : "dt";
  if (lang != "dt" && lang != "ir")
    return usage("-x: unknown input language `" + lang + "` (dt, ir)");
  bool irInput = lang == "ir";
  if (irInput && emitStep == Step::Parse)
    return usage("`emit parse` needs `.dt` source, not `-x ir`");
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
    ranks = std::atoi(a.flags["ranks"].c_str());
    if (ranks < 1)
      return usage("--ranks needs a positive number");
  }

  SessionOptions so;
  so.pipeline.printAfter = printAfter;
  so.pipeline.timePasses = a.flags.count("time-passes") > 0;
  so.pipeline.fusion = !a.flags.count("no-fusion");
  so.pipeline.target = backend == "cuda" ? CodeTarget::Cuda : CodeTarget::Llvm;
  so.reference = a.flags.count("reference") > 0;
  so.keepValues = false; // one run: every value is freed after its last use
  so.exec.ranks = ranks;
  so.exec.components = a.flags.count("components") > 0;
  so.exec.visualize = a.flags.count("visualize") > 0;
  so.exec.jit = !a.flags.count("no-jit");
  so.exec.memoryPlan = !a.flags.count("no-reuse");
  try {
    if (a.cmd == "verify") {
      VerifyResult vr = verifyFile(a.file, overrides, ranks);
      std::cerr << vr.diagnostics;
      if (!vr.compiled)
        return 1;
      std::cout << formatChecks(vr.checks);
      return allPass(vr.checks) ? 0 : 1;
    }
    Session s(so);
    DiagEngine &diags = s.diags();
    auto failed = [&]() {
      std::cerr << diags.renderAll();
      if (diags.errorCount() > 1)
        std::cerr << diags.errorCount() << " errors\n";
      return 1;
    };
    if (!s.compileFile(a.file, irInput))
      return failed();
    if (a.cmd == "check") {
      std::cerr << diags.renderAll();
      return 0;
    }
    if (emitStep == Step::Parse || emitStep == Step::Build) {
      std::cerr << diags.renderAll();
      if (emitStep == Step::Parse)
        std::cout << emitAst(s.compilation());
      else
        std::cout << printModule(s.compilation().module);
      return 0;
    }
    if (a.cmd == "emit" || a.cmd == "explain") {
      PipelineOptions po = so.pipeline;
      po.last = a.cmd == "explain" ? Step::Spmd : *emitStep;
      po.spmd = po.last >= Step::Spmd;
      if (po.last == Step::Codegen)
        po.jit = &s.jit();
      auto prog = s.program(po, std::cerr);
      if (!prog)
        return failed();
      std::cerr << diags.renderAll();
      if (a.cmd == "explain")
        std::cout << explainModule(prog->module(), s.compilation().sources);
      else
        std::cout << printStep(*prog, *emitStep);
      return 0;
    }
    // run
    std::cerr << diags.renderAll();
    if (backend == "cuda") {
      // Fails here with one line naming what is missing on a machine without
      // a GPU; where a GPU is present, program execution is not wired yet.
      CudaLibraries libs;
      CudaContext ctx(libs);
      throw RuntimeFault("--backend cuda: running programs on the CUDA backend is not "
                         "implemented yet (the kernels, allocator, cuBLAS and NCCL layers are; "
                         "the executor does not dispatch to them)");
    }
    if (!s.run(std::cout, std::cerr))
      return failed();
    if (a.flags.count("stats") && !so.reference) {
      const ExecStats &st = s.stats();
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
