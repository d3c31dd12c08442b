// This file implements the Session (see Session.h).
#include "runtime/Session.h"

#include "frontend/BuildIR.h"
#include "runtime/Reference.h"

#include <algorithm>
#include <iostream>
#include <set>

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

} // namespace

Session::Session() : Session(SessionOptions{}) {}

Session::Session(SessionOptions opts) : opts_(std::move(opts)) {
  c_ = std::make_unique<Compilation>(pipelineCompileOptions(opts_.compile));
}

Session::~Session() = default;

CpuJIT &Session::jit() {
  if (!jit_)
    jit_ = std::make_unique<CpuJIT>();
  return *jit_;
}

CpuJIT &Session::quickJit() {
  if (!quickJit_)
    quickJit_ = std::make_unique<CpuJIT>(CpuJIT::Options{0});
  return *quickJit_;
}

bool Session::compile(const std::string &path, const std::string &text, bool irInput) {
  Function *main = c_->module.find("main");
  size_t before = main ? main->body.insts.size() : 0;
  auto globals = c_->builderState->globals;
  if (runFrontEnd(*c_, path, text, opts_.pipeline, opts_.log ? *opts_.log : std::cerr, irInput)) {
    if (irInput) {
      ranUpTo_ = 0;
      ranOnce_ = false;
      values_.clear();
    }
    return true;
  }
  // A chunk with errors leaves the program as it was (the REPL goes on).
  if (!irInput && (main = c_->module.find("main"))) {
    auto &insts = main->body.insts;
    if (before > 0 && before <= insts.size()) {
      insts.resize(before - 1); // keeps everything up to the old `return`
      Inst r;
      r.op = Op::Return;
      insts.push_back(std::move(r));
    } else {
      insts.clear();
    }
    c_->builderState->globals = std::move(globals);
  }
  return false;
}

bool Session::compileFile(const std::string &path, bool irInput) {
  std::string text;
  return c_->readFile(path, text) && compile(path, text, irInput);
}

Module Session::chunkModule() {
  Module m = c_->module;
  params_.clear();
  results_.clear();
  Function *main = m.find("main");
  if (!main) {
    chunkEnd_ = 0;
    return m;
  }
  auto &insts = main->body.insts;
  size_t end = insts.size();
  if (end > 0 && insts.back().op == Op::Return)
    --end;
  chunkEnd_ = end;
  if (!ranOnce_ && !opts_.keepValues)
    return m; // the whole program, as written
  if (ranUpTo_ > end)
    throw InternalError("session: `main` shrank below the statements already run");
  std::vector<Inst> body(std::make_move_iterator(insts.begin() + ranUpTo_),
                         std::make_move_iterator(insts.begin() + end));
  insts = std::move(body);
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
  main->params = params_;
  main->body.args = params_;
  if (opts_.keepValues)
    for (int v : c_->globalValues())
      if (defined.count(v))
        results_.push_back(v);
  Inst r;
  r.op = Op::Return;
  r.operands = results_;
  insts.push_back(std::move(r));
  main->results.clear();
  for (int v : results_)
    main->results.push_back(main->type(v));
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
  if (!prog)
    return false;
  std::vector<HostTensor> args;
  for (int v : params_)
    args.push_back(values_.at(v));
  std::vector<HostTensor> results;
  if (opts_.reference) {
    ReferenceEvaluator ev(prog->module(), out);
    results = ev.run(prog->entry(), args);
  } else {
    if (!backend_) {
      // Without a driver, `cuda` fails here with one line naming what is missing.
      BackendOptions bo;
      bo.cpuJit = &jit();
      bo.quickJit = &quickJit();
      backend_ = makeBackend(opts_.backend, bo);
    }
    Executor ex(*prog, *backend_, out, opts_.exec);
    results = ex.run(prog->entry(), args);
    stats_ = ex.stats();
  }
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
