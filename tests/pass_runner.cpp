// This file implements `dt_pass_runner`, the runner of the IR-in/IR-out pass
// tests (tests/passes/*.ir). Each file is IR text with its expectations in
// comments:
//   # RUN: emit spmd      the dtensorc arguments; `-x ir FILE` is appended
//   # CHECK: text         an output line containing `text`, after the line the
//                         previous CHECK matched (so CHECKs match in order)
//   # CHECK-NOT: text     no output line contains `text`
// A test checks only what its pass changes. dtensorc runs as a child process
// (tests/Subprocess.h) and must exit 0.
//
//   dt_pass_runner --dtensorc PATH [--timeout SECONDS] FILE...
#include "Subprocess.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

/// Runs one test; returns "" or what failed.
std::string runOne(const std::string &dtensorc, const std::string &path, double timeout) {
  std::ifstream in(path);
  if (!in)
    return "cannot read the file";
  std::vector<std::string> args, checks, nots;
  bool haveRun = false;
  for (std::string line; std::getline(in, line);) {
    auto directive = [&](const std::string &key, std::string &rest) {
      auto at = line.find("# " + key + ":");
      if (at != 0)
        return false;
      rest = trim(line.substr(key.size() + 3));
      return true;
    };
    std::string rest;
    if (directive("RUN", rest)) {
      std::istringstream ss(rest);
      for (std::string w; ss >> w;)
        args.push_back(w);
      haveRun = true;
    } else if (directive("CHECK", rest)) {
      checks.push_back(rest);
    } else if (directive("CHECK-NOT", rest)) {
      nots.push_back(rest);
    }
  }
  if (!haveRun || checks.empty())
    return "no `# RUN:` line or no `# CHECK:` line";
  std::vector<std::string> argv = {dtensorc};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"-x", "ir", path});
  dtlang::ProcResult r = dtlang::runProcess(argv, timeout);
  std::string cmd;
  for (auto &a : argv)
    cmd += (cmd.empty() ? "" : " ") + a;
  std::string report = "command: " + cmd + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
  if (r.timedOut || r.signal || r.exitCode != 0)
    return r.describe(timeout) + "\n" + report;
  std::vector<std::string> lines;
  std::istringstream os(r.out);
  for (std::string l; std::getline(os, l);)
    lines.push_back(l);
  size_t at = 0;
  for (auto &c : checks) {
    while (at < lines.size() && lines[at].find(c) == std::string::npos)
      ++at;
    if (at == lines.size())
      return "CHECK not found (in order): `" + c + "`\n" + report;
    ++at;
  }
  for (auto &n : nots)
    for (auto &l : lines)
      if (l.find(n) != std::string::npos)
        return "CHECK-NOT found: `" + n + "` in `" + l + "`\n" + report;
  return "";
}

} // namespace

int main(int argc, char **argv) {
  std::string dtensorc;
  double timeout = 30;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--dtensorc" && i + 1 < argc)
      dtensorc = argv[++i];
    else if (a == "--timeout" && i + 1 < argc)
      timeout = std::atof(argv[++i]);
    else
      files.push_back(a);
  }
  if (dtensorc.empty() || files.empty()) {
    std::cerr << "usage: dt_pass_runner --dtensorc PATH [--timeout SECONDS] FILE...\n";
    return 2;
  }
  int failed = 0;
  for (auto &f : files) {
    std::string why = runOne(dtensorc, f, timeout);
    if (!why.empty()) {
      ++failed;
      std::cout << "FAIL " << f << ": " << why << "\n";
    } else {
      std::cout << "PASS " << f << "\n";
    }
  }
  return failed ? 1 : 0;
}
