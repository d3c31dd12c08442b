// This file implements CudaContext::gemm: row-major (batched) GEMMs on
// cuBLAS. Two paths, chosen by CudaOptions::cublasLt (env
// DTENSOR_CUDA_GEMM=lt|ex, default ex):
//  - `ex`: cublasGemmEx / cublasGemmStridedBatchedEx with CUBLAS_GEMM_DEFAULT
//    (the path every GPU test has run);
//  - `lt`: cublasLtMatmul with the heuristic's first algorithm for the
//    shape, flags, leading dims, batch, dtype and pointer alignments, planned
//    once per such key and kept (CudaLtCache), with a 32 MiB workspace per
//    stream. A shape the heuristic finds nothing for, and a batch with a
//    broadcast (stride 0) operand, take the `ex` path.
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: both paths
// swap the operands and pass n, m; the transposition flags keep their meaning.
#include "runtime/CudaRuntime.h"

#include "codegen/CudaApi.h"
#include "support/Diagnostics.h"

#include <climits>
#include <cstdlib>
#include <cstring>

namespace dt {

bool cudaGemmLtFromEnv() {
  const char *e = std::getenv("DTENSOR_CUDA_GEMM");
  return e && std::strcmp(e, "lt") == 0;
}

#ifdef DT_HAVE_CUDA_HEADERS

namespace {

/// The largest power of two, up to 256, that divides the address (cublasLt
/// assumes 256-byte aligned operands unless told otherwise).
uint32_t alignmentOf(const void *p) {
  const uintptr_t a = (uintptr_t)p;
  uint32_t al = 1;
  while (al < 256 && a % (2 * al) == 0)
    al *= 2;
  return al;
}

} // namespace

/// cublasLt state of one context: a handle, the planned shapes and a
/// workspace per stream.
struct CudaLtCache {
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t x = nullptr, y = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false; ///< the heuristic found an algorithm
  };
  static constexpr size_t kWorkspace = 32u << 20;

  CudaContext &ctx;
  const CudaCublasLtApi &lt;
  cublasLtHandle_t h = nullptr;
  std::mutex mu;
  std::map<std::string, Plan> plans;
  std::map<CudaStream, void *> workspace; ///< freed with the context's memory

  CudaLtCache(CudaContext &c, const CudaCublasLtApi &api) : ctx(c), lt(api) {
    if (cublasStatus_t st = lt.cublasLtCreate(&h); st != CUBLAS_STATUS_SUCCESS)
      throw RuntimeFault("cuda: cublasLtCreate failed (status " + std::to_string((int)st) + ")");
  }
  ~CudaLtCache() {
    for (auto &[key, p] : plans) {
      lt.cublasLtMatrixLayoutDestroy(p.x);
      lt.cublasLtMatrixLayoutDestroy(p.y);
      lt.cublasLtMatrixLayoutDestroy(p.c);
      lt.cublasLtMatmulDescDestroy(p.desc);
    }
    lt.cublasLtDestroy(h);
  }

  void *workspaceFor(CudaStream s) {
    auto it = workspace.find(s);
    if (it != workspace.end())
      return it->second;
    void *w = ctx.alloc((int64_t)kWorkspace, s);
    workspace[s] = w;
    return w;
  }
};

/// C = op(A) op(B) through cublasLt; false when this key has no algorithm
/// (the caller then runs cublasGemmEx).
static bool gemmLt(CudaLtCache &L, const GemmDesc &g, CudaStream s, cudaDataType t,
                   cublasComputeType_t compute, cudaDataType scale, const void *alpha,
                   const void *beta, int64_t lda, int64_t ldb, int64_t ldc) {
  const cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t alA = alignmentOf(g.a), alB = alignmentOf(g.b), alC = alignmentOf(g.c);
  std::string key;
  for (int64_t v : {(int64_t)g.type, (int64_t)g.transA, (int64_t)g.transB, g.m, g.n, g.k, lda, ldb,
                    ldc, g.batch, g.strideA, g.strideB, g.strideC, (int64_t)compute, (int64_t)alA,
                    (int64_t)alB, (int64_t)alC})
    key += std::to_string(v) + ",";
  std::lock_guard<std::mutex> lock(L.mu);
  auto it = L.plans.find(key);
  if (it == L.plans.end()) {
    CudaLtCache::Plan p;
    const CudaCublasLtApi &lt = L.lt;
    // Lt's X = our B (n x k after its op), Y = our A (k x m), C = n x m, all
    // column-major views of the row-major buffers as they lie.
    lt.cublasLtMatmulDescCreate(&p.desc, compute, scale);
    lt.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof opB);
    lt.cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof opA);
    lt.cublasLtMatrixLayoutCreate(&p.x, t, g.transB ? g.k : g.n, g.transB ? g.n : g.k, ldb);
    lt.cublasLtMatrixLayoutCreate(&p.y, t, g.transA ? g.m : g.k, g.transA ? g.k : g.m, lda);
    lt.cublasLtMatrixLayoutCreate(&p.c, t, g.n, g.m, ldc);
    if (g.batch > 1) {
      const int32_t count = (int32_t)g.batch;
      const int64_t strides[3] = {g.strideB, g.strideA, g.strideC};
      cublasLtMatrixLayout_t layouts[3] = {p.x, p.y, p.c};
      for (int i = 0; i < 3; ++i) {
        lt.cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof count);
        lt.cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                            &strides[i], sizeof(int64_t));
      }
    }
    cublasLtMatmulPreference_t pref = nullptr;
    lt.cublasLtMatmulPreferenceCreate(&pref);
    const size_t ws = CudaLtCache::kWorkspace;
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws);
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alB,
                                            sizeof alB);
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alA,
                                            sizeof alA);
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alC,
                                            sizeof alC);
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alC,
                                            sizeof alC);
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    p.ok = lt.cublasLtMatmulAlgoGetHeuristic(L.h, p.desc, p.x, p.y, p.c, p.c, pref, 1, &res,
                                             &found) == CUBLAS_STATUS_SUCCESS &&
           found > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    p.algo = res.algo;
    lt.cublasLtMatmulPreferenceDestroy(pref);
    it = L.plans.emplace(key, p).first;
  }
  const CudaLtCache::Plan &p = it->second;
  if (!p.ok)
    return false;
  cublasStatus_t st =
      L.lt.cublasLtMatmul(L.h, p.desc, alpha, g.b, p.x, g.a, p.y, beta, g.c, p.c, g.c, p.c, &p.algo,
                          L.workspaceFor(s), CudaLtCache::kWorkspace, static_cast<cudaStream_t>(s));
  if (st != CUBLAS_STATUS_SUCCESS)
    throw RuntimeFault(std::string("cuda: cublasLtMatmul failed: ") +
                       L.ctx.libs().cublas().cublasGetStatusString(st));
  return true;
}

void CudaContext::gemm(const GemmDesc &g, CudaStream s) {
  if (g.m == 0 || g.n == 0 || g.batch == 0)
    return;
  const int64_t lda = g.lda ? g.lda : (g.transA ? g.m : g.k);
  const int64_t ldb = g.ldb ? g.ldb : (g.transB ? g.k : g.n);
  const int64_t ldc = g.ldc ? g.ldc : g.n;
  for (int64_t v : {g.m, g.n, g.k, lda, ldb, ldc, g.batch})
    if (v > INT_MAX || v < 0)
      throw RuntimeFault("cuda: GEMM dimension " + std::to_string(v) +
                         " exceeds cuBLAS's int range");
  cudaDataType t = CUDA_R_32F;
  cublasComputeType_t compute = opts_.allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cudaDataType scale = CUDA_R_32F;
  float af = (float)g.alpha, bf = (float)g.beta;
  double ad = g.alpha, bd = g.beta;
  const void *alpha = &af, *beta = &bf;
  switch (g.type) {
  case GemmType::F32:
    break;
  case GemmType::F64:
    t = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
    scale = CUDA_R_64F;
    alpha = &ad;
    beta = &bd;
    break;
  case GemmType::F16:
    t = CUDA_R_16F;
    compute = CUBLAS_COMPUTE_32F;
    break;
  case GemmType::BF16:
    t = CUDA_R_16BF;
    compute = CUBLAS_COMPUTE_32F;
    break;
  }
  // cublasLt (CudaOptions::cublasLt), unless a batch broadcasts an operand.
  if (opts_.cublasLt && (g.batch == 1 || (g.strideA != 0 && g.strideB != 0))) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!lt_)
        lt_ = std::make_shared<CudaLtCache>(*this, libs_.cublasLt());
    }
    if (gemmLt(*lt_, g, s, t, compute, scale, alpha, beta, lda, ldb, ldc))
      return;
  }
  const CudaCublasApi &b = libs_.cublas();
  cublasHandle_t h = static_cast<cublasHandle_t>(cublasHandle(s));
  const cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st;
  if (g.batch == 1)
    st = b.cublasGemmEx(h, opB, opA, (int)g.n, (int)g.m, (int)g.k, alpha, g.b, t, (int)ldb, g.a, t,
                        (int)lda, beta, g.c, t, (int)ldc, compute, CUBLAS_GEMM_DEFAULT);
  else
    st = b.cublasGemmStridedBatchedEx(h, opB, opA, (int)g.n, (int)g.m, (int)g.k, alpha, g.b, t,
                                      (int)ldb, g.strideB, g.a, t, (int)lda, g.strideA, beta, g.c,
                                      t, (int)ldc, g.strideC, (int)g.batch, compute,
                                      CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw RuntimeFault(std::string("cuda: cublasGemmEx failed: ") + b.cublasGetStatusString(st));
}

#else // !DT_HAVE_CUDA_HEADERS

void CudaContext::gemm(const GemmDesc &, CudaStream) {}

#endif

} // namespace dt
