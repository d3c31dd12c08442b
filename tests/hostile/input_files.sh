#!/bin/sh
# Hostile program files (ctest `hostile/input_files`, label fuzz): a directory,
# a device that never ends (/dev/zero), a file over the source size limit and
# a missing file each make `dtensorc check|run|verify` exit 1 with a clear
# error, within seconds and without reading gigabytes; so does a run whose
# rank threads cannot all start.
# usage: input_files.sh DTENSORC
D=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
expect() { # NAME TEXT ARGS...: exit 1 and stderr containing TEXT
  name=$1 want=$2
  shift 2
  out=$(timeout 20 "$D" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 1 ] || ! printf '%s' "$out" | grep -qF -- "$want"; then
    echo "FAIL $name: exit $rc, wanted 1 and \`$want\`:"
    printf '%s\n' "$out" | head -5
    fail=1
  else
    echo "PASS $name"
  fi
}
mkdir "$T/dir.dt"
truncate -s 20M "$T/huge.dt" # sparse: over the 16 MiB limit without using disk
for cmd in check run verify; do
  expect "$cmd directory" "is not a regular file" "$cmd" "$T/dir.dt"
  expect "$cmd /dev/zero" "\`/dev/zero\` is not a regular file" "$cmd" /dev/zero
  expect "$cmd huge file" "is larger than the limit of 16777216 bytes" "$cmd" "$T/huge.dt"
  expect "$cmd missing file" "cannot read" "$cmd" "$T/missing.dt"
done
# More rank threads than the address space allows (a container's memory
# limit): a clean error naming the rank, not an abort.
printf 'mesh m = [x = 1024]\nlet a : f32[1024] @ m[x] = ones()\nprint(sum(relayout(a, m[_])))\n' \
  >"$T/ranks.dt"
out=$( (ulimit -v 3000000 && timeout 60 "$D" run "$T/ranks.dt") 2>&1)
rc=$?
if [ "$rc" -ne 1 ] || ! printf '%s' "$out" | grep -q "cannot start the thread of rank [0-9]* of 1024"; then
  echo "FAIL rank threads over the limit: exit $rc"
  printf '%s\n' "$out" | head -5
  fail=1
else
  echo "PASS rank threads over the limit"
fi
exit $fail
