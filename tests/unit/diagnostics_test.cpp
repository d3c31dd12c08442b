// Unit tests of the diagnostics registry (support/Diagnostics.def) and engine:
// every kind's message takes arguments {0}..{N-1} with no gap, follows the
// message style, and has a distinct name; the typed `error<Id>(loc, args...)`
// formats strings and integers; there is no catch-all kind left for program
// errors (a kind whose whole message is one argument is only for the parser's
// and the collective checker's own words, remarks and runtime faults).
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

using namespace dt;

namespace {

std::vector<DiagId> allKinds() {
  std::vector<DiagId> out;
#define DIAG(Id, fmt) out.push_back(DiagId::Id);
#include "support/Diagnostics.def"
  return out;
}

} // namespace

TEST_CASE("diagnostics: every kind's arguments are {0}..{N-1} and its message is in style") {
  std::set<std::string> names;
  for (DiagId id : allKinds()) {
    std::string name = diagIdName(id), fmt = diagFormat(id);
    CAPTURE(name);
    CHECK(names.insert(name).second);
    int n = diagArity(id);
    for (int i = 0; i < n; ++i)
      CHECK(fmt.find("{" + std::to_string(i) + "}") != std::string::npos);
    CHECK(n <= 4);
    REQUIRE(!fmt.empty());
    // Lowercase first word (or code/an argument first), no trailing period.
    CHECK((std::islower((unsigned char)fmt[0]) || fmt[0] == '`' || fmt[0] == '{'));
    CHECK(fmt.back() != '.');
    // Code in backticks: every backtick is paired.
    CHECK(std::count(fmt.begin(), fmt.end(), '`') % 2 == 0);
  }
  CHECK(names.size() > 90);
}

TEST_CASE("diagnostics: only the listed kinds are free-form") {
  std::set<std::string> freeForm;
  for (DiagId id : allKinds())
    if (std::string(diagFormat(id)) == "{0}")
      freeForm.insert(diagIdName(id));
  CHECK(freeForm == std::set<std::string>{"ParseError", "BadCollective", "Remark", "RuntimeError"});
}

TEST_CASE("diagnostics: typed arguments") {
  SourceManager sm;
  int f = sm.add("t.dt", "let x = 1\n");
  DiagEngine d(sm);
  static_assert(diagArity(DiagId::ReturnCount) == 2);
  static_assert(diagArity(DiagId::TupleArg) == 0);
  static_assert(diagArity(DiagId::MeshNotValue) == 1); // `{0}` twice is one argument
  d.error<DiagId::ReturnCount>(SrcLoc{f, 1, 5, 6}, size_t(3), 2);
  d.error<DiagId::MeshNotValue>(SrcLoc{f, 1, 1, 0}, std::string("m"));
  d.warning<DiagId::RecursiveCall>(SrcLoc{f, 1, 1, 0}, "g");
  REQUIRE(d.all().size() == 3);
  CHECK(d.errorCount() == 2);
  CHECK(d.all()[0].id == DiagId::ReturnCount);
  CHECK(d.all()[0].message == "returns 3 values but the signature declares 2");
  CHECK(d.all()[1].message == "mesh `m` is not a value; use it in a layout such as `m[_]`");
  CHECK(d.all()[2].severity == Severity::Warning);
  CHECK(d.render(d.all()[0]).find("t.dt:1:5: error: returns 3 values") == 0);
  CHECK(d.remark(SrcLoc{}, "inserted `all_gather`").id == DiagId::Remark);
}

TEST_CASE("diagnostics: the caret and its range count characters, not bytes, after UTF-8") {
  SourceManager sm;
  // "é" and "λ" are two bytes each: `bad` starts at byte column 27, after
  // 23 characters.
  int f = sm.add("u.dt", "print(\"é\") # λ λ ; let bad\n");
  DiagEngine d(sm);
  d.error<DiagId::MeshNotValue>(SrcLoc{f, 1, 27, 30}, std::string("m"));
  d.error<DiagId::MeshNotValue>(SrcLoc{f, 1, 8, 10}, std::string("m")); // the `é`
  std::string one = d.render(d.all()[0]), two = d.render(d.all()[1]);
  CHECK(one.find("u.dt:1:27: error:") == 0);
  CHECK(one.find("\n    | " + std::string(23, ' ') + "^~~\n") != std::string::npos);
  CHECK(two.find("\n    | " + std::string(7, ' ') + "^\n") != std::string::npos);
}

TEST_CASE("diagnostics: hostile source lines print as a safe window, long texts elided") {
  SourceManager sm;
  // 5000 bytes before the error, 5000 after, an ESC, a lone 0xFF, a C1 CSI.
  std::string line = std::string(5000, 'a') + "\x1b\xff\xc2\x9b bad " + std::string(5000, 'z');
  int f = sm.add("h.dt", line + "\n");
  DiagEngine d(sm);
  const int col = 5000 + 6; // `bad`, 1-based: after 5000 a's and 5 bytes
  d.error<DiagId::MeshNotValue>(SrcLoc{f, 1, col, col + 3}, std::string(3000, 'n'));
  std::string r = d.render(d.all()[0]);
  CHECK(r.size() < 1200);
  CHECK(r.find('\x1b') == std::string::npos);
  CHECK(r.find('\xff') == std::string::npos);
  CHECK(r.find("\xc2\x9b") == std::string::npos);
  CHECK(r.find(" ... ") != std::string::npos); // the 3000-byte name, elided
  // The caret still sits under `bad` in the window shown.
  size_t src = r.find("  1 | ");
  REQUIRE(src != std::string::npos);
  size_t srcEnd = r.find('\n', src);
  std::string shown = r.substr(src + 6, srcEnd - src - 6);
  size_t caretLine = srcEnd + 1;
  size_t caret = r.find('^', caretLine);
  REQUIRE(caret != std::string::npos);
  size_t at = caret - (caretLine + 6);
  CHECK(shown.substr(0, 4) == "... ");
  CHECK(shown.substr(shown.size() - 4) == " ...");
  // Columns count characters: the window's C1 pair shows as two spaces.
  CHECK(shown.substr(at, 3) == "bad");
  CHECK(r.substr(caret, 4) == "^~~\n");
}
