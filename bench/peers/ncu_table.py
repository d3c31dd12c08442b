#!/usr/bin/env python3
"""Per-kernel device time of one step of a dtensor GPU program, from ncu's CSV
(`ncu --clock-control none --cache-control none --csv --metrics
gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread
dtensorc run --backend cuda PROGRAM`): the counterpart of
gpu_torch_profile.py's table for torch.compile.

  python3 bench/peers/ncu_table.py NCU.csv [--launches N]

Prints each of the last N launches with its time in us, grid and registers
a thread, and their sum. N defaults to one step: the longest run of
launches whose kernel names repeat those just before it (run the program
for 3 steps, so that two steps follow the set-up). Kernel names map to `--profile`'s instructions through `dtensorc emit
codegen --backend cuda PROGRAM` (dt_k_<hash> is the kernel's symbol).
"""
import argparse
import csv
import sys


def launches(path):
    """[(id, name, {metric: value})] in launch order."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if head is None:
        sys.exit(f"{path}: no ncu CSV header (a row starting with ID)")
    col = {name: i for i, name in enumerate(rows[head])}
    for need in ("ID", "Kernel Name", "Metric Name", "Metric Value"):
        if need not in col:
            sys.exit(f"{path}: no '{need}' column")
    out = {}
    for r in rows[head + 1:]:
        if len(r) < len(rows[head]):
            continue
        key = int(r[col["ID"]])
        out.setdefault(key, (r[col["Kernel Name"]], {}))[1][r[col["Metric Name"]]] = \
            r[col["Metric Value"]].replace(",", "")
    return [(k, name, m) for k, (name, m) in sorted(out.items())]


def step_length(names):
    """The longest P with the last P names equal to the P before them (0: none)."""
    for p in range(len(names) // 2, 0, -1):
        if names[-p:] == names[-2 * p:-p]:
            return p
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--launches", type=int, default=0,
                    help="how many of the last launches make one step (0: found)")
    a = ap.parse_args()
    ls = launches(a.csv)
    n = a.launches if a.launches > 0 else step_length([name for _, name, _ in ls])
    if n <= 0:
        print("no repeated step found: every launch listed")
        n = len(ls)
    ls = ls[-n:]
    total = 0.0
    print(f"{'us':>10} {'grid':>7} {'regs':>5}  kernel")
    for _, name, m in ls:
        us = float(m.get("gpu__time_duration.sum", "nan")) / 1000.0
        total += us
        print(f"{us:10.1f} {m.get('launch__grid_size', '?'):>7} "
              f"{m.get('launch__registers_per_thread', '?'):>5}  {name[:70]}")
    print(f"{total:10.1f} us in {len(ls)} launches")


if __name__ == "__main__":
    main()
