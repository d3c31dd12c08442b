// This file implements the CUDA lowering of a kernel with a scatter-add store
// (KernelIR.h: `index_add` fused into the kernel that makes its rows) and its
// launch geometry. See CudaEmitter.h for the protocol.
//
// A thread owns one element (r, j) of the scatter output's rows (j runs over
// the dims after the scattered dim 0, consecutive j in consecutive threads,
// so a warp reads 32 neighbours of each source row) and one chunk of row
// r's list of source rows (the ids sorted on the host: cudaScatterLists).
// For each source row t of its chunk, in list order, it evaluates the
// kernel's DAG at point (t, j), stores the plain outputs there (every point
// is some thread's exactly once: the lists partition the rows) and adds the
// scatter's value into a register. One chunk (deterministic mode, or rows
// long enough to fill the device) adds onto the output's element, which
// holds index_add's base: base + x_t1 + x_t2 + ... in ascending t, the
// reference's order. Several chunks write their sums to scratch (chunk c of
// element i at part[c * total + i]); the fold launch then adds them onto the
// output in chunk order, as the unfused split scatter does.
#include "codegen/CudaEmitterImpl.h"

#include <algorithm>

namespace dt {

namespace cudaemit {

/// Source rows a thread reads before it stores any.
constexpr int kScatterGroup = 4;

void Emitter::emitScatter(const std::string &sym) {
  const KStore &sc = *scatterStore(k);
  if (sc.dim != 0 || R < 1)
    throw InternalError("emitCudaKernel: a scatter store runs along dim 0");
  const int so = sc.output;
  const std::string T = cType(k.outputs[so]);
  const int W = cudaArgWords(k);
  std::vector<int> innerDims;
  for (int d = 1; d < R; ++d)
    innerDims.push_back(d);
  auto w = [&](int back) { return word(W - back); };
  os << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << sym
     << "(const dt_args a) {\n"
     << "  const dt_i64 *rowStart = reinterpret_cast<const dt_i64 *>(" << w(5) << ");\n"
     << "  const dt_i64 *order = reinterpret_cast<const dt_i64 *>(" << w(4) << ");\n"
     << "  const dt_i64 rows = (dt_i64)" << w(3) << ";\n"
     << "  const dt_i64 split = (dt_i64)" << w(2) << ";\n"
     << "  " << T << " *part = reinterpret_cast<" << T << " *>(" << w(1) << ");\n"
     << "  " << memType(k.outputs[so]) << " *out = " << ptr(NB - O + so, k.outputs[so], false)
     << ";\n"
     << "  const dt_i64 inner = " << product(innerDims) << ";\n"
     << "  const dt_i64 total = rows * inner;\n"
     << "  if (total <= 0)\n    return;\n"
     << "  const dt_u64 tid = (dt_u64)blockIdx.x * blockDim.x + threadIdx.x;\n"
     << "  const dt_u64 nth = (dt_u64)gridDim.x * blockDim.x;\n";
  if (!innerDims.empty()) // a row's point (the entries' ix arrays copy it)
    os << "  dt_i64 idx[" << R << "] = {0};\n";
  emitNarrow();
  // The scatter output's element (r, idx[1..]).
  std::string soff = "r * " + outStride(so, 0);
  for (int d : innerDims)
    soff += " + idx[" + std::to_string(d) + "] * " + outStride(so, d);
  // The fold: each element adds its chunks' sums in chunk order.
  os << "  if (split < 0) {\n"
     << "    for (dt_u64 i = tid; i < (dt_u64)total; i += nth) {\n"
     << "      const dt_i64 r = (dt_i64)(i / (dt_u64)inner);\n";
  emitUnravel(innerDims, "i % (dt_u64)inner", "      ");
  os << "      " << T << " acc = out[" << soff << "];\n"
     << "      for (dt_i64 c = 0; c < -split; ++c)\n"
     << "        acc = acc + part[c * total + (dt_i64)i];\n"
     << "      out[" << soff << "] = acc;\n"
     << "    }\n    return;\n  }\n";
  // The chunks.
  os << "  for (dt_u64 q = tid; q < (dt_u64)total * (dt_u64)split; q += nth) {\n"
     << "    const dt_i64 i = (dt_i64)(q % (dt_u64)total), c = (dt_i64)(q / (dt_u64)total);\n"
     << "    const dt_i64 r = i / inner;\n";
  emitUnravel(innerDims, "i % inner", "    ");
  os << "    const dt_i64 first = rowStart[r], len = rowStart[r + 1] - first;\n"
     << "    const dt_i64 per = (len + split - 1) / split;\n"
     << "    const dt_i64 p = first + c * per < first + len ? first + c * per : first + len;\n"
     << "    const dt_i64 end = p + per < first + len ? p + per : first + len;\n"
     << "    " << T << " acc = split == 1 ? out[" << soff << "] : (" << T << ")0;\n"
     << "    dt_i64 e = p;\n";
  // Entries in groups of kScatterGroup: every load of the group before its
  // first store (an output may overwrite an input in place, so a store
  // would otherwise order the next entry's loads after it), as the
  // elementwise vector path loads 4 points before storing them; then the
  // rest one by one. The adds stay in list order.
  auto entries = [&](int group, const char *ind) {
    const std::string in = ind;
    for (int u = 0; u < group; ++u) {
      const std::string ix = "ix" + std::to_string(u);
      os << in << "dt_i64 " << ix << "[" << R << "];\n"
         << in << ix << "[0] = order[e + " << u << "];\n";
      for (int d : innerDims)
        os << in << ix << "[" << d << "] = idx[" << d << "];\n";
    }
    for (int u = 0; u < group; ++u)
      for (int i = 0; i < I; ++i)
        if (usedInput[i])
          os << in << "const " << cType(k.inputs[i]) << " s" << i << "_" << u << " = "
             << loadAt(i, offset(true, i, "ix" + std::to_string(u))) << ";\n";
    for (int u = 0; u < group; ++u) {
      const std::string su = "_" + std::to_string(u), ix = "ix" + std::to_string(u);
      std::vector<std::string> xs(I), ys(k.stores.size());
      for (int i = 0; i < I; ++i)
        xs[i] = "s" + std::to_string(i) + su;
      for (size_t st = 0; st < k.stores.size(); ++st) {
        os << in << cType(k.outputs[k.stores[st].output]) << " y" << st << su << ";\n";
        ys[st] = "y" + std::to_string(st) + su;
      }
      os << in << bodyCall(xs, ys, ix) << ";\n";
      for (size_t st = 0; st < k.stores.size(); ++st) {
        int o = k.stores[st].output;
        if (o == so) {
          os << in << "acc = acc + " << ys[st] << ";\n";
          continue;
        }
        os << in << ptr(NB - O + o, k.outputs[o], false) << "[" << offset(false, o, ix)
           << "] = " << storeVal(k.outputs[o], ys[st]) << ";\n";
      }
    }
  };
  os << "    for (; e + " << kScatterGroup << " <= end; e += " << kScatterGroup << ") {\n";
  entries(kScatterGroup, "      ");
  os << "    }\n    for (; e < end; ++e) {\n";
  entries(1, "      ");
  os << "    }\n"
     << "    if (split == 1)\n      out[" << soff << "] = acc;\n"
     << "    else\n      part[q] = acc;\n"
     << "  }\n}\n";
}

} // namespace cudaemit

using namespace cudaemit;

int64_t cudaScatterInner(const Kernel &k, const int64_t *params) {
  int64_t inner = 1;
  for (int d = 1; d < k.rank; ++d)
    inner *= params[d];
  return inner;
}

int64_t cudaScatterBlocks(const Kernel &k, const int64_t *params, int64_t rows, int64_t split,
                          int numSMs) {
  const int64_t items = rows * cudaScatterInner(k, params) * std::max<int64_t>(split, 1);
  if (items <= 0)
    return 0;
  const int64_t cap = (int64_t)std::max(numSMs, 1) * 32;
  return std::clamp<int64_t>((items + kCudaBlock - 1) / kCudaBlock, 1, cap);
}

int64_t cudaScatterScratchBytes(const Kernel &k, const int64_t *params, int64_t rows,
                                int64_t split) {
  const KStore *s = scatterStore(k);
  if (!s || split <= 1)
    return 0;
  return rows * cudaScatterInner(k, params) * split * dtypeSize(k.outputs[s->output]);
}

} // namespace dt
