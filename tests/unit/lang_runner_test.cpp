// Unit tests for the expectation language of the `.dt` golden tests
// (tests/LangExpect.h): directive parsing, stderr parsing and the comparison
// rules the runner applies (missing, unexpected, hint, note, stdout).
#include "tests/LangExpect.h"

#include <doctest/doctest.h>

using namespace dtlang;

TEST_CASE("lang runner: RUN, expect and exit directives") {
  Spec s = parseSpec("# RUN: run --reference\nprint(1)\n# expect: [[1, 2]]\n# expect:\n"
                     "# expect-contains: matmul\n# expected-stderr: oops\n# expected-exit: 1\n");
  CHECK(s.problems.empty());
  CHECK(s.argsGiven);
  CHECK(s.args == std::vector<std::string>{"run", "--reference"});
  CHECK(s.stdoutLines == std::vector<std::string>{"[[1, 2]]", ""});
  CHECK(s.stdoutContains == std::vector<std::string>{"matmul"});
  CHECK(s.stderrContains == std::vector<std::string>{"oops"});
  REQUIRE(s.exitCode);
  CHECK(*s.exitCode == 1);
  CHECK(!s.expectsErrors());
}

TEST_CASE("lang runner: expected-error line forms") {
  Spec s = parseSpec("line one\n"
                     "# expected-error@+1:9 {{relative down}}\n"
                     "let c = a + b\n"
                     "# expected-error@-1:5 {{relative up}}\n"
                     "# expected-error@7:2 {{absolute}}\n"
                     "let d = e  # expected-error:9 {{same line}}\n");
  CHECK(s.problems.empty());
  REQUIRE(s.diags.size() == 4);
  CHECK(s.diags[0].line == 3);
  CHECK(s.diags[0].col == 9);
  CHECK(s.diags[0].text == "relative down");
  CHECK(s.diags[1].line == 3);
  CHECK(s.diags[1].col == 5);
  CHECK(s.diags[2].line == 7);
  CHECK(s.diags[3].line == 6);
  CHECK(s.diags[3].col == 9);
  CHECK(s.diags[3].text == "same line");
  CHECK(s.expectsErrors());
  CHECK(s.wantedExit() == 1);
}

TEST_CASE("lang runner: hints and notes; text may hold braces and backticks") {
  Spec s = parseSpec("# expected-hint@+1:3 {{write `relayout(b, m{x: shard(0)})`}}\n"
                     "# expected-note@+1:3 {{`a` is `f32[4]`}}\n");
  CHECK(s.problems.empty());
  REQUIRE(s.diags.size() == 2);
  CHECK(s.diags[0].kind == ExpectedDiag::Hint);
  CHECK(s.diags[0].text == "write `relayout(b, m{x: shard(0)})`");
  CHECK(s.diags[1].kind == ExpectedDiag::Note);
  CHECK(!s.expectsErrors());
}

TEST_CASE("lang runner: malformed directives are problems, not silently ignored") {
  CHECK(parseSpec("# expected-error@+1 {{no column}}\n").problems.size() == 1);
  CHECK(parseSpec("# expected-error@+1:3 no braces\n").problems.size() == 1);
  CHECK(parseSpec("# expected-error@+1:3 {{unclosed\n").problems.size() == 1);
  CHECK(parseSpec("# expected-error@+1:3 {{}}\n").problems.size() == 1);
  CHECK(parseSpec("# expected-error@-5:3 {{before the file}}\n").problems.size() == 1);
  CHECK(parseSpec("# expect-error@+1:3 {{typo}}\n").problems.size() == 1);
  CHECK(parseSpec("# expected-exit: three\n").problems.size() == 1);
  CHECK(parseSpec("# expected-exit: 3\n").problems.size() == 1);
  CHECK(parseSpec("# RUN: check\n# RUN: run\n").problems.size() == 1);
  // ordinary comments and a `#` inside a string are not directives
  CHECK(parseSpec("# expectations are great\n").problems.size() == 1);
  CHECK(parseSpec("# a comment\nlet s = \"# expect: x\"\n").stdoutLines.empty());
}

TEST_CASE("lang runner: stderr parsing attaches notes and hints") {
  ParsedStderr p = parseStderr("t.dt:4:9: error: operand shardings disagree on mesh axis `x`\n"
                               "  4 | let c = a + b   # error: in a comment\n"
                               "    |         ^~~~~\n"
                               "note: `a` is `f32[4] @ m{x: shard(0)}`\n"
                               "hint: write `relayout(b, m[x])`\n"
                               "t.dt: error: function `f` does not return a value\n"
                               "error: rank 2 failed\n"
                               "2 errors\n");
  REQUIRE(p.diags.size() == 3);
  CHECK(p.errorCount() == 3);
  CHECK(p.diags[0].path == "t.dt");
  CHECK(p.diags[0].line == 4);
  CHECK(p.diags[0].col == 9);
  CHECK(p.diags[0].message == "operand shardings disagree on mesh axis `x`");
  CHECK(p.diags[0].notes == std::vector<std::string>{"`a` is `f32[4] @ m{x: shard(0)}`"});
  CHECK(p.diags[0].hint == "write `relayout(b, m[x])`");
  CHECK(p.diags[1].path == "t.dt");
  CHECK(p.diags[1].line == 0);
  CHECK(p.diags[2].path == "");
  CHECK(p.diags[2].message == "rank 2 failed");
}

TEST_CASE("lang runner: missing, unexpected and misplaced errors all fail") {
  ParsedStderr got = parseStderr("t.dt:3:9: error: shape mismatch in `add`: [4] and [5]\n"
                                 "hint: write `relayout(b, m[x])`\n");
  Spec ok = parseSpec("\n# expected-error@+1:9 {{shape mismatch in `add`}}\n\n");
  CHECK(compareDiags(ok, got, "t.dt").empty());
  Spec wrongCol = parseSpec("\n# expected-error@+1:8 {{shape mismatch}}\n\n");
  CHECK(compareDiags(wrongCol, got, "t.dt").size() == 2); // missing + unexpected
  Spec wrongText = parseSpec("\n# expected-error@+1:9 {{dtype mismatch}}\n\n");
  CHECK(compareDiags(wrongText, got, "t.dt").size() == 2);
  Spec none = parseSpec("let x = 1\n");
  CHECK(compareDiags(none, got, "t.dt").size() == 1);
  Spec otherFile = parseSpec("\n# expected-error@+1:9 {{shape mismatch}}\n\n");
  CHECK(compareDiags(otherFile, got, "u.dt").size() == 2);
  Spec hint =
      parseSpec("\n# expected-error@+1:9 {{shape}}\n# expected-hint@3:9 {{relayout(b, m[x])}}\n");
  CHECK(compareDiags(hint, got, "t.dt").empty());
  Spec badHint =
      parseSpec("\n# expected-error@+1:9 {{shape}}\n# expected-hint@3:9 {{relayout(a, m[x])}}\n");
  CHECK(compareDiags(badHint, got, "t.dt").size() == 1);
  Spec note = parseSpec("\n# expected-error@+1:9 {{shape}}\n# expected-note@3:9 {{anything}}\n");
  CHECK(compareDiags(note, got, "t.dt").size() == 1);
}

TEST_CASE("lang runner: two errors at one place need two directives") {
  ParsedStderr got = parseStderr("t.dt:1:1: error: first\nt.dt:1:1: error: second\n");
  CHECK(compareDiags(parseSpec("# expected-error:1 {{first}}\n"), got).size() == 1);
  CHECK(compareDiags(parseSpec("# expected-error:1 {{first}}\n# expected-error@1:1 {{second}}\n"),
                     got)
            .empty());
}

TEST_CASE("lang runner: unlocated run-time errors need an expected exit code") {
  ParsedStderr got = parseStderr("error: out of memory on rank 1\n");
  CHECK(compareDiags(parseSpec("print(1)\n"), got).size() == 1);
  CHECK(compareDiags(parseSpec("# expected-exit: 1\n"), got).empty());
}

TEST_CASE("lang runner: stdout is compared exactly, or by substrings") {
  Spec s = parseSpec("# expect: 1\n# expect: 2\n");
  CHECK(compareStdout(s, "1\n2\n").empty());
  CHECK(compareStdout(s, "1\n2").empty());
  CHECK(compareStdout(s, "1\n").size() == 1);
  CHECK(compareStdout(s, "1\n2\n3\n").size() == 1);
  CHECK(compareStdout(s, "1 \n2\n").size() == 1);
  CHECK(compareStdout(parseSpec(""), "").empty());
  CHECK(compareStdout(parseSpec(""), "surprise\n").size() == 1);
  Spec c = parseSpec("# expect-contains: matmul %0, %1\n");
  CHECK(compareStdout(c, "%2 = matmul %0, %1 : f32[2]\nmore\n").empty());
  CHECK(compareStdout(c, "%2 = add %0, %1\n").size() == 1);
}
