// Deterministic mode's reduction kernels for emitCudaKernel: every float sum
// in the fixed order of ir/DeterministicOrder.h (leaves of 64 rows of the
// outermost reduced dim, 8 chains by last-dim index when the last dim is
// summed, leaves combined in the fixed tree), max and min one sequential
// chain per output, and the launch geometry the runtime gives them.
//
// Three layouts of the threads (the bits never depend on which one runs):
//  * a sum over the last dim (deterministicChains) with short leaves (under
//    kWarpLeafPoints points: a row's 64): a lane per chain. Lane l is chain
//    l % 8 of the leaf in slot l / 8 and adds its points in order; the
//    slot's 8 lanes combine by three xor shuffles (the slot's first lane
//    adds in exactly chainTree's order; IEEE addition commutes, so the other
//    lanes' operand order does not matter), and a run of `per` leaves (a
//    power of two, aligned) pairwise by shuffles across slots;
//  * such a sum with long leaves (a full sum's 64 rows): a warp per leaf.
//    Its lanes load rounds of 32 consecutive points of a row (coalesced, 16
//    rounds in flight), staged in shared memory, where lane j < 8 adds chain
//    j's points in order; the chain tree by xor shuffles, and a block's 8
//    warps' leaves (a run, or 8/per runs) pairwise by one thread;
//  * any other sum: a thread per (output, chunk of 2^j whole leaves),
//    consecutive outputs in consecutive threads (the last dim is kept, so a
//    warp reads neighbours), each chunk's leaves pushed onto a
//    binary-counter stack of subtrees.
// In the pairwise trees a leaf past the end drops out, which is the fixed
// tree's rule for a count that is not a power of two. With split > 1 a
// run's node goes to the scratch and a second launch (split < 0) combines
// each output's nodes in the same tree.
#include "codegen/CudaEmitterImpl.h"
#include "ir/DeterministicOrder.h"

#include <algorithm>
#include <climits>

namespace dt {

namespace {

/// Leaves of one output of a deterministic sum at `params` (leaves of
/// kDeterministicBlock rows of the outermost reduced dim), 0 when the
/// reduced range is empty.
int64_t leafCount(const Kernel &k, const int64_t *params) {
  int64_t inner = 1;
  for (size_t i = 1; i < k.reduceDims.size(); ++i)
    inner *= params[k.reduceDims[i]];
  const int64_t outer = params[k.reduceDims[0]];
  if (inner == 0 || outer == 0)
    return 0;
  return (outer + kDeterministicBlock - 1) / kDeterministicBlock;
}

constexpr int64_t kWarpsPerBlock = kCudaBlock / 32;
/// Leaves a run of the chained layouts: the smallest power of two at least
/// `leaves`, at most `most` (a block's warps, or a warp's slots). The
/// emitted kernel derives the same `per` from the split word.
int64_t chainedPer(int64_t leaves, int64_t most) {
  int64_t per = 1;
  while (per < leaves && per < most)
    per <<= 1;
  return per;
}
/// The lane-per-chain layout's slots: 8 lanes (a leaf's chains) each.
constexpr int64_t kSlotsPerWarp = 4;

/// Whether deterministic sum `k` at `params` takes the warp-per-leaf layout:
/// a sum over the last dim whose leaves hold at least kWarpLeafPoints points
/// (a full sum's leaves of 64 rows). Shorter leaves (a row's 64 points) take
/// the lane-per-chain layout: on an H100 the warp per leaf summed the rows
/// of [16384, 4096] in 1038 us, a lane per chain in 200 us.
constexpr int64_t kWarpLeafPoints = 2048;
bool warpPerLeaf(const Kernel &k, const int64_t *params) {
  if (!deterministicChains(k))
    return false;
  int64_t span = kDeterministicBlock;
  for (size_t i = 1; i < k.reduceDims.size(); ++i)
    span *= params[k.reduceDims[i]];
  return span >= kWarpLeafPoints;
}

} // namespace

namespace cudaemit {

/// The most leaves a run of a chained layout holds: a block's warps (a
/// warp per leaf) or a warp's slots (a lane per chain).
int64_t chainedRunCap(const Kernel &k, const int64_t *params) {
  return warpPerLeaf(k, params) ? kWarpsPerBlock : kSlotsPerWarp;
}

int64_t deterministicSplit(const Kernel &k, const int64_t *params, int numSMs) {
  const int64_t kept = keptPoints(k, params), leaves = leafCount(k, params);
  if (kept <= 0 || leaves == 0)
    return 1;
  if (deterministicChains(k)) { // runs of `per` leaves, as many as there are
    const int64_t per = chainedPer(leaves, chainedRunCap(k, params));
    const int64_t split = (leaves + per - 1) / per;
    return split >= 2 ? split : 1;
  }
  // A thread per (output, chunk) of 2^j whole leaves, enough of them to fill
  // the device (the emitted kernel finds the same chunk size).
  const int64_t target = (int64_t)std::max(numSMs, 1) * kCudaSmThreads;
  if (kept >= target)
    return 1;
  const int64_t most = (target + kept - 1) / kept;
  int64_t per = 1;
  while ((leaves + per - 1) / per > most)
    per <<= 1;
  const int64_t split = (leaves + per - 1) / per;
  return split >= 2 ? split : 1;
}

int64_t deterministicBlocks(const Kernel &k, const int64_t *params, int64_t split) {
  const int64_t kept = keptPoints(k, params);
  if (kept <= 0)
    return 0;
  int64_t blocks;
  if (deterministicChains(k)) { // cap/per runs a block (a warp per leaf) or a warp (lanes)
    const int64_t cap = chainedRunCap(k, params);
    const int64_t runs = cap / chainedPer(leafCount(k, params), cap);
    blocks = (kept * std::max<int64_t>(split, 1) + runs - 1) / runs;
    if (cap == kSlotsPerWarp) // those were warps: 8 a block
      blocks = (blocks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  } else { // a thread per (output, chunk)
    blocks = (kept * std::max<int64_t>(split, 1) + kCudaBlock - 1) / kCudaBlock;
  }
  return std::clamp<int64_t>(blocks, 1, INT_MAX);
}

void Emitter::emitDeterministicReduction(const std::string &sym, const std::vector<int> &kept,
                                         const std::vector<int> &red,
                                         const std::function<std::string(DType)> &combine,
                                         const std::function<std::string(DType)> &identity) {
  const size_t S = k.stores.size();
  const KReduce rop = k.reduce;
  const bool treeSum = deterministicTreeSum(k);
  os << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << sym
     << "(const dt_args a) {\n"
     << "  const dt_i64 kept = " << product(kept) << ";\n"
     << "  const dt_i64 red = " << product(red) << ";\n"
     << "  dt_i64 idx[" << std::max(R, 1) << "] = {0};\n";
  emitNarrow();
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "  auto comb" << s << " = [](" << accType(rop, t) << " p, " << accType(rop, t)
       << " q) { return (" << accType(rop, t) << ")" << combine(t) << "; };\n";
  }
  if (!treeSum) {
    os << "  // Deterministic mode: one thread per output, sequential over the reduced dims.\n"
       << "  for (dt_i64 o = (dt_i64)blockIdx.x * blockDim.x + threadIdx.x; o < kept;\n"
       << "       o += (dt_i64)gridDim.x * blockDim.x) {\n";
    emitUnravel(kept, "o", "    ");
    for (size_t s = 0; s < S; ++s) {
      DType t = k.outputs[k.stores[s].output];
      os << "    " << accType(rop, t) << " acc" << s << " = " << identity(t) << ";\n";
    }
    os << "    for (dt_i64 r = 0; r < red; ++r) {\n";
    emitUnravel(red, "r", "      ");
    emitPointAccumulate("      ");
    os << "    }\n";
    emitReductionStores("    ");
    os << "  }\n}\n";
    return;
  }
  const int W = cudaArgWords(k);
  std::vector<int> inner(red.begin() + 1, red.end());
  auto tree = [&](size_t s) { return isFloat(k.outputs[k.stores[s].output]); };
  auto push = [&](size_t s, const std::string &value, const char *ind) {
    os << ind << "{\n"
       << ind << "  double v = " << value << ";\n"
       << ind << "  for (int q = 1; q <= merges; ++q)\n"
       << ind << "    v = tree" << s << "[sp - q] + v;\n"
       << ind << "  tree" << s << "[sp - merges] = v;\n"
       << ind << "}\n";
  };
  auto finish = [&](size_t s, const char *ind) {
    os << ind << "acc" << s << " = sp > 0 ? tree" << s << "[sp - 1] : 0.0;\n"
       << ind << "for (int q = sp - 2; q >= 0; --q)\n"
       << ind << "  acc" << s << " = tree" << s << "[q] + acc" << s << ";\n";
  };
  auto carries = [&](const char *count, const char *ind) {
    os << ind << "int merges = 0; // the trailing ones of " << count << "\n"
       << ind << "for (dt_i64 l = " << count << "; l & 1; l >>= 1)\n"
       << ind << "  ++merges;\n";
  };
  // Each output's accumulators and, for float sums, its stack of subtrees.
  auto accumulators = [&](const char *ind) {
    os << ind << "int sp = 0;\n";
    for (size_t s = 0; s < S; ++s) {
      DType t = k.outputs[k.stores[s].output];
      os << ind << accType(rop, t) << " acc" << s << " = " << identity(t) << ";\n";
      if (tree(s))
        os << ind << "double tree" << s << "[" << kDeterministicDepth << "];\n";
    }
  };
  os << "  const dt_i64 split = (dt_i64)" << word(W - 2) << ";\n"
     << "  char *const scratch = (char *)" << word(W - 1) << ";\n";
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "  " << accType(rop, t) << " *const part" << s << " = (" << accType(rop, t)
       << " *)(scratch + " << s << "LL * 8 * kept * (split < 0 ? -split : split));\n";
  }
  // The fold: a thread per output pushes its chunks' nodes (each a whole
  // aligned subtree) in order.
  os << "  if (split < 0) { // the fold: a thread per output\n"
     << "    for (dt_i64 o = (dt_i64)blockIdx.x * blockDim.x + threadIdx.x; o < kept;\n"
     << "         o += (dt_i64)gridDim.x * blockDim.x) {\n";
  emitUnravel(kept, "o", "      ");
  accumulators("      ");
  os << "      for (dt_i64 c = 0; c < -split; ++c) {\n";
  carries("c", "        ");
  for (size_t s = 0; s < S; ++s) {
    if (tree(s))
      push(s, "part" + std::to_string(s) + "[o * -split + c]", "        ");
    else
      os << "        acc" << s << " = comb" << s << "(acc" << s << ", part" << s
         << "[o * -split + c]);\n";
  }
  os << "        sp = sp - merges + 1;\n      }\n";
  for (size_t s = 0; s < S; ++s)
    if (tree(s))
      finish(s, "      ");
  emitReductionStores("      ");
  os << "    }\n    return;\n  }\n"
     << "  const dt_i64 nsplit = split > 1 ? split : 1;\n"
     << "  const dt_i64 span = " << kDeterministicBlock << "LL * " << product(inner) << ";\n"
     << "  const dt_i64 leaves = span > 0 ? (red + span - 1) / span : 0;\n"
     << "  dt_i64 per = 1; // leaves a chunk (a run): the smallest power of two that\n"
     << "  while ((leaves + per - 1) / per > nsplit) // makes at most nsplit of them\n"
     << "    per <<= 1;\n";
  if (deterministicChains(k)) {
    emitChainedLeaves(kept, red, identity);
    emitChainLanes(kept, red, identity);
    return;
  }
  // A thread per (output, chunk), consecutive outputs in consecutive threads
  // (the last dim is kept: a warp reads neighbours).
  os << "  for (dt_i64 t = (dt_i64)blockIdx.x * blockDim.x + threadIdx.x; t < kept * nsplit;\n"
     << "       t += (dt_i64)gridDim.x * blockDim.x) {\n"
     << "    const dt_i64 o = t % kept, chunk = t / kept;\n";
  emitUnravel(kept, "o", "    ");
  accumulators("    ");
  os << "    const dt_i64 lend = (chunk + 1) * per < leaves ? (chunk + 1) * per : leaves;\n"
     << "    for (dt_i64 leaf = chunk * per; leaf < lend; ++leaf) {\n";
  for (size_t s = 0; s < S; ++s)
    if (tree(s))
      os << "      acc" << s << " = 0.0;\n";
  os << "      const dt_i64 r0 = leaf * span;\n"
     << "      const dt_i64 r1 = red - r0 < span ? red : r0 + span;\n";
  os << "      for (dt_i64 r = r0; r < r1; ++r) {\n";
  emitUnravel(red, "r", "        ");
  emitPointAccumulate("        ");
  os << "      }\n";
  carries("leaf - chunk * per", "      ");
  for (size_t s = 0; s < S; ++s)
    if (tree(s))
      push(s, "acc" + std::to_string(s), "      ");
  os << "      sp = sp - merges + 1;\n    }\n";
  for (size_t s = 0; s < S; ++s)
    if (tree(s))
      finish(s, "    ");
  os << "    if (nsplit > 1) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "      part" << s << "[o * nsplit + chunk] = acc" << s << ";\n";
  os << "      continue;\n    }\n";
  emitReductionStores("    ");
  os << "  }\n}\n";
}

void Emitter::emitRunNode(const std::vector<int> &kept) {
  // A run's node: to the scratch for the fold when split, else output o's.
  os << "      if (nsplit > 1) {\n";
  for (size_t s = 0; s < k.stores.size(); ++s)
    os << "        part" << s << "[o * nsplit + chunk] = acc" << s << ";\n";
  os << "      } else {\n";
  emitUnravel(kept, "o", "        ");
  emitReductionStores("        ");
  os << "      }\n";
}

void Emitter::emitLeafRows(const std::vector<int> &kept, const std::vector<int> &red) {
  // A leaf's rows of the last dim: a leaf starts a row, or (the last dim
  // the only reduced one) at a multiple of 64 of it, so a point's chain is
  // its offset from the row segment's start r modulo 8.
  emitUnravel(kept, "o", "      ");
  os << "      const dt_i64 r1 = red - leaf * span < span ? red : leaf * span + span;\n"
     << "      for (dt_i64 r = leaf * span; r < r1;) {\n"
     << "        const dt_i64 rowEnd = (r / C + 1) * C < r1 ? (r / C + 1) * C : r1;\n";
  emitUnravel(red, "r", "        ");
  os << "        const dt_i64 c0 = idx[" << R - 1 << "] - r; // point p's last-dim index: c0 + p\n";
}

void Emitter::emitChainedLeaves(const std::vector<int> &kept, const std::vector<int> &red,
                                const std::function<std::string(DType)> &identity) {
  const size_t S = k.stores.size();
  const KReduce rop = k.reduce;
  auto isTree = [&](size_t s) { return isFloat(k.outputs[k.stores[s].output]); };
  auto accT = [&](size_t s) { return std::string(accType(rop, k.outputs[k.stores[s].output])); };
  auto valT = [&](size_t s) { return std::string(cType(k.outputs[k.stores[s].output])); };
  // A warp's step: U rounds of 32 consecutive points of a row, all their
  // loads in flight at once (a long leaf's time is its loads), staged in
  // shared memory for the chains' lanes: at most 32 KiB of it a block.
  int64_t stageBytes = 0;
  for (size_t s = 0; s < S; ++s)
    if (isTree(s))
      stageBytes += (int64_t)kWarpsPerBlock * 32 * (valT(s) == "double" ? 8 : 4);
  int U = 16;
  while (U > 1 && stageBytes * U > 32768)
    U /= 2;
  const std::string last = std::to_string(R - 1), step = std::to_string(32 * U);
  os << "  if (span >= " << kWarpLeafPoints << "LL) { // long leaves: a warp per leaf\n"
     << "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, j = lane & 7;\n"
     << "  const dt_i64 runs = " << kWarpsPerBlock << " / per; // runs of per leaves a block\n"
     << "  const dt_i64 groups = kept * nsplit;\n"
     << "  const dt_i64 C = " << shape(R - 1) << ";\n";
  for (size_t s = 0; s < S; ++s) {
    os << "  __shared__ " << accT(s) << " node" << s << "[" << kWarpsPerBlock << "];\n";
    if (isTree(s))
      os << "  __shared__ " << valT(s) << " stage" << s << "[" << kWarpsPerBlock * 32 * U << "];\n";
  }
  os << "  for (dt_i64 b = blockIdx.x; b * runs < groups; b += gridDim.x) {\n"
     << "    const dt_i64 g = b * runs + warp / per;\n"
     << "    const dt_i64 o = g / nsplit, chunk = g % nsplit, leaf = chunk * per + warp % per;\n"
     << "    const bool valid = g < groups && leaf < leaves; // the same in the whole warp\n";
  for (size_t s = 0; s < S; ++s)
    os << "    " << accT(s) << " acc" << s << " = " << identity(k.outputs[k.stores[s].output])
       << ";\n";
  os << "    if (valid) {\n";
  emitLeafRows(kept, red);
  os << "        for (; r < rowEnd; r += " << step << ") {\n";
  for (int u = 0; u < U; ++u) {
    std::string sfx = "_" + std::to_string(u), p = "r + " + std::to_string(32 * u) + " + lane";
    os << "          if (" << p << " < rowEnd) {\n"
       << "            idx[" << last << "] = c0 + " << p << ";\n";
    std::vector<std::string> xs(I), ys(S);
    for (int i = 0; i < I; ++i)
      if (usedInput[i]) {
        xs[i] = "s" + std::to_string(i);
        os << "            const " << cType(k.inputs[i]) << " " << xs[i] << " = "
           << loadAt(i, offset(true, i)) << ";\n";
      }
    for (size_t s = 0; s < S; ++s) {
      ys[s] = "y" + std::to_string(s);
      os << "            " << valT(s) << " " << ys[s] << ";\n";
    }
    os << "            " << bodyCall(xs, ys) << ";\n";
    for (size_t s = 0; s < S; ++s) {
      std::string n = std::to_string(s);
      if (isTree(s))
        os << "            stage" << n << "[warp * " << 32 * U << " + " << 32 * u << " + lane] = y"
           << n << ";\n";
      else // an integer sum: any order
        os << "            acc" << n << " = comb" << n << "(acc" << n << ", (" << accT(s) << ")y"
           << n << ");\n";
    }
    os << "          }\n";
  }
  // Chain j adds the round's points r + j + 8q in order.
  os << "          __syncwarp();\n"
     << "          if (lane < 8)\n"
     << "            for (int q = j; q < " << 32 * U << " && r + q < rowEnd; q += 8) {\n";
  for (size_t s = 0; s < S; ++s)
    if (isTree(s))
      os << "              acc" << s << " = comb" << s << "(acc" << s << ", (double)stage" << s
         << "[warp * " << 32 * U << " + q]);\n";
  os << "            }\n"
     << "          __syncwarp();\n"
     << "        }\n"
     << "        r = rowEnd;\n"
     << "      }\n";
  for (size_t s = 0; s < S; ++s) {
    std::string n = std::to_string(s);
    if (isTree(s)) // chainTree on lane 0
      for (int off = 1; off <= 4; off <<= 1)
        os << "      acc" << n << " = acc" << n << " + __shfl_xor_sync(0xffffffffu, acc" << n
           << ", " << off << ");\n";
    else
      os << "      acc" << n << " = dt_warp_reduce(acc" << n << ", comb" << n << ");\n";
  }
  os << "    }\n"
     << "    if (lane == 0) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "      node" << s << "[warp] = acc" << s << ";\n";
  os << "    }\n"
     << "    __syncthreads();\n"
     << "    if (lane == 0 && warp % per == 0 && g < groups) {\n"
     << "      const dt_i64 n = leaves - chunk * per < per ? leaves - chunk * per : per;\n";
  for (size_t s = 0; s < S; ++s) {
    std::string n = std::to_string(s);
    if (isTree(s))
      os << "      for (dt_i64 w = 1; w < per; w <<= 1)\n"
         << "        for (dt_i64 i = 0; i + w < n; i += 2 * w)\n"
         << "          node" << n << "[warp + i] = node" << n << "[warp + i] + node" << n
         << "[warp + i + w];\n"
         << "      acc" << n << " = node" << n << "[warp];\n";
    else
      os << "      acc" << n << " = " << identity(k.outputs[k.stores[s].output]) << ";\n"
         << "      for (dt_i64 i = 0; i < n; ++i)\n"
         << "        acc" << n << " = comb" << n << "(acc" << n << ", node" << n
         << "[warp + i]);\n";
  }
  emitRunNode(kept);
  os << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n"
     << "  return;\n"
     << "  }\n";
}

void Emitter::emitChainLanes(const std::vector<int> &kept, const std::vector<int> &red,
                             const std::function<std::string(DType)> &identity) {
  const size_t S = k.stores.size();
  const KReduce rop = k.reduce;
  auto accT = [&](size_t s) { return std::string(accType(rop, k.outputs[k.stores[s].output])); };
  const std::string last = std::to_string(R - 1);
  // Short leaves: a lane per chain. Lane l of a warp is chain l % 8 of the
  // leaf in slot l / 8; a warp's 4 slots hold runs of `per` leaves of one
  // output (4/per runs). A lane adds its chain's points in order, the slot's
  // 8 lanes combine by three xor shuffles (lane 8s adds in chainTree's
  // order), and the run's leaves pairwise by shuffles across slots, a leaf
  // past the end dropping out. Every lane takes part in every shuffle.
  os << "  const int lane = threadIdx.x & 31, slot = lane >> 3, j = lane & 7;\n"
     << "  const dt_i64 runs = " << kSlotsPerWarp << " / per; // runs of per leaves a warp\n"
     << "  const dt_i64 groups = kept * nsplit;\n"
     << "  const dt_i64 C = " << shape(R - 1) << ";\n"
     << "  const dt_i64 warps = (dt_i64)gridDim.x * (blockDim.x >> 5);\n"
     << "  for (dt_i64 w = (dt_i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);\n"
     << "       w * runs < groups; w += warps) {\n"
     << "    const dt_i64 g = w * runs + slot / per;\n"
     << "    const dt_i64 o = g / nsplit, chunk = g % nsplit, leaf = chunk * per + slot % per;\n";
  for (size_t s = 0; s < S; ++s)
    os << "    " << accT(s) << " acc" << s << " = " << identity(k.outputs[k.stores[s].output])
       << ";\n";
  os << "    if (g < groups && leaf < leaves) {\n";
  emitLeafRows(kept, red);
  os << "#pragma unroll 4\n"
     << "        for (dt_i64 p = r + j; p < rowEnd; p += " << kDeterministicChains << ") {\n"
     << "          idx[" << last << "] = c0 + p;\n";
  emitPointAccumulate("          ");
  os << "        }\n"
     << "        r = rowEnd;\n"
     << "      }\n"
     << "    }\n";
  for (size_t s = 0; s < S; ++s)
    for (int off = 1; off < kDeterministicChains; off <<= 1)
      os << "    acc" << s << " = comb" << s << "(acc" << s << ", __shfl_xor_sync(0xffffffffu, acc"
         << s << ", " << off << "));\n";
  os << "    const dt_i64 n = leaves - chunk * per < per ? leaves - chunk * per : per;\n"
     << "    const dt_i64 i = slot % per; // the leaf's place in its run\n"
     << "    for (int h = 1; h < " << kSlotsPerWarp << "; h <<= 1) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "      const " << accT(s) << " q" << s << " = __shfl_xor_sync(0xffffffffu, acc" << s
       << ", " << kDeterministicChains << " * h);\n";
  os << "      if (h < per && i % (2 * h) == 0 && i + h < n) {\n";
  for (size_t s = 0; s < S; ++s)
    os << "        acc" << s << " = comb" << s << "(acc" << s << ", q" << s << ");\n";
  os << "      }\n"
     << "    }\n"
     << "    if (j == 0 && i == 0 && g < groups) {\n";
  emitRunNode(kept);
  os << "    }\n"
     << "  }\n}\n";
}

} // namespace cudaemit

} // namespace dt
