#!/usr/bin/env bash
# The peer benchmark in one command: builds dtensorc if needed, installs JAX
# (CPU) and PyTorch from PyPI into a virtual environment under the cache
# folder (install.sh; once), and prints one table of dtensor against JAX and
# PyTorch DTensor on the same programs (table.py; programs in programs.py).
# usage: bench/peers/run.sh [steps] [program ...]
#   programs: mlp_tp_2x2 mlp_1x1 mlp_2x2 mlp_1x4 modulation ew100 (default: all);
#   steps default 5
#   DTENSORC=path picks the dtensorc binary (default: build/dtensorc)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
exe="${DTENSORC:-$root/build/dtensorc}"
[[ -x "$exe" ]] || "$root/scripts/build.sh" >&2
venv="$("$here/install.sh")"
exec "$venv/bin/python" "$here/table.py" "$exe" "$@"
