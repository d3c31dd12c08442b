// This file implements `dt_lang_runner`, the runner of the language-level
// golden tests (tests/lang/*.dt and examples/*.dt). For each file it reads the
// expectations written in its comments (tests/LangExpect.h), runs the real
// `dtensorc` on it as a child process with a timeout (tests/Subprocess.h) and
// compares exit code, diagnostics and stdout. A failure prints the file, the
// command, every mismatch and the whole stdout and stderr, so that fixing a
// test needs no second run.
//
//   dt_lang_runner --dtensorc PATH [--timeout SECONDS] [--verbose] FILE...
//
// Rules: exit code 3 (internal error), a signal or a timeout always fail; the
// exit code must be `# expected-exit:` if given, else 1 when errors are
// expected and 0 otherwise; every printed error must be expected and every
// expected error / hint / note printed; stdout must equal the `# expect:`
// lines (nothing more, nothing less) unless only `# expect-contains:` is used.
#include "LangExpect.h"
#include "Subprocess.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

/// Indents every line of `s` for the failure report.
std::string indent(const std::string &s) {
  if (s.empty())
    return "    (empty)\n";
  std::string out = "    ";
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '\n' && i + 1 < s.size())
      out += "    ";
  }
  if (out.back() != '\n')
    out += "\n";
  return out;
}

/// Runs one test file; prints PASS or a full failure report; returns success.
bool runOne(const std::string &dtensorc, const std::string &file, double timeoutS, bool verbose) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cout << "FAIL " << file << "\n  cannot read the file\n";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  dtlang::Spec spec = dtlang::parseSpec(ss.str());

  std::vector<std::string> argv = {dtensorc};
  if (spec.argsGiven)
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  else
    argv.push_back(spec.expectsErrors() ? "check" : "run");
  argv.push_back(file);
  std::string cmd;
  for (auto &a : argv)
    cmd += (cmd.empty() ? "" : " ") + a;

  dtlang::ProcResult r = dtlang::runProcess(argv, timeoutS);
  std::vector<std::string> fails = spec.problems;
  int want = spec.wantedExit();
  if (r.timedOut || r.signal) {
    fails.push_back("dtensorc did not finish: " + r.describe(timeoutS));
  } else if (r.exitCode == 3) {
    fails.push_back("internal compiler error (exit 3)");
  } else if (r.exitCode != want) {
    fails.push_back("exit code " + std::to_string(r.exitCode) + ", expected " +
                    std::to_string(want));
  }
  if (!r.timedOut && !r.signal) {
    for (auto &f : dtlang::compareDiags(spec, dtlang::parseStderr(r.err), file))
      fails.push_back(f);
    for (auto &f : dtlang::compareStdout(spec, r.out))
      fails.push_back(f);
    for (auto &s : spec.stderrContains)
      if (r.err.find(s) == std::string::npos)
        fails.push_back("stderr does not contain `" + s + "`");
  }
  if (fails.empty()) {
    std::cout << "PASS " << file << "\n";
    if (verbose)
      std::cout << "  $ " << cmd << "\n  stdout:\n"
                << indent(r.out) << "  stderr:\n"
                << indent(r.err);
    return true;
  }
  std::cout << "FAIL " << file << "\n  $ " << cmd << "\n  " << r.describe(timeoutS) << "\n";
  for (auto &f : fails)
    std::cout << "  - " << f << "\n";
  if (!spec.stdoutLines.empty()) {
    std::string want;
    for (auto &l : spec.stdoutLines)
      want += l + "\n";
    std::cout << "  expected stdout:\n" << indent(want);
  }
  std::cout << "  stdout:\n" << indent(r.out) << "  stderr:\n" << indent(r.err);
  return false;
}

int usage() {
  std::cerr << "usage: dt_lang_runner --dtensorc PATH [--timeout SECONDS] [--verbose] FILE...\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string dtensorc;
  double timeoutS = 30;
  bool verbose = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dtensorc" && i + 1 < argc)
      dtensorc = argv[++i];
    else if (a == "--timeout" && i + 1 < argc)
      timeoutS = std::atof(argv[++i]);
    else if (a == "--verbose")
      verbose = true;
    else if (a.rfind("--", 0) == 0)
      return usage();
    else
      files.push_back(a);
  }
  if (dtensorc.empty() || files.empty() || timeoutS <= 0)
    return usage();
  if (!std::filesystem::exists(dtensorc)) {
    std::cerr << "dt_lang_runner: no dtensorc at `" << dtensorc << "`\n";
    return 2;
  }
  int failed = 0;
  for (auto &f : files)
    failed += !runOne(dtensorc, f, timeoutS, verbose);
  if (files.size() > 1)
    std::cout << (files.size() - failed) << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}
