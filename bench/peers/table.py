"""Runs every benchmark program (programs.py) on dtensor (dt_time.py, through
`dtensorc run`) and on each peer that is installed, then prints one table:
time per step, first-run time (parse/trace + compile + data + one step),
peak resident memory (MiB, summed over a peer's rank processes; dtensor's
ranks are threads of one process), speed ratio (peer time / dtensor time:
above 1 means dtensor is faster) and whether the values agree (1e-4
relative: f32 sums in different orders).

usage: python table.py DTENSORC [steps] [program ...]   (run by run.sh)
"""
import importlib.util
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from dt_time import time_program  # noqa: E402
from programs import PROGRAMS  # noqa: E402


def peer(script, name, steps):
    r = subprocess.run([sys.executable, os.path.join(here, script), name, str(steps)],
                       capture_output=True, text=True)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        err = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return None, err
    return json.loads(lines[-1]), None


def main():
    exe = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    names = sys.argv[3:] or list(PROGRAMS)
    peers = []
    for mod, script in (("jax", "jax_peer.py"), ("torch", "torch_peer.py")):
        # Found, not imported: a child forked from this process would count
        # an imported framework's pages in its peak resident memory.
        if importlib.util.find_spec(mod):
            peers.append((mod, script))
        else:
            print(f"note: {mod} is not installed: its columns are empty")
    versions = set()
    rows = []
    for name in names:
        first, step, value, peak = time_program(exe, name, steps, 2)
        row = {"name": name, "dt": (first, step, float(value), peak)}
        for mod, script in peers:
            res, err = peer(script, name, steps)
            if res:
                versions.add(res["version"])
                row[mod] = (res["first_s"], res["step_s"], res["value"], res.get("peak_mib", 0.0))
            else:
                row[mod] = None
                print(f"note: {mod} failed on {name}: {err}")
        rows.append(row)
    cols = ["dtensor"] + [m for m, _ in peers]
    print()
    print("| program | " + " | ".join(f"{c} ms/step" for c in cols) + " | " +
          " | ".join(f"{c} first s" for c in cols) + " | " +
          " | ".join(f"{c} peak MiB" for c in cols) + " | " +
          " | ".join(f"vs {m}" for m, _ in peers) + " | values agree |")
    print("|" + "---|" * (1 + 4 * len(cols)))
    for r in rows:
        dt = r["dt"]
        cells = [f"{dt[1] * 1e3:.2f}"] + [f"{r[m][1] * 1e3:.2f}" if r[m] else "—" for m, _ in peers]
        cells += [f"{dt[0]:.2f}"] + [f"{r[m][0]:.2f}" if r[m] else "—" for m, _ in peers]
        cells += [f"{dt[3]:.0f}"] + [f"{r[m][3]:.0f}" if r[m] else "—" for m, _ in peers]
        cells += [f"{r[m][1] / dt[1]:.2f}x" if r[m] and dt[1] > 0 else "—" for m, _ in peers]
        agree = all(abs(r[m][2] - dt[2]) <= 1e-4 * max(1.0, abs(dt[2])) for m, _ in peers if r[m])
        vals = ", ".join([f"{dt[2]:.6g}"] + [f"{r[m][2]:.6g}" for m, _ in peers if r[m]])
        print(f"| {PROGRAMS[r['name']][0]} | " + " | ".join(cells) +
              f" | {'yes' if agree else 'NO'} ({vals}) |")
    print()
    print("versions: " + ", ".join(sorted(versions)) + "; ratio = peer time / dtensor time "
          "(> 1: dtensor faster); load average: " + " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
