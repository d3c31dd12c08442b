// This file implements the pipeline (see Pipeline.h).
#include "passes/Pipeline.h"

#include "frontend/BuildIR.h"
#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "passes/SpmdLower.h"
#if __has_include("ir/Verifier.h")
#include "ir/Verifier.h"
#define DT_HAVE_VERIFIER 1
#endif

#include <chrono>

namespace dt {

namespace {

struct Pass {
  const char *name;
  bool (*run)(Session &s);
  bool spmd = false;   ///< runs only when PipelineOptions::spmd
  bool fusion = false; ///< runs only when PipelineOptions::fusion too
};

/// The IR builder ran in Session::compile; this step only verifies its output.
bool verifyBuilt(Session &) { return true; }

const Pass kPasses[] = {
    {"build", verifyBuilt},
    {"spmd", runSpmdLowering, true},
    {"fusion", runFusion, true, true},
};

const char *const kNames[] = {"build", "spmd", "fusion"};

} // namespace

const char *const *pipelinePassNames(int &count) {
  count = sizeof(kNames) / sizeof(kNames[0]);
  return kNames;
}

bool runPipeline(Session &s, const PipelineOptions &opts, std::ostream &log) {
  for (auto &p : kPasses) {
    if (p.spmd && !opts.spmd)
      continue;
    if (p.fusion && !opts.fusion)
      continue;
    auto t0 = std::chrono::steady_clock::now();
    if (!p.run(s))
      return false;
    auto t1 = std::chrono::steady_clock::now();
    if (opts.timePasses)
      log << "pass " << p.name << ": " << std::chrono::duration<double, std::milli>(t1 - t0).count()
          << " ms\n";
#ifdef DT_HAVE_VERIFIER
    if (s.options.verifyEach) {
      std::vector<std::string> errors;
      if (!verifyModule(s.module, errors)) {
        std::string msg = "IR verification failed after pass `" + std::string(p.name) + "`:";
        for (auto &e : errors)
          msg += "\n  " + e;
        throw InternalError(msg);
      }
    }
#endif
    if (opts.printAfter == p.name)
      log << printModule(s.module);
  }
  return true;
}

std::string emitAst(const Session &s) {
  std::string out;
  for (auto &p : s.builderState->programs)
    out += ast::printProgram(*p);
  return out;
}

} // namespace dt
