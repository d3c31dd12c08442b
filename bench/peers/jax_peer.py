"""The benchmark programs (programs.py) in JAX: jit over virtual CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4 is set before import),
meshes through NamedSharding. Prints one JSON line per program:
{"name", "first_s" (data + compile + one step), "step_s", "value",
"peak_mib" (the process's peak resident memory)}.

usage: python jax_peer.py NAME [steps]
"""
import json
import os
import resource
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import MOD_LR_PARAMS, MOD_LR_TOKENS, PROGRAMS  # noqa: E402


def mlp_data(B, D, H, C):
    f = jnp.float32
    i, j = jnp.meshgrid(jnp.arange(B, dtype=f), jnp.arange(D, dtype=f), indexing="ij")
    x = jnp.sin(i * f(0.37) + j * f(0.11))
    i, j = jnp.meshgrid(jnp.arange(B, dtype=f), jnp.arange(C, dtype=f), indexing="ij")
    y = (j == jnp.mod(i, f(C))).astype(f)
    i, j = jnp.meshgrid(jnp.arange(D, dtype=f), jnp.arange(H, dtype=f), indexing="ij")
    w1 = jnp.cos(i * f(0.13) + j * f(0.07)) * f(1.0 / D ** 0.5)
    i, j = jnp.meshgrid(jnp.arange(H, dtype=f), jnp.arange(C, dtype=f), indexing="ij")
    w2 = jnp.sin(i * f(0.05) + j * f(0.17)) * f(1.0 / H ** 0.5)
    return x, y, w1, jnp.zeros(H, f), w2, jnp.zeros(C, f)


def loss_fn(params, x, y):
    w1, b1, w2, b2 = params
    h = jax.nn.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    z = logits - jnp.max(logits, axis=1, keepdims=True)
    ls = z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
    return -jnp.mean(jnp.sum(y * ls, axis=1))


def adam(p, g, m, v, t, lr):
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * (g * g)
    mhat = m2 / (1.0 - 0.9 ** t)
    vhat = v2 / (1.0 - 0.999 ** t)
    return p - lr * mhat / (jnp.sqrt(vhat) + 1e-8), m2, v2


@jax.jit
def train_step(params, ms, vs, t, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    t = t + 1.0
    out = [adam(p, g, m, v, t, 0.001) for p, g, m, v in zip(params, grads, ms, vs)]
    return loss, tuple(o[0] for o in out), tuple(o[1] for o in out), tuple(o[2] for o in out), t


def run_mlp(name, steps):
    _, (dp, tp), s = PROGRAMS[name]
    t0 = time.perf_counter()
    x, y, w1, b1, w2, b2 = mlp_data(s["B"], s["D"], s["H"], s["C"])
    if dp * tp > 1:
        mesh = Mesh(np.array(jax.devices()[: dp * tp]).reshape(dp, tp), ("dp", "tp"))
        put = lambda a, spec: jax.device_put(a, NamedSharding(mesh, spec))  # noqa: E731
        x, y = put(x, P("dp", None)), put(y, P("dp", None))
        w1, b1 = put(w1, P(None, "tp")), put(b1, P("tp"))
        w2, b2 = put(w2, P("tp", None)), put(b2, P(None))
    params = (w1, b1, w2, b2)
    ms = tuple(jnp.zeros_like(p) for p in params)
    vs = tuple(jnp.zeros_like(p) for p in params)
    t = jnp.float32(0)
    loss, params, ms, vs, t = train_step(params, ms, vs, t, x, y)
    loss.block_until_ready()
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(steps):
        loss, params, ms, vs, t = train_step(params, ms, vs, t, x, y)
    loss.block_until_ready()
    step = (time.perf_counter() - t1) / steps
    return first, step, float(loss)


def ew100(x):
    for _ in range(25):
        x = x * 0.999
        x = x + 0.001
        x = x - 0.0005
        x = x * 1.0001
    return x


def run_ew(name, steps):
    n = PROGRAMS[name][2]["N"]
    f = jnp.float32
    t0 = time.perf_counter()
    x = jnp.sin(jnp.arange(n, dtype=f) * f(0.001))
    step_fn = jax.jit(ew100)
    x = step_fn(x)
    x.block_until_ready()
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(steps):
        x = step_fn(x)
    x.block_until_ready()
    step = (time.perf_counter() - t1) / steps
    return first, step, float(jnp.sum(x))


def mod_loss(tokens, cond, w, ids, up):
    per_sample_scale = cond @ w.T
    per_token_scale = jnp.take(per_sample_scale, ids, axis=0)
    return jnp.sum(per_token_scale * tokens * up)


@jax.jit
def mod_step(tokens, cond, w, ids, up):
    loss, (gt, gc, gw) = jax.value_and_grad(mod_loss, argnums=(0, 1, 2))(tokens, cond, w, ids, up)
    return (loss, tokens - MOD_LR_TOKENS * gt, cond - MOD_LR_PARAMS * gc,
            w - MOD_LR_PARAMS * gw)


def run_mod(name, steps):
    _, (tp,), s = PROGRAMS[name]
    T, H, S = s["T"], s["H"], s["S"]
    f = jnp.float32
    t0 = time.perf_counter()
    i, j = jnp.meshgrid(jnp.arange(T, dtype=f), jnp.arange(H, dtype=f), indexing="ij")
    tokens, up = jnp.sin(i * f(0.37) + j * f(0.11)), jnp.cos(i * f(0.01) + j * f(0.03))
    i, j = jnp.meshgrid(jnp.arange(S, dtype=f), jnp.arange(H, dtype=f), indexing="ij")
    cond = jnp.cos(i * f(0.13) + j * f(0.07))
    i, j = jnp.meshgrid(jnp.arange(H, dtype=f), jnp.arange(H, dtype=f), indexing="ij")
    w = jnp.sin(i * f(0.05) + j * f(0.17)) * f(1.0 / H ** 0.5)
    ids = jnp.arange(T, dtype=jnp.int32) % S
    if tp > 1:
        mesh = Mesh(np.array(jax.devices()[:tp]), ("t",))
        put = lambda a, spec: jax.device_put(a, NamedSharding(mesh, spec))  # noqa: E731
        tokens, up, ids = put(tokens, P("t", None)), put(up, P("t", None)), put(ids, P("t"))
        cond, w = put(cond, P(None, None)), put(w, P(None, None))
    loss, tokens, cond, w = mod_step(tokens, cond, w, ids, up)
    loss.block_until_ready()
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(steps):
        loss, tokens, cond, w = mod_step(tokens, cond, w, ids, up)
    loss.block_until_ready()
    step = (time.perf_counter() - t1) / steps
    return first, step, float(loss)


if __name__ == "__main__":
    name = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    # The value after 1 + steps steps, as the dtensor program prints it.
    run = run_mlp if name.startswith("mlp") else run_mod if name == "modulation" else run_ew
    first, step, value = run(name, steps)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"name": name, "first_s": first, "step_s": step, "value": value,
                      "peak_mib": peak, "version": "jax " + jax.__version__}))
