// This file implements the REPL's input loop (`dtensorc repl`): on a
// terminal, lines are read with libedit (line editing, history kept in
// $XDG_STATE_HOME/dtensor/history, or ~/.local/state/dtensor/history;
// DTENSOR_HISTORY names another file) with `dt> ` / `... ` prompts; from a
// pipe, lines are read plainly, without prompts or banner, so the REPL is
// scriptable. The logic is the Repl's (tools/Repl.h).
#pragma once

#include "tools/Repl.h"

#include <string>

namespace dt {

/// Runs a REPL on stdin/stdout/stderr after loading `file` (when not empty).
/// `terminal`: stdin is a terminal (libedit, prompts). Returns the exit
/// status: 0, or 1 when a piped session had a failed input.
int runRepl(const ReplOptions &opts, const std::string &file, bool terminal,
            const std::string &banner);

} // namespace dt
