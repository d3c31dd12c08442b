// This file implements the REPL's input loop (ReplTerminal.h).
#include "tools/ReplTerminal.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <editline/readline.h>
#include <filesystem>
#include <iostream>

namespace dt {

namespace {

std::string historyPath() {
  if (const char *p = std::getenv("DTENSOR_HISTORY"))
    return p;
  std::filesystem::path dir;
  if (const char *s = std::getenv("XDG_STATE_HOME"); s && *s)
    dir = s;
  else if (const char *h = std::getenv("HOME"); h && *h)
    dir = std::filesystem::path(h) / ".local" / "state";
  else
    return "";
  dir /= "dtensor";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return ec ? "" : (dir / "history").string();
}

/// The one thing the Ctrl-C handler can reach (a signal handler takes no argument): the flag of
/// the terminal loop running now.
std::atomic<bool> *gInterrupt = nullptr;

extern "C" void onInterrupt(int) {
  if (gInterrupt)
    gInterrupt->store(true);
}

/// Ctrl-C while the terminal REPL runs: sets `flag` instead of ending the process. No
/// SA_RESTART, so a read in libedit returns (readline gives null) and the line is dropped; a
/// running input stops at its next block (ExecOptions::interrupt). The old handler comes back
/// when this goes out of scope.
struct InterruptScope {
  struct sigaction old {};
  explicit InterruptScope(std::atomic<bool> &flag) {
    gInterrupt = &flag;
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &old, nullptr);
    gInterrupt = nullptr;
  }
};

} // namespace

int runRepl(const ReplOptions &options, const std::string &file, bool terminal,
            const std::string &banner) {
  std::atomic<bool> interrupted{false};
  ReplOptions opts = options;
  if (terminal)
    opts.interrupt = &interrupted;
  Repl repl(opts, std::cout, std::cerr);
  if (!repl.startBackend())
    return 1;
  if (terminal)
    std::cout << banner << " (`:help` lists the commands, `:quit` or Ctrl-D leaves)\n";
  if (!file.empty() && !repl.load(file) && !terminal) {
    std::cerr << "error: `" << file << "` did not load; the piped input was not run\n";
    return 1;
  }
  if (!terminal) {
    std::string line;
    while (std::getline(std::cin, line))
      if (repl.feed(line) == Repl::Status::Quit)
        return repl.failures() ? 1 : 0;
    repl.finish();
    return repl.failures() ? 1 : 0;
  }
  std::string hist = historyPath();
  using_history();
  stifle_history(1000);
  if (!hist.empty())
    read_history(hist.c_str());
  std::string entry; // the whole input, for one history entry
  InterruptScope onCtrlC(interrupted);
  while (true) {
    std::cout.flush();
    interrupted.store(false);
    char *raw = readline(repl.prompt().c_str());
    if (!raw && interrupted.exchange(false)) { // Ctrl-C: drop the input, keep the session
      std::cout << "^C\n";
      repl.cancel();
      entry.clear();
      continue;
    }
    if (!raw) { // Ctrl-D
      std::cout << "\n";
      repl.finish();
      break;
    }
    std::string line = raw;
    std::free(raw);
    if (!line.empty() && line.find_first_not_of(" \t") != std::string::npos)
      entry += (entry.empty() ? "" : "\n") + line;
    Repl::Status st = repl.feed(line);
    if (st != Repl::Status::More && !entry.empty()) {
      // Not `:quit`, nor the same input twice in a row.
      HIST_ENTRY *last =
          history_length > 0 ? history_get(history_base + history_length - 1) : nullptr;
      if (st != Repl::Status::Quit && !(last && last->line && entry == last->line)) {
        add_history(entry.c_str());
        if (!hist.empty())
          write_history(hist.c_str()); // kept even if the process is killed
      }
      entry.clear();
    }
    if (st == Repl::Status::Quit)
      break;
  }
  return 0;
}

} // namespace dt
