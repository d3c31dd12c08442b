// This file implements the pipeline: the whole compiler, as one straight list
// of named steps from source text to a runnable program.
//
//   parse → build → flatten → autodiff → spmd → fusion → kernels → memplan → codegen
//
//   parse     source text → AST (grammar/)
//   build     AST → typed global IR, names/shapes/placements checked, appended
//             to the Compilation's global module (frontend/)
//   flatten   every function that a `grad` differentiates gets a straight-line
//             copy (calls inlined, loops unrolled)            (passes/Flatten)
//   autodiff  every `grad` becomes a call of a generated gradient function
//                                                             (passes/Autodiff)
//   spmd      placement changes become explicit collectives   (passes/SpmdLower)
//   fusion    elementwise chains become kernel functions      (passes/Fusion)
//   kernels   each kernel function → kernel IR                (codegen/FusedKernel)
//   memplan   per block, where each value dies                (passes/MemoryPlan)
//   codegen   kernel IR → LLVM IR (CPU) or CUDA C++ (NVRTC)   (codegen/)
//
// parse and build work on the Compilation (the front end appends to the
// user's global module); every later step works on a COPY of that module
// owned by the CompiledProgram it produces, so lowering never rewrites what
// the user wrote. The driver's `emit STEP`, `--print-after=STEP` and
// `--time-passes` use exactly these names; `--verify-each` (on by default)
// runs the IR verifier after every IR step and names the step that broke an
// invariant.
#pragma once

#include "codegen/FusedKernel.h"
#include "frontend/Compilation.h"
#include "ir/Topology.h"
#include "passes/MemoryPlan.h"

#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace dt {

class CpuJIT;

enum class Step { Parse, Build, Flatten, Autodiff, Spmd, Fusion, Kernels, MemPlan, Codegen };
constexpr int kNumSteps = 9;

const char *stepName(Step s);
/// The step called `name`, or nullopt.
std::optional<Step> parseStep(const std::string &name);
/// `parse, build, ..., codegen` (for usage errors).
std::string stepNameList();

/// The code the `codegen` step emits.
enum class CodeTarget { Llvm, Cuda };

struct PipelineOptions {
  std::string printAfter; ///< step name: print its output to `log` after it
  bool timePasses = false;
  /// Also run the steps that make the program per-rank (spmd and after).
  /// Off for the global IR (`emit autodiff`, `run --reference`).
  bool spmd = false;
  /// Run fusion (and kernels) after SPMD lowering (`--no-fusion` turns it off).
  bool fusion = true;
  /// The last step to run (later steps are skipped).
  Step last = Step::MemPlan;
  /// What `codegen` emits, and the CPU JIT whose target machine optimizes
  /// LLVM IR (null: unoptimized LLVM IR).
  CodeTarget target = CodeTarget::Llvm;
  CpuJIT *jit = nullptr;
  /// Which ranks share a node (SPMD lowering keeps traffic inside nodes where
  /// it can; ir/Topology.h). Default: one node.
  Topology topology;
};

/// A kernel of the program: the kernel function's name and its kernel IR.
struct ProgramKernel {
  std::string function;
  FusedKernel kernel;
};

/// What the pipeline makes and an executor consumes: immutable once built.
class CompiledProgram {
public:
  CompiledProgram(const CompiledProgram &) = delete;
  CompiledProgram &operator=(const CompiledProgram &) = delete;

  /// The program's module: per-rank (SPMD-lowered, fused) when spmd(), else
  /// the global IR with `grad` expanded. Never the user's module itself.
  const Module &module() const { return *module_; }
  /// The function to run.
  const std::string &entry() const { return entry_; }
  bool spmd() const { return spmd_; }
  /// The last step that ran.
  Step last() const { return last_; }
  /// Kernel IR of every kernel function (the `kernels` step).
  const std::vector<ProgramKernel> &kernels() const { return kernels_; }
  /// The memory plan (null when the `memplan` step did not run).
  const MemoryPlan *memoryPlan() const { return plan_.get(); }
  /// Per kernel, the emitted code (the `codegen` step; empty when it did not run).
  const std::vector<std::string> &code() const { return code_; }

private:
  friend struct PipelineRun;
  CompiledProgram() = default;
  std::unique_ptr<Module> module_;
  std::string entry_ = "main";
  bool spmd_ = false;
  Step last_ = Step::Build;
  std::vector<ProgramKernel> kernels_;
  std::unique_ptr<MemoryPlan> plan_;
  std::vector<std::string> code_;
};

/// `base` with the hooks the front end needs from the passes above it (the
/// autodiff typing of `grad`). Every Compilation that builds programs with
/// `grad` is made with these options.
CompileOptions pipelineCompileOptions(CompileOptions base = {});

/// The front-end steps, `parse` and `build`, of `text` into `c` (timed and
/// printed per `opts`). `text` is `.dt` source, or IR text when `irInput`
/// (`dtensorc -x ir`: the module is read whole and replaces `c.module`; the
/// build step then only verifies it). False with diagnostics in c.diags.
bool runFrontEnd(Compilation &c, const std::string &path, const std::string &text,
                 const PipelineOptions &opts, std::ostream &log, bool irInput = false);

/// Every step after `build`, on `global` (a copy the program owns), with
/// `entry` as the function to run. Null with diagnostics in `diags` on a
/// program error; InternalError when a step breaks the IR (naming the step).
std::shared_ptr<const CompiledProgram> compileProgram(Module global, const std::string &entry,
                                                      const PipelineOptions &opts,
                                                      const CompileOptions &copts,
                                                      DiagEngine &diags, std::ostream &log);

/// The program of everything compiled into `c` so far (entry `main`).
std::shared_ptr<const CompiledProgram> compileProgram(Compilation &c, const PipelineOptions &opts,
                                                      std::ostream &log);

/// Tests and tools that inspect a lowered module through the Compilation:
/// compiles `s`'s module and replaces `s.module` by the program's module.
bool runPipeline(Compilation &s, const PipelineOptions &opts, std::ostream &log);

/// What `--print-after=STEP` / `emit STEP` print for `step` of `p`.
std::string printStep(const CompiledProgram &p, Step step);

/// The AST of every source file compiled into `s`, printed back as text.
std::string emitAst(const Compilation &s);

} // namespace dt
