// This file implements the command line of dtensorc (CommandLine.h): the
// command and flag tables, help texts generated from them, and the parser.
#include "tools/CommandLine.h"

#include <cstdlib>

#include <algorithm>

namespace dtcli {

namespace {

// Every flag of every command. A flag means the same in every command that
// takes it.
const Flag kFlags[] = {
    {"ranks", "N", false},           {"backend", "cpu|mpi|cuda|null", false},
    {"components", nullptr, false},  {"visualize", nullptr, false},
    {"reference", nullptr, false},   {"stats", nullptr, false},
    {"no-jit", nullptr, false},      {"no-fusion", nullptr, false},
    {"no-reuse", nullptr, false},    {"print-after", "STEP", false},
    {"time-passes", nullptr, false}, {"mesh", "NAME=[a,b]", true},
    {"x", "dt|ir", false},           {"fault-timeout", "SECONDS", false},
    {"progress", nullptr, false},    {"ranks-per-process", "K", false},
    {"ranks-per-node", "R", false},  {"deterministic", nullptr, false},
    {"dry-run", nullptr, false},     {"profile", nullptr, false},
};

// The pipeline's flags: its step names (passes/Pipeline.h) and the input language.
const char *const kPassFlags[] = {"print-after", "time-passes", "x"};

std::vector<const char *> withPassFlags(std::vector<const char *> flags) {
  for (const char *f : kPassFlags)
    flags.push_back(f);
  return flags;
}

} // namespace

const std::vector<Command> &commands() {
  static const std::vector<Command> kCommands = {
      {"check",
       "dtensorc check FILE",
       "Parses and type-checks FILE (shapes and placements); prints every error with its fix.",
       withPassFlags({}),
       {}},
      {"run",
       "dtensorc run FILE",
       "Runs FILE distributed: one thread per device of a virtual CPU mesh (N = the number\n"
       "of distinct device ids of the program's meshes; --ranks must equal it). `print` shows the\n"
       "global value. --components also lists, per print, each device's local block of\n"
       "the value as the program holds it (`device 3: [[20, 14]]`); --visualize draws\n"
       "which devices hold which block. --reference runs the single-device reference\n"
       "evaluator of the global IR instead. Elementwise chains run as fused kernels\n"
       "compiled by the LLVM JIT and float matmuls through BLAS: --no-jit runs every\n"
       "op on the reference kernels (debugging), --no-fusion skips the fusion pass\n"
       "(elementwise ops one by one on the reference kernels),\n"
       "--no-reuse turns the memory planner off (every buffer lives to the end).\n"
       "Compiled kernels are kept in ~/.cache/dtensor/kernels (or $XDG_CACHE_HOME;\n"
       "env DTENSOR_KERNEL_CACHE names another folder, `off` none), so a later run\n"
       "compiles only kernels it has not seen.\n"
       "--stats prints, to stderr, kernels compiled, JIT cache hits, kernels loaded\n"
       "from the kernel cache, and per rank the\n"
       "peak memory, kernel launches (in place) and collectives. --backend picks where\n"
       "ranks run: `cpu` (default, threads), `mpi` (one rank per process under mpirun),\n"
       "`cuda` (virtual ranks on one GPU), `null` (runs nothing: zeros). Under mpirun\n"
       "(or srun) `mpi` is the default: each process runs one world rank and rank 0\n"
       "prints; a rank that waits in a collective longer than --fault-timeout (default\n"
       "60 s, env DTENSOR_FAULT_TIMEOUT), or whose peer exits or crashes, ends the job\n"
       "with one line naming the rank, the collective and the source line; peers on\n"
       "other nodes are asked where they wait, and one that does not answer is named\n"
       "with its pid and host. Every process also waits for the others at the end.\n"
       "--ranks-per-process K (with `mpi`): each process hosts K consecutive ranks as\n"
       "threads (shared memory inside a process, MPI between processes), so\n"
       "`mpirun -np 2 dtensorc run f.dt --ranks-per-process 4` runs an 8-rank mesh.\n"
       "--progress draws, when stderr is a terminal, one line for each top-level `for`\n"
       "loop (iteration i/N, elapsed time, iterations per second), erased when it ends;\n"
       "when stderr is not a terminal it writes nothing.\n"
       "--deterministic: bit-identical results on any mesh and layout (every reduction\n"
       "over a sharded dim computed whole in one fixed order; docs/language.md,\n"
       "\"Deterministic mode\").\n"
       "--dry-run (with --backend cuda): plans the GPU run without a GPU: every kernel\n"
       "compiled by NVRTC for sm_90, every launch's geometry and every collective\n"
       "counted, nothing computed (prints zeros); --stats adds the plan's summary.\n"
       "--profile prints, to stderr, rank 0's wall time per instruction (each fused\n"
       "kernel, collective and local op, named with its source line), the device\n"
       "synchronized before and after each: where a step's time goes, not how fast\n"
       "an unprofiled run is (a collective's time includes waiting for the others).",
       withPassFlags({"ranks", "backend", "components", "visualize", "reference", "stats", "no-jit",
                      "no-fusion", "no-reuse", "fault-timeout", "progress", "ranks-per-process",
                      "ranks-per-node", "deterministic", "dry-run", "profile"}),
       {}},
      {"explain",
       "dtensorc explain FILE",
       "Prints, per statement, each collective the program runs (also inside called and\n"
       "gradient functions and loops): its mesh axes, from -> to layouts and the bytes\n"
       "the busiest rank receives; then the totals.\n"
       "--ranks-per-node R (or env DTENSOR_RANKS_PER_NODE; under mpirun, the launcher's\n"
       "ranks per node): world rank w is on node w / R. A collective whose groups hold\n"
       "ranks on two nodes is marked `(crosses nodes)`, a last line totals that traffic,\n"
       "and the planner costs it 8x, keeping traffic inside nodes where it can (run and\n"
       "emit take the flag too, so they run the plan explain shows).\n"
       "--deterministic shows the program of deterministic mode.",
       withPassFlags({"ranks-per-node", "deterministic"}),
       {}},
      {"verify",
       "dtensorc verify FILE",
       "Runs FILE distributed and on the reference evaluator and compares every printed\n"
       "value and every value main returns: the largest absolute/relative difference\n"
       "per output, then PASS or FAIL (exit 1). Tolerance: integers and bool exact; f32\n"
       "|d| <= 1e-5 + 1e-4 |ref|; f64 |d| <= 1e-10 + 1e-10 |ref|. --mesh overrides a\n"
       "mesh's axis sizes (same number of axes; devices 0..n-1; a mesh declared on one\n"
       "line), repeatable; --ranks\n"
       "must equal the number of devices, as for `run`. --backend cuda runs the\n"
       "distributed side as virtual ranks on one GPU (default: cpu threads);\n"
       "--fault-timeout S as for `run`.",
       {"mesh", "ranks", "backend", "fault-timeout"},
       {},
       false,
       "cpu|cuda"},
      {"emit",
       "dtensorc emit STAGE FILE",
       "Prints the output of one step of the compiler. The steps, in order:\n"
       "  parse     the AST, printed back as source\n"
       "  build     the typed global IR (it parses back: `-x ir` reads it as input)\n"
       "  flatten   + `@f.flat`, the straight-line copy of a function `grad` takes\n"
       "  autodiff  every `grad` a call of its generated gradient function\n"
       "  spmd      the per-rank program after SPMD lowering (collectives explicit)\n"
       "  fusion    the program after fusion (`call @fused.N`)\n"
       "  kernels   the program after fusion, then the kernel IR of every kernel\n"
       "  memplan   per block, the values that die at each instruction\n"
       "  codegen   every kernel's LLVM IR (optimized for the host), or its CUDA C++\n"
       "            (for NVRTC) with --backend cuda\n"
       "`-x ir` reads FILE as IR text (the `build` output) and runs the steps after\n"
       "build on it. --print-after=STEP (also for run, check, explain) prints a step's\n"
       "output to stderr; --time-passes times every step, the front end included.",
       withPassFlags({"backend", "no-fusion", "ranks-per-node", "deterministic"}),
       {"parse", "build", "flatten", "autodiff", "spmd", "fusion", "kernels", "memplan",
        "codegen"}},
      {"repl",
       "dtensorc repl [FILE]",
       "Starts an interactive session (also `dtensorc` alone on a terminal), after running\n"
       "FILE's statements when given. Definitions persist between inputs and each input\n"
       "runs only its own statements; an expression prints its value and type. An input\n"
       "continues while a bracket is open. Commands: `:type EXPR`, `:layout NAME`,\n"
       "`:explain EXPR`, `:mesh`, `:load FILE`, `:reset`, `:help`, `:quit`. On a terminal\n"
       "lines are edited with libedit and kept in a history file\n"
       "($XDG_STATE_HOME/dtensor/history); from a pipe the lines run one by one without\n"
       "prompts, and the exit status is 1 if any input failed. --deterministic as for run.",
       {"backend", "deterministic"},
       {},
       true,
       "cpu|cuda|null"}, // the REPL runs every rank in this process
  };
  return kCommands;
}

const Flag *findFlag(const std::string &name) {
  for (const Flag &f : kFlags)
    if (name == f.name)
      return &f;
  return nullptr;
}

const Command *findCommand(const std::string &name) {
  for (const Command &c : commands())
    if (name == c.name)
      return &c;
  return nullptr;
}

namespace {

std::string join(const std::vector<const char *> &xs, const char *sep) {
  std::string out;
  for (const char *x : xs)
    out += (out.empty() ? "" : sep) + std::string(x);
  return out;
}

std::string flagSpelling(const Flag &f) {
  std::string s = (f.name[1] ? "--" : "-") + std::string(f.name);
  if (f.value)
    s += std::string(" ") + f.value;
  return s;
}

/// `dtensorc run FILE [--ranks N] [--stats] ...`, wrapped at 90 columns.
std::string synopsis(const Command &c) {
  std::string out = c.usage;
  if (!c.stages.empty()) {
    std::string stages = join(c.stages, "|");
    out.replace(out.find("STAGE"), 5, stages);
  }
  size_t lineStart = 0;
  for (const char *name : c.flags) {
    Flag f = *findFlag(name);
    if (c.backends && std::string(name) == "backend")
      f.value = c.backends;
    std::string item = "[" + flagSpelling(f) + "]" + (f.repeatable ? "..." : "");
    if (out.size() - lineStart + 1 + item.size() > 90) {
      out += "\n     ";
      lineStart = out.size() - 5;
    }
    out += " " + item;
  }
  return out;
}

std::string indent(const std::string &text, const std::string &pad) {
  std::string out = pad;
  for (char ch : text) {
    out += ch;
    if (ch == '\n')
      out += pad;
  }
  return out;
}

std::string globalUsage() {
  std::string out = "usage: dtensorc <command> [options] FILE\n\ncommands:\n";
  for (const Command &c : commands())
    out += "  " + synopsis(c) + "\n" + indent(c.help, "      ") + "\n";
  out += "\noptions of every command:\n"
         "  -h, --help     describe the command (or, without one, all commands)\n"
         "  --version      print the version of dtensorc\n"
         "\nFILE `-` reads the program from standard input (named `<stdin>` in errors).\n"
         "`dtensorc <command> --help` describes one command.\n";
  return out;
}

std::string commandHelp(const Command &c) {
  return "usage: " + synopsis(c) + "\n\n" + c.help + "\n";
}

/// A usage error about command `c`: the reason, then its synopsis.
ParseResult usageError(const std::string &why, const Command *c) {
  ParseResult r;
  r.outcome = Outcome::Exit;
  r.code = 2;
  r.err = "dtensorc: " + why + "\n";
  if (c)
    r.err += "usage: " + synopsis(*c) + "\n`dtensorc " + c->name + " --help` describes it.\n";
  else
    r.err += globalUsage();
  return r;
}

std::string flagsOf(const Command &c) {
  if (c.flags.empty())
    return "`" + std::string(c.name) + "` takes no flags";
  std::vector<std::string> names;
  for (const char *n : c.flags)
    names.push_back("`" + std::string(n[1] ? "--" : "-") + n + "`");
  std::string out = "the flags of `" + std::string(c.name) + "` are ";
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

struct RawFlag {
  std::string name, value, spelled;
  bool hasValue = false;
};

} // namespace

std::string closestMatch(const std::string &word, const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestD = std::max<size_t>(1, std::min<size_t>(3, word.size() / 3)) + 1;
  for (const std::string &c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

ParseResult parseCommandLine(int argc, const char *const *argv, Args &a,
                             const std::string &versionText) {
  std::vector<std::string> pos;
  std::vector<RawFlag> raw;
  std::string badDash; // the first `-x` that is no flag at all
  bool onlyPositional = false;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (onlyPositional || s.size() < 2 || s[0] != '-') {
      pos.push_back(s);
    } else if (s == "--") {
      onlyPositional = true;
    } else if (s == "-h" || s == "--help") {
      a.help = true;
    } else if (s == "--version") {
      a.version = true;
    } else if (s == "-x") { // the input language, as in cc
      RawFlag f;
      f.name = "x";
      f.spelled = "-x";
      if (i + 1 < argc) {
        f.hasValue = true;
        f.value = argv[++i];
      }
      raw.push_back(f);
    } else if (s.rfind("--", 0) == 0) {
      RawFlag f;
      size_t eq = s.find('=');
      f.name = s.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      f.spelled = "--" + f.name;
      if (eq != std::string::npos) {
        f.hasValue = true;
        f.value = s.substr(eq + 1);
      } else if (const Flag *known = findFlag(f.name); known && known->value && i + 1 < argc) {
        f.hasValue = true;
        f.value = argv[++i];
      }
      raw.push_back(f);
    } else if (badDash.empty()) {
      badDash = s;
    }
  }

  // `--version` after a command (`dtensorc run --version`) prints it too; a
  // file or a flag beside it is a mistake, not something to ignore.
  if (a.version &&
      (!raw.empty() || !badDash.empty() || pos.size() > 2 ||
       (!pos.empty() && !findCommand(pos[0])) || (pos.size() == 2 && pos[0] != "emit")))
    return usageError("--version takes nothing else (it prints the version)", nullptr);
  if (a.version) {
    ParseResult r;
    r.outcome = Outcome::Exit;
    r.out = versionText + "\n";
    return r;
  }
  const Command *cmd = pos.empty() ? nullptr : findCommand(pos[0]);
  if (a.help && (pos.empty() || cmd)) {
    ParseResult r;
    r.outcome = Outcome::Exit;
    r.out = cmd ? commandHelp(*cmd) : globalUsage();
    return r;
  }
  if (pos.empty())
    return usageError("no command given", nullptr);
  if (pos[0] == "help") { // `dtensorc help [command]`
    ParseResult r;
    r.outcome = Outcome::Exit;
    if (pos.size() == 1) {
      r.out = globalUsage();
      return r;
    }
    if (const Command *c = findCommand(pos[1])) {
      r.out = commandHelp(*c);
      return r;
    }
    cmd = nullptr;
    pos.erase(pos.begin());
  }
  if (!cmd) {
    std::vector<std::string> names;
    for (const Command &c : commands())
      names.push_back(c.name);
    std::string why = "unknown command `" + pos[0] + "`";
    std::string near = closestMatch(pos[0], names);
    if (!near.empty())
      why += "; did you mean `" + near + "`?";
    return usageError(why, nullptr);
  }
  a.cmd = cmd->name;

  if (!badDash.empty())
    return usageError("unknown flag `" + badDash + "`; " + flagsOf(*cmd), cmd);
  std::vector<std::string> own;
  for (const char *n : cmd->flags)
    own.push_back(n);
  for (const RawFlag &f : raw) {
    const Flag *known = findFlag(f.name);
    bool takes = std::find(own.begin(), own.end(), f.name) != own.end();
    if (!known || !takes) {
      std::string why = known ? "`" + a.cmd + "` does not take `" + f.spelled + "`"
                              : "unknown flag `" + f.spelled + "`";
      std::string near = closestMatch(f.name, own);
      if (!near.empty() && near != f.name)
        why += std::string("; did you mean `") + (near.size() > 1 ? "--" : "-") + near + "`?";
      else
        why += "; " + flagsOf(*cmd);
      return usageError(why, cmd);
    }
    if (!known->value && f.hasValue)
      return usageError("`" + f.spelled + "` takes no value", cmd);
    if (known->value && !f.hasValue)
      return usageError("`" + f.spelled + "` needs a value (" + known->value + ")", cmd);
    if (a.flags.count(f.name) && !known->repeatable)
      return usageError("`" + f.spelled + "` is given twice", cmd);
    a.flags[f.name] = f.value;
    if (f.name == "mesh")
      a.meshes.push_back(f.value);
  }

  size_t next = 1;
  if (!cmd->stages.empty()) {
    std::string stages = join(cmd->stages, ", ");
    if (pos.size() < 2)
      return usageError("`" + a.cmd + "` needs a step: " + stages, cmd);
    a.sub = pos[1];
    if (std::find(cmd->stages.begin(), cmd->stages.end(), a.sub) == cmd->stages.end())
      return usageError("unknown step `" + a.sub + "` (the steps: " + stages + ")", cmd);
    next = 2;
  }
  if (pos.size() <= next) {
    if (cmd->fileOptional)
      return ParseResult{};
    return usageError("`" + a.cmd + "` needs a FILE", cmd);
  }
  a.file = pos[next];
  if (pos.size() > next + 1)
    return usageError("unexpected argument `" + pos[next + 1] + "`", cmd);
  return ParseResult{};
}

std::string kernelCacheDir() {
  if (const char *v = std::getenv("DTENSOR_KERNEL_CACHE"))
    return std::string(v) == "off" ? "" : v;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return std::string(x) + "/dtensor/kernels";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/dtensor/kernels";
  return "";
}

} // namespace dtcli
