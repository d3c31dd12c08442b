// This file implements the expectation language of the `.dt` golden tests:
// the directives written in comments of a test program, the parsing of
// `dtensorc`'s stderr into located diagnostics, and the comparison of the two.
// It is header-only so that the runner (tests/lang_runner.cpp), the hostile-
// input test (tests/hostile_test.cpp) and the unit test of the parser
// (tests/unit/lang_runner_test.cpp) share one implementation.
//
// Directives (each in a `#` comment; see parseSpec for the exact grammar):
//
//   # RUN: run --reference            dtensorc arguments; the file is appended
//   # expect: [[20, 14], [56, 41]]    stdout, line by line, exactly
//   # expect-contains: %3 = matmul    a substring of stdout (then stdout is
//                                     not compared line by line)
//   # expected-stderr: out of memory  a substring of stderr
//   # expected-exit: 1                the exit code (default: 1 when errors
//                                     are expected, 0 otherwise)
//   # expected-error@+1:11 {{TEXT}}   an error at (this line + 1):11 whose
//                                     message contains TEXT; also `@-N:COL`,
//                                     `@LINE:COL` and `:COL` (this line)
//   # expected-hint@+1:11 {{TEXT}}    the `hint:` of that error contains TEXT
//   # expected-note@+1:11 {{TEXT}}    one `note:` of that error contains TEXT
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace dtlang {

/// One `expected-error|hint|note` directive.
struct ExpectedDiag {
  enum Kind { Error, Hint, Note };
  Kind kind = Error;
  int line = 0, col = 0; ///< where the diagnostic must be reported
  std::string text;      ///< substring of the message / hint / note
  int directiveLine = 0; ///< where the directive is written (for messages)
};

/// Everything a test file says about its expected behaviour.
struct Spec {
  std::vector<std::string> args;           ///< dtensorc arguments, without FILE
  bool argsGiven = false;                  ///< a `# RUN:` line was present
  std::vector<std::string> stdoutLines;    ///< `# expect:` lines, in order
  std::vector<std::string> stdoutContains; ///< `# expect-contains:` substrings
  std::vector<std::string> stderrContains; ///< `# expected-stderr:` substrings
  std::optional<int> exitCode;             ///< `# expected-exit:`
  std::vector<ExpectedDiag> diags;
  std::vector<std::string> problems; ///< malformed directives: each fails the test

  bool expectsErrors() const {
    for (auto &d : diags)
      if (d.kind == ExpectedDiag::Error)
        return true;
    return false;
  }
  /// The exit code the test wants.
  int wantedExit() const { return exitCode ? *exitCode : expectsErrors() ? 1 : 0; }
};

/// One diagnostic as `dtensorc` printed it.
struct ActualDiag {
  std::string severity; ///< error, warning or remark
  std::string path;
  int line = 0, col = 0; ///< 0 when the diagnostic has no location
  std::string message;
  std::vector<std::string> notes;
  std::string hint;
};

/// The diagnostics of one stderr, in order.
struct ParsedStderr {
  std::vector<ActualDiag> diags;
  int errorCount() const {
    int n = 0;
    for (auto &d : diags)
      n += d.severity == "error";
    return n;
  }
};

namespace detail {

inline std::vector<std::string> splitLines(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur)) {
    if (!cur.empty() && cur.back() == '\r')
      cur.pop_back();
    out.push_back(cur);
  }
  return out;
}

inline bool parseInt(const std::string &s, size_t &pos, int &out) {
  size_t b = pos;
  while (pos < s.size() && std::isdigit((unsigned char)s[pos]))
    ++pos;
  if (pos == b || pos - b > 9)
    return false;
  out = std::atoi(s.substr(b, pos - b).c_str());
  return true;
}

inline std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Returns the text after `# KEY:` when the comment at `hash` is that
/// directive (one space after the colon is dropped), else nullopt.
inline std::optional<std::string> keyed(const std::string &line, size_t hash,
                                        const std::string &key) {
  size_t p = line.find_first_not_of(' ', hash + 1);
  if (p == std::string::npos || line.compare(p, key.size(), key) != 0)
    return std::nullopt;
  p += key.size();
  if (p >= line.size() || line[p] != ':')
    return std::nullopt;
  ++p;
  if (p < line.size() && line[p] == ' ')
    ++p;
  return line.substr(p);
}

/// Parses `expected-KIND` directive text after the kind word: `@+N:COL {{T}}`,
/// `@-N:COL {{T}}`, `@LINE:COL {{T}}` or `:COL {{T}}`.
inline std::optional<std::string> parseDiagDirective(const std::string &rest, int lineNo,
                                                     ExpectedDiag &d) {
  size_t p = 0;
  d.line = lineNo;
  if (p < rest.size() && rest[p] == '@') {
    ++p;
    int sign = 0;
    if (p < rest.size() && (rest[p] == '+' || rest[p] == '-'))
      sign = rest[p++] == '+' ? 1 : -1;
    int n = 0;
    if (!parseInt(rest, p, n))
      return "expected a line number after `@`";
    d.line = sign ? lineNo + sign * n : n;
    if (d.line < 1)
      return "the line number is before the start of the file";
  }
  if (p >= rest.size() || rest[p] != ':')
    return "expected `:COL` (every expected diagnostic names its column)";
  ++p;
  if (!parseInt(rest, p, d.col) || d.col < 1)
    return "expected a column number after `:`";
  while (p < rest.size() && rest[p] == ' ')
    ++p;
  if (rest.compare(p, 2, "{{") != 0)
    return "expected `{{TEXT}}`";
  size_t e = rest.find("}}", p + 2);
  if (e == std::string::npos)
    return "missing `}}`";
  d.text = rest.substr(p + 2, e - p - 2);
  if (d.text.empty())
    return "the expected text is empty";
  if (!trim(rest.substr(e + 2)).empty())
    return "unexpected text after `}}`";
  return std::nullopt;
}

} // namespace detail

/// Splits a command line on spaces (no quoting: test arguments are simple).
inline std::vector<std::string> splitArgs(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string w;
  while (is >> w)
    out.push_back(w);
  return out;
}

/// Reads the directives of a test file.
inline Spec parseSpec(const std::string &text) {
  Spec spec;
  auto lines = detail::splitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string &l = lines[i];
    int lineNo = (int)i + 1;
    auto problem = [&](const std::string &why) {
      spec.problems.push_back("line " + std::to_string(lineNo) + ": " + why + ": `" + l + "`");
    };
    // A directive lives in a comment: the first `#` not inside a string.
    size_t hash = std::string::npos;
    bool inStr = false;
    for (size_t k = 0; k < l.size(); ++k) {
      if (l[k] == '"' && (k == 0 || l[k - 1] != '\\'))
        inStr = !inStr;
      if (l[k] == '#' && !inStr) {
        hash = k;
        break;
      }
    }
    if (hash == std::string::npos)
      continue;
    if (auto v = detail::keyed(l, hash, "RUN")) {
      if (spec.argsGiven)
        problem("a second `RUN:` line");
      spec.args = splitArgs(*v);
      spec.argsGiven = true;
      if (spec.args.empty())
        problem("`RUN:` needs dtensorc arguments");
    } else if (auto v = detail::keyed(l, hash, "expect")) {
      spec.stdoutLines.push_back(*v);
    } else if (auto v = detail::keyed(l, hash, "expect-contains")) {
      if (v->empty())
        problem("empty `expect-contains:`");
      spec.stdoutContains.push_back(*v);
    } else if (auto v = detail::keyed(l, hash, "expected-stderr")) {
      if (v->empty())
        problem("empty `expected-stderr:`");
      spec.stderrContains.push_back(*v);
    } else if (auto v = detail::keyed(l, hash, "expected-exit")) {
      size_t p = 0;
      int n = 0;
      std::string t = detail::trim(*v);
      if (!detail::parseInt(t, p, n) || p != t.size())
        problem("`expected-exit:` needs a number");
      else
        spec.exitCode = n;
    } else {
      size_t p = l.find_first_not_of(' ', hash + 1);
      static const std::pair<const char *, ExpectedDiag::Kind> kinds[] = {
          {"expected-error", ExpectedDiag::Error},
          {"expected-hint", ExpectedDiag::Hint},
          {"expected-note", ExpectedDiag::Note}};
      bool found = false;
      for (auto &[word, kind] : kinds) {
        std::string w = word;
        if (p == std::string::npos || l.compare(p, w.size(), w) != 0)
          continue;
        found = true;
        ExpectedDiag d;
        d.kind = kind;
        d.directiveLine = lineNo;
        if (auto why = detail::parseDiagDirective(l.substr(p + w.size()), lineNo, d))
          problem("malformed `" + w + "`: " + *why);
        else
          spec.diags.push_back(d);
      }
      // A typo such as `# expect-error` or `# expected-eror` must not pass silently.
      if (!found && p != std::string::npos && l.compare(p, 6, "expect") == 0)
        problem("unknown directive");
    }
  }
  if (spec.exitCode && *spec.exitCode == 3)
    spec.problems.push_back("`expected-exit: 3`: an internal error is always a failure");
  return spec;
}

/// Parses rendered diagnostics: `PATH:LINE:COL: SEV: MSG` (or `SEV: MSG`
/// without a location), the source line and caret, then `note:` / `hint:`.
inline ParsedStderr parseStderr(const std::string &err) {
  ParsedStderr out;
  for (const std::string &l : detail::splitLines(err)) {
    if (l.rfind("note: ", 0) == 0) {
      if (!out.diags.empty())
        out.diags.back().notes.push_back(l.substr(6));
      continue;
    }
    if (l.rfind("hint: ", 0) == 0) {
      if (!out.diags.empty())
        out.diags.back().hint = l.substr(6);
      continue;
    }
    if (l.empty() || l[0] == ' ')
      continue; // source line and caret
    for (const char *sev : {"error", "warning", "remark"}) {
      std::string tag = std::string(sev) + ": ";
      ActualDiag d;
      d.severity = sev;
      if (l.rfind(tag, 0) == 0) { // no location: `error: MSG`
        d.message = l.substr(tag.size());
        out.diags.push_back(d);
        break;
      }
      size_t t = l.find(": " + tag);
      if (t == std::string::npos)
        continue;
      d.message = l.substr(t + 2 + tag.size());
      std::string where = l.substr(0, t); // PATH or PATH:LINE:COL
      size_t c2 = where.rfind(':');
      size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : where.rfind(':', c2 - 1);
      size_t p1 = c1 + 1, p2 = c2 + 1;
      int line = 0, col = 0;
      if (c1 != std::string::npos && detail::parseInt(where, p1, line) && p1 == c2 &&
          detail::parseInt(where, p2, col) && p2 == where.size()) {
        d.path = where.substr(0, c1);
        d.line = line;
        d.col = col;
      } else {
        d.path = where;
      }
      out.diags.push_back(d);
      break;
    }
  }
  return out;
}

/// Compares expected and printed diagnostics; returns one message per
/// mismatch (empty when they agree). Every printed error must be expected and
/// every expected error, hint and note must be printed. When `path` is given,
/// only diagnostics in that file match expectations (an error in an imported
/// module is never expected by position).
inline std::vector<std::string> compareDiags(const Spec &spec, const ParsedStderr &got,
                                             const std::string &path = "") {
  std::vector<std::string> fails;
  std::vector<bool> used(got.diags.size(), false);
  auto where = [](int line, int col) { return std::to_string(line) + ":" + std::to_string(col); };
  auto here = [&](const ActualDiag &a, int line, int col) {
    return a.severity == "error" && a.line == line && a.col == col &&
           (path.empty() || a.path == path);
  };
  // Errors first: each expected error takes the first unused printed error at
  // its location whose message contains the text.
  for (auto &e : spec.diags) {
    if (e.kind != ExpectedDiag::Error)
      continue;
    bool ok = false;
    for (size_t i = 0; i < got.diags.size() && !ok; ++i) {
      const ActualDiag &a = got.diags[i];
      if (used[i] || !here(a, e.line, e.col))
        continue;
      if (a.message.find(e.text) == std::string::npos)
        continue;
      used[i] = ok = true;
    }
    if (ok)
      continue;
    std::string near;
    for (auto &a : got.diags)
      if (a.severity == "error" && a.line == e.line)
        near += "\n      printed at " + where(a.line, a.col) + ": " + a.message;
    fails.push_back("missing error at " + where(e.line, e.col) + " {{" + e.text +
                    "}} (directive on line " + std::to_string(e.directiveLine) + ")" +
                    (near.empty() ? "" : near));
  }
  for (auto &e : spec.diags) {
    if (e.kind == ExpectedDiag::Error)
      continue;
    bool isHint = e.kind == ExpectedDiag::Hint;
    bool any = false, ok = false;
    std::string seen;
    for (auto &a : got.diags) {
      if (!here(a, e.line, e.col))
        continue;
      any = true;
      if (isHint) {
        ok |= a.hint.find(e.text) != std::string::npos;
        seen += "\n      hint: " + (a.hint.empty() ? std::string("(none)") : a.hint);
      } else {
        for (auto &n : a.notes) {
          ok |= n.find(e.text) != std::string::npos;
          seen += "\n      note: " + n;
        }
      }
    }
    if (ok)
      continue;
    fails.push_back(std::string("missing ") + (isHint ? "hint" : "note") + " at " +
                    where(e.line, e.col) + " {{" + e.text + "}} (directive on line " +
                    std::to_string(e.directiveLine) + ")" +
                    (any ? seen : std::string("\n      (no error there)")));
  }
  for (size_t i = 0; i < got.diags.size(); ++i) {
    const ActualDiag &a = got.diags[i];
    if (used[i] || a.severity != "error")
      continue;
    // An unlocated error (a run-time fault), or one in another file (a
    // fault inside a module's function), is checked by `expected-stderr`
    // when the test names its exit code.
    bool elsewhere = a.line == 0 || (!a.path.empty() && a.path != path);
    if (elsewhere && spec.exitCode)
      continue;
    fails.push_back(
        "unexpected error at " +
        (a.line ? (a.path.empty() || a.path == path ? "" : a.path + ":") + where(a.line, a.col)
                : std::string("(no location)")) +
        ": " + a.message);
  }
  return fails;
}

/// Compares stdout with `# expect:` (exactly) or `# expect-contains:`.
inline std::vector<std::string> compareStdout(const Spec &spec, const std::string &out) {
  std::vector<std::string> fails;
  for (auto &s : spec.stdoutContains)
    if (out.find(s) == std::string::npos)
      fails.push_back("stdout does not contain `" + s + "`");
  if (!spec.stdoutContains.empty() && spec.stdoutLines.empty())
    return fails;
  auto got = detail::splitLines(out);
  const auto &want = spec.stdoutLines;
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    if (i < got.size() && i < want.size() && got[i] == want[i])
      continue;
    std::string msg = "stdout line " + std::to_string(i + 1) + ": expected " +
                      (i < want.size() ? "`" + want[i] + "`" : std::string("nothing more")) +
                      ", got " + (i < got.size() ? "`" + got[i] + "`" : std::string("nothing"));
    fails.push_back(msg);
    break; // the first difference is what matters; the whole stdout is printed
  }
  return fails;
}

} // namespace dtlang
