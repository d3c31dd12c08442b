// This file implements the pipeline (see Pipeline.h).
#include "passes/Pipeline.h"

#include "codegen/CpuJIT.h"
#include "codegen/CudaEmitter.h"
#include "codegen/LLVMCodegen.h"
#include "frontend/BuildIR.h"
#include "grammar/AST.h"
#include "ir/IRParser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Autodiff.h"
#include "passes/DeadCollectives.h"
#include "passes/FoldTranspose.h"
#include "passes/FuseScatter.h"
#include "passes/Fusion.h"
#include "passes/ReduceEarly.h"
#include "passes/SinkIntoCalls.h"
#include "passes/SpmdLower.h"

#include <chrono>
#include <cstdio>

namespace dt {

namespace {

const char *const kStepNames[kNumSteps] = {"parse",  "build",   "flatten", "autodiff", "spmd",
                                           "fusion", "kernels", "memplan", "codegen"};

using Clock = std::chrono::steady_clock;

void reportTime(const PipelineOptions &opts, std::ostream &log, Step s, Clock::time_point t0) {
  if (opts.timePasses)
    log << "pass " << stepName(s) << ": "
        << std::chrono::duration<double, std::milli>(Clock::now() - t0).count() << " ms\n";
}

void verifyAfter(const Module &m, Step s, const CompileOptions &copts,
                 const VerifyOptions &vo = {}) {
  if (!copts.verifyEach)
    return;
  std::vector<std::string> errors;
  if (!verifyModule(m, errors, vo)) {
    std::string msg = "IR verification failed after step `" + std::string(stepName(s)) + "`:";
    for (auto &e : errors)
      msg += "\n  " + e;
    throw InternalError(msg);
  }
}

} // namespace

const char *stepName(Step s) { return kStepNames[(int)s]; }

std::optional<Step> parseStep(const std::string &name) {
  for (int i = 0; i < kNumSteps; ++i)
    if (name == kStepNames[i])
      return (Step)i;
  return std::nullopt;
}

std::string stepNameList() {
  std::string out;
  for (int i = 0; i < kNumSteps; ++i)
    out += (i ? ", " : "") + std::string(kStepNames[i]);
  return out;
}

CompileOptions pipelineCompileOptions(CompileOptions base) {
  base.gradientTypes = gradientTypes;
  return base;
}

bool runFrontEnd(Compilation &c, const std::string &path, const std::string &text,
                 const PipelineOptions &opts, std::ostream &log, bool irInput) {
  int before = c.diags.errorCount();
  auto t0 = Clock::now();
  // The limit a file read applies, for text handed over in memory too (the
  // embedding API's compile(), a REPL paste).
  if ((int64_t)text.size() > c.options.maxSourceBytes) {
    c.diags.error(DiagId::SourceTooLarge, SrcLoc{-1, 0, 0, 0},
                  {path, std::to_string(c.options.maxSourceBytes)});
    return false;
  }
  if (irInput) {
    // IR text in: parsing it is the parse step, verifying it the build step.
    Module m;
    std::string err;
    int file = c.sources.add(path, text);
    if (!parseIR(text, m, err)) {
      // parseIR says `line:col: message`: a diagnostic at that place.
      int line = 0, col = 0, used = 0;
      SrcLoc at{-1, 0, 0, 0};
      if (std::sscanf(err.c_str(), "%d:%d: %n", &line, &col, &used) == 2 && used > 0) {
        at = SrcLoc{file, line, col, 0};
        err = err.substr((size_t)used);
      } else {
        err = path + ": " + err;
      }
      auto &d = c.diags.error(DiagId::ParseError, at, {err});
      if (path.size() > 3 && path.compare(path.size() - 3, 3, ".dt") == 0)
        d.hint = "`-x ir` reads IR text (as `dtensorc emit build` prints it); a `.dt` program "
                 "is read without it";
      return false;
    }
    reportTime(opts, log, Step::Parse, t0);
    t0 = Clock::now();
    std::vector<std::string> errors;
    if (!verifyModule(m, errors)) {
      std::string msg = path + ":";
      for (auto &e : errors)
        msg += "\n  " + e;
      c.diags.error(DiagId::IRInvalid, SrcLoc{-1, 0, 0, 0}, {msg});
      return false;
    }
    // The size limit a program's types get from the front end (a shape of
    // 10^18 elements would otherwise hang filling it, or overflow).
    for (const Function &f : m.functions)
      for (const Value &v : f.values) {
        if (!isConcrete(v.type.shape))
          continue;
        auto n = checkedNumElements(v.type.shape);
        if (n && *n <= c.options.maxTensorElements)
          continue;
        c.diags.error(
            DiagId::IRInvalid, SrcLoc{-1, 0, 0, 0},
            {path + ":\n  @" + f.name + ": %" + std::to_string(v.id) + " has type `" +
             printType(v.type) + "`, " + (n ? std::to_string(*n) : std::string("more than 2^63")) +
             " elements; a tensor holds at most " + std::to_string(c.options.maxTensorElements)});
        return false;
      }
    c.module = std::move(m);
    reportTime(opts, log, Step::Build, t0);
    if (opts.printAfter == "build")
      log << printModule(c.module);
    return true;
  }
  auto prog = c.parse(path, text);
  if (c.diags.errorCount() > before && path.size() > 3 &&
      path.compare(path.size() - 3, 3, ".ir") == 0 && c.diags.last())
    c.diags.last()->notes.push_back("`" + path + "` is read as a program; IR text needs `-x ir`");
  reportTime(opts, log, Step::Parse, t0);
  if (!prog)
    return false;
  if (opts.printAfter == "parse")
    log << ast::printProgram(*prog);
  t0 = Clock::now();
  bool ok = c.build(std::move(prog)) && c.diags.errorCount() == before;
  reportTime(opts, log, Step::Build, t0);
  if (!ok)
    return false;
  // `main` grows with every input of a session: the part verified before
  // is not verified again.
  Function *main = c.builderState ? c.module.find("main") : nullptr;
  size_t unused = 0;
  size_t &verified = c.builderState ? c.builderState->verifiedMainInsts : unused;
  VerifyOptions vo;
  if (main) {
    vo.trusted = "main";
    vo.trustedInsts = std::min(verified, main->body.insts.size());
    vo.trustedFunctions = c.builderState->verifiedFunctions;
  }
  verifyAfter(c.module, Step::Build, c.options, vo);
  if (main) {
    const auto &insts = main->body.insts;
    verified = insts.size() - (!insts.empty() && insts.back().op == Op::Return ? 1 : 0);
    c.builderState->verifiedFunctions = c.module.functions.size() - 1;
  }
  if (opts.printAfter == "build")
    log << printModule(c.module);
  return true;
}

/// Runs the steps after `build` into one CompiledProgram (a friend of it).
struct PipelineRun {
  const PipelineOptions &opts;
  const CompileOptions &copts;
  DiagEngine &diags;
  std::ostream &log;

  std::shared_ptr<const CompiledProgram> run(Module global, const std::string &entry) {
    std::shared_ptr<CompiledProgram> p(new CompiledProgram());
    p->module_ = std::make_unique<Module>(std::move(global));
    p->entry_ = entry;
    Module &m = *p->module_;
    m.deterministic = copts.deterministic;
    auto step = [&](Step s, auto &&body) {
      if (s > opts.last)
        return false;
      auto t0 = Clock::now();
      if (!body())
        return false;
      reportTime(opts, log, s, t0);
      p->last_ = s;
      if (s <= Step::Fusion)
        verifyAfter(m, s, copts);
      if (opts.printAfter == stepName(s))
        log << printStep(*p, s);
      return true;
    };
    int errors = diags.errorCount();
    if (!step(Step::Flatten, [&] { return flattenGradients(m, diags); }))
      return diags.errorCount() > errors ? nullptr : p;
    if (!step(Step::Autodiff, [&] { return expandGradients(m, diags); }))
      return diags.errorCount() > errors ? nullptr : p;
    if (!opts.spmd)
      return p;
    p->spmd_ = true;
    if (!step(Step::Spmd, [&] {
          lowerToSpmd(m, opts.topology);
          // An update of a call's result moves next to the op that makes
          // it (fusion then joins them), and all_reduce(P @ R) becomes
          // all_reduce(P) @ R when P is the smaller: before `explain`
          // reads the steps, so it shows what moves.
          sinkIntoCalls(m, entry);
          reduceEarly(m);
          return true;
        }))
      return p;
    if (opts.fusion) {
      if (!step(Step::Fusion, [&] {
            // Steps lowering left unread go (`explain` still shows what a
            // statement whose value is never read would move).
            removeDeadCollectives(m);
            // BLAS and cuBLAS take transposed operands as flags.
            foldTransposes(m);
            FusionOptions fo;
            fo.loneSources = opts.target == CodeTarget::Cuda; // no host fills on a device
            fuseModule(m, fo);
            // An index_add adds its rows in the kernel that makes them.
            fuseScatters(m);
            return true;
          }))
        return p;
      if (!step(Step::Kernels, [&] {
            for (const Function &f : m.functions)
              if (isFusedKernel(f)) {
                p->kernels_.push_back({f.name, buildFusedKernel(f)});
                p->kernels_.back().kernel.kernel.deterministic = m.deterministic;
              }
            return true;
          }))
        return p;
    }
    if (!step(Step::MemPlan, [&] {
          p->plan_ = std::make_unique<MemoryPlan>(m);
          return true;
        }))
      return p;
    step(Step::Codegen, [&] {
      for (auto &k : p->kernels_) {
        if (opts.target == CodeTarget::Cuda) {
          p->code_.push_back(
              emitCudaKernel(k.kernel.kernel, "dt_k_" + std::to_string(kernelHash(k.kernel.kernel)))
                  .source);
        } else if (opts.jit) {
          p->code_.push_back(opts.jit->emitLLVM(k.kernel.kernel, true));
        } else {
          CpuJIT jit;
          p->code_.push_back(jit.emitLLVM(k.kernel.kernel, true));
        }
      }
      return true;
    });
    return p;
  }
};

std::shared_ptr<const CompiledProgram> compileProgram(Module global, const std::string &entry,
                                                      const PipelineOptions &opts,
                                                      const CompileOptions &copts,
                                                      DiagEngine &diags, std::ostream &log) {
  PipelineRun r{opts, copts, diags, log};
  return r.run(std::move(global), entry);
}

std::shared_ptr<const CompiledProgram> compileProgram(Compilation &c, const PipelineOptions &opts,
                                                      std::ostream &log) {
  return compileProgram(c.module, "main", opts, c.options, c.diags, log);
}

bool runPipeline(Compilation &s, const PipelineOptions &opts, std::ostream &log) {
  auto p = compileProgram(s, opts, log);
  if (!p)
    return false;
  s.module = p->module();
  return true;
}

std::string printStep(const CompiledProgram &p, Step step) {
  switch (step) {
  case Step::Kernels: {
    std::string out = printModule(p.module());
    for (auto &k : p.kernels())
      out += "\n" + printKernel(k.kernel.kernel);
    return out;
  }
  case Step::MemPlan:
    return p.memoryPlan() ? p.memoryPlan()->print(p.module()) : "";
  case Step::Codegen: {
    std::string out;
    for (size_t i = 0; i < p.kernels().size() && i < p.code().size(); ++i)
      out += "// " + p.kernels()[i].function + "\n" + p.code()[i] + "\n";
    return out;
  }
  default:
    return printModule(p.module());
  }
}

std::string emitAst(const Compilation &s) {
  std::string out;
  for (auto &p : s.builderState->programs)
    out += ast::printProgram(*p);
  return out;
}

} // namespace dt
