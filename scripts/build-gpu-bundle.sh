#!/usr/bin/env bash
# Builds the self-contained bundle that scripts/gpu-check.sh runs on a GPU
# machine with no compiler toolchain or package registry: dtensorc and the
# test binaries with LLVM linked statically (DT_STATIC_LLVM=ON), stripped, the
# few shared libraries a bare machine may lack copied beside them, the stdlib
# and the tests' .dt files, and gpu-check.sh itself. The CUDA libraries are
# NOT bundled: dtensor opens them at run time from the GPU machine's driver and
# toolkit (codegen/CudaLoader.h).
#
# usage: scripts/build-gpu-bundle.sh [BUNDLE_DIR]   (default: build-gpu/bundle)
# env:   DT_BUNDLE_MAX_MB (default 60): fail when the bundle is larger.
#        DT_BUNDLE_UNIT=1: also ship dt_unit (the whole CPU suite; each binary
#        that uses the JIT carries its own ~45 MB copy of static LLVM, so it
#        does not fit the 60 MB budget together with the rest).
# Also writes BUNDLE_DIR.tar.gz (what to carry when space is tight).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${DT_BUNDLE_BUILD:-build-gpu}
OUT=${1:-$BUILD/bundle}
MAX_MB=${DT_BUNDLE_MAX_MB:-60}

start=$(date +%s)
# OpenBLAS statically too when its archive exists: the shared library is a
# 36 MB multi-CPU build, the archive contributes only the GEMM paths used.
blas=()
for a in /usr/lib/x86_64-linux-gnu/libopenblas.a /usr/lib64/libopenblas.a; do
  if [ -e "$a" ]; then
    blas=("-DOPENBLAS_LIB:STRING=$(readlink -f "$a");-lgfortran;-lpthread")
    break
  fi
done
# --gc-sections drops the unreferenced functions of the static LLVM archives
# (built with -ffunction-sections).
cmake -G Ninja -B "$BUILD" -S . -DCMAKE_BUILD_TYPE=Release -DDT_STATIC_LLVM=ON "${blas[@]}" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=gold -Wl,--gc-sections,--icf=all" >/dev/null
# The GPU benchmarks are the bench/ targets named *gpu* or *cuda*.
targets=(dtensorc tests/dt_gpu)
[ "${DT_BUNDLE_UNIT:-0}" = 1 ] && targets+=(tests/dt_unit)
for t in $(ninja -C "$BUILD" -t targets all 2>/dev/null |
  sed -n 's/^\(bench\/[A-Za-z0-9_]*\(gpu\|cuda\)[A-Za-z0-9_]*\): phony.*/\1/p'); do
  targets+=("$t")
done
ninja -C "$BUILD" "${targets[@]}"
echo "build: $(( $(date +%s) - start )) s"

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for t in "${targets[@]}"; do
  cp "$BUILD/$t" "$OUT/bin/"
done
strip --strip-unneeded "$OUT"/bin/*

# Shared libraries outside glibc that the binaries need (OpenBLAS and its
# Fortran runtime, libstdc++ ...): copied so an older or minimal image works.
for b in "$OUT"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda.so*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
strip --strip-unneeded "$OUT"/lib/* 2>/dev/null || true

cp -r stdlib "$OUT/" 2>/dev/null || true
mkdir -p "$OUT/tests"
cp -r tests/lang "$OUT/tests/" 2>/dev/null || true
cp scripts/gpu-check.sh "$OUT/"
git -C "$ROOT" rev-parse HEAD > "$OUT/COMMIT" 2>/dev/null || true

kb=$(du -sk "$OUT" | cut -f1)
tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
echo "bundle: $OUT  $((kb / 1024)) MB ($kb KiB); $OUT.tar.gz $(( $(stat -c %s "$OUT.tar.gz") / 1048576 )) MB"
du -sh "$OUT"/bin/* "$OUT"/lib 2>/dev/null | sed 's/^/  /'
if [ "$kb" -gt $((MAX_MB * 1024)) ]; then
  echo "error: bundle is larger than $MAX_MB MB" >&2
  exit 1
fi
