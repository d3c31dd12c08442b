// This file implements the Session: one user's compiler and runtime — the
// front end's state (frontend/Compilation.h: sources, diagnostics, the global
// module, the builder's scopes), the pipeline (passes/Pipeline.h), the JIT
// caches (CpuJIT tiers) and the values of the program's top-level names kept
// between runs. The CLI, the REPL and the embedding API each own Sessions;
// a Session is not copyable and shares nothing with another, so several
// live in one process, each used by one thread at a time.
//
// Statements are compiled and run a chunk at a time:
//   s.compile("a.dt", "let a = ...\nprint(a)");  s.run(out);   // prints a
//   s.compile("b.dt", "print(a + 1)");            s.run(out);   // prints only a + 1
// compile() appends a chunk to the global program (the user's `main`); run()
// compiles the chunks not yet run into a program whose entry takes, as
// arguments, the values of earlier top-level names it reads and returns the
// values of the top-level names it binds; those global values are kept in
// the Session for later chunks. So nothing runs twice, and `let`/`var`
// values persist. The first chunk's program is the user's `main` itself.
#pragma once

#include "codegen/CpuJIT.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Backend.h"
#include "runtime/Executor.h"
#include "runtime/HostTensor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>

namespace dt {

struct SessionOptions {
  CompileOptions compile;
  /// printAfter, timePasses and fusion are used; spmd follows `reference`.
  PipelineOptions pipeline;
  /// ranks, components, visualize, jit, memoryPlan are used; the kernel
  /// compilers are the Session's own.
  ExecOptions exec;
  /// The backend that runs the program (runtime/Backend.h: cpu, mpi, cuda,
  /// null); made on the first run and kept for the Session's life.
  std::string backend = "cpu";
  /// Multi-process backends: seconds a rank waits in a collective before the
  /// job ends with a report (runtime/FaultWatch.h).
  double faultTimeout = 60;
  /// The mpi backend: world ranks each process hosts as threads
  /// (BackendOptions::ranksPerProcess).
  int ranksPerProcess = 1;
  /// Run on the single-device reference evaluator (global IR) instead.
  bool reference = false;
  /// BackendOptions::dryRun (`--backend cuda --dry-run`).
  bool dryRun = false;
  /// Keep the values of top-level names for later chunks (the REPL, the
  /// embedding API). The one-shot CLI turns it off: a program that runs once
  /// then frees every value after its last use (the memory plan).
  bool keepValues = true;
  /// The CPU JIT's on-disk kernel cache folder (CpuJIT::Options::diskCache;
  /// empty: none). `dtensorc` sets it from DTENSOR_KERNEL_CACHE / the user's
  /// cache folder; embedded sessions leave it empty unless asked.
  std::string kernelCache;
  /// Where the front end's --print-after / --time-passes output goes (null:
  /// std::cerr).
  std::ostream *log = nullptr;
};

class Session {
public:
  Session();
  explicit Session(SessionOptions opts);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// The front end's state (sources, diagnostics, the user's global module).
  Compilation &compilation() { return *c_; }
  DiagEngine &diags() { return c_->diags; }
  const SessionOptions &options() const { return opts_; }

  /// The `parse` and `build` steps of one chunk of statements (`text`, named
  /// `path` in diagnostics); `irInput` reads IR text instead (replaces the
  /// whole program). On error the program is left as it was before.
  bool compile(const std::string &path, const std::string &text, bool irInput = false);
  bool compileFile(const std::string &path, bool irInput = false);

  /// The program of the chunks not yet run, through every step after
  /// `build` (per `opts`; `log` gets --print-after and --time-passes output).
  /// Null after reporting errors to diags().
  std::shared_ptr<const CompiledProgram> program(const PipelineOptions &opts, std::ostream &log);

  /// Compiles (options().pipeline, log to `log`) and runs the chunks not yet
  /// run; prints go to `out`. Throws RuntimeFault / InternalError as the
  /// executor does; returns false after reporting compile errors.
  bool run(std::ostream &out, std::ostream &log);

  /// Compiles `text` as compile() does, calls `inspect` while the chunk is
  /// in the program (program() sees it), then takes the chunk back out: the
  /// program and its names are left as they were (the REPL's `:type`,
  /// `:explain`). Returns whether it compiled.
  bool tryCompile(const std::string &path, const std::string &text,
                  const std::function<void()> &inspect);

  /// The type of top-level name `name` (a `let`/`var`), if there is one.
  std::optional<TensorType> typeOf(const std::string &name) const;
  /// The value of top-level name `name` kept from the runs (its global
  /// value: partial values reduced), or null (unknown, or not run yet).
  const HostTensor *valueOf(const std::string &name) const;
  /// Drops the chunks compiled but not run (after a run that failed at run
  /// time): the names they bound are unbound again.
  void discardPending();

  /// Calls the top-level function `fn` on `args` (global values; host data,
  /// or any layout for values of the program) and returns its global
  /// results. `argTypes` (dtype and shape; a mesh for distributed values)
  /// picks the instance: compiled once per signature, then the program and
  /// its kernels are reused. Prints go to `out`. Returns false after
  /// reporting compile errors to diags(); throws RuntimeFault as run() does.
  /// `argStructs` (when not empty) names each argument's struct, "" for a
  /// tensor; a struct argument passes its leaves in field order.
  bool call(const std::string &fn, std::vector<TensorType> argTypes,
            const std::vector<HostTensor> &args, std::vector<HostTensor> &results,
            std::ostream &out, const std::vector<std::string> &argStructs = {});
  /// A top-level struct value's struct and leaf names (`p.w`, `p.attn.wq`,
  /// in field order); nullopt when `name` is not a struct value.
  std::optional<std::pair<std::string, std::vector<std::string>>>
  structValue(const std::string &name) const;
  /// The instances call() has compiled (one per signature).
  size_t callInstances() const { return calls_.size(); }
  /// The result types of the instance the last call() ran.
  const std::vector<TensorType> &lastCallResults() const { return lastCallResults_; }

  /// The backend, made on first use.
  Backend &backend();

  /// Counters of the last run (distributed runs).
  const ExecStats &stats() const { return stats_; }

  /// The Session's kernel compilers (O2 and O0 tiers), shared by its runs;
  /// made on first use (a Session that only checks never starts LLVM).
  CpuJIT &jit();
  CpuJIT &quickJit();

private:
  /// The module the pending chunk runs in: the global module with `main`
  /// made of the pending statements (earlier values as parameters, the
  /// values of top-level names it binds as results).
  Module chunkModule();
  /// Cuts `main` back to its first `keep` statements (and its `return`).
  void truncateMain(size_t keep);
  /// What the program holds now, and taking it back there (Session.cpp).
  struct Mark;
  Mark mark() const;
  void rollback(Mark &&m);

  /// A compiled instance for call(): its program and an executor that keeps
  /// its compiled kernels between calls.
  struct CallEntry {
    std::shared_ptr<const CompiledProgram> prog;
    std::unique_ptr<Module> module; ///< the functions the entry reaches
    std::string entry;
    std::vector<TensorType> results;
    std::unique_ptr<std::ostringstream> sink;
    std::unique_ptr<Executor> exec;
  };
  std::map<std::string, CallEntry> calls_; ///< signature -> instance
  uint64_t callsRedefinitions_ = 0;        ///< BuilderState::redefinitions calls_ saw
  std::vector<TensorType> lastCallResults_;
  /// The top-level names before the first chunk not yet run (Session.cpp).
  struct Pending;
  std::unique_ptr<Pending> pending_;

  SessionOptions opts_;
  std::unique_ptr<Compilation> c_;
  std::unique_ptr<CpuJIT> jit_, quickJit_;
  std::unique_ptr<Backend> backend_; ///< made on the first distributed run
  size_t ranUpTo_ = 0;               ///< instructions of `main` already run
  bool ranOnce_ = false;
  int programFile_ =
      0; ///< the latest compiled chunk's file (run-time faults elsewhere name theirs)
  std::map<int, HostTensor> values_; ///< value id in `main` -> global value
  /// The chunk program() last compiled: its parameters and results (value
  /// ids of `main`) and the end of its statements in `main`.
  std::vector<int> params_, results_;
  size_t chunkEnd_ = 0;
  ExecStats stats_;
};

} // namespace dt
