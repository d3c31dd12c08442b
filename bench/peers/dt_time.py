"""Times a dtensor program through `dtensorc run`: the whole run with 1 step
(first-run time: parse, compile, data, one step) and with 1 + n steps; the
difference over n is the time per step (compile and set-up cancel). Best of
`reps` pairs. Prints the last value the program printed.

usage: python3 dt_time.py DTENSORC PROGRAM [n] [reps]
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import PROGRAMS, dt_program  # noqa: E402


def run_once(dtensorc, text, args=(), timeout=None):
    """Runs `text` (`dtensorc run ARGS FILE`: args such as
    ("--backend", "cuda"); killed after `timeout` s); returns (wall s, last
    printed line, peak resident MiB of the process: every rank is a thread
    of it)."""
    with tempfile.NamedTemporaryFile("w", suffix=".dt", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            t0 = time.perf_counter()
            p = subprocess.Popen([dtensorc, "run", *args, path], stdout=out, stderr=err, text=True)
            killed = []
            timer = threading.Timer(timeout, lambda: killed.append(p.kill())) if timeout else None
            if timer:
                timer.start()
            _, status, usage = os.wait4(p.pid, 0)
            if timer:
                timer.cancel()
            dt = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
    finally:
        os.unlink(path)
    if p.returncode != 0:
        why = f", killed after {timeout} s" if killed else ""
        raise RuntimeError(f"dtensorc failed ({p.returncode}{why}):\n{stderr}")
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return dt, last, usage.ru_maxrss / 1024


def time_text(dtensorc, make, n=5, reps=2, args=(), grow=True, timeout=None):
    """make(steps) -> program text; returns (first-run s, s per step, value,
    peak MiB). The best of `reps` runs each with 1 and 1 + n steps; their
    difference is taken between the two minima (robust to a shared
    machine's noise). Peak memory: the largest of the 1 + n step runs.
    `args` go to `dtensorc run`; grow=False keeps n steps even when they
    are short against process start, and `timeout` kills a run (a caller
    with a time limit)."""
    t1s, tns, value, peak = [], [], "", 0.0
    for _ in range(reps):
        t1s.append(run_once(dtensorc, make(1), args, timeout)[0])
        tn, value, mib = run_once(dtensorc, make(1 + n), args, timeout)
        tns.append(tn)
        peak = max(peak, mib)
    # A step much shorter than process start (the small MLP: 0.3 ms against
    # 40 ms) is lost in the start's noise: time more steps, until the steps
    # take at least half a process start and a quarter second (a process's
    # wall time varies by 10-30 ms here: 50 steps of the elementwise loop,
    # 33 ms, read as 0.66 to 1.4 ms a step). The value printed stays the
    # one after 1 + n steps, as the peers run.
    m = n
    while (grow and min(tns) - min(t1s) < max(0.5 * min(t1s), 0.25)
           and m < 10000 * n):
        m *= 10
        tns = [run_once(dtensorc, make(1 + m), args, timeout)[0] for _ in range(reps)]
    return min(t1s), max(min(tns) - min(t1s), 0.0) / m, value, peak


def time_program(dtensorc, name, n=5, reps=2):
    return time_text(dtensorc, lambda steps: dt_program(name, steps), n, reps)


if __name__ == "__main__":
    exe, name = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    first, step, value, peak = time_program(exe, name, n, reps)
    print(f"{name}: first run {first:.3f} s, {step * 1e3:.2f} ms/step, value {value}, "
          f"peak {peak:.0f} MiB")
