// Tests of dtensorc's command line, run as a child process: every flag a
// command takes is accepted by it and refused (exit 2, naming the command's
// flags) by every command that does not take it; unknown flags, near misses,
// values given to switches, missing values, repeated flags, unknown commands
// and stages are usage errors; -h, --help and --version work with every
// command. The table below is the documented interface, kept apart from the
// driver's own table so that a change to one shows up here.
#include "tests/Subprocess.h"

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

using dtlang::ProcResult;

namespace {

const std::string kMissing = "/nonexistent/dir/prog.dt"; // compiling it fails: exit 1

ProcResult dtc(std::vector<std::string> args) {
  args.insert(args.begin(), DT_DTENSORC);
  return dtlang::runProcess(args, 60);
}

// Every flag with a valid value (empty: a switch).
const std::map<std::string, std::string> kFlagValue = {
    {"ranks", "1"},        {"backend", "cpu"},
    {"components", ""},    {"visualize", ""},
    {"reference", ""},     {"stats", ""},
    {"no-jit", ""},        {"no-fusion", ""},
    {"no-reuse", ""},      {"print-after", "build"},
    {"time-passes", ""},   {"mesh", "m=[1]"},
    {"x", "dt"},           {"ranks-per-node", "4"},
    {"deterministic", ""},
};

struct Cmd {
  std::vector<std::string> prefix; ///< the command (and stage)
  std::vector<std::string> flags;  ///< the flags it takes
};

const std::vector<Cmd> kCommands = {
    {{"check"}, {"print-after", "time-passes", "x"}},
    {{"run"},
     {"ranks", "backend", "components", "visualize", "reference", "stats", "no-jit", "no-fusion",
      "no-reuse", "print-after", "time-passes", "x", "ranks-per-node", "deterministic"}},
    {{"explain"}, {"print-after", "time-passes", "x", "ranks-per-node", "deterministic"}},
    {{"verify"}, {"mesh", "ranks", "backend", "fault-timeout"}},
    {{"emit", "build"},
     {"backend", "no-fusion", "print-after", "time-passes", "x", "ranks-per-node",
      "deterministic"}},
};

std::vector<std::string> with(const Cmd &c, std::vector<std::string> more) {
  std::vector<std::string> args = c.prefix;
  args.push_back(kMissing);
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string name(const Cmd &c) { return c.prefix[0]; }

/// How a flag is spelled: `--name`, or `-x` for the one short flag.
std::string dashed(const std::string &flag) { return (flag.size() > 1 ? "--" : "-") + flag; }

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("cli: every command accepts its flags and refuses the others") {
  for (const Cmd &c : kCommands) {
    for (const auto &[flag, value] : kFlagValue) {
      CAPTURE(name(c));
      CAPTURE(flag);
      std::vector<std::string> extra = {dashed(flag)};
      if (!value.empty())
        extra.push_back(value);
      ProcResult r = dtc(with(c, extra));
      bool takes = std::find(c.flags.begin(), c.flags.end(), flag) != c.flags.end();
      if (takes) {
        CHECK(r.exitCode == 1); // past the command line, the file is missing
        CHECK(contains(r.err, "prog.dt"));
      } else {
        CHECK(r.exitCode == 2);
        CHECK(contains(r.err, "`" + name(c) + "` does not take `" + dashed(flag) + "`"));
        CHECK(contains(r.err, "usage: dtensorc " + name(c)));
        CHECK(r.out.empty());
      }
    }
  }
}

TEST_CASE("cli: an unknown flag is a usage error with the flag that was meant") {
  ProcResult r = dtc({"run", kMissing, "--visualise"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "unknown flag `--visualise`; did you mean `--visualize`?"));
  CHECK(contains(r.err, "usage: dtensorc run FILE"));
  CHECK(r.out.empty());

  // Every flag of every command, misspelt by one letter, is matched back.
  for (const Cmd &c : kCommands)
    for (const std::string &flag : c.flags) {
      if (flag.size() < 3)
        continue; // `-x`: one letter has no near miss
      std::string typo = flag.substr(0, flag.size() - 1) + "q";
      CAPTURE(typo);
      ProcResult t = dtc(with(c, {"--" + typo}));
      CHECK(t.exitCode == 2);
      CHECK(contains(t.err, "did you mean `" + dashed(flag) + "`?"));
    }

  // Nothing near: the message lists the command's flags instead.
  r = dtc({"run", kMissing, "--frobnicate-everything"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "the flags of `run` are `--ranks`"));
  r = dtc({"check", kMissing, "--frobnicate-everything"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "the flags of `check` are `--print-after`, `--time-passes`, `-x`"));
  r = dtc({"run", kMissing, "-v"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "unknown flag `-v`"));
}

TEST_CASE("cli: flag values") {
  auto usage = [](std::vector<std::string> args, const std::string &msg) {
    CAPTURE(msg);
    ProcResult r = dtc(args);
    CHECK(r.exitCode == 2);
    CHECK(contains(r.err, msg));
  };
  usage({"run", kMissing, "--stats=yes"}, "`--stats` takes no value");
  usage({"run", kMissing, "--ranks"}, "`--ranks` needs a value (N)");
  usage({"verify", kMissing, "--mesh"}, "`--mesh` needs a value");
  usage({"run", kMissing, "--ranks", "2", "--ranks=4"}, "`--ranks` is given twice");
  usage({"run", kMissing, "--ranks", "0"}, "--ranks needs a positive number");
  usage({"run", kMissing, "--dry-run"}, "--dry-run plans a GPU run: it needs --backend cuda");
  usage({"run", kMissing, "--dry-run", "--backend", "null"}, "it needs --backend cuda");
  usage({"verify", kMissing, "--dry-run"}, "`verify` does not take `--dry-run`");
  usage({"verify", kMissing, "--backend", "mpi"}, "`verify` runs the distributed side on `cpu`");
  usage({"run", kMissing, "--ranks", "2x"}, "--ranks needs a positive number");
  usage({"run", kMissing, "--backend", "tpu"}, "unknown backend `tpu`");
  usage({"run", kMissing, "--ranks", "99999999999999"},
        "is more ranks than it can have (at most 1048576)");
  usage({"run", kMissing, "--ranks-per-node", "99999999999999999999"},
        "--ranks-per-node 99999999999999999999 is more ranks than it can have");
  // --reference runs the global program on the host: flags of the
  // distributed run are refused, never silently ignored.
  for (const char *f : {"--no-jit", "--no-fusion", "--no-reuse"})
    usage({"run", kMissing, "--reference", f}, "configures the distributed run");
  usage({"run", kMissing, "--reference", "--backend", "null"}, "--backend configures");
  usage({"run", kMissing, "--reference", "--ranks", "5"}, "--ranks configures");
  usage({"run", kMissing, "--reference", "--print-after", "spmd"},
        "--reference runs the global program, the steps up to `autodiff`");
  usage({"emit", "parse", kMissing, "--print-after", "codegen"},
        "`emit parse` runs the steps up to `parse`, not `codegen`");
  // --mesh repeats; both the `=` and the separate spelling take a value.
  CHECK(dtc({"verify", kMissing, "--mesh", "m=[1]", "--mesh=n=[2]"}).exitCode == 1);
  CHECK(dtc({"run", kMissing, "--ranks=1"}).exitCode == 1);
}

TEST_CASE("cli: commands, stages and arguments") {
  auto usage = [](std::vector<std::string> args, const std::string &msg) {
    CAPTURE(msg);
    ProcResult r = dtc(args);
    CHECK(r.exitCode == 2);
    CHECK(contains(r.err, msg));
  };
  usage({}, "no command given");
  usage({"chek", kMissing}, "unknown command `chek`; did you mean `check`?");
  usage({"frobnicate", kMissing}, "unknown command `frobnicate`");
  usage({"run"}, "`run` needs a FILE");
  usage({"emit"}, "`emit` needs a step: parse, build, flatten, autodiff, spmd, fusion, kernels, "
                  "memplan, codegen");
  usage({"emit", "irr", kMissing}, "unknown step `irr`");
  usage({"check", kMissing, "extra.dt"}, "unexpected argument `extra.dt`");
  // After `--` everything is an argument.
  CHECK(dtc({"check", "--", kMissing}).exitCode == 1);
}

TEST_CASE("cli: -h, --help and --version work with every command") {
  for (std::vector<std::string> prefix : {std::vector<std::string>{},
                                          {"check"},
                                          {"run"},
                                          {"explain"},
                                          {"verify"},
                                          {"emit"},
                                          {"emit", "build"}}) {
    for (std::string flag : {"-h", "--help"}) {
      std::vector<std::string> args = prefix;
      args.push_back(flag);
      CAPTURE(args.size());
      CAPTURE(flag);
      ProcResult r = dtc(args);
      CHECK(r.exitCode == 0);
      CHECK(r.out.rfind("usage: dtensorc", 0) == 0);
      CHECK(r.err.empty());
      if (!prefix.empty())
        CHECK(contains(r.out, "usage: dtensorc " + prefix[0]));
    }
    std::vector<std::string> args = prefix;
    args.push_back("--version");
    ProcResult v = dtc(args);
    CHECK(v.exitCode == 0);
    CHECK(v.out.rfind("dtensorc ", 0) == 0);
    CHECK(contains(v.out, "LLVM"));
  }
  // --version beside a file or a flag is a usage error, not ignored.
  CHECK(dtc({"--version", "extra"}).exitCode == 2);
  CHECK(dtc({"run", "f.dt", "--version"}).exitCode == 2);
  CHECK(dtc({"--version", "--ranks", "2"}).exitCode == 2);
  // Help wins over a bad line, and `help` is a command too.
  ProcResult r = dtc({"run", kMissing, "--visualise", "--help"});
  CHECK(r.exitCode == 0);
  CHECK(contains(r.out, "--visualize"));
  r = dtc({"help", "verify"});
  CHECK(r.exitCode == 0);
  CHECK(contains(r.out, "usage: dtensorc verify FILE [--mesh NAME=[a,b]]..."));
  r = dtc({"help"});
  CHECK(r.exitCode == 0);
  for (const Cmd &c : kCommands)
    CHECK(contains(r.out, "  dtensorc " + name(c)));
}

TEST_CASE("cli: a second run loads its kernels from the disk cache") {
  std::string dir = "/tmp/dt-cli-kcache-" + std::to_string(::getpid());
  std::string prog = dir + ".dt";
  {
    std::ofstream f(prog);
    f << "mesh m = [x = 2]\nlet a : f32[8, 4] @ m[x, _] = randn(seed=1)\n"
         "print(relayout(sum(exp(a * 0.5) - a, dims=[0]), m[_]))\n";
  }
  auto run = [&](const std::string &cache) {
    return dtlang::runProcess(
        {"/bin/sh", "-c",
         "DTENSOR_KERNEL_CACHE='" + cache + "' '" + DT_DTENSORC + "' run --stats '" + prog + "'"},
        60);
  };
  ProcResult a = run(dir), b = run(dir), off = run("off");
  CHECK(a.exitCode == 0);
  CHECK(b.exitCode == 0);
  CHECK(a.out == b.out);
  CHECK(off.out == a.out);
  CHECK(contains(a.err, "0 loaded from the kernel cache"));
  CHECK_FALSE(contains(a.err, " 0 compiled"));
  CHECK(contains(b.err, " 0 compiled"));
  CHECK_FALSE(contains(b.err, " 0 loaded from the kernel cache"));
  CHECK(contains(off.err, "0 loaded from the kernel cache"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(prog);
}

TEST_CASE("cli: explain --deterministic: tree all-reduce on leaf edges, all_to_all for a "
          "reduction, gathers otherwise") {
  // k = 256 on 2 ranks: shards of 128 = 2 leaves of 64, a subtree: the
  // product runs on the shards. k = 200: 100 per rank, off the leaf edges:
  // gathered. The sum over the sharded rows moves the shard to the columns.
  std::string path = "/tmp/dt-cli-det-explain-" + std::to_string(::getpid()) + ".dt";
  {
    std::ofstream f(path);
    f << "mesh m = [x = 2]\n"
         "let a : f32[8, 256] @ m[_, x] = randn(seed=1)\n"
         "let b : f32[256, 4] @ m[x, _] = randn(seed=2)\n"
         "print(relayout(a @ b, m[_, _]))\n"
         "let c : f32[8, 200] @ m[_, x] = randn(seed=3)\n"
         "let d : f32[200, 4] @ m[x, _] = randn(seed=4)\n"
         "print(relayout(c @ d, m[_, _]))\n"
         "let e : f32[64, 16] @ m[x, _] = randn(seed=5)\n"
         "print(relayout(sum(e, dim=0), m[_]))\n";
  }
  ProcResult det = dtc({"explain", path, "--deterministic"});
  ProcResult def = dtc({"explain", path});
  std::filesystem::remove(path);
  CHECK(det.exitCode == 0);
  auto line = [&](const std::string &text, int n) {
    std::string from = "line " + std::to_string(n) + ":";
    size_t at = text.find(from);
    if (at == std::string::npos)
      return std::string();
    size_t end = text.find("\nline ", at + 1);
    return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
  };
  CHECK(contains(line(det.out, 4), "added in the fixed tree order"));
  CHECK_FALSE(contains(line(det.out, 4), "all_gather"));
  CHECK(contains(line(det.out, 7), "all_gather"));
  CHECK_FALSE(contains(line(det.out, 7), "tree order"));
  CHECK(contains(line(det.out, 9), "all_to_all"));
  CHECK_FALSE(contains(def.out, "tree order"));
}

TEST_CASE("cli: run --deterministic prints the same text on 1, 3 and 4 ranks") {
  // Printed floats are round-trip exact, so equal text is equal bits. 37 and
  // 7 split unevenly over 3 and 4 ranks; the sum, the matmul and the mean
  // reduce dims sharded on `x`.
  auto program = [](int n) {
    return "mesh m = [x = " + std::to_string(n) +
           "]\n"
           "let a : f32[7, 37] @ m[_, x] = randn(seed=1)\n"
           "let b : f32[37, 5] @ m[x, _] = randn(seed=2)\n"
           "print(relayout(sum(exp(a), dim=1), m[_]))\n"
           "print(relayout(a @ b, m[_, _]))\n"
           "let c : f64[37, 7] @ m[x, _] = randn(seed=3)\n"
           "print(relayout(mean(c * c, dim=0), m[_]))\n";
  };
  auto run = [&](int n, bool det) {
    std::string path = "/tmp/dt-cli-det-" + std::to_string(::getpid()) + ".dt";
    {
      std::ofstream f(path);
      f << program(n);
    }
    std::vector<std::string> args = {"run", path};
    if (det)
      args.push_back("--deterministic");
    ProcResult r = dtc(args);
    std::filesystem::remove(path);
    CHECK(r.exitCode == 0);
    return r.out;
  };
  std::string one = run(1, true);
  CHECK(contains(one, "["));
  CHECK(run(3, true) == one);
  CHECK(run(4, true) == one);
}

TEST_CASE("cli: run --profile times each instruction of rank 0, the first run apart") {
  std::string prog = "/tmp/dt-cli-profile-" + std::to_string(::getpid()) + ".dt";
  {
    std::ofstream f(prog);
    f << "mesh m = [x = 2]\nvar a : f32[64, 32] @ m[x, _] = randn(seed=1)\n"
         "for i in 0..4 {\n  a = tanh(a) * 0.5 + a\n}\n"
         "print(relayout(sum(a, dims=[0]), m[_]))\nimport nn\nprint(nn.softmax(a)[0, 0])\n";
  }
  ProcResult plain = dtc({"run", prog}), p = dtc({"run", "--profile", prog});
  CHECK(p.exitCode == 0);
  CHECK(p.out == plain.out); // the values do not change
  CHECK_FALSE(contains(plain.err, "profile:"));
  CHECK(contains(p.err, "instruction (rank 0; runs after the first)"));
  // The loop's kernel ran 4 times: 3 after the first, named with its line.
  bool loopKernel = false;
  std::istringstream lines(p.err);
  for (std::string l; std::getline(lines, l);)
    loopKernel |= contains(l, " 3 ") && contains(l, "fused.") && contains(l, " line 4");
  CHECK(loopKernel);
  CHECK(contains(p.err, "all_reduce line 6"));
  CHECK(contains(p.err, "nn.dt:")); // a module's lines name their file
  CHECK(contains(p.err, "total"));
  std::filesystem::remove(prog);
}

TEST_CASE("cli: --backend null and --dry-run write no files: their zeros never replace data") {
  namespace fs = std::filesystem;
  std::string dir = "/tmp/dt-cli-null-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string prog = dir + "/p.dt";
  {
    std::ofstream f(prog);
    f << "mesh m = [x = 2]\nlet a : f32[4] @ m[x] = [1, 2, 3, 4]\n"
         "save_checkpoint(\""
      << dir << "/ck\", \"w\", a)\nsave(\"" << dir << "/a.npy\", a)\n"
      << "let b : f32[4] @ m[x] = load_checkpoint(\"" << dir << "/ck\", \"w\")\nprint(b)\n";
  }
  ProcResult real = dtc({"run", prog});
  REQUIRE(real.exitCode == 0);
  CHECK(contains(real.out, "[1, 2, 3, 4]"));
  auto bytesOf = [](const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  std::map<std::string, std::string> before;
  for (auto &e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      before[e.path().string()] = bytesOf(e.path());
  for (std::vector<std::string> mode :
       {std::vector<std::string>{"--backend", "null"}, {"--backend", "cuda", "--dry-run"}}) {
    std::vector<std::string> args = {"run", prog};
    args.insert(args.end(), mode.begin(), mode.end());
    ProcResult r = dtc(args);
    INFO(mode[1] << ": " << r.err);
    CHECK(r.exitCode == 0);
    CHECK(contains(r.err, "2 `save`/`save_checkpoint` wrote no file"));
    std::map<std::string, std::string> after;
    for (auto &e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file())
        after[e.path().string()] = bytesOf(e.path());
    CHECK(after == before);
  }
  CHECK(dtc({"run", prog}).out == real.out); // the checkpoint still loads
  fs::remove_all(dir);
}

TEST_CASE("cli: output that cannot be written (a full disk) fails the command") {
  for (std::vector<std::string> args : {std::vector<std::string>{"--version"},
                                        {"emit", "build", DT_SOURCE_DIR "/examples/mlp_tp.dt"},
                                        {"explain", DT_SOURCE_DIR "/examples/mlp_tp.dt"}}) {
    std::string cmd = "'" + std::string(DT_DTENSORC) + "'";
    for (auto &a : args)
      cmd += " '" + a + "'";
    ProcResult r = dtlang::runProcess({"/bin/sh", "-c", cmd + " > /dev/full"}, 60);
    INFO(cmd);
    CHECK(r.exitCode == 1);
    CHECK(contains(r.err, "cannot write the output (stdout)"));
  }
}

TEST_CASE("cli: a bad environment value is named as the environment's, not as a flag") {
  auto withEnv = [](const std::string &env, const std::string &args) {
    return dtlang::runProcess(
        {"/bin/sh", "-c", env + " '" + std::string(DT_DTENSORC) + "' " + args}, 60);
  };
  ProcResult t = withEnv("DTENSOR_FAULT_TIMEOUT=abc", "run " + kMissing);
  CHECK(t.exitCode == 2);
  CHECK(contains(t.err, "DTENSOR_FAULT_TIMEOUT (environment) needs a number of seconds"));
  ProcResult f = withEnv("DTENSOR_FAULT_TIMEOUT=abc", "run --fault-timeout x " + kMissing);
  CHECK(contains(f.err, "--fault-timeout needs a number of seconds"));
  ProcResult n = withEnv("DTENSOR_RANKS_PER_NODE=0", "explain " + kMissing);
  CHECK(n.exitCode == 2);
  CHECK(contains(n.err, "DTENSOR_RANKS_PER_NODE (environment) needs a positive number"));
}

TEST_CASE("cli: IR text errors are located diagnostics; a .ir file read as a program says so") {
  std::string base = "/tmp/dt-cli-ir-" + std::to_string(::getpid());
  std::ofstream(base + ".dt") << "mesh m = [x = 2]\nlet a : f32[4] @ m[x] = ones()\n";
  std::ofstream(base + ".ir") << "mesh m = [x = 2]\nfunc @main() {\n  return\n}\n";
  std::ofstream(base + "-bin.ir") << std::string("\x01\x02\x03", 3);
  ProcResult dt = dtc({"check", "-x", "ir", base + ".dt"});
  CHECK(dt.exitCode == 1);
  CHECK(contains(dt.err, base + ".dt:2:1: error: "));
  CHECK(contains(dt.err, "  2 | let a : f32[4] @ m[x] = ones()\n    | ^"));
  CHECK(contains(dt.err, "hint: `-x ir` reads IR text"));
  ProcResult ir = dtc({"check", base + ".ir"});
  CHECK(ir.exitCode == 1);
  CHECK(contains(ir.err, "is read as a program; IR text needs `-x ir`"));
  ProcResult bin = dtc({"check", "-x", "ir", base + "-bin.ir"});
  CHECK(bin.exitCode == 1);
  CHECK(contains(bin.err, "got byte 0x01"));
  for (const char *suffix : {".dt", ".ir", "-bin.ir"})
    std::remove((base + suffix).c_str());
}

TEST_CASE("cli: verify --mesh: a mesh given twice or one the program lacks is a usage error") {
  std::string prog = "/tmp/dt-cli-mesh-" + std::to_string(::getpid()) + ".dt";
  std::ofstream(prog) << "mesh m = [x = 2]\nlet a : f32[4] @ m[x] = ones()\n"
                         "print(relayout(sum(a), m[]))\n";
  ProcResult twice = dtc({"verify", "--mesh", "m=[2]", "--mesh", "m=[1]", prog});
  CHECK(twice.exitCode == 2);
  CHECK(contains(twice.err, "mesh `m` is given twice"));
  ProcResult axes = dtc({"verify", "--mesh", "m=[2,2]", prog});
  CHECK(axes.exitCode == 2);
  CHECK(contains(axes.err, "--mesh: mesh `m` has 1 axis, the override gives 2 sizes"));
  ProcResult none = dtc({"verify", "--mesh", "q=[2]", prog});
  CHECK(none.exitCode == 2);
  CHECK(contains(none.err, "declares no mesh `q`"));
  ProcResult ok = dtc({"verify", "--mesh", "m=[3]", prog});
  CHECK(ok.exitCode == 0);
  std::remove(prog.c_str());
}

TEST_CASE("cli: a module named `fused`, or a module function named `flat`, is the program's own") {
  // Generated names are `fused.N` (digits) and `f.flat` of a function `f`:
  // a module `fused` with `fn k` (`@fused.k`) was run as a fused kernel
  // (internal error), and a module function `flat` (`@util.flat`) was
  // deleted with autodiff's flat copies (internal error: unknown callee).
  namespace fs = std::filesystem;
  std::string dir = "/tmp/dt-cli-names-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/fused.dt") << "fn k(a: f32[2, 2] @ *) -> f32[2, 2] @ * { return a @ a }\n";
  std::ofstream(dir + "/util.dt") << "fn flat(a: f32[4] @ *) -> f32[4] @ * { return a * a }\n";
  std::ofstream(dir + "/main.dt")
      << "import fused\nimport util\nlet a : f32[2, 2] = [[1, 2], [3, 4]]\nprint(fused.k(a))\n"
         "let b : f32[4] = [3, 1, 3, 2]\nprint(util.flat(b))\n"
         "fn loss(x: f32[4]) -> f32[] { return sum(util.flat(x)) }\nprint(grad(loss)(b))\n";
  ProcResult r = dtc({"run", dir + "/main.dt"});
  CHECK(r.exitCode == 0);
  CHECK(r.out == "[[7, 10], [15, 22]]\n[9, 1, 9, 4]\n[6, 2, 6, 4]\n");
  CHECK(r.err == "");
  fs::remove_all(dir);
}

TEST_CASE("cli: IR input with a malformed layout or an oversized shape is an error, not a crash") {
  std::string dir = "/tmp/dt-cli-badir-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  // The verifier reports the shard of a dim the scalar lacks, and no longer
  // infers the types of the ops reading it (that dereferenced past it).
  std::ofstream(dir + "/shard.ir") << "mesh m = [x = 2]\n\nfunc @main() {\n"
                                      "  %0 = random normal 4 : f32[] @ m{x: shard(0)}\n"
                                      "  %1 = neg %0 : f32[] @ m{x: shard(0)}\n  return\n}\n";
  // The front end's element limit holds for IR too (10^18 elements hung in
  // the fill; a product past 2^63 crashed).
  std::ofstream(dir + "/huge.ir") << "func @main() {\n"
                                     "  %0 = fill 1 : f32[1000000000, 1000000000]\n"
                                     "  %1 = reduce_sum %0 dims [0, 1] : f32[]\n"
                                     "  print %1 \"x\"\n  return\n}\n";
  ProcResult s = dtc({"run", "-x", "ir", dir + "/shard.ir"});
  CHECK(s.exitCode == 1);
  CHECK(contains(s.err, "`shard(0)` names a dim of a tensor with 0 dims"));
  ProcResult h = dtc({"run", "-x", "ir", dir + "/huge.ir"});
  CHECK(h.exitCode == 1);
  CHECK(contains(h.err, "1000000000000000000 elements; a tensor holds at most"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: FILE `-` reads the program from standard input") {
  std::string dir =
      std::filesystem::temp_directory_path() / ("dt_cli_stdin_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/p.dt")
      << "mesh m = [x = 2]\nlet a : f32[2] @ m[x] = [1, 2]\nprint(a * 2)\nprint(b)\n";
  ProcResult r = dtlang::runProcess(
      {"/bin/sh", "-c", std::string(DT_DTENSORC) + " check - < " + dir + "/p.dt"}, 60);
  CHECK(r.exitCode == 1);
  CHECK(contains(r.err, "<stdin>:4:7: error: unknown name `b`"));
  std::ofstream(dir + "/p.dt")
      << "mesh m = [x = 2]\nlet a : f32[2] @ m[x] = [1, 2]\nprint(a * 2)\n";
  r = dtlang::runProcess({"/bin/sh", "-c", std::string(DT_DTENSORC) + " run - < " + dir + "/p.dt"},
                         60);
  CHECK(r.exitCode == 0);
  CHECK(r.out == "[2, 4]\n");
  r = dtlang::runProcess(
      {"/bin/sh", "-c", std::string(DT_DTENSORC) + " verify - --mesh m=[3] < " + dir + "/p.dt"},
      60);
  CHECK(r.exitCode == 0);
  CHECK(contains(r.out, "PASS (1 outputs)"));
  std::filesystem::remove_all(dir);
}
