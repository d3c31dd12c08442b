#!/usr/bin/env bash
# Checks the semantics of CUDA kernels emitted by codegen/CudaEmitter without a
# GPU: tests/cudasim (the ctest `cudasim`, target dt_cudasim) compiles each
# distinct emitted kernel with g++ against a host shim (a fiber per CUDA
# thread, barriers and warp shuffles between them) and compares it with the kernel-IR
# interpreter. Builds dt_cudasim in the build dir (default ./build, or $1).
# CUDASIM_ONLY=NAME runs only the kernels whose name holds NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --build "$BUILD" --target dt_cudasim >/dev/null
"$BUILD/tests/dt_cudasim" "$WORK" "$(pwd)/tests/cudasim/shim.h"
