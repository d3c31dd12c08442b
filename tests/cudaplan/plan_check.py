#!/usr/bin/env python3
"""The cuda backend's dry run against the cpu plan, for every program given
(label nvrtc: it needs NVRTC, not a GPU). For each program:

  dtensorc run --backend null --stats FILE           (the cpu pipeline's plan)
  dtensorc run --backend cuda --dry-run --stats FILE (the GPU plan)

Both compute nothing (zeros), so a loop or branch on computed values takes the
same path in both (a real run may take another).
and the plan must
  * compile every kernel with NVRTC for sm_90 and give every launch a grid
    within CUDA's limits (the run succeeds and prints its `plan:` line, with
    kernels compiled when the cpu run launches kernels);
  * run, on every rank, exactly the cpu run's number of collectives (the
    per-rank program is the same; only where kernels come from differs);
  * leave on the host only what the cuda backend stages or uploads
    (constants, fills, random, check_factor, file and checkpoint loads):
    never a matmul, transpose, gather, scatter or einsum.

usage: plan_check.py DTENSORC FILE..."""
import re
import subprocess
import sys

RANK = re.compile(r"^stats: rank (\d+): .* (\d+) kernel launches .*?, (\d+) collectives"
                  r"(?:, host fallback ops:(.*))?$")
PLAN = re.compile(r"^plan: cuda sm_90 .*: (\d+) kernels compiled by NVRTC .*, (\d+) launches")
HOST_OK = {"const", "fill", "random", "check_factor", "load_file", "load_checkpoint", "iota",
           "cumsum"}


def stats(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    ranks, plan = {}, None
    for line in p.stderr.splitlines():
        m = RANK.match(line)
        if m:
            ops = (m.group(4) or "").split()
            ranks[int(m.group(1))] = (int(m.group(2)), int(m.group(3)),
                                      {ops[i]: int(ops[i + 1]) for i in range(0, len(ops), 2)})
        m = PLAN.match(line)
        if m:
            plan = (int(m.group(1)), int(m.group(2)))
    return p.returncode, ranks, plan, p.stderr


def main():
    dtc, files = sys.argv[1], sys.argv[2:]
    failures, checked = 0, 0
    for f in files:
        rc, cpu, _, err = stats([dtc, "run", "--backend", "null", "--stats", f])
        if rc != 0:
            print(f"skip {f}: the null run fails (rc {rc})")
            continue
        checked += 1
        rc, gpu, plan, err = stats([dtc, "run", "--backend", "cuda", "--dry-run", "--stats", f])
        if rc != 0 and ("cannot load libnvrtc" in err or "without CUDA headers" in err):
            print("SKIP: no NVRTC: " + err.strip().splitlines()[-1])
            return 77
        why = []
        if rc != 0:
            why.append(f"the dry run failed (rc {rc}):\n{err[-2000:]}")
        elif plan is None:
            why.append("no `plan:` line")
        else:
            if sum(r[0] for r in cpu.values()) > 0 and plan[0] == 0:
                why.append("the cpu plan launches kernels but the GPU plan compiled none")
            if sorted(gpu) != sorted(cpu):
                why.append(f"ranks {sorted(gpu)} vs the cpu plan's {sorted(cpu)}")
            for r in sorted(set(cpu) & set(gpu)):
                if gpu[r][1] != cpu[r][1]:
                    why.append(f"rank {r}: {gpu[r][1]} collectives, the cpu plan {cpu[r][1]}")
                staged = set(gpu[r][2]) - HOST_OK
                if staged:
                    why.append(f"rank {r}: staged on the host: {sorted(staged)}")
        if why:
            failures += 1
            print(f"FAIL {f}:\n  " + "\n  ".join(why))
        else:
            print(f"ok   {f}: {plan[0]} kernels, {plan[1]} launches, "
                  f"{sum(r[1] for r in gpu.values())} collectives")
    print(f"{'PASS' if failures == 0 and checked else 'FAIL'}: {checked} programs, "
          f"{failures} failures")
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
