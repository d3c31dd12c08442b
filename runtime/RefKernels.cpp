// This file implements the elementwise, reduction and source kernels of the
// reference evaluator (see RefKernels.h for the numerics they define).
// Contractions and data movement live in RefKernelsData.cpp.
#include "runtime/RefKernels.h"

#include <algorithm>

#include "ir/DeterministicOrder.h"

#include "runtime/RefKernelsUtil.h"
#include "support/Diagnostics.h"
#include "support/Random.h"

#include <cmath>
#include <limits>

namespace dt::ref {

std::string dimsStr(const Dims &d) {
  std::string r = "[";
  for (size_t i = 0; i < d.size(); ++i)
    r += (i ? ", " : "") + std::to_string(d[i]);
  return r + "]";
}

Dims broadcastShapes(const std::vector<Dims> &shapes) {
  size_t rank = 0;
  for (auto &s : shapes)
    rank = std::max(rank, s.size());
  Dims out(rank, 1);
  for (auto &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1)
        continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (auto &t : shapes)
        all += (all.empty() ? "" : " and ") + dimsStr(t);
      throw InternalError("reference evaluator: shapes " + all + " do not broadcast");
    }
  return out;
}

HostTensor cast(const HostTensor &x, DType to) {
  if (x.dtype == to)
    return x;
  HostTensor r(to, x.shape);
  int64_t n = x.numel();
  dispatch(x.dtype, [&](auto s) {
    using S = decltype(s);
    dispatch(to, [&](auto d) {
      using D = decltype(d);
      const S *src = x.data<S>();
      D *dst = r.data<D>();
      for (int64_t i = 0; i < n; ++i)
        dst[i] = convert<D>(src[i]);
    });
  });
  return r;
}

namespace {

/// The kernel node of elementwise op `op`: its scalar meaning is
/// codegen/ScalarOps.h, shared with the kernel interpreter.
KOp scalarOp(Op op) {
  std::optional<KOp> k = kopFromOp(op);
  if (!k || kopArity(*k) == 0)
    throw InternalError(std::string("reference evaluator: `") + opName(op) +
                        "` is not elementwise");
  return *k;
}

template <class T> T unaryOp(KOp op, T v) {
  if constexpr (!std::is_floating_point_v<T>)
    if (isTranscendental(op)) // on integers: computed in double, converted back
      return convert<T>(scalarUnary<double>(op, (double)v));
  return scalarUnary<T>(op, v);
}

} // namespace

HostTensor widen(const HostTensor &x) { return isLowPrecision(x.dtype) ? cast(x, DType::F32) : x; }

// bf16/f16 operands are widened to f32 (exact), computed there and the result
// rounded once to `out`; sums and contractions widen to f64 instead, so their
// accumulation is at least as precise as any backend's f32 one.

HostTensor unary(Op op, const HostTensor &x0, DType out) {
  if (op == Op::Cast)
    return cast(x0, out);
  if (isLowPrecision(x0.dtype))
    return unary(op, widen(x0), out);
  // Arithmetic on bool is done on 0/1 integers.
  HostTensor x = x0.dtype == DType::Bool && op != Op::Not ? cast(x0, DType::I32) : x0;
  HostTensor r(x.dtype, x.shape);
  int64_t n = x.numel();
  KOp k = scalarOp(op);
  dispatchNum(x.dtype, [&](auto t) {
    using T = decltype(t);
    const T *src = x.data<T>();
    T *dst = r.data<T>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = unaryOp<T>(k, src[i]);
  });
  return cast(r, out);
}

HostTensor binary(Op op, const HostTensor &a0, const HostTensor &b0, DType out) {
  if (isLowPrecision(a0.dtype) || isLowPrecision(b0.dtype))
    return binary(op, widen(a0), widen(b0), out);
  KOp k = scalarOp(op);
  bool pred = isPredicate(k);
  DType ct = a0.dtype;
  if (ct == DType::Bool && !pred)
    ct = DType::I32;
  HostTensor a = cast(a0, ct), b = cast(b0, ct);
  Dims shape = broadcastShapes({a.shape, b.shape});
  HostTensor r(pred ? DType::Bool : ct, shape);
  Dims sa = broadcastStrides(a.shape, shape), sb = broadcastStrides(b.shape, shape);
  dispatchNum(ct, [&](auto t) {
    using T = decltype(t);
    const T *pa = a.data<T>(), *pb = b.data<T>();
    int64_t i = 0;
    forEachIndex(shape, {&sa, &sb}, [&](const int64_t *off) {
      if (pred)
        r.data<uint8_t>()[i++] = scalarPredicate<T>(k, pa[off[0]], pb[off[1]]);
      else
        r.data<T>()[i++] = scalarBinary<T>(k, pa[off[0]], pb[off[1]]);
    });
  });
  return cast(r, out);
}

HostTensor select(const HostTensor &c0, const HostTensor &a0, const HostTensor &b0, DType out) {
  if (isLowPrecision(a0.dtype) || isLowPrecision(b0.dtype))
    return select(c0, widen(a0), widen(b0), out);
  HostTensor c = cast(c0, DType::Bool), a = a0, b = cast(b0, a0.dtype);
  Dims shape = broadcastShapes({c.shape, a.shape, b.shape});
  HostTensor r(a.dtype, shape);
  Dims sc = broadcastStrides(c.shape, shape), sa = broadcastStrides(a.shape, shape),
       sb = broadcastStrides(b.shape, shape);
  dispatchNum(a.dtype, [&](auto t) {
    using T = decltype(t);
    const uint8_t *pc = c.data<uint8_t>();
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T *dst = r.data<T>();
    int64_t k = 0;
    forEachIndex(shape, {&sc, &sa, &sb},
                 [&](const int64_t *off) { dst[k++] = pc[off[0]] ? pa[off[1]] : pb[off[2]]; });
  });
  return cast(r, out);
}

HostTensor reduce(Op op, const HostTensor &x0, const std::vector<int64_t> &dims, DType out) {
  if (isLowPrecision(x0.dtype))
    return reduce(op, cast(x0, DType::F64), dims, out);
  HostTensor x = x0.dtype == DType::Bool ? cast(x0, DType::I64) : x0;
  std::vector<bool> reduced(x.rank(), false);
  for (auto d : dims) {
    if (d < 0 || d >= x.rank())
      throw InternalError("reference evaluator: reduce dim " + std::to_string(d) +
                          " out of range for rank " + std::to_string(x.rank()));
    reduced[d] = true;
  }
  Dims oshape, ostrideFull(x.rank(), 0);
  for (int d = 0; d < x.rank(); ++d)
    if (!reduced[d])
      oshape.push_back(x.shape[d]);
  Dims os = rowMajorStrides(oshape);
  for (int d = 0, k = 0; d < x.rank(); ++d)
    if (!reduced[d])
      ostrideFull[d] = os[k++];
  Dims xs = rowMajorStrides(x.shape);
  HostTensor r(x.dtype, oshape);
  int64_t on = r.numel();
  dispatchNum(x.dtype, [&](auto t) {
    using T = decltype(t);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    std::vector<Acc> acc((size_t)on);
    for (auto &v : acc) {
      if (op == Op::ReduceSum)
        v = Acc(0);
      else if constexpr (std::is_floating_point_v<T>)
        v = op == Op::ReduceMax ? -INFINITY : INFINITY;
      else
        v = op == Op::ReduceMax ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
    }
    const T *src = x.data<T>();
    auto chain = [&](const T *from, const Dims &shape) {
      forEachIndex(shape, {&xs, &ostrideFull}, [&](const int64_t *off) {
        Acc v = (Acc)from[off[0]];
        Acc &a = acc[off[1]];
        if (op == Op::ReduceSum)
          a = scalarBinary<Acc>(KOp::Add, a, v);
        else
          a = scalarBinary<Acc>(op == Op::ReduceMax ? KOp::Maximum : KOp::Minimum, a, v);
      });
    };
    if constexpr (std::is_floating_point_v<T>) {
      if (op == Op::ReduceSum && !dims.empty() && x.numel() > 0) {
        // Float sums in deterministic mode's order (ir/DeterministicOrder.h),
        // the kernels' in that mode: leaves of kDeterministicBlock rows of
        // the outermost reduced dim, each one chain, combined in the tree.
        // A sum over the last dim: a leaf is kDeterministicChains chains by
        // last-dim index, combined by chainTree.
        const int d0 = (int)*std::min_element(dims.begin(), dims.end());
        const int last = x.rank() - 1;
        const bool chained = reduced[last];
        constexpr int C = kDeterministicChains;
        Dims lastIndex(x.rank(), 0);
        lastIndex[last] = 1;
        std::vector<double> chains(chained ? (size_t)on * C : 0);
        std::vector<DeterministicTree<double>> trees((size_t)on);
        for (int64_t r0 = 0; r0 < x.shape[d0]; r0 += kDeterministicBlock) {
          Dims leaf = x.shape;
          leaf[d0] = std::min(kDeterministicBlock, x.shape[d0] - r0);
          std::fill(acc.begin(), acc.end(), 0.0);
          if (chained) {
            std::fill(chains.begin(), chains.end(), 0.0);
            const T *from = src + r0 * xs[d0];
            const int64_t base = d0 == last ? r0 : 0;
            forEachIndex(leaf, {&xs, &ostrideFull, &lastIndex}, [&](const int64_t *off) {
              double &c = chains[(size_t)off[1] * C + (size_t)((base + off[2]) % C)];
              c = scalarBinary<double>(KOp::Add, c, (double)from[off[0]]);
            });
            for (int64_t i = 0; i < on; ++i)
              acc[i] = chainTree(&chains[(size_t)i * C]);
          } else {
            chain(src + r0 * xs[d0], leaf);
          }
          for (int64_t i = 0; i < on; ++i)
            trees[i].push(acc[i]);
        }
        for (int64_t i = 0; i < on; ++i)
          acc[i] = trees[i].finish();
      } else {
        chain(src, x.shape);
      }
    } else {
      chain(src, x.shape);
    }
    T *dst = r.data<T>();
    for (int64_t i = 0; i < on; ++i)
      dst[i] = (T)acc[i];
  });
  return cast(r, out);
}

/// A `const` of `data` (one value: a splat), from doubles or exact integers.
template <typename V>
static HostTensor constantOf(const std::vector<V> &data, DType dt, const Dims &shape) {
  HostTensor r(dt, shape);
  int64_t n = r.numel();
  if (data.size() != 1 && (int64_t)data.size() != n)
    throw InternalError("reference evaluator: `const` has " + std::to_string(data.size()) +
                        " values for shape " + dimsStr(shape));
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    T *dst = r.data<T>();
    if (data.size() == 1) // a fill: the value converted once
      std::fill_n(dst, n, convert<T>(data[0]));
    else
      for (int64_t i = 0; i < n; ++i)
        dst[i] = convert<T>(data[i]);
  });
  return r;
}

HostTensor constant(const std::vector<double> &data, DType dt, const Dims &shape) {
  return constantOf(data, dt, shape);
}

HostTensor constantInts(const std::vector<int64_t> &data, DType dt, const Dims &shape) {
  return constantOf(data, dt, shape);
}

HostTensor constantOf(const Attrs &a, DType dt, const Dims &shape) {
  return constInInts(dt) ? constantInts(a.ints, dt, shape) : constant(a.floats, dt, shape);
}

HostTensor fill(double v, DType dt, const Dims &shape) { return constant({v}, dt, shape); }

HostTensor random(const std::string &kind, uint64_t seed, DType dt, const Dims &shape) {
  if (kind != "normal" && kind != "uniform")
    throw InternalError("reference evaluator: unknown random distribution `" + kind + "`");
  bool isNormal = kind == "normal";
  HostTensor r(dt, shape);
  int64_t n = r.numel();
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    T *dst = r.data<T>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = convert<T>(isNormal ? normal(seed, (uint64_t)i) : uniform01(seed, (uint64_t)i));
  });
  return r;
}

HostTensor iota(int64_t dim, DType dt, const Dims &shape) {
  if (dim < 0 || dim >= (int64_t)shape.size())
    throw InternalError("reference evaluator: `iota` dim " + std::to_string(dim) +
                        " out of range for shape " + dimsStr(shape));
  HostTensor r(dt, shape);
  Dims st = rowMajorStrides(shape);
  int64_t n = r.numel();
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    T *dst = r.data<T>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = convert<T>((i / st[dim]) % shape[dim]);
  });
  return r;
}

} // namespace dt::ref
