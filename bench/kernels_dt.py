"""Before/after timings of the kernel and lowering work of issue 14, through
`dtensorc run` (bench/peers/dt_time.py: a run with 1 + n steps minus a run
with 1 step, over n). Each row has its baseline measured in the same run:

  mlp_1x1     MLP step B512 D1024 H2048 C512 on 1 rank (BLAS threads, folds)
  tmatmul     transpose(a) @ transpose(b), 1024^3   vs   a @ b (same flops)
  sumgrad     y - 0.001 * grad of sum(y * y), y f32[4096, 512] @ m[t] on 4
              ranks, vs the elementwise update y * 0.999 alone
  sum0/sum1   sum over dim 0 / dim 1 of f32[2048, 2048] vs a copy-like
              kernel (x * 1.0: reads and writes 16 MiB) on the same tensor
  math        exp, tanh, sigmoid, gelu, log and a softmax row of f32[2048, 2048] vs the
              x * 1.0 copy of `reduce` (the same bytes)
  slice       sum(q * k + v, dim=1) of three column slices of f32[2048, 3072]
              (a fused qkv split) vs the same of three row slices (contiguous
              blocks, the same bytes) of f32[3072, 2048]

usage: python3 bench/kernels_dt.py DTENSORC [n] [row ...]
  (steps per row: n for mlp_1x1, 2n tmatmul, 4n sumgrad, 8n reduce; best of 3)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from dt_time import time_program, time_text  # noqa: E402


def loop(prelude, body, steps, out):
    return f"{prelude}\nfor step in 0..{steps} {{\n{body}\n}}\nprint({out})\n"


def tmatmul(trans):
    pre = """mesh m = [r = 1]
let ai : f32[1024, 1024] @ m[_, _] = iota(dim=0)
let aj : f32[1024, 1024] @ m[_, _] = iota(dim=1)
let a = sin(ai * 0.01 + aj * 0.003)
let b = cos(ai * 0.002 + aj * 0.01)
var acc = a"""
    # The loop-carried operand keeps the body from being loop-invariant.
    body = ("  acc = transpose(acc) @ transpose(b) * 0.03" if trans
            else "  acc = acc @ b * 0.03")
    return lambda s: loop(pre, body, s, "sum(acc)")


def sumgrad(fwd_only):
    pre = """mesh m = [t = 4]
fn loss(x: f32[4096, 512] @ m[t, _]) -> f32[] @ m[] {
  return relayout(sum(x * x), m[])
}
let xi : f32[4096, 512] @ m[t, _] = iota(dim=0)
let x = sin(xi * 0.01)
var y = x"""
    body = "  y = y * 0.999" if fwd_only else "  y = y - 0.001 * grad(loss)(y)"
    return lambda s: loop(pre, body, s, "relayout(sum(y), m[])")


def reduce_prog(kind):
    pre = """mesh m = [r = 1]
let xi : f32[2048, 2048] @ m[_, _] = iota(dim=0)
let xj : f32[2048, 2048] @ m[_, _] = iota(dim=1)
var x = sin(xi * 0.001 + xj * 0.002)
var s0 : f32[2048] @ m[_] = zeros()
var c : f32[2048, 2048] @ m[_, _] = zeros()"""
    body = {"sum0": "  s0 = sum(x, dim=0)", "sum1": "  s0 = sum(x, dim=1)",
            "copy": "  c = x * 1.0"}[kind]
    return lambda s: loop(pre, body, s, "sum(c)" if kind == "copy" else "sum(s0)")


def math_prog(kind):
    pre = """import nn
mesh m = [r = 1]
let xi : f32[2048, 2048] @ m[_, _] = iota(dim=0)
let xj : f32[2048, 2048] @ m[_, _] = iota(dim=1)
var x = sin(xi * 0.001 + xj * 0.002) * 4.0
var c : f32[2048, 2048] @ m[_, _] = zeros()"""
    body = {"exp": "  c = exp(x)", "tanh": "  c = tanh(x)", "sigmoid": "  c = sigmoid(x)", "gelu": "  c = gelu(x)",
            "log": "  c = log(x + 5.0)", "sin": "  c = sin(x)", "cos": "  c = cos(x * 1000.0)",
            "softmax": "  c = nn.softmax(x)", "copy": "  c = x * 1.0"}[kind]
    return lambda s: loop(pre, body, s, "sum(c)")


def slice_prog(kind):
    pre = f"""mesh m = [r = 1]
let xi : f32[{'2048, 3072' if kind == 'cols' else '3072, 2048'}] @ m[_, _] = iota(dim=0)
var x = sin(xi * 0.001)
var s0 : f32[{'2048' if kind == 'cols' else '1024'}] @ m[_] = zeros()"""
    body = {"cols": "  s0 = s0 + sum(x[:, 0:1024] * x[:, 1024:2048] + x[:, 2048:3072], dim=1)",
            "rows": "  s0 = s0 + sum(x[0:1024, :] * x[1024:2048, :] + x[2048:3072, :], dim=1)"}[kind]
    return lambda s: loop(pre, body, s, "sum(s0)")


ROWS = {
    "mlp_1x1": [("step", None)],
    "tmatmul": [("transposed", tmatmul(True)), ("plain (baseline)", tmatmul(False))],
    "sumgrad": [("grad", sumgrad(False)), ("y * 0.999 (baseline)", sumgrad(True))],
    "reduce": [("sum dim 0", reduce_prog("sum0")), ("sum dim 1", reduce_prog("sum1")),
               ("x * 1.0 copy (baseline)", reduce_prog("copy"))],
    "math": [("exp", math_prog("exp")), ("tanh", math_prog("tanh")),
             ("sigmoid", math_prog("sigmoid")), ("gelu", math_prog("gelu")),
             ("log", math_prog("log")), ("sin", math_prog("sin")),
             ("cos of x * 1000", math_prog("cos")),
             ("softmax", math_prog("softmax")),
             ("x * 1.0 copy (baseline)", math_prog("copy"))],
    "slice": [("column slices", slice_prog("cols")),
              ("row slices (baseline)", slice_prog("rows"))],
}


if __name__ == "__main__":
    exe = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    for row in sys.argv[3:] or list(ROWS):
        base = None
        for label, make in ROWS[row]:
            steps = max(1, n * {"mlp_1x1": 1, "tmatmul": 2, "sumgrad": 4, "reduce": 8,
                                "math": 8, "slice": 8}[row])
            first, step, value, _ = (time_program(exe, row, steps, 3) if make is None
                                     else time_text(exe, make, steps, 3))
            line = f"{row:8s} {label:24s} {step * 1e3:9.2f} ms/step  first {first:6.2f} s"
            if row == "reduce" and step > 0:
                line += f"  {2048 * 2048 * 4 / step / 1e9:6.2f} GB/s read"
            print(line + f"  value {value}", flush=True)
    print("load average: " + " ".join(open("/proc/loadavg").read().split()[:3]))
