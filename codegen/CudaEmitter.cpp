// This file implements emitCudaKernel: the kernel IR's scalar DAG becomes one
// inlined device function `dt_body` (one `const` local per live node), and a
// __global__ wrapper drives it: a grid-stride elementwise loop with a
// vectorized contiguous path here, or a reduction (CudaReduction.cpp). See
// CudaEmitter.h for the ABI and the launch geometry.
#include "codegen/CudaEmitterImpl.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace dt {

namespace cudaemit {

const char *cType(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I32:
    return "int";
  case DType::I64:
    return "dt_i64";
  case DType::Bool:
    return "bool";
  case DType::BF16: // computed in f32 registers (rounded after each op)
  case DType::F16:
    return "float";
  }
  return "?";
}

/// The type in memory (bool is one byte; bf16/f16 are their bit patterns).
const char *memType(DType t) {
  return t == DType::Bool ? "unsigned char" : isLowPrecision(t) ? "unsigned short" : cType(t);
}

/// The prelude's name suffix of a bf16/f16 conversion.
std::string lowName(DType t) { return t == DType::BF16 ? "bf16" : "f16"; }

/// A value read from memory as its register value.
std::string widenMem(DType t, const std::string &e) {
  if (t == DType::Bool)
    return "(" + e + " != 0)";
  return isLowPrecision(t) ? "dt_" + lowName(t) + "_to_f32(" + e + ")" : e;
}

/// The reduction accumulator type: float sums accumulate in f64.
const char *accType(KReduce r, DType t) {
  return (r == KReduce::Sum && isFloat(t)) ? "double" : cType(t);
}

std::string hexFloat(double v, bool f32) {
  if (std::isnan(v))
    return f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v)) {
    std::string inf =
        f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return v > 0 ? inf : "(-" + inf + ")";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string("(") + buf + (f32 ? "f)" : ")");
}

std::string intLit(int64_t v, DType t) {
  char buf[64];
  if (t == DType::I32)
    std::snprintf(buf, sizeof buf, "dt_wrap32(0x%xu)", (unsigned)(uint32_t)v);
  else if (t == DType::I64)
    std::snprintf(buf, sizeof buf, "dt_wrap64(0x%llxull)", (unsigned long long)v);
  else
    return v ? "true" : "false";
  return buf;
}

/// `(T)x` under the cast rules of KernelIR.h, from dtype `from` to `to`.
/// To bf16/f16 this is the f32 value the node then rounds: from f64 and
/// ints through f64 and round-to-odd, so the two steps are one rounding.
std::string castExpr(const std::string &x, DType from, DType to) {
  if (from == to)
    return x;
  if (to == DType::Bool)
    return "(" + x + " != 0)";
  if (isLowPrecision(to)) {
    if (from == DType::Bool)
      return "(float)" + x;
    if (from == DType::F64 || !isFloat(from))
      return "dt_f64_to_f32_odd((double)" + x + ")";
    return x; // f32 or bf16/f16 (exact in f32)
  }
  if (isFloat(from)) {
    if (isFloat(to))
      return std::string("(") + cType(to) + ")" + x;
    return std::string(to == DType::I32 ? "dt_sat_i32" : "dt_sat_i64") + "((double)" + x + ")";
  }
  if (isFloat(to)) // int -> float rounds to nearest; bool gives 0 or 1
    return std::string("(") + cType(to) + ")" + x;
  if (to == DType::I32) // truncate (two's complement)
    return "dt_wrap32((unsigned)(dt_u64)" + x + ")";
  return "(dt_i64)" + x; // i32/bool -> i64 sign-extends
}

void Emitter::emitElementwise(const std::string &sym) {
  const size_t S = k.stores.size();
  // The fast path unravels the point's index only when a node reads it.
  std::vector<bool> gathered = gatheredInputs(k);
  const bool global =
      usesGlobalIndex(k) || std::find(gathered.begin(), gathered.end(), true) != gathered.end();
  os << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << sym
     << "(const dt_args a) {\n"
     << "  const dt_i64 total = " << product(allDims()) << ";\n"
     << "  if (total <= 0)\n    return;\n"
     << "  const dt_u64 tid = (dt_u64)blockIdx.x * blockDim.x + threadIdx.x;\n"
     << "  const dt_u64 nth = (dt_u64)gridDim.x * blockDim.x;\n"
     << "  dt_i64 idx[" << std::max(R, 1) << "] = {0};\n";
  emitNarrow();
  // Rank 0 is one element: only the general loop (a constant-true fast path
  // would make it unreachable, which NVRTC warns about). The fast path's text
  // goes to `os` and is dropped again for rank 0.
  const std::streampos fastStart = os.tellp();
  // Row-major strides of the iteration space, for the contiguity test.
  for (int d = R - 1; d >= 0; --d)
    os << "  const dt_i64 rm" << d << " = "
       << (d == R - 1 ? std::string("1") : "rm" + std::to_string(d + 1) + " * " + shape(d + 1))
       << ";\n";
  auto contig = [&](bool input, int b) {
    std::string c = "true";
    for (int d = 0; d < R; ++d)
      c += " && (" + shape(d) + " <= 1 || " + (input ? inStride(b, d) : outStride(b, d)) +
           " == rm" + std::to_string(d) + ")";
    return c;
  };
  // An input is read, in the vector path, contiguously (c), as one value
  // (z: every stride 0), or as one value per row (r: stride 0 along the last
  // dim, whose extent is a multiple of the vector width, so that each vector
  // of points lies in one row: per-row scales, ids broadcast along a row).
  std::string fast = "true", anyRow = "false";
  for (int i = 0; i < I; ++i) {
    if (!usedInput[i])
      continue;
    std::string zero = "true", n = std::to_string(i);
    for (int d = 0; d < R; ++d)
      zero += " && " + inStride(i, d) + " == 0";
    os << "  const bool c" << i << " = " << contig(true, i) << ";\n"
       << "  const bool z" << i << " = !c" << i << " && " << zero << ";\n";
    if (R >= 2) {
      os << "  const bool r" << i << " = !c" << i << " && !z" << i << " && " << inStride(i, R - 1)
         << " == 0 && " << shape(R - 1) << " % " << kCudaVector << " == 0;\n";
      fast += " && (c" + n + " || z" + n + " || r" + n + ")";
      anyRow += " || r" + n;
    } else {
      fast += " && (c" + n + " || z" + n + ")";
    }
  }
  // The offset of point idx's row in input i (r mode).
  auto rowOffset = [&](int i) {
    std::string o = "(dt_i64)0";
    for (int d = 0; d + 1 < R; ++d)
      o += " + idx[" + std::to_string(d) + "] * " + inStride(i, d);
    return o;
  };
  // idx of point `lin` where a node reads it (global) or a row-mode input
  // needs its row.
  auto unravelIfRead = [&](const std::string &lin, const std::string &ind) {
    if (global) {
      emitUnravel(allDims(), lin, ind.c_str());
    } else if (R >= 2) {
      os << ind << "if (" << anyRow << ") {\n";
      emitUnravel(allDims(), lin, (ind + "  ").c_str());
      os << ind << "}\n";
    }
  };
  // The vector path's points: idx of `base` unravelled once, then advanced
  // point by point (a carry chain, no division).
  auto advance = [&](const char *ind) {
    if (R == 1) {
      os << ind << "idx[0] = (dt_i64)(base + j);\n";
      return;
    }
    os << ind << "if (j > 0) {\n";
    for (int d = R - 1; d > 0; --d)
      os << ind << std::string(2 * (R - d), ' ') << "if (++idx[" << d << "] == " << shape(d)
         << ") {\n"
         << ind << std::string(2 * (R - d) + 2, ' ') << "idx[" << d << "] = 0;\n";
    os << ind << std::string(2 * R, ' ') << "++idx[0];\n";
    for (int d = 1; d < R; ++d)
      os << ind << std::string(2 * (R - d), ' ') << "}\n";
    os << ind << "}\n";
  };
  for (size_t s = 0; s < S; ++s)
    fast += " && (" + contig(false, k.stores[s].output) + ")";
  os << "  if (" << fast << ") {\n"
     << "    for (dt_u64 base = tid * " << kCudaVector << "; base < (dt_u64)total; base += nth * "
     << kCudaVector << ") {\n"
     << "      if (base + " << kCudaVector << " <= (dt_u64)total) {\n";
  unravelIfRead("base", "        ");
  std::vector<std::string> xs(I), ys(S);
  for (int i = 0; i < I; ++i)
    if (usedInput[i]) {
      std::string n = std::to_string(i);
      std::string off = R >= 2
                            ? "(z" + n + " ? 0 : r" + n + " ? " + rowOffset(i) + " : (dt_i64)base)"
                            : "(z" + n + " ? 0 : (dt_i64)base)";
      std::string one = R >= 2 ? "z" + n + " || r" + n : "z" + n;
      os << "        " << memType(k.inputs[i]) << " m" << i << "[4];\n"
         << "        dt_ld4(" << ptr(i, k.inputs[i], true) << " + " << off << ", " << one << ", m"
         << i << ");\n";
      xs[i] = widenMem(k.inputs[i], "m" + n + "[j]");
    }
  for (size_t s = 0; s < S; ++s) {
    os << "        " << memType(k.outputs[k.stores[s].output]) << " n" << s << "[4];\n";
    ys[s] = "y" + std::to_string(s);
  }
  os << "#pragma unroll\n        for (int j = 0; j < 4; ++j) {\n";
  if (global)
    advance("          ");
  for (size_t s = 0; s < S; ++s)
    os << "          " << cType(k.outputs[k.stores[s].output]) << " y" << s << ";\n";
  os << "          " << bodyCall(xs, ys) << ";\n";
  for (size_t s = 0; s < S; ++s)
    os << "          n" << s << "[j] = " << storeVal(k.outputs[k.stores[s].output], ys[s]) << ";\n";
  os << "        }\n";
  for (size_t s = 0; s < S; ++s) {
    int o = k.stores[s].output;
    os << "        dt_st4(" << ptr(NB - O + o, k.outputs[o], false) << " + base, n" << s << ");\n";
  }
  // The tail (fewer than 4 elements left) and the strided path share one
  // scalar loop body, parameterized by how offsets are computed.
  auto scalarBody = [&](const char *ind, bool strided) {
    std::vector<std::string> sx(I), sy(S);
    for (int i = 0; i < I; ++i)
      if (usedInput[i]) {
        std::string n = std::to_string(i);
        std::string off = strided ? offset(true, i)
                          : R >= 2
                              ? "(z" + n + " ? 0 : r" + n + " ? " + rowOffset(i) + " : (dt_i64)e)"
                              : "(z" + n + " ? 0 : (dt_i64)e)";
        os << ind << "const " << cType(k.inputs[i]) << " s" << i << " = " << loadAt(i, off)
           << ";\n";
        sx[i] = "s" + std::to_string(i);
      }
    for (size_t s = 0; s < S; ++s) {
      os << ind << cType(k.outputs[k.stores[s].output]) << " y" << s << ";\n";
      sy[s] = "y" + std::to_string(s);
    }
    os << ind << bodyCall(sx, sy) << ";\n";
    for (size_t s = 0; s < S; ++s) {
      int o = k.stores[s].output;
      std::string off = strided ? offset(false, o) : "(dt_i64)e";
      os << ind << ptr(NB - O + o, k.outputs[o], false) << "[" << off
         << "] = " << storeVal(k.outputs[o], sy[s]) << ";\n";
    }
  };
  os << "      } else {\n"
     << "        for (dt_u64 e = base; e < (dt_u64)total; ++e) {\n";
  unravelIfRead("e", "          ");
  scalarBody("          ", false);
  os << "        }\n      }\n    }\n    return;\n  }\n";
  if (R == 0) {
    std::string text = os.str();
    os.str(text.substr(0, (size_t)fastStart));
    os.seekp(0, std::ios::end);
  }
  os << "  for (dt_u64 e = tid; e < (dt_u64)total; e += nth) {\n";
  emitUnravel(allDims(), "e", "    ");
  scalarBody("    ", true);
  os << "  }\n}\n";
}

} // namespace cudaemit

using namespace cudaemit;

std::string cudaKernelSymbol(const Kernel &k) {
  char sym[40];
  std::snprintf(sym, sizeof sym, "dt_k_%016llx", (unsigned long long)kernelHash(k));
  return sym;
}

std::string cudaKernelKey(const Kernel &k, bool quick) {
  return printKernel(k, false) + (quick ? "quick\n" : "");
}

bool cudaSplitsReduction(const Kernel &k) {
  return k.reduce != KReduce::None && (!k.deterministic || deterministicTreeSum(k));
}

int cudaArgWords(const Kernel &k) {
  return (int)std::max<int64_t>(1, (int64_t)(k.inputs.size() + k.outputs.size()) + numParams(k) +
                                       (cudaSplitsReduction(k) ? 2 : 0) +
                                       (scatterStore(k) ? kCudaScatterWords : 0));
}

CudaKernelSource emitCudaKernel(const Kernel &k, const std::string &symbol) {
  std::string err = verifyKernel(k);
  if (!err.empty())
    throw InternalError("emitCudaKernel: invalid kernel: " + err);
  if (numLifted(k) > 0) // the CPU JIT's form; CUDA kernels keep their values
    throw InternalError("emitCudaKernel: kernel `" + k.name + "` has lifted constants");
  if (symbol.empty() || !(std::isalpha((unsigned char)symbol[0]) || symbol[0] == '_') ||
      !std::all_of(symbol.begin(), symbol.end(),
                   [](char c) { return std::isalnum((unsigned char)c) || c == '_'; }))
    throw InternalError("emitCudaKernel: `" + symbol + "` is not a C identifier");
  CudaKernelSource out;
  out.symbol = symbol;
  out.argWords = cudaArgWords(k);
  if (out.argWords > 512)
    throw InternalError("emitCudaKernel: " + std::to_string(out.argWords) +
                        " argument words exceed the 4 KiB kernel-argument limit");
  Emitter e(k);
  // The kernel IR text as a comment: what this source implements. Without
  // the kernel's name, so that the source (and NVRTC's cache key) is the
  // same in every program that has this kernel, whatever it is called there.
  std::istringstream text(printKernel(k, false));
  for (std::string line; std::getline(text, line);)
    e.os << "// " << line << "\n";
  e.os << cudaPrelude() << "\n"
       << "struct dt_args {\n  dt_u64 w[" << out.argWords << "];\n};\n\n";
  e.emitBody();
  if (scatterStore(k))
    e.emitScatter(symbol);
  else if (k.reduce == KReduce::None)
    e.emitElementwise(symbol);
  else
    e.emitReduction(symbol);
  out.source = e.os.str();
  return out;
}

std::vector<uint64_t> cudaKernelArgs(const Kernel &k, void *const *deviceBuffers,
                                     const int64_t *params) {
  std::vector<uint64_t> w(cudaArgWords(k), 0);
  size_t nb = k.inputs.size() + k.outputs.size();
  for (size_t i = 0; i < nb; ++i)
    w[i] = (uint64_t)(uintptr_t)deviceBuffers[i];
  for (int64_t p = 0; p < numParams(k); ++p)
    w[nb + p] = (uint64_t)params[p];
  return w;
}

CudaLaunchDims cudaLaunchDims(const Kernel &k, const int64_t *params, int numSMs) {
  CudaLaunchDims d;
  int64_t kept = 1, red = 1;
  for (int i = 0; i < k.rank; ++i)
    (isReducedDim(k, i) ? red : kept) *= params[i];
  if (kept <= 0)
    return d;
  // Enough blocks to fill the machine several times; grid-stride loops do
  // the rest. (kept * red may be 0: an empty reduction still stores identities.)
  const int64_t cap = (int64_t)std::max(numSMs, 1) * 32;
  int64_t blocks;
  if (k.reduce == KReduce::None) {
    blocks = (kept + (int64_t)kCudaBlock * kCudaVector - 1) / ((int64_t)kCudaBlock * kCudaVector);
  } else if (k.deterministic) {
    blocks = cudaemit::deterministicBlocks(k, params, 1);
  } else if (cudaColumnReduction(k, params)) {
    blocks = (kept + kCudaBlock - 1) / kCudaBlock; // a thread per output
  } else if (red >= kCudaBlockReduceMin) {
    blocks = kept;
  } else {
    const int64_t warps = kCudaBlock / 32;
    blocks = (kept + warps - 1) / warps;
  }
  d.grid = (unsigned)std::clamp<int64_t>(blocks, 1, cap);
  return d;
}

} // namespace dt
