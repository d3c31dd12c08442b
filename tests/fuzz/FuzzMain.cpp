// This file implements a small stand-in for libFuzzer's driver, so that every
// fuzz target (a `LLVMFuzzerTestOneInput`) also builds with GCC and runs in
// the ordinary test suite (ctest label `fuzz`) and under the sanitizer build.
// It takes libFuzzer's command line: corpus folders, `-max_total_time=S`,
// `-runs=N`, `-seed=N`, `-dict=FILE` (other `-flag=value`s are ignored). It
// runs every corpus file once, then mutations of them (erase, duplicate,
// insert a dictionary token, flip a byte, splice two inputs) until the time or
// run budget is spent. Deterministic in the seed: a crash prints the seed and
// the run number, and writes the input to `crash-SEED-RUN` in the working
// folder, as libFuzzer writes `crash-HASH`. Built with -DDT_FUZZ=ON and clang,
// the targets link the real libFuzzer instead (coverage-guided).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

// What the crash handler writes: set before every run (signal handlers may
// only touch such plain globals).
const char *gInput = nullptr;
size_t gSize = 0;
char gCrashName[64];

void onCrash(int sig) {
  int fd = ::open(gCrashName, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (gInput && ::write(fd, gInput, gSize) < 0) {
    }
    ::close(fd);
  }
  const char msg[] = "\n==fuzz== crash: the input is in ";
  if (::write(2, msg, sizeof msg - 1) < 0 || ::write(2, gCrashName, strlen(gCrashName)) < 0 ||
      ::write(2, "\n", 1) < 0) {
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string readFile(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// libFuzzer's dictionary format: one `"token"` a line, `#` comments.
std::vector<std::string> readDict(const std::string &path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find('"'), b = line.rfind('"');
    if (line.empty() || line[0] == '#' || a == std::string::npos || b <= a)
      continue;
    out.push_back(line.substr(a + 1, b - a - 1));
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  double maxTime = 10;
  long maxRuns = -1;
  uint64_t seed = 1;
  std::vector<std::string> dict = {"\n", " ", "(", ")", "[", "]", ",", "=", "@", "*", "0", "9"};
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = strlen(flag);
      return a.compare(0, n, flag) == 0 ? a.c_str() + n : nullptr;
    };
    if (auto v = value("-max_total_time="))
      maxTime = std::atof(v);
    else if (auto v = value("-runs="))
      maxRuns = std::atol(v);
    else if (auto v = value("-seed="))
      seed = std::strtoull(v, nullptr, 10);
    else if (auto v = value("-dict=")) {
      auto d = readDict(v);
      dict.insert(dict.end(), d.begin(), d.end());
    } else if (a[0] == '-')
      continue; // a libFuzzer flag this driver does not model
    else if (std::filesystem::is_directory(a)) {
      std::vector<std::filesystem::path> files;
      for (auto &e : std::filesystem::recursive_directory_iterator(a))
        if (e.is_regular_file())
          files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (auto &f : files)
        corpus.push_back(readFile(f));
    } else if (std::filesystem::is_regular_file(a)) {
      corpus.push_back(readFile(a));
    }
  }
  if (corpus.empty())
    corpus.push_back("");
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    std::signal(sig, onCrash);

  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return n ? (size_t)(rng() % n) : 0; };
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  long runs = 0;
  auto runOne = [&](const std::string &input) {
    std::snprintf(gCrashName, sizeof gCrashName, "crash-%llu-%ld", (unsigned long long)seed, runs);
    gInput = input.data();
    gSize = input.size();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(input.data()), input.size());
    ++runs;
  };
  for (auto &c : corpus)
    runOne(c);
  while ((maxRuns < 0 || runs < maxRuns) && elapsed() < maxTime) {
    std::string t = corpus[pick(corpus.size())];
    int edits = 1 + (int)pick(4);
    for (int e = 0; e < edits; ++e) {
      size_t at = pick(t.size() + 1), len = 1 + pick(16);
      len = std::min(len, t.size() - std::min(at, t.size()));
      switch (pick(5)) {
      case 0:
        t.erase(at, len);
        break;
      case 1:
        t.insert(at, t.substr(at, len));
        break;
      case 2:
        t.insert(at, dict[pick(dict.size())]);
        break;
      case 3:
        if (!t.empty())
          t[pick(t.size())] ^= (char)(1u << pick(8));
        break;
      default: {
        const std::string &o = corpus[pick(corpus.size())];
        size_t from = pick(o.size() + 1);
        t.insert(at, o.substr(from, pick(64)));
        break;
      }
      }
    }
    runOne(t);
  }
  std::cout << "fuzz: " << runs << " runs (" << corpus.size() << " corpus inputs) in "
            << (int)elapsed() << " s, seed " << seed << ", no crash\n";
  return 0;
}
