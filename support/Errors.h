// This file implements the two exception types of dtensor that are not user
// diagnostics: InternalError (a bug in dtensor, printed as `internal error:`,
// exit 3) and RuntimeFault (the program could not run to its end: a rank
// failed, memory ran out, a library is missing).
#pragma once

#include "support/SourceLoc.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

namespace dt {

/// A bug in dtensor itself (never a user error).
struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A fault while running a program (rank failure, OOM, missing library, bad
/// file); the message names the cause. A fault tied to a line of the program
/// also carries it: `loc` (the innermost op that failed, in the Session's
/// SourceManager: a module's line for a fault inside a module's function),
/// `calledFrom` (the calls it passed through, innermost first) and `message`
/// (what() without the " (line L:C)" that what() keeps for plain readers).
struct RuntimeFault : std::runtime_error {
  using std::runtime_error::runtime_error;
  /// what() is `before` + " (line L:C[ of module])" + `after`; message() is
  /// `before` + `after`.
  RuntimeFault(const std::string &before, SrcLoc at, const std::string &after,
               const std::string &module = "")
      : std::runtime_error(before + lineText(at, module) + after), loc(at),
        message_(before + after) {}
  /// The same fault with `prefix` in front ("rank 3 failed: ").
  RuntimeFault(const std::string &prefix, const RuntimeFault &inner)
      : std::runtime_error(prefix + inner.what()), loc(inner.loc), calledFrom(inner.calledFrom),
        message_(prefix + inner.message()) {}
  /// The text without the location when `loc` is known; what() otherwise.
  std::string message() const { return loc.known() ? message_ : std::string(what()); }
  SrcLoc loc;
  std::vector<SrcLoc> calledFrom;

  static std::string lineText(SrcLoc at, const std::string &module) {
    if (!at.known())
      return "";
    return " (line " + std::to_string(at.line) + ":" + std::to_string(at.col) +
           (module.empty() ? "" : " of " + module) + ")";
  }

private:
  std::string message_;
};

/// A fault already reported on stderr (a multi-process run's program or
/// world-size mismatch, which every process detects alike and world rank 0
/// writes): the driver exits 1 without repeating it.
struct ReportedElsewhere : RuntimeFault {
  using RuntimeFault::RuntimeFault;
};

/// A plain fault raised for one op inside a compiled group (a fused
/// kernel's gather ids out of range): rethrowAt names that op's line, not
/// the line of the group's call.
struct FaultAt : RuntimeFault {
  FaultAt(const std::string &what, SrcLoc at) : RuntimeFault(what) { where = at; }
  SrcLoc where;
};

/// Rethrows `f`, located at `loc` when it is a plain RuntimeFault that does
/// not say where yet (an index out of range, memory running out): " (line
/// L:C)" appended to what() and `loc` set. The executors call it around each
/// instruction. `file`, when not empty, is named too: " (line L:C of nn.dt)"
/// for a fault in a module's function. A fault already located passing
/// through a call (`viaCall`) gets the call's place added to `calledFrom`.
/// Faults of other types (a peer's abort, one reported elsewhere) pass
/// unchanged.
[[noreturn]] inline void rethrowAt(const RuntimeFault &f, SrcLoc loc, const std::string &file = "",
                                   bool viaCall = false) {
  if (auto *at = dynamic_cast<const FaultAt *>(&f); at && at->where.known())
    loc = at->where;
  else if (typeid(f) != typeid(RuntimeFault))
    throw;
  if (f.loc.known()) {
    if (!viaCall || !loc.known())
      throw;
    RuntimeFault outer = f;
    outer.calledFrom.push_back(loc);
    throw outer;
  }
  if (!loc.known())
    throw;
  throw RuntimeFault(f.what(), loc, "", file);
}

} // namespace dt
