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

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
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

/// Native object code of an optimised module, by `tm` (one per thread:
/// a TargetMachine is not shared between concurrent code generations).
llvm::SmallVector<char, 0> emitObjectWith(llvm::TargetMachine &tm, llvm::Module &m) {
  llvm::SmallVector<char, 0> obj;
  llvm::raw_svector_ostream os(obj);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw InternalError("cpu jit: the target cannot emit object files");
  pm.run(m);
  return obj;
}

/// The default pipeline of `optLevel` for `tm`'s CPU (0: attributes only).
void optimizeWith(llvm::TargetMachine &tm, int optLevel, llvm::Module &m) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  for (llvm::Function &f : m)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", tm.getTargetCPU());
      f.addFnAttr("target-features", tm.getTargetFeatureString());
    }
  if (optLevel <= 0)
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = optLevel >= 2;
  pto.SLPVectorization = optLevel >= 2;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel lvl = optLevel == 1   ? llvm::OptimizationLevel::O1
                                : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                : llvm::OptimizationLevel::O3;
  pb.buildPerModuleDefaultPipeline(lvl).run(m, mam);
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
    bool precompiled = false; ///< made by precompile(), not yet asked for
  };
  std::unordered_map<uint64_t, std::vector<Entry>> cache;
  int64_t compiles = 0, hits = 0, diskHits = 0;

  double seconds = 0;
  /// Makes a TargetMachine per precompile thread.
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb;

  /// One kernel to compile: its cache key and, once made, its object.
  struct Job {
    const Kernel *kernel = nullptr;
    std::string text, sym, identity, path;
    uint64_t hash = 0;
    size_t index = 0; ///< its place in the hash's bucket (the symbol's suffix)
    std::unique_ptr<llvm::MemoryBuffer> obj;
    bool fromDisk = false;
  };

  /// The symbol, the disk-cache identity and path of a kernel that will be
  /// entry `index` of its hash's bucket.
  Job job(const Kernel &k, std::string text, uint64_t h, size_t index) const {
    Job j;
    j.kernel = &k;
    j.text = std::move(text);
    j.hash = h;
    j.index = index;
    char sym[48];
    std::snprintf(sym, sizeof sym, "dtk_%016llx_%zu", (unsigned long long)h, index);
    j.sym = sym;
    // The identity of the object: everything the generated code depends on.
    j.identity = j.text + "\nopt " + std::to_string(opts.optLevel) + "\ncpu " +
                 tm->getTargetCPU().str() + "\nfeatures " + tm->getTargetFeatureString().str() +
                 "\nllvm " + LLVM_VERSION_STRING + "\ncodegen " + DT_CODEGEN_ID + "\nsymbol " +
                 j.sym;
    if (!opts.diskCache.empty())
      j.path = opts.diskCache + "/" + hex64(fnv1a(j.identity)) + ".dtk";
    return j;
  }

  /// Fills j.obj from the disk cache or by compiling with `machine`.
  void makeObject(Job &j, llvm::TargetMachine &machine) const {
    if (!j.path.empty())
      j.obj = readEntry(j.path, j.identity, j.sym);
    if (j.obj) {
      j.fromDisk = true;
      return;
    }
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = lowerKernelToLLVM(*j.kernel, ctx, j.sym);
    optimizeWith(machine, opts.optLevel, *m);
    llvm::SmallVector<char, 0> bytes = emitObjectWith(machine, *m);
    llvm::StringRef ref(bytes.data(), bytes.size());
    if (!j.path.empty())
      writeCacheFile(opts.diskCache, j.path, entryBytes(j.identity, ref));
    j.obj = llvm::MemoryBuffer::getMemBufferCopy(ref, j.sym);
  }

  /// Adds a made object to the JIT and the cache (the caller holds `mu`).
  KernelFn add(Job &j, bool precompiled) {
    check(jit->addObjectFile(std::move(j.obj)), "adding a kernel object");
    auto addr = check(jit->lookup(j.sym), "looking up a kernel");
    KernelFn fn = addr.toPtr<KernelFn>();
    cache[j.hash].push_back({std::move(j.text), fn, precompiled});
    ++(j.fromDisk ? diskHits : compiles);
    return fn;
  }

  void optimize(llvm::Module &m) { optimizeWith(*tm, opts.optLevel, m); }
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
  impl_->jtmb = jtmb;
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
  for (Impl::Entry &e : bucket)
    if (e.text == text) {
      // A precompiled kernel's first compile() is its compile, not a hit.
      impl_->hits += !e.precompiled;
      e.precompiled = false;
      return e.fn;
    }
  auto t0 = std::chrono::steady_clock::now();
  Impl::Job j = impl_->job(k, std::move(text), h, bucket.size());
  impl_->makeObject(j, *impl_->tm);
  KernelFn fn = impl_->add(j, false);
  impl_->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return fn;
}

void CpuJIT::precompile(const std::vector<const Kernel *> &kernels, int threads) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Impl::Job> jobs;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const Kernel *k : kernels) {
      if (!verifyKernel(*k).empty())
        continue; // compile() reports it
      std::string text = printKernel(*k, false);
      uint64_t h = kernelHash(*k);
      auto it = impl_->cache.find(h);
      size_t have = it == impl_->cache.end() ? 0 : it->second.size();
      bool known = false;
      for (size_t e = 0; e < have && !known; ++e)
        known = it->second[e].text == text;
      size_t index = have;
      for (const Impl::Job &o : jobs)
        if (o.hash == h) {
          known |= o.text == text;
          ++index;
        }
      if (!known)
        jobs.push_back(impl_->job(*k, std::move(text), h, index));
    }
  }
  threads = std::min<int>(threads, (int)jobs.size());
  if (threads < 2)
    return; // compile() makes them one by one, as fast
  std::atomic<size_t> next{0};
  auto work = [&] {
    // A TargetMachine of its own: code generation mutates it.
    auto machine = impl_->jtmb->createTargetMachine();
    if (!machine) {
      llvm::consumeError(machine.takeError());
      return;
    }
    for (size_t i; (i = next++) < jobs.size();) {
      try {
        impl_->makeObject(jobs[i], **machine);
      } catch (const std::exception &) {
        jobs[i].obj.reset(); // compile() compiles it again and reports the error
      }
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < threads; ++t)
      pool.emplace_back(work);
  } catch (const std::system_error &) {
    // No more threads to be had (a process limit): fewer compile in parallel.
  }
  work();
  for (auto &t : pool)
    t.join();
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (Impl::Job &j : jobs) {
    // Only where its symbol's place is still free (a concurrent compile()
    // may have taken it: that one is kept, this object dropped).
    std::vector<Impl::Entry> &bucket = impl_->cache[j.hash];
    if (j.obj && bucket.size() == j.index)
      impl_->add(j, true);
  }
  impl_->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
