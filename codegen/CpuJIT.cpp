// This file implements CpuJIT (see CpuJIT.h): an ORC LLJIT for the host CPU,
// the default pipeline run on each kernel module before it is added, and the
// kernel cache keyed by kernelHash and guarded by the printed kernel text.
#include "codegen/CpuJIT.h"

#include "codegen/CacheFile.h"
#include "codegen/LLVMCodegen.h"
#include "support/Crc32c.h"
#include "support/Diagnostics.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

#ifndef DT_CODEGEN_ID
#define DT_CODEGEN_ID "unknown"
#endif

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

// A disk-cache entry: magic, the identity it was compiled for (compared in
// full, so a hash collision is a miss), the object's CRC-32C (a damaged file
// is a miss, never wrong code), then the object file.
constexpr char kMagic[8] = {'D', 'T', 'K', 'O', 'B', 'J', '1', '\n'};

void putU64(std::string &out, uint64_t v) { out.append((const char *)&v, 8); }

/// The object of `path` when it holds `identity` and an object file that
/// defines `sym`; null otherwise (missing, truncated, foreign, corrupt).
std::unique_ptr<llvm::MemoryBuffer> readEntry(const std::string &path, const std::string &identity,
                                              const std::string &sym) {
  std::string data;
  if (!readCacheFile(path, &data))
    return nullptr;
  size_t at = 0;
  auto take = [&](size_t n) -> const char * {
    if (data.size() - at < n)
      return nullptr;
    const char *p = data.data() + at;
    at += n;
    return p;
  };
  auto takeU64 = [&](uint64_t &v) {
    const char *p = take(8);
    if (p)
      std::memcpy(&v, p, 8);
    return p != nullptr;
  };
  const char *magic = take(sizeof kMagic);
  uint64_t idLen = 0, objLen = 0, crc = 0;
  if (!magic || std::memcmp(magic, kMagic, sizeof kMagic) != 0 || !takeU64(idLen) ||
      idLen != identity.size())
    return nullptr;
  const char *id = take(idLen);
  if (!id || std::memcmp(id, identity.data(), idLen) != 0 || !takeU64(crc) || !takeU64(objLen) ||
      objLen != data.size() - at || crc != crc32c(0, data.data() + at, objLen))
    return nullptr;
  auto buf = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(data.data() + at, objLen), sym);
  auto obj = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return nullptr;
  }
  for (const llvm::object::SymbolRef &s : (*obj)->symbols()) {
    auto name = s.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      return nullptr;
    }
    if (*name == sym)
      return buf;
  }
  return nullptr;
}

/// The cache file of an entry (the layout above).
std::string entryBytes(const std::string &identity, llvm::StringRef obj) {
  std::string out(kMagic, sizeof kMagic);
  putU64(out, identity.size());
  out += identity;
  putU64(out, crc32c(0, obj.data(), obj.size()));
  putU64(out, obj.size());
  out.append(obj.data(), obj.size());
  return out;
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
  int64_t compiles = 0, hits = 0, diskHits = 0;

  /// Native object code of an optimised module for this host.
  llvm::SmallVector<char, 0> emitObject(llvm::Module &m) {
    llvm::SmallVector<char, 0> obj;
    llvm::raw_svector_ostream os(obj);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      throw InternalError("cpu jit: the target cannot emit object files");
    pm.run(m);
    return obj;
  }
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
  // The identity of the object: everything the generated code depends on.
  std::string identity = text + "\nopt " + std::to_string(impl_->opts.optLevel) + "\ncpu " +
                         impl_->tm->getTargetCPU().str() + "\nfeatures " +
                         impl_->tm->getTargetFeatureString().str() + "\nllvm " +
                         LLVM_VERSION_STRING + "\ncodegen " + DT_CODEGEN_ID + "\nsymbol " + sym;
  std::string path;
  if (!impl_->opts.diskCache.empty()) {
    path = impl_->opts.diskCache + "/" + hex64(fnv1a(identity)) + ".dtk";
  }
  std::unique_ptr<llvm::MemoryBuffer> obj;
  if (!path.empty())
    obj = readEntry(path, identity, sym);
  if (obj) {
    ++impl_->diskHits;
  } else {
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = lowerKernelToLLVM(k, ctx, sym);
    impl_->optimize(*m);
    llvm::SmallVector<char, 0> bytes = impl_->emitObject(*m);
    llvm::StringRef ref(bytes.data(), bytes.size());
    if (!path.empty())
      writeCacheFile(impl_->opts.diskCache, path, entryBytes(identity, ref));
    obj = llvm::MemoryBuffer::getMemBufferCopy(ref, sym);
    ++impl_->compiles;
  }
  check(impl_->jit->addObjectFile(std::move(obj)), "adding a kernel object");
  auto addr = check(impl_->jit->lookup(sym), "looking up a kernel");
  KernelFn fn = addr.toPtr<KernelFn>();
  bucket.push_back({std::move(text), fn});
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
int64_t CpuJIT::diskHits() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->diskHits;
}
double CpuJIT::compileSeconds() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->seconds;
}
std::string CpuJIT::hostCPU() const { return impl_->tm->getTargetCPU().str(); }

} // namespace dt
