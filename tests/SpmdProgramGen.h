// This file implements the random program generator of the differential
// tests: well-typed random .dt programs (random mesh, shapes, dtypes —
// bf16 and f16 included — layouts, ops and relayouts, including partial
// values, uneven and size-0 blocks) whose every intermediate is printed through a relayout to a
// random layout. The generator tracks each value's type with the placement
// rule of DESIGN.md, so a program it writes that the checker rejects is a
// bug too. Deterministic in the seed (std::mt19937_64), so a failure is
// reproduced by its seed alone. Header-only; used by tests/diff_runner.cpp
// and tests/unit/spmd_fuzz_test.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dt::gen {

/// Placement per mesh axis: kRep, a dim >= 0 (shard), or a partial op.
constexpr int kRep = -1, kSum = -2, kMax = -3, kMin = -4;

struct GType {
  std::string dtype; ///< f32, f64, bf16, f16, i32, i64, bool
  std::vector<int64_t> shape;
  std::vector<int> pl; ///< one per mesh axis
  /// Per mesh axis: its place in the group of axes sharding the same dim
  /// (ties in mesh order; empty: every group in mesh order).
  std::vector<int> ord;
};

class ProgramGen {
public:
  explicit ProgramGen(uint64_t seed) : rng_(seed) {}

  std::string run() {
    int axes = pick(1, 3);
    const char *names[] = {"x", "y", "z"};
    out_ = "# random program\nmesh m = [";
    for (int a = 0; a < axes; ++a) {
      axisNames_.push_back(names[a]);
      out_ += std::string(a ? ", " : "") + names[a] + " = 2";
    }
    out_ += "]\n";
    int n = pick(6, 12);
    for (int i = 0; i < n; ++i)
      step();
    for (size_t i = 0; i < pool_.size(); i += 1 + (size_t)pick(0, 1))
      printValue((int)i);
    return out_;
  }

private:
  static bool isFloat(const std::string &d) {
    return d == "f32" || d == "f64" || d == "bf16" || d == "f16";
  }
  /// bf16/f16: storage types whose values are compared with a loose
  /// tolerance (one rounding, runtime/Verify.cpp). A sum of them rounds each
  /// rank's partial block, which differs from one device by more than one
  /// rounding, so sums and matmuls of them run in f32 between casts (as a
  /// model accumulates), and a cast never widens one into a tighter type.
  static bool isLowp(const std::string &d) { return d == "bf16" || d == "f16"; }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(int pct = 50) { return pick(1, 100) <= pct; }

  /// The axes sharding dim `d`, major first.
  static std::vector<int> group(const GType &t, int d) {
    std::vector<int> g;
    for (size_t a = 0; a < t.pl.size(); ++a)
      if (t.pl[a] == d)
        g.push_back((int)a);
    auto key = [&](int a) { return t.ord.empty() ? 0 : t.ord[a]; };
    std::stable_sort(g.begin(), g.end(), [&](int a, int b) { return key(a) < key(b); });
    return g;
  }

  /// The placement form (`order=` on a group not in mesh order) or, every
  /// third time for a layout with no partial axis, seed 003's integer dims
  /// mapping `m[(1, 0), -1]`, so both notations meet every layout.
  std::string layoutStr(const GType &t) const {
    bool partial = false;
    for (int p : t.pl)
      partial |= p < kRep;
    if (!partial && ++notation_ % 3 == 0) {
      std::string r = "m[";
      for (size_t d = 0; d < t.shape.size(); ++d) {
        auto g = group(t, (int)d);
        std::string e = g.empty() ? "-1" : "";
        for (size_t i = 0; i < g.size(); ++i)
          e += (i ? ", " : "") + std::to_string(g[i]);
        r += (d ? ", " : "") + (g.size() > 1 ? "(" + e + ")" : e);
      }
      return r + "]";
    }
    std::string r = "m{";
    for (size_t a = 0; a < t.pl.size(); ++a) {
      int p = t.pl[a];
      std::string s = p == kRep   ? "replicate"
                      : p == kSum ? "partial(sum)"
                      : p == kMax ? "partial(max)"
                      : p == kMin ? "partial(min)"
                                  : "shard(" + std::to_string(p) + ")";
      if (p >= 0) {
        auto g = group(t, p);
        if (!std::is_sorted(g.begin(), g.end()))
          s = "shard(" + std::to_string(p) +
              ", order=" + std::to_string(std::find(g.begin(), g.end(), (int)a) - g.begin()) + ")";
      }
      r += (a ? ", " : "") + axisNames_[a] + ": " + s;
    }
    return r + "}";
  }

  /// Gives each multi-axis group of `t` a random order (half the time).
  void drawOrder(GType &t) {
    t.ord.assign(t.pl.size(), 0);
    for (size_t d = 0; d < t.shape.size(); ++d) {
      auto g = group(t, (int)d);
      if (g.size() < 2 || coin())
        continue;
      std::shuffle(g.begin(), g.end(), rng_);
      for (size_t i = 0; i < g.size(); ++i)
        t.ord[g[i]] = (int)i;
    }
  }
  std::string typeStr(const GType &t) const {
    std::string r = t.dtype + "[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      r += (i ? ", " : "") + std::to_string(t.shape[i]);
    return r + "] @ " + layoutStr(t);
  }

  /// A random non-partial layout for a tensor of rank `rank`.
  std::vector<int> randomLayout(int rank) {
    std::vector<int> pl;
    for (size_t a = 0; a < axisNames_.size(); ++a)
      pl.push_back(rank > 0 && coin(60) ? pick(0, rank - 1) : kRep);
    return pl;
  }

  std::string fresh() { return "v" + std::to_string(counter_++); }

  /// Emits `let NAME = expr` for a value of type `t` and adds it to the pool.
  int define(const std::string &expr, const GType &t) {
    std::string name = fresh();
    out_ += "let " + name + " = " + expr + "\n";
    pool_.push_back({name, t});
    return (int)pool_.size() - 1;
  }

  int source(std::string dtype, std::vector<int64_t> shape) {
    GType t{dtype, shape, randomLayout((int)shape.size()), {}};
    drawOrder(t);
    std::string name = fresh();
    std::string init;
    bool ties = !shape.empty() && coin(15); // float iota: equal values along the other dims
    if (isFloat(dtype) && !ties)
      init = coin() ? "randn(seed=" + std::to_string(pick(1, 999)) + ")"
                    : "rand(seed=" + std::to_string(pick(1, 999)) + ")";
    else
      init =
          "arange(dim=" + std::to_string(shape.empty() ? 0 : pick(0, (int)shape.size() - 1)) + ")";
    if (shape.empty())
      init = isFloat(dtype) ? "full(1.5)" : "full(3)";
    out_ += "let " + name + " : " + typeStr(t) + " = " + init + "\n";
    pool_.push_back({name, t});
    if (isFloat(dtype) && !ties && coin(15))
      return nonFinite((int)pool_.size() - 1);
    return (int)pool_.size() - 1;
  }

  /// `v` with NaN where v > 0.8 and -inf where v < -1.2 (randn values), so
  /// max/min reductions, their partials and collectives see non-finite
  /// elements on any rank.
  int nonFinite(int v) {
    const std::string &n = pool_[v].name;
    GType t = pool_[v].t;
    return define("where(" + n + " > 0.8, " + n + " / 0.0 * 0.0, where(" + n + " < -1.2, -1.0 / (" +
                      n + " * 0.0), " + n + "))",
                  t);
  }

  /// A linear op on a partial value, as the checker's linearity table allows
  /// it for the dtype (never integer `/`), then relayouted to be printed.
  void onPartial() {
    std::vector<int> partials;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (isPartial(pool_[i].t) && pool_[i].t.dtype != "bool") // no linear op takes a bool
        partials.push_back((int)i);
    if (partials.empty())
      return;
    int v = partials[pick(0, (int)partials.size() - 1)];
    GType t = pool_[v].t;
    bool fl = isFloat(t.dtype), sum = false;
    for (int p : t.pl)
      sum |= p == kSum;
    const std::string &n = pool_[v].name;
    std::string e;
    if (!sum) // partial(max)/partial(min): only element moves and max/min of its own kind
      e = t.shape.size() == 2 ? "transpose(" + n + ")" : "-(-" + n + ")";
    else if (fl)
      e = std::vector<std::string>{n + " * 2.5", n + " / 4.0", "-" + n, n + " + " + n}[pick(0, 3)];
    else
      e = std::vector<std::string>{n + " * 3", n + " * -1", "-" + n, n + " - " + n}[pick(0, 3)];
    GType r = t;
    if (!sum && t.shape.size() == 2) {
      std::swap(r.shape[0], r.shape[1]);
      for (auto &p : r.pl)
        if (p >= 0)
          p = 1 - p;
    } else if (!sum) {
      return; // -(-x) flips max to min and back: the checker rejects it, rightly
    }
    int w = define(e, r);
    relayoutTo(w, randomLayout((int)r.shape.size()));
  }

  int64_t size() { return coin(10) ? 0 : pick(1, 9); }

  int anySource() {
    static const char *dts[] = {"f32", "f32", "f64", "i32", "i64", "bf16", "f16"};
    std::vector<int64_t> shape;
    int rank = pick(1, 3);
    for (int i = 0; i < rank; ++i)
      shape.push_back(size());
    return source(dts[pick(0, 6)], shape);
  }

  /// `relayout(v, L)` to a random layout (partial targets only for floats and
  /// ints under sum), as a new pool value.
  int relayoutTo(int v, std::vector<int> pl, const std::vector<int> *ord = nullptr) {
    GType t = pool_[v].t;
    t.pl = std::move(pl);
    if (ord)
      t.ord = *ord;
    else
      drawOrder(t);
    return define("relayout(" + pool_[v].name + ", " + layoutStr(t) + ")", t);
  }

  /// A value of the same type as `like`: a fresh source relayouted to it.
  int sameTypeAs(int like) {
    GType t = pool_[like].t; // a copy: source() grows the pool
    int s = source(t.dtype, t.shape);
    return relayoutTo(s, t.pl, &t.ord);
  }

  void step() {
    if (pool_.empty() || coin(20)) {
      anySource();
      return;
    }
    std::vector<int> plain; // values that are not partial: any op may use them
    for (size_t i = 0; i < pool_.size(); ++i)
      if (!isPartial(pool_[i].t))
        plain.push_back((int)i);
    if (plain.empty()) {
      anySource();
      return;
    }
    int v = plain[pick(0, (int)plain.size() - 1)];
    GType t = pool_[v].t;
    bool fl = isFloat(t.dtype), bl = t.dtype == "bool";
    switch (pick(0, 11)) {
    case 11:
      controlOrSampling(v);
      return;
    case 0: { // relayout through a partial (sum) or a random layout
      std::vector<int> mid = randomLayout((int)t.shape.size());
      if (coin(40) && !isLowp(t.dtype))
        mid[pick(0, (int)mid.size() - 1)] = kSum;
      int p = relayoutTo(v, mid);
      relayoutTo(p, randomLayout((int)t.shape.size()));
      return;
    }
    case 1: { // unary
      static const char *fu[] = {"exp(tanh(", "sin(",  "relu(", "abs(",     "sigmoid(",
                                 "-(",        "gelu(", "erf(",  "softplus("};
      if (!fl) {
        define((bl ? "!(" : "-(") + pool_[v].name + ")", t);
        return;
      }
      int k = pick(0, 8);
      std::string close = k == 0 ? "))" : ")";
      define(std::string(fu[k]) + pool_[v].name + close, t);
      return;
    }
    case 2: { // binary with a value of the same type
      int w = sameTypeAs(v);
      static const char *ops[] = {" + ", " - ", " * "};
      const char *op = bl ? (coin() ? " && " : " || ") : ops[pick(0, 2)];
      if (!bl && coin(25)) {
        GType b = t;
        b.dtype = "bool";
        define(pool_[v].name + " < " + pool_[w].name, b);
        return;
      }
      define(pool_[v].name + op + pool_[w].name, t);
      return;
    }
    case 3:
      reduce(v);
      return;
    case 4:
      if (coin())
        einsum(t.dtype);
      else
        matmul(t.dtype);
      return;
    case 5: { // transpose of a 2-D value
      if (t.shape.size() != 2)
        return;
      GType r = t;
      std::swap(r.shape[0], r.shape[1]);
      for (auto &p : r.pl)
        if (p >= 0)
          p = 1 - p;
      define("transpose(" + pool_[v].name + ")", r);
      return;
    }
    case 6: { // cast: ints to anything, a float to a narrower float (never
              // widening a float's rounding error into a dtype with a tighter
              // tolerance): f64 -> f32/bf16/f16, f32 -> bf16/f16, f16 -> bf16
      if (bl || t.dtype == "bf16")
        return;
      static const char *dts[] = {"f32", "f64", "i32", "i64", "bf16", "f16"};
      static const char *narrower[] = {"bf16", "f16", "f32"};
      GType r = t;
      r.dtype = !fl                ? dts[pick(0, 5)]
                : t.dtype == "f16" ? "bf16"
                : t.dtype == "f32" ? narrower[pick(0, 1)]
                                   : narrower[pick(0, 2)];
      define("cast(" + pool_[v].name + ", " + r.dtype + ")", r);
      return;
    }
    case 7: { // where with a comparison of two same-typed values
      if (bl)
        return;
      int w = sameTypeAs(v);
      define("where(" + pool_[v].name + " < " + pool_[w].name + ", " + pool_[v].name + ", " +
                 pool_[w].name + ")",
             t);
      return;
    }
    case 8:
      if (coin())
        indexAdd(v);
      else
        indexSelect(v);
      return;
    case 10:
      sliceOrJoin(v);
      return;
    case 9:
      if (coin())
        onPartial();
      else
        anySource();
      return;
    default:
      anySource();
      return;
    }
  }

  /// Control flow, loop-seeded randomness, dropout or topk on `v` (not
  /// partial): a `var` updated in a `for` whose body branches on the loop
  /// variable, its bound a run-time host value; `dropout`; `topk` (k from 1
  /// to the dim's size) along a random dim, its results relayouted to random
  /// layouts.
  void controlOrSampling(int v) {
    GType t = pool_[v].t;
    bool fl = isFloat(t.dtype), bl = t.dtype == "bool";
    const std::string x = pool_[v].name; // a copy: sameTypeAs() grows the pool
    switch (pick(0, 2)) {
    case 0: {
      if (bl)
        return;
      int w = sameTypeAs(v);
      std::string z = fresh(), n = fresh();
      out_ += "var " + n + " = " + std::to_string(pick(0, 1)) + "\n";
      out_ += "var " + z + " : " + typeStr(t) + " = " + x + "\n";
      out_ += "for i in " + n + ".." + n + " + " + std::to_string(pick(1, 3)) + " {\n";
      out_ += "  if i % 2 == 0 {\n    " + z + " = " + z + " - " + pool_[w].name + "\n";
      if (fl) {
        out_ += "  } else if i == 1 {\n    let r : " + typeStr(t) + " = randn(seed=i * 7 + " +
                std::to_string(pick(1, 99)) + ")\n    " + z + " = " + z + " + r\n";
      }
      out_ += "  } else {\n    " + z + " = " + z + " + " + pool_[w].name + "\n  }\n}\n";
      pool_.push_back({z, t});
      return;
    }
    case 1: {
      if (!fl)
        return;
      static const char *ps[] = {"0.0", "0.3", "0.5", "1.0"};
      define("dropout(" + x + ", " + ps[pick(0, 3)] + ", seed=" + std::to_string(pick(0, 99)) + ")",
             t);
      return;
    }
    default: {
      if (bl || t.shape.empty())
        return;
      int d = pick(0, (int)t.shape.size() - 1);
      if (t.shape[d] == 0)
        return; // no largest element: an error, as argmax's
      std::string a = fresh(), b = fresh();
      int64_t k = pick(1, (int)std::min<int64_t>(t.shape[d], 4)); // up to the dim's size
      out_ += "let (" + a + ", " + b + ") = topk(" + x + ", " + std::to_string(k) +
              ", dim=" + std::to_string(d) + (coin(25) ? ", largest=false" : "") + ")\n";
      GType vt = t, it = t;
      vt.shape[d] = it.shape[d] = k;
      it.dtype = "i64";
      vt.pl = randomLayout((int)vt.shape.size());
      it.pl = randomLayout((int)it.shape.size());
      define("relayout(" + a + ", " + layoutStr(vt) + ")", vt);
      define("relayout(" + b + ", " + layoutStr(it) + ")", it);
      return;
    }
    }
  }

  /// A strided slice, a join with a slice of itself, a pad, or an integer
  /// index beside a size-1 slice, along a random dim, sharded or not: the
  /// result keeps the operand's placements (an indexed dim's axes
  /// replicate).
  void sliceOrJoin(int v) {
    GType t = pool_[v].t;
    if (t.shape.empty())
      return;
    int d = pick(0, (int)t.shape.size() - 1);
    int64_t n = t.shape[d];
    GType r = t;
    const std::string &x = pool_[v].name;
    std::string ds = std::to_string(d);
    switch (pick(0, 3)) {
    case 3: {
      if (n == 0)
        return;
      // `x[:, i, lo:lo+1]`: the dim beside the index keeps its shard at size 1.
      int rank = (int)t.shape.size();
      int e = rank > 1 ? pick(0, rank - 1) : d;
      if (e == d || t.shape[e] == 0)
        e = -1;
      int64_t i = pick(-(int)n, (int)n - 1);
      std::string subs;
      for (int k = 0; k <= std::max(d, e); ++k) {
        std::string s = k == d ? std::to_string(i) : ":";
        if (k == e) {
          int64_t lo = pick(0, (int)t.shape[e] - 1);
          s = std::to_string(lo) + ":" + std::to_string(lo + 1);
          r.shape[e] = 1;
        }
        subs += (k ? ", " : "") + s;
      }
      r.shape.erase(r.shape.begin() + d);
      for (size_t a = 0; a < r.pl.size(); ++a) {
        if (r.pl[a] == d) {
          r.pl[a] = kRep;
          if (!r.ord.empty())
            r.ord[a] = 0;
        } else if (r.pl[a] > d) {
          --r.pl[a];
        }
      }
      define(x + "[" + subs + "]", r);
      return;
    }
    case 0: {
      int lo = pick(-(int)n, (int)n), hi = pick(-(int)n, (int)n), st = pick(1, 3);
      int64_t a = lo < 0 ? lo + n : lo, b = hi < 0 ? hi + n : hi;
      r.shape[d] = b > a ? (b - a + st - 1) / st : 0;
      std::string subs;
      for (int i = 0; i <= d; ++i)
        subs += i < d ? ":, "
                      : std::to_string(lo) + ":" + std::to_string(hi) + ":" + std::to_string(st);
      define(x + "[" + subs + "]", r);
      return;
    }
    case 1: {
      int64_t k = pick(0, (int)n);
      r.shape[d] = n + k;
      std::string cut;
      for (int i = 0; i <= d; ++i)
        cut += i < d ? ":, " : ":" + std::to_string(k);
      define("concat(" + x + ", " + x + "[" + cut + "], dim=" + ds + ")", r);
      return;
    }
    default: {
      int lo = pick(0, 2), hi = pick(0, 2);
      r.shape[d] = n + lo + hi;
      std::string v0 = t.dtype == "bool" ? "true" : isFloat(t.dtype) ? "0.5" : "7";
      define("pad(" + x + ", [" + std::to_string(lo) + ", " + std::to_string(hi) + "], dim=" + ds +
                 ", value=" + v0 + ")",
             r);
      return;
    }
    }
  }

  /// index_add of a pointwise expression of `v` (which fusion adds in the
  /// kernel computing it) along dim 0 into 1-4 rows of a fresh base; v's dim
  /// 0 unsharded, the ids replicated, rows no id names, repeated ids.
  void indexAdd(int v) {
    GType t = pool_[v].t;
    if (t.shape.empty() || t.dtype == "bool" || isLowp(t.dtype))
      return;
    for (int p : t.pl)
      if (p == 0)
        return;
    const int64_t n = t.shape[0];
    // Sometimes into v itself (the kernel then reads its base too).
    const bool self = n > 0 && coin(30);
    const int64_t rows = self ? n : pick(1, 4);
    std::string ids = "[";
    for (int64_t i = 0; i < n; ++i)
      ids += (i ? ", " : "") + std::to_string(pick(0, (int)rows - 1));
    ids += "]";
    GType it{coin() ? "i32" : "i64", {n}, {}, {}};
    for (size_t a = 0; a < t.pl.size(); ++a)
      it.pl.push_back(kRep);
    std::string name = fresh();
    out_ += "let " + name + " : " + typeStr(it) + " = " + (n ? ids : std::string("zeros()")) + "\n";
    GType b = t;
    b.shape[0] = rows;
    int base = self ? v : relayoutTo(source(b.dtype, b.shape), b.pl, &b.ord);
    std::string x = pool_[v].name + (isFloat(t.dtype) ? " * 1.5 + 0.5" : " * 3 + 1");
    define("index_add(" + pool_[base].name + ", " + name + ", " + x + ")", pool_[base].t);
  }

  /// index_select along dim 0 (which must be unsharded), ids sharded or not.
  void indexSelect(int v) {
    GType t = pool_[v].t;
    if (t.shape.empty() || t.shape[0] == 0 || t.dtype == "bool")
      return;
    for (int p : t.pl)
      if (p == 0)
        return;
    int64_t n = size();
    std::string ids = "[";
    for (int64_t i = 0; i < n; ++i)
      ids += (i ? ", " : "") + std::to_string(pick(0, (int)t.shape[0] - 1));
    ids += "]";
    // The ids' only dim may be sharded on axes that replicate x.
    GType it{"i32", {n}, {}, {}};
    for (int p : t.pl)
      it.pl.push_back(p == kRep && coin() ? 0 : kRep);
    std::string name = fresh();
    out_ += "let " + name + " : " + typeStr(it) + " = " + (n ? ids : std::string("zeros()")) + "\n";
    GType r = t;
    r.shape[0] = n;
    for (size_t a = 0; a < r.pl.size(); ++a)
      if (it.pl[a] == 0) {
        r.pl[a] = 0;
        if (!r.ord.empty())
          r.ord[a] = 0; // joins dim 0 in mesh order, as the ids are
      }
    define("index_select(" + pool_[v].name + ", " + name + ")", r);
  }

  void reduce(int v) {
    GType t = pool_[v].t;
    if (t.dtype == "bool" || t.shape.empty())
      return;
    int d = pick(0, (int)t.shape.size() - 1);
    int kind = pick(0, 2);
    static const char *fn[] = {"sum", "max", "min"};
    GType r = t;
    r.shape.erase(r.shape.begin() + d);
    for (auto &p : r.pl) {
      if (p == d)
        p = kind == 0 ? kSum : kind == 1 ? kMax : kMin;
      else if (p > d)
        --p;
    }
    // max/min over an empty dim have no value worth comparing; skip them.
    if (kind && t.shape[d] == 0)
      return;
    // A bf16/f16 sum accumulates in f32 and is cast back once it is whole.
    bool viaF32 = kind == 0 && isLowp(t.dtype);
    std::string operand = viaF32 ? "cast(" + pool_[v].name + ", f32)" : pool_[v].name;
    if (viaF32)
      r.dtype = "f32";
    int red = define(std::string(fn[kind]) + "(" + operand + ", dim=" + std::to_string(d) + ")", r);
    int whole = relayoutTo(red, randomLayout((int)r.shape.size()));
    if (viaF32) {
      GType back = pool_[whole].t;
      back.dtype = t.dtype;
      define("cast(" + pool_[whole].name + ", " + t.dtype + ")", back);
    }
  }

  void matmul(const std::string &dtype) {
    if (dtype == "bool")
      return;
    int64_t mm = size(), k = size(), nn = size();
    GType a{dtype, {mm, k}, {}, {}}, b{dtype, {k, nn}, {}, {}}, r{dtype, {mm, nn}, {}, {}};
    for (size_t ax = 0; ax < axisNames_.size(); ++ax) {
      switch (pick(0, 3)) {
      case 0:
        a.pl.push_back(kRep), b.pl.push_back(kRep), r.pl.push_back(kRep);
        break;
      case 1:
        a.pl.push_back(0), b.pl.push_back(kRep), r.pl.push_back(0);
        break;
      case 2:
        a.pl.push_back(kRep), b.pl.push_back(1), r.pl.push_back(1);
        break;
      default:
        a.pl.push_back(1), b.pl.push_back(0), r.pl.push_back(kSum);
        break;
      }
    }
    int sa = relayoutTo(source(dtype, a.shape), a.pl, &a.ord);
    int sb = relayoutTo(source(dtype, b.shape), b.pl, &b.ord);
    if (isLowp(dtype)) { // bf16/f16 operands, an f32 product (see isLowp)
      r.dtype = "f32";
      int c = define("cast(" + pool_[sa].name + ", f32) @ cast(" + pool_[sb].name + ", f32)", r);
      relayoutTo(c, randomLayout(2));
      return;
    }
    int c = define(pool_[sa].name + " @ " + pool_[sb].name, r);
    relayoutTo(c, randomLayout(2));
  }

  /// A two-operand einsum over 2-4 letters, each operand holding a random
  /// subset of them in a random order, the result a random subset of their
  /// union (possibly none: a full contraction). Each mesh axis shards one
  /// letter (or none) in both operands: the result dim if it is kept, else
  /// `partial(sum)`. A third of them spell their leading batch letters as
  /// `...` in the first operand and the result (and in the second when it
  /// has them too).
  void einsum(const std::string &dtype) {
    if (dtype == "bool")
      return;
    int nl = pick(2, 4);
    std::string letters = std::string("ijkl").substr(0, (size_t)nl);
    std::vector<int64_t> sz;
    for (int i = 0; i < nl; ++i)
      sz.push_back(size());
    auto subset = [&](int lo) {
      std::string r;
      for (char c : letters)
        if (coin())
          r += c;
      if ((int)r.size() < lo)
        r = letters.substr((size_t)pick(0, nl - 1), 1);
      std::shuffle(r.begin(), r.end(), rng_);
      if (r.size() > 3)
        r.resize(3);
      return r;
    };
    std::string a = subset(1), b = subset(1), out;
    for (char c : letters)
      if ((a.find(c) != std::string::npos || b.find(c) != std::string::npos) && coin())
        out += c;
    std::shuffle(out.begin(), out.end(), rng_);
    // `...`: a's leading letters, leading the result too.
    size_t batch = coin(33) ? (size_t)pick(1, (int)std::min<size_t>(2, a.size())) : 0;
    bool ellipsis = batch > 0;
    if (ellipsis) {
      std::string rest;
      for (char c : out)
        if (a.find(c) >= batch)
          rest += c;
      out = a.substr(0, batch) + rest;
    }
    bool bTakes = ellipsis && b.size() >= batch && b.compare(0, batch, a, 0, batch) == 0;
    // `...` spells its dims with fresh letters: a batch letter elsewhere in b
    // would no longer be the same dim, so such an einsum names every letter.
    for (size_t i = 0; ellipsis && !bTakes && i < batch; ++i)
      if (b.find(a[i]) != std::string::npos)
        ellipsis = false;
    if (!ellipsis)
      batch = 0;
    auto shapeOf = [&](const std::string &t) {
      std::vector<int64_t> sh;
      for (char c : t)
        sh.push_back(sz[(size_t)(c - 'i')]);
      return sh;
    };
    GType ta{dtype, shapeOf(a), {}, {}}, tb{dtype, shapeOf(b), {}, {}},
        tr{dtype, shapeOf(out), {}, {}};
    std::string used;
    for (size_t ax = 0; ax < axisNames_.size(); ++ax) {
      int li = pick(-1, nl - 1);
      char c = li < 0 ? 0 : letters[(size_t)li];
      if (c && used.find(c) != std::string::npos)
        c = 0;
      if (c)
        used += c;
      auto at = [&](const std::string &t) {
        size_t p = c ? t.find(c) : std::string::npos;
        return p == std::string::npos ? kRep : (int)p;
      };
      ta.pl.push_back(at(a));
      tb.pl.push_back(at(b));
      tr.pl.push_back(!c ? kRep : out.find(c) != std::string::npos ? (int)out.find(c) : kSum);
    }
    auto spell = [&](const std::string &t, bool e) { return e ? "..." + t.substr(batch) : t; };
    std::string spec = spell(a, ellipsis) + "," + spell(b, bTakes) + "->" + spell(out, ellipsis);
    int sa = relayoutTo(source(dtype, ta.shape), ta.pl, &ta.ord);
    int sb = relayoutTo(source(dtype, tb.shape), tb.pl, &tb.ord);
    std::string x = pool_[sa].name, y = pool_[sb].name;
    if (isLowp(dtype)) { // accumulate in f32, as matmul() does
      tr.dtype = "f32";
      x = "cast(" + x + ", f32)", y = "cast(" + y + ", f32)";
    }
    int c = define("einsum(\"" + spec + "\", " + x + ", " + y + ")", tr);
    relayoutTo(c, randomLayout((int)out.size()));
  }

  static bool isPartial(const GType &t) {
    for (int p : t.pl)
      if (p < kRep)
        return true;
    return false;
  }

  void printValue(int v) {
    if (isPartial(pool_[v].t))
      return; // printed after their relayout
    out_ += "print(" + pool_[v].name + ")\n";
  }

  struct Named {
    std::string name;
    GType t;
  };
  std::mt19937_64 rng_;
  std::vector<std::string> axisNames_;
  std::vector<Named> pool_;
  std::string out_;
  int counter_ = 0;
  mutable int notation_ = 0; ///< picks the notation of every third layout
};

/// A random well-typed program for `seed`.
inline std::string generateSpmdProgram(uint64_t seed) { return ProgramGen(seed).run(); }

} // namespace dt::gen

namespace dt {
using gen::generateSpmdProgram;
} // namespace dt
