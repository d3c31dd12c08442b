#!/usr/bin/env bash
# Creates (once) the virtual environment the peer benchmarks run in and
# installs JAX (CPU) and PyTorch from PyPI into it. Prints the venv's path.
# usage: bench/peers/install.sh     (DT_PEERS_CACHE overrides the cache folder)
set -euo pipefail
cache="${DT_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dtensor-peers}"
venv="$cache/venv"
mkdir -p "$cache"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
fi
# Each peer separately: a failed torch install keeps the JAX half working.
"$venv/bin/python" -c 'import jax' 2>/dev/null ||
  "$venv/bin/python" -m pip install --quiet 'jax[cpu]' numpy >&2 || echo "install: jax failed" >&2
"$venv/bin/python" -c 'import torch' 2>/dev/null ||
  "$venv/bin/python" -m pip install --quiet torch >&2 || echo "install: torch failed" >&2
echo "$venv"
