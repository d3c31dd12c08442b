// This file implements the REPL's logic (Repl.h): continuation, evaluation
// of chunks in the Session, expression values and the `:` commands.
#include "tools/Repl.h"

#include "frontend/BuildIR.h"
#include "grammar/AST.h"
#include "passes/Explain.h"
#include "passes/Pipeline.h"
#include "runtime/Format.h"
#include "runtime/Inspect.h"
#include "support/Errors.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace dt {

namespace {

/// The name an expression statement's value is bound to while it is printed
/// (unbound right after; `$` is in no name a program can write, so it never
/// shadows or removes a user's name).
const char *const kValueName = "$value";

const char *const kHelp =
    "Enter statements (`mesh`, `let`, `var`, `fn`, `import`, `for`, `print`) or an\n"
    "expression, whose value and type are printed. Definitions persist; each input\n"
    "runs only its own statements. An input continues while a bracket is open.\n"
    "Commands:\n"
    "  :type EXPR     the type of EXPR (shape and placements), without running it\n"
    "  :layout NAME   which device holds which block of NAME\n"
    "  :explain EXPR  the collectives EXPR (or a statement) would run, with bytes\n"
    "  :mesh          the meshes declared so far\n"
    "  :load FILE     run FILE's statements in this session\n"
    "  :reset         forget every definition and value\n"
    "  :help          this text\n"
    "  :quit          leave (also Ctrl-D)\n";

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos)
    return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

/// The names a trailing expression of `parts` values is bound to while it
/// is printed: `$value`, or `$value0`, `$value1`, ...
std::vector<std::string> valueNames(size_t parts) {
  if (parts == 1)
    return {kValueName};
  std::vector<std::string> names;
  for (size_t i = 0; i < parts; ++i)
    names.push_back(kValueName + std::to_string(i));
  return names;
}

/// Turns a trailing expression statement into `let $value = EXPR`, or
/// for a tuple of `parts` values `let ($value0, ...) = EXPR` (the same
/// source spans, so diagnostics point into the input).
void bindTrailingExpr(ast::Program &p, bool &bound, size_t parts = 1) {
  bound = false;
  if (p.stmts.empty() || p.stmts.back()->kind != ast::Stmt::ExprStmt || !p.stmts.back()->value)
    return;
  ast::Stmt &s = *p.stmts.back();
  s.kind = ast::Stmt::Let;
  s.names = valueNames(parts);
  s.nameLocs.assign(parts, s.loc);
  bound = true;
}

/// How many parts the value has when binding it to one name failed because
/// it is a tuple, or nothing (the `DestructureCount` error: "the value has 2
/// parts ..."); -1 for another failure.
long valueParts(const DiagEngine &d) {
  for (const Diagnostic &x : d.all()) {
    if (x.id != DiagId::DestructureCount)
      continue;
    size_t at = x.message.find("has ");
    if (at == std::string::npos)
      return -1;
    long n = std::strtol(x.message.c_str() + at + 4, nullptr, 10);
    return n >= 0 && n <= 64 ? n : -1;
  }
  return -1;
}

/// The integer a name is bound to when it is a compile-time constant (`let
/// K = 4`, or an integer expression typed alone), which has no tensor type.
std::optional<int64_t> constantNamed(Session &s, const std::string &name) {
  auto &globals = s.compilation().builderState->globals;
  auto it = globals.find(name);
  if (it == globals.end() || it->second.kind != Binding::Const)
    return std::nullopt;
  return it->second.constant;
}

/// The struct type of a name bound to a struct value (`let p = Pair(...)`),
/// whose leaves are bound as `p.a`, `p.b`; null for anything else.
StructRef structNamed(Session &s, const std::string &name) {
  auto &globals = s.compilation().builderState->globals;
  auto it = globals.find(name);
  if (it == globals.end() || it->second.kind != Binding::Struct)
    return nullptr;
  return it->second.record;
}

} // namespace

Repl::Repl(ReplOptions opts, std::ostream &out, std::ostream &err)
    : opts_(std::move(opts)), out_(out), err_(err) {
  reset();
}

Repl::~Repl() = default;

void Repl::reset() {
  SessionOptions so;
  so.backend = opts_.backend;
  so.pipeline.target = opts_.backend == "cuda" ? CodeTarget::Cuda : CodeTarget::Llvm;
  so.keepValues = true;
  so.exec.interrupt = opts_.interrupt;
  so.kernelCache = opts_.kernelCache;
  so.compile.deterministic = opts_.deterministic;
  s_ = std::make_unique<Session>(so);
}

Repl::Brackets Repl::brackets(const std::string &text) {
  Brackets b;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
      else if (c == '"' || c == '\n') {
        b.unterminatedString |= c == '\n';
        inString = false;
      }
      continue;
    }
    if (c == '#') {
      size_t nl = text.find('\n', i);
      if (nl == std::string::npos)
        break;
      i = nl;
    } else if (c == '"') {
      inString = true;
    } else if (c == '(' || c == '[' || c == '{') {
      ++b.depth;
      b.open.push_back(c);
    } else if (c == ')' || c == ']' || c == '}') {
      --b.depth;
      if (!b.open.empty())
        b.open.pop_back();
    }
  }
  b.unterminatedString |= inString;
  return b;
}

int Repl::openBrackets(const std::string &text) { return brackets(text).depth; }

namespace {

/// Whether `line` starts with a keyword that begins a statement and cannot
/// continue an expression (inside an open `(` or `[`).
bool startsStatement(const std::string &line) {
  size_t b = line.find_first_not_of(" \t");
  if (b == std::string::npos)
    return false;
  size_t e = b;
  while (e < line.size() && (std::isalnum((unsigned char)line[e]) || line[e] == '_'))
    ++e;
  static const char *const kStatements[] = {"let",    "var",   "fn",  "mesh",  "struct",
                                            "import", "print", "for", "while", "return"};
  const std::string word = line.substr(b, e - b);
  for (const char *k : kStatements)
    if (word == k)
      return true;
  return false;
}

} // namespace

Repl::Status Repl::feed(const std::string &line) {
  if (buf_.empty()) {
    std::string t = trim(line);
    if (t.empty())
      return Status::Done;
    if (t[0] == ':') {
      if (t == ":quit" || t == ":q" || t == ":exit")
        return Status::Quit;
      // `:type [1,` goes on on the next line, as an input does.
      Brackets b = brackets(t);
      if (b.depth > 0 && !b.unterminatedString && t.find(' ') != std::string::npos) {
        buf_ = line + '\n';
        return Status::More;
      }
      command(t);
      return Status::Done;
    }
  }
  // An input left open by a `(` or `[` ends where a line starts a new
  // statement: that line is no argument, so the open input is an error of
  // its own and the line starts the next input (rather than being swallowed
  // with every line after it).
  if (!buf_.empty() && startsStatement(line)) {
    Brackets open = brackets(buf_);
    if (open.depth > 0 && !open.open.empty() && open.open.back() != '{') {
      finish();
      return feed(line);
    }
  }
  buf_ += line;
  buf_ += '\n';
  // A string does not span lines: one left open ends the input (an error).
  Brackets b = brackets(buf_);
  if (b.depth > 0 && !b.unterminatedString)
    return Status::More;
  std::string text = std::move(buf_);
  buf_.clear();
  if (std::string t = trim(text); !t.empty() && t[0] == ':')
    command(t); // a command continued over lines
  else
    input(text);
  return Status::Done;
}

void Repl::finish() {
  if (buf_.empty())
    return;
  std::string text = std::move(buf_);
  buf_.clear();
  if (std::string t = trim(text); !t.empty() && t[0] == ':')
    command(t);
  else
    input(text);
}

void Repl::input(const std::string &text) {
  if (!evaluate(nextPath(), text, true))
    ++failures_;
}

void Repl::reportDiags() {
  DiagEngine &d = s_->diags();
  err_ << d.renderAll();
  d.clear();
}

bool Repl::evaluate(const std::string &path, const std::string &text, bool show) {
  Session &s = *s_;
  s.diags().clear();
  bool bound = false;
  if (show)
    s.compilation().afterParse = [&](ast::Program &p) { bindTrailingExpr(p, bound); };
  bool ok = s.compile(path, text);
  size_t parts = 1;
  if (long n; !ok && bound && (n = valueParts(s.diags())) > 1) {
    parts = (size_t)n;
    // A tuple: one name per part.
    s.diags().clear();
    s.compilation().afterParse = [&](ast::Program &p) { bindTrailingExpr(p, bound, parts); };
    ok = s.compile(path, text);
  }
  s.compilation().afterParse = nullptr;
  if (!ok && bound) {
    // An expression without a value (a call of a function with no result,
    // or with several): run it as it was written.
    s.diags().clear();
    bound = false;
    ok = s.compile(path, text);
  }
  if (!ok) {
    reportDiags();
    return false;
  }
  std::ostringstream log;
  try {
    if (!s.run(out_, log)) {
      reportDiags();
      return false;
    }
  } catch (const RuntimeFault &f) {
    out_.flush();
    if (opts_.interrupt && opts_.interrupt->load())
      err_ << "interrupted\n";
    else // at the failed line of the input (or of a module), as a compile error
      err_ << DiagEngine(s.compilation().sources)
                  .render(faultDiagnostic(f, s.compilation().sources));
    return false;
  } catch (const InternalError &e) {
    out_.flush();
    err_ << "internal error: " << e.what() << "\n";
    s.discardPending();
    return false;
  }
  // Warnings and remarks of a chunk that compiled.
  reportDiags();
  if (bound) {
    std::vector<std::string> names = valueNames(parts);
    for (size_t i = 0; i < names.size(); ++i)
      showValue(names[i], parts > 1 ? std::to_string(i) + ": " : "");
    // Unbound again: the next run frees the value.
    for (const std::string &n : names)
      unbind(n);
  }
  out_.flush();
  return true;
}

bool Repl::showValue(const std::string &name, const std::string &label) {
  Session &s = *s_;
  auto type = s.typeOf(name);
  const HostTensor *v = s.valueOf(name);
  if (type && v) {
    out_ << label << formatTensor(*v) << " : " << type->str() << "\n";
    return true;
  }
  if (auto c = constantNamed(s, name)) {
    out_ << label << *c << " : i64 constant\n";
    return true;
  }
  StructRef def = structNamed(s, name);
  if (!def)
    return false;
  // A struct: its type, then a line per leaf.
  out_ << label << def->name << "\n";
  for (auto &[path, declared] : def->leaves) {
    std::string leaf = name + "." + path;
    auto t = s.typeOf(leaf);
    const HostTensor *lv = s.valueOf(leaf);
    out_ << "  " << path << " = " << (lv ? formatTensor(*lv) : std::string("?")) << " : "
         << (t ? *t : declared).str() << "\n";
  }
  return true;
}

std::string Repl::typeText(const std::string &name) const {
  Session &s = *s_;
  if (auto t = s.typeOf(name))
    return t->str();
  if (constantNamed(s, name))
    return "i64 constant";
  StructRef def = structNamed(s, name);
  if (!def)
    return "";
  std::string r = def->name + " {";
  const auto &leaves = def->leaves;
  for (size_t i = 0; i < leaves.size(); ++i) {
    auto t = s.typeOf(name + "." + leaves[i].first);
    r += (i ? ", " : " ") + leaves[i].first + ": " + (t ? *t : leaves[i].second).str();
  }
  return r + " }";
}

void Repl::unbind(const std::string &name) {
  auto &globals = s_->compilation().builderState->globals;
  for (auto it = globals.begin(); it != globals.end();)
    if (it->first == name || it->first.rfind(name + ".", 0) == 0)
      it = globals.erase(it);
    else
      ++it;
}

bool Repl::load(const std::string &path) {
  std::string text;
  s_->diags().clear();
  if (!s_->compilation().readFile(path, text)) {
    reportDiags();
    return false;
  }
  return evaluate(path, text, false);
}

bool Repl::startBackend() {
  try {
    s_->backend();
    return true;
  } catch (const RuntimeFault &f) {
    err_ << "error: " << f.what() << "\n";
    return false;
  }
}

void Repl::command(const std::string &line) {
  size_t sp = line.find_first_of(" \t");
  std::string cmd = line.substr(0, sp);
  std::string arg = sp == std::string::npos ? "" : trim(line.substr(sp));
  auto needs = [&](const char *what) {
    if (!arg.empty())
      return true;
    err_ << "error: `" << cmd << "` needs " << what << "\n";
    ++failures_;
    return false;
  };
  auto takesNone = [&] {
    if (arg.empty())
      return true;
    err_ << "error: `" << cmd << "` takes no argument, got `" << arg << "`\n";
    ++failures_;
    return false;
  };
  if (cmd == ":quit" || cmd == ":q" || cmd == ":exit") {
    takesNone(); // with an argument: refused, and the session goes on
  } else if (cmd == ":help" || cmd == ":h" || cmd == ":?") {
    if (takesNone())
      out_ << kHelp;
  } else if (cmd == ":type" || cmd == ":t") {
    if (needs("an expression"))
      typeCommand(arg);
  } else if (cmd == ":layout") {
    if (needs("a name"))
      layoutCommand(arg);
  } else if (cmd == ":explain") {
    if (needs("an expression"))
      explainCommand(arg);
  } else if (cmd == ":mesh" || cmd == ":meshes") {
    if (takesNone())
      meshCommand();
  } else if (cmd == ":load" || cmd == ":l") {
    if (needs("a file")) {
      // As a shell would read it: quotes around the path, `~/` for $HOME.
      std::string path = arg;
      if (path.size() >= 2 && (path[0] == '"' || path[0] == '\'') && path.back() == path[0])
        path = path.substr(1, path.size() - 2);
      if (path.rfind("~/", 0) == 0 && std::getenv("HOME"))
        path = std::string(std::getenv("HOME")) + path.substr(1);
      if (path.find('\0') != std::string::npos) {
        err_ << "error: `:load`: the path holds a NUL byte\n";
        ++failures_;
      } else if (!load(path)) {
        ++failures_;
      }
    }
  } else if (cmd == ":reset") {
    if (takesNone()) {
      reset();
      out_ << "session reset\n";
    }
  } else {
    std::string why = "unknown command `" + cmd + "`";
    std::vector<std::string> names = {":type", ":layout", ":explain", ":mesh",
                                      ":load", ":reset",  ":help",    ":quit"};
    if (auto near = closestName(cmd, names))
      why += "; did you mean `" + *near + "`?";
    err_ << "error: " << why << " (`:help` lists the commands)\n";
    ++failures_;
  }
  out_.flush();
}

void Repl::typeCommand(const std::string &expr) {
  Session &s = *s_;
  s.diags().clear();
  bool bound = false;
  size_t parts = 1;
  std::string type;
  s.compilation().afterParse = [&](ast::Program &p) {
    if (p.stmts.size() == 1)
      bindTrailingExpr(p, bound, parts);
  };
  auto typeOfParts = [&] {
    if (!bound)
      return;
    std::vector<std::string> names = valueNames(parts);
    for (size_t i = 0; i < names.size(); ++i)
      type += (i ? ", " : "") + typeText(names[i]);
    if (parts > 1)
      type = "(" + type + ")";
  };
  bool ok = s.tryCompile(nextPath(), expr + "\n", typeOfParts);
  long n = !ok && bound ? valueParts(s.diags()) : -1;
  if (n > 1) {
    parts = (size_t)n;
    s.diags().clear();
    ok = s.tryCompile(nextPath(), expr + "\n", typeOfParts);
  }
  s.compilation().afterParse = nullptr;
  if (n == 0) { // a call of a function without a result
    s.diags().clear();
    err_ << "error: `" << expr << "` has no value (its function returns nothing)\n";
    ++failures_;
    return;
  }
  if (!ok) {
    reportDiags();
    ++failures_;
    return;
  }
  s.diags().clear();
  if (!type.empty())
    out_ << type << "\n";
  else {
    err_ << "error: `:type` needs an expression with one value\n";
    ++failures_;
  }
}

void Repl::layoutCommand(const std::string &text) {
  const std::string name = trim(text.substr(0, text.find('#'))); // `:layout a  # note`
  auto type = s_->typeOf(name);
  if (StructRef def = type ? nullptr : structNamed(*s_, name)) {
    // A struct: each field's blocks.
    for (auto &[path, declared] : def->leaves) {
      out_ << name << "." << path << ":\n";
      auto t = s_->typeOf(name + "." + path);
      out_ << visualizeLayout(t ? *t : declared);
    }
    return;
  }
  if (!type) {
    // A name that is no tensor value says what it is.
    auto &st = *s_->compilation().builderState;
    std::string what = constantNamed(*s_, name)   ? "an i64 constant (a compile-time integer)"
                       : st.meshes.count(name)    ? "a mesh (`:mesh` lists the meshes)"
                       : st.functions.count(name) ? "a function"
                       : st.structs.count(name)   ? "a struct type"
                                                  : "";
    if (!what.empty()) {
      err_ << "error: `" << name << "` is " << what << ", not a value with a layout\n";
      ++failures_;
      return;
    }
    err_ << "error: unknown name `" << name << "`";
    std::vector<std::string> names;
    for (auto &[n, b] : s_->compilation().builderState->globals)
      names.push_back(n);
    if (auto near = closestName(name, names))
      err_ << "; did you mean `" << *near << "`?";
    err_ << "\n";
    ++failures_;
    return;
  }
  out_ << visualizeLayout(*type);
}

void Repl::explainCommand(const std::string &expr) {
  Session &s = *s_;
  s.diags().clear();
  std::string report;
  bool failed = false;
  bool ok = s.tryCompile(nextPath(), expr + "\n", [&] {
    PipelineOptions po = s.options().pipeline;
    po.spmd = true;
    po.last = Step::Spmd;
    std::ostringstream log;
    try {
      auto prog = s.program(po, log);
      if (!prog) {
        failed = true;
        return;
      }
      report = explainModule(prog->module(), s.compilation().sources);
    } catch (const InternalError &e) {
      failed = true;
      err_ << "internal error: " << e.what() << "\n";
    }
  });
  if (!ok || failed) {
    reportDiags();
    ++failures_;
    return;
  }
  s.diags().clear();
  out_ << report;
}

void Repl::meshCommand() {
  auto &meshes = s_->compilation().builderState->meshes;
  if (meshes.empty()) {
    out_ << "no meshes (declare one: `mesh m = [x = 2, y = 2]`)\n";
    return;
  }
  for (const MeshRef &m : s_->compilation().module.meshes) // in declaration order
    if (meshes.count(m->name))
      out_ << "mesh " << m->str() << "\n";
}

} // namespace dt
