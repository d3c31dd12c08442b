#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test label
# that needs no GPU (unit, lang, diff, fuzz, nvrtc, example). GPU tests report
# SKIP without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
