// A host program that embeds dtensor (docs/embedding.md): it links the
// installed package (find_package(dtensor)), computes the three matmul
// cases of TensorFlow's DTensor overview (seed 000, examples/tf_dtensor_tour.dt)
// from host buffers, runs two training steps of examples/mlp_tp.dt from host
// buffers (examples/embed/mlp_step.dt) and shows that a compile error in
// host-supplied source comes back as a diagnostic value.
//
// usage: embed_example MLP_STEP_DT
// Prints `loss <value>` per step (the test compares them with what
// `dtensorc run examples/mlp_tp.dt` prints); exits 1 on a wrong value.
#include <dtensor/dtensor.hpp>

#include <cstdio>
#include <iostream>
#include <vector>

namespace {

int failures = 0;

void expect(const std::string &what, const std::string &got, const std::string &want) {
  std::cout << what << " " << got << "\n";
  if (got != want) {
    std::cerr << "FAIL: " << what << ": got " << got << ", want " << want << "\n";
    ++failures;
  }
}

/// A copy of a session value in host memory (what a host keeps).
std::vector<float> hostCopy(const dtensor::Tensor &t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: embed_example MLP_STEP_DT\n";
    return 2;
  }
  try {
    // --- Seed 000: the three ways to shard a matmul -------------------------
    dtensor::Session s;
    bool ok = s.compile(R"(
mesh mesh_1d = [x = 6]
mesh mesh_2d = [x = 3, y = 2]
# Case 1: replicated operands; every device runs the same matmul.
fn replicated(a: f32[N, K] @ mesh_1d[_, _], b: f32[K, M] @ mesh_1d[_, _]) -> f32[N, M] @ mesh_1d[_, _] {
  return a @ b
}
# Case 2: the contracted dim sharded on x: a partial sum, all-reduced.
fn contracted(a: f32[N, K] @ mesh_2d[_, x], b: f32[K, M] @ mesh_2d[x, _]) -> f32[N, M] @ mesh_2d[_, _] {
  return relayout(a @ b, mesh_2d[_, _])
}
# Case 3: also a's rows sharded on y; the result keeps its rows on y.
fn rows(a: f32[N, K] @ mesh_2d[y, x], b: f32[K, M] @ mesh_2d[x, _]) -> f32[N, M] @ mesh_2d[y, _] {
  return relayout(a @ b, mesh_2d[y, _])
}
# The partial result itself: the API returns its (reduced) global value.
fn partial(a: f32[N, K] @ mesh_2d[_, x], b: f32[K, M] @ mesh_2d[x, _]) -> f32[N, M] @ mesh_2d{x: partial(sum), y: replicate} {
  return a @ b
}
)",
                        "matmul.dt");
    if (!ok) {
      for (auto &d : s.diagnostics())
        std::cerr << d.rendered;
      return 1;
    }
    std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {6, 5, 4, 3, 2, 1};
    dtensor::TensorView av(a.data(), {2, 3}), bv(b.data(), {3, 2});
    const std::string want = "[[20, 14], [56, 41]]";
    for (const char *fn : {"replicated", "contracted", "rows", "partial"}) {
      auto r = s.call(fn, {av, bv});
      expect(std::string("matmul ") + fn, r[0].str(), want);
      std::cout << "  type " << r[0].type() << "\n";
    }

    // --- A compile error in host-supplied source is a value -----------------
    if (s.compile("let c = relayout(a @, mesh_2d[_, _])\n", "bad.dt")) {
      std::cerr << "FAIL: bad source compiled\n";
      ++failures;
    } else {
      const dtensor::Diagnostic &d = s.diagnostics().at(0);
      std::cout << "diagnostic " << d.kind << " " << d.file << ":" << d.line << ":" << d.column
                << ": " << d.message << "\n";
      if (d.file != "bad.dt" || d.line != 1 || d.severity != dtensor::Diagnostic::Severity::Error)
        ++failures;
    }

    // --- Two training steps of mlp_tp.dt from host buffers --------------------
    dtensor::Session t;
    if (!t.compileFile(argv[1])) {
      for (auto &d : t.diagnostics())
        std::cerr << d.rendered;
      return 1;
    }
    // The host holds every buffer: data, parameters and Adam state.
    std::vector<float> x = hostCopy(t.value("x")), y = hostCopy(t.value("y"));
    std::vector<float> w1 = hostCopy(t.value("w1")), w2 = hostCopy(t.value("w2"));
    std::vector<float> b1(16, 0.f), b2(4, 0.f);
    std::vector<float> w1m(8 * 16), w1v(8 * 16), b1m(16), b1v(16), w2m(16 * 4), w2v(16 * 4), b2m(4),
        b2v(4);
    float lr = 0.05f;
    for (int step = 1; step <= 2; ++step) {
      float tt = (float)step;
      auto r = t.call(
          "train_step",
          {dtensor::TensorView(w1.data(), {8, 16}), dtensor::TensorView(b1.data(), {16}),
           dtensor::TensorView(w2.data(), {16, 4}), dtensor::TensorView(b2.data(), {4}),
           dtensor::TensorView(w1m.data(), {8, 16}), dtensor::TensorView(w1v.data(), {8, 16}),
           dtensor::TensorView(b1m.data(), {16}), dtensor::TensorView(b1v.data(), {16}),
           dtensor::TensorView(w2m.data(), {16, 4}), dtensor::TensorView(w2v.data(), {16, 4}),
           dtensor::TensorView(b2m.data(), {4}), dtensor::TensorView(b2v.data(), {4}),
           dtensor::TensorView(x.data(), {32, 8}), dtensor::TensorView(y.data(), {32, 4}),
           dtensor::TensorView(&tt, {}), dtensor::TensorView(&lr, {})});
      std::cout << "loss " << r[0].str() << "\n";
      std::vector<float> *state[] = {&w1,  &b1,  &w2,  &b2,  &w1m, &w1v,
                                     &b1m, &b1v, &w2m, &w2v, &b2m, &b2v};
      for (int i = 0; i < 12; ++i)
        *state[i] = hostCopy(r[i + 1]);
    }
    std::cout << "compiled instances " << t.compiledCalls() << "\n";
  } catch (const dtensor::Error &e) {
    std::cerr << "dtensor error: " << e.what() << "\n";
    for (auto &d : e.diagnostics)
      std::cerr << d.rendered;
    return 1;
  }
  return failures ? 1 : 0;
}
