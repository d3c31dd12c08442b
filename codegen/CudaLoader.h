// This file implements the run-time loading of the CUDA libraries: the driver
// (libcuda), NVRTC, cuBLAS, cuBLASLt and NCCL are opened with dlopen when the
// CUDA backend first needs them, never linked, so one `dtensorc` binary runs on
// machines without a GPU and `--backend cuda` there fails with one line that
// names what is missing and where it was searched.
//
// The entry points of every library live in a table (CudaDriverApi, ...) owned
// by a CudaLibraries object that the Session (or a test) owns: no globals, so
// two Sessions may point at two toolkits. The tables' layouts come from the
// real CUDA headers (`decltype(&cuLaunchKernel)`); they are defined in the
// internal header codegen/CudaApi.h, which only the dtensor library's own
// sources include, because the CUDA headers are a private build dependency.
// Built without the CUDA headers, every load reports "built without CUDA
// headers" instead.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dt {

/// The CUDA libraries dtensor opens at run time.
enum class CudaLib { Driver, Nvrtc, Cublas, CublasLt, Nccl };
constexpr int kNumCudaLibs = 5;

/// Short library name for messages: `libcuda`, `libnvrtc`, ...
const char *cudaLibName(CudaLib lib);

/// True when dtensor was compiled against the CUDA headers (DT_HAVE_CUDA_HEADERS);
/// without them no CUDA library can be used.
bool cudaHeadersAvailable();

/// Where to look for the libraries (a Session option).
struct CudaLoaderOptions {
  /// The CUDA toolkit root; its lib64/ and lib/ are searched (never lib64/stubs,
  /// whose libcuda is a link-time stub that cannot run anything).
  std::string toolkitDir = "/usr/local/cuda";
  /// Searched before everything else, in order.
  std::vector<std::string> extraDirs;
  /// The defaults plus `$CUDA_HOME` / `$CUDA_PATH` as the toolkit when set.
  static CudaLoaderOptions fromEnvironment();
};

struct CudaDriverApi;   ///< defined in codegen/CudaApi.h
struct CudaNvrtcApi;    ///< defined in codegen/CudaApi.h
struct CudaCublasApi;   ///< defined in codegen/CudaApi.h
struct CudaCublasLtApi; ///< defined in codegen/CudaApi.h
struct CudaNcclApi;     ///< defined in codegen/CudaApi.h

/// The opened CUDA libraries and their entry-point tables. Each library is
/// opened on first use and stays open until the object dies. Thread-safe: the
/// ranks of a virtual mesh are threads and may ask concurrently.
class CudaLibraries {
public:
  explicit CudaLibraries(CudaLoaderOptions opts = CudaLoaderOptions::fromEnvironment());
  ~CudaLibraries();
  CudaLibraries(const CudaLibraries &) = delete;
  CudaLibraries &operator=(const CudaLibraries &) = delete;

  /// The candidates tried for `lib`, in order: bare sonames first (resolved by
  /// the dynamic linker: LD_LIBRARY_PATH, ld.so.cache), then absolute paths.
  std::vector<std::string> searchList(CudaLib lib) const;

  /// The tables; each loads its library on first use and throws RuntimeFault
  /// with a one-line message (no prefix) when it cannot. `driver()` also runs
  /// cuInit(0) once.
  const CudaDriverApi &driver();
  const CudaNvrtcApi &nvrtc();
  const CudaCublasApi &cublas();
  const CudaCublasLtApi &cublasLt();
  const CudaNcclApi &nccl();

  /// Loads `lib` if possible. Never throws: returns false and puts the
  /// one-line reason in `why`.
  bool available(CudaLib lib, std::string *why = nullptr);
  /// The file that was opened for `lib` ("" when not loaded).
  std::string loadedPath(CudaLib lib);

private:
  struct Slot {
    bool tried = false;
    void *handle = nullptr;
    std::string path;  ///< what was opened
    std::string error; ///< the one-line failure, when tried and failed
  };
  void load(CudaLib lib); ///< under mu_; fills the slot and the table
  void require(CudaLib lib);
  void *openFirst(CudaLib lib, std::string *opened, std::string *error) const;

  CudaLoaderOptions opts_;
  std::mutex mu_;
  std::array<Slot, kNumCudaLibs> slots_;
  std::unique_ptr<CudaDriverApi> driver_;
  std::unique_ptr<CudaNvrtcApi> nvrtc_;
  std::unique_ptr<CudaCublasApi> cublas_;
  std::unique_ptr<CudaCublasLtApi> cublasLt_;
  std::unique_ptr<CudaNcclApi> nccl_;
};

} // namespace dt
