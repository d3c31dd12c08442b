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
# env: ONLY (step groups: gpu, bench, examples, random, unit, profile, peers),
#      GPU_LIMIT, BENCH_LIMIT, VERIFY_LIMIT, RANDOM_LIMIT, PROFILE_LIMIT,
#      PEERS_LIMIT (seconds per step),
#      BENCH_ARGS, PEERS_ARGS (e.g. --quick), and dt_gpu's DT_GPU_RANDOM,
#      DT_GPU_FAULT_TIMEOUT.
#
# Through a lent machine whose $OUT returns at most 8 files: build the bundle
# here, carry build-gpu/bundle.tar.gz, keep the logs outside $OUT and tar them
# back. The twelfth session's runs on an H100 and the thirteenth's on an H200
# (a fresh machine starts in about 30 s; every step below passed there, in
# 40-300 s a run):
#   R=$OUT; export DT_GPU_FAULT_TIMEOUT=10 DT_GPU_RANDOM=24
#   OUT=/tmp/l1 ONLY=gpu,bench GPU_LIMIT=200 BENCH_LIMIT=120 \
#     bash scripts/gpu-check.sh build-gpu/bundle.tar.gz > $R/c1.txt 2>&1
#   OUT=/tmp/l2 ONLY=peers,profile PEERS_ARGS=--quick bash scripts/gpu-check.sh ... > $R/c2.txt 2>&1
#   OUT=/tmp/l3 ONLY=examples,random VERIFY_LIMIT=30 bash scripts/gpu-check.sh ... > $R/c3.txt 2>&1
#   tar czf $R/logs.tgz -C /tmp l1 l2 l3
# The sixteenth session's H100 runs: the diff suite cold in 40-48 s (kernels
# compile on the host's cores before a program's first step; 165+ s before),
# dt_gpu's units 23 s, cuda_bench 44-50 s, 8 random programs 7 s.
# Kernel by kernel (Firecracker machines): ncu --clock-control none
# --cache-control none --metrics gpu__time_duration.sum --csv BIN/dtensorc run
# --backend cuda PROGRAM (the thirteenth session's numbers in docs/performance.md).
# A crash in dt_gpu prints a native stack (lib(+offset) lines): resolve them
# with `addr2line -f -e build-gpu/libdtensor_all.so OFFSET` here.
set -uo pipefail
ARG=${1:-$(dirname "$0")}
if [ -f "$ARG" ]; then # a bundle.tar.gz: unpack it in a temporary folder
  UNPACK=$(mktemp -d "${TMPDIR:-/tmp}/dt-bundle.XXXXXX")
  tar -C "$UNPACK" -xzf "$ARG"
  ARG=$(ls -d "$UNPACK"/*/ | head -n 1)
fi
B=$(cd "$ARG" && pwd)
LOGS=${OUT:-$(pwd)/gpu-check-logs}
mkdir -p "$LOGS"
# The binaries find the bundle's lib/ through their RPATH ($ORIGIN/../lib).
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-${TMPDIR:-/tmp}/dt-gpu-cache}" # NVRTC cache: a second run compiles nothing
status=0

step() { # step NAME SECONDS CMD...: runs CMD under a time limit, logs to $LOGS/NAME.log
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*"
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n "${TAIL:-25}" "$LOGS/$name.log"
  case $rc in
    0) echo "== $name: ok ($(( $(date +%s) - t0 )) s)" ;;
    77) echo "== $name: SKIP" ;;
    124|137) echo "== $name: TIMEOUT after $limit s"; status=1 ;;
    *) echo "== $name: FAILED (rc=$rc, $(( $(date +%s) - t0 )) s)"; status=1 ;;
  esac
  echo "$name $rc" >>"$LOGS/summary.txt"
}

: >"$LOGS/summary.txt"
{ date; uname -a; cat "$B/COMMIT" 2>/dev/null; } >"$LOGS/host.txt"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOGS/nvidia-smi.log"
else
  echo "nvidia-smi not found" | tee "$LOGS/nvidia-smi.log"
fi
# ${ONLY:-all}: a comma list of step groups to run (gpu, bench, examples, random, unit, profile, peers).
want() { [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]; }

# ctest needs the build tree; the bundle has only the binaries, so run them.
# Order: what must pass first, then the benchmarks, then the longer checks.
if want gpu; then
  step gpu "${GPU_LIMIT:-300}" "$B/bin/dt_gpu" --no-intro=true --test-case-exclude="*random*"
  # The GEMMs through cublasLt's plans (CudaOptions::cublasLt, opt-in until
  # this passes on a GPU): every matmul flag, batch and dtype against the cpu.
  step gpu-lt 120 env DTENSOR_CUDA_GEMM=lt "$B/bin/dt_gpu" --no-intro=true "--test-case=cuda backend*"
fi
if want bench; then
  for bench in "$B"/bin/*bench*; do
    [ -x "$bench" ] || continue
    TAIL=40 step "$(basename "$bench")" "${BENCH_LIMIT:-240}" "$bench" ${BENCH_ARGS:-}
  done
fi
if want examples; then
  # Every example on --backend cuda against the reference evaluator, as a user runs it.
  for f in "$B"/examples/*.dt; do
    step "verify-$(basename "$f" .dt)" "${VERIFY_LIMIT:-120}" "$B/bin/dtensorc" verify --backend cuda --fault-timeout 20 "$f"
  done
  step run-mlp_tp 60 "$B/bin/dtensorc" run --backend cuda --stats "$B/examples/mlp_tp.dt"
fi
if want random; then
  # The random programs (their kernels differ: NVRTC compiles, then its disk cache).
  step gpu-random "${RANDOM_LIMIT:-200}" "$B/bin/dt_gpu" --no-intro=true --test-case="*random*"
fi
if [ -x "$B/bin/dt_unit" ] && want unit; then # bundled only with DT_BUNDLE_UNIT=1
  step nvrtc 120 "$B/bin/dt_unit" --no-intro=true "--test-case=*nvrtc*,*cuda*"
fi
# Where the GPU programs' steps go: rank 0's time per instruction (--profile),
# when the repo's bench/peers is beside the bundle (python3 writes the programs).
PROGRAMS_PY=$(cd "$(dirname "$0")" && pwd)/../bench/peers/programs.py
if want profile && [ -f "$PROGRAMS_PY" ] && nvidia-smi -L >/dev/null 2>&1; then
  for p in modulation_gpu:20 mlp_gpu:5; do
    name=${p%%:*}
    python3 -c "import sys; sys.path.insert(0, '$(dirname "$PROGRAMS_PY")'); from programs import dt_program; print(dt_program('$name', ${p##*:}))" >"$LOGS/$name.dt"
    TAIL=30 step "profile-$name" "${PROFILE_LIMIT:-90}" "$B/bin/dtensorc" run --backend cuda --profile --stats "$LOGS/$name.dt"
  done
fi
# Modulation's kernels one by one on the device (ncu, when the machine has it:
# Firecracker machines do), the last step's launches summed by ncu_table.py.
NCU_TABLE=$(cd "$(dirname "$0")" && pwd)/../bench/peers/ncu_table.py
if want profile && command -v ncu >/dev/null && [ -f "$LOGS/modulation_gpu.dt" ]; then
  python3 -c "import sys; sys.path.insert(0, '$(dirname "$PROGRAMS_PY")'); from programs import dt_program; print(dt_program('modulation_gpu', 3))" >"$LOGS/modulation_ncu.dt"
  "$B/bin/dtensorc" run --backend cuda "$LOGS/modulation_ncu.dt" >/dev/null 2>&1 # NVRTC's cache
  step ncu-modulation "${PROFILE_LIMIT:-90}" ncu --clock-control none --cache-control none --csv \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread \
    "$B/bin/dtensorc" run --backend cuda "$LOGS/modulation_ncu.dt"
  TAIL=20 step ncu-modulation-table 30 python3 "$NCU_TABLE" "$LOGS/ncu-modulation.log"
fi
# torch.compile's kernels for the same step (the counterpart of --profile).
TORCH_PROFILE=$(cd "$(dirname "$0")" && pwd)/../bench/peers/gpu_torch_profile.py
if want profile && [ -f "$TORCH_PROFILE" ] &&
  python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  TAIL=30 step torch-profile "${PROFILE_LIMIT:-90}" python3 "$TORCH_PROFILE" --programs modulation_gpu
fi
# The models against PyTorch on this GPU (torch.compile), when the machine's
# python3 has torch with CUDA and the repo's bench/peers is beside the bundle.
PEERS=${PEERS:-$(cd "$(dirname "$0")" && pwd)/../bench/peers/gpu_peers.py}
if want peers && [ -f "$PEERS" ] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  TAIL=40 step peers "${PEERS_LIMIT:-240}" env PYTHONUNBUFFERED=1 python3 "$PEERS" "$B/bin/dtensorc" ${PEERS_ARGS:-}
fi

echo "== summary (logs in $LOGS)"
cat "$LOGS/summary.txt"
exit $status
