// This file implements the Session (see Session.h).
#include "runtime/Session.h"

#include "frontend/BuildIR.h"
#include "runtime/Reference.h"
#include "support/Diagnostics.h"
#include "support/Errors.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <set>
#include <unordered_map>

namespace dt {

namespace {

/// Collects the values `b` defines (results, block arguments) and reads,
/// nested regions included.
void scan(const Block &b, std::set<int> &defined, std::vector<int> &used) {
  for (int a : b.args)
    defined.insert(a);
  for (const Inst &in : b.insts) {
    used.insert(used.end(), in.operands.begin(), in.operands.end());
    for (int r : in.results)
      defined.insert(r);
    for (const Block &r : in.regions)
      scan(r, defined, used);
  }
}

/// The names of the functions of `m` that `start` reaches (calls, kernels,
/// gradients: any instruction naming a function), and the meshes their
/// values live on when `meshes` is given.
std::set<std::string> reachableFrom(const Module &m, const Block &start,
                                    std::set<const Mesh *> *meshes = nullptr) {
  std::set<std::string> seen;
  std::vector<std::string> work;
  std::function<void(const Block &)> visit = [&](const Block &b) {
    for (const Inst &in : b.insts) {
      if (!in.attrs.str.empty() && m.find(in.attrs.str) && seen.insert(in.attrs.str).second)
        work.push_back(in.attrs.str);
      for (const Block &r : in.regions)
        visit(r);
    }
  };
  visit(start);
  while (!work.empty()) {
    const Function *f = m.find(work.back());
    work.pop_back();
    if (!f)
      continue;
    if (meshes)
      for (const Value &v : f->values)
        if (v.type.mesh)
          meshes->insert(v.type.mesh.get());
    visit(f->body);
  }
  return seen;
}

/// The functions of `m` that `entry` reaches and the meshes their values
/// live on: the module a call runs, so that a call of a host function needs
/// one rank.
Module reachableModule(const Module &m, const std::string &entry) {
  Block start;
  start.insts.emplace_back().attrs.str = entry;
  std::set<const Mesh *> meshes;
  std::set<std::string> seen = reachableFrom(m, start, &meshes);
  Module out;
  out.deterministic = m.deterministic;
  for (const MeshRef &mesh : m.meshes)
    for (const Mesh *used : meshes)
      if (mesh.get() == used || *mesh == *used) {
        out.meshes.push_back(mesh);
        break;
      }
  for (const Function &f : m.functions)
    if (seen.count(f.name))
      out.functions.push_back(f);
  return out;
}

} // namespace

/// Everything a chunk can add to the program: `main`'s statements, the
/// top-level names, meshes, functions and their instances, structs, imports.
/// A chunk that fails (to compile, or at run time) is taken back to it, so a
/// corrected input can define the same names again.
struct Session::Mark {
  size_t mainInsts = 0;
  std::map<std::string, Binding> globals;
  std::map<std::string, MeshRef> meshes;
  size_t functionsUndo = 0; ///< BuilderState::functionsUndo's length
  std::set<std::string> imported;
  std::map<std::string, std::set<std::string>> importsOf;
  std::map<std::string, StructRef> structs;
  std::map<std::string, std::map<std::string, TensorType>> checkpointsSaved;
  std::map<std::string, std::map<std::string, TensorType>> filesSaved;
  size_t nFunctions = 0, nMeshes = 0, nPrograms = 0;
};

struct Session::Pending {
  Mark mark; ///< the program before the first chunk not yet run
};

Session::Mark Session::mark() const {
  const Compilation::BuilderState &st = *c_->builderState;
  Mark m;
  const Function *main = c_->module.find("main");
  m.mainInsts = main ? main->body.insts.size() : 0;
  m.globals = st.globals;
  m.meshes = st.meshes;
  m.functionsUndo = st.functionsUndo.size();
  m.imported = st.imported;
  m.importsOf = st.importsOf;
  m.structs = st.structs;
  m.checkpointsSaved = st.checkpointsSaved;
  m.filesSaved = st.filesSaved;
  m.nFunctions = c_->module.functions.size();
  m.nMeshes = c_->module.meshes.size();
  m.nPrograms = st.programs.size();
  return m;
}

void Session::rollback(Mark &&m) {
  if (Function *main = c_->module.find("main")) {
    if (m.mainInsts > 0 && m.mainInsts <= main->body.insts.size())
      truncateMain(m.mainInsts - 1); // keeps everything up to the old `return`
    else {
      main->body.insts.clear();
      c_->builderState->verifiedMainInsts = 0;
    }
  }
  Compilation::BuilderState &st = *c_->builderState;
  st.globals = std::move(m.globals);
  st.meshes = std::move(m.meshes);
  st.undoFunctions(m.functionsUndo);
  st.imported = std::move(m.imported);
  st.importsOf = std::move(m.importsOf);
  st.structs = std::move(m.structs);
  st.checkpointsSaved = std::move(m.checkpointsSaved);
  st.filesSaved = std::move(m.filesSaved);
  auto &fns = c_->module.functions;
  for (size_t i = fns.size(); i > m.nFunctions; --i)
    if (fns[i - 1].name != "main") // `main` is kept (emptied above)
      fns.erase(fns.begin() + (long)(i - 1));
  // Every function but `main` is verified again from the first one removed.
  size_t others = fns.size() - (c_->module.find("main") ? 1 : 0);
  st.verifiedFunctions = std::min(st.verifiedFunctions, others);
  if (c_->module.meshes.size() > m.nMeshes)
    c_->module.meshes.resize(m.nMeshes);
  if (st.programs.size() > m.nPrograms)
    st.programs.resize(m.nPrograms);
}

Session::Session() : Session(SessionOptions{}) {}

Session::Session(SessionOptions opts) : opts_(std::move(opts)) {
  c_ = std::make_unique<Compilation>(pipelineCompileOptions(opts_.compile));
}

Session::~Session() = default;

CpuJIT &Session::jit() {
  if (!jit_) {
    CpuJIT::Options o;
    o.diskCache = opts_.kernelCache;
    jit_ = std::make_unique<CpuJIT>(o);
  }
  return *jit_;
}

CpuJIT &Session::quickJit() {
  if (!quickJit_) {
    CpuJIT::Options o;
    o.optLevel = 0;
    o.diskCache = opts_.kernelCache;
    quickJit_ = std::make_unique<CpuJIT>(o);
  }
  return *quickJit_;
}

void Session::truncateMain(size_t keep) {
  Function *main = c_->module.find("main");
  if (!main)
    return;
  auto &insts = main->body.insts;
  insts.resize(std::min(keep, insts.size()));
  size_t &verified = c_->builderState->verifiedMainInsts;
  verified = std::min(verified, insts.size());
  if (insts.empty() || insts.back().op != Op::Return) {
    Inst r;
    r.op = Op::Return;
    insts.push_back(std::move(r));
  }
}

bool Session::compile(const std::string &path, const std::string &text, bool irInput) {
  if (!pending_) // no mark is held: nothing before here is taken back
    c_->builderState->functionsUndo.clear();
  Mark before = mark();
  const int file = c_->sources.count(); // the chunk's, added first
  bool built;
  try {
    built =
        runFrontEnd(*c_, path, text, opts_.pipeline, opts_.log ? *opts_.log : std::cerr, irInput);
  } catch (const InternalError &) {
    // A compiler bug in this input: the program is taken back to before it,
    // so the next input does not meet it again.
    if (!irInput)
      rollback(std::move(before));
    throw;
  }
  if (built) {
    programFile_ = file;
    if (irInput) {
      ranUpTo_ = 0;
      ranOnce_ = false;
      values_.clear();
      pending_.reset();
    } else if (!pending_) {
      pending_ = std::make_unique<Pending>();
      pending_->mark = std::move(before);
    }
    return true;
  }
  // A chunk with errors leaves the program as it was (the REPL goes on).
  if (!irInput)
    rollback(std::move(before));
  return false;
}

bool Session::tryCompile(const std::string &path, const std::string &text,
                         const std::function<void()> &inspect) {
  Mark before = mark();
  bool ok = runFrontEnd(*c_, path, text, opts_.pipeline, opts_.log ? *opts_.log : std::cerr, false);
  if (ok && inspect)
    inspect();
  rollback(std::move(before));
  return ok;
}

void Session::discardPending() {
  if (!pending_)
    return;
  rollback(std::move(pending_->mark));
  pending_.reset();
}

std::optional<TensorType> Session::typeOf(const std::string &name) const {
  auto &g = c_->builderState->globals;
  auto it = g.find(name);
  const Function *main = c_->module.find("main");
  if (it == g.end() || it->second.id < 0 || !main || it->second.id >= (int)main->values.size())
    return std::nullopt;
  return main->type(it->second.id);
}

std::optional<std::pair<std::string, std::vector<std::string>>>
Session::structValue(const std::string &name) const {
  auto &g = c_->builderState->globals;
  auto it = g.find(name);
  if (it == g.end() || it->second.kind != Binding::Struct || !it->second.record)
    return std::nullopt;
  std::vector<std::string> leaves;
  for (auto &[path, t] : it->second.record->leaves)
    leaves.push_back(name + "." + path);
  return std::make_pair(it->second.record->name, leaves);
}

const HostTensor *Session::valueOf(const std::string &name) const {
  auto &g = c_->builderState->globals;
  auto it = g.find(name);
  if (it == g.end() || it->second.id < 0)
    return nullptr;
  auto v = values_.find(it->second.id);
  return v == values_.end() ? nullptr : &v->second;
}

Backend &Session::backend() {
  if (!backend_) {
    // Without a driver, `cuda` fails here with one line naming what is missing.
    BackendOptions bo;
    bo.cpuJit = &jit();
    bo.quickJit = &quickJit();
    bo.faultTimeout = opts_.faultTimeout;
    bo.ranksPerProcess = opts_.ranksPerProcess;
    bo.sources = &c_->sources;
    bo.dryRun = opts_.dryRun;
    backend_ = makeBackend(opts_.backend, bo);
  }
  return *backend_;
}

bool Session::call(const std::string &fn, std::vector<TensorType> argTypes,
                   const std::vector<HostTensor> &args, std::vector<HostTensor> &results,
                   std::ostream &out, const std::vector<std::string> &argStructs) {
  std::string key = fn + "(";
  for (auto &name : argStructs)
    key += name + ",";
  key += "|";
  for (auto &t : argTypes)
    key += t.str() + ";";
  // A function declared again since: every compiled call may reach it.
  if (c_->builderState->redefinitions != callsRedefinitions_) {
    calls_.clear();
    callsRedefinitions_ = c_->builderState->redefinitions;
  }
  auto it = calls_.find(key);
  if (it == calls_.end()) {
    int errors = c_->diags.errorCount();
    std::string inst = c_->instantiateCall(fn, argTypes, argStructs);
    if (inst.empty() || c_->diags.errorCount() > errors)
      return false;
    // The instance is the entry: only what it reaches is compiled (`main`,
    // the top-level statements, is not run, and the instances of earlier
    // calls' shapes are theirs: compiling them again made every new shape
    // cost what the session held before it).
    Module m = reachableModule(c_->module, inst);
    PipelineOptions po = opts_.pipeline;
    po.spmd = true;
    if (po.last > Step::MemPlan)
      po.last = Step::MemPlan;
    std::ostringstream log;
    auto prog = compileProgram(std::move(m), inst, po, c_->options, c_->diags, log);
    if (!prog)
      return false;
    CallEntry e;
    e.prog = prog;
    e.entry = inst;
    e.module = std::make_unique<Module>(reachableModule(prog->module(), inst));
    e.results = e.module->find(inst)->results;
    e.sink = std::make_unique<std::ostringstream>();
    // A fixed world size (the embedding API's Options::world) is checked against the whole
    // program's meshes, as a run checks it; the call itself then runs on the ranks of the
    // meshes the function reaches.
    if (opts_.exec.ranks != 0 && Executor::requiredRanks(prog->module()) != opts_.exec.ranks)
      throw RuntimeFault(
          formatDiag("the program's meshes need {0} ranks, but the session's world has {1}",
                     {std::to_string(Executor::requiredRanks(prog->module())),
                      std::to_string(opts_.exec.ranks)}));
    ExecOptions eo = opts_.exec;
    eo.ranks = 0; // the meshes the function uses decide
    eo.sources = &c_->sources;
    eo.programFile = programFile_;
    e.exec = std::make_unique<Executor>(*e.module, backend(), *e.sink, eo);
    it = calls_.emplace(key, std::move(e)).first;
  }
  CallEntry &e = it->second;
  results = e.exec->run(e.entry, args);
  lastCallResults_ = e.results;
  if (!e.sink->str().empty()) {
    out << e.sink->str();
    e.sink->str("");
  }
  return true;
}

bool Session::compileFile(const std::string &path, bool irInput) {
  std::string text;
  // `-` is standard input, named so in diagnostics.
  return c_->readFile(path, text) && compile(path == "-" ? "<stdin>" : path, text, irInput);
}

namespace {

/// Renumbers value ids densely from 0 (old -> new as they appear); `values`
/// gets each new id's value from `from`.
struct Renumber {
  const Function &from;
  std::vector<Value> &values;
  std::unordered_map<int, int> ids;

  int operator()(int v) {
    auto [it, fresh] = ids.emplace(v, (int)values.size());
    if (fresh) {
      Value copy = from.values.at((size_t)v);
      copy.id = it->second;
      values.push_back(std::move(copy));
    }
    return it->second;
  }
  void block(Block &b) {
    for (int &a : b.args)
      a = (*this)(a);
    for (Inst &in : b.insts) {
      for (int &o : in.operands)
        o = (*this)(o);
      for (int &r : in.results)
        r = (*this)(r);
      for (Block &r : in.regions)
        block(r);
    }
  }
};

} // namespace

Module Session::chunkModule() {
  params_.clear();
  results_.clear();
  const Function *src = c_->module.find("main");
  if (!src) {
    chunkEnd_ = 0;
    return c_->module;
  }
  const auto &all = src->body.insts;
  size_t end = all.size();
  if (end > 0 && all.back().op == Op::Return)
    --end;
  chunkEnd_ = end;
  const bool whole = !ranOnce_ && !opts_.keepValues; // the whole program, as written
  if (!whole && ranUpTo_ > end)
    throw InternalError("session: `main` shrank below the statements already run");
  // Only the functions the statements reach are compiled: a session's
  // program grows with every function it declares, and a run must cost what
  // it calls. The chunk's `main` holds only the statements not run yet, its
  // values renumbered from 0, for the same reason. Earlier values it reads
  // are its parameters; the names it binds are its results.
  Block chunk;
  chunk.insts.assign(all.begin() + (whole ? 0 : (long)ranUpTo_), all.begin() + (long)end);
  std::set<std::string> reached = reachableFrom(c_->module, chunk);
  Module m;
  m.meshes = c_->module.meshes;
  m.deterministic = c_->module.deterministic;
  Function *main = nullptr;
  for (const Function &f : c_->module.functions) {
    if (&f == src) {
      main = &m.functions.emplace_back(whole ? f : Function{});
      main->name = f.name;
      main->loc = f.loc;
    } else if (reached.count(f.name)) {
      m.functions.push_back(f);
    }
  }
  if (whole)
    return m;
  main->body.insts = std::move(chunk.insts);
  std::set<int> defined;
  std::vector<int> used;
  scan(main->body, defined, used);
  std::set<int> free;
  for (int v : used)
    if (!defined.count(v))
      free.insert(v);
  for (int v : free) {
    if (!values_.count(v))
      throw InternalError("session: value %" + std::to_string(v) +
                          " of an earlier chunk was not kept");
    params_.push_back(v);
  }
  if (opts_.keepValues)
    for (int v : c_->globalValues())
      if (defined.count(v))
        results_.push_back(v);
  Renumber renumber{*src, main->values, {}};
  for (int v : params_)
    main->params.push_back(renumber(v));
  renumber.block(main->body); // no arguments yet: the parameters are set below
  main->body.args = main->params;
  Inst r;
  r.op = Op::Return;
  for (int v : results_)
    r.operands.push_back(renumber(v));
  for (int v : r.operands)
    main->results.push_back(main->type(v));
  main->body.insts.push_back(std::move(r));
  return m;
}

std::shared_ptr<const CompiledProgram> Session::program(const PipelineOptions &opts,
                                                        std::ostream &log) {
  return compileProgram(chunkModule(), "main", opts, c_->options, c_->diags, log);
}

bool Session::run(std::ostream &out, std::ostream &log) {
  PipelineOptions po = opts_.pipeline;
  po.spmd = !opts_.reference;
  if (po.last > Step::MemPlan)
    po.last = Step::MemPlan; // the backend compiles the kernels itself
  if (opts_.backend == "cuda")
    po.target = CodeTarget::Cuda; // kernels for every source: nothing staged on the host
  auto prog = program(po, log);
  if (!prog) {
    // Errors after `build` (lowering, planning): the chunk is dropped as a
    // chunk with build errors is, so the next input does not meet them again.
    if (opts_.keepValues)
      discardPending();
    return false;
  }
  std::vector<HostTensor> args;
  for (int v : params_)
    args.push_back(values_.at(v));
  std::vector<HostTensor> results;
  try {
    if (opts_.reference) {
      ReferenceEvaluator ev(prog->module(), out, opts_.exec.progress);
      ev.setSources(&c_->sources, programFile_);
      results = ev.run(prog->entry(), args);
    } else {
      ExecOptions eo = opts_.exec;
      eo.sources = &c_->sources;
      eo.programFile = programFile_;
      Executor ex(*prog, backend(), out, eo);
      results = ex.run(prog->entry(), args);
      stats_ = ex.stats();
    }
  } catch (...) {
    // A chunk that failed at run time is dropped: it is not run again, and
    // the names it bound are unbound (the REPL and the API go on).
    if (opts_.keepValues)
      discardPending();
    throw;
  }
  pending_.reset();
  ranOnce_ = true;
  ranUpTo_ = chunkEnd_;
  if (opts_.keepValues) {
    for (size_t i = 0; i < results_.size() && i < results.size(); ++i)
      values_[results_[i]] = std::move(results[i]);
    // Values no top-level name refers to any more are dropped.
    std::vector<int> live = c_->globalValues();
    for (auto it = values_.begin(); it != values_.end();)
      it = std::binary_search(live.begin(), live.end(), it->first) ? std::next(it)
                                                                   : values_.erase(it);
  }
  return true;
}

} // namespace dt
