// This file implements `dtensorc run --progress`: a one-line indicator of the
// program's top-level `for` loops (iteration i/N, elapsed time, rate) drawn
// on stderr when it is a terminal, and erased before the program prints and
// when the loop ends, so the output reads as if it had never been there.
// When stderr is not a terminal it writes nothing at all (logs stay clean).
#pragma once

#include "runtime/Executor.h"

#include <chrono>

namespace dtcli {

class TerminalProgress : public dt::LoopProgress {
public:
  /// Draws on file descriptor `fd` if it is a terminal; otherwise inert.
  explicit TerminalProgress(int fd);
  ~TerminalProgress() override;
  bool active() const { return tty_; }

  void begin(dt::SrcLoc loc, uint64_t trips) override;
  void step(uint64_t done) override;
  void clear() override;
  void end() override;

private:
  using Clock = std::chrono::steady_clock;
  void draw();
  void write(const std::string &s);

  int fd_;
  bool tty_;
  bool shown_ = false;   ///< a line is on the screen now
  bool running_ = false; ///< inside a loop
  int line_ = 0;
  uint64_t trips_ = 0, done_ = 0;
  Clock::time_point start_, lastDraw_;
};

} // namespace dtcli
