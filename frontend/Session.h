// This file implements the Session: all state of one compilation and run —
// sources, diagnostics, the IR module and options. The CLI, the REPL and the
// embedding API each own Sessions; nothing lives in globals.
#pragma once

#include "support/Diagnostics.h"
#include "ir/IR.h"

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
};

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
