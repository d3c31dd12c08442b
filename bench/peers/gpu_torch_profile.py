"""Where PyTorch's step of a GPU program goes: gpu_peers.py's torch step
(torch.compile, or eager with --eager) run under torch.profiler, its CUDA
kernels' device time per step, largest first. The counterpart of
`dtensorc run --profile` (and of `ncu` on dtensorc) when dtensor trails.

  python3 bench/peers/gpu_torch_profile.py [--programs modulation_gpu] [--eager] [--steps 10]
  python3 bench/peers/gpu_torch_profile.py --cpu-smoke   # no GPU: tiny sizes, CPU ops
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_peers  # noqa: E402
from programs import GPU_PROGRAMS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default="modulation_gpu")
    ap.add_argument("--eager", action="store_true", help="eager torch, not torch.compile")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rows", type=int, default=25)
    ap.add_argument("--cpu-smoke", action="store_true")
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu_peers.torch = torch
    dev = "cpu" if a.cpu_smoke else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    for name in a.programs.split(","):
        sizes = {**GPU_PROGRAMS[name][2], **(gpu_peers.SMOKE[name] if a.cpu_smoke else {})}
        setup, step = gpu_peers.MODELS[name]
        fn = step if a.eager else torch.compile(step)
        state, data = setup(sizes, dev)
        for _ in range(3):  # compile and warm up
            loss, state = fn(state, *data)
        sync()
        with profile(activities=acts) as prof:
            for _ in range(a.steps):
                loss, state = fn(state, *data)
            sync()
        key = "self_device_time_total" if dev == "cuda" else "self_cpu_time_total"
        # The kernels themselves (an aten op's row repeats its kernels' time).
        kernel = torch.autograd.DeviceType.CUDA if dev == "cuda" else None
        events = [e for e in prof.key_averages() if getattr(e, key, 0) > 0 and
                  (kernel is None or getattr(e, "device_type", kernel) == kernel)]
        events.sort(key=lambda e: -getattr(e, key))
        total = sum(getattr(e, key) for e in events)
        print(f"{name} ({'eager' if a.eager else 'torch.compile'}, {dev}): "
              f"{total / a.steps / 1e3:.3f} ms of {'kernels' if dev == 'cuda' else 'ops'} "
              f"per step, loss {loss.item():.6g}")
        print(f"{'ms/step':>9} {'calls/step':>10}  kernel")
        for e in events[:a.rows]:
            print(f"{getattr(e, key) / a.steps / 1e3:9.4f} {e.count / a.steps:10.1f}  {e.key[:110]}")
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
