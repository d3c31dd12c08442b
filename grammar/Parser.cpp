// This file implements parseProgram: it wires the re2c lexer, the AST builder
// and the Bison parser together for one file.
#include "grammar/Parser.h"

#include "grammar/Builder.h"
#include "grammar/Lexer.h"
#include "grammar/parser.hpp"

namespace dt {

bool parseProgram(const std::string &text, int file, DiagEngine &diags, ast::Program &out) {
  int before = diags.errorCount();
  out.file = file;
  gram::Lexer lex(text, file, diags);
  gram::Builder builder(file, diags);
  gram::ParseContext ctx{lex, builder, out};
  gram::BisonParser parser(ctx);
  int rc = parser.parse();
  // Bison gives up (rc != 0) only after reporting why, except on memory
  // exhaustion; make sure a failed parse always leaves a diagnostic.
  if (rc != 0 && diags.errorCount() == before)
    diags.error(DiagId::ParseError, SrcLoc{file, 1, 1, 0}, {"cannot parse this file"});
  return rc == 0 && diags.errorCount() == before;
}

} // namespace dt
