// This file implements the NVRTC driver of the CUDA backend: it compiles a
// CUDA C++ translation unit (what codegen/CudaEmitter produces) to PTX or to a
// CUBIN for one architecture ("sm_90"), returns NVRTC's log, and can treat any
// warning as an error (the CI test `nvrtc` compiles every emitted kernel that
// way, for sm_80 and sm_90, without a GPU: NVRTC needs none).
//
// Results are cached on disk, keyed by a content hash of (source, arch,
// options, output kind, NVRTC version), so a second run of the same program
// compiles nothing. Files are written atomically (a temporary file, then
// rename), so concurrent processes sharing the cache never see a torn entry.
// The cache directory is a Session option; defaultCudaCacheDir() gives the
// conventional one. NVRTC itself is opened at run time through CudaLibraries.
#pragma once

#include "codegen/CudaLoader.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace dt {

/// What NVRTC should produce.
enum class NvrtcOutput { Ptx, Cubin };

/// One compilation.
struct NvrtcRequest {
  std::string source;             ///< a complete CUDA C++ translation unit
  std::string name = "kernel.cu"; ///< the file name in NVRTC's messages
  std::string arch = "sm_90";     ///< `sm_XY`; a `compute_XY` arch gives PTX only
  NvrtcOutput output = NvrtcOutput::Cubin;
  std::vector<std::string> options; ///< extra NVRTC options, e.g. `-lineinfo`
  /// Fail when NVRTC prints anything at all (warnings included).
  bool warningsAsErrors = true;
};

/// The outcome of a compilation. A compile error is not an exception: `ok` is
/// false and `log` says why.
struct NvrtcResult {
  bool ok = false;
  std::string log;        ///< NVRTC's log, trimmed
  std::string binary;     ///< PTX text (NUL-terminated) or CUBIN bytes
  bool fromCache = false; ///< true when nothing was compiled
  std::string cacheFile;  ///< the cache entry read or written ("" without a cache)
};

/// `$XDG_CACHE_HOME/dtensor`, else `$HOME/.cache/dtensor`, else "" (no cache).
std::string defaultCudaCacheDir();

/// The options every compilation gets besides the request's own: the
/// architecture, C++17, no fast math (the RNG and transcendental results must
/// match the CPU to a documented tolerance).
std::vector<std::string> nvrtcBaseOptions(const std::string &arch);

/// A 128-bit content hash (32 hex digits) of everything that determines the
/// output of a compilation.
std::string nvrtcCacheKey(const NvrtcRequest &req, int nvrtcMajor, int nvrtcMinor);

/// Compiles CUDA C++ with NVRTC, through an optional on-disk cache.
/// Thread-safe: NVRTC programs are independent and the cache is atomic.
class NvrtcCompiler {
public:
  /// `cacheDir` empty: no cache. The directory is created on first write.
  NvrtcCompiler(CudaLibraries &libs, std::string cacheDir);

  /// Compiles (or reads from the cache). Throws RuntimeFault only when NVRTC
  /// cannot be loaded; compile errors come back in the result.
  NvrtcResult compile(const NvrtcRequest &req);
  /// compile(), `quick`: with kQuickOption, for a launch-bound kernel (a few
  /// thousand points) that gains nothing from the full optimizer. It halves
  /// NVRTC's time (its optimizer and ptxas do less; the arithmetic, IEEE
  /// without contraction, is the same). An NVRTC that rejects the option
  /// (before 12.8) compiles fully.
  NvrtcResult compileTier(NvrtcRequest req, bool quick);
  static constexpr const char *kQuickOption = "--Ofast-compile=min";

  /// NVRTC's version {major, minor}; loads NVRTC (throws when it cannot).
  std::pair<int, int> version();
  /// The `sm_XY` architectures this NVRTC can target.
  std::vector<std::string> supportedArchs();

  struct Stats {
    int64_t compiles = 0;  ///< NVRTC invocations
    int64_t cacheHits = 0; ///< results read from disk
  };
  Stats stats() const;
  const std::string &cacheDir() const { return cacheDir_; }

private:
  NvrtcResult compileUncached(const NvrtcRequest &req);
  CudaLibraries &libs_;
  std::string cacheDir_;
  mutable std::mutex mu_;
  Stats stats_;
};

} // namespace dt
