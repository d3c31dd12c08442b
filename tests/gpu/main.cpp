// The doctest main of `dt_gpu`, the GPU execution tests (ctest label `gpu`).
// Without a CUDA driver or device it prints "SKIP: no CUDA driver" (with the
// loader's one-line reason) and exits with 77, which ctest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "codegen/CudaLoader.h"

#include <cstdio>

int main(int argc, char **argv) {
  dt::CudaLibraries libs;
  std::string why;
  if (!libs.available(dt::CudaLib::Driver, &why)) {
    std::printf("SKIP: no CUDA driver (%s)\n", why.c_str());
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
