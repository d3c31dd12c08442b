#!/usr/bin/env bash
# Fault tests of one rank per process (ctest mpi_faults/*): a rank that is
# killed (SIGKILL), crashes (SIGSEGV) or stops (SIGSTOP) mid-run, ranks that
# run different programs or meshes. Every case must end within its bound,
# exit non-zero, print the one line naming the failed rank, the collective
# and the source line, and leave no process behind.
#
# The h* cases run 2 processes of 2 thread ranks each (--ranks-per-process 2,
# a 4-rank mesh) and kill or stop process 1: the report names processes with
# their ranks.
#
# usage: faults.sh DTENSORC MPIRUN CASE
#   (CASE: kill segv stop program mesh hkill hsegv hstop rkill rstop rhstop
#    first init kill4)
#
# The first case stops process 1 in a local loop before the first
# collective: process 0 waits in the blocking call that makes the group's
# communicator, which the watchdog thread watches (runtime/FaultWatch.h);
# init stops it before MPI_Init returns. kill4 kills one process of four:
# one report, not one per surviving process.
#
# The r* cases put every process on a node of its own
# (DT_FAULT_PRETEND_NODES=1): a peer on another node is not visible in /proc.
set -u
dtensorc=$1 mpirun=$2 case=$3
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A private copy of the program: its path marks this test's processes.
prog=$tmp/long_loop.dt
cp "$here/long_loop.dt" "$prog"

fail() { echo "FAIL ($case): $*"; echo "--- output"; cat "$tmp/out"; leftovers kill; exit 1; }

# The dtensorc processes of this test (their command line names $tmp).
leftovers() {
  local found=0
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -q "^$dtensorc run $tmp"; then
      found=1
      [ "${1:-}" = kill ] && kill -KILL "${p#/proc/}" 2>/dev/null
    fi
  done
  return $((1 - found))
}

# The pid of world rank $1 of this test's job.
rank_pid() {
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -q "^$dtensorc run $tmp" &&
       { tr '\0' '\n' < "$p/environ"; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "${p#/proc/}"
      return 0
    fi
  done
  return 1
}

# Runs the job in the background, with a hard bound of $1 seconds.
start() {
  local bound=$1
  shift
  timeout -k 5 "$bound" "$mpirun" --oversubscribe -np "$@" > "$tmp/out" 2>&1 &
  job=$!
}

finish() { # waits for the job; checks it failed in time and left nothing
  local t0=$SECONDS
  wait "$job"
  rc=$?
  [ "$rc" -eq 124 ] && fail "the job did not end within its bound (a hang)"
  [ "$rc" -ne 0 ] || fail "the job exited 0"
  sleep 0.5
  leftovers && fail "processes left behind"
  echo "job ended with exit $rc"
}

# Starts the 2-process job (extra dtensorc arguments in "$@"), waits for its
# first print, sends $sig to process 1 and waits for the job to end within
# the bound; sets $pid (process 1's) and $elapsed.
kill_process_1() {
  start 60 2 "$dtensorc" run "$prog" --fault-timeout 3 "$@"
  # Wait for the first print (streamed: the loop is running).
  for _ in $(seq 200); do
    grep -q '^0$' "$tmp/out" && break
    sleep 0.1
  done
  grep -q '^0$' "$tmp/out" || fail "the first print did not stream"
  pid=$(rank_pid 1) || fail "no process 1"
  sleep 0.3
  local t0=$SECONDS
  kill -"$sig" "$pid"
  finish
  elapsed=$((SECONDS - t0))
  # SIGKILL/SIGSEGV are noticed at once; SIGSTOP after the 3 s timeout.
  [ "$elapsed" -le 15 ] || fail "took ${elapsed}s"
}

case $case in
kill | segv | stop)
  sig=$(echo "$case" | tr a-z A-Z)
  [ "$case" = kill ] && sig=KILL
  kill_process_1
  grep -E "dtensorc: rank 0: .*rank 1 \(pid $pid\) (exited|is stopped).*(allReduce|broadcast|allGatherV).*long_loop.dt:[0-9]+:[0-9]+|dtensorc: rank 0: .*(allReduce|allGatherV).*long_loop.dt:[0-9]+:[0-9]+.*rank 1 \(pid $pid\) (exited|is stopped)" "$tmp/out" ||
    fail "no line from rank 0 naming rank 1, the collective and the source line"
  if [ "$case" = segv ]; then
    grep -E "dtensorc: rank 1: crashed \(SIGSEGV\)" "$tmp/out" || fail "rank 1 did not report its crash"
  fi
  ;;
kill4)
  sig=KILL
  sed -i 's/mesh m = \[x = 2\]/mesh m = [x = 4]/' "$prog"
  start 60 4 "$dtensorc" run "$prog" --fault-timeout 3
  for _ in $(seq 200); do
    grep -q '^0$' "$tmp/out" && break
    sleep 0.1
  done
  pid=$(rank_pid 2) || fail "no process 2"
  sleep 0.3
  kill -KILL "$pid"
  finish
  grep -E "dtensorc: rank [013]: .*rank 2 \(pid $pid\) exited" "$tmp/out" ||
    fail "no line naming rank 2"
  [ "$(grep -c '^dtensorc: ' "$tmp/out")" -eq 1 ] || fail "not exactly one report"
  ;;
rkill | rstop)
  # Every process on a node of its own (as on a cluster): a stopped peer is
  # found by asking it over MPI (runtime/MpiSites.h), not through /proc.
  sig=$(echo "${case#r}" | tr a-z A-Z)
  export DT_FAULT_PRETEND_NODES=1 # local processes inherit mpirun's environment
  kill_process_1
  if [ "$case" = rstop ]; then
    grep -E "dtensorc: rank 0: rank 1 \(pid $pid on host [^)]+\) does not answer \(stopped, or computing outside any collective.*\): rank 0 waited 3 s in (allReduce|allGatherV|broadcast).*long_loop.dt:[0-9]+:[0-9]+" "$tmp/out" ||
      fail "no line from rank 0 naming rank 1 on its host, the collective and the source line"
  else
    # The launcher sees the death and names it; rank 0 says it was stopped for it.
    grep -E "process rank 1 with PID [0-9]+ on node [^ ]+ exited on signal 9" "$tmp/out" ||
      fail "the launcher did not name rank 1"
    grep -E "dtensorc: rank 0: stopped by the launcher .*long_loop.dt:[0-9]+:[0-9]+" "$tmp/out" ||
      fail "rank 0 did not say where it was stopped"
  fi
  ;;
rhstop)
  # 2 processes of 2 thread ranks, each process on a node of its own.
  sig=STOP
  sed -i 's/mesh m = \[x = 2\]/mesh m = [x = 4]/' "$prog"
  export DT_FAULT_PRETEND_NODES=1
  kill_process_1 --ranks-per-process 2
  grep -E "dtensorc: process 0 \(ranks 0-1\): process 1 \(ranks 2-3\) \(pid $pid on host [^)]+\) does not answer .*: process 0 \(ranks 0-1\) waited 3 s .*long_loop.dt:[0-9]+:[0-9]+" "$tmp/out" ||
    fail "no line from process 0 naming process 1 on its host, the collective and the source line"
  ;;
hkill | hsegv | hstop)
  sig=$(echo "${case#h}" | tr a-z A-Z)
  sed -i 's/mesh m = \[x = 2\]/mesh m = [x = 4]/' "$prog"
  kill_process_1 --ranks-per-process 2
  grep -E "dtensorc: process 0 \(ranks 0-1\): .*process 1 \(ranks 2-3\) \(pid $pid\) (exited|is stopped).*long_loop.dt:[0-9]+:[0-9]+|dtensorc: process 0 \(ranks 0-1\): .*long_loop.dt:[0-9]+:[0-9]+.*process 1 \(ranks 2-3\) \(pid $pid\) (exited|is stopped)" "$tmp/out" ||
    fail "no line from process 0 naming process 1 and its ranks, the collective and the source line"
  if [ "$case" = hsegv ]; then
    grep -E "dtensorc: process 1 \(ranks 2-3\): crashed \(SIGSEGV\)" "$tmp/out" ||
      fail "process 1 did not report its crash"
  fi
  ;;
init)
  # Process 1 stopped as soon as it exists, before MPI_Init returns: process
  # 0 waits in MPI_Init (or, when the stop came later, at start-up or in
  # the first collective); the watchdog ends the job either way.
  start 60 2 "$dtensorc" run "$prog" --fault-timeout 3
  pid=
  for _ in $(seq 2000); do # pgrep: a /proc scan in shell would stop it too late
    for p in $(pgrep -f "^$dtensorc run $tmp"); do
      if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then
        pid=$p
        break
      fi
    done
    [ -n "$pid" ] && break
    sleep 0.001
  done
  [ -n "$pid" ] || fail "no process 1"
  kill -STOP "$pid"
  t0=$SECONDS
  finish
  [ $((SECONDS - t0)) -le 20 ] || fail "took $((SECONDS - t0))s"
  grep -E "dtensorc: rank 0: (no answer: rank 0 waited 3 s in MPI_Init|rank 1 \(pid $pid\) is stopped)" "$tmp/out" ||
    fail "no line from rank 0 saying it waits in MPI_Init or naming rank 1"
  [ "$(grep -c '^dtensorc: ' "$tmp/out")" -eq 1 ] || fail "not exactly one report"
  ;;
first)
  sig=STOP
  prog=$tmp/first_collective.dt
  cp "$here/first_collective.dt" "$prog"
  kill_process_1
  grep -E "dtensorc: rank 0: rank 1 \(pid $pid\) is stopped: rank 0 waited 3 s in MPI_Comm_(create_group|split) for \`[a-z_]+\` at .*first_collective.dt:[0-9]+:[0-9]+" "$tmp/out" ||
    fail "no line from rank 0 naming rank 1, the communicator's creation and the source line"
  ;;
program | mesh)
  other=$tmp/other.dt
  if [ "$case" = program ]; then
    sed 's/acc \* 0.5/acc * 0.25/' "$prog" > "$other"
    want="rank 1 runs a different program"
  else
    sed 's/mesh m = \[x = 2\]/mesh m = [x = 4]/' "$prog" > "$other"
    want="rank 1 runs a program whose meshes need 4 ranks \(rank 0's need 2\)"
  fi
  start 30 1 "$dtensorc" run "$prog" --fault-timeout 5 : -np 1 "$dtensorc" run "$other" --fault-timeout 5
  t0=$SECONDS
  finish
  [ $((SECONDS - t0)) -le 20 ] || fail "took $((SECONDS - t0))s"
  [ "$(grep -cE "$want" "$tmp/out")" -eq 1 ] || fail "not exactly one line: $want"
  ;;
*)
  echo "unknown case $case"
  exit 2
  ;;
esac
echo "PASS ($case)"
cat "$tmp/out" | grep dtensorc
