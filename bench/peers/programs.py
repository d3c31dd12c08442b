"""The benchmark programs, written once per system (dtensor .dt text here;
jax_peer.py and torch_peer.py spell the same computations).

Every program runs `steps` iterations of its step after making its data, and
prints one value at the end (a loss or a sum) so the systems' values can be
compared. Data: dtensor draws inputs with its layout-invariant RNG; the peers
read the same tensors from the .npy files that `dtensorc` cannot write, so
instead every program here starts from deterministic closed-form data
(sin/cos of an index) that all three systems compute identically.
"""

# name -> (description, mesh shape, sizes)
PROGRAMS = {
    "mlp_tp_2x2": ("small MLP TP step (mlp_tp.dt sizes), 2x2", (2, 2),
                   dict(B=32, D=8, H=16, C=4)),
    "mlp_1x1": ("MLP step B512 D1024 H2048 C512, 1x1", (1, 1),
                dict(B=512, D=1024, H=2048, C=512)),
    "mlp_2x2": ("MLP step B512 D1024 H2048 C512, 2x2", (2, 2),
                dict(B=512, D=1024, H=2048, C=512)),
    "mlp_1x4": ("MLP step B512 D1024 H2048 C512, 4 ranks (tp=4)", (1, 4),
                dict(B=512, D=1024, H=2048, C=512)),
    "modulation": ("seed 001 modulation fwd+bwd+SGD, T4096 H512 S16, tp=4", (4,),
                   dict(T=4096, H=512, S=16)),
    "ew100": ("100-op elementwise loop, f32[1048576], 1 rank", (1, 1), dict(N=1 << 20)),
}

# One-GPU sizes, for gpu_peers.py (`dtensorc run --backend cuda` against torch
# on one CUDA device); kept apart so table.py's CPU table stays as it is.
GPU_PROGRAMS = {
    "mlp_gpu": ("MLP step B4096 D4096 H16384 C4096, 1 GPU", (1, 1),
                dict(B=4096, D=4096, H=16384, C=4096)),
    "modulation_gpu": ("seed 001 modulation fwd+bwd+SGD, T16384 H4096 S16, 1 GPU", (1,),
                       dict(T=16384, H=4096, S=16)),
}


def mlp_dt(steps, B, D, H, C, dp, tp):
    """The mlp_tp.dt model (column- then row-parallel MLP, cross-entropy,
    Adam on the two weights and biases) on mesh [dp, tp]."""
    return f"""import nn
import optim
mesh m = [dp = {dp}, tp = {tp}]
fn loss_fn(w1: f32[{D}, {H}] @ m[_, tp], b1: f32[{H}] @ m[tp], w2: f32[{H}, {C}] @ m[tp, _],
           b2: f32[{C}] @ m[_], x: f32[{B}, {D}] @ m[dp, _], y: f32[{B}, {C}] @ m[dp, _]) -> f32[] @ m[] {{
  let h = relu(nn.column_parallel_linear(x, w1, b1))
  let logits = relayout(nn.row_parallel_linear(h, w2), m[dp, _]) + b2
  return relayout(nn.cross_entropy(logits, y), m[])
}}
let xi : f32[{B}, {D}] @ m[dp, _] = iota(dim=0)
let xj : f32[{B}, {D}] @ m[dp, _] = iota(dim=1)
let x = sin(xi * 0.37 + xj * 0.11)
let yi : f32[{B}, {C}] @ m[dp, _] = iota(dim=0)
let yj : f32[{B}, {C}] @ m[dp, _] = iota(dim=1)
let y = cast(yj == yi % {C}.0, f32)
let w1i : f32[{D}, {H}] @ m[_, tp] = iota(dim=0)
let w1j : f32[{D}, {H}] @ m[_, tp] = iota(dim=1)
var w1 : f32[{D}, {H}] @ m[_, tp] = cos(w1i * 0.13 + w1j * 0.07) * {1.0 / D ** 0.5}
var b1 : f32[{H}] @ m[tp] = zeros()
let w2i : f32[{H}, {C}] @ m[tp, _] = iota(dim=0)
let w2j : f32[{H}, {C}] @ m[tp, _] = iota(dim=1)
var w2 : f32[{H}, {C}] @ m[tp, _] = sin(w2i * 0.05 + w2j * 0.17) * {1.0 / H ** 0.5}
var b2 : f32[{C}] @ m[_] = zeros()
var w1_m : f32[{D}, {H}] @ m[_, tp] = zeros()
var w1_v : f32[{D}, {H}] @ m[_, tp] = zeros()
var b1_m : f32[{H}] @ m[tp] = zeros()
var b1_v : f32[{H}] @ m[tp] = zeros()
var w2_m : f32[{H}, {C}] @ m[tp, _] = zeros()
var w2_v : f32[{H}, {C}] @ m[tp, _] = zeros()
var b2_m : f32[{C}] @ m[_] = zeros()
var b2_v : f32[{C}] @ m[_] = zeros()
var t : f32[] @ m[] = zeros()
var last : f32[] @ m[] = zeros()
let lr : f32[] @ m[] = full(0.001)
for step in 0..{steps} {{
  let (loss, g_w1, g_b1, g_w2, g_b2) = value_and_grad(loss_fn, wrt=[0, 1, 2, 3])(w1, b1, w2, b2, x, y)
  last = loss
  t = t + 1.0
  let (w1n, w1mn, w1vn) = optim.adam_2d(w1, relayout(g_w1, m[_, tp]), w1_m, w1_v, t, lr)
  let (b1n, b1mn, b1vn) = optim.adam_1d(b1, relayout(g_b1, m[tp]), b1_m, b1_v, t, lr)
  let (w2n, w2mn, w2vn) = optim.adam_2d(w2, relayout(g_w2, m[tp, _]), w2_m, w2_v, t, lr)
  let (b2n, b2mn, b2vn) = optim.adam_1d(b2, relayout(g_b2, m[_]), b2_m, b2_v, t, lr)
  w1 = w1n
  w1_m = w1mn
  w1_v = w1vn
  b1 = b1n
  b1_m = b1mn
  b1_v = b1vn
  w2 = w2n
  w2_m = w2mn
  w2_v = w2vn
  b2 = b2n
  b2_m = b2mn
  b2_v = b2vn
}}
print(last)
"""


def ew100_body(v):
    """100 elementwise ops on `v` (the same chain in every system):
    25 x (v * 0.999 + 0.001, then v - 0.0005, then v * 1.0001)."""
    ops = []
    for _ in range(25):
        ops += [f"{v} = {v} * 0.999", f"{v} = {v} + 0.001", f"{v} = {v} - 0.0005",
                f"{v} = {v} * 1.0001"]
    return ops


def ew100_dt(steps, N):
    body = "\n".join("  " + o for o in ew100_body("x"))
    return f"""mesh m = [r = 1]
let i : f32[{N}] @ m[_] = iota(dim=0)
var x : f32[{N}] @ m[_] = sin(i * 0.001)
for step in 0..{steps} {{
{body}
}}
print(sum(x))
"""


# Seed 001's modulation (examples/modulation.dt), token-parallel: each step
# takes the loss's value and gradients with respect to the tokens, the
# conditioning and the projection, then an SGD step on all three. Learning
# rates are small enough that the values stay finite for hundreds of steps.
MOD_LR_TOKENS, MOD_LR_PARAMS = 1e-3, 1e-7


def modulation_dt(steps, T, H, S, tp):
    return f"""mesh m = [t = {tp}]
fn loss_fn(tokens: f32[{T}, {H}] @ m[t, _], cond: f32[{S}, {H}] @ m[_, _], ids: i32[{T}] @ m[t],
           w: f32[{H}, {H}] @ m[_, _], up: f32[{T}, {H}] @ m[t, _]) -> f32[] @ m[] {{
  let per_sample_scale = cond @ transpose(w)
  let per_token_scale = index_select(per_sample_scale, ids)
  return relayout(sum(per_token_scale * tokens * up), m[])
}}
let ti : f32[{T}, {H}] @ m[t, _] = iota(dim=0)
let tj : f32[{T}, {H}] @ m[t, _] = iota(dim=1)
var tokens : f32[{T}, {H}] @ m[t, _] = sin(ti * 0.37 + tj * 0.11)
let up = cos(ti * 0.01 + tj * 0.03)
let ci : f32[{S}, {H}] @ m[_, _] = iota(dim=0)
let cj : f32[{S}, {H}] @ m[_, _] = iota(dim=1)
var cond : f32[{S}, {H}] @ m[_, _] = cos(ci * 0.13 + cj * 0.07)
let wi : f32[{H}, {H}] @ m[_, _] = iota(dim=0)
let wj : f32[{H}, {H}] @ m[_, _] = iota(dim=1)
var w : f32[{H}, {H}] @ m[_, _] = sin(wi * 0.05 + wj * 0.17) * {1.0 / H ** 0.5}
let ii : i32[{T}] @ m[t] = iota(dim=0)
let ids = ii % {S}
var last : f32[] @ m[] = zeros()
for step in 0..{steps} {{
  let (loss, g_tok, g_cond, g_w) = value_and_grad(loss_fn, wrt=[0, 1, 3])(tokens, cond, ids, w, up)
  last = loss
  tokens = tokens - {MOD_LR_TOKENS} * g_tok
  cond = cond - {MOD_LR_PARAMS} * relayout(g_cond, m[_, _])
  w = w - {MOD_LR_PARAMS} * relayout(g_w, m[_, _])
}}
print(last)
"""


def dt_program(name, steps, sizes=None):
    """The program `name` (of PROGRAMS or GPU_PROGRAMS) running `steps` steps;
    `sizes` overrides its sizes (gpu_peers.py's CPU smoke test)."""
    _, mesh, s = {**PROGRAMS, **GPU_PROGRAMS}[name]
    s = {**s, **(sizes or {})}
    if name.startswith("mlp"):
        return mlp_dt(steps, s["B"], s["D"], s["H"], s["C"], mesh[0], mesh[1])
    if name.startswith("modulation"):
        return modulation_dt(steps, s["T"], s["H"], s["S"], mesh[0])
    return ew100_dt(steps, s["N"])
