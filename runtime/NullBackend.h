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
//
// Plan::Cuda is `dtensorc run --backend cuda --dry-run`: the same run, but
// every kernel is lowered to CUDA C++ and compiled by NVRTC for sm_90 (no GPU
// needed; an NVRTC error fails the run), and every launch gets the geometry
// the cuda backend would give it on an H100 (cudaLaunchDims, cudaReduceSplit
// with 132 SMs; a split reduction as if 8 blocks fit an SM: the real
// occupancy needs the device). report() sums it up for --stats.
#pragma once

#include "runtime/Backend.h"

#include <deque>
#include <map>
#include <memory>
#include <string>

namespace dt {

class CudaLibraries;
class NvrtcCompiler;

class NullBackend : public Backend {
public:
  enum class Plan { None, Cuda };
  explicit NullBackend(Plan plan = Plan::None);
  ~NullBackend() override;
  const char *name() const override { return plan_ == Plan::Cuda ? "cuda" : "null"; }
  NativeKernel compile(const Kernel &k, bool small) override;
  CompileCounters compileCounters() const override { return counters_; }
  void run(int ranks, const std::function<void(Device &)> &body) override;
  std::string report() const override;

  /// What a cuda plan counted (Plan::Cuda).
  struct CudaPlanStats {
    int64_t launches = 0, splitLaunches = 0, maxGrid = 0, gemms = 0;
  };
  /// Called by the plan's devices for every kernel launch.
  void planLaunch(const Kernel &k, const int64_t *params);
  /// A kernel with a scatter store: its one-chunk launch (CudaEmitter.h).
  void planScatter(const Kernel &k, const int64_t *params, int64_t rows);
  void planGemm() { ++plan_stats_.gemms; }
  bool planning() const { return plan_ == Plan::Cuda; }

private:
  Plan plan_;
  CompileCounters counters_;
  std::unique_ptr<CudaLibraries> libs_;
  std::unique_ptr<NvrtcCompiler> nvrtc_;
  std::deque<Kernel> kernels_;                     ///< compiled (NativeKernel handles)
  std::map<std::string, const Kernel *> compiled_; ///< by kernel text: compiled once each
  CudaPlanStats plan_stats_;
};

} // namespace dt
