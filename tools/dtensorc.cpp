// dtensorc: the command-line driver. Each subcommand is a thin consumer of a
// Session (runtime/Session.h: the JIT caches, the run) and the pipeline
// (passes/Pipeline.h: the named steps); diagnostics are rendered by
// the one diagnostics engine; the command line is checked against the table
// of commands and flags in CommandLine.cpp. Exit codes: 0 ok, 1 program error
// (parse, type or runtime), 2 usage error, 3 internal compiler error.
#include "ir/Printer.h"
#include "passes/Explain.h"
#include "passes/Pipeline.h"
#include "runtime/Backend.h"
#include "runtime/KernelRuntime.h"
#include "runtime/Launch.h"
#include "runtime/Session.h"
#include "runtime/Verify.h"
#include "support/Errors.h"
#include "tools/CommandLine.h"
#include "tools/Progress.h"
#include "tools/ReplTerminal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace dt;

namespace {
int dtensorcMain(int argc, char **argv);
}

int main(int argc, char **argv) {
  int code = dtensorcMain(argc, argv);
  // What a command wrote on stdout (an emitted IR, a table, --help) must
  // have arrived: a full disk or a closed pipe is a failure, not exit 0.
  std::cout.flush();
  if (code == 0 && !std::cout) {
    std::cerr << "dtensorc: error: cannot write the output (stdout)\n";
    return 1;
  }
  return code;
}

namespace {

int dtensorcMain(int argc, char **argv) {
  const char *banner = "dtensorc " DT_VERSION " (LLVM " DT_LLVM_VERSION ")";
  // `dtensorc` alone on a terminal is the REPL.
  if (argc == 1 && isatty(0)) {
    ReplOptions ro;
    ro.kernelCache = dtcli::kernelCacheDir();
    return runRepl(ro, "", true, banner);
  }
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
  // `emit STEP` names a pipeline step (checked against the same list by
  // the command line); --print-after too.
  std::optional<Step> emitStep;
  if (a.cmd == "emit" && !(emitStep = parseStep(a.sub)))
    return usage("unknown step `" + a.sub + "` (the steps: " + stepNameList() + ")");
  std::string printAfter = a.flags.count("print-after") ? a.flags["print-after"] : "";
  if (a.flags.count("print-after") && !parseStep(printAfter))
    return usage("--print-after: unknown step `" + printAfter + "` (the steps: " + stepNameList() +
                 ")");
  if (!printAfter.empty()) {
    // The last step each command runs: a later one would print nothing.
    const std::pair<const char *, Step> lastStep[] = {
        {"check", Step::Build}, {"explain", Step::Spmd}, {"run", Step::MemPlan}};
    for (auto &[cmd, last] : lastStep)
      if (a.cmd == cmd && !(a.cmd == "run" && a.flags.count("reference")) &&
          (int)*parseStep(printAfter) > (int)last)
        return usage("--print-after: `" + a.cmd + "` runs the steps up to `" + stepName(last) +
                     "`, not `" + printAfter + "`; `dtensorc emit " + printAfter +
                     " FILE` prints that step's output");
  }
  if (a.cmd == "emit" && !printAfter.empty() && (int)*parseStep(printAfter) > (int)*emitStep)
    return usage("--print-after: `emit " + a.sub + "` runs the steps up to `" + a.sub + "`, not `" +
                 printAfter + "`; `dtensorc emit " + printAfter +
                 " FILE` prints that step's output");
  if (a.cmd == "run" && a.flags.count("reference")) {
    for (const char *f : {"stats", "profile", "components", "visualize", "dry-run"})
      if (a.flags.count(f))
        return usage(std::string("--") + f +
                     " describes the distributed run; --reference runs the single-device "
                     "evaluator instead");
    // The reference evaluator runs the global program on one device, on the
    // host, without kernels: these would be silently ignored.
    for (const char *f : {"backend", "ranks", "no-jit", "no-fusion", "no-reuse",
                          "ranks-per-process", "ranks-per-node"})
      if (a.flags.count(f))
        return usage(std::string("--") + f +
                     " configures the distributed run; --reference runs the single-device "
                     "evaluator instead (on the host, without kernels)");
    if (!printAfter.empty() && (int)*parseStep(printAfter) > (int)Step::Autodiff)
      return usage("--print-after: --reference runs the global program, the steps up to "
                   "`autodiff`, not `" +
                   printAfter + "`");
  }
  std::string lang = a.flags.count("x") ? a.flags["x"] : "dt";
  if (lang != "dt" && lang != "ir")
    return usage("-x: unknown input language `" + lang + "` (dt, ir)");
  bool irInput = lang == "ir";
  if (irInput && emitStep == Step::Parse)
    return usage("`emit parse` needs `.dt` source, not `-x ir`");
  // Under an MPI launcher each process is one world rank (the mpi backend);
  // a torchrun-style launch is refused rather than run the whole mesh in
  // every process (runtime/Launch.h).
  const Launch launch = detectLaunch();
  const bool runs = a.cmd == "run" || a.cmd == "verify";
  if (runs && launch.kind == Launch::Kind::Torch && launch.size != 1) {
    std::cerr << "dtensorc: started by a torchrun-style launcher (RANK=" << launch.rank
              << ", WORLD_SIZE=" << launch.size
              << "), whose rendezvous dtensorc does not use: start one process per rank with "
                 "`mpirun -np "
              << (launch.size > 0 ? std::to_string(launch.size) : std::string("N"))
              << " dtensorc run FILE` (Open MPI; NCCL on GPUs), or run `dtensorc run FILE` once "
                 "(its ranks are threads)\n";
    return 2;
  }
  const bool underMpi = launch.kind == Launch::Kind::Mpi;
  // Only world rank 0 writes results and warnings; errors are every rank's.
  const bool quiet = underMpi && launch.rank != 0;
  std::string backend = a.flags.count("backend") ? a.flags["backend"]
                        : underMpi && runs       ? "mpi"
                                                 : "cpu";
  if (backend != "cpu" && backend != "cuda" && backend != "mpi" && backend != "null")
    return usage("unknown backend `" + backend + "` (" + backendNames() + ")");
  if (a.flags.count("dry-run") && backend != "cuda")
    return usage("--dry-run plans a GPU run: it needs --backend cuda");
  if (a.cmd == "verify" && a.flags.count("backend") && backend != "cpu" && backend != "cuda")
    return usage("`verify` runs the distributed side on `cpu` threads or `cuda` (one GPU), not `" +
                 backend + "`");
  if (runs && underMpi && launch.size != 1 && (backend == "cpu" || backend == "null"))
    return usage("--backend " + backend + " runs every rank in each process: under " +
                 launch.launcher +
                 " each process is one rank (`--backend mpi`, the default there)");
  double faultTimeout = 60;
  {
    // The flag, else the environment; a bad value names where it came from.
    const char *env = std::getenv("DTENSOR_FAULT_TIMEOUT");
    bool flag = a.flags.count("fault-timeout") != 0;
    if (flag || env) {
      std::string text = flag ? a.flags["fault-timeout"] : env;
      char *end = nullptr;
      faultTimeout = std::strtod(text.c_str(), &end);
      if (!end || *end || text.empty())
        faultTimeout = 0;
    }
    if (!(faultTimeout > 0 && faultTimeout <= 1e6))
      return usage(std::string(flag ? "--fault-timeout" : "DTENSOR_FAULT_TIMEOUT (environment)") +
                   " needs a number of seconds (a positive number, as 60 or 2.5)");
  }
  // A count flag: a positive integer up to `max`; "" when `text` is one
  // (its value in `out`), else why not.
  auto count = [](const std::string &flag, const std::string &text, long long max,
                  const std::string &example, long long &out) -> std::string {
    char *end = nullptr;
    long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
    bool number = end && *end == 0 && !text.empty();
    if (number && v > max)
      return flag + " " + text + " is more ranks than it can have (at most " + std::to_string(max) +
             ")";
    if (!number || v < 1)
      return flag + " needs a positive number of ranks (as " + example + ")";
    out = v;
    return "";
  };
  int perProcess = 1;
  if (a.flags.count("ranks-per-process")) {
    long long k = 0;
    if (std::string why =
            count("--ranks-per-process", a.flags["ranks-per-process"], 4096, "2 or 8", k);
        !why.empty())
      return usage(why);
    perProcess = (int)k;
    if (backend != "mpi")
      return usage("--ranks-per-process needs the mpi backend (under mpirun, the default); "
                   "without mpirun every rank is already a thread of one process");
  }
  // Which ranks share a node: the flag, the environment, else the launcher
  // (processes on this node x ranks per process; ir/Topology.h).
  int64_t perNode = 0;
  std::string perNodeText = a.flags.count("ranks-per-node") ? a.flags["ranks-per-node"]
                            : std::getenv("DTENSOR_RANKS_PER_NODE")
                                ? std::getenv("DTENSOR_RANKS_PER_NODE")
                                : "";
  if (!perNodeText.empty()) {
    long long r = 0;
    if (std::string why =
            count(a.flags.count("ranks-per-node") ? "--ranks-per-node"
                                                  : "DTENSOR_RANKS_PER_NODE (environment)",
                  perNodeText, 1 << 30, "8", r);
        !why.empty())
      return usage(why);
    perNode = r;
  } else if (underMpi && launch.localSize > 0 && launch.localSize < launch.size) {
    perNode = (int64_t)launch.localSize * perProcess;
  }
  std::vector<MeshOverride> overrides;
  for (auto &text : a.meshes) {
    MeshOverride o;
    std::string why = parseMeshOverride(text, o);
    if (!why.empty())
      return usage("--mesh: " + why);
    for (const MeshOverride &before : overrides)
      if (before.mesh == o.mesh)
        return usage("--mesh: mesh `" + o.mesh + "` is given twice; give each mesh once");
    overrides.push_back(o);
  }
  int ranks = 0;
  if (a.flags.count("ranks")) {
    long long n = 0;
    if (std::string why = count("--ranks", a.flags["ranks"], 1 << 20, "8", n); !why.empty())
      return usage(why);
    ranks = (int)n;
  }

  // Under mpirun only `run` is a program of several processes: the other
  // commands would do the same work in each, so world rank 0's alone does.
  if (quiet && a.cmd != "run")
    return 0;

  SessionOptions so;
  so.pipeline.printAfter = printAfter;
  so.pipeline.timePasses = a.flags.count("time-passes") > 0;
  so.pipeline.fusion = !a.flags.count("no-fusion");
  so.pipeline.target = backend == "cuda" ? CodeTarget::Cuda : CodeTarget::Llvm;
  so.pipeline.topology.ranksPerNode = perNode;
  so.reference = a.flags.count("reference") > 0;
  so.compile.deterministic = a.flags.count("deterministic") > 0;
  so.backend = backend;
  so.faultTimeout = faultTimeout;
  so.ranksPerProcess = perProcess;
  so.keepValues = false; // one run: every value is freed after its last use
  so.kernelCache = dtcli::kernelCacheDir();
  so.exec.ranks = ranks;
  so.dryRun = a.flags.count("dry-run") > 0;
  so.exec.profile = a.flags.count("profile") > 0;
  so.exec.components = a.flags.count("components") > 0;
  so.exec.visualize = a.flags.count("visualize") > 0;
  so.exec.jit = !a.flags.count("no-jit");
  so.exec.memoryPlan = !a.flags.count("no-reuse");
  so.exec.crashInSave = std::getenv("DTENSOR_TEST_CRASH_IN_SAVE") != nullptr;
  dtcli::TerminalProgress progress(2);
  if (a.flags.count("progress") && progress.active())
    so.exec.progress = &progress;
  // Outlives the try: a run-time fault is rendered with the program's
  // sources (the failed line, a module's line, the calls it came through).
  std::unique_ptr<Session> session;
  try {
    if (a.cmd == "repl") {
      if (backend == "mpi")
        return usage("the REPL runs every rank in this process (`--backend cpu`, `cuda` or "
                     "`null`); `mpi` runs one rank per process: `mpirun ... dtensorc run FILE`");
      ReplOptions ro;
      ro.backend = backend;
      ro.kernelCache = dtcli::kernelCacheDir();
      ro.deterministic = so.compile.deterministic;
      return runRepl(ro, a.file, isatty(0), banner);
    }
    if (a.cmd == "verify") {
      // The distributed side on the backend asked for (`--backend cuda`:
      // virtual ranks on one GPU); cpu threads otherwise.
      std::unique_ptr<Backend> gpu;
      if (backend == "cuda") {
        BackendOptions bo;
        bo.faultTimeout = faultTimeout;
        gpu = makeBackend(backend, bo);
      }
      // A --mesh that does not fit the program is a usage error, as a
      // malformed one is.
      bool readable = false;
      if (std::ifstream in{a.file}; (readable = bool(in)) && !overrides.empty()) {
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (const MeshOverride &o : overrides)
          if (std::string why = applyMeshOverride(text, o); !why.empty())
            return usage("--mesh: " + why);
      }
      VerifyResult vr = verifyFile(a.file, overrides, ranks, gpu.get());
      std::cerr << vr.diagnostics;
      if (!vr.compiled) {
        for (const MeshOverride &o : readable ? overrides : std::vector<MeshOverride>{})
          std::cerr << "note: --mesh " << o.mesh << "=[...] rewrote the declaration of mesh `"
                    << o.mesh << "`: an error there quotes the rewritten line\n";
        return 1;
      }
      std::cout << formatChecks(vr.checks);
      return allPass(vr.checks) ? 0 : 1;
    }
    session = std::make_unique<Session>(so);
    Session &s = *session;
    DiagEngine &diags = s.diags();
    auto failed = [&]() {
      std::cerr << diags.renderAll();
      if (diags.errorCount() > 1)
        std::cerr << diags.errorCount() << " errors\n";
      return 1;
    };
    // Under mpirun every process compiles the same program: world rank 0's
    // process reports its errors, once.
    if (!s.compileFile(a.file, irInput))
      return quiet ? 1 : failed();
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
        std::cout << explainModule(prog->module(), s.compilation().sources, "main",
                                   so.pipeline.topology);
      else
        std::cout << printStep(*prog, *emitStep);
      return 0;
    }
    // run
    if (!quiet)
      std::cerr << diags.renderAll();
    if (!s.run(std::cout, std::cerr))
      return failed();
    if (!quiet && !s.stats().ranks.empty() && s.stats().ranks[0].savesSkipped > 0)
      std::cerr << "note: this run computes nothing (--backend null, or --dry-run): "
                << s.stats().ranks[0].savesSkipped
                << " `save`/`save_checkpoint` wrote no file (they would have written zeros)\n";
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "error: cannot write the output (stdout)\n";
      return 1;
    }
    if (a.flags.count("stats") && !so.reference && !quiet) {
      const ExecStats &st = s.stats();
      std::cerr << "stats: " << st.kernels << " fused kernels, " << st.compiles << " compiled, "
                << st.cacheHits << " cache hits, " << st.compileSeconds * 1e3 << " ms compiling, "
                << st.diskHits << " loaded from the kernel cache\n";
      for (size_t r = 0; r < st.ranks.size(); ++r) {
        const RankStats &rs = st.ranks[r];
        std::cerr << "stats: rank " << r << ": peak " << rs.peakBytes << " bytes, "
                  << rs.kernelCalls << " kernel launches (" << rs.inPlace << " in place, "
                  << rs.reused << " reused buffers), " << rs.collectives << " collectives";
        if (!rs.fallbackOps.empty()) {
          std::cerr << ", host fallback ops:";
          for (auto &[op, n] : rs.fallbackOps)
            std::cerr << " " << op << " " << n;
        }
        std::cerr << "\n";
      }
      std::cerr << s.backend().report();
    }
    if (so.exec.profile && !so.reference && !quiet && !s.stats().ranks.empty())
      std::cerr << formatProfile(s.stats().ranks[0].profile);
    return 0;
  } catch (const ReportedElsewhere &) {
    return 1; // world rank 0 reports it
  } catch (const RuntimeFault &f) {
    std::cout.flush();
    SourceManager none;
    SourceManager &sm = session && !irInput ? session->compilation().sources : none;
    std::cerr << DiagEngine(sm).render(faultDiagnostic(f, sm));
    return 1;
  } catch (const InternalError &e) {
    std::cout.flush();
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  } catch (const std::bad_alloc &) {
    // Memory ran out outside the runtime's own checks (the compiler's tables
    // of a huge constant): a line, not an abort.
    std::cout.flush();
    std::cerr << "error: out of memory (the program needs more memory than this machine gives "
                 "it, while compiling or running)\n";
    return 1;
  }
}

} // namespace
