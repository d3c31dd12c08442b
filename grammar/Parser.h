// This file implements the entry point of the front end: source text in, AST
// out. The grammar itself lives in grammar/ (re2c lexer, Bison parser, AST
// builder); this header is all the rest of the compiler needs. The parser
// guarantees, on any byte input: no crash, no hang, every syntax error
// reported with its line:col (recovery resumes at the next statement), and an
// AST no deeper than ~200 levels (deeper nesting is ParseTooDeep), so later
// recursive passes are safe.
#pragma once

#include "grammar/AST.h"
#include "support/Diagnostics.h"

#include <string>

namespace dt {

/// Parses `text` (file index `file` in the Session's SourceManager) into `out`.
/// Reports every syntax error to `diags` (error recovery: continue at the next
/// statement), returns false if any. Statements that parsed are kept in `out`
/// even when others failed. Never crashes, never hangs, bounded recursion
/// (ParseTooDeep beyond ~200 nesting levels) on any byte input.
bool parseProgram(const std::string &text, int file, DiagEngine &diags, ast::Program &out);

} // namespace dt
