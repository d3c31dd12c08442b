// This file implements the random gradient programs of the differential
// suite (`dt_diff --grad-fuzz N`): a function of one f64 tensor, a chain of
// differentiable ops each followed by a relayout to a random layout, summed
// to a replicated scalar, and its gradient printed. Shapes favour small and
// size-1 dims (a dim of 1 that a mesh axis shards is where autodiff's
// reshapes and masks went wrong), layouts shard any dim on any axis (groups
// too), and reductions run over sharded dims (partial results), so every
// relayout and every backward rule meets uneven, empty and size-1 blocks.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gradgen {

class GradGen {
public:
  explicit GradGen(uint64_t seed) : rng_(seed) {}

  std::string run() {
    std::vector<int64_t> shape;
    int rank = pick(1, 3);
    for (int i = 0; i < rank; ++i)
      shape.push_back(dim());
    std::string in = type(shape, layout((int)shape.size()));
    std::string body;
    std::vector<int64_t> cur = shape;
    std::string v = "a";
    int steps = pick(2, 6);
    for (int s = 0; s < steps; ++s) {
      std::string next = "t" + std::to_string(s);
      std::string e = op(v, cur);
      body +=
          "  let " + next + " = relayout(" + e + ", " + layoutText(layout((int)cur.size())) + ")\n";
      v = next;
    }
    std::string all;
    for (size_t i = 0; i < cur.size(); ++i)
      all += i ? ", _" : "_";
    return "mesh m = [x = 2, y = 3]\n"
           "fn f(a: " +
           in + ") -> f64[] @ m[] {\n" + body + "  return relayout(sum(" + v + " * " + v +
           "), m[])\n}\n" + "let a : " + in + " = randn(seed=" + std::to_string(pick(1, 999)) +
           ")\nprint(f(a))\nprint(grad(f)(a))\n";
  }

private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(int percent = 50) { return pick(1, 100) <= percent; }
  int64_t dim() {
    static const int64_t sizes[] = {1, 1, 2, 3, 4, 5, 7};
    return sizes[pick(0, 6)];
  }

  /// For each mesh axis (x, y): the dim it shards, or -1.
  std::vector<int> layout(int rank) {
    std::vector<int> l;
    for (int a = 0; a < 2; ++a)
      l.push_back(rank > 0 && coin(70) ? pick(0, rank - 1) : -1);
    return l;
  }
  std::string layoutText(const std::vector<int> &axesOf) {
    static const char *names[] = {"x", "y"};
    int rank = 0;
    for (int d : axesOf)
      rank = std::max(rank, d + 1);
    rank = std::max(rank, rankHint_);
    std::string s = "m[";
    for (int d = 0; d < rank; ++d) {
      std::vector<std::string> on;
      for (int a = 0; a < 2; ++a)
        if (axesOf[a] == d)
          on.push_back(names[a]);
      std::string entry = on.empty()       ? "_"
                          : on.size() == 1 ? on[0]
                                           : "(" + on[0] + ", " + on[1] + ")";
      s += (d ? ", " : "") + entry;
    }
    return s + "]";
  }
  std::string type(const std::vector<int64_t> &shape, const std::vector<int> &l) {
    std::string s = "f64[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(shape[i]);
    rankHint_ = (int)shape.size();
    std::string t = s + "] @ " + layoutText(l);
    return t;
  }

  /// One differentiable op on `v` of shape `shape` (updated to the result's).
  std::string op(const std::string &v, std::vector<int64_t> &shape) {
    int kind = pick(0, 9);
    const int rank = (int)shape.size();
    std::string e;
    if (kind <= 1 || (rank == 1 && kind >= 6)) {
      static const char *unary[] = {"tanh(", "sin(", "sigmoid(", "abs(", "exp(0.5 * "};
      e = std::string(unary[pick(0, 4)]) + v + ")";
    } else if (kind == 2) {
      e = v + " * " + v + " + " + v;
    } else if (kind == 3) {
      e = "(" + v + " - 0.25) * (" + v + " + 2.0)";
    } else if (kind <= 7 && rank >= 2) {
      static const char *reduce[] = {"sum", "mean", "max", "min"};
      int d = pick(0, rank - 1);
      e = std::string(reduce[pick(0, 3)]) + "(" + v + ", dim=" + std::to_string(d) + ")";
      shape.erase(shape.begin() + d);
    } else if (rank == 2) {
      e = "transpose(" + v + ")";
      std::swap(shape[0], shape[1]);
    } else {
      e = "relu(" + v + ") + 0.5 * " + v;
    }
    rankHint_ = (int)shape.size();
    return e;
  }

  std::mt19937_64 rng_;
  int rankHint_ = 0; ///< the rank of the tensor a layout is written for
};

inline std::string generateGradProgram(uint64_t seed) { return GradGen(seed).run(); }

} // namespace gradgen
