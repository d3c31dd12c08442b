// The fix-it rule for every hint: each `expected-hint` asserted by a
// tests/lang/fail_*.dt file whose printed hint writes code ("write `...`",
// "did you mean `...`") carries a structured edit, the hint shows that edit,
// and applying the edit to the source makes the statement type-check: no
// error is left on its line and no error appears on a line that had none.
// This is the `ok_fix_*` rule of the golden tests, applied to all hints at once.
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "tests/LangExpect.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

using namespace dt;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Lines of file 0 (the compiled program) that carry an error.
std::multiset<int> errorLines(const Compilation &s) {
  std::multiset<int> out;
  for (auto &d : s.diags.all())
    if (d.severity == Severity::Error && d.loc.file == 0)
      out.insert(d.loc.line);
  return out;
}

/// Applies disjoint edits, the last in the text first so offsets stay valid.
std::string applyFixes(std::string text, std::vector<FixIt> fixes) {
  std::sort(fixes.begin(), fixes.end(), [](const FixIt &a, const FixIt &b) {
    return std::tie(a.range.line, a.range.col) > std::tie(b.range.line, b.range.col);
  });
  for (auto &fix : fixes) {
    size_t pos = 0;
    for (int l = 1; l < fix.range.line; ++l)
      pos = text.find('\n', pos) + 1;
    size_t b = pos + fix.range.col - 1, e = pos + fix.range.endCol - 1;
    text = text.substr(0, b) + fix.replacement + text.substr(e);
  }
  return text;
}

} // namespace

TEST_CASE("hints: every asserted hint that writes code is a fix-it that type-checks") {
  std::vector<std::string> files;
  for (auto &entry : std::filesystem::directory_iterator(DT_TEST_LANG_DIR)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("fail_", 0) == 0 && entry.path().extension() == ".dt")
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  int applied = 0;
  for (auto &path : files) {
    std::string text = readFile(path);
    dtlang::Spec spec = dtlang::parseSpec(text);
    Compilation s(pipelineCompileOptions());
    s.compile(path, text);
    for (auto &h : spec.diags) {
      if (h.kind != dtlang::ExpectedDiag::Hint)
        continue;
      CAPTURE(path);
      CAPTURE(h.line);
      const Diagnostic *d = nullptr;
      for (auto &x : s.diags.all())
        if (x.severity == Severity::Error && x.loc.file == 0 && x.loc.line == h.line &&
            x.loc.col == h.col && x.hint.find(h.text) != std::string::npos)
          d = &x;
      REQUIRE(d);
      CAPTURE(d->hint);
      bool writesCode = d->hint.rfind("write `", 0) == 0 || d->hint.rfind("did you mean `", 0) == 0;
      if (!writesCode)
        continue;
      REQUIRE(!d->fixes.empty());
      for (auto &f : d->fixes)
        CHECK(d->hint.find(f.replacement) != std::string::npos);
      std::string edited = applyFixes(text, d->fixes);
      CAPTURE(edited);
      Compilation t(pipelineCompileOptions());
      t.compile(path, edited);
      std::multiset<int> before = errorLines(s), after = errorLines(t);
      CHECK(after.count(h.line) == 0);
      for (int l : after)
        CHECK_MESSAGE(before.count(l) > 0,
                      "the fix made a new error on line " << l << ": " << t.diags.renderAll());
      ++applied;
    }
  }
  MESSAGE(applied << " hints applied");
  CHECK(applied >= 30);
}
