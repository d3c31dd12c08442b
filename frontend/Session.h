// This file implements the Session: all state of one compilation and run —
// sources, diagnostics, the IR module and options. The CLI, the REPL and the
// embedding API each own Sessions; nothing lives in globals.
#pragma once

#include "support/Diagnostics.h"
#include "ir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace dt {

struct SessionOptions {
  /// Folders searched by `import name` (for `name.dt`), in order.
  std::vector<std::string> stdlibPaths;
  /// Opt-in: insert the cheapest relayout where placements disagree, and
  /// report each inserted collective as a remark (default: a type error).
  bool autoRelayout = false;
  /// Verify the IR after every pass (names the pass that broke it).
  bool verifyEach = true;

  // Resource limits: `check` rejects a program that exceeds one, with a
  // diagnostic at the declaration, so that `run` never meets it.
  /// Elements of one tensor (its global shape). 2^32 f32 elements are 16 GiB;
  /// beyond it the kernels' buffers and offsets are not meaningful on one host.
  int64_t maxTensorElements = int64_t(1) << 32;
  /// Ranks of one process: every rank is a thread of the local runtime, and a
  /// mesh's device ids name ranks, so the largest device id must lie below it.
  int64_t maxRanks = 4096;
  /// Bytes of one source file (a program or an imported module).
  int64_t maxSourceBytes = int64_t(16) << 20;
};

/// Reads the source file `path` into `text`: only a regular file of at most
/// `maxBytes` bytes. Returns the diagnostic kind of a failure (its arguments:
/// the path, then the limit).
std::optional<DiagId> readSourceFile(const std::string &path, int64_t maxBytes, std::string &text);

class Session {
public:
  Session();
  explicit Session(SessionOptions opts);

  SourceManager sources;
  DiagEngine diags{sources};
  Module module;
  SessionOptions options;

  /// Parses, resolves names, infers shapes and checks placements of `text`
  /// (named `path` in diagnostics) into `module` (appending to the top-level
  /// function `main`). Returns false if any error was reported.
  bool compile(const std::string &path, const std::string &text);

  /// Reads `path` and compiles it; a missing file is reported as an error.
  bool compileFile(const std::string &path);

  /// Per-session compiler state kept between compile() calls (REPL): the
  /// builder's scopes. Opaque here.
  struct BuilderState;
  std::shared_ptr<BuilderState> builderState;
};

} // namespace dt
