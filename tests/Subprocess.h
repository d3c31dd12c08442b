// This file implements the one way the language tests run `dtensorc`: as a
// child process (so that a crash is a failed test, not a crashed runner) with
// stdout and stderr captured separately and a wall-clock timeout after which
// the child's whole process group is killed (so that a hang is a failed test,
// not a stuck ctest). POSIX only, header-only; shared by tests/lang_runner.cpp
// and tests/hostile_test.cpp.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dtlang {

/// How a child process ended.
struct ProcResult {
  int exitCode = -1;     ///< the exit status when it exited normally
  int signal = 0;        ///< the signal that killed it, 0 if none
  bool timedOut = false; ///< killed by us after the timeout
  std::string out, err;  ///< everything it wrote

  /// "exit 1", "signal 11 (Segmentation fault)", "timeout after 30 s".
  std::string describe(double timeoutS) const {
    if (timedOut)
      return "timeout after " + std::to_string((int)timeoutS) + " s";
    if (signal)
      return "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    return "exit " + std::to_string(exitCode);
  }
};

/// Runs `argv` (argv[0] is a path) and waits at most `timeoutS` seconds.
inline ProcResult runProcess(const std::vector<std::string> &argv, double timeoutS) {
  ProcResult r;
  int outPipe[2], errPipe[2];
  // O_CLOEXEC: a child started by another thread must not inherit these
  // pipes, or their EOF would wait for that child.
  if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
    r.err = std::string("pipe: ") + strerror(errno);
    return r;
  }
  pid_t pid = fork();
  if (pid < 0) {
    r.err = std::string("fork: ") + strerror(errno);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0); // its own group, so a timeout kills all it started
    dup2(outPipe[1], 1);
    dup2(errPipe[1], 2);
    close(outPipe[0]);
    close(errPipe[0]);
    close(outPipe[1]);
    close(errPipe[1]);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, 0);
    std::vector<char *> args;
    for (auto &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::string why = std::string("cannot run `") + args[0] + "`: " + strerror(errno) + "\n";
    (void)!write(2, why.data(), why.size());
    _exit(127);
  }
  setpgid(pid, pid);
  close(outPipe[1]);
  close(errPipe[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutS);
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  std::string *sinks[2] = {&r.out, &r.err};
  int open = 2;
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      r.timedOut = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, (int)std::min<long long>(left, 1000));
    if (n < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[65536];
      ssize_t k = read(fds[i].fd, buf, sizeof buf);
      if (k > 0) {
        sinks[i]->append(buf, (size_t)k);
      } else if (k == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto &f : fds)
    if (f.fd >= 0)
      close(f.fd);
  int status = 0;
  // The child may close its pipes and still run: wait for it up to the deadline.
  while (!r.timedOut) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR))
      break;
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timedOut = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    } else {
      usleep(1000);
    }
  }
  if (r.timedOut)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  if (r.timedOut)
    return r;
  if (WIFEXITED(status))
    r.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
  return r;
}

} // namespace dtlang
