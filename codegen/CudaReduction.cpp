// The reduction kernels of emitCudaKernel (CudaEmitter.h: a warp or a block
// per output with 4-wide loads along a reduced last dim, the column path for
// sums over rows, split reductions and their fold) and the launch geometry
// the runtime gives them. Deterministic mode's are CudaDeterministic.cpp.
#include "codegen/CudaEmitterImpl.h"

#include <algorithm>
#include <cmath>

namespace dt {

namespace cudaemit {

void Emitter::emitReductionStores(const char *ind) {
  for (size_t s = 0; s < k.stores.size(); ++s) {
    int o = k.stores[s].output;
    DType t = k.outputs[o];
    // A bf16/f16 sum's f64 accumulator rounds once (odd to f32, then RNE).
    std::string acc = "acc" + std::to_string(s);
    std::string val = !isLowPrecision(t) ? "(" + std::string(cType(t)) + ")" + acc
                      : accType(k.reduce, t) == std::string("double")
                          ? storeVal(t, "dt_f64_to_f32_odd(" + acc + ")")
                          : storeVal(t, acc);
    os << ind << ptr(NB - O + o, t, false) << "[" << offset(false, o) << "] = " << val << ";\n";
  }
}

/// At the point idx: each used input's value, then emitAccumulate.
void Emitter::emitPointAccumulate(const std::string &ind) {
  std::vector<std::string> xs(I);
  for (int i = 0; i < I; ++i)
    if (usedInput[i]) {
      os << ind << "const " << cType(k.inputs[i]) << " s" << i << " = "
         << loadAt(i, offset(true, i)) << ";\n";
      xs[i] = "s" + std::to_string(i);
    }
  emitAccumulate(ind, xs);
}

/// The body on the inputs' values `xs`, and every store's value combined
/// into its accumulator (acc<s> = comb<s>(acc<s>, y<s>)).
void Emitter::emitAccumulate(const std::string &ind, const std::vector<std::string> &xs) {
  const size_t S = k.stores.size();
  std::vector<std::string> ys(S);
  for (size_t s = 0; s < S; ++s) {
    os << ind << cType(k.outputs[k.stores[s].output]) << " y" << s << ";\n";
    ys[s] = "y" + std::to_string(s);
  }
  os << ind << bodyCall(xs, ys) << ";\n";
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << ind << "acc" << s << " = comb" << s << "(acc" << s << ", (" << accType(k.reduce, t)
       << ")y" << s << ");\n";
  }
}

void Emitter::emitReduction(const std::string &sym) {
  const size_t S = k.stores.size();
  std::vector<int> kept, red = k.reduceDims;
  for (int d = 0; d < R; ++d)
    if (!isReducedDim(k, d))
      kept.push_back(d);
  const KReduce rop = k.reduce;
  // acc = combine(acc, x) in the accumulator type, as a device lambda source.
  auto combine = [&](DType t) -> std::string {
    std::string A = accType(rop, t);
    if (isFloat(t))
      return rop == KReduce::Sum   ? "(p + q)"
             : rop == KReduce::Max ? "dt_fmax(p, q)"
                                   : "dt_fmin(p, q)";
    if (rop == KReduce::Sum)
      return t == DType::I32 ? "dt_wrap32((unsigned)p + (unsigned)q)"
                             : "dt_wrap64((dt_u64)p + (dt_u64)q)";
    return rop == KReduce::Max ? "(p < q ? q : p)" : "(q < p ? q : p)";
  };
  auto identity = [&](DType t) -> std::string {
    if (rop == KReduce::Sum)
      return std::string("(") + accType(rop, t) + ")0";
    bool mx = rop == KReduce::Max;
    if (isFloat(t))
      return hexFloat(mx ? -INFINITY : INFINITY, t != DType::F64);
    if (t == DType::I32)
      return mx ? "(-2147483647 - 1)" : "2147483647";
    return mx ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  };
  if (k.deterministic) {
    emitDeterministicReduction(sym, kept, red, combine, identity);
    return;
  }
  const int W = cudaArgWords(k);
  // The vector path: the last dim is reduced (the innermost of the reduced
  // ones) and every used input is contiguous along it (stride 1) or constant
  // along it (stride 0), with an extent a multiple of 4: each thread reads 4
  // consecutive points of one row per step (dt_ld4), chunks and steps
  // multiples of 4, so no step crosses a row.
  const bool vector = R >= 1 && !red.empty() && red.back() == R - 1;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << sym
     << "(const dt_args a) {\n"
     << "  const dt_i64 kept = " << product(kept) << ";\n"
     << "  const dt_i64 red = " << product(red) << ";\n"
     << "  if (kept <= 0)\n    return;\n"
     << "  // Split reductions (few outputs, long reductions: cudaReduceSplit): with\n"
     << "  // split > 1, block b reduces chunk b % split of output b / split into the\n"
     << "  // scratch accumulators; a second launch with -split folds each output's\n"
     << "  // chunks in order and stores. 0 or 1: one pass.\n"
     << "  const dt_i64 split = (dt_i64)" << word(W - 2) << ";\n"
     << "  char *const scratch = (char *)" << word(W - 1) << ";\n"
     << "  dt_i64 idx[" << std::max(R, 1) << "] = {0};\n";
  emitNarrow();
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "  __shared__ " << accType(rop, t) << " sh" << s << "[32];\n"
       << "  auto comb" << s << " = [](" << accType(rop, t) << " p, " << accType(rop, t)
       << " q) { return (" << accType(rop, t) << ")" << combine(t) << "; };\n"
       << "  " << accType(rop, t) << " *const part" << s << " = (" << accType(rop, t)
       << " *)(scratch + " << s << "LL * 8 * kept * (split < 0 ? -split : split));\n";
  }
  auto store = [&](const char *ind) { emitReductionStores(ind); };
  // The second pass: a warp per output; lane l folds its run of consecutive
  // chunks in order, then the warp pairs neighbouring runs
  // (dt_warp_reduce_ordered): a fixed order, ties resolved as a left fold.
  os << "  if (split < 0) {\n"
     << "    const int lane = threadIdx.x & 31;\n"
     << "    const dt_i64 per = (-split + 31) / 32;\n"
     << "    for (dt_i64 o = ((dt_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; o < kept;\n"
     << "         o += ((dt_i64)gridDim.x * blockDim.x) >> 5) {\n";
  emitUnravel(kept, "o", "      ");
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "      " << accType(rop, t) << " acc" << s << " = " << identity(t) << ";\n"
       << "      for (dt_i64 c = lane * per; c < (lane + 1) * per && c < -split; ++c)\n"
       << "        acc" << s << " = comb" << s << "(acc" << s << ", part" << s
       << "[o * -split + c]);\n"
       << "      acc" << s << " = dt_warp_reduce_ordered(acc" << s << ", comb" << s << ");\n";
  }
  os << "      if (lane == 0) {\n";
  store("        ");
  os << "      }\n    }\n    return;\n  }\n";
  if (R >= 1 && !isReducedDim(k, R - 1))
    emitColumnReduction(kept, red, identity);
  os << "  const dt_i64 nsplit = split > 1 ? split : 1;\n"
     << "  // One block per output for long reductions, else one warp per output.\n"
     << "  const bool perBlock = nsplit > 1 || red >= " << kCudaBlockReduceMin << "LL;\n"
     << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
     << "  const int nwarps = blockDim.x >> 5;\n"
     << "  const dt_i64 first = perBlock ? (dt_i64)blockIdx.x / nsplit\n"
     << "                                : (dt_i64)blockIdx.x * nwarps + warp;\n"
     << "  const dt_i64 step = perBlock ? (dt_i64)gridDim.x / nsplit : (dt_i64)gridDim.x * "
        "nwarps;\n"
     << "  const dt_i64 tfirst = perBlock ? (dt_i64)threadIdx.x : (dt_i64)lane;\n"
     << "  const dt_i64 tstep = perBlock ? (dt_i64)blockDim.x : (dt_i64)32;\n"
     << "  const dt_i64 chunk = (red + nsplit - 1) / nsplit" << (vector ? " + 3 & ~3LL" : "")
     << ";\n"
     << "  const dt_i64 rbegin = nsplit > 1 ? (dt_i64)blockIdx.x % nsplit * chunk : 0;\n"
     << "  const dt_i64 rend = nsplit > 1 && rbegin + chunk < red ? rbegin + chunk : red;\n";
  if (vector) {
    std::string cond = "(" + shape(R - 1) + " % " + std::to_string(kCudaVector) + " == 0)";
    for (int i = 0; i < I; ++i)
      if (usedInput[i])
        cond += " && (" + inStride(i, R - 1) + " == 0 || " + inStride(i, R - 1) + " == 1)";
    os << "  const bool vec = " << cond << ";\n";
  }
  os << "  for (dt_i64 o = first; o < kept; o += step) {\n";
  emitUnravel(kept, "o", "    ");
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "    " << accType(rop, t) << " acc" << s << " = " << identity(t) << ";\n";
  }
  if (vector) {
    os << "    if (vec) {\n"
       << "      for (dt_i64 r = rbegin + tfirst * " << kCudaVector << "; r < rend; r += tstep * "
       << kCudaVector << ") {\n";
    emitUnravel(red, "r", "        ");
    std::vector<std::string> vx(I);
    for (int i = 0; i < I; ++i)
      if (usedInput[i]) {
        std::string n = std::to_string(i);
        os << "        " << memType(k.inputs[i]) << " m" << i << "[4];\n"
           << "        dt_ld4(" << ptr(i, k.inputs[i], true) << " + " << offset(true, i) << ", "
           << inStride(i, R - 1) << " == 0, m" << i << ");\n";
        vx[i] = widenMem(k.inputs[i], "m" + n + "[j]");
      }
    os << "#pragma unroll\n        for (int j = 0; j < 4; ++j) {\n"
       << "          idx[" << R - 1 << "] += j > 0;\n";
    emitAccumulate("          ", vx);
    os << "        }\n      }\n    } else\n";
  }
  os << "    for (dt_i64 r = rbegin + tfirst; r < rend; r += tstep) {\n";
  emitUnravel(red, "r", "      ");
  emitPointAccumulate("      ");
  os << "    }\n";
  for (size_t s = 0; s < S; ++s)
    os << "    acc" << s << " = dt_warp_reduce(acc" << s << ", comb" << s << ");\n";
  os << "    if (perBlock) {\n      if (lane == 0) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "        sh" << s << "[warp] = acc" << s << ";\n";
  os << "      }\n      __syncthreads();\n      if (threadIdx.x == 0) {\n"
     << "        for (int w = 1; w < nwarps; ++w) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "          acc" << s << " = comb" << s << "(acc" << s << ", sh" << s << "[w]);\n";
  os << "        }\n        if (nsplit > 1) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "          part" << s << "[o * nsplit + (dt_i64)blockIdx.x % nsplit] = acc" << s << ";\n";
  os << "        } else {\n";
  store("          ");
  os << "        }\n      }\n      __syncthreads();\n    } else if (lane == 0) {\n";
  store("      ");
  os << "    }\n  }\n}\n";
}

template <class Identity>
void Emitter::emitColumnReduction(const std::vector<int> &kept, const std::vector<int> &red,
                                  Identity &&identity) {
  const size_t S = k.stores.size();
  os << "  // Columns (the last dim kept, at least " << kCudaColumnMin
     << " wide: cudaColumnReduction):\n"
     << "  // a thread per output, consecutive outputs in consecutive threads, so a\n"
     << "  // warp reads 32 neighbours of one row; block b takes tile b / split\n"
     << "  // of 256 outputs and chunk b % split of the reduced points.\n"
     << "  if (" << shape(R - 1) << " >= " << kCudaColumnMin << ") {\n"
     << "    const dt_i64 nsplit = split > 1 ? split : 1;\n"
     << "    const dt_i64 chunk = (red + nsplit - 1) / nsplit;\n"
     << "    const dt_i64 rbegin = (dt_i64)blockIdx.x % nsplit * chunk;\n"
     << "    const dt_i64 rend = rbegin + chunk < red ? rbegin + chunk : red;\n"
     << "    for (dt_i64 t = (dt_i64)blockIdx.x / nsplit; t * blockDim.x < kept;\n"
     << "         t += (dt_i64)gridDim.x / nsplit) {\n"
     << "      const dt_i64 o = t * blockDim.x + threadIdx.x;\n"
     << "      if (o >= kept)\n        continue;\n";
  emitUnravel(kept, "o", "      ");
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "      " << accType(k.reduce, t) << " acc" << s << " = " << identity(t) << ";\n";
  }
  os << "#pragma unroll 4\n      for (dt_i64 r = rbegin; r < rend; ++r) {\n";
  emitUnravel(red, "r", "        ");
  emitPointAccumulate("        ");
  os << "      }\n      if (nsplit > 1) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "        part" << s << "[o * nsplit + (dt_i64)blockIdx.x % nsplit] = acc" << s << ";\n";
  os << "      } else {\n";
  emitReductionStores("        ");
  os << "      }\n    }\n    return;\n  }\n";
}

int64_t keptPoints(const Kernel &k, const int64_t *params) {
  int64_t kept = 1;
  for (int i = 0; i < k.rank; ++i)
    if (!isReducedDim(k, i))
      kept *= params[i];
  return kept;
}

} // namespace cudaemit

bool cudaColumnReduction(const Kernel &k, const int64_t *params) {
  return k.reduce != KReduce::None && !k.deterministic && k.rank >= 1 &&
         !isReducedDim(k, k.rank - 1) && params[k.rank - 1] >= kCudaColumnMin;
}

int64_t cudaReduceSplit(const Kernel &k, const int64_t *params, int numSMs, int residentBlocks) {
  if (!cudaSplitsReduction(k))
    return 1;
  int64_t kept = 1, red = 1;
  for (int i = 0; i < k.rank; ++i)
    (isReducedDim(k, i) ? red : kept) *= params[i];
  if (k.deterministic)
    return cudaemit::deterministicSplit(k, params, numSMs);
  if (kept <= 0)
    return 1;
  const int64_t sms = std::max(numSMs, 1);
  if (cudaColumnReduction(k, params)) { // tiles of 256 outputs, chunks of >= 64 rows
    // 8 blocks of 256 threads on each multiprocessor, whatever the
    // occupancy: a column thread is one dependent chain, and blocks beyond
    // one wave hid its latency (H200, sums over the rows of f32[16384,
    // 4096]: 101 us with 8 an SM, 127-131 us sized to the occupancy).
    const int64_t target = sms * kCudaMaxResidentBlocks;
    const int64_t tiles = (kept + kCudaBlock - 1) / kCudaBlock;
    if (tiles >= target || red < 128)
      return 1;
    int64_t split = std::min((target + tiles - 1) / tiles, red / 64);
    return split >= 2 ? split : 1;
  }
  // A block or warp per output: one wave of the blocks the kernel's
  // registers let a multiprocessor hold, up to 8 of 256 threads (a whole
  // SM's threads, the loads in flight a memory-bound sum needs). (H200, the
  // full sum of scale[ids] * tokens * up at 46 registers a thread: 1056
  // blocks where 660 fit, 1.6 waves, 165 us; 660 blocks, 153 us.)
  const int64_t wave = sms * std::clamp(residentBlocks, 1, kCudaMaxResidentBlocks);
  if (kept >= wave || red < kCudaSplitReduceMin)
    return 1;
  int64_t split = std::min((wave + kept - 1) / kept, red / (kCudaSplitReduceMin / 8));
  return split >= 2 ? split : 1;
}

int64_t cudaSplitBlocks(const Kernel &k, const int64_t *params, int64_t split) {
  const int64_t kept = cudaemit::keptPoints(k, params);
  if (k.deterministic)
    return cudaemit::deterministicBlocks(k, params, split);
  return (cudaColumnReduction(k, params) ? (kept + kCudaBlock - 1) / kCudaBlock : kept) * split;
}

int64_t cudaFoldBlocks(const Kernel &k, const int64_t *params, int numSMs) {
  const int64_t warps = kCudaBlock / 32;
  return std::clamp<int64_t>((cudaemit::keptPoints(k, params) + warps - 1) / warps, 1,
                             (int64_t)std::max(numSMs, 1) * 32);
}

int64_t cudaSplitScratchBytes(const Kernel &k, const int64_t *params, int64_t split) {
  return (int64_t)k.stores.size() * 8 * cudaemit::keptPoints(k, params) * split;
}

} // namespace dt
