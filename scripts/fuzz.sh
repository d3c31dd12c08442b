#!/usr/bin/env bash
# Runs the libFuzzer targets (coverage-guided, with ASan) for a bounded time:
# configures ./build-fuzz with clang-19 and -DDT_FUZZ=ON, builds the targets
# named (default: parse_fuzz, which compiles only the front end) and runs
# their ctests (fuzz/parse, fuzz/compile) there. A crash leaves the input as
# build-fuzz/tests/crash-*: add it to tests/fuzz/corpus* (or as a tests/lang
# regression) with the fix.
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 60 parse_fuzz)
# Exits 0 without doing anything when clang++-19 is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(parse_fuzz)
if ! command -v clang++-19 >/dev/null; then
  echo "fuzz.sh: clang++-19 not installed; skipping the libFuzzer build"
  exit 0
fi
start=$(date +%s)
cmake -G Ninja -B build-fuzz -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DDT_FUZZ=ON \
  -DDT_FUZZ_SECONDS="$SECONDS_EACH" >/dev/null
ninja -C build-fuzz "${targets[@]}"
echo "fuzz.sh: built ${targets[*]} in $(( $(date +%s) - start )) s"
regex=""
for t in "${targets[@]}"; do
  regex="$regex${regex:+|}^fuzz/${t%_fuzz}\$"
done
cd build-fuzz
ctest --output-on-failure -R "$regex"
