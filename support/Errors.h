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

namespace dt {

/// A bug in dtensor itself (never a user error).
struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A fault while running a program (rank failure, OOM, missing library, bad
/// file); the message names the cause.
struct RuntimeFault : std::runtime_error {
  using std::runtime_error::runtime_error;
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
  FaultAt(const std::string &what, SrcLoc at) : RuntimeFault(what), loc(at) {}
  SrcLoc loc;
};

/// Rethrows `f`, with " (line L:C)" of `loc` appended when it is a plain
/// RuntimeFault that does not say where yet (an index out of range, memory
/// running out): the executors call it around each instruction. `file`, when
/// not empty, is named too: " (line L:C of nn.dt)" for a fault in a module's
/// function. Faults of other types (a peer's abort, one reported elsewhere)
/// pass unchanged.
[[noreturn]] inline void rethrowAt(const RuntimeFault &f, SrcLoc loc,
                                   const std::string &file = "") {
  if (auto *at = dynamic_cast<const FaultAt *>(&f); at && at->loc.known())
    loc = at->loc;
  else if (typeid(f) != typeid(RuntimeFault))
    throw;
  if (!loc.known() || std::strstr(f.what(), "(line "))
    throw;
  throw RuntimeFault(std::string(f.what()) + " (line " + std::to_string(loc.line) + ":" +
                     std::to_string(loc.col) + (file.empty() ? "" : " of " + file) + ")");
}

} // namespace dt
