// The doctest main of `dt_gpu`, the GPU execution tests (ctest label `gpu`).
// Without a CUDA driver or device it prints "SKIP: no CUDA driver" (with the
// loader's one-line reason) and exits with 77, which ctest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "codegen/CudaLoader.h"

#include <csignal>
#include <cstdio>
#include <execinfo.h>
#include <unistd.h>

namespace {
/// A crash on a GPU machine (no debugger there) prints the native stack:
/// `lib(+offset)` lines that `addr2line -f -e` resolves against the
/// unstripped build. doctest's own handler reports the test case, restores
/// this one and raises the signal again.
void printStack(int sig) {
  void *frames[64];
  int n = backtrace(frames, 64);
  const char msg[] = "dt_gpu: fatal signal; native stack:\n";
  (void)!write(2, msg, sizeof msg - 1);
  backtrace_symbols_fd(frames, n, 2);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
} // namespace

int main(int argc, char **argv) {
  dt::CudaLibraries libs;
  std::string why;
  if (!libs.available(dt::CudaLib::Driver, &why)) {
    std::printf("SKIP: no CUDA driver (%s)\n", why.c_str());
    return 77;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    std::signal(sig, printStack);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
