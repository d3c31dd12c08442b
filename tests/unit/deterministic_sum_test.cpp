// Unit tests of deterministic mode's kernel sums (ir/DeterministicOrder.h):
// the interpreter sums in the leaf tree (checked against an independent
// spelling of the order, on inputs where the sequential order gives other
// bits), the LLVM JIT gives the interpreter's bits on every schedule (the
// generic loop nest, the kept-innermost row reduction, strided and
// broadcast inputs, multi-dim and empty reductions, every float dtype), and
// a sum split on subtree edges and recombined by the tree gives the whole
// sum's bits (what SPMD lowering's distributed sums rely on).
#include "codegen/CpuJIT.h"
#include "codegen/KernelIR.h"
#include "ir/DeterministicOrder.h"
#include "runtime/BlasDeterministic.h"

#include "kernel_test_util.h"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <functional>

using namespace dt;
using namespace dt::ktest;

namespace {

/// out = sum over `red` of in0 * in1 + in0 (two loads, so the point has
/// work), deterministic, output dtype t.
Kernel sumOf(DType t, int rank, std::vector<int> red, bool deterministic = true) {
  Kernel k;
  k.rank = rank;
  int a = k.load(k.addInput(t)), b = k.load(k.addInput(t));
  k.store(k.addOutput(t), k.binary(KOp::Add, k.binary(KOp::Mul, a, b), a));
  k.setReduce(KReduce::Sum, red);
  k.deterministic = deterministic;
  return k;
}

/// A case of `k` at `shape`: row-major inputs of normal values times 1e8
/// (f64: many rounding differences between orders), row-major outputs.
Case plainCase(const Kernel &k, std::vector<int64_t> shape, std::mt19937_64 &rng) {
  Case c;
  c.shape = shape;
  std::vector<bool> none(shape.size(), false);
  std::normal_distribution<double> nd;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    c.inStr.push_back(randomStrides(rng, shape, none, true));
    int64_t n = spanOf(shape, c.inStr.back());
    c.inputs.emplace_back(n * dtypeSize(k.inputs[i]));
    for (int64_t e = 0; e < n; ++e) {
      double v = nd(rng) * (i == 0 ? 1e8 : 1.0);
      if (k.inputs[i] == DType::F64)
        ((double *)c.inputs.back().data())[e] = v;
      else
        ((float *)c.inputs.back().data())[e] = (float)v;
    }
  }
  std::vector<bool> zero(shape.size(), false);
  for (int d : k.reduceDims)
    zero[d] = true;
  c.outStr.push_back(randomStrides(rng, shape, zero, true));
  c.outElems.push_back(spanOf(shape, c.outStr.back()));
  return c;
}

bool sameBits(DType t, const std::vector<char> &a, const std::vector<char> &b, int64_t n) {
  const size_t es = dtypeSize(t);
  for (int64_t i = 0; i < n; ++i)
    if (std::memcmp(&a[i * es], &b[i * es], es) != 0 &&
        !(std::isnan(readF(t, a, i)) && std::isnan(readF(t, b, i))))
      return false;
  return true;
}

} // namespace

TEST_CASE("deterministic sum: the interpreter sums leaves of 64 rows of the outermost reduced "
          "dim in the fixed tree, a sum over the last dim in 8 chains per leaf") {
  // f64 [R, C] summed over dim 0 (rows), dims {0, 1} and dim 1; the expected
  // value spelled out here: per output, leaves of 64 rows (times all of the
  // inner reduced dims, row-major), each a chain from +0 -- or, when the
  // last dim is summed, 8 chains by column mod 8 combined by chainTree --
  // in the tree.
  std::mt19937_64 rng(3);
  int orderVisible = 0;
  struct Shape {
    int64_t R, C;
  };
  for (Shape sh : {Shape{1, 3}, Shape{63, 3}, Shape{64, 11}, Shape{65, 3}, Shape{200, 11},
                   Shape{1000, 3}, Shape{5, 130}, Shape{3, 64}, Shape{2, 1}})
    for (std::vector<int> red :
         {std::vector<int>{0}, std::vector<int>{0, 1}, std::vector<int>{1}}) {
      const int64_t R = sh.R, C = sh.C;
      Kernel k = sumOf(DType::F64, 2, red);
      Case c = plainCase(k, {R, C}, rng);
      // row-major inputs (plainCase with no zero dims gives dense strides
      // in some dim order: read through the strides)
      auto in = [&](int i, int64_t r, int64_t col) {
        return ((const double *)c.inputs[i].data())[r * c.inStr[i][0] + col * c.inStr[i][1]];
      };
      auto point = [&](int64_t r, int64_t col) {
        return in(0, r, col) * in(1, r, col) + in(0, r, col);
      };
      auto got = runCase(k, c, nullptr);
      // The outputs: per column (red {0}), one (red {0, 1}), per row (red {1}).
      const bool lastSummed = red.back() == 1;
      const int64_t outs = red == std::vector<int>{0} ? C : red.size() == 2 ? 1 : R;
      for (int64_t o = 0; o < outs; ++o) {
        // Leaves by the outermost summed dim's index / 64; within a leaf,
        // chains by column % 8 when the last dim is summed, else one.
        std::vector<std::array<double, kDeterministicChains>> leaves;
        double seq = 0;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t col = 0; col < C; ++col) {
            bool mine = red.size() == 2 || (red[0] == 0 ? col == o : r == o);
            if (!mine)
              continue;
            const size_t leaf = (size_t)((red[0] == 0 ? r : col) / kDeterministicBlock);
            if (leaves.size() <= leaf)
              leaves.resize(leaf + 1, std::array<double, kDeterministicChains>{});
            leaves[leaf][lastSummed ? col % kDeterministicChains : 0] += point(r, col);
            seq += point(r, col);
          }
        DeterministicTree<double> tree;
        for (auto &l : leaves)
          tree.push(((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])));
        const double want = tree.finish();
        const int64_t at = red == std::vector<int>{0}   ? o * c.outStr[0][1]
                           : red == std::vector<int>{1} ? o * c.outStr[0][0]
                                                        : 0;
        const double have = ((const double *)got[0].data())[at];
        CHECK_MESSAGE(std::memcmp(&have, &want, 8) == 0,
                      "R=" << R << " C=" << C << " red " << red.size() << " from " << red[0]);
        orderVisible += seq != want;
      }
    }
  CHECK(orderVisible > 0); // the inputs tell the tree from one chain
}

TEST_CASE("deterministic sum: the tree's shape (binary counter) is tree(x[0..h)) + tree(x[h..n))") {
  // Leaves of distinct powers of two: any other grouping rounds differently
  // somewhere among n = 1..40; the recursive definition is the reference.
  std::function<double(const std::vector<double> &, size_t, size_t)> rec =
      [&](const std::vector<double> &x, size_t lo, size_t hi) -> double {
    size_t n = hi - lo;
    if (n == 1)
      return x[lo];
    size_t h = 1;
    while (h * 2 < n)
      h *= 2;
    return rec(x, lo, lo + h) + rec(x, lo + h, hi);
  };
  std::mt19937_64 rng(17);
  std::normal_distribution<double> nd;
  for (size_t n = 1; n <= 40; ++n) {
    std::vector<double> x(n);
    for (auto &v : x)
      v = nd(rng) * std::ldexp(1.0, (int)(rng() % 60));
    DeterministicTree<double> t;
    for (double v : x)
      t.push(v);
    double a = t.finish(), b = rec(x, 0, n);
    CHECK_MESSAGE(std::memcmp(&a, &b, 8) == 0, "n=" << n);
  }
  CHECK(DeterministicTree<double>().finish() == 0.0);
}

TEST_CASE("deterministic sum: the JIT gives the interpreter's bits on every schedule and dtype") {
  CpuJIT jit;
  std::mt19937_64 rng(23);
  struct Shape {
    std::vector<int64_t> shape;
    std::vector<int> red;
  };
  const std::vector<Shape> shapes = {
      {{0}, {0}},
      {{1}, {0}},
      {{64}, {0}},
      {{65}, {0}},
      {{1000}, {0}},
      {{300, 7}, {0}},
      {{300, 600}, {0}},
      {{129, 5}, {0}},
      {{7, 300}, {1}},
      {{5, 129}, {1}},
      {{70, 70}, {0, 1}},
      {{130, 3, 9}, {0, 2}},
      {{3, 130, 9}, {1}},
      {{130, 0, 9}, {0}},
      {{0, 130}, {0}},
      {{129, 4, 33}, {0, 1}},
      {{4, 200, 2}, {1, 2}},
      // Groups of 8 whole leaves side by side, then the rest one by one.
      {{1100, 3}, {0, 1}},
      {{5, 600}, {1}},
      {{600, 2, 3}, {0, 2}},
      {{512}, {0}},
      {{2, 1030, 3}, {1}},
      // Sums over the last dim: chains, whole groups of 8 points, the rest,
      // leaves side by side (kChainLanes) and one by one.
      {{130, 17}, {0, 1}},
      {{3, 1}, {1}},
      {{1, 8}, {1}},
      {{4, 7}, {1}},
      {{2, 128, 16}, {1, 2}},
      {{300, 1}, {0, 1}},
      {{3, 200, 9}, {0, 1, 2}},
      {{2, 320}, {1}},
      // ... and a pair of whole leaves after the groups of 4 (then the rest).
      {{3, 448}, {1}},
      {{4, 130}, {1}},
      {{2, 192}, {1}},
      {{390, 5}, {0, 1}}};
  int cases = 0;
  for (DType t : {DType::F32, DType::F64})
    for (const Shape &s : shapes) {
      Kernel k = sumOf(t, (int)s.shape.size(), s.red);
      Case c = plainCase(k, s.shape, rng);
      auto want = runCase(k, c, nullptr);
      auto got = runCase(k, c, jit.compile(k));
      CHECK_MESSAGE(sameBits(t, want[0], got[0], c.outElems[0]), dtypeName(t)
                                                                     << " " << describe(c));
      ++cases;
    }
  // Random kernels (every op, strided and broadcast inputs, several
  // outputs), reductions forced deterministic: bitwise, not within the
  // reassociation tolerance of kernel_jit_test.
  for (int i = 0; i < 300; ++i) {
    std::mt19937_64 r(1000 + i);
    Kernel k = randomKernel(r);
    if (k.reduce != KReduce::Sum)
      continue;
    k.deterministic = true;
    Case c = makeCase(k, r, false);
    if (!k.reduceDims.empty() && c.shape[k.reduceDims[0]] > 0 && coin(r, 0.5))
      c = makeCase(k, r, false); // a second draw of shapes
    auto want = runCase(k, c, nullptr);
    auto got = runCase(k, c, jit.compile(k));
    for (size_t o = 0; o < k.outputs.size(); ++o)
      CHECK_MESSAGE(sameBits(k.outputs[o], want[o], got[o], c.outElems[o]),
                    "seed " << 1000 + i << " output " << o << " " << describe(c) << "\n"
                            << printKernel(k));
    ++cases;
  }
  CHECK(cases > 60);
}

TEST_CASE("deterministic sum: a sum over the last dim with a broadcast or strided operand") {
  // sum((x - mu)^2, dim=1) of a layer norm: mu [R, 1] read with stride 0
  // along the summed dim; then x read with a row stride (a transposed view).
  CpuJIT jit;
  std::mt19937_64 rng(31);
  std::normal_distribution<double> nd;
  for (DType t : {DType::F32, DType::F64})
    for (int64_t C : {1, 7, 8, 64, 200})
      for (bool transposed : {false, true}) {
        const int64_t R = 150;
        Kernel k;
        k.rank = 2;
        int x = k.load(k.addInput(t)), mu = k.load(k.addInput(t));
        int dlt = k.binary(KOp::Sub, x, mu);
        k.store(k.addOutput(t), k.binary(KOp::Mul, dlt, dlt));
        k.setReduce(KReduce::Sum, {1});
        k.deterministic = true;
        Case c;
        c.shape = {R, C};
        c.inStr = {transposed ? std::vector<int64_t>{1, R} : std::vector<int64_t>{C, 1},
                   std::vector<int64_t>{1, 0}};
        c.outStr = {{1, 0}};
        c.outElems = {R};
        for (int64_t n : {R * C, R}) {
          c.inputs.emplace_back(n * dtypeSize(t));
          for (int64_t e = 0; e < n; ++e) {
            double v = nd(rng) * 1e4;
            if (t == DType::F64)
              ((double *)c.inputs.back().data())[e] = v;
            else
              ((float *)c.inputs.back().data())[e] = (float)v;
          }
        }
        auto want = runCase(k, c, nullptr);
        auto got = runCase(k, c, jit.compile(k));
        CHECK_MESSAGE(sameBits(t, want[0], got[0], R),
                      dtypeName(t) << " C=" << C << (transposed ? " transposed" : ""));
      }
}

TEST_CASE("deterministic sum: bf16 and f16 outputs round the f64 tree once") {
  CpuJIT jit;
  std::mt19937_64 rng(29);
  for (DType t : {DType::BF16, DType::F16})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{500, 3}, std::vector<int64_t>{3, 500}}) {
      Kernel k;
      k.rank = 2;
      k.store(k.addOutput(t), k.load(k.addInput(t)));
      k.setReduce(KReduce::Sum, {shape[0] == 3 ? 1 : 0});
      k.deterministic = true;
      Case c;
      c.shape = shape;
      c.inStr.push_back({shape[1], 1});
      c.inputs.emplace_back(shape[0] * shape[1] * 2);
      for (int64_t e = 0; e < shape[0] * shape[1]; ++e)
        fillValue(rng, t, c.inputs.back().data(), e, false);
      c.outStr.push_back(shape[0] == 3 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0, 1});
      c.outElems.push_back(3);
      auto want = runCase(k, c, nullptr);
      auto got = runCase(k, c, jit.compile(k));
      CHECK(sameBits(t, want[0], got[0], 3));
    }
}

TEST_CASE("deterministic sum: chunks of 2^j leaves summed apart and combined by the tree give the "
          "whole sum's bits") {
  // What a distributed sum does: each rank sums its rows in f64 (the
  // subtree's node), deterministicTree combines the first g ranks' nodes.
  CpuJIT jit;
  std::mt19937_64 rng(31);
  for (int64_t R : {256, 1000, 4096, 193})
    for (int64_t chunk : {64, 128, 256})
      for (std::vector<int> red : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
        const int64_t C = 5;
        Kernel k = sumOf(DType::F64, 2, red);
        Case whole = plainCase(k, {R, C}, rng);
        auto fn = jit.compile(k);
        auto want = runCase(k, whole, fn);
        std::vector<std::vector<char>> nodes;
        for (int64_t r0 = 0; r0 < R; r0 += chunk) {
          Case part = whole;
          part.shape[0] = std::min(chunk, R - r0);
          for (size_t i = 0; i < part.inputs.size(); ++i) { // the rows from r0 on
            const int64_t skip = r0 * whole.inStr[i][0] * 8;
            part.inputs[i].assign(whole.inputs[i].begin() + skip, whole.inputs[i].end());
          }
          nodes.push_back(runCase(k, part, fn)[0]);
        }
        std::vector<const void *> parts;
        for (auto &n : nodes)
          parts.push_back(n.data());
        std::vector<char> got(want[0].size());
        deterministicTree(true, parts, got.data(), whole.outElems[0]);
        CHECK_MESSAGE(sameBits(DType::F64, want[0], got, whole.outElems[0]),
                      "R=" << R << " chunk " << chunk);
      }
}
