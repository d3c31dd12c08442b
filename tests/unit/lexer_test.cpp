// Unit tests for the re2c lexer (grammar/lexer.re): token kinds and text,
// exact line:col spans, which newlines separate statements, numbers, strings,
// bad bytes and unterminated strings.
#include "grammar/Lexer.h"

#include <doctest/doctest.h>

using namespace dt;
using namespace dt::gram;

namespace {

struct Lexed {
  std::vector<Token> toks;
  std::vector<Diagnostic> diags;
};

Lexed lexAll(const std::string &src) {
  SourceManager sm;
  int f = sm.add("t.dt", src);
  DiagEngine de(sm);
  Lexer lex(src, f, de);
  Lexed out;
  for (int i = 0; i < 10000; ++i) {
    out.toks.push_back(lex.next());
    if (out.toks.back().kind == TokKind::End)
      break;
  }
  out.diags = de.all();
  return out;
}

/// Token kinds joined by spaces, with names/numbers shown by their text.
std::string kinds(const std::string &src) {
  std::string s;
  for (const Token &t : lexAll(src).toks) {
    if (!s.empty())
      s += ' ';
    switch (t.kind) {
    case TokKind::Name:
    case TokKind::Int:
    case TokKind::Float:
      s += t.text;
      break;
    case TokKind::String:
      s += "\"" + t.text + "\"";
      break;
    case TokKind::Newline:
      s += "NL";
      break;
    case TokKind::End:
      s += "END";
      break;
    default: {
      std::string n = tokKindName(t.kind);
      s += n.substr(1, n.size() - 2); // strip the backticks
    }
    }
  }
  return s;
}

} // namespace

TEST_CASE("lexer: keywords, names, operators") {
  CHECK(kinds("let a = b @ c ** 2") == "let a = b @ c ** 2 NL END");
  CHECK(kinds("mesh devices var fn for in return print import true false") ==
        "mesh devices var fn for in return print import true false NL END");
  CHECK(kinds("== != <= >= < > && || ! -> .. . : ; , + - * /") ==
        "== != <= >= < > && || ! -> .. . : ; , + - * / NL END");
  CHECK(kinds("lets _x f32 nn.linear") == "lets _x f32 nn . linear NL END");
  // `...` (a rank-generic batch) is one token; `..` and `.` stay theirs.
  CHECK(kinds("f32[..., D] 0..n a.b ... .") == "f32 [ ... , D ] 0 .. n a . b ... . NL END");
}

TEST_CASE("lexer: numbers") {
  auto l = lexAll("42 1.5 1e-3 2. 3E+2 0..10");
  REQUIRE(l.toks.size() == 10);
  CHECK(l.toks[0].kind == TokKind::Int);
  CHECK(l.toks[1].kind == TokKind::Float);
  CHECK(l.toks[2].kind == TokKind::Float);
  CHECK(l.toks[2].text == "1e-3");
  CHECK(l.toks[3].kind == TokKind::Float);
  CHECK(l.toks[3].text == "2.");
  CHECK(l.toks[4].kind == TokKind::Float);
  // `0..10` is a range of two integers, not the float `0.`.
  CHECK(l.toks[5].kind == TokKind::Int);
  CHECK(l.toks[6].kind == TokKind::DotDot);
  CHECK(l.toks[7].kind == TokKind::Int);
  CHECK(l.diags.empty());
}

TEST_CASE("lexer: malformed numbers") {
  auto l = lexAll("1e 2x 99999999999999999999 1e999");
  REQUIRE(l.diags.size() == 4);
  for (const auto &d : l.diags)
    CHECK(d.id == DiagId::LexBadNumber);
  CHECK(l.diags[0].message == "malformed number `1e`");
  CHECK(l.diags[1].loc.col == 4);
}

TEST_CASE("lexer: locations are 1-based, byte columns, end exclusive") {
  auto l = lexAll("let a = 1\n  \tfoo(bar)");
  // let a = 1 NL foo ( bar ) NL END
  REQUIRE(l.toks.size() == 11);
  CHECK(l.toks[0].loc.begin.line == 1);
  CHECK(l.toks[0].loc.begin.col == 1);
  CHECK(l.toks[0].loc.end.col == 4);
  CHECK(l.toks[3].loc.begin.col == 9);
  CHECK(l.toks[4].kind == TokKind::Newline);
  CHECK(l.toks[4].loc.begin.col == 10);
  CHECK(l.toks[5].text == "foo");
  CHECK(l.toks[5].loc.begin.line == 2);
  CHECK(l.toks[5].loc.begin.col == 4); // two spaces and a tab
  CHECK(l.toks[5].loc.end.col == 7);
  CHECK(l.toks[7].loc.begin.col == 8);
}

TEST_CASE("lexer: newlines inside ( and [ and layout braces are dropped") {
  CHECK(kinds("f(a,\n b)\nx") == "f ( a , b ) NL x NL END");
  CHECK(kinds("[[1,\n2],\n[3, 4]]") == "[ [ 1 , 2 ] , [ 3 , 4 ] ] NL END");
  CHECK(kinds("m{x: shard(0),\n y: replicate}") == "m { x : shard ( 0 ) , y : replicate } NL END");
}

TEST_CASE("lexer: newlines inside blocks separate statements") {
  CHECK(kinds("fn f() {\n  a\n  b\n}") == "fn f ( ) { NL a NL b NL } NL END");
  CHECK(kinds("for i in 0..n {\na\n}") == "for i in 0 .. n { NL a NL } NL END");
  CHECK(kinds("for i in n..m {\na\n}") == "for i in n .. m { NL a NL } NL END");
}

TEST_CASE("lexer: blank lines and comments collapse into one newline") {
  CHECK(kinds("\n\n# only a comment\na # trailing\n\n\nb\n") == "a NL b NL END");
  CHECK(kinds("") == "END");
  CHECK(kinds("# just a comment") == "END");
  CHECK(kinds("a;b") == "a ; b NL END");
  CHECK(kinds("a\r\nb") == "a NL b NL END");
}

TEST_CASE("lexer: strings and escapes") {
  auto l = lexAll(R"(einsum("ik,kj->ij", "a\"b\\c"))");
  REQUIRE(l.toks.size() >= 6);
  CHECK(l.toks[2].kind == TokKind::String);
  CHECK(l.toks[2].text == "ik,kj->ij");
  CHECK(l.toks[2].loc.begin.col == 8);
  CHECK(l.toks[2].loc.end.col == 19);
  CHECK(l.toks[4].text == "a\"b\\c");
  CHECK(l.diags.empty());
  // Non-ASCII bytes are fine inside strings and comments.
  CHECK(lexAll("\"h\xc3\xa9\" # caf\xc3\xa9").diags.empty());
}

TEST_CASE("lexer: unterminated strings") {
  auto l = lexAll("let s = \"abc\nlet t = 1");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].id == DiagId::LexUnterminated);
  CHECK(l.diags[0].loc.line == 1);
  CHECK(l.diags[0].loc.col == 9);
  // The next line still lexes normally.
  CHECK(kinds("\"abc\nlet") == "\"abc\" NL let NL END");
  auto e = lexAll("\"abc\\");
  REQUIRE(e.diags.size() == 1);
  CHECK(e.diags[0].id == DiagId::LexUnterminated);
}

TEST_CASE("lexer: bad bytes") {
  auto l = lexAll(std::string("a $ b\x01 \xc3\xa9 c") + std::string(1, '\0') + "d");
  REQUIRE(l.diags.size() == 4);
  for (const auto &d : l.diags)
    CHECK(d.id == DiagId::LexBadChar);
  CHECK(l.diags[0].message == "unexpected character `$`");
  CHECK(l.diags[0].loc.col == 3);
  CHECK(l.diags[1].message == "unexpected character `\\x01`");
  CHECK(l.diags[2].message == "unexpected character `\\xc3\\xa9`");
  CHECK(l.diags[2].loc.endCol == l.diags[2].loc.col + 2);
  CHECK(l.diags[3].message == "unexpected character `\\x00`");
  CHECK(kinds("a & b | c") == "a b c NL END");
}

TEST_CASE("lexer: nesting beyond the limit aborts with ParseTooDeep") {
  auto l = lexAll(std::string(1000, '('));
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].id == DiagId::ParseTooDeep);
  CHECK(l.toks.back().kind == TokKind::End);
  CHECK(l.toks.size() == (size_t)kMaxNesting + 1);
}
