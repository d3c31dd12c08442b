#!/usr/bin/env bash
# Configures and builds dtensor into ./build (Release with debug info, Ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -B build -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C build
