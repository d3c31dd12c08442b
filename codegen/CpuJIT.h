// This file implements CpuJIT, the CPU kernel compiler of a Session: kernel IR
// -> LLVM IR (codegen/LLVMCodegen) -> the O2 pipeline for the host CPU ->
// native code in an ORC LLJIT, with a content-hash cache.
//
// Needs: verified kernels. Guarantees: compile(k) returns a function with the
// run-time ABI of KernelIR.h; an unchanged kernel (same kernelHash and the
// same printed text, which guards hash collisions) is compiled once per
// CpuJIT, whatever sizes it later runs on (sizes are run-time params, so a new
// batch size never recompiles). Returned functions stay valid until the CpuJIT
// is destroyed.
//
// State: everything lives in the CpuJIT object (one per Session; no globals).
// The only process-wide step is LLVM's native-target registration, done once
// through a function-local std::once_flag because LLVM's target registry is
// itself process-global. compile() is thread-safe (rank threads share one
// CpuJIT); the kernels it returns may run concurrently.
#pragma once

#include "codegen/KernelIR.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dt {

class CpuJIT {
public:
  using KernelFn = void (*)(void **, const int64_t *);

  struct Options {
    /// 0..3: the PassBuilder default pipeline level. O2 (with the loop and
    /// SLP vectorizers) is the default: on the fused benchmark it runs as fast
    /// as O3 and compiles ~1.5x faster.
    int optLevel = 2;
    /// A folder of compiled kernels kept across processes (empty: none). A
    /// kernel is compiled once per machine: later runs load its object file,
    /// keyed by the kernel text, the opt level, the host CPU and features,
    /// the LLVM version and the code generator's sources. An unreadable,
    /// foreign or corrupt entry is compiled again (and rewritten); a folder
    /// that cannot be written only costs the compiles.
    std::string diskCache;
  };

  CpuJIT();
  explicit CpuJIT(Options opts);
  ~CpuJIT();
  CpuJIT(const CpuJIT &) = delete;
  CpuJIT &operator=(const CpuJIT &) = delete;

  /// Returns the native code for `k`, compiling it on a cache miss (or
  /// loading it from the disk cache).
  /// InternalError for an invalid kernel or an LLVM failure.
  KernelFn compile(const Kernel &k);

  /// Compiles (or loads) every kernel of `kernels` not in the cache yet on up
  /// to `threads` threads, each with its own LLVM context and target
  /// machine, then adds them to the JIT: the later compile() calls are
  /// answered from the cache (the first one of each still counts as its
  /// compile, not a hit). A kernel that fails is left to compile(), which
  /// reports the error. Thread-safe like compile().
  void precompile(const std::vector<const Kernel *> &kernels, int threads);

  /// LLVM IR text of `k` (optimised for the host when `optimized`), for
  /// `dtensorc --emit=llvm` and tests; does not touch the cache.
  std::string emitLLVM(const Kernel &k, bool optimized);

  int64_t compiles() const;      ///< kernels compiled (cache misses)
  int64_t cacheHits() const;     ///< compile() calls answered from the cache
  int64_t diskHits() const;      ///< kernels loaded from Options::diskCache
  double compileSeconds() const; ///< total wall time spent compiling
  std::string hostCPU() const;   ///< the CPU name code is generated for

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace dt
