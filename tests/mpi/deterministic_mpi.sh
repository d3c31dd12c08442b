#!/usr/bin/env bash
# Deterministic mode across processes (ctest mpi_deterministic/*): each
# program prints the same bytes as 4 thread ranks, as 4 MPI processes and as
# 2 processes of 2 thread ranks (the collectives of deterministic mode move
# values without arithmetic, or combine them in the fixed tree order, so no
# transport may change a bit).
#
# usage: deterministic_mpi.sh DTENSORC MPIRUN FILE...   (4-rank programs)
set -u
dtensorc=$1 mpirun=$2
shift 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for f in "$@"; do
  "$dtensorc" run "$f" --deterministic > "$tmp/threads" 2>&1 || { echo "FAIL $f: threads"; status=1; continue; }
  timeout -k 5 120 "$mpirun" --oversubscribe -np 4 "$dtensorc" run "$f" --deterministic \
    > "$tmp/np4" 2>&1 || { echo "FAIL $f: mpirun -np 4"; cat "$tmp/np4"; status=1; continue; }
  timeout -k 5 120 "$mpirun" --oversubscribe -np 2 "$dtensorc" run "$f" --deterministic \
    --ranks-per-process 2 > "$tmp/np2k2" 2>&1 || { echo "FAIL $f: mpirun -np 2 --ranks-per-process 2"; cat "$tmp/np2k2"; status=1; continue; }
  for run in np4 np2k2; do
    if cmp -s "$tmp/threads" "$tmp/$run"; then
      echo "ok   $f: $run prints the threads' bytes ($(wc -l < "$tmp/threads") lines)"
    else
      echo "FAIL $f: $run differs from the threads"
      diff "$tmp/threads" "$tmp/$run" | head -5
      status=1
    fi
  done
done
[ $status = 0 ] && echo "PASS"
exit $status
