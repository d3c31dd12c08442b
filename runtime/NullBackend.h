// This file implements the null backend (tinygrad's `ops_null`): it runs
// every rank of a program through the executor but computes nothing. Buffers
// are real, zero-filled host memory of the right sizes (so nothing above can
// crash on them), kernels "compile" to nothing and launch as no-ops, every op
// returns zeros of its result block's shape, and its communicators move no
// data. Ranks run one after another on the calling thread.
//
// What it is for: tests of everything above the backend interface — that the
// executor walks every rank's program, launches the kernels it should, runs
// the collectives it should and assembles prints and results of the right
// shapes — without depending on any one backend's arithmetic.
// `dtensorc run --backend null --stats` prints zeros and the counters.
#pragma once

#include "runtime/Backend.h"

namespace dt {

class NullBackend : public Backend {
public:
  const char *name() const override { return "null"; }
  NativeKernel compile(const Kernel &k, bool small) override;
  CompileCounters compileCounters() const override { return counters_; }
  void run(int ranks, const std::function<void(Device &)> &body) override;

private:
  CompileCounters counters_;
};

} // namespace dt
