#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test label
# that needs no GPU (unit, lang, diff, fuzz, nvrtc, example), then the parser
# fuzz target under libFuzzer (scripts/fuzz.sh). GPU tests report SKIP
# without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
# The parser under libFuzzer (coverage-guided, ASan) for 60 s, in its own
# clang build dir (only the front end is compiled there); the ordinary build
# above already ran every fuzz target with the stand-in driver.
scripts/fuzz.sh 60 parse_fuzz
