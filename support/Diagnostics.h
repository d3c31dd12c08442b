// This file implements the one diagnostics engine of dtensor. Every user-facing
// error is a Diagnostic value (a kind from Diagnostics.def with arguments,
// notes and a hint); the CLI, the REPL and the embedding API consume these
// values and render them as
//
//   file.dt:3:9: error: operand shardings disagree on mesh axis `x`
//     3 | let c = a + b
//       |         ^~~~~
//   note: left is `f32[4, 4] @ m{x: shard(0)}`
//   hint: write `relayout(b, m[x, _])`
//
// Internal compiler errors are not diagnostics: they are C++ exceptions of
// type InternalError and print as `internal error:`.
#pragma once

#include "support/Errors.h"
#include "support/SourceLoc.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace dt {

enum class DiagId {
#define DIAG(Id, fmt) Id,
#include "support/Diagnostics.def"
};
const char *diagFormat(DiagId id);
const char *diagIdName(DiagId id);

namespace detail {
inline constexpr const char *kDiagFormats[] = {
#define DIAG(Id, fmt) fmt,
#include "support/Diagnostics.def"
};
} // namespace detail

/// How many arguments the message of `id` takes: one more than its largest
/// `{N}` (the registry test checks that every `{0}`..`{N}` occurs).
constexpr int diagArity(DiagId id) {
  int n = 0;
  for (const char *p = detail::kDiagFormats[(int)id]; *p; ++p)
    if (p[0] == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}' && p[1] - '0' + 1 > n)
      n = p[1] - '0' + 1;
  return n;
}

/// The text of one argument of a diagnostic: strings as they are, integers
/// in decimal. Other types (tensor types, layouts) are passed formatted.
inline std::string diagArg(const std::string &s) { return s; }
inline std::string diagArg(const char *s) { return s; }
template <class T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>) std::string
    diagArg(T v) {
  return std::to_string(v);
}

enum class Severity { Error, Warning, Note, Remark };

/// A machine-applicable edit that carries out (part of) a hint: replace the source text
/// at `range` (one line, columns [col, endCol)) with `replacement`. The REPL,
/// the API and the test that applies every hint read it.
struct FixIt {
  SrcLoc range;
  std::string replacement;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  DiagId id = DiagId::ParseError;
  SrcLoc loc;
  std::string message;            ///< formatted
  std::vector<std::string> notes; ///< each printed as `note: ...`
  std::string hint;               ///< printed as `hint: ...` (may be empty)
  std::vector<FixIt> fixes;       ///< the hint as edits (disjoint), when it is one
};

/// Owns the text of every source file of a Session, for carets.
class SourceManager {
public:
  int add(std::string path, std::string text);
  const std::string &path(int file) const { return files_[file].path; }
  const std::string &text(int file) const { return files_[file].text; }
  std::string line(int file, int line) const;
  int count() const { return (int)files_.size(); }

private:
  struct File {
    std::string path, text;
  };
  std::vector<File> files_;
};

/// The path of `loc`'s file when it is not the program's file `program` (a
/// module's function, an earlier REPL input), for naming it in a run-time
/// fault; "" for the program's own file or without sources.
inline std::string moduleFileOf(const SourceManager *sources, SrcLoc loc, int program) {
  if (!sources || loc.file == program || loc.file < 0 || loc.file >= sources->count())
    return "";
  return sources->path(loc.file);
}

/// Collects diagnostics; renders them on demand.
class DiagEngine {
public:
  explicit DiagEngine(SourceManager &sm) : sm_(sm) {}

  Diagnostic &error(DiagId id, SrcLoc loc, const std::vector<std::string> &args = {});
  Diagnostic &warning(DiagId id, SrcLoc loc, const std::vector<std::string> &args = {});

  /// Typed: `error<DiagId::RecursiveCall>(loc, name)`; the number of
  /// arguments is checked against the message at compile time.
  template <DiagId Id, class... A> Diagnostic &error(SrcLoc loc, const A &...args) {
    static_assert(sizeof...(A) == diagArity(Id),
                  "this diagnostic's message takes a different number of arguments");
    return add(Severity::Error, Id, loc, {diagArg(args)...});
  }
  template <DiagId Id, class... A> Diagnostic &warning(SrcLoc loc, const A &...args) {
    static_assert(sizeof...(A) == diagArity(Id),
                  "this diagnostic's message takes a different number of arguments");
    return add(Severity::Warning, Id, loc, {diagArg(args)...});
  }
  Diagnostic &remark(SrcLoc loc, std::string message);

  bool hasErrors() const { return errors_ > 0; }
  int errorCount() const { return errors_; }
  const std::vector<Diagnostic> &all() const { return diags_; }
  /// The diagnostic recorded last, to add a note to (null when none).
  Diagnostic *last() { return diags_.empty() ? nullptr : &diags_.back(); }
  void clear() {
    diags_.clear();
    errors_ = 0;
  }
  /// Drops every diagnostic recorded after the first `n` and resets the error
  /// count to `errors` (a trial build that the builder discards).
  void rollback(size_t n, int errors);
  /// Stop recording after this many errors (error recovery must terminate).
  void setErrorLimit(int n) { limit_ = n; }

  std::string render(const Diagnostic &d) const;
  std::string renderAll() const;

private:
  Diagnostic &add(Severity s, DiagId id, SrcLoc loc, const std::vector<std::string> &args);
  SourceManager &sm_;
  std::vector<Diagnostic> diags_;
  Diagnostic overflow_;
  int errors_ = 0;
  int limit_ = 100;
};

std::string formatDiag(const char *fmt, const std::vector<std::string> &args);

/// A run-time fault as a diagnostic (RuntimeError): at the failed op's line
/// when the fault carries one that `sm` holds, with a note `called from
/// FILE:L:C` for each call it passed through; unlocated (the whole what())
/// otherwise.
Diagnostic faultDiagnostic(const RuntimeFault &f, const SourceManager &sm);

} // namespace dt
