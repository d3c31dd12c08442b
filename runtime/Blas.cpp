// This file implements runtime/Blas.h: shape resolution for numpy matmul with
// broadcast batch dims, one cblas call per batch element (or one call for the
// whole batch when the right operand is shared and the left is contiguous),
// and the integer product of IntGemm.h.
#include "runtime/Blas.h"
#include "runtime/BlasDeterministic.h"
#include "runtime/IntGemm.h"
#include "runtime/RefKernels.h"

#include "support/Diagnostics.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace dt {

namespace {

std::string shapeText(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// Everything gemm needs about one call: matrix sizes, the broadcast batch
/// shape and per-operand batch strides (elements; 0 = broadcast).
struct Plan {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> batch, strideA, strideB, out;
};

Plan plan(const std::vector<int64_t> &a, const std::vector<int64_t> &b, bool ta, bool tb) {
  if (a.empty() || b.empty())
    throw InternalError("gemm: rank-0 operand");
  Plan p;
  std::vector<int64_t> ab, bb;
  int64_t k2;
  if (a.size() == 1) {
    p.m = 1, p.k = a[0];
  } else {
    ab.assign(a.begin(), a.end() - 2);
    p.m = ta ? a.back() : a[a.size() - 2];
    p.k = ta ? a[a.size() - 2] : a.back();
  }
  if (b.size() == 1) {
    k2 = b[0], p.n = 1;
  } else {
    bb.assign(b.begin(), b.end() - 2);
    k2 = tb ? b.back() : b[b.size() - 2];
    p.n = tb ? b[b.size() - 2] : b.back();
  }
  if (k2 != p.k)
    throw InternalError("gemm: " + shapeText(a) + " @ " + shapeText(b) +
                        ": contraction sizes differ");
  size_t r = std::max(ab.size(), bb.size());
  p.batch.assign(r, 1);
  for (const auto *s : {&ab, &bb})
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t &o = p.batch[r - s->size() + i], d = (*s)[i];
      if (d != o && d != 1 && o != 1)
        throw InternalError("gemm: batch dims of " + shapeText(a) + " and " + shapeText(b) +
                            " do not broadcast");
      if (d != 1)
        o = d;
    }
  auto strides = [&](const std::vector<int64_t> &s, int64_t mat) {
    std::vector<int64_t> st(r, 0);
    int64_t acc = mat;
    for (size_t i = s.size(); i-- > 0;) {
      st[r - s.size() + i] = s[i] == 1 ? 0 : acc;
      acc *= s[i];
    }
    return st;
  };
  p.strideA = strides(ab, p.m * p.k);
  p.strideB = strides(bb, p.k * p.n);
  p.out = p.batch;
  if (a.size() > 1)
    p.out.push_back(p.m);
  if (b.size() > 1)
    p.out.push_back(p.n);
  return p;
}

/// Sets OpenBLAS's process-wide thread count to `n` (see Blas.h for why).
void blasThreads(int n) {
  n = std::max(1, n);
  if (openblas_get_num_threads() != n)
    openblas_set_num_threads(n);
}

void matrix(DType t, const void *A, const void *B, void *C, int64_t m, int64_t k, int64_t n,
            bool ta, bool tb, bool det, int threads = 1) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::memset(C, 0, (size_t)(dtypeSize(t) * m * n));
    return;
  }
  if (det && (t == DType::F32 || t == DType::F64))
    return deterministicMatrix(t == DType::F64, A, B, C, m, k, n, ta, tb, threads);
  auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n), ldc = (int)n;
  switch (t) {
  case DType::F32:
    cblas_sgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0f, (const float *)A, lda,
                (const float *)B, ldb, 0.0f, (float *)C, ldc);
    break;
  case DType::F64:
    cblas_dgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0, (const double *)A, lda,
                (const double *)B, ldb, 0.0, (double *)C, ldc);
    break;
  case DType::I32:
    intGemm((const int32_t *)A, (const int32_t *)B, (int32_t *)C, m, k, n, ta, tb, threads);
    break;
  default:
    intGemm((const int64_t *)A, (const int64_t *)B, (int64_t *)C, m, k, n, ta, tb, threads);
    break;
  }
}

HostTensor boolAsI64(const HostTensor &x) {
  HostTensor r(DType::I64, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    r.data<int64_t>()[i] = x.data<uint8_t>()[i] != 0;
  return r;
}

} // namespace

std::vector<int64_t> gemmShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                               bool transA, bool transB) {
  return plan(a, b, transA, transB).out;
}

void gemm(const HostTensor &a0, const HostTensor &b0, HostTensor &c, bool transA, bool transB,
          int threads, bool det) {
  if (a0.dtype != b0.dtype)
    throw InternalError(std::string("gemm: operand dtypes differ (") + dtypeName(a0.dtype) +
                        " and " + dtypeName(b0.dtype) + ")");
  if (a0.dtype == DType::Bool)
    return gemm(boolAsI64(a0), boolAsI64(b0), c, transA, transB, threads, det);
  if (isLowPrecision(a0.dtype)) {
    // bf16/f16: widen both operands to f32 (exact), one sgemm accumulating in
    // f32, and round the product once to the operands' dtype.
    HostTensor c32;
    gemm(ref::cast(a0, DType::F32), ref::cast(b0, DType::F32), c32, transA, transB, threads, det);
    c = ref::cast(c32, a0.dtype);
    return;
  }
  bool ta = transA && a0.rank() > 1, tb = transB && b0.rank() > 1;
  Plan p = plan(a0.shape, b0.shape, ta, tb);
  if (c.dtype != a0.dtype || c.shape != p.out || !c.buf) {
    // Every path (BLAS with beta 0, the integer product, k == 0) writes all
    // of C: no zeroing.
    c = HostTensor{};
    c.dtype = a0.dtype;
    c.shape = p.out;
    c.buf = std::make_shared<Buffer>((size_t)c.bytes(), false);
  }
  if (isFloat(a0.dtype))
    blasThreads(threads);
  int64_t es = dtypeSize(a0.dtype), mn = p.m * p.n;
  const char *A = (const char *)a0.raw(), *B = (const char *)b0.raw();
  char *C = (char *)c.raw();
  int64_t nb = 1;
  bool bShared = true, aFull = !ta;
  for (size_t d = 0; d < p.batch.size(); ++d) {
    nb *= p.batch[d];
    bShared &= p.strideB[d] == 0 || p.batch[d] == 1;
    aFull &= p.strideA[d] != 0 || p.batch[d] == 1;
  }
  if (nb == 0)
    return;
  // One right matrix for every batch element and a contiguous left operand:
  // the batch folds into M, a single (nb*m) x k x n call.
  if (bShared && aFull && nb > 1)
    return matrix(a0.dtype, A, B, C, nb * p.m, p.k, p.n, false, tb, det, threads);
  std::vector<int64_t> idx(p.batch.size(), 0);
  for (int64_t blk = 0; blk < nb; ++blk) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      oa += idx[d] * p.strideA[d], ob += idx[d] * p.strideB[d];
    matrix(a0.dtype, A + oa * es, B + ob * es, C + blk * mn * es, p.m, p.k, p.n, ta, tb, det,
           threads);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < p.batch[d])
        break;
      idx[d] = 0;
    }
  }
}

} // namespace dt
