#!/usr/bin/env bash
# Runs dtensor's GPU checks on a GPU machine that has no compiler toolchain or
# package registry, from the prebuilt bundle of scripts/build-gpu-bundle.sh
# (bin/ dtensorc, dt_unit, dt_gpu and benchmarks; lib/ the shared libraries a
# bare image may lack). The CUDA driver, NVRTC, cuBLAS and NCCL come from the
# machine (the toolkit under $CUDA_HOME or /usr/local/cuda, the driver from
# ld.so); dtensor opens them at run time.
#
# usage: gpu-check.sh [BUNDLE_DIR | BUNDLE.tar.gz]   (default: this script's directory)
# Writes every log to $OUT when set (else ./gpu-check-logs). Exit status: 0 when
# every step passed (or was skipped for want of a GPU), 1 otherwise.
set -uo pipefail
ARG=${1:-$(dirname "$0")}
if [ -f "$ARG" ]; then # a bundle.tar.gz: unpack it next to the logs
  mkdir -p "${OUT:-.}/bundle-unpacked"
  tar -C "${OUT:-.}/bundle-unpacked" -xzf "$ARG"
  ARG=$(ls -d "${OUT:-.}"/bundle-unpacked/*/ | head -n 1)
fi
B=$(cd "$ARG" && pwd)
LOGS=${OUT:-$(pwd)/gpu-check-logs}
mkdir -p "$LOGS"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$LOGS/cache}" # NVRTC cache: a second run compiles nothing
status=0

step() { # step NAME CMD...: runs CMD, logs to $LOGS/NAME.log, records failure
  local name=$1
  shift
  echo "== $name: $*"
  "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$LOGS/$name.log"
  case $rc in
    0) echo "== $name: ok" ;;
    77) echo "== $name: SKIP" ;;
    *) echo "== $name: FAILED (rc=$rc)"; status=1 ;;
  esac
  echo "$name $rc" >>"$LOGS/summary.txt"
}

: >"$LOGS/summary.txt"
{ date; uname -a; cat "$B/COMMIT" 2>/dev/null; } >"$LOGS/host.txt"
if command -v nvidia-smi >/dev/null; then
  step nvidia-smi nvidia-smi
else
  echo "nvidia-smi not found" | tee "$LOGS/nvidia-smi.log"
fi

# ctest needs the build tree; the bundle has only the binaries, so run them.
step gpu "$B/bin/dt_gpu" --no-intro=true
# A second run must hit the NVRTC cache (timed in the log).
step gpu-cached bash -c "time '$B/bin/dt_gpu' --no-intro=true"
if [ -x "$B/bin/dt_unit" ]; then # bundled only with DT_BUNDLE_UNIT=1
  step nvrtc "$B/bin/dt_unit" --no-intro=true "--test-case=*nvrtc*,*cuda*"
  step unit "$B/bin/dt_unit" --no-intro=true
fi

for bench in "$B"/bin/*bench*; do
  [ -x "$bench" ] || continue
  step "$(basename "$bench")" "$bench"
done

echo "== summary (logs in $LOGS)"
cat "$LOGS/summary.txt"
exit $status
