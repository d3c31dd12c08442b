// This file implements the two exception types of dtensor that are not user
// diagnostics: InternalError (a bug in dtensor, printed as `internal error:`,
// exit 3) and RuntimeFault (the program could not run to its end: a rank
// failed, memory ran out, a library is missing).
#pragma once

#include <stdexcept>

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

} // namespace dt
