#!/usr/bin/env bash
# Installs every build and test dependency of dtensor from Debian's packages.
# The CUDA toolkit (NVRTC, cuBLAS, NCCL headers) is expected where the machine
# ships it (/usr/local/cuda); the build works without it and skips CUDA parts.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS=(build-essential cmake ninja-build re2c bison doctest-dev
      llvm-19-dev clang-19 libclang-rt-19-dev zlib1g-dev libzstd-dev libedit-dev libxml2-dev
      libopenblas-dev libopenmpi-dev openmpi-bin python3)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
