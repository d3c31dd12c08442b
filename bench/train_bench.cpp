// Benchmark: one training step of examples/mlp_tp.dt's model (a two-layer
// MLP, column- then row-parallel, cross-entropy loss, Adam) at a size where
// a step takes about a second on one core, timed
//   * on 4 virtual ranks (mesh dp = 2, tp = 2), on 1 rank (mesh 1 x 1), and
//     on the single-device reference evaluator;
//   * forward only (the loss) against forward + backward (value_and_grad),
//     compiled (SPMD-lowered, executor) on 1 and 4 ranks: target ratio <= 3.
// Whole function runs through Executor::run / ReferenceEvaluator::run with
// global arguments (the executor has no finer timing API): times include
// slicing the arguments into blocks and assembling the results. Best of
// `reps` runs after one warm-up (the reference: one run). Not a timed test.
//
// usage: train_bench [B D H C] [reps]   (default 2048 1024 2048 512, 3 reps)
#include "BenchUtil.h"
#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "runtime/Executor.h"
#include "runtime/Reference.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

using namespace dt;
using dt::bench::best;

namespace {

struct Sizes {
  int64_t b = 2048, d = 1024, h = 2048, c = 512;
};

/// The model, its gradient and one Adam step on mesh [dp = P, tp = Q].
std::string program(const Sizes &s, int p, int q) {
  auto n = [](int64_t v) { return std::to_string(v); };
  std::string B = n(s.b), D = n(s.d), H = n(s.h), C = n(s.c);
  std::string W1 = "f32[" + D + ", " + H + "] @ m[_, tp]", B1 = "f32[" + H + "] @ m[tp]";
  std::string W2 = "f32[" + H + ", " + C + "] @ m[tp, _]", B2 = "f32[" + C + "] @ m[_]";
  std::string X = "f32[" + B + ", " + D + "] @ m[dp, _]",
              Y = "f32[" + B + ", " + C + "] @ m[dp, _]";
  std::string S = "f32[] @ m[]";
  return "import nn\nimport optim\nmesh m = [dp = " + n(p) + ", tp = " + n(q) +
         "]\n"
         "fn loss_fn(w1: " +
         W1 + ", b1: " + B1 + ", w2: " + W2 + ", b2: " + B2 + ", x: " + X + ", y: " + Y + ") -> " +
         S +
         " {\n"
         "  let h = relu(nn.column_parallel_linear(x, w1, b1))\n"
         "  let logits = relayout(nn.row_parallel_linear(h, w2), m[dp, _]) + b2\n"
         "  return relayout(nn.cross_entropy(logits, y), m[])\n}\n"
         "fn train_step(w1: " +
         W1 + ", b1: " + B1 + ", w2: " + W2 + ", b2: " + B2 + ", x: " + X + ", y: " + Y +
         ", w1m: " + W1 + ", w1v: " + W1 + ", w2m: " + W2 + ", w2v: " + W2 + ", t: " + S +
         ", lr: " + S + ") -> (" + S + ", " + W1 + ", " + W1 + ", " + W1 + ", " + W2 + ", " + W2 +
         ", " + W2 +
         ") {\n"
         "  let (loss, g1, gb1, g2, gb2) = value_and_grad(loss_fn, wrt=[0, 1, 2, 3])(w1, b1, w2, "
         "b2, x, y)\n"
         "  let (w1n, w1mn, w1vn) = optim.adam_2d(w1, relayout(g1, m[_, tp]), w1m, w1v, t, lr)\n"
         "  let (w2n, w2mn, w2vn) = optim.adam_2d(w2, relayout(g2, m[tp, _]), w2m, w2v, t, lr)\n"
         "  return loss, w1n, w1mn, w1vn, w2n, w2mn, w2vn\n}\n";
}

/// Deterministic arguments for `fn`'s parameters (small uniform values; the
/// labels are one-hot rows; t = 1, lr = 1e-3).
std::vector<HostTensor> arguments(const Function &f) {
  std::vector<HostTensor> out;
  uint64_t st = 12345;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const TensorType &t = f.type(f.params[i]);
    std::vector<int64_t> dims;
    for (auto &d : t.shape)
      dims.push_back(d.value);
    HostTensor h(t.dtype, dims);
    const std::string &name = f.values[f.params[i]].name;
    for (int64_t k = 0; k < h.numel(); ++k) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(st >> 11) / (double)(1ull << 53) - 0.5;
      double v = name == "y"    ? (k % dims.back() == (k / dims.back()) % dims.back() ? 1 : 0)
                 : name == "t"  ? 1.0
                 : name == "lr" ? 1e-3
                 : name == "w1m" || name == "w2m" || name == "w1v" || name == "w2v" ? 0.0
                                                                                    : 0.1 * u;
      h.set(k, v);
    }
    out.push_back(h);
  }
  return out;
}

bool compile(Compilation &s, const std::string &text, bool spmd) {
  PipelineOptions po;
  po.spmd = spmd;
  std::ostringstream log;
  if (s.compile("train_bench.dt", text) && runPipeline(s, po, log))
    return true;
  std::fprintf(stderr, "%s", s.diags.renderAll().c_str());
  return false;
}

const std::string kGrad = "loss_fn.value_and_grad.0.1.2.3";

struct Times {
  double step = 0, fwd = 0, grad = 0;
  double loss = 0;
};

/// Times the compiled step, forward and forward+backward on mesh [p, q].
bool timeMesh(const Sizes &s, int p, int q, int reps, Times &out) {
  Compilation sess(pipelineCompileOptions());
  if (!compile(sess, program(s, p, q), true))
    return false;
  std::ostringstream sink;
  Executor ex(sess.module, sink);
  auto stepArgs = arguments(*sess.module.find("train_step"));
  auto lossArgs = arguments(*sess.module.find("loss_fn"));
  std::vector<HostTensor> r;
  r = ex.run("train_step", stepArgs); // warm-up
  out.loss = r[0].get(0);
  out.step = best(reps, [&] { ex.run("train_step", stepArgs); });
  ex.run("loss_fn", lossArgs);
  out.fwd = best(reps, [&] { ex.run("loss_fn", lossArgs); });
  ex.run(kGrad, lossArgs);
  out.grad = best(reps, [&] { ex.run(kGrad, lossArgs); });
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Sizes s;
  int reps = 3;
  if (argc >= 5) {
    s.b = std::atoll(argv[1]);
    s.d = std::atoll(argv[2]);
    s.h = std::atoll(argv[3]);
    s.c = std::atoll(argv[4]);
  }
  if (argc >= 6)
    reps = std::max(1, std::atoi(argv[5]));
  double flops = 2.0 * s.b * s.h * (s.d + s.c) * 3; // forward + 2x backward matmuls
  std::printf("mlp_tp training step: B=%lld D=%lld H=%lld C=%lld (%.1f GFLOP/step in matmuls), "
              "best of %d\n",
              (long long)s.b, (long long)s.d, (long long)s.h, (long long)s.c, flops * 1e-9, reps);
  Times one, four;
  if (!timeMesh(s, 1, 1, reps, one) || !timeMesh(s, 2, 2, reps, four))
    return 1;
  // The reference evaluator on the global IR (one run: it is the slow oracle).
  Compilation ref(pipelineCompileOptions());
  if (!compile(ref, program(s, 2, 2), false))
    return 1;
  std::ostringstream sink;
  ReferenceEvaluator ev(ref.module, sink);
  auto args = arguments(*ref.module.find("train_step"));
  double refLoss = 0;
  double refStep = best(1, [&] { refLoss = ev.run("train_step", args)[0].get(0); });

  std::printf("loss after the step's forward: 1 rank %.7g, 4 ranks %.7g, reference %.7g\n",
              one.loss, four.loss, refLoss);
  std::printf("train step     : 4 ranks %.4f s | 1 rank %.4f s | reference %.4f s\n", four.step,
              one.step, refStep);
  std::printf(
      "  1 rank / 4 ranks = %.2fx   reference / 1 rank = %.2fx   (%.1f GFLOP/s on 1 rank)\n",
      one.step / four.step, refStep / one.step, flops * 1e-9 / one.step);
  std::printf("forward (loss) : 1 rank %.4f s | 4 ranks %.4f s\n", one.fwd, four.fwd);
  std::printf("fwd + backward : 1 rank %.4f s | 4 ranks %.4f s\n", one.grad, four.grad);
  std::printf("  (fwd + bwd) / fwd = %.2fx on 1 rank, %.2fx on 4 ranks; backward alone / fwd = "
              "%.2fx, %.2fx (target <= 3)\n",
              one.grad / one.fwd, four.grad / four.fwd, (one.grad - one.fwd) / one.fwd,
              (four.grad - four.fwd) / four.fwd);
  return 0;
}
