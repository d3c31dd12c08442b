"""The benchmark programs (programs.py) in PyTorch: the MLP steps and the
modulation as DTensor programs over a CPU DeviceMesh with gloo, one process
per rank (the mesh of the dtensor program); the elementwise loop as eager
single-process tensors (DTensor adds nothing on one rank). Rank 0 prints one
JSON line: {"name", "first_s" (data + first step), "step_s", "value",
"peak_mib" (peak resident memory, summed over the ranks' processes)}.

usage: python torch_peer.py NAME [steps]
"""
import json
import os
import resource
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import MOD_LR_PARAMS, MOD_LR_TOKENS, PROGRAMS  # noqa: E402

try:
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
except ImportError:  # torch < 2.4
    from torch.distributed._tensor import DTensor, Replicate, Shard, distribute_tensor
    from torch.distributed._tensor.placement_types import _Partial as Partial
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402


def grid(r, c):
    i = torch.arange(r, dtype=torch.float32).reshape(r, 1).expand(r, c)
    j = torch.arange(c, dtype=torch.float32).reshape(1, c).expand(r, c)
    return i, j


def report(rank, out, first, step_s, value):
    """Rank 0 sends the timings and the value, with the peak resident memory
    summed over the ranks' processes."""
    peak = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0],
                        dtype=torch.float64)
    dist.all_reduce(peak)
    if rank == 0:
        out.put((first, step_s, value, float(peak[0])))


def mlp_rank(rank, world, port, name, steps, out):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    _, (dp, tp), s = PROGRAMS[name]
    B, D, H, C = s["B"], s["D"], s["H"], s["C"]
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    R, S0, S1 = Replicate(), Shard(0), Shard(1)
    t0 = time.perf_counter()
    i, j = grid(B, D)
    x = distribute_tensor(torch.sin(i * 0.37 + j * 0.11), mesh, [S0, R])
    i, j = grid(B, C)
    y = distribute_tensor((j == torch.remainder(i, float(C))).float(), mesh, [S0, R])
    i, j = grid(D, H)
    w1 = distribute_tensor(torch.cos(i * 0.13 + j * 0.07) * (1.0 / D ** 0.5), mesh, [R, S1])
    b1 = distribute_tensor(torch.zeros(H), mesh, [R, S0])
    i, j = grid(H, C)
    w2 = distribute_tensor(torch.sin(i * 0.05 + j * 0.17) * (1.0 / H ** 0.5), mesh, [R, S0])
    b2 = distribute_tensor(torch.zeros(C), mesh, [R, R])
    params = [w1, b1, w2, b2]
    for p in params:
        p.requires_grad_(True)
    ms = [torch.zeros_like(p) for p in params]
    vs = [torch.zeros_like(p) for p in params]
    t = 0.0

    def step():
        nonlocal t
        for p in params:
            p.grad = None
        h = torch.relu(x @ params[0] + params[1])
        logits = h @ params[2] + params[3]
        ls = torch.log_softmax(logits, dim=1)
        loss = -(y * ls).sum(dim=1).mean()
        loss.backward()
        t += 1.0
        with torch.no_grad():
            for k, p in enumerate(params):
                g = p.grad
                if g.placements != p.placements:
                    g = g.redistribute(p.device_mesh, p.placements)
                ms[k] = 0.9 * ms[k] + 0.1 * g
                vs[k] = 0.999 * vs[k] + 0.001 * (g * g)
                mhat = ms[k] / (1.0 - 0.9 ** t)
                vhat = vs[k] / (1.0 - 0.999 ** t)
                p -= 0.001 * mhat / (torch.sqrt(vhat) + 1e-8)
        return loss

    loss = step().full_tensor().item()
    first = time.perf_counter() - t0
    dist.barrier()
    t1 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    loss = loss.full_tensor().item()
    dist.barrier()
    step_s = (time.perf_counter() - t1) / steps
    report(rank, out, first, step_s, loss)
    dist.destroy_process_group()


def run_ranks(target, name, steps):
    world = 1
    for n in PROGRAMS[name][1]:
        world *= n
    with socket.socket() as sck:
        sck.bind(("127.0.0.1", 0))
        port = sck.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(r, world, port, name, steps, q))
             for r in range(world)]
    for p in procs:
        p.start()
    res = q.get()
    for p in procs:
        p.join()
    return res


def run_ew(name, steps):
    n = PROGRAMS[name][2]["N"]
    t0 = time.perf_counter()
    x = torch.sin(torch.arange(n, dtype=torch.float32) * 0.001)

    def step(x):
        for _ in range(25):
            x = x * 0.999
            x = x + 0.001
            x = x - 0.0005
            x = x * 1.0001
        return x

    x = step(x)
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(steps):
        x = step(x)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return first, (time.perf_counter() - t1) / steps, float(x.sum()), peak


def mod_rank(rank, world, port, name, steps, out):
    """Seed 001's modulation as PyTorch users write it with DTensor: the
    tokens sharded, cond and weight replicated. index_select has no sharding
    rule for a sharded index, so the gather runs on local tensors, and the
    replicated scale leaves DTensor with `grad_placements=[Partial()]` (the
    default, Replicate, is seed 001's silently wrong gradient)."""
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    _, (tp,), s = PROGRAMS[name]
    T, H, S = s["T"], s["H"], s["S"]
    mesh = init_device_mesh("cpu", (tp,), mesh_dim_names=("t",))
    R, S0 = Replicate(), Shard(0)
    t0 = time.perf_counter()
    i, j = grid(T, H)
    tokens = distribute_tensor(torch.sin(i * 0.37 + j * 0.11), mesh, [S0])
    up = distribute_tensor(torch.cos(i * 0.01 + j * 0.03), mesh, [S0]).to_local()
    i, j = grid(S, H)
    cond = distribute_tensor(torch.cos(i * 0.13 + j * 0.07), mesh, [R])
    i, j = grid(H, H)
    w = distribute_tensor(torch.sin(i * 0.05 + j * 0.17) * (1.0 / H ** 0.5), mesh, [R])
    ids = distribute_tensor(torch.arange(T, dtype=torch.int64) % S, mesh, [S0]).to_local()
    params = [tokens, cond, w]
    for p in params:
        p.requires_grad_(True)
    lrs = [MOD_LR_TOKENS, MOD_LR_PARAMS, MOD_LR_PARAMS]

    def step():
        for p in params:
            p.grad = None
        per_sample_scale = (params[1] @ params[2].t()).to_local(grad_placements=[Partial()])
        per_token_scale = per_sample_scale.index_select(0, ids)
        local = (per_token_scale * params[0].to_local() * up).sum()
        loss = DTensor.from_local(local, mesh, [Partial()]).full_tensor()
        loss.backward()
        with torch.no_grad():
            for p, lr in zip(params, lrs):
                g = p.grad
                if g.placements != p.placements:
                    g = g.redistribute(p.device_mesh, p.placements)
                p -= lr * g
        return loss

    loss = step().item()
    first = time.perf_counter() - t0
    dist.barrier()
    t1 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    loss = loss.item()
    dist.barrier()
    step_s = (time.perf_counter() - t1) / steps
    report(rank, out, first, step_s, loss)
    dist.destroy_process_group()


if __name__ == "__main__":
    name = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    if name.startswith("mlp") or name == "modulation":
        target = mlp_rank if name.startswith("mlp") else mod_rank
        first, step, value, peak = run_ranks(target, name, steps)
    else:
        first, step, value, peak = run_ew(name, steps)
    print(json.dumps({"name": name, "first_s": first, "step_s": step, "value": value,
                      "peak_mib": peak, "version": "torch " + torch.__version__ +
                      (" eager" if name == "ew100" else " DTensor gloo")}))
