#!/usr/bin/env bash
# Checks the semantics of CUDA kernels emitted by codegen/CudaEmitter without a
# GPU: tests/cudasim compiles each emitted kernel with g++ against a host shim
# (one thread per CUDA thread, real barriers and warp shuffles) and compares it
# with the kernel-IR interpreter. Needs the built per-folder libraries
# libdt_*.a (default build dir ./build, or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
g++ -std=c++20 -O1 -I. -Iinclude -isystem /usr/lib/llvm-19/include tests/cudasim/cudasim.cpp \
  -Wl,--start-group "$BUILD"/libdt_*.a -Wl,--end-group -L/usr/lib/llvm-19/lib -Wl,-rpath,/usr/lib/llvm-19/lib -lLLVM -lopenblas \
  -ldl -lpthread -o "$WORK/cudasim"
"$WORK/cudasim" "$WORK" "$(pwd)/tests/cudasim/shim.h"
