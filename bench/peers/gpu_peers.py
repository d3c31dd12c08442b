"""dtensor against PyTorch on one GPU: the same training programs (programs.py's
GPU_PROGRAMS: the MLP with Adam and seed 001's modulation with SGD) timed as
`dtensorc run --backend cuda` (dt_time.py: a run of 1 step against one of
1 + n steps) and as plain single-device torch on `cuda`, f32 with TF32 off
(dtensor computes f32 exactly), the whole step (forward, backward, update)
once under torch.compile and once eager. Prints one table; a failure on one
program is shown in its row and the others go on.

  python3 bench/peers/gpu_peers.py DTENSORC [--quick] [--programs mlp_gpu,modulation_gpu]
  python3 bench/peers/gpu_peers.py DTENSORC --cpu-smoke   # no GPU: tiny sizes on the CPU

Times: ms/step is the best of 3 timings of n steps (torch: between two
torch.cuda.synchronize()); dtensor times more steps where n steps are short
against its process start. --quick (about 1-2 minutes on an H100): n halved,
two timings of each. "first s" is dtensor's
whole process with one step (start, CUDA set-up, NVRTC compile, data, step)
on an empty kernel cache, and torch's data plus first step in an already
started process (compile included: torch.compile's warm-up, on fresh
inductor and triton cache folders). dtensor's timed runs come after that
first one, so every run of 1 or 1 + n steps finds its kernels in the NVRTC
cache (the same work in both, and 1 + n steps less 1 step is n steps).
Both systems start from the same closed-form data (sin/cos of indices) and
print the loss of step 1 + n; they agree within a relative 1e-3 (GPU
reductions sum in another order).
"""
import argparse
import math
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dt_time import run_once, time_text  # noqa: E402
from programs import GPU_PROGRAMS, MOD_LR_PARAMS, MOD_LR_TOKENS, dt_program  # noqa: E402

SMOKE = {"mlp_gpu": dict(B=64, D=32, H=64, C=16), "modulation_gpu": dict(T=64, H=32, S=4)}
STEPS = {"mlp_gpu": 20, "modulation_gpu": 400}  # n: about a second of steps on an H100
torch = None  # imported in main, so that the dtensor side runs without it
NO_TORCH = "no torch/CUDA"


def grid(r, c, dev):
    i = torch.arange(r, dtype=torch.float32, device=dev).reshape(r, 1).expand(r, c)
    j = torch.arange(c, dtype=torch.float32, device=dev).reshape(1, c).expand(r, c)
    return i, j


def mlp_setup(s, dev):
    """programs.mlp_dt's data, parameters and Adam state."""
    B, D, H, C = s["B"], s["D"], s["H"], s["C"]
    i, j = grid(B, D, dev)
    x = torch.sin(i * 0.37 + j * 0.11)
    i, j = grid(B, C, dev)
    y = (j == torch.remainder(i, float(C))).float()
    i, j = grid(D, H, dev)
    w1 = torch.cos(i * 0.13 + j * 0.07) * (1.0 / D ** 0.5)
    i, j = grid(H, C, dev)
    w2 = torch.sin(i * 0.05 + j * 0.17) * (1.0 / H ** 0.5)
    params = (w1, torch.zeros(H, device=dev), w2, torch.zeros(C, device=dev))
    ms, vs = (tuple(torch.zeros_like(p) for p in params) for _ in range(2))  # not aliased
    return (params, ms, vs, torch.zeros((), device=dev)), (x, y)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    logits = torch.relu(x @ w1 + b1) @ w2 + b2
    return -(y * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()


def mlp_step(state, x, y):
    """One step: the loss and its gradients, then optim.adam_2d/adam_1d."""
    params, ms, vs, t = state
    grads, loss = torch.func.grad_and_value(mlp_loss)(params, x, y)
    t = t + 1.0
    ms = tuple(0.9 * m + 0.1 * g for m, g in zip(ms, grads))
    vs = tuple(0.999 * v + 0.001 * (g * g) for v, g in zip(vs, grads))
    params = tuple(p - 0.001 * (m / (1.0 - 0.9 ** t)) / (torch.sqrt(v / (1.0 - 0.999 ** t)) + 1e-8)
                   for p, m, v in zip(params, ms, vs))
    return loss, (params, ms, vs, t)


def mod_setup(s, dev):
    """programs.modulation_dt's tokens, conditioning, projection and ids."""
    T, H, S = s["T"], s["H"], s["S"]
    i, j = grid(T, H, dev)
    tokens, up = torch.sin(i * 0.37 + j * 0.11), torch.cos(i * 0.01 + j * 0.03)
    i, j = grid(S, H, dev)
    cond = torch.cos(i * 0.13 + j * 0.07)
    i, j = grid(H, H, dev)
    w = torch.sin(i * 0.05 + j * 0.17) * (1.0 / H ** 0.5)
    ids = torch.arange(T, dtype=torch.int64, device=dev) % S
    return (tokens, cond, w), (ids, up)


def mod_loss(tokens, cond, w, ids, up):
    per_sample_scale = cond @ w.t()
    return (per_sample_scale.index_select(0, ids) * tokens * up).sum()


def mod_step(state, ids, up):
    """One step: the loss, its gradients in tokens, cond and w, then SGD."""
    (g_tok, g_cond, g_w), loss = torch.func.grad_and_value(mod_loss, argnums=(0, 1, 2))(
        *state, ids, up)
    tokens, cond, w = state
    return loss, (tokens - MOD_LR_TOKENS * g_tok, cond - MOD_LR_PARAMS * g_cond,
                  w - MOD_LR_PARAMS * g_w)


MODELS = {"mlp_gpu": (mlp_setup, mlp_step), "modulation_gpu": (mod_setup, mod_step)}


def time_torch(name, sizes, dev, compiled, n, reps):
    """(first s, s per step, loss of step 1 + n) of the torch step."""
    setup, step = MODELS[name]
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    fn = torch.compile(step) if compiled else step
    sync()
    t0 = time.perf_counter()
    state, data = setup(sizes, dev)
    loss, state = fn(state, *data)
    loss.item()
    first = time.perf_counter() - t0
    best, value = math.inf, None
    for _ in range(max(reps, 2)):  # the first may still recompile: not best alone
        sync()
        t1 = time.perf_counter()
        for _ in range(n):
            loss, state = fn(state, *data)
        sync()
        best = min(best, (time.perf_counter() - t1) / n)
        value = loss.item() if value is None else value
    return first, best, value


def last_lines(err, k=3):
    return " / ".join(str(err).strip().splitlines()[-k:])


def agree(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-3 * max(abs(a), abs(b), 1e-6)


def main():
    global torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dtensorc")
    ap.add_argument("--quick", action="store_true", help="fewer steps and repetitions")
    ap.add_argument("--programs", default=",".join(GPU_PROGRAMS))
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="no GPU: both systems on the CPU at tiny sizes (tests this script)")
    a = ap.parse_args()
    start = time.perf_counter()
    cache = tempfile.mkdtemp(prefix="gpu_peers_")
    # dtensor's NVRTC cache (XDG_CACHE_HOME) starts empty: the first run of a
    # program compiles cold, the timed runs after it find every kernel cached
    # (a 1-step run that compiles against a 1 + n step run that does not
    # would cancel the steps being measured).
    os.environ.update(DTENSOR_KERNEL_CACHE="off", TORCHINDUCTOR_CACHE_DIR=cache + "/inductor",
                      TRITON_CACHE_DIR=cache + "/triton", XDG_CACHE_HOME=cache + "/xdg")
    reps = 1 if a.quick else 3
    backend = "cpu" if a.cpu_smoke else "cuda"
    dev = None
    try:
        import torch as torch_module
        torch = torch_module
        if torch.cuda.is_available():
            print(f"torch {torch.__version__}, device {torch.cuda.get_device_name()}")
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")  # context, cuBLAS
            torch.cuda.synchronize()
            dev = "cuda"
        else:
            print(f"torch {torch.__version__} has no CUDA" +
                  (": torch columns empty (--cpu-smoke runs it on the CPU)" if not a.cpu_smoke
                   else ""))
    except Exception as e:  # noqa: BLE001 (no torch: the dtensor column alone)
        print(f"no torch ({type(e).__name__}: {e}): torch columns empty")
    if a.cpu_smoke and torch is not None:
        dev = "cpu"
        print("--cpu-smoke: both systems on the CPU at tiny sizes")
    rows = []
    for name in a.programs.split(","):
        if name not in GPU_PROGRAMS:
            rows.append((name, [f"unknown program (known: {', '.join(GPU_PROGRAMS)})"], None))
            continue
        sizes = {**GPU_PROGRAMS[name][2], **(SMOKE[name] if a.cpu_smoke else {})}
        n = max(2, STEPS[name] // 2) if a.quick else STEPS[name]
        res = {}
        try:
            make = lambda k: dt_program(name, k, sizes)  # noqa: E731
            first = run_once(a.dtensorc, make(1), ("--backend", backend), 120)[0]  # cold
            # Two runs of each length at least, and steps grown until they
            # outlast half a process start: one 1 + 200 step run of a 1.3 ms
            # step against one 1 step run read 1.29 and 1.54 ms on one H200
            # (process starts vary by tens of ms).
            _, step, value, _ = time_text(a.dtensorc, make, n, max(reps, 2),
                                          args=("--backend", backend), timeout=120)
            res["dtensor"] = (first, step, float(value.split()[-1]))
        except Exception as e:  # noqa: BLE001 (a failed program is a row, not a crash)
            res["dtensor"] = f"dtensorc: {last_lines(e)}"
        for col, compiled in (("compile", True), ("eager", False)):
            if dev is None:
                res[col] = NO_TORCH
                continue
            try:
                res[col] = time_torch(name, sizes, dev, compiled, n, reps)
            except Exception as e:  # noqa: BLE001
                res[col] = f"torch {col}: {type(e).__name__}: {last_lines(e, 1)[:200]}"
            finally:
                torch._dynamo.reset()
                if dev == "cuda":
                    torch.cuda.empty_cache()
        rows.append((name, n, res))
        print(f"[{time.perf_counter() - start:.0f} s] {name} done", flush=True)
    print_table(rows, backend)
    print(f"total {time.perf_counter() - start:.0f} s")
    shutil.rmtree(cache, ignore_errors=True)


def print_table(rows, backend):
    cols = ("dtensor", "compile", "eager")
    print()
    print(f"| program | n | dtensor ({backend}) ms/step | torch.compile ms/step | "
          "torch eager ms/step | compile/dtensor | eager/dtensor | first s (dt / compile / "
          "eager) | values (dt / compile / eager) | values agree |")
    print("|" + "---|" * 10)
    for name, n, res in rows:
        if res is None:
            print(f"| {name} | " + " | ".join(n) + " |")
            continue
        ok = {c: res[c] for c in cols if isinstance(res[c], tuple)}
        ms = [f"{ok[c][1] * 1e3:.3f}" if c in ok else "—" for c in cols]
        dt = ok.get("dtensor")
        ratio = [f"{ok[c][1] / dt[1]:.2f}x" if dt and c in ok and dt[1] > 0 else "—"
                 for c in ("compile", "eager")]
        first = " / ".join(f"{ok[c][0]:.2f}" if c in ok else "—" for c in cols)
        vals = " / ".join(f"{ok[c][2]:.6g}" if c in ok else "—" for c in cols)
        agrees = "—" if not dt or len(ok) < 2 else (
            "yes" if all(agree(dt[2], ok[c][2]) for c in ok) else "NO")
        print(f"| {name} | {n} | " + " | ".join(ms + ratio) +
              f" | {first} | {vals} | {agrees} |")
        for c in cols:
            if c not in ok and res[c] != NO_TORCH:
                print(f"|   {name} {c} failed: {res[c][:400]} |")
    print()
    print("ratio = torch time / dtensor time (> 1: dtensor faster); f32, TF32 off; "
          "n = steps timed")


if __name__ == "__main__":
    main()
