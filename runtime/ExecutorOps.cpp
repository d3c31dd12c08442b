// This file implements the executor's local ops on the Device (see
// runtime/RankRunner.h): BLAS products into pooled buffers, deterministic
// mode's products, op kernels and einsum through a matmul.
#include "runtime/RankRunner.h"

#include "ir/Topology.h"

#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "runtime/Blas.h"
#include "runtime/CheckpointIO.h"
#include "runtime/CollectiveSteps.h"
#include "runtime/CpuBackend.h"
#include "runtime/Format.h"
#include "runtime/Inspect.h"
#include "runtime/LocalOps.h"
#include "runtime/RefKernels.h"
#include "runtime/TensorIO.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

namespace dt::exec {

namespace {
/// The dims of a (concrete) result on the rank at `place`: its whole shape
/// on the host, its block on a mesh.
std::vector<int64_t> localDims(const TensorType &t, const LocalPlace &place) {
  return t.isHost() || place.meshRank < 0 ? concreteDims(t.shape)
                                          : localBlock(t, place.meshRank).shape;
}
} // namespace

std::optional<HostTensor> RankRunner::deterministicProduct(const Inst &in, const HostTensor &a,
                                                           const HostTensor &b, DType out,
                                                           LocalPlace place) {
  const bool ta = matmulTransposed(in.attrs, 0), tb = matmulTransposed(in.attrs, 1);
  if (!place.referenceOnly)
    if (auto c = matmulPooled(in, a, b, out, true))
      return c;
  if (!place.referenceOnly)
    if (auto c = dev_.matmulDeterministic(a, b, out, ta, tb))
      return c;
  if ((out != DType::F32 && out != DType::F64) || a.dtype != out || b.dtype != out ||
      a.rank() < 1 || b.rank() < 1)
    return std::nullopt;
  HostTensor c;
  gemm(dev_.toHost(a), dev_.toHost(b), c, ta, tb, 1, true);
  return dev_.fromHost(c);
}

std::vector<Slot> RankRunner::localOp(const Inst &in, const std::vector<const HostTensor *> &args,
                                      const std::vector<TensorType> &types, LocalPlace place) {
  size_t n = args.size();
  bool oneDim = in.attrs.ints.size() == 1;
  if (sh_.m.deterministic && in.op == Op::MatMul && n == 2 && types.size() == 1)
    if (auto c = deterministicProduct(in, *args[0], *args[1], types[0].dtype, place))
      return {std::move(*c)};
  if (sh_.kernels && types.size() == 1)
    if (const KernelTable::OpEntry *oe = sh_.kernels->findOp(in))
      if (auto r = opKernel(*oe, args, types[0].dtype))
        return {std::move(*r)};
  if (types.size() == 1 && in.op != Op::MatMul && in.op != Op::Reshape &&
      isConcrete(types[0].shape)) {
    // The op allocates its result through the device: a pooled buffer of
    // that size goes back to the device's cache first, where it is found
    // (the pool serves kernels and products: a loop of transposes kept four
    // pooled buffers and allocated a new one every step).
    int64_t n = 1;
    for (int64_t d : localDims(types[0], place))
      n *= d;
    rs_.dropPooled(n * dtypeSize(types[0].dtype));
  }
  if (!place.referenceOnly && types.size() == 1) {
    switch (in.op) {
    case Op::MatMul:
      if (n == 2 && !sh_.m.deterministic)
        if (auto c = matmulPooled(in, *args[0], *args[1], types[0].dtype))
          return {std::move(*c)};
      if (n == 2)
        if (auto c =
                sh_.m.deterministic
                    ? dev_.matmulDeterministic(*args[0], *args[1], types[0].dtype,
                                               matmulTransposed(in.attrs, 0),
                                               matmulTransposed(in.attrs, 1))
                    : dev_.matmul(*args[0], *args[1], types[0].dtype, matmulTransposed(in.attrs, 0),
                                  matmulTransposed(in.attrs, 1)))
          return {std::move(*c)};
      break;
    case Op::Transpose:
      if (n == 1)
        return {dev_.transpose(*args[0], in.attrs.ints)};
      break;
    case Op::IndexSelect:
      if (n == 2 && oneDim)
        return {dev_.gather(*args[0], *args[1], in.attrs.ints[0])};
      break;
    case Op::IndexAdd:
      if (n == 3 && oneDim)
        return {
            dev_.scatterAdd(*args[0], *args[1], *args[2], in.attrs.ints[0], !sh_.m.deterministic)};
      break;
    default:
      break;
    }
  }
  // reshape is a view on every backend: the local block keeps its elements
  // in row-major order (the placement rule guarantees it), so the result
  // shares the buffer under the result block's shape.
  if (in.op == Op::Reshape && n == 1 && types.size() == 1 && isConcrete(types[0].shape)) {
    HostTensor r = *args[0];
    r.shape = localDims(types[0], place);
    if (r.numel() == args[0]->numel())
      return {std::move(r)};
  }
  ++rs_.stats.fallbackOps[opName(in.op)];
  auto out = dev_.fallbackLocalOp(in, args, types, place);
  return std::vector<Slot>(out.begin(), out.end());
}

std::optional<HostTensor> RankRunner::opKernel(const KernelTable::OpEntry &e,
                                               const std::vector<const HostTensor *> &args,
                                               DType out) {
  if (e.blas && args.size() == 2)
    if (auto c = einsumByMatmul(*e.blas, *args[0], *args[1], out))
      return c;
  if (!e.main.handle)
    return std::nullopt;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<void *> bufs;
  for (const HostTensor *a : args) {
    shapes.push_back(a->shape);
    bufs.push_back(const_cast<void *>(a->raw())); // kernels only read their inputs
  }
  OpLaunch l = opKernelLaunch(e.op, shapes);
  const Kernel &k = e.op.main;
  HostTensor acc;
  acc.dtype = k.outputs.at(0);
  acc.shape = l.outShape;
  acc.buf = e.op.finish ? dev_.allocateUninit(acc.bytes()) : rs_.acquire(dev_, acc.bytes());
  bufs.push_back(acc.raw());
  if (l.iterations > 0 || k.reduce != KReduce::None)
    dev_.launch(e.main, bufs.data(), l.params.data());
  ++rs_.stats.kernelCalls;
  if (!e.op.finish)
    return acc;
  HostTensor r;
  r.dtype = out;
  r.shape = l.outShape;
  r.buf = rs_.acquire(dev_, r.bytes());
  void *fb[2] = {acc.raw(), r.raw()};
  if (r.numel() > 0)
    dev_.launch(e.finish, fb, l.finishParams.data());
  ++rs_.stats.kernelCalls;
  return r;
}

std::optional<HostTensor> RankRunner::matmulPooled(const Inst &in, const HostTensor &a,
                                                   const HostTensor &b, DType out,
                                                   bool deterministic) {
  const bool ta = matmulTransposed(in.attrs, 0), tb = matmulTransposed(in.attrs, 1);
  if (!isFloat(out) || a.dtype != out || b.dtype != out || a.rank() < 1 || b.rank() < 1)
    return std::nullopt;
  return productPooled(a, b, out,
                       gemmShape(a.shape, b.shape, ta && a.rank() > 1, tb && b.rank() > 1), ta, tb,
                       deterministic);
}

std::optional<HostTensor> RankRunner::productPooled(const HostTensor &a, const HostTensor &b,
                                                    DType out, std::vector<int64_t> shape, bool ta,
                                                    bool tb, bool deterministic) {
  HostTensor c;
  c.dtype = out;
  c.shape = std::move(shape);
  c.buf = rs_.takePooled(c.bytes());
  if (!c.buf)
    return std::nullopt;
  if (deterministic ? dev_.matmulDeterministicInto(a, b, c, ta, tb)
                    : dev_.matmulInto(a, b, c, ta, tb))
    return c;
  std::optional<HostTensor> back = std::move(c);
  rs_.hold(*back); // the pool's buffer goes back to the pool
  rs_.release(back);
  return std::nullopt;
}

std::optional<HostTensor> RankRunner::einsumByMatmul(const EinsumMatmulPlan &p,
                                                     const HostTensor &a0, const HostTensor &b0,
                                                     DType out) {
  if (a0.numel() == 0 || b0.numel() == 0)
    return std::nullopt;
  HostTensor a = p.permA.empty() ? a0 : dev_.transpose(a0, p.permA);
  HostTensor b = p.permB.empty() ? b0 : dev_.transpose(b0, p.permB);
  auto size = [](const HostTensor &t, int from, int n, std::vector<int64_t> *dims) {
    int64_t s = 1;
    for (int i = from; i < from + n; ++i) {
      s *= t.shape.at(i);
      if (dims)
        dims->push_back(t.shape[i]);
    }
    return s;
  };
  std::vector<int64_t> outShape;
  int64_t nb = size(a, 0, p.batch, &outShape);
  int64_t m = size(a, p.batch + (p.transA ? p.k : 0), p.m, &outShape);
  int64_t k = size(a, p.batch + (p.transA ? 0 : p.m), p.k, nullptr);
  int64_t n = size(b, p.batch + (p.transB ? 0 : p.k), p.n, &outShape);
  a.shape = p.transA ? std::vector<int64_t>{nb, k, m} : std::vector<int64_t>{nb, m, k};
  b.shape = p.transB ? std::vector<int64_t>{nb, n, k} : std::vector<int64_t>{nb, k, n};
  // The product goes into a buffer of the rank's pool when one fits, as a
  // matmul's does (matmulPooled); else the Device allocates it.
  std::optional<HostTensor> c;
  if (p.permOut.empty() && a.dtype == out && b.dtype == out)
    c = productPooled(a, b, out, {nb, m, n}, p.transA, p.transB);
  if (!c)
    c = dev_.matmul(a, b, out, p.transA, p.transB);
  if (!c)
    return std::nullopt;
  c->shape = outShape;
  if (!p.permOut.empty())
    return dev_.transpose(*c, p.permOut);
  return c;
}

} // namespace dt::exec
