// This file implements `dt_hostile`, the hostile-input test of the whole
// front end (ctest `fuzz/hostile`, label `fuzz`). It feeds `dtensorc check`
// (a child process with a timeout, tests/Subprocess.h)
//   - prefixes of every tests/lang and examples `.dt` file (truncated
//     programs: every line end plus evenly spaced cuts inside lines, capped so
//     the whole test stays well under a minute on two cores), and
//   - seeded random programs: raw random bytes, soups of the language's
//     tokens, and corpus files with random token-level edits,
// and requires of each: no signal, no timeout, exit 0 or 1 (never 2 or 3),
// exit 1 only with at least one `FILE:LINE:COL: error: ...` line, exit 0
// without any error. Deterministic: the subset of prefixes is fixed and
// random program i uses seed `--seed` + i, printed with every failure;
// `--dump SEED` prints that program so a failure reproduces with
//   dt_hostile --dump SEED --seed ... DIRS > bad.dt && dtensorc check bad.dt
#include "LangExpect.h"
#include "Subprocess.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

/// One program to feed, and how to name it in a failure report.
struct Case {
  std::string name; ///< "tests/lang/x.dt prefix 120" or "random seed 17 (bytes)"
  std::string text;
};

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The language's tokens (and some near misses) for token soups.
const std::vector<std::string> kTokens = {"mesh",       "devices",   "let",
                                          "var",        "fn",        "for",
                                          "in",         "return",    "print",
                                          "import",     "true",      "false",
                                          "m",          "x",         "y",
                                          "a",          "b",         "T",
                                          "_",          "f32",       "i32",
                                          "i64",        "f64",       "bool",
                                          "shard",      "partial",   "replicate",
                                          "sum",        "max",       "relayout",
                                          "distribute", "to_host",   "relu",
                                          "exp",        "einsum",    "\"ij,jk->ik\"",
                                          "transpose",  "reshape",   "index_select",
                                          "ones",       "zeros",     "randn",
                                          "grad",       "0",         "1",
                                          "2",          "3",         "-1",
                                          "1.5",        "1e40",      "99999999999999999999",
                                          "0..",        "(",         ")",
                                          "[",          "]",         "{",
                                          "}",          ",",         ":",
                                          ";",          ".",         "..",
                                          "->",         "=",         "+",
                                          "-",          "*",         "/",
                                          "@",          "**",        "==",
                                          "!=",         "<",         "<=",
                                          ">",          ">=",        "&&",
                                          "||",         "!",         "\n",
                                          "\n",         "\n",        " ",
                                          "#",          "\"",        "\\",
                                          "$",          "\t",        "((((((((",
                                          "[[[[[[[[",   "@ m[x, _]", "@ m{x: shard(0)}",
                                          ": f32[2, 3]"};

/// Random program number `seed`: bytes, token soup or an edited corpus file.
Case randomCase(uint64_t seed, const std::vector<std::string> &corpus) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return n ? (size_t)(rng() % n) : 0; };
  Case c;
  std::string &t = c.text;
  int kind = (int)(seed % 3);
  if (kind == 0) {
    size_t n = pick(300);
    for (size_t i = 0; i < n; ++i)
      t += (char)(rng() & 0xff);
    c.name = "random seed " + std::to_string(seed) + " (bytes)";
  } else if (kind == 1 || corpus.empty()) {
    size_t n = 1 + pick(120);
    for (size_t i = 0; i < n; ++i) {
      t += kTokens[pick(kTokens.size())];
      if (rng() % 2)
        t += ' ';
    }
    c.name = "random seed " + std::to_string(seed) + " (tokens)";
  } else {
    // A corpus file with a few edits at random byte offsets: delete a range,
    // duplicate a range, or insert a token.
    t = corpus[pick(corpus.size())];
    int edits = 1 + (int)pick(4);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      size_t at = pick(t.size()), len = 1 + pick(12);
      len = std::min(len, t.size() - at);
      switch (rng() % 3) {
      case 0:
        t.erase(at, len);
        break;
      case 1:
        t.insert(at, t.substr(at, len));
        break;
      default:
        t.insert(at, kTokens[pick(kTokens.size())]);
        break;
      }
    }
    c.name = "random seed " + std::to_string(seed) + " (edited corpus file)";
  }
  return c;
}

/// Prefixes of `text`: every line end, plus `inner` evenly spaced cuts.
std::vector<size_t> cutPoints(const std::string &text, size_t inner) {
  std::vector<size_t> cuts = {0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      cuts.push_back(i); // the line without its newline
  for (size_t k = 1; k <= inner && text.size() > 1; ++k)
    cuts.push_back(k * text.size() / (inner + 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

/// Runs one case; returns "" or why it failed.
std::string check(const std::string &dtensorc, const fs::path &file, const Case &c) {
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << c.text;
  }
  const double timeoutS = 10;
  auto r = dtlang::runProcess({dtensorc, "check", file.string()}, timeoutS);
  if (r.timedOut || r.signal)
    return r.describe(timeoutS);
  if (r.exitCode != 0 && r.exitCode != 1)
    return "exit " + std::to_string(r.exitCode) + " (only 0 and 1 are allowed)\n" + r.err;
  auto parsed = dtlang::parseStderr(r.err);
  int located = 0, errors = parsed.errorCount();
  for (auto &d : parsed.diags)
    located += d.severity == "error" && d.path == file.string() && d.line > 0 && d.col > 0;
  if (r.exitCode == 1 && located == 0)
    return "exit 1 without a `FILE:LINE:COL: error:` line\n" + r.err;
  if (r.exitCode == 0 && errors > 0)
    return "exit 0 but errors were printed\n" + r.err;
  return "";
}

int usage() {
  std::cerr << "usage: dt_hostile --dtensorc PATH [--seed N] [--random N] [--inner-cuts N]\n"
               "                  [--jobs N] [--dump SEED] DIR...\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string dtensorc;
  uint64_t seed = 1;
  long randomCount = 300, dump = -1;
  size_t inner = 12;
  unsigned jobs = 2;
  std::vector<fs::path> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--dtensorc")
      dtensorc = next();
    else if (a == "--seed")
      seed = std::stoull(next());
    else if (a == "--random")
      randomCount = std::stol(next());
    else if (a == "--inner-cuts")
      inner = std::stoul(next());
    else if (a == "--jobs")
      jobs = std::max(1ul, std::stoul(next()));
    else if (a == "--dump")
      dump = std::stol(next());
    else if (a.rfind("--", 0) == 0)
      return usage();
    else
      dirs.push_back(a);
  }
  // The corpus, in a fixed order.
  std::vector<fs::path> files;
  for (auto &d : dirs)
    if (fs::is_directory(d))
      for (auto &e : fs::directory_iterator(d))
        if (e.path().extension() == ".dt")
          files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> corpus;
  for (auto &f : files)
    corpus.push_back(readFile(f));
  if (dump >= 0) {
    std::cout << randomCase((uint64_t)dump, corpus).text;
    return 0;
  }
  if (dtensorc.empty())
    return usage();

  std::vector<Case> cases;
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t cut : cutPoints(corpus[i], inner))
      cases.push_back({files[i].filename().string() + " prefix " + std::to_string(cut),
                       corpus[i].substr(0, cut)});
  size_t prefixes = cases.size();
  for (long i = 0; i < randomCount; ++i)
    cases.push_back(randomCase(seed + (uint64_t)i, corpus));
  std::cout << "dt_hostile: " << prefixes << " prefixes of " << files.size() << " files, "
            << randomCount << " random programs from seed " << seed << "\n"
            << std::flush;

  fs::path tmp = fs::temp_directory_path() / ("dt_hostile." + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::atomic<size_t> nextCase{0};
  std::mutex mu;
  std::vector<std::pair<size_t, std::string>> failures;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < jobs; ++w)
    pool.emplace_back([&, w] {
      fs::path file = tmp / ("case" + std::to_string(w) + ".dt");
      for (size_t i; (i = nextCase++) < cases.size();) {
        std::string why = check(dtensorc, file, cases[i]);
        if (why.empty())
          continue;
        while (!why.empty() && why.back() == '\n')
          why.pop_back();
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back({i, why});
        // Keep the failing input for reproduction.
        std::ofstream(tmp / ("fail" + std::to_string(i) + ".dt"), std::ios::binary)
            << cases[i].text;
      }
    });
  for (auto &t : pool)
    t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(failures.begin(), failures.end());
  for (auto &[i, why] : failures)
    std::cout << "FAIL " << cases[i].name << " (kept as "
              << (tmp / ("fail" + std::to_string(i) + ".dt")).string() << "): " << why << "\n";
  std::cout << "dt_hostile: " << cases.size() << " programs in " << (int)secs << " s, "
            << failures.size() << " failed\n";
  if (failures.empty())
    fs::remove_all(tmp);
  return failures.empty() ? 0 : 1;
}
