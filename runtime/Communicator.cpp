// This file implements the backend-independent helpers of Communicator.h: the
// elementwise reduction kernels (one loop per dtype and op, written so that the
// compiler vectorizes them: restrict pointers, branch-free combine, unsigned
// wrap-around for integer sums) and count bookkeeping.
#include "runtime/Communicator.h"
#include "support/LowPrecision.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

// GCC's -O2 uses the "very-cheap" vectorizer cost model, which refuses loops of
// unknown trip count; these kernels are the collectives' inner loops, so ask for
// the normal model here (clang vectorizes them at -O2 already).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

namespace dt {
namespace {

/// Element type used to store a dtype; Bool is one byte.
template <DType D> struct Elem;
template <> struct Elem<DType::F32> { using T = float; };
template <> struct Elem<DType::F64> { using T = double; };
template <> struct Elem<DType::I32> { using T = int32_t; };
template <> struct Elem<DType::I64> { using T = int64_t; };
template <> struct Elem<DType::Bool> { using T = uint8_t; };
template <> struct Elem<DType::BF16> { using T = uint16_t; };
template <> struct Elem<DType::F16> { using T = uint16_t; };

/// bf16/f16 bits widened to f32, and rounded back (nearest even).
template <DType D> inline float lpWiden(uint16_t h) {
  return D == DType::BF16 ? bf16ToFloat(h) : halfToFloat(h);
}
template <DType D> inline uint16_t lpNarrow(float f) {
  return D == DType::BF16 ? floatToBf16(f) : floatToHalf(f);
}

/// The combine function of one (dtype, op): branch-free so loops vectorize.
template <DType D, ReduceOp Op> struct Combine {
  using T = typename Elem<D>::T;
  static inline T apply(T a, T b) {
    if constexpr (D == DType::BF16 || D == DType::F16) {
      // Each step combines in f32 and rounds once to the storage type (the
      // rule of every bf16/f16 op; NCCL's bf16 sums do the same per hop).
      return lpNarrow<D>(Combine<DType::F32, Op>::apply(lpWiden<D>(a), lpWiden<D>(b)));
    } else if constexpr (D == DType::Bool) {
      if constexpr (Op == ReduceOp::Min)
        return (T)(a & b);
      else
        return (T)(a | b);
    } else if constexpr (Op == ReduceOp::Max) {
      // NaN propagates (as the reference's reduce_max): a NaN `a` is kept by
      // the comparison failing, a NaN `b` is taken by `b != b`.
      return (a < b || b != b) ? b : a;
    } else if constexpr (Op == ReduceOp::Min) {
      return (b < a || b != b) ? b : a;
    } else if constexpr (std::is_integral_v<T>) {
      // Sum and Avg: two's-complement wrap-around, no signed-overflow UB.
      using U = std::make_unsigned_t<T>;
      return (T)((U)a + (U)b);
    } else {
      return a + b;
    }
  }
};

template <DType D, ReduceOp Op> void reduceIntoT(void *accV, const void *srcV, int64_t n) {
  using T = typename Elem<D>::T;
  T *__restrict acc = static_cast<T *>(accV);
  const T *__restrict src = static_cast<const T *>(srcV);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i)
    acc[i] = Combine<D, Op>::apply(acc[i], src[i]);
}

/// dst[i] = op(...op(op(s[0][i], s[1][i]), s[2][i])..., s[N-1][i]): one pass for N sources.
template <DType D, ReduceOp Op, int N>
void reduceFixedT(void *dstV, const void *const *srcV, int64_t n) {
  using T = typename Elem<D>::T;
  T *__restrict dst = static_cast<T *>(dstV);
  const T *__restrict s[N];
  for (int j = 0; j < N; ++j)
    s[j] = static_cast<const T *>(srcV[j]);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T v = Combine<D, Op>::apply(s[0][i], s[1][i]);
    for (int j = 2; j < N; ++j)
      v = Combine<D, Op>::apply(v, s[j][i]);
    dst[i] = v;
  }
}

/// Calls f.template operator()<D, Op>() for the runtime (dtype, op).
template <class F> void dispatch(DType dtype, ReduceOp op, F &&f) {
  checkReducible(dtype, op);
  auto withOp = [&]<DType D>() {
    switch (op) {
    case ReduceOp::Sum:
      return f.template operator()<D, ReduceOp::Sum>();
    case ReduceOp::Avg:
      return f.template operator()<D, ReduceOp::Sum>(); // Avg sums first
    case ReduceOp::Max:
      return f.template operator()<D, ReduceOp::Max>();
    case ReduceOp::Min:
      return f.template operator()<D, ReduceOp::Min>();
    }
  };
  switch (dtype) {
  case DType::F32:
    return withOp.template operator()<DType::F32>();
  case DType::F64:
    return withOp.template operator()<DType::F64>();
  case DType::I32:
    return withOp.template operator()<DType::I32>();
  case DType::I64:
    return withOp.template operator()<DType::I64>();
  case DType::Bool:
    return withOp.template operator()<DType::Bool>();
  case DType::BF16:
    return withOp.template operator()<DType::BF16>();
  case DType::F16:
    return withOp.template operator()<DType::F16>();
  }
}

template <class T> void divideBy(void *bufV, int64_t n, int groupSize) {
  T *buf = static_cast<T *>(bufV);
  const T k = (T)groupSize;
  for (int64_t i = 0; i < n; ++i)
    buf[i] = buf[i] / k;
}

} // namespace

void checkReducible(DType dtype, ReduceOp op) {
  if (dtype == DType::Bool && op == ReduceOp::Avg)
    throw RuntimeFault("reduction `avg` is not defined on `bool` (use `sum`/`max` for or, `min` "
                       "for and)");
}

void reduceInto(void *acc, const void *src, int64_t count, DType dtype, ReduceOp op) {
  if (count <= 0)
    return;
  dispatch(dtype, op, [&]<DType D, ReduceOp Op>() { reduceIntoT<D, Op>(acc, src, count); });
}

void reduceMany(void *dst, const void *const *srcs, int n, int64_t count, DType dtype,
                ReduceOp op) {
  if (count <= 0)
    return;
  if (n == 1) {
    std::memcpy(dst, srcs[0], (size_t)(count * dtypeSize(dtype)));
    return;
  }
  // Up to 4 sources in one pass (the inner loop unrolled, vectorized over i);
  // more: the first 4, then 3 at a time into dst.
  const int first = std::min(n, 4);
  dispatch(dtype, op, [&]<DType D, ReduceOp Op>() {
    switch (first) {
    case 2:
      return reduceFixedT<D, Op, 2>(dst, srcs, count);
    case 3:
      return reduceFixedT<D, Op, 3>(dst, srcs, count);
    default:
      return reduceFixedT<D, Op, 4>(dst, srcs, count);
    }
  });
  for (int j = first; j < n; ++j)
    reduceInto(dst, srcs[j], count, dtype, op);
}

void finishAvg(void *buf, int64_t count, DType dtype, ReduceOp op, int groupSize) {
  if (op != ReduceOp::Avg || count <= 0 || groupSize == 1)
    return;
  switch (dtype) {
  case DType::F32:
    return divideBy<float>(buf, count, groupSize);
  case DType::F64:
    return divideBy<double>(buf, count, groupSize);
  case DType::I32:
    return divideBy<int32_t>(buf, count, groupSize);
  case DType::I64:
    return divideBy<int64_t>(buf, count, groupSize);
  case DType::Bool:
    checkReducible(dtype, op);
    return;
  case DType::BF16:
  case DType::F16: {
    uint16_t *p = static_cast<uint16_t *>(buf);
    bool bf = dtype == DType::BF16;
    for (int64_t i = 0; i < count; ++i) {
      float v = (bf ? bf16ToFloat(p[i]) : halfToFloat(p[i])) / (float)groupSize;
      p[i] = bf ? floatToBf16(v) : floatToHalf(v);
    }
    return;
  }
  }
}

int64_t totalCount(const std::vector<int64_t> &counts) {
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0)
      throw RuntimeFault("collective: negative element count " + std::to_string(c));
    total += c;
  }
  return total;
}

std::vector<int64_t> countOffsets(const std::vector<int64_t> &counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i)
    off[i + 1] = off[i] + counts[i];
  return off;
}

std::vector<int> meshAxisGroup(const Mesh &mesh, int64_t meshRank, int axis) {
  std::vector<int64_t> c = mesh.coords(meshRank);
  std::vector<int> members;
  for (int64_t i = 0; i < mesh.axes[axis].size; ++i) {
    c[axis] = i;
    int64_t r = mesh.rankOf(c);
    members.push_back((int)(mesh.devices.empty() ? r : mesh.devices[r]));
  }
  return members;
}

int worldRankOf(const std::vector<int64_t> &worldIds, int64_t id) {
  auto it = std::lower_bound(worldIds.begin(), worldIds.end(), id);
  return it != worldIds.end() && *it == id ? (int)(it - worldIds.begin()) : -1;
}

const char *collectiveName(CollectiveKind k) {
  switch (k) {
  case CollectiveKind::AllReduce:
    return "allReduce";
  case CollectiveKind::AllGatherV:
    return "allGatherV";
  case CollectiveKind::ReduceScatterV:
    return "reduceScatterV";
  case CollectiveKind::AllToAllV:
    return "allToAllV";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Barrier:
    return "barrier";
  }
  return "?";
}

} // namespace dt
