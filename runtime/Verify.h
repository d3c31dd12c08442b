// This file implements differential verification, the engine of
// `dtensorc verify` and of the `diff` tests: a program runs distributed on
// the virtual mesh (runtime/Executor.h) and on the single-device reference
// evaluator (runtime/Reference.h), and every printed value and every value
// `main` returns must agree — the layout-invariance property of DESIGN.md.
//
// Tolerances (per the distributed value's dtype): integers and bool exact;
// f32 |a - r| <= 1e-5 + 1e-4 |r|; f64 |a - r| <= 1e-10 + 1e-10 |r|; NaN
// matches NaN, infinities match exactly. Printed values are compared through
// their text (formatTensor), element by element — the reference evaluator
// only prints text, and the text is round-trip exact; values above 1000
// elements are compared on the entries the summary shows.
//
// Mesh overrides (`--mesh m=[2,2]`) replace a mesh's axis sizes (same number
// of axes; device ids become 0..n-1) in the program text before it is
// compiled, so one program can be verified on several meshes without editing
// it, and the checker judges it on the mesh it will run on.
#pragma once

#include "frontend/Compilation.h"
#include "ir/IR.h"
#include "runtime/Executor.h"
#include "runtime/HostTensor.h"

#include <string>
#include <vector>

namespace dt {

struct MeshOverride {
  std::string mesh;
  std::vector<int64_t> sizes;
};

/// Parses `NAME=[a,b,...]`; returns "" or the reason it is malformed.
std::string parseMeshOverride(const std::string &text, MeshOverride &out);

/// Rewrites the declaration `mesh NAME = [..] (devices [..])?` in the source
/// `text` (one line; comments ignored) to the override's sizes with devices
/// 0..n-1, so that the checker sees the real mesh (some placement rules, e.g.
/// reshape of sharded dims, depend on axis sizes). Line and column of every
/// other statement are unchanged. Returns "" or an error (no such mesh on one
/// line, wrong number of axes, a size < 1).
std::string applyMeshOverride(std::string &text, const MeshOverride &o);

/// The outcome of verifying one program.
struct VerifyResult {
  bool compiled = false;   ///< false: diagnostics says why (no run happened)
  std::string diagnostics; ///< rendered compiler diagnostics
  std::vector<struct OutputCheck> checks;
};

/// Compiles `path` twice (global pipeline for the reference evaluator, SPMD
/// pipeline for the executor), applies `overrides` to both, runs `main` on
/// both and compares the outputs. `ranks` as ExecOptions::ranks. Throws what
/// the runs throw (RuntimeFault, InternalError). `backend` runs the
/// distributed side (null: a cpu backend of the executor's own); a `cuda`
/// backend gets kernels for every source (CodeTarget::Cuda), as
/// `dtensorc run --backend cuda` does.
VerifyResult verifyFile(const std::string &path, const std::vector<MeshOverride> &overrides,
                        int ranks = 0, Backend *backend = nullptr);

/// verifyFile on the program `text` (named `path` in diagnostics), compiled
/// with `options` (the fuzz target shrinks the resource limits).
VerifyResult verifySource(const std::string &path, std::string text,
                          const std::vector<MeshOverride> &overrides, int ranks = 0,
                          const CompileOptions &options = {}, Backend *backend = nullptr);

/// The comparison of one output.
struct OutputCheck {
  std::string what; ///< `print #1 "d"`, `result 0 of main`
  std::string type; ///< `f32[2, 2]`
  double maxAbs = 0;
  double maxRel = 0; ///< over the elements whose reference is not below the absolute tolerance
  bool pass = true;
  std::string note; ///< why it failed, when not a numeric difference
};

/// Compares the reference's printed text (one formatted value a line) and
/// results with the distributed run's printed values and results.
std::vector<OutputCheck> compareOutputs(const std::string &refPrinted,
                                        const std::vector<HostTensor> &refResults,
                                        const std::vector<PrintedValue> &printed,
                                        const std::vector<HostTensor> &results);

/// One line per output (`PASS print #1 "d": f32[2, 2], max abs diff 0, max
/// rel diff 0`) and a final `PASS (n outputs)` or `FAIL (k of n outputs
/// differ)`.
std::string formatChecks(const std::vector<OutputCheck> &checks);

bool allPass(const std::vector<OutputCheck> &checks);

/// The outputs of one distributed run (no reference run): every printed
/// value and the values `main` returns, as gathered global values.
struct RunOutputs {
  bool compiled = false;
  std::string diagnostics;
  std::vector<PrintedValue> printed;
  std::vector<HostTensor> results;
};

/// Compiles `text` (with `overrides` applied) through the SPMD pipeline with
/// `options` and runs `main` on the executor (the deterministic-mode check of
/// the `diff` tests compares such runs on several meshes bit for bit).
RunOutputs runDistributed(const std::string &path, std::string text,
                          const std::vector<MeshOverride> &overrides,
                          const CompileOptions &options = {}, bool jit = true);

/// "" when `a` and `b` hold the same outputs bit for bit (dtype, shape and
/// every byte of every value; printed lines as text), else the first
/// difference (which output, which element, both values).
std::string compareBits(const RunOutputs &a, const RunOutputs &b);

} // namespace dt
