// This file implements the character-level half of the IR text parser: a
// cursor over the text with whitespace and comment skipping (`#` and `//` to
// the end of the line), identifiers, keywords, string literals with escapes,
// integers, floats (including `nan`, `inf`, `-inf`) and number lists, each
// failing with a ParseError at a byte offset that `where` turns into `L:C`.
// Internal to ir/IRParser.cpp; the grammar lives there.
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::irtext {

constexpr int kMaxDepth = 200; ///< nested lists/regions: bounds the C++ stack

/// A syntax error at byte offset `pos`.
struct ParseError {
  size_t pos;
  std::string msg;
};

class TextCursor {
public:
  explicit TextCursor(const std::string &text) : s_(text) {}

  /// `line:col` (1-based) of byte offset `pos`.
  std::string where(size_t pos) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return std::to_string(line) + ":" + std::to_string(col);
  }

protected:
  bool eof() const { return p_ >= s_.size(); }
  char peekc() const { return eof() ? '\0' : s_[p_]; }
  [[noreturn]] void fail(const std::string &msg) const { throw ParseError{p_, msg}; }
  [[noreturn]] void failAt(size_t pos, const std::string &msg) const { throw ParseError{pos, msg}; }

  void ws() {
    while (!eof()) {
      char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p_;
      } else if (c == '#' || (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '/')) {
        while (!eof() && s_[p_] != '\n')
          ++p_;
      } else {
        return;
      }
    }
  }
  char peek() {
    ws();
    return peekc();
  }
  bool accept(char c) {
    if (peek() != c)
      return false;
    ++p_;
    return true;
  }
  bool acceptStr(const char *t) {
    ws();
    size_t n = std::char_traits<char>::length(t);
    if (s_.compare(p_, n, t) != 0)
      return false;
    p_ += n;
    return true;
  }
  void expect(char c) {
    if (!accept(c))
      fail(std::string("expected `") + c + "`" + got());
  }
  std::string got() {
    if (eof())
      return " at end of input";
    unsigned char c = (unsigned char)s_[p_];
    if (c < 0x20 || c >= 0x7f) { // a control byte or binary: name it
      static const char *const kHex = "0123456789abcdef";
      return std::string(", got byte 0x") + kHex[c >> 4] + kHex[c & 15];
    }
    return std::string(", got `") + s_[p_] + "`";
  }
  static bool identStart(char c) { return std::isalpha((unsigned char)c) || c == '_'; }
  static bool identChar(char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '.'; }
  bool atIdent() { return identStart(peek()); }
  /// The identifier at the cursor without consuming it ("" if none).
  std::string peekIdent() {
    ws();
    size_t q = p_;
    if (q >= s_.size() || !identStart(s_[q]))
      return "";
    while (q < s_.size() && identChar(s_[q]))
      ++q;
    return s_.substr(p_, q - p_);
  }
  std::string ident(const char *what) {
    if (!atIdent())
      fail(std::string("expected ") + what + got());
    size_t b = p_;
    while (!eof() && identChar(s_[p_]))
      ++p_;
    return s_.substr(b, p_ - b);
  }
  void keyword(const char *kw) {
    size_t at = (ws(), p_);
    if (peekIdent() != kw)
      failAt(at, std::string("expected `") + kw + "`" + got());
    p_ += std::char_traits<char>::length(kw);
  }
  bool acceptKeyword(const char *kw) {
    if (peekIdent() != kw)
      return false;
    p_ += std::char_traits<char>::length(kw);
    return true;
  }

  std::string str() {
    expect('"');
    std::string r;
    for (;;) {
      if (eof())
        fail("unterminated string");
      char c = s_[p_++];
      if (c == '"')
        return r;
      if (c != '\\') {
        r += c;
        continue;
      }
      if (eof())
        fail("unterminated string");
      char e = s_[p_++];
      if (e == 'n')
        r += '\n';
      else if (e == 't')
        r += '\t';
      else if (e == '"' || e == '\\')
        r += e;
      else if (e == 'x' && p_ + 2 <= s_.size() && std::isxdigit((unsigned char)s_[p_]) &&
               std::isxdigit((unsigned char)s_[p_ + 1])) {
        r += (char)std::stoi(s_.substr(p_, 2), nullptr, 16);
        p_ += 2;
      } else
        fail(std::string("bad escape `\\") + e + "`");
    }
  }

  int64_t integer() {
    ws();
    size_t b = p_;
    if (peekc() == '-')
      ++p_;
    if (!std::isdigit((unsigned char)peekc()))
      failAt(b, "expected an integer" + got());
    while (std::isdigit((unsigned char)peekc()))
      ++p_;
    int64_t v = 0;
    auto r = std::from_chars(s_.data() + b, s_.data() + p_, v);
    if (r.ec != std::errc())
      failAt(b, "integer out of range");
    return v;
  }
  bool atNumber() {
    char c = peek();
    if (std::isdigit((unsigned char)c) || c == '-')
      return true;
    std::string id = peekIdent();
    return id == "nan" || id == "inf";
  }
  double number() {
    ws();
    size_t b = p_;
    if (peekc() == '-')
      ++p_;
    if (identStart(peekc())) {
      std::string id = ident("a number");
      if (id == "inf")
        return s_[b] == '-' ? -INFINITY : INFINITY;
      if (id == "nan")
        return NAN;
      failAt(b, "expected a number, got `" + id + "`");
    }
    while (!eof() && (std::isalnum((unsigned char)s_[p_]) || s_[p_] == '.' ||
                      ((s_[p_] == '+' || s_[p_] == '-') && p_ > b &&
                       (s_[p_ - 1] == 'e' || s_[p_ - 1] == 'E'))))
      ++p_;
    if (numberTexts)
      numberTexts->push_back(s_.substr(b, p_ - b));
    double v = 0;
    auto r = std::from_chars(s_.data() + b, s_.data() + p_, v);
    if (p_ == b)
      failAt(b, "expected a number" + got());
    if (r.ec != std::errc() || r.ptr != s_.data() + p_)
      failAt(b, "malformed number `" + s_.substr(b, p_ - b) + "`");
    return v;
  }
  std::vector<int64_t> intList() {
    std::vector<int64_t> r;
    expect('[');
    if (accept(']'))
      return r;
    do
      r.push_back(integer());
    while (accept(','));
    expect(']');
    return r;
  }
  /// A number or a nested list of numbers, flattened row-major.
  void numbers(std::vector<double> &out, int depth) {
    if (depth > kMaxDepth)
      fail("lists nest deeper than " + std::to_string(kMaxDepth));
    if (!accept('[')) {
      out.push_back(number());
      return;
    }
    if (accept(']'))
      return;
    do
      numbers(out, depth + 1);
    while (accept(','));
    expect(']');
  }
  const std::string &s_;
  size_t p_ = 0;
  /// When set, number() appends each number's text (integer constants are
  /// re-read exactly once their dtype is known).
  std::vector<std::string> *numberTexts = nullptr;
};

} // namespace dt::irtext
