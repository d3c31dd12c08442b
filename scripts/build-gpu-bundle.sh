#!/usr/bin/env bash
# Builds the self-contained bundle that scripts/gpu-check.sh runs on a GPU
# machine with no compiler toolchain or package registry: dtensorc, the test
# binaries and the GPU benchmarks over one shared library, libdtensor_all.so,
# that holds every layer and LLVM linked statically (DT_STATIC_LLVM=ON: one
# copy of LLVM for all of them), stripped, the few shared libraries a bare
# machine may lack copied beside them, the stdlib, the tests' and examples'
# .dt files, and gpu-check.sh itself. The CUDA libraries are
# NOT bundled: dtensor opens them at run time from the GPU machine's driver and
# toolkit (codegen/CudaLoader.h).
#
# usage: scripts/build-gpu-bundle.sh [BUNDLE_DIR]   (default: build-gpu/bundle)
# env:   DT_BUNDLE_MAX_MB (default 60, 64 with DT_BUNDLE_UNIT=1): fail when
#        the bundle is larger.
#        DT_BUNDLE_UNIT=1: also ship dt_unit (the CPU suite; gpu-check.sh then
#        runs its nvrtc cases against the GPU machine's NVRTC).
# Also writes BUNDLE_DIR.tar.gz (what to carry when space is tight).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${DT_BUNDLE_BUILD:-build-gpu}
OUT=${1:-$BUILD/bundle}
# dt_unit adds about 4 MB: a bundle with it may take up to 64 MB (what a
# device call carries), the carried .tar.gz stays near 22 MB.
MAX_MB=${DT_BUNDLE_MAX_MB:-$([ "${DT_BUNDLE_UNIT:-0}" = 1 ] && echo 64 || echo 60)}

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
# (built with -ffunction-sections). The binaries find lib/ through their
# RPATH ($ORIGIN/../lib), so nothing else a process loads (Python's torch in
# gpu-check.sh's peers step) sees the bundled libstdc++.
cmake -G Ninja -B "$BUILD" -S . -DCMAKE_BUILD_TYPE=Release -DDT_STATIC_LLVM=ON "${blas[@]}" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=gold -Wl,--gc-sections,--icf=all" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=gold -Wl,--gc-sections,--icf=all" \
  "-DCMAKE_BUILD_RPATH=\$ORIGIN/../lib" >/dev/null
# The GPU benchmarks are the bench/ targets named *gpu* or *cuda*.
targets=(dtensorc tests/dt_gpu)
[ "${DT_BUNDLE_UNIT:-0}" = 1 ] && targets+=(tests/dt_unit)
for t in $(ninja -C "$BUILD" -t targets all 2>/dev/null |
  sed -n 's/^\(bench\/[A-Za-z0-9_]*\(gpu\|cuda\)[A-Za-z0-9_]*\): .*/\1/p' | sort -u); do
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

cp -r stdlib examples "$OUT/" 2>/dev/null || true
rm -rf "$OUT/examples/embed"
mkdir -p "$OUT/tests"
cp -r tests/lang tests/diff "$OUT/tests/" 2>/dev/null || true
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
