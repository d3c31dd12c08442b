// This file implements local compute on blocks (see LocalOps.h).
#include "runtime/LocalOps.h"

#include "runtime/CheckpointIO.h"
#include "runtime/TensorIO.h"

#include "runtime/Blas.h"
#include "runtime/RefKernels.h"
#include "support/Diagnostics.h"
#include "support/Random.h"

#include <cstring>

namespace dt {

LocalBlock blockOf(const TensorType &t, int64_t meshRank) {
  if (!isConcrete(t.shape))
    throw InternalError("executor: `" + t.str() + "` has a symbolic shape");
  if (t.isHost() || meshRank < 0)
    return localBlock(TensorType{t.dtype, t.shape, nullptr, {}}, 0);
  return localBlock(t, meshRank);
}

namespace {

/// Calls f(local linear index, global linear index) for every element of the block.
template <class F> void forEachGlobal(const TensorType &t, const LocalBlock &b, F &&f) {
  auto gdims = concreteDims(t.shape);
  auto gst = rowMajorStrides(gdims);
  int64_t n = 1;
  for (auto s : b.shape)
    n *= s;
  std::vector<int64_t> idx(b.shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      g += (idx[d] + b.offset[d]) * gst[d];
    f(i, g, idx);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < b.shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// `random` of f32 or f64 written straight into the block (a row of the
/// block's last dim is a run of consecutive global indices): what a
/// run-time seed (`dropout`, `randn(step)`) and a small draw take, with
/// nothing per element but the generator (16M f32: rand 520 -> 59 ms, randn
/// 1150 -> 620 ms, single-threaded).
template <class T>
HostTensor randomBlock(uint64_t seed, bool normalDist, const TensorType &t, const LocalBlock &b) {
  HostTensor out(t.dtype, b.shape);
  const int64_t n = out.numel();
  const int r = (int)b.shape.size();
  const int64_t row = r ? b.shape[r - 1] : 1;
  if (n == 0) // a zero dim (the last one too)
    return out;
  const auto gst = rowMajorStrides(concreteDims(t.shape));
  std::vector<int64_t> idx(r > 0 ? r - 1 : 0, 0);
  T *p = out.data<T>();
  for (int64_t i = 0; i < n; i += row) {
    uint64_t g = r ? (uint64_t)b.offset[r - 1] : 0;
    for (size_t d = 0; d < idx.size(); ++d)
      g += (uint64_t)((idx[d] + b.offset[d]) * gst[d]);
    if (normalDist)
      for (int64_t j = 0; j < row; ++j)
        p[i + j] = (T)normal(seed, g + (uint64_t)j);
    else
      for (int64_t j = 0; j < row; ++j)
        p[i + j] = (T)uniform01(seed, g + (uint64_t)j);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < b.shape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

HostTensor source(const Inst &in, const TensorType &t, int64_t meshRank) {
  LocalBlock b = blockOf(t, meshRank);
  const Attrs &a = in.attrs;
  std::vector<double> data;
  switch (in.op) {
  case Op::Fill:
    if (constCount(a, t.dtype) != 1)
      throw InternalError("executor: `fill` needs one value");
    return ref::constantOf(a, t.dtype, b.shape);
  case Op::Const: {
    size_t n = constCount(a, t.dtype);
    if (n == 1)
      return ref::constantOf(a, t.dtype, b.shape);
    if ((int64_t)n != numElements(t.shape))
      throw InternalError("executor: `const` has the wrong number of values");
    if (constInInts(t.dtype)) { // exact integers, not through double
      std::vector<int64_t> ints;
      forEachGlobal(t, b, [&](int64_t, int64_t g, auto &) { ints.push_back(a.ints[g]); });
      return ref::constantInts(ints.empty() ? std::vector<int64_t>{0} : ints, t.dtype, b.shape);
    }
    forEachGlobal(t, b, [&](int64_t, int64_t g, auto &) { data.push_back(a.floats[g]); });
    break;
  }
  case Op::Random: {
    if (a.ints.empty())
      throw InternalError("executor: `random` needs a seed");
    bool normalDist = a.str == "normal";
    if (!normalDist && a.str != "uniform")
      throw InternalError("executor: unknown random distribution `" + a.str + "`");
    uint64_t seed = (uint64_t)a.ints[0];
    if (t.dtype == DType::F32)
      return randomBlock<float>(seed, normalDist, t, b);
    if (t.dtype == DType::F64)
      return randomBlock<double>(seed, normalDist, t, b);
    forEachGlobal(t, b, [&](int64_t, int64_t g, auto &) {
      data.push_back(normalDist ? normal(seed, (uint64_t)g) : uniform01(seed, (uint64_t)g));
    });
    break;
  }
  case Op::Iota: {
    if (a.ints.size() != 1 || a.ints[0] < 0 || a.ints[0] >= t.rank())
      throw InternalError("executor: bad `iota` dim");
    int64_t dim = a.ints[0];
    forEachGlobal(t, b, [&](int64_t, int64_t, auto &idx) {
      data.push_back((double)(idx[dim] + b.offset[dim]));
    });
    break;
  }
  case Op::LoadFile: // only this rank's bytes of the file
    return loadFileBlock(in, t, b.offset, b.shape);
  case Op::LoadCheckpoint: // only the saved chunks holding this rank's bytes
    return loadCheckpointBlock(in, t, b.offset, b.shape);
  default:
    throw InternalError(std::string("executor: `") + opName(in.op) + "` is not a source");
  }
  return ref::constant(data.empty() ? std::vector<double>{0} : data, t.dtype, b.shape);
}

/// Runs `check_factor` (Ops.def) on a rank's block of the factor.
void checkFactor(const Inst &in, const HostTensor &x) {
  bool nonzero = in.attrs.str == "nonzero";
  if (!nonzero && in.attrs.str != "finite")
    throw InternalError("executor: `check_factor` needs `finite` or `nonzero`");
  if (!isFloat(x.dtype))
    return;
  // The common case, every factor fine, in one branch-free pass (this runs
  // every step on a replicated weight, H x H elements).
  auto allFine = [&](auto *p) {
    int bad = 0;
    int64_t n = x.numel();
    if (nonzero)
      for (int64_t i = 0; i < n; ++i)
        bad |= p[i] == 0;
    else
      for (int64_t i = 0; i < n; ++i)
        bad |= std::fabs(p[i]) == INFINITY;
    return !bad;
  };
  if (x.dtype == DType::F32   ? allFine(x.data<float>())
      : x.dtype == DType::F64 ? allFine(x.data<double>())
                              : false)
    return;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    double v = x.get(i);
    if (nonzero ? v != 0 : !std::isinf(v))
      continue;
    throw RuntimeFault(
        std::string("a `partial(sum)` value ") +
        (nonzero ? "divided by zero" : "multiplied by an infinite factor") +
        ": its per-rank parts would not add up to the one-device result (a rank holding a zero "
        "part gives " +
        (nonzero ? "0 / 0" : "0 * inf") +
        " = nan); relayout the partial operand to `replicate` before this operation");
  }
}

} // namespace

void copyRegion(const void *src, const std::vector<int64_t> &srcShape,
                const std::vector<int64_t> &srcStart, void *dst,
                const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstStart,
                const std::vector<int64_t> &extent, int64_t esize) {
  int64_t n = 1;
  for (auto e : extent)
    n *= e;
  if (n == 0)
    return;
  size_t r = extent.size();
  if (r == 0) {
    std::memcpy(dst, src, esize);
    return;
  }
  auto ss = rowMajorStrides(srcShape), ds = rowMajorStrides(dstShape);
  int64_t row = extent[r - 1] * esize;
  std::vector<int64_t> idx(r - 1, 0);
  const char *s = static_cast<const char *>(src);
  char *d = static_cast<char *>(dst);
  for (;;) {
    int64_t so = srcStart[r - 1], doff = dstStart[r - 1];
    for (size_t k = 0; k + 1 < r; ++k) {
      so += (idx[k] + srcStart[k]) * ss[k];
      doff += (idx[k] + dstStart[k]) * ds[k];
    }
    std::memcpy(d + doff * esize, s + so * esize, row);
    size_t k = r - 1;
    while (k-- > 0) {
      if (++idx[k] < extent[k])
        break;
      idx[k] = 0;
    }
    if (k == (size_t)-1)
      return;
  }
}

bool isZeroPartialComponent(const TensorType &t, int64_t meshRank) {
  if (t.isHost() || !t.hasPartial() || meshRank < 0)
    return false;
  auto c = t.mesh->coords(meshRank);
  for (size_t a = 0; a < t.placements.size(); ++a)
    if (t.placements[a].isPartial() && t.placements[a].op == ReduceOp::Sum && c[a] != 0)
      return true;
  return false;
}

HostTensor applyPartialSource(HostTensor block, const TensorType &t, int64_t meshRank) {
  return isZeroPartialComponent(t, meshRank) ? HostTensor(block.dtype, block.shape) : block;
}

HostTensor blockOfGlobal(const HostTensor &global, const TensorType &t, int64_t meshRank) {
  LocalBlock b = blockOf(t, meshRank);
  HostTensor out(global.dtype, b.shape);
  copyRegion(global.raw(), global.shape, b.offset, out.raw(), b.shape,
             std::vector<int64_t>(b.shape.size(), 0), b.shape, dtypeSize(global.dtype));
  return applyPartialSource(std::move(out), t, meshRank);
}

std::vector<HostTensor> runLocalOp(const Inst &in, const std::vector<const HostTensor *> &args,
                                   const std::vector<TensorType> &resultTypes, LocalPlace place) {
  auto arg = [&](size_t i) -> const HostTensor & {
    if (i >= args.size() || !args[i])
      throw InternalError(std::string("executor: `") + opName(in.op) + "` is missing operand " +
                          std::to_string(i));
    return *args[i];
  };
  if (resultTypes.size() != 1)
    throw InternalError(std::string("executor: `") + opName(in.op) + "` needs one result type");
  const TensorType &rt = resultTypes[0];
  auto one = [](HostTensor t) { return std::vector<HostTensor>{std::move(t)}; };
  auto dim0 = [&]() {
    if (in.attrs.ints.size() != 1)
      throw InternalError("executor: missing dim attribute");
    return in.attrs.ints[0];
  };
  switch (opInfo(in.op).cls) {
  case OpClass::Source:
    return one(applyPartialSource(source(in, rt, place.meshRank), rt, place.meshRank));
  case OpClass::Elementwise1:
    if (in.op == Op::Cast)
      return one(ref::cast(arg(0), rt.dtype));
    return one(ref::unary(in.op, arg(0), rt.dtype));
  case OpClass::Elementwise2:
    return one(ref::binary(in.op, arg(0), arg(1), rt.dtype));
  case OpClass::Elementwise3:
    return one(ref::select(arg(0), arg(1), arg(2), rt.dtype));
  case OpClass::Reduce:
    return one(ref::reduce(in.op, arg(0), in.attrs.ints, rt.dtype));
  default:
    break;
  }
  switch (in.op) {
  case Op::MatMul: {
    // Dense float matmul through BLAS (the reference kernel is a plain loop);
    // other dtypes keep the reference kernel.
    const HostTensor &a = arg(0), &b = arg(1);
    if (!place.referenceOnly && isFloat(a.dtype) && a.dtype == b.dtype && a.dtype == rt.dtype &&
        a.rank() >= 1 && b.rank() >= 1) {
      HostTensor c;
      gemm(a, b, c, matmulTransposed(in.attrs, 0), matmulTransposed(in.attrs, 1));
      return one(std::move(c));
    }
    return one(ref::matmul(ref::matmulOperand(a, in, 0), ref::matmulOperand(b, in, 1), rt.dtype));
  }
  case Op::Einsum: {
    std::vector<HostTensor> xs;
    for (size_t i = 0; i < args.size(); ++i)
      xs.push_back(arg(i));
    return one(ref::einsum(in.attrs.str, xs, rt.dtype));
  }
  case Op::Transpose:
    return one(ref::transpose(arg(0), in.attrs.ints));
  case Op::Reshape:
    return one(ref::reshape(arg(0), blockOf(rt, place.meshRank).shape));
  case Op::Broadcast:
    return one(ref::broadcastTo(arg(0), blockOf(rt, place.meshRank).shape));
  case Op::IndexSelect:
    return one(ref::indexSelect(arg(0), arg(1), dim0()));
  case Op::IndexAdd:
    return one(ref::indexAdd(arg(0), arg(1), arg(2), dim0()));
  case Op::Cumsum:
    // The dim is whole in every block (its placement rule): the block's own
    // running sums are the global ones.
    return one(ref::cumsum(arg(0), dim0(), in.attrs.flag));
  case Op::CheckFactor:
    checkFactor(in, arg(0));
    // The operand itself, its buffer shared: a kernel writes in place only
    // into a buffer no other value holds (use_count, runtime/KernelRuntime).
    return one(arg(0));
  default:
    break;
  }
  throw InternalError(std::string("executor: no local semantics for `") + opName(in.op) + "`");
}

} // namespace dt
