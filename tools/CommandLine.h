// This file implements the command line of dtensorc: the table of commands and
// of the flags each one takes, and the parser that holds every argument to
// that table. An unknown flag, a flag the command does not take, a value
// given to a switch or a missing value is a usage error (exit 2) that names
// the command's flags and, for a near miss, the flag that was meant
// (`--visualise` -> `--visualize`). `-h`/`--help` and `--version` work with
// every command and before any.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtcli {

/// One flag: `--name` (a switch) or `--name VALUE` / `--name=VALUE`.
struct Flag {
  const char *name;  ///< without the dashes
  const char *value; ///< the value's placeholder (`N`), nullptr for a switch
  bool repeatable;   ///< may be given more than once (every value is kept)
};

struct Command {
  const char *name;
  const char *usage;                ///< the synopsis, `dtensorc run FILE [--ranks N] ...`
  const char *help;                 ///< what it does and what each flag means
  std::vector<const char *> flags;  ///< names of the flags it takes
  std::vector<const char *> stages; ///< for `emit`: the first argument's values
  bool fileOptional = false;        ///< FILE may be left out (`repl`)
  const char *backends = nullptr;   ///< the `--backend` values it takes, when not all
};

const std::vector<Command> &commands();
const Flag *findFlag(const std::string &name);
const Command *findCommand(const std::string &name);

/// The parsed command line.
struct Args {
  std::string cmd, sub, file;
  std::map<std::string, std::string> flags; ///< the last value of each flag given
  std::vector<std::string> meshes;          ///< every `--mesh` value, in order
  bool help = false, version = false;
};

/// What main should do after parsing.
enum class Outcome {
  Proceed, ///< run the command in `args`
  Exit     ///< print `out` to stdout and `err` to stderr, exit with `code`
};

struct ParseResult {
  Outcome outcome = Outcome::Proceed;
  int code = 0;
  std::string out, err;
};

/// Parses argv against the table. Help and version win over any other
/// problem of the line; a usage error has code 2 and names the fix.
ParseResult parseCommandLine(int argc, const char *const *argv, Args &args,
                             const std::string &versionText);

/// The CPU JIT's on-disk kernel cache folder for `dtensorc` and the REPL:
/// DTENSOR_KERNEL_CACHE when set (`off` or empty: no cache), else
/// $XDG_CACHE_HOME/dtensor/kernels, else ~/.cache/dtensor/kernels ("" when
/// there is no home).
std::string kernelCacheDir();

/// The closest of `candidates` to `word` within a small edit distance, or "".
std::string closestMatch(const std::string &word, const std::vector<std::string> &candidates);

} // namespace dtcli
