// This file implements the cuda backend's data-movement kernels (see
// CudaDataKernels.h).
#include "runtime/CudaDataKernels.h"

#include "codegen/CudaEmitter.h"
#include "runtime/RefKernelsUtil.h"
#include "support/Errors.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace dt {

namespace {

// Every data-movement kernel, after the emitter's prelude (no CUDA headers:
// NVRTC finds none by default; bf16/f16 by the prelude's bit conversions,
// the same as every kernel's).
const char *kBody = R"(
struct Dims8 { long long v[8]; };
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
#define DT_LOOP(i, n) \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
       i += (long long)gridDim.x * blockDim.x)

template <class T>
__device__ void stridedCopy(const T *src, T *dst, long long n, int rank, Dims8 ext, Dims8 ss,
                            long long so, Dims8 ds, long long dof) {
  DT_LOOP(i, n) {
    long long rem = i, s = so, d = dof;
    for (int k = rank - 1; k >= 0; --k) {
      long long c = rem % ext.v[k];
      rem /= ext.v[k];
      s += c * ss.v[k];
      d += c * ds.v[k];
    }
    dst[d] = src[s];
  }
}

template <class T, class I>
__device__ void gatherRows(const T *src, const I *ids, T *dst, long long total, long long k,
                           long long inner, long long n) {
  DT_LOOP(i, total) {
    long long e = i % inner, r = i / inner, j = r % k, o = r / k;
    dst[i] = src[(o * n + (long long)ids[j]) * inner + e];
  }
}

struct AddF32 { typedef float T; typedef float A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; }
  __device__ static A add(A a, A b) { return a + b; } };
struct AddF64 { typedef double T; typedef double A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; }
  __device__ static A add(A a, A b) { return a + b; } };
struct AddI32 { typedef u32 T; typedef u32 A; // wrapping: unsigned arithmetic
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; }
  __device__ static A add(A a, A b) { return a + b; } };
struct AddI64 { typedef u64 T; typedef u64 A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; }
  __device__ static A add(A a, A b) { return a + b; } };
struct AddBool { typedef u8 T; typedef u8 A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; }
  __device__ static A add(A a, A b) { return (a || b) ? 1 : 0; } };
struct AddBF16 { typedef u16 T; typedef float A;
  __device__ static A in(T v) { return dt_bf16_to_f32(v); }
  __device__ static T out(A a) { return dt_f32_to_bf16(a); }
  __device__ static A add(A a, A b) { return a + b; } };
struct AddF16 { typedef u16 T; typedef float A;
  __device__ static A in(T v) { return dt_f16_to_f32(v); }
  __device__ static T out(A a) { return dt_f32_to_f16(a); }
  __device__ static A add(A a, A b) { return a + b; } };

// Adds the list entries order[p .. end) of column `col` to `acc` in list
// order: 8 list entries, then their 8 values, are loaded before they are
// added, so 8 loads are in flight.
template <class Op>
__device__ typename Op::A addList(typename Op::A acc, const typename Op::T *col,
                                  const long long *order, long long p, long long end,
                                  long long inner) {
  const int kBatch = 8;
  for (; p + kBatch <= end; p += kBatch) {
    typename Op::T v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      v[b] = col[order[p + b] * inner];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      acc = Op::add(acc, Op::in(v[b]));
  }
  for (; p < end; ++p)
    acc = Op::add(acc, Op::in(col[order[p] * inner]));
  return acc;
}

// Few outputs over long lists (index_add into a few rows): each thread adds
// its output's whole list to base, in list order (the reference's order).
template <class Op>
__device__ void scatterAddRows(const typename Op::T *base, const long long *rowStart,
                               const long long *order, const typename Op::T *src,
                               typename Op::T *dst, long long total, long long n, long long k,
                               long long inner) {
  DT_LOOP(i, total) {
    long long e = i % inner, r = (i / inner) % n, o = i / (inner * n);
    const typename Op::T *col = src + o * k * inner + e;
    dst[i] = Op::out(addList<Op>(Op::in(base[i]), col, order, rowStart[r], rowStart[r + 1], inner));
  }
}

// Default mode, few outputs over long lists: chunk c of each output's list
// summed by its own thread (outputs fastest, so a warp's loads coalesce),
// into part[c * total + i]; then each output folds base and its chunks in
// chunk order.
template <class Op>
__device__ void scatterAddChunks(const long long *rowStart, const long long *order,
                                 const typename Op::T *src, typename Op::A *part, long long total,
                                 long long n, long long k, long long inner, long long chunks) {
  DT_LOOP(t, total * chunks) {
    long long i = t % total, c = t / total;
    long long e = i % inner, r = (i / inner) % n, o = i / (inner * n);
    const typename Op::T *col = src + o * k * inner + e;
    const long long first = rowStart[r], len = rowStart[r + 1] - first;
    const long long per = (len + chunks - 1) / chunks;
    const long long p = first + c * per < first + len ? first + c * per : first + len;
    const long long end = p + per < first + len ? p + per : first + len;
    part[t] = addList<Op>((typename Op::A)0, col, order, p, end, inner);
  }
}

template <class Op>
__device__ void scatterAddFold(const typename Op::T *base, const typename Op::A *part,
                               typename Op::T *dst, long long total, long long chunks) {
  DT_LOOP(i, total) {
    typename Op::A acc = Op::in(base[i]);
    for (long long c = 0; c < chunks; ++c)
      acc = Op::add(acc, part[c * total + i]);
    dst[i] = Op::out(acc);
  }
}

// check_factor: flag = 1 when some element is 0 (nonzero) or +-inf (finite).
template <class T>
__device__ void badFactor(const T *x, long long n, int nonzero, unsigned *flag) {
  DT_LOOP(i, n) {
    const float v = (float)x[i];
    if (nonzero ? v == 0.0f : (v == 1.0f / 0.0f || v == -1.0f / 0.0f))
      *flag = 1u;
  }
}
__device__ void badFactor64(const double *x, long long n, int nonzero, unsigned *flag) {
  DT_LOOP(i, n) {
    const double v = x[i];
    if (nonzero ? v == 0.0 : (v == 1.0 / 0.0 || v == -1.0 / 0.0))
      *flag = 1u;
  }
}
struct Bf16In { u16 b; __device__ operator float() const { return dt_bf16_to_f32(b); } };
struct F16In { u16 b; __device__ operator float() const { return dt_f16_to_f32(b); } };
extern "C" __global__ void dt_bad_factor_f32(const float *x, long long n, int nz, unsigned *f) {
  badFactor<float>(x, n, nz, f); }
extern "C" __global__ void dt_bad_factor_f64(const double *x, long long n, int nz, unsigned *f) {
  badFactor64(x, n, nz, f); }
extern "C" __global__ void dt_bad_factor_bf16(const Bf16In *x, long long n, int nz, unsigned *f) {
  badFactor<Bf16In>(x, n, nz, f); }
extern "C" __global__ void dt_bad_factor_f16(const F16In *x, long long n, int nz, unsigned *f) {
  badFactor<F16In>(x, n, nz, f); }

// A fill: every element the value's bits, passed by value (no upload, no
// wait on the stream).
template <class T>
__device__ void fillBits(T *dst, long long n, u64 bits) {
  const T v = (T)bits;
  DT_LOOP(i, n) dst[i] = v;
}

#define DT_COPY(E, T) \
  extern "C" __global__ void dt_strided_copy_##E(const T *src, T *dst, long long n, int rank, \
      Dims8 ext, Dims8 ss, long long so, Dims8 ds, long long dof) { \
    stridedCopy<T>(src, dst, n, rank, ext, ss, so, ds, dof); }
DT_COPY(1, u8) DT_COPY(2, u16) DT_COPY(4, u32) DT_COPY(8, u64)

#define DT_FILL(E, T) \
  extern "C" __global__ void dt_fill_##E(T *dst, long long n, u64 bits) { fillBits<T>(dst, n, bits); }
DT_FILL(1, u8) DT_FILL(2, u16) DT_FILL(4, u32) DT_FILL(8, u64)

#define DT_GATHER(E, T, IN, I) \
  extern "C" __global__ void dt_gather_##E##_##IN(const T *src, const I *ids, T *dst, \
      long long total, long long k, long long inner, long long n) { \
    gatherRows<T, I>(src, ids, dst, total, k, inner, n); }
DT_GATHER(1, u8, i32, int) DT_GATHER(2, u16, i32, int) DT_GATHER(4, u32, i32, int)
DT_GATHER(8, u64, i32, int) DT_GATHER(1, u8, i64, long long) DT_GATHER(2, u16, i64, long long)
DT_GATHER(4, u32, i64, long long) DT_GATHER(8, u64, i64, long long)

#define DT_SCATTER(NAME, OP) \
  extern "C" __global__ void dt_scatter_add_##NAME(const OP::T *base, const long long *rowStart, \
      const long long *order, const OP::T *src, OP::T *dst, long long total, long long n, \
      long long k, long long inner) { \
    scatterAddRows<OP>(base, rowStart, order, src, dst, total, n, k, inner); }
#define DT_SCATTER_SPLIT(NAME, OP) \
  extern "C" __global__ void dt_scatter_chunks_##NAME(const long long *rowStart, \
      const long long *order, const OP::T *src, OP::A *part, long long total, long long n, \
      long long k, long long inner, long long chunks) { \
    scatterAddChunks<OP>(rowStart, order, src, part, total, n, k, inner, chunks); } \
  extern "C" __global__ void dt_scatter_fold_##NAME(const OP::T *base, const OP::A *part, \
      OP::T *dst, long long total, long long chunks) { \
    scatterAddFold<OP>(base, part, dst, total, chunks); }
#define DT_SCATTERS(NAME, OP) DT_SCATTER(NAME, OP) DT_SCATTER_SPLIT(NAME, OP)
DT_SCATTERS(f32, AddF32) DT_SCATTERS(f64, AddF64) DT_SCATTERS(i32, AddI32)
DT_SCATTERS(i64, AddI64) DT_SCATTERS(bool, AddBool) DT_SCATTERS(bf16, AddBF16)
DT_SCATTERS(f16, AddF16)

// `cumsum`: a thread per column (outer x inner), its running sum in order
// along the dim (from the end with `reverse`). The reference's numerics:
// floats add in f64 and round each sum once to the dtype (bf16/f16 through
// f32 rounded to odd, then to nearest even); integers wrap.
struct ScanF32 { typedef float T; typedef double A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return (float)a; } };
struct ScanF64 { typedef double T; typedef double A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; } };
struct ScanI32 { typedef u32 T; typedef u32 A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; } };
struct ScanI64 { typedef u64 T; typedef u64 A;
  __device__ static A in(T v) { return v; } __device__ static T out(A a) { return a; } };
struct ScanBF16 { typedef u16 T; typedef double A;
  __device__ static A in(T v) { return dt_bf16_to_f32(v); }
  __device__ static T out(A a) { return dt_f32_to_bf16(dt_f64_to_f32_odd(a)); } };
struct ScanF16 { typedef u16 T; typedef double A;
  __device__ static A in(T v) { return dt_f16_to_f32(v); }
  __device__ static T out(A a) { return dt_f32_to_f16(dt_f64_to_f32_odd(a)); } };
template <class Op>
__device__ void cumsumColumns(const typename Op::T *src, typename Op::T *dst, long long outer,
                              long long n, long long inner, int reverse) {
  const long long cols = outer * inner;
  for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < cols;
       c += (long long)gridDim.x * blockDim.x) {
    const long long base = (c / inner) * n * inner + c % inner;
    typename Op::A acc = 0;
    for (long long k = 0; k < n; ++k) {
      const long long at = base + (reverse ? n - 1 - k : k) * inner;
      acc = acc + Op::in(src[at]);
      dst[at] = Op::out(acc);
    }
  }
}
#define DT_CUMSUM(NAME, OP) \
  extern "C" __global__ void dt_cumsum_##NAME(const OP::T *src, OP::T *dst, long long outer, \
      long long n, long long inner, int reverse) { \
    cumsumColumns<OP>(src, dst, outer, n, inner, reverse); }
DT_CUMSUM(f32, ScanF32) DT_CUMSUM(f64, ScanF64) DT_CUMSUM(i32, ScanI32) DT_CUMSUM(i64, ScanI64)
DT_CUMSUM(bf16, ScanBF16) DT_CUMSUM(f16, ScanF16)
)";

/// All data-movement kernels are one module: compiled once (NVRTC's disk
/// cache), each function looked up by name (rawFunction caches by symbol).
void *fn(CudaContext &ctx, const std::string &symbol) {
  return ctx.rawFunction(cudaDataKernelSource(), symbol);
}

int64_t gridFor(CudaContext &ctx, int64_t n) {
  return std::min<int64_t>((n + 255) / 256, (int64_t)ctx.numSMs() * 32);
}

struct Dims8 {
  long long v[8] = {0};
};

Dims8 dims8(const std::vector<int64_t> &v) {
  Dims8 d;
  for (size_t i = 0; i < v.size() && i < 8; ++i)
    d.v[i] = v[i];
  return d;
}

/// outer, n, inner of a tensor of `shape` around `dim`.
void around(const std::vector<int64_t> &shape, int64_t dim, int64_t &outer, int64_t &n,
            int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  n = shape[dim];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

} // namespace

const std::string &cudaDataKernelSource() {
  static const std::string source = std::string(cudaPrelude()) + kBody;
  return source;
}

void cudaStridedCopy(CudaContext &ctx, const void *src, void *dst,
                     const std::vector<int64_t> &extent, const std::vector<int64_t> &srcStrides,
                     int64_t srcOffset, const std::vector<int64_t> &dstStrides, int64_t dstOffset,
                     int64_t esize, CudaStream s) {
  if (extent.size() > 8)
    throw RuntimeFault("cuda: a copy of rank " + std::to_string(extent.size()) +
                       " (the device copy handles up to 8 dims)");
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
    throw InternalError("cuda: strided copy of " + std::to_string(esize) + "-byte elements");
  int64_t n = 1;
  for (auto e : extent)
    n *= e;
  if (n == 0)
    return;
  void *f = fn(ctx, "dt_strided_copy_" + std::to_string(esize));
  long long nn = n, so = srcOffset, dof = dstOffset;
  int rank = (int)extent.size();
  Dims8 ext = dims8(extent), ss = dims8(srcStrides), ds = dims8(dstStrides);
  void *args[] = {&src, &dst, &nn, &rank, &ext, &ss, &so, &ds, &dof};
  ctx.launchRaw(f, gridFor(ctx, n), 256, args, s);
}

void cudaGather(CudaContext &ctx, const HostTensor &src, const HostTensor &ids, int64_t dim,
                HostTensor &out, CudaStream s) {
  int64_t outer, n, inner;
  around(src.shape, dim, outer, n, inner);
  const int64_t k = ids.numel(), total = outer * k * inner;
  if (total == 0)
    return;
  const std::string ix = ids.dtype == DType::I64 ? "i64" : "i32";
  void *f = fn(ctx, "dt_gather_" + std::to_string(dtypeSize(src.dtype)) + "_" + ix);
  const void *sp = src.raw(), *ip = ids.raw();
  void *dp = out.raw();
  long long t = total, kk = k, in = inner, nn = n;
  void *args[] = {&sp, &ip, &dp, &t, &kk, &in, &nn};
  ctx.launchRaw(f, gridFor(ctx, total), 256, args, s);
}

bool cudaBadFactor(CudaContext &ctx, const HostTensor &x, bool nonzero, CudaStream s) {
  const int64_t n = x.numel();
  if (n == 0 || !isFloat(x.dtype))
    return false;
  void *f = fn(ctx, std::string("dt_bad_factor_") + dtypeName(x.dtype));
  void *flag = ctx.alloc(4, s);
  ctx.zero(flag, 4, s);
  const void *xp = x.raw();
  long long nn = n;
  int nz = nonzero ? 1 : 0;
  void *args[] = {&xp, &nn, &nz, &flag};
  ctx.launchRaw(f, gridFor(ctx, n), 256, args, s);
  uint32_t bad = 0;
  ctx.copyToHost(&bad, flag, 4, s); // waits for the stream
  ctx.free(flag);
  return bad != 0;
}

void cudaFill(CudaContext &ctx, const HostTensor &one, HostTensor &out, CudaStream s) {
  const int64_t es = dtypeSize(out.dtype), n = out.numel();
  if (n == 0)
    return;
  unsigned long long bits = 0; // the element's bytes, little-endian, as the kernel's T
  std::memcpy(&bits, one.raw(), (size_t)es);
  void *f = fn(ctx, "dt_fill_" + std::to_string(es));
  void *dp = out.raw();
  long long nn = n;
  void *args[] = {&dp, &nn, &bits};
  ctx.launchRaw(f, gridFor(ctx, n), 256, args, s);
}

void cudaCumsum(CudaContext &ctx, const HostTensor &x, int64_t dim, bool reverse, HostTensor &out,
                CudaStream s) {
  if (x.dtype == DType::Bool || dim < 0 || dim >= x.rank())
    throw InternalError("cuda backend: `cumsum` of a bool tensor or a dim out of range");
  if (x.numel() == 0)
    return;
  int64_t outer, n, inner;
  around(x.shape, dim, outer, n, inner);
  void *f = fn(ctx, std::string("dt_cumsum_") + dtypeName(x.dtype));
  const void *sp = x.raw();
  void *dp = out.raw();
  long long o = outer, nn = n, in = inner;
  int rev = reverse ? 1 : 0;
  void *args[] = {&sp, &dp, &o, &nn, &in, &rev};
  ctx.launchRaw(f, gridFor(ctx, outer * inner), 256, args, s);
}

void cudaScatterLists(const HostTensor &ids, int64_t dim, int64_t n, std::vector<int64_t> &rowStart,
                      std::vector<int64_t> &order) {
  const int64_t k = ids.numel();
  rowStart.assign(n + 1, 0);
  order.assign(std::max<int64_t>(k, 1), 0);
  for (int64_t j = 0; j < k; ++j)
    ++rowStart[ref::checkedId("index_add", ids, j, dim, n) + 1];
  for (int64_t r = 0; r < n; ++r)
    rowStart[r + 1] += rowStart[r];
  std::vector<int64_t> next(rowStart.begin(), rowStart.end() - 1);
  for (int64_t j = 0; j < k; ++j)
    order[next[ref::idAt(ids, j)]++] = j; // stable: each row's list in id order
}

CudaScatterPlan cudaScatterPlan(CudaContext &ctx, const HostTensor &idsOnHost, int64_t dim,
                                int64_t n, CudaStream s) {
  std::vector<int64_t> rowStart, order;
  cudaScatterLists(idsOnHost, dim, n, rowStart, order);
  CudaScatterPlan p;
  p.k = idsOnHost.numel();
  for (int64_t r = 0; r < n; ++r)
    p.maxList = std::max(p.maxList, rowStart[r + 1] - rowStart[r]);
  p.lists = ctx.alloc((int64_t)(rowStart.size() + order.size()) * 8, s);
  p.order = static_cast<char *>(p.lists) + rowStart.size() * 8;
  ctx.copyToDevice(p.lists, rowStart.data(), (int64_t)rowStart.size() * 8, s);
  ctx.copyToDevice(p.order, order.data(), (int64_t)order.size() * 8, s);
  // The host vectors die here: the copies must have read them (pageable
  // copies are staged at the call, but wait to be sure).
  ctx.synchronize(s);
  return p;
}

int64_t cudaScatterChunks(int64_t total, int64_t maxList, int64_t sms) {
  if (total <= 0)
    return 1;
  // At most two full waves of resident threads, rounded down:
  // rounded up, 16 x 4096 outputs took 9 chunks on 132 SMs, a third wave a
  // fifth full, 134 us on an H200 against 109 us in 8 chunks.
  const int64_t wanted = sms * kCudaSmThreads * 2;
  const int64_t chunks = std::min(wanted / total, maxList / kScatterChunkMin);
  return std::max<int64_t>(chunks, 1);
}

void cudaLaunchScatter(CudaContext &ctx, const CudaKernel &ck, void *const *deviceBuffers,
                       const int64_t *params, const CudaScatterPlan &plan, int64_t rows,
                       CudaStream s) {
  const Kernel &k = ck.kernel;
  const int64_t total = rows * cudaScatterInner(k, params);
  if (total <= 0)
    return;
  const int64_t split = k.deterministic ? 1 : cudaScatterChunks(total, plan.maxList, ctx.numSMs());
  std::vector<uint64_t> words = cudaKernelArgs(k, deviceBuffers, params);
  const size_t W = words.size();
  words[W - 5] = (uint64_t)(uintptr_t)plan.lists;
  words[W - 4] = (uint64_t)(uintptr_t)plan.order;
  words[W - 3] = (uint64_t)rows;
  words[W - 2] = (uint64_t)split;
  void *scratch =
      split > 1 ? ctx.alloc(cudaScatterScratchBytes(k, params, rows, split), s) : nullptr;
  words[W - 1] = (uint64_t)(uintptr_t)scratch;
  void *args[] = {words.data()}; // one by-value argument: struct dt_args
  ctx.launchRaw(ck.function, cudaScatterBlocks(k, params, rows, split, ctx.numSMs()), kCudaBlock,
                args, s);
  if (split <= 1)
    return;
  words[W - 2] = (uint64_t)(-split);
  ctx.launchRaw(ck.function, cudaScatterBlocks(k, params, rows, 1, ctx.numSMs()), kCudaBlock, args,
                s);
  ctx.free(scratch); // reused only on this stream, after these launches
}

void cudaScatterAdd(CudaContext &ctx, const HostTensor &base, const CudaScatterPlan &plan,
                    const HostTensor &src, int64_t dim, HostTensor &out, bool reassociate,
                    CudaStream s) {
  int64_t outer, n, inner;
  around(base.shape, dim, outer, n, inner);
  const int64_t total = outer * n * inner;
  if (total == 0)
    return;
  // One kernel per dtype, named by the language's dtype names.
  const std::string t = dtypeName(base.dtype);
  const void *bp = base.raw(), *sp = src.raw(), *lp = plan.lists, *op = plan.order;
  void *dp = out.raw();
  long long tt = total, nn = n, kk = plan.k, in = inner;
  const int64_t chunks = reassociate ? cudaScatterChunks(total, plan.maxList, ctx.numSMs()) : 1;
  if (chunks < 2) {
    void *args[] = {&bp, &lp, &op, &sp, &dp, &tt, &nn, &kk, &in};
    ctx.launchRaw(fn(ctx, "dt_scatter_add_" + t), gridFor(ctx, total), 256, args, s);
    return;
  }
  // The chunks' accumulators, Op::A: 8 bytes for f64 and i64, bool's 1, else 4
  // (f32, i32, and bf16/f16 in f32).
  const int64_t accBytes = base.dtype == DType::F64 || base.dtype == DType::I64 ? 8
                           : base.dtype == DType::Bool                          ? 1
                                                                                : 4;
  void *part = ctx.alloc(chunks * total * accBytes, s);
  long long cc = chunks;
  void *chunkArgs[] = {&lp, &op, &sp, &part, &tt, &nn, &kk, &in, &cc};
  ctx.launchRaw(fn(ctx, "dt_scatter_chunks_" + t), gridFor(ctx, total * chunks), 256, chunkArgs, s);
  void *foldArgs[] = {&bp, &part, &dp, &tt, &cc};
  ctx.launchRaw(fn(ctx, "dt_scatter_fold_" + t), gridFor(ctx, total), 256, foldArgs, s);
  ctx.free(part); // stream ordered: reused after the launches
}

} // namespace dt
