#!/usr/bin/env python3
"""The differential suite's programs under mpirun: every mesh of each program is
resized to NP devices (as tests/diff_runner.cpp does: the first axes take the
devices), run once on the thread mesh (`dtensorc run`) and once as NP processes
(`mpirun -np NP dtensorc run`), and every printed number must agree (MPI may
reduce in another order than the threads: relative 1e-4, absolute 1e-5; in a
program that uses bf16 or f16, whose every combine rounds, the tolerance of
bf16 in runtime/Verify.cpp: relative 2e-2, absolute 1e-2).
Extra dtensorc arguments after `--` go to the mpirun run only (as
`--ranks-per-process 2`, with NP then the number of ranks).
`--repeat N` runs each program N times as processes, each run compared and
each bounded (a run that hangs fails instead of stalling the suite): start-up
races, such as processes creating their communicators in different orders,
show only in some runs.

usage: diff_mpi.py DTENSORC MPIRUN NP PROCS [--repeat N] FILE... [-- ARGS...]"""
import math
import os
import re
import subprocess
import sys
import tempfile

CONFIGS = {1: {1: [1], 2: [2], 4: [4]},
           2: {1: [1, 1], 2: [2, 1], 4: [2, 2]},
           3: {1: [1, 1, 1], 2: [2, 1, 1], 4: [2, 2, 1]}}
# Six devices: a 2 x 3 mesh, whose axis groups span processes unevenly when
# each process hosts two ranks.
CONFIGS[1][6], CONFIGS[2][6], CONFIGS[3][6] = [6], [2, 3], [2, 3, 1]
MESH = re.compile(r"^(\s*mesh\s+(\w+)\s*=\s*)\[([^\]]*)\](\s*devices\s*\[[^\]]*\])?", re.M)
NUM = re.compile(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[+-]?\d+)?)", re.I)


def resize(text, np_):
    def sub(m):
        axes = [a.split("=")[0].strip() for a in m.group(3).split(",")]
        sizes = CONFIGS[len(axes)][np_]
        return m.group(1) + "[" + ", ".join(f"{a} = {s}" for a, s in zip(axes, sizes)) + "]"
    return MESH.sub(sub, text)


LOWP = re.compile(r"\b(bf16|f16)\b")


def close(a, b, low=False):
    fa, fb = float(a), float(b)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    atol, rtol = (1e-2, 2e-2) if low else (1e-5, 1e-4)
    return fa == fb or abs(fa - fb) <= atol + rtol * abs(fb)


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    dtensorc, mpirun, np_, procs, files = args[0], args[1], int(args[2]), int(args[3]), args[4:]
    repeat = 1
    if files[:1] == ["--repeat"]:
        repeat, files = int(files[1]), files[2:]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            text = resize(open(f).read(), np_)
            prog = os.path.join(tmp, os.path.basename(f))
            with open(prog, "w") as out:
                out.write(text)
            # imports resolve from the program's folder first: run from there
            threads = subprocess.run([dtensorc, "run", prog], capture_output=True, text=True,
                                     timeout=120, env=env)
            name = f"{os.path.basename(f)} on {np_} ranks in {procs} processes"
            for attempt in range(repeat):
                failed += compare(name if repeat == 1 else f"{name} (run {attempt + 1})",
                                  threads, [mpirun, "-np", str(procs), dtensorc, "run", prog] +
                                  extra, env, bool(LOWP.search(text)))
    sys.exit(1 if failed else 0)


def compare(name, threads, command, env, low):
    """Runs `command` once and compares its output with the thread run's;
    returns 1 for a failure (printed), else 0."""
    try:
        procs_run = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        print(f"FAIL {name}: no end within 60 s (a hang)")
        return 1
    if threads.returncode != 0 or procs_run.returncode != 0:
        print(f"FAIL {name}: exit {threads.returncode} / {procs_run.returncode}\n"
              f"{threads.stderr}{procs_run.stderr}")
        return 1
    ta, tb = threads.stdout.split(), procs_run.stdout.split()
    na, nb = NUM.findall(threads.stdout), NUM.findall(procs_run.stdout)
    same_words = [NUM.sub("#", w) for w in ta] == [NUM.sub("#", w) for w in tb]
    if not same_words or len(na) != len(nb) or \
            not all(close(a, b, low) for a, b in zip(na, nb)):
        print(f"FAIL {name}: outputs differ\n--- threads\n{threads.stdout}"
              f"--- processes\n{procs_run.stdout}")
        return 1
    print(f"ok   {name}: {len(na)} numbers agree")
    return 0


if __name__ == "__main__":
    main()
