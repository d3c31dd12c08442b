// This file implements the `.dt` lexer with re2c (compiled by CMake into
// gen/grammar/lexer.cpp). The input is the NUL-terminated text of one file; a
// NUL before the end is a bad byte. `scan` yields raw tokens, `next` drops the
// newlines that do not end statements (inside `(`, `[` and layout braces) and
// tracks bracket nesting. See grammar/Lexer.h for the contract.
#include "grammar/Lexer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dt::gram {

const char *tokKindName(TokKind k) {
  static const char *const kNames[] = {
      "end of input", "end of line", "`;`", "identifier", "integer", "number", "string",
      "`mesh`", "`devices`", "`let`", "`var`", "`fn`", "`for`", "`in`", "`return`", "`print`",
      "`import`", "`true`", "`false`",
      "`(`", "`)`", "`[`", "`]`", "`{`", "`}`",
      "`,`", "`:`", "`.`", "`..`", "`...`", "`->`", "`=`",
      "`+`", "`-`", "`*`", "`/`", "`@`", "`**`",
      "`==`", "`!=`", "`<`", "`<=`", "`>`", "`>=`", "`&&`", "`||`", "`!`",
      "`%`", "`//`", "`struct`", "`if`", "`else`", "`while`", "`{`"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == (size_t)TokKind::HeaderBrace + 1,
                "one name per token kind");
  return kNames[(int)k];
}

Lexer::Lexer(const std::string &text, int file, DiagEngine &diags)
    : text_(text), file_(file), diags_(diags) {
  cur_ = text_.c_str();
  lim_ = cur_ + text_.size();
  if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0)
    cur_ += 3; // a UTF-8 byte order mark (SourceManager::add drops it too)
  lineStart_ = cur_;
}

Span Lexer::span(const char *b, const char *e) const {
  return Span{{line_, (int)(b - lineStart_) + 1}, {line_, (int)(e - lineStart_) + 1}};
}

SrcLoc Lexer::srcLoc(const Span &s) const {
  return SrcLoc{file_, s.begin.line, s.begin.col, s.end.col};
}

/// Reports bytes [b, e) as one bad character; non-printable bytes as `\xNN`.
void Lexer::badChar(const char *b, const char *e) {
  std::string shown;
  for (const char *p = b; p < e; ++p) {
    unsigned char c = (unsigned char)*p;
    if (c >= 0x20 && c < 0x7f) {
      shown += (char)c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      shown += buf;
    }
  }
  diags_.error(DiagId::LexBadChar, srcLoc(span(b, e)), {shown});
}

/// Scans a string literal whose opening quote is at `start` (cur_ is past it).
/// Escapes: \" \\ \n \t. A newline or the end of input before the closing
/// quote is LexUnterminated; the token still carries what was read.
Token Lexer::scanString(const char *start) {
  Token t;
  t.kind = TokKind::String;
  const char *p = cur_;
  for (;;) {
    if (p == lim_ || *p == '\n') {
      diags_.error(DiagId::LexUnterminated, srcLoc(span(start, p))).hint =
          "close it with `\"` on the same line (a string does not span lines; `\\n` writes a "
          "newline)";
      break;
    }
    char c = *p;
    if (c == '"') {
      ++p;
      break;
    }
    if (c == '\0') {
      badChar(p, p + 1);
      ++p;
      continue;
    }
    if (c == '\\') {
      char n = p + 1 < lim_ ? p[1] : '\0';
      if (n == '"' || n == '\\') {
        t.text += n;
      } else if (n == 'n') {
        t.text += '\n';
      } else if (n == 't') {
        t.text += '\t';
      } else if (n == '\n' || p + 1 >= lim_) {
        ++p; // let the newline / end terminate the literal
        continue;
      } else {
        // Only the escapes above exist: `\q` is no character of its own.
        std::string shown(p, p + 2);
        if ((unsigned char)n < 0x20 || (unsigned char)n >= 0x7f)
          badChar(p, p + 2);
        else
          diags_.error(DiagId::LexBadEscape, srcLoc(span(p, p + 2)), {shown}).hint =
              "a string knows the escapes `\\\"`, `\\\\`, `\\n` and `\\t`; write `\\\\` for a "
              "backslash";
      }
      p += 2;
      continue;
    }
    t.text += c;
    ++p;
  }
  cur_ = p;
  t.loc = span(start, p);
  return t;
}

/*!re2c
  re2c:define:YYCTYPE = "unsigned char";
  re2c:yyfill:enable = 0;

  D = [0-9];
  L = [a-zA-Z_];
  E = [eE] [+-]? D+;
  NUM = D+ ("." D*)? E?;
*/

Token Lexer::scan() {
  for (;;) {
    const char *tok = cur_;
    const unsigned char *YYCURSOR = (const unsigned char *)cur_, *YYMARKER = YYCURSOR;
    auto done = [&](TokKind k) {
      cur_ = (const char *)YYCURSOR;
      return Token{k, std::string(tok, cur_), span(tok, cur_)};
    };
    /*!re2c
      "\x00" {
        if (tok == lim_) { cur_ = tok; return Token{TokKind::End, "", span(tok, tok)}; }
        cur_ = (const char *)YYCURSOR;
        badChar(tok, cur_);
        continue;
      }
      [ \t\r]+ { cur_ = (const char *)YYCURSOR; continue; }
      "#" [^\n\x00]* { cur_ = (const char *)YYCURSOR; continue; }
      "\n" {
        Token t = done(TokKind::Newline);
        ++line_;
        lineStart_ = cur_;
        return t;
      }
      D+ {
        Token t = done(TokKind::Int);
        errno = 0;
        (void)std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) {
          // Reported; the AST keeps a 0 so that it still prints as source.
          diags_.error(DiagId::LexBadNumber, srcLoc(t.loc), {t.text}).hint =
              "integer literals are 64-bit, at most 9223372036854775807; a float literal "
              "(as `1e20`) holds larger magnitudes";
          t.text = "0";
        }
        return t;
      }
      D+ "." D* E? | D+ E {
        // `0..10` is an integer range, not the float `0.` then `.10`.
        if (YYCURSOR[-1] == '.' && *YYCURSOR == '.') {
          --YYCURSOR;
          return done(TokKind::Int);
        }
        Token t = done(TokKind::Float);
        if (std::isinf(std::strtod(t.text.c_str(), nullptr)))
          diags_.error(DiagId::LexBadNumber, srcLoc(t.loc), {t.text}).hint =
              "the largest finite float literal is about 1.8e308; infinity is `1.0 / 0.0`";
        return t;
      }
      NUM L (L | D)* {
        Token t = done(TokKind::Float);
        diags_.error(DiagId::LexBadNumber, srcLoc(t.loc), {t.text}).hint =
            "a number is digits with an optional fraction and exponent, as `12`, `0.5` or "
            "`1e-3` (no hexadecimal); a name cannot start with a digit";
        t.kind = TokKind::Int;
        t.text = "0";
        return t;
      }
      L (L | D)* {
        Token t = done(TokKind::Name);
        static const struct { const char *word; TokKind kind; } kWords[] = {
            {"mesh", TokKind::KwMesh},     {"devices", TokKind::KwDevices},
            {"let", TokKind::KwLet},       {"var", TokKind::KwVar},
            {"fn", TokKind::KwFn},         {"for", TokKind::KwFor},
            {"in", TokKind::KwIn},         {"return", TokKind::KwReturn},
            {"print", TokKind::KwPrint},   {"import", TokKind::KwImport},
            {"true", TokKind::KwTrue},     {"false", TokKind::KwFalse},
            {"struct", TokKind::KwStruct}, {"if", TokKind::KwIf},
            {"else", TokKind::KwElse},     {"while", TokKind::KwWhile}};
        for (const auto &w : kWords)
          if (t.text == w.word) t.kind = w.kind;
        return t;
      }
      "\"" { cur_ = (const char *)YYCURSOR; return scanString(tok); }
      "("  { return done(TokKind::LParen); }
      ")"  { return done(TokKind::RParen); }
      "["  { return done(TokKind::LBracket); }
      "]"  { return done(TokKind::RBracket); }
      "{"  { return done(TokKind::LBrace); }
      "}"  { return done(TokKind::RBrace); }
      ","  { return done(TokKind::Comma); }
      ":"  { return done(TokKind::Colon); }
      ";"  { return done(TokKind::Semi); }
      "."  { return done(TokKind::Dot); }
      ".." { return done(TokKind::DotDot); }
      "..." { return done(TokKind::Ellipsis); }
      "->" { return done(TokKind::Arrow); }
      "="  { return done(TokKind::Assign); }
      "+"  { return done(TokKind::Plus); }
      "-"  { return done(TokKind::Minus); }
      "*"  { return done(TokKind::Star); }
      "/"  { return done(TokKind::Slash); }
      "@"  { return done(TokKind::At); }
      "**" { return done(TokKind::Pow); }
      "==" { return done(TokKind::Eq); }
      "!=" { return done(TokKind::Ne); }
      "<"  { return done(TokKind::Lt); }
      "<=" { return done(TokKind::Le); }
      ">"  { return done(TokKind::Gt); }
      ">=" { return done(TokKind::Ge); }
      "&&" { return done(TokKind::AndAnd); }
      "||" { return done(TokKind::OrOr); }
      "!"  { return done(TokKind::Bang); }
      "%"  { return done(TokKind::Percent); }
      "//" { return done(TokKind::SlashSlash); }
      [\x80-\xff]+ {
        cur_ = (const char *)YYCURSOR;
        badChar(tok, cur_);
        continue;
      }
      * {
        cur_ = (const char *)YYCURSOR;
        badChar(tok, cur_);
        continue;
      }
    */
  }
}

bool Lexer::track(Token &t) {
  auto push = [&](Bracket b) {
    brackets_.push_back(b);
    openedAt_.push_back(Opener{t.kind == TokKind::LParen     ? '('
                               : t.kind == TokKind::LBracket ? '['
                                                             : '{',
                               t.loc});
    if ((int)brackets_.size() <= kMaxNesting) return true;
    diags_.error(DiagId::ParseTooDeep, srcLoc(t.loc), {std::to_string(kMaxNesting)});
    aborted_ = true;
    return false;
  };
  auto pop = [&](Bracket b1, Bracket b2) {
    // Pop up to the matching opener so that one stray closer cannot leave the
    // newline mode wrong for the rest of the file; an unmatched one is ignored.
    for (size_t i = brackets_.size(); i-- > 0;) {
      if (brackets_[i] == b1 || brackets_[i] == b2) {
        brackets_.resize(i);
        openedAt_.resize(i);
        return;
      }
    }
  };
  switch (t.kind) {
  case TokKind::KwFor:
  case TokKind::KwIf:
  case TokKind::KwWhile:
    forDepth_ = (int)brackets_.size();
    break;
  case TokKind::Newline:
  case TokKind::Semi:
    forDepth_ = -1;
    arrowDepth_ = -1;
    break;
  case TokKind::Arrow:
    arrowDepth_ = (int)brackets_.size();
    break;
  case TokKind::LParen: return push(Bracket::Paren);
  case TokKind::LBracket: return push(Bracket::Square);
  case TokKind::LBrace: {
    // `m{x: shard(0)}`: a brace right after a name is a layout, except after
    // `fn f`, after a struct result type (`-> Block {`) and for the first
    // brace of a `for`/`if`/`while` header at its own nesting level
    // (`for i in 0..B*H {`, `if ok {`), where it opens a block and becomes a
    // HeaderBrace token for the parser. `struct S {` is read as a layout
    // brace: its fields may span lines.
    bool forBlock = forDepth_ == (int)brackets_.size();
    // After a result type named by its module (`-> nn.Block {`) the brace
    // opens the body too; `-> f32[4] @ m{x: shard(0)} {` keeps its layout.
    bool resultBlock = arrowDepth_ == (int)brackets_.size() && prev2_ == TokKind::Dot;
    bool layout = prev_ == TokKind::Name && !forBlock && !resultBlock &&
                  prev2_ != TokKind::DotDot && prev2_ != TokKind::KwIn &&
                  prev2_ != TokKind::KwFn && prev2_ != TokKind::Arrow;
    if (!layout)
      arrowDepth_ = -1;
    if (forBlock) {
      forDepth_ = -1;
      t.kind = TokKind::HeaderBrace;
    }
    return push(layout ? Bracket::Layout : Bracket::Block);
  }
  case TokKind::RParen: pop(Bracket::Paren, Bracket::Paren); break;
  case TokKind::RBracket: pop(Bracket::Square, Bracket::Square); break;
  case TokKind::RBrace: pop(Bracket::Layout, Bracket::Block); break;
  default: break;
  }
  return true;
}

void Lexer::recover() {
  while (!brackets_.empty() && brackets_.back() != Bracket::Block) {
    brackets_.pop_back();
    openedAt_.pop_back();
  }
}

const Lexer::Opener *Lexer::unclosedAtEnd() const {
  if (!reachedEnd_ || brackets_.empty())
    return nullptr;
  return &openedAt_.back();
}

const Lexer::Opener *Lexer::openBefore(int line) const {
  if (brackets_.empty() || (brackets_.back() != Bracket::Paren && brackets_.back() != Bracket::Square))
    return nullptr;
  return openedAt_.back().at.begin.line < line ? &openedAt_.back() : nullptr;
}

Token Lexer::next() {
  if (aborted_ || endSent_) {
    const char *e = lim_;
    return Token{TokKind::End, "", span(e, e)};
  }
  for (;;) {
    Token t = scan();
    if (t.kind == TokKind::Newline) {
      if (!brackets_.empty() && brackets_.back() != Bracket::Block) continue;
      if (!any_ || prev_ == TokKind::Newline) continue;
    }
    if (t.kind == TokKind::End) {
      reachedEnd_ = true;
      // Every statement ends with a separator, also the last one of the file.
      if (!any_ || prev_ == TokKind::Newline) {
        endSent_ = true;
        return t;
      }
      t.kind = TokKind::Newline;
    }
    if (!track(t)) {
      lastLexeme_.clear();
      prev_ = TokKind::End;
      return Token{TokKind::End, "", t.loc};
    }
    any_ = true;
    prev2_ = prev_;
    prev_ = t.kind;
    lastLexeme_ = t.kind == TokKind::String ? "\"" + t.text + "\"" : t.text;
    return t;
  }
}

} // namespace dt::gram
