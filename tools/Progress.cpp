// This file implements the terminal loop-progress line (Progress.h).
#include "tools/Progress.h"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace dtcli {

namespace {
/// Redraws at most this often: a terminal is slow next to a tight loop.
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);
} // namespace

TerminalProgress::TerminalProgress(int fd) : fd_(fd), tty_(isatty(fd) == 1) {}

TerminalProgress::~TerminalProgress() { clear(); }

void TerminalProgress::write(const std::string &s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd_, s.data() + off, s.size() - off);
    if (n <= 0)
      return; // a progress line is not worth failing the run for
    off += (size_t)n;
  }
}

void TerminalProgress::begin(dt::SrcLoc loc, uint64_t trips) {
  if (!tty_)
    return;
  running_ = true;
  line_ = loc.line;
  trips_ = trips;
  done_ = 0;
  start_ = lastDraw_ = Clock::now();
  draw();
}

void TerminalProgress::step(uint64_t done) {
  if (!running_)
    return;
  done_ = done;
  auto now = Clock::now();
  if (now - lastDraw_ >= kRedrawEvery) {
    lastDraw_ = now;
    draw();
  }
}

void TerminalProgress::draw() {
  double secs = std::chrono::duration<double>(Clock::now() - start_).count();
  char buf[160];
  std::snprintf(buf, sizeof buf, "\r\033[Kfor at line %d: %llu/%llu (%.0f%%) %.1fs, %.1f it/s",
                line_, (unsigned long long)done_, (unsigned long long)trips_,
                trips_ ? 100.0 * (double)done_ / (double)trips_ : 100.0, secs,
                secs > 0 ? (double)done_ / secs : 0.0);
  write(buf);
  shown_ = true;
}

void TerminalProgress::clear() {
  if (!shown_)
    return;
  write("\r\033[K");
  shown_ = false;
  lastDraw_ = Clock::time_point{}; // redraw at the next step
}

void TerminalProgress::end() {
  clear();
  running_ = false;
}

} // namespace dtcli
