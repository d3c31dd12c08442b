// Unit tests of runtime/CudaLoader: the printed search list, the one-line
// message when the driver is missing (this CI machine has no libcuda.so.1),
// and NVRTC / cuBLAS / NCCL loading where the toolkit ships them.
#include "codegen/CudaLoader.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <string>

using namespace dt;

namespace {
bool contains(const std::string &s, const std::string &sub) {
  return s.find(sub) != std::string::npos;
}
} // namespace

TEST_CASE("cuda loader: the search list tries sonames, then extra and system dirs, never stubs") {
  CudaLoaderOptions o;
  o.toolkitDir = "/opt/tk";
  o.extraDirs = {"/my/dir"};
  CudaLibraries libs(o);
  auto drv = libs.searchList(CudaLib::Driver);
  REQUIRE(drv.size() > 4);
  CHECK(drv[0] == "libcuda.so.1");
  CHECK(drv[1] == "libcuda.so");
  CHECK(drv[2] == "/my/dir/libcuda.so.1");
  for (const auto &p : drv) {
    CHECK_FALSE(contains(p, "stubs"));
    CHECK_FALSE(contains(p, "/opt/tk")); // the toolkit ships only a stub libcuda
  }
  auto rtc = libs.searchList(CudaLib::Nvrtc);
  CHECK(rtc[0] == "libnvrtc.so.13");
  bool hasToolkit = false;
  for (const auto &p : rtc)
    hasToolkit |= p == "/opt/tk/lib64/libnvrtc.so.13";
  CHECK(hasToolkit);
  CHECK(libs.searchList(CudaLib::Nccl)[0] == "libnccl.so.2");
}

TEST_CASE("cuda loader: a missing driver is one clear line naming the search") {
  CudaLibraries libs;
  std::string why;
  if (libs.available(CudaLib::Driver, &why)) {
    MESSAGE("libcuda found at " << libs.loadedPath(CudaLib::Driver) << ": a GPU machine");
    return;
  }
  CHECK(why.find('\n') == std::string::npos);
  if (!cudaHeadersAvailable()) {
    CHECK(contains(why, "built without CUDA headers"));
    return;
  }
  if (contains(why, "cuInit failed")) { // a driver without a device
    MESSAGE(why);
    return;
  }
  CHECK(contains(why, "cannot load libcuda.so.1 (no NVIDIA driver on this machine)"));
  CHECK(contains(why, "searched: libcuda.so.1, libcuda.so, "));
  CHECK(contains(why, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  // The throwing accessor reports the same line, every time.
  for (int i = 0; i < 2; ++i) {
    try {
      libs.driver();
      FAIL("driver() should have thrown");
    } catch (const RuntimeFault &e) {
      CHECK(std::string(e.what()) == why);
    }
  }
  CHECK(libs.loadedPath(CudaLib::Driver).empty());
}

TEST_CASE("cuda loader: nvrtc loads from the toolkit (nvrtc label)") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  std::string why;
  REQUIRE_MESSAGE(libs.available(CudaLib::Nvrtc, &why), why);
  CHECK(contains(libs.loadedPath(CudaLib::Nvrtc), "libnvrtc.so"));
  MESSAGE("nvrtc: " << libs.loadedPath(CudaLib::Nvrtc));
}

TEST_CASE("cuda loader: cublas, cublasLt and nccl resolve every entry point when present") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  for (CudaLib lib : {CudaLib::Cublas, CudaLib::CublasLt, CudaLib::Nccl}) {
    std::string why;
    bool ok = libs.available(lib, &why);
    if (ok) {
      MESSAGE(std::string(cudaLibName(lib)) << ": " << libs.loadedPath(lib));
    } else {
      // Missing is allowed; a library that opens but lacks a symbol is not.
      CHECK_FALSE(contains(why, "has no symbol"));
      CHECK(contains(why, "cannot load"));
    }
  }
}
