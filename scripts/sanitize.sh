#!/usr/bin/env bash
# The whole test suite under AddressSanitizer, LeakSanitizer and UBSan:
# configures and builds ./build-asan with -DDT_SANITIZE=ON, then runs ctest
# there (extra arguments go to ctest, e.g. `-L lang`). The tests get the
# suppressions of tests/sanitizers/ through their ENVIRONMENT (third-party
# leaks only: Open MPI, NVRTC/CUDA, LLVM). Slow: about 3x the plain build.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -B build-asan -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDT_SANITIZE=ON >/dev/null
ninja -C build-asan
cd build-asan
ctest --output-on-failure -j "${DT_JOBS:-2}" "$@"
