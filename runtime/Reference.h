// This file implements the single-device reference evaluator: an interpreter
// of the global-view IR that is the oracle of every differential test.
//
// It needs a verified module whose `grad` instructions were expanded by the
// autodiff pass, and computes every value's GLOBAL value on one device,
// ignoring placements entirely: relayout, distribute, to_host and the
// collectives of SPMD IR are the identity, and a Partial value's global value
// is simply the value. Numerics are those of runtime/RefKernels.h (f32 math in
// f32, f32 accumulations in double, wrapping integers, x / 0 = 0 for integers).
//
// Shapes must be concrete when an instruction runs. Size symbols of a generic
// function are bound from the shapes of its arguments at each call; any other
// symbolic dim is an InternalError. `print` writes formatTensor(value) and a
// newline to the output stream. No state outlives a run() call except the
// stream, so one evaluator may run many functions.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"

#include <ostream>
#include <string>
#include <vector>

namespace dt {

class LoopProgress;
class SourceManager;

class ReferenceEvaluator {
public:
  /// `progress` (may be null): told about the entry function's top-level
  /// `for` loops, as the executor tells it (`dtensorc run --reference
  /// --progress`).
  ReferenceEvaluator(const Module &m, std::ostream &out, LoopProgress *progress = nullptr);

  /// Runs function `fn` on global argument values and returns its results.
  /// Throws RuntimeFault for bad arguments or data-dependent faults (index out
  /// of range), InternalError for IR the evaluator cannot run.
  std::vector<HostTensor> run(const std::string &fn, const std::vector<HostTensor> &args);

  /// Iterations one `while` or `for` may run (0: no limit); past it run()
  /// throws RuntimeFault (CompileOptions::maxLoopTrips).
  void setMaxLoopTrips(int64_t n) { maxLoopTrips_ = n; }
  /// The program's sources and its own file in them: a fault in a module's
  /// function names that function's file.
  void setSources(const SourceManager *s, int programFile) {
    sources_ = s;
    programFile_ = programFile;
  }

  /// Calls deeper than this raise RuntimeFault (recursion is not a feature).
  static constexpr int kMaxCallDepth = 256;

private:
  struct Frame;
  std::vector<HostTensor> call(const Function &f, const std::vector<HostTensor> &args, int depth);
  /// Runs `b` in `fr`; returns the operands of its terminator (yield/return).
  std::vector<HostTensor> runBlock(const Block &b, Frame &fr, int depth);
  std::vector<HostTensor> evalInst(const Inst &in, Frame &fr, int depth);

  const Module &m_;
  std::ostream &out_;
  LoopProgress *progress_;
  int loopNest_ = 0; ///< `for` loops of the entry function being run
  int64_t maxLoopTrips_ = 0;
  const SourceManager *sources_ = nullptr;
  int programFile_ = 0;
  void checkTrips(uint64_t trips, const Inst &in) const;
};

} // namespace dt
