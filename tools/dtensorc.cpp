// dtensorc: the command-line driver. Each subcommand is a thin consumer of a
// Session and the pipeline (passes/Pipeline.h); diagnostics are rendered by
// the one diagnostics engine. Exit codes: 0 ok, 1 program error (parse, type
// or runtime), 2 usage error, 3 internal compiler error.
#include "frontend/Session.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "runtime/Reference.h"

#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace dt;

namespace {

struct Command {
  const char *name;
  const char *usage;
  const char *help;
};

const Command kCommands[] = {
    {"check", "dtensorc check FILE",
     "Parses and type-checks FILE (shapes and placements); prints every error with its fix."},
    {"run", "dtensorc run FILE [--reference]",
     "Runs FILE. --reference runs the single-device reference evaluator of the global IR."},
    {"emit", "dtensorc emit ir|ast FILE [--print-after=PASS] [--time-passes]",
     "Prints a stage of the compiler: `ir` is the typed global IR (it parses back)."},
};

int usage(const std::string &why) {
  if (!why.empty()) std::cerr << "dtensorc: " << why << "\n";
  std::cerr << "usage: dtensorc <command> [options] FILE\n\ncommands:\n";
  for (auto &c : kCommands) std::cerr << "  " << c.usage << "\n      " << c.help << "\n";
  std::cerr << "\n`dtensorc <command> --help` describes one command.\n";
  return 2;
}

struct Args {
  std::string cmd, sub, file;
  std::map<std::string, std::string> flags;
};

/// Parses `cmd [sub] FILE --flag[=value]...`; returns "" or an error.
std::string parseArgs(int argc, char **argv, Args &a) {
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0) {
      auto eq = s.find('=');
      std::string k = s.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::string v = eq == std::string::npos ? "" : s.substr(eq + 1);
      static const char *valued[] = {"ranks", "backend", "mesh", "print-after", "seed"};
      bool takesValue = false;
      for (auto *p : valued) takesValue |= k == p;
      if (takesValue && eq == std::string::npos) {
        if (i + 1 >= argc) return "`--" + k + "` needs a value";
        v = argv[++i];
      }
      a.flags[k] = v;
    } else {
      pos.push_back(s);
    }
  }
  if (pos.empty()) return a.flags.count("help") ? "" : "no command given";
  a.cmd = pos[0];
  size_t next = 1;
  if (a.cmd == "emit") {
    if (pos.size() < 2) return a.flags.count("help") ? "" : "`emit` needs a stage: ir or ast";
    a.sub = pos[1];
    next = 2;
  }
  if (pos.size() > next) a.file = pos[next];
  if (pos.size() > next + 1) return "unexpected argument `" + pos[next + 1] + "`";
  return "";
}

int commandHelp(const std::string &cmd) {
  for (auto &c : kCommands)
    if (cmd == c.name) {
      std::cout << "usage: " << c.usage << "\n\n" << c.help << "\n";
      return 0;
    }
  return usage("unknown command `" + cmd + "`");
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  std::string err = parseArgs(argc, argv, a);
  if (!err.empty()) return usage(err);
  if (a.flags.count("help")) return a.cmd.empty() ? (usage(""), 0) : commandHelp(a.cmd);
  bool known = false;
  for (auto &c : kCommands) known |= a.cmd == c.name;
  if (!known) return usage("unknown command `" + a.cmd + "`");
  if (a.file.empty()) return usage("`" + a.cmd + "` needs a FILE");
  if (a.cmd == "emit" && a.sub != "ir" && a.sub != "ast")
    return usage("unknown stage `" + a.sub + "` (ir, ast)");

  Session s;
  PipelineOptions po;
  po.printAfter = a.flags.count("print-after") ? a.flags["print-after"] : "";
  po.timePasses = a.flags.count("time-passes") > 0;
  try {
    bool ok = s.compileFile(a.file) && runPipeline(s, po, std::cerr);
    std::cerr << s.diags.renderAll();
    if (!ok) {
      int n = s.diags.errorCount();
      if (n > 1) std::cerr << n << " errors\n";
      return 1;
    }
    if (a.cmd == "check") return 0;
    if (a.cmd == "emit") {
      if (a.sub == "ir") std::cout << printModule(s.module);
      else std::cout << emitAst(s);
      return 0;
    }
    // run
    ReferenceEvaluator ev(s.module, std::cout);
    ev.run("main", {});
    return 0;
  } catch (const RuntimeFault &f) {
    std::cout.flush();
    std::cerr << "error: " << f.what() << "\n";
    return 1;
  } catch (const InternalError &e) {
    std::cout.flush();
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
}
