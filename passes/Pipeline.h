// This file implements the pipeline: the straight list of named passes that
// takes a compiled Session's global IR to what the backends run. It is the one
// place that says what runs in which order, so the driver can offer
// --print-after=PASS, --verify-each and --time-passes.
#pragma once

#include "frontend/Session.h"

#include <ostream>
#include <string>

namespace dt {

struct PipelineOptions {
  std::string printAfter; ///< pass name: print the IR after it
  bool timePasses = false;
  /// Also run the passes that make the program per-rank (`spmd`: SPMD
  /// lowering). Off for the global IR (`emit ir`, `run --reference`).
  bool spmd = false;
  /// Run the fusion pass after SPMD lowering (`--no-fusion` turns it off).
  bool fusion = true;
};

/// Runs every pass in order on `s.module`, verifying the IR after each (when
/// s.options.verifyEach); returns false with diagnostics on failure.
bool runPipeline(Session &s, const PipelineOptions &opts, std::ostream &log);

/// The names of the passes, in order.
const char *const *pipelinePassNames(int &count);

/// The AST of every source file compiled into `s`, printed back as text.
std::string emitAst(const Session &s);

} // namespace dt
