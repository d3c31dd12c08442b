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
    cur_ = layout((int)shape.size());
    params_ = {{"a", type(shape, cur_)}};
    std::string body;
    std::vector<int64_t> cur = shape;
    std::string v = "a";
    int steps = pick(2, 6);
    for (int s = 0; s < steps; ++s) {
      std::string next = "t" + std::to_string(s);
      std::string e = op(v, cur);
      cur_ = layout((int)cur.size());
      body += "  let " + next + " = relayout(" + e + ", " + layoutText(cur_) + ")\n";
      v = next;
    }
    // Each gradient printed at its parameter's layout (a gradient may be
    // partial where the parameter met sharded work).
    std::string sig, lets, args, wrt, grads, prints;
    for (size_t i = 0; i < params_.size(); ++i) {
      std::string g = "g" + std::to_string(i);
      grads += (i ? ", " : "") + g;
      const std::string &t = params_[i].second;
      prints += "print(relayout(" + g + ", " + t.substr(t.find("@ ") + 2) + "))\n";
      sig += (i ? ", " : "") + params_[i].first + ": " + params_[i].second;
      lets += "let " + params_[i].first + " : " + params_[i].second +
              " = randn(seed=" + std::to_string(pick(1, 999)) + ")\n";
      args += (i ? ", " : "") + params_[i].first;
      wrt += (i ? ", " : "") + std::to_string(i);
    }
    return "mesh m = [x = 2, y = 3]\nfn f(" + sig + ") -> f64[] @ m[] {\n" + body +
           "  return relayout(sum(" + v + " * " + v + "), m[])\n}\n" + lets + "print(f(" + args +
           "))\nlet " + (params_.size() > 1 ? "(" + grads + ")" : grads) + " = grad(f, wrt=[" +
           wrt + "])(" + args + ")\n" + prints;
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
    } else if (kind == 4 && rank >= 1) {
      // x - mean over the last dim, broadcast back (a size-1 dim against
      // the last dim, sharded or not): the reduced value takes x's shards of
      // the other dims.
      std::vector<int> r = cur_;
      for (int &d : r)
        if (d == rank - 1)
          d = -1;
      rankHint_ = rank - 1;
      std::string red = rank == 1 ? "m[]" : layoutText(r);
      std::string shapeText;
      for (int d = 0; d < rank - 1; ++d)
        shapeText += std::to_string(shape[d]) + ", ";
      e = v + " - reshape(relayout(mean(" + v + ", dim=" + std::to_string(rank - 1) + "), " + red +
          "), [" + shapeText + "1])";
    } else if (kind == 5 && rank == 2) {
      // A matmul with a new parameter w: its dim 0 sharded as v's dim 1 (the
      // contraction), its dim 1 on an axis v leaves free.
      int64_t c = dim();
      std::vector<int> wl(2, -1);
      for (int a = 0; a < 2; ++a)
        wl[a] = cur_[a] == 1 ? 0 : cur_[a] == 0 ? -1 : (coin() ? 1 : -1);
      std::string w = "w" + std::to_string(params_.size());
      params_.push_back({w, type({shape[1], c}, wl)});
      e = v + " @ " + w;
      shape[1] = c;
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
  std::vector<int> cur_;                                    ///< the current value's layout
  std::vector<std::pair<std::string, std::string>> params_; ///< name, type
  int rankHint_ = 0; ///< the rank of the tensor a layout is written for
};

inline std::string generateGradProgram(uint64_t seed) { return GradGen(seed).run(); }

} // namespace gradgen
