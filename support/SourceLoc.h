// This file implements source positions: every diagnostic, IR instruction and
// runtime fault that a user can trace back to the program carries a SrcLoc.
#pragma once

namespace dt {

/// A position in a source file (1-based line and column; 0 = unknown).
struct SrcLoc {
  int file = 0; ///< index into the Session's SourceManager
  int line = 0;
  int col = 0;
  int endCol = 0; ///< exclusive; 0 = one character
  bool known() const { return line > 0; }
};

} // namespace dt
