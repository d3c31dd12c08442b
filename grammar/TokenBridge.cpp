// This file implements the bridge between the re2c lexer and the Bison parser:
// `yylex` turns lexer Tokens into Bison symbols, and `describeSyntaxError`
// turns Bison's expected-token sets into the messages users read
// ("expected `]` or `,`, found `=`"; "expected an expression, found `)`").
#include "grammar/Builder.h"
#include "grammar/parser.hpp"

#include <algorithm>

namespace dt::gram {

using T = BisonParser::token;

/// Bison token per lexer TokKind, in TokKind order.
static const T::token_kind_type kTokens[] = {
    T::TOK_END,    T::TOK_NEWLINE,  T::TOK_SEMI,     T::TOK_NAME,       T::TOK_INT,
    T::TOK_FLOAT,  T::TOK_STRING,   T::TOK_MESH,     T::TOK_DEVICES,    T::TOK_LET,
    T::TOK_VAR,    T::TOK_FN,       T::TOK_FOR,      T::TOK_IN,         T::TOK_RETURN,
    T::TOK_PRINT,  T::TOK_IMPORT,   T::TOK_TRUE,     T::TOK_FALSE,      T::TOK_LPAREN,
    T::TOK_RPAREN, T::TOK_LBRACKET, T::TOK_RBRACKET, T::TOK_LBRACE,     T::TOK_RBRACE,
    T::TOK_COMMA,  T::TOK_COLON,    T::TOK_DOT,      T::TOK_DOTDOT,     T::TOK_ELLIPSIS,
    T::TOK_ARROW,  T::TOK_ASSIGN,   T::TOK_PLUS,     T::TOK_MINUS,      T::TOK_STAR,
    T::TOK_SLASH,  T::TOK_AT,       T::TOK_POW,      T::TOK_EQ,         T::TOK_NE,
    T::TOK_LT,     T::TOK_LE,       T::TOK_GT,       T::TOK_GE,         T::TOK_ANDAND,
    T::TOK_OROR,   T::TOK_BANG,     T::TOK_PERCENT,  T::TOK_SLASHSLASH, T::TOK_STRUCT,
    T::TOK_IF,     T::TOK_ELSE,     T::TOK_WHILE,    T::TOK_HLBRACE};
static_assert(sizeof(kTokens) / sizeof(kTokens[0]) == (size_t)TokKind::HeaderBrace + 1,
              "kTokens must list every TokKind");

BisonParser::symbol_type yylex(ParseContext &ctx) {
  Token t = ctx.lex.next();
  T::token_kind_type k = kTokens[(int)t.kind];
  switch (t.kind) {
  case TokKind::Name:
  case TokKind::Int:
  case TokKind::Float:
  case TokKind::String:
    return BisonParser::symbol_type(k, std::move(t.text), t.loc);
  default:
    return BisonParser::symbol_type(k, t.loc);
  }
}

/// Tokens that can start an expression; when they are all expected the
/// message says "an expression" instead of listing them.
static const char *const kExprStarts[] = {"integer", "number",     "`true`", "`false`",
                                          "string",  "identifier", "`[`",    "`(`",
                                          "`-`",     "`!`",        "`...`"};
/// Tokens that can start a statement (beyond expressions).
static const char *const kStmtStarts[] = {"`mesh`",   "`let`",    "`var`",   "`fn`",
                                          "`for`",    "`return`", "`print`", "`import`",
                                          "`struct`", "`if`",     "`while`"};

/// Token classes read as noun phrases in messages.
static std::string phrase(const std::string &name) {
  if (name == "identifier")
    return "a name";
  if (name == "integer")
    return "an integer";
  if (name == "number")
    return "a number";
  if (name == "string")
    return "a string";
  return name;
}

std::string describeSyntaxError(const std::vector<std::string> &expected, const std::string &found,
                                const Lexer &lex) {
  auto has = [&](const char *n) {
    return std::find(expected.begin(), expected.end(), n) != expected.end();
  };
  std::vector<std::string> items;
  bool expr = std::all_of(std::begin(kExprStarts), std::end(kExprStarts), has);
  bool stmt = expr && std::all_of(std::begin(kStmtStarts), std::end(kStmtStarts), has);
  if (stmt)
    items.push_back("a statement");
  else if (expr)
    items.push_back("an expression");
  for (const auto &e : expected) {
    bool covered = (expr && std::find(std::begin(kExprStarts), std::end(kExprStarts), e) !=
                                std::end(kExprStarts)) ||
                   (stmt && std::find(std::begin(kStmtStarts), std::end(kStmtStarts), e) !=
                                std::end(kStmtStarts));
    if (!covered)
      items.push_back(phrase(e));
  }

  std::string what = phrase(found);
  if (what == "end of line" && lex.unclosedAtEnd())
    what = "the end of the input"; // the newline that ends the file, inside a bracket
  switch (lex.lastKind()) {
  case TokKind::Name:
  case TokKind::Int:
  case TokKind::Float:
    what = "`" + lex.lastLexeme() + "`";
    break;
  default:
    break;
  }
  static const char *const kCmp[] = {"`==`", "`!=`", "`<`", "`<=`", "`>`", "`>=`"};
  if (std::find(std::begin(kCmp), std::end(kCmp), found) != std::end(kCmp) && !has("`<`"))
    return "comparisons do not chain, found " + what + "; combine them with `&&`";
  bool closes = std::find(items.begin(), items.end(), "`]`") != items.end() ||
                std::find(items.begin(), items.end(), "`)`") != items.end();
  if (items.size() > 6 || closes) {
    // After a complete expression (or size, `f32[2 * B`) every binary
    // operator could follow; leave them out and name what would end or
    // close it.
    static const char *const kContinue[] = {"`+`",  "`-`", "`*`",  "`/`",  "`@`",  "`**`", "`==`",
                                            "`!=`", "`<`", "`<=`", "`>`",  "`>=`", "`&&`", "`||`",
                                            "`(`",  "`.`", "`%`",  "`//`", "`[`"};
    std::erase_if(items, [](const std::string &e) {
      return std::find(std::begin(kContinue), std::end(kContinue), e) != std::end(kContinue);
    });
  }
  if (items.empty() || items.size() > 6)
    return "unexpected " + what;
  std::string msg = "expected ";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      msg += i + 1 == items.size() ? " or " : ", ";
    msg += items[i];
  }
  return msg + ", found " + what;
}

} // namespace dt::gram
