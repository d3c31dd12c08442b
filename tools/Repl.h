// This file implements the logic of the interactive REPL (`dtensorc repl`):
// one Session (runtime/Session.h) fed a line at a time. It owns no terminal:
// the driver (tools/ReplTerminal.cpp) reads lines with libedit on a terminal
// or plainly from a pipe and hands each one to feed(), so the REPL is tested
// without a terminal.
//
//   * Input continues over several lines while a bracket `( [ {` is open
//     (strings and comments skipped); prompt() says which (`dt> `, `... `).
//     It ends early, as an error, at a string left open at the end of a
//     line, or where a line starts a statement (`let`, `print`, ...) inside
//     an open `(` or `[` (that line starts the next input).
//   * A complete input is compiled as one chunk and run: only the new
//     statements run, definitions (meshes, lets, vars, functions, imports)
//     persist. An input that ends in an expression statement prints its value
//     and type (`[2, 4] : f32[2] @ m{x: shard(0)}`).
//   * An input with errors prints its diagnostics against the input (named
//     `[N]`, the N-th input) and leaves the session as it was; a run-time
//     fault prints `error: ...` and drops only that input.
//   * Commands: `:type EXPR`, `:layout NAME`, `:explain EXPR`, `:mesh`,
//     `:load FILE`, `:reset`, `:help`, `:quit`.
#pragma once

#include "runtime/Session.h"

#include <atomic>
#include <memory>
#include <ostream>
#include <string>

namespace dt {

struct ReplOptions {
  std::string backend = "cpu"; ///< cpu, cuda, mpi, null (runtime/Backend.h)
  /// Set by the terminal's Ctrl-C handler: stops a running input (ExecOptions::interrupt).
  const std::atomic<bool> *interrupt = nullptr;
  /// The CPU JIT's on-disk kernel cache folder (SessionOptions::kernelCache).
  std::string kernelCache;
  /// Deterministic mode (CompileOptions::deterministic).
  bool deterministic = false;
};

class Repl {
public:
  /// Values and prints go to `out`; diagnostics and faults to `err`.
  Repl(ReplOptions opts, std::ostream &out, std::ostream &err);
  ~Repl();
  Repl(const Repl &) = delete;
  Repl &operator=(const Repl &) = delete;

  enum class Status {
    Done, ///< the input was complete and handled
    More, ///< a bracket is open: the next line continues the input
    Quit  ///< `:quit`
  };
  /// Feeds one line of input (without its newline).
  Status feed(const std::string &line);
  /// Handles what is left of an unfinished input (end of input).
  void finish();
  /// Drops an unfinished input (Ctrl-C on the terminal).
  void cancel() { buf_.clear(); }

  /// `dt> `, or `... ` while an input continues.
  std::string prompt() const { return buf_.empty() ? "dt> " : "... "; }
  /// Inputs that failed so far (errors or faults): the exit status of a
  /// piped session.
  int failures() const { return failures_; }

  /// `:load FILE`: compiles and runs the file's statements in the session.
  bool load(const std::string &path);
  /// Starts the backend before any input, so that one that cannot run (a
  /// cuda backend without a driver) fails the start with its cause instead
  /// of every input after; false after reporting.
  bool startBackend();

  Session &session() { return *s_; }

  /// The bracket depth of `text`: `( [ {` open, `) ] }` close; strings and
  /// `#` comments do not count.
  static int openBrackets(const std::string &text);
  struct Brackets {
    int depth = 0;                   ///< as openBrackets
    std::string open;                ///< the brackets still open, innermost last
    bool unterminatedString = false; ///< a string left open at the end of a line
  };
  static Brackets brackets(const std::string &text);

private:
  void input(const std::string &text);
  void command(const std::string &line);
  /// Compiles and runs `text` (named `path`); prints an expression
  /// statement's value when `show`. False after printing why.
  bool evaluate(const std::string &path, const std::string &text, bool show);
  void reportDiags();
  /// Prints the value bound to `name` (a tensor, a constant or a struct) with
  /// its type, after `label`; false when nothing is bound.
  bool showValue(const std::string &name, const std::string &label);
  /// The type of the value bound to `name`, as `:type` prints it ("" if none).
  std::string typeText(const std::string &name) const;
  /// Forgets `name` and its struct leaves (`name.w`).
  void unbind(const std::string &name);
  void reset();
  void typeCommand(const std::string &expr);
  void layoutCommand(const std::string &name);
  void explainCommand(const std::string &expr);
  void meshCommand();
  std::string nextPath() { return "[" + std::to_string(++inputs_) + "]"; }

  ReplOptions opts_;
  std::ostream &out_, &err_;
  std::unique_ptr<Session> s_;
  std::string buf_; ///< the unfinished input
  int inputs_ = 0;
  int failures_ = 0;
};

} // namespace dt
