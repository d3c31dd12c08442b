// This file implements CpuJIT (see CpuJIT.h): an ORC LLJIT for the host CPU,
// the default pipeline run on each kernel module before it is added, and the
// kernel cache keyed by kernelHash and guarded by the printed kernel text.
#include "codegen/CpuJIT.h"

#include "codegen/LLVMCodegen.h"
#include "support/Diagnostics.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <unordered_map>

namespace dt {

namespace {

/// LLVM's target registry is process-wide; register the native target once.
void initNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

template <class T> T check(llvm::Expected<T> v, const char *what) {
  if (!v)
    throw InternalError(std::string("cpu jit: ") + what + ": " + llvm::toString(v.takeError()));
  return std::move(*v);
}

void check(llvm::Error e, const char *what) {
  if (e)
    throw InternalError(std::string("cpu jit: ") + what + ": " + llvm::toString(std::move(e)));
}

} // namespace

struct CpuJIT::Impl {
  Options opts;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm; ///< for the optimisation pipeline
  std::mutex mu;
  struct Entry {
    std::string text;
    KernelFn fn;
  };
  std::unordered_map<uint64_t, std::vector<Entry>> cache;
  int64_t compiles = 0, hits = 0;
  double seconds = 0;

  void optimize(llvm::Module &m) {
    m.setDataLayout(tm->createDataLayout());
    m.setTargetTriple(tm->getTargetTriple().str());
    for (llvm::Function &f : m)
      if (!f.isDeclaration()) {
        f.addFnAttr("target-cpu", tm->getTargetCPU());
        f.addFnAttr("target-features", tm->getTargetFeatureString());
      }
    if (opts.optLevel <= 0)
      return;
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = opts.optLevel >= 2;
    pto.SLPVectorization = opts.optLevel >= 2;
    llvm::PassBuilder pb(tm.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel lvl = opts.optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : opts.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                       : llvm::OptimizationLevel::O3;
    pb.buildPerModuleDefaultPipeline(lvl).run(m, mam);
  }
};

CpuJIT::CpuJIT() : CpuJIT(Options{}) {}

CpuJIT::CpuJIT(Options opts) : impl_(std::make_unique<Impl>()) {
  initNativeTargetOnce();
  impl_->opts = opts;
  // detectHost() fills in the host CPU name and its features.
  auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  jtmb.setCodeGenOptLevel(opts.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                             : llvm::CodeGenOptLevel::Default);
  impl_->tm = check(jtmb.createTargetMachine(), "creating the target machine");
  impl_->jit =
      check(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(), "creating LLJIT");
  llvm::orc::JITDylib &jd = impl_->jit->getMainJITDylib();
  // The libm entry points kernels call are bound to this process's functions,
  // the very ones interpretKernel calls (bitwise-equal transcendentals).
  llvm::orc::SymbolMap libm;
  for (const LibmSymbol &s : kernelLibmSymbols())
    libm[impl_->jit->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                                 llvm::JITSymbolFlags::Exported};
  check(jd.define(llvm::orc::absoluteSymbols(std::move(libm))), "defining libm symbols");
  // Anything else (memset/memcpy emitted by the optimiser) from the process.
  jd.addGenerator(check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                            impl_->jit->getDataLayout().getGlobalPrefix()),
                        "process symbols"));
}

CpuJIT::~CpuJIT() = default;

CpuJIT::KernelFn CpuJIT::compile(const Kernel &k) {
  std::string err = verifyKernel(k);
  if (!err.empty())
    throw InternalError("cpu jit: invalid kernel `" + k.name + "`: " + err);
  std::string text = printKernel(k, false);
  uint64_t h = kernelHash(k);
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<Impl::Entry> &bucket = impl_->cache[h];
  for (const Impl::Entry &e : bucket)
    if (e.text == text) {
      ++impl_->hits;
      return e.fn;
    }
  auto t0 = std::chrono::steady_clock::now();
  char sym[48];
  std::snprintf(sym, sizeof sym, "dtk_%016llx_%zu", (unsigned long long)h, bucket.size());
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m = lowerKernelToLLVM(k, *ctx, sym);
  impl_->optimize(*m);
  check(impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))),
        "adding a kernel module");
  auto addr = check(impl_->jit->lookup(sym), "looking up a kernel");
  KernelFn fn = addr.toPtr<KernelFn>();
  bucket.push_back({std::move(text), fn});
  ++impl_->compiles;
  impl_->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return fn;
}

std::string CpuJIT::emitLLVM(const Kernel &k, bool optimized) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = lowerKernelToLLVM(k, ctx, k.name);
  if (optimized) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->optimize(*m);
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  m->print(os, nullptr);
  return os.str();
}

int64_t CpuJIT::compiles() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->compiles;
}
int64_t CpuJIT::cacheHits() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->hits;
}
double CpuJIT::compileSeconds() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->seconds;
}
std::string CpuJIT::hostCPU() const { return impl_->tm->getTargetCPU().str(); }

} // namespace dt
