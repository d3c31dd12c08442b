// This file implements the Compilation: the front end's state of one program
// — sources, diagnostics, the user's global IR module, options and the
// builder's scopes — kept between compile() calls so that statements can be
// compiled a chunk at a time (the REPL). It is the lower half of a Session
// (runtime/Session.h), which adds the pipeline, the backends and the values
// kept between runs. Nothing lives in globals.
//
// The global module is only ever appended to by the builder: the pipeline
// (passes/Pipeline.h) lowers a copy of it.
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt {

namespace ast {
struct Program;
}

struct CompileOptions {
  /// Folders searched by `import name` (for `name.dt`), in order.
  std::vector<std::string> stdlibPaths;
  /// Opt-in: insert the cheapest relayout where placements disagree, and
  /// report each inserted collective as a remark (default: a type error).
  bool autoRelayout = false;
  /// Verify the IR after every pass (names the pass that broke it).
  bool verifyEach = true;
  /// Deterministic mode (`--deterministic`, docs/language.md): every
  /// reduction, contraction and partial(sum) collective follows one fixed
  /// order over the global index space, so results are bit-identical on any
  /// mesh and layout. A property of the compiled program (the executor reads
  /// it from the CompiledProgram), never a global.
  bool deterministic = false;

  // Resource limits: `check` rejects a program that exceeds one, with a
  // diagnostic at the declaration, so that `run` never meets it.
  /// Elements of one tensor (its global shape). 2^32 f32 elements are 16 GiB;
  /// beyond it the kernels' buffers and offsets are not meaningful on one host.
  int64_t maxTensorElements = int64_t(1) << 32;
  /// Dims of one tensor at most (NumPy's and PyTorch's 64): every pass is
  /// linear in a tensor's rank or more, and LLVM's loop passes are not, so a
  /// hostile `f32[1, 1, ...]` of thousands of dims stops here.
  int64_t maxTensorRank = 64;
  /// Ranks of one process: every rank is a thread of the local runtime, and a
  /// mesh's device ids name ranks, so the largest device id must lie below it.
  int64_t maxRanks = 4096;
  /// Bytes of one source file (a program or an imported module).
  int64_t maxSourceBytes = int64_t(16) << 20;
  /// Tensors of one struct, its nested structs' fields flattened (each is a
  /// value of every function that takes the struct; doubling nests would
  /// otherwise grow exponentially).
  int64_t maxStructTensors = 16384;
  /// Calls nested in calls, from the program's top level: the executors'
  /// limit (Executor::kMaxCallDepth), checked when the program is built.
  int maxCallDepth = 256;
  /// Run-time (read by `verifySource` for both evaluators): iterations one
  /// `while` or run-time-bound `for` may run; past it the run stops with a
  /// RuntimeFault. 0: no limit (the fuzzer sets one, since a mutated `while`
  /// may never end).
  int64_t maxLoopTrips = 0;
  /// Whether `load` and `save` may touch files (off for fuzzing and for
  /// sandboxed hosts: a program from an untrusted source then cannot write).
  bool fileAccess = true;

  /// The result types of `grad` of `fn` w.r.t. `wrt` (primal value first
  /// when `withValue`), or false after reporting why it cannot be
  /// differentiated. The builder records `grad` unexpanded with these types;
  /// the pipeline (passes/Pipeline.h: pipelineCompileOptions) provides it,
  /// since autodiff lives above the front end.
  std::function<bool(const Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                     bool withValue, DiagEngine &diags, SrcLoc loc, std::vector<TensorType> &out)>
      gradientTypes;
};

/// Reads the source file `path` into `text`: only a regular file of at most
/// `maxBytes` bytes, or standard input for `-`. Returns the diagnostic kind of
/// a failure (its arguments: the path, then the limit).
std::optional<DiagId> readSourceFile(const std::string &path, int64_t maxBytes, std::string &text);

class Compilation {
public:
  Compilation();
  explicit Compilation(CompileOptions opts);
  Compilation(const Compilation &) = delete;
  Compilation &operator=(const Compilation &) = delete;

  SourceManager sources;
  DiagEngine diags{sources};
  Module module;
  CompileOptions options;

  /// The `parse` step: parses `text` (named `path` in diagnostics) into an
  /// AST; null after reporting errors.
  std::unique_ptr<ast::Program> parse(const std::string &path, const std::string &text);

  /// The `build` step: resolves names, infers shapes and checks placements
  /// of `prog` into `module`, appending its statements to the top-level
  /// function `main`. Returns false if any error was reported.
  bool build(std::unique_ptr<ast::Program> prog);

  /// parse + build.
  bool compile(const std::string &path, const std::string &text);

  /// Reads `path` and compiles it; a missing file is reported as an error.
  bool compileFile(const std::string &path);

  /// Reads `path` into `text`; false after reporting an error.
  bool readFile(const std::string &path, std::string &text);

  /// Per-compilation builder state kept between compile() calls (REPL): the
  /// builder's scopes. Opaque here.
  struct BuilderState;
  std::shared_ptr<BuilderState> builderState;

  /// Called on every parsed chunk before it is built (the REPL turns an
  /// expression statement into a binding it can print); may be empty.
  std::function<void(ast::Program &)> afterParse;

  /// The IR function that a call of the top-level function `fn` runs on
  /// arguments of `argTypes` (the embedding API's calls), instantiated on
  /// first use and reused after. A host argument (no mesh) of a parameter
  /// with a written layout takes that layout (the call distributes it);
  /// `argTypes` is updated to the types the call passes. "" after
  /// reporting why the call does not type-check. `argStructs`, when not
  /// empty, names each argument's struct ("" for a tensor): `argTypes` then
  /// holds a struct argument's leaves in field order.
  std::string instantiateCall(const std::string &fn, std::vector<TensorType> &argTypes,
                              const std::vector<std::string> &argStructs = {});

  /// Reports (and returns false) when the program's calls nest deeper than
  /// options.maxCallDepth (frontend/CallDepth.cpp).
  bool checkCallDepth();

  /// The value ids of `main` bound to top-level names (`let`/`var`), which a
  /// later chunk may read.
  std::vector<int> globalValues() const;
};

} // namespace dt
