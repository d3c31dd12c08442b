#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test label
# that needs no GPU (unit, lang, diff, fuzz, nvrtc, cudasim, example), then the parser
# and tensor-file header fuzz targets under libFuzzer (scripts/fuzz.sh). GPU tests report SKIP
# without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
# The parser and the tensor-file headers under libFuzzer (coverage-guided,
# ASan) for 45 s each, in their own clang build dir (only the sources they
# test are compiled there); the ordinary build above already ran every fuzz
# target with the stand-in driver.
scripts/fuzz.sh 45 parse_fuzz tensor_file_fuzz
