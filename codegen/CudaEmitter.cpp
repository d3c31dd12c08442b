// This file implements emitCudaKernel: the kernel IR's scalar DAG becomes one
// inlined device function `dt_body` (one `const` local per live node), and a
// __global__ wrapper drives it: a grid-stride elementwise loop with a
// vectorized contiguous path, or a warp/block-per-output reduction. See
// CudaEmitter.h for the ABI and the launch geometry.
#include "codegen/CudaEmitter.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace dt {

namespace {

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

struct Emitter {
  const Kernel &k;
  int R, I, O, NB;
  std::vector<bool> live, usedInput;
  std::ostringstream os;

  explicit Emitter(const Kernel &kk)
      : k(kk), R(kk.rank), I((int)kk.inputs.size()), O((int)kk.outputs.size()), NB(I + O) {
    live.assign(k.nodes.size(), false);
    for (const KStore &s : k.stores)
      live[s.node] = true;
    for (int i = (int)k.nodes.size() - 1; i >= 0; --i)
      if (live[i])
        for (int a = 0; a < kopArity(k.nodes[i].op); ++a)
          live[k.nodes[i].args[a]] = true;
    usedInput.assign(I, false);
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (live[i] && k.nodes[i].op == KOp::Load)
        usedInput[k.nodes[i].index] = true;
  }

  std::string word(int i) const { return "a.w[" + std::to_string(i) + "]"; }
  std::string param(int i) const { return "((dt_i64)" + word(NB + i) + ")"; }
  std::string shape(int d) const { return param(d); }
  std::string inStride(int in, int d) const { return param(R * (1 + in) + d); }
  std::string outStride(int o, int d) const { return param(R * (1 + I + o) + d); }
  std::string gOff(int d) const { return param(R * (1 + I + O) + d); }
  std::string gStride(int d) const { return param(R * (1 + I + O) + R + d); }
  std::string ptr(int buf, DType t, bool isConst) const {
    return std::string("reinterpret_cast<") + (isConst ? "const " : "") + memType(t) + " *>(" +
           word(buf) + ")";
  }

  std::string v(int node) const { return "v" + std::to_string(node); }

  /// The expression of node `i` (operands are earlier `const` locals).
  std::string nodeExpr(int i) const {
    const KNode &n = k.nodes[i];
    const bool fl = isFloat(n.dtype), f32 = fl && n.dtype != DType::F64;
    auto A = [&](int a) { return v(n.args[a]); };
    auto AT = [&](int a) { return k.nodes[n.args[a]].dtype; };
    const std::string T = cType(n.dtype);
    const std::string U = n.dtype == DType::I32 ? "unsigned" : "dt_u64";
    const std::string W = n.dtype == DType::I32 ? "dt_wrap32" : "dt_wrap64";
    auto wrapOp = [&](const char *op) {
      return W + "((" + U + ")" + A(0) + " " + op + " (" + U + ")" + A(1) + ")";
    };
    auto math = [&](const char *name) {
      return std::string(name) + (f32 ? "f(" : "(") + A(0) + ")";
    };
    const std::string one = f32 ? "1.0f" : "1.0";
    switch (n.op) {
    case KOp::Load:
      return "x" + std::to_string(n.index);
    case KOp::Gather: // idx[dim] replaced by the index (KernelIR.h)
      return loadAt(n.index, offset(true, n.index) + " + ((dt_i64)" + A(0) + " - idx[" +
                                 std::to_string(n.dim) + "]) * " + inStride(n.index, n.dim));
    case KOp::Const:
      return fl ? hexFloat(kernelConstFloat(n), f32) : intLit(kernelConstInt(n), n.dtype);
    case KOp::Random: {
      std::string lin = "0ull";
      for (int d = 0; d < R; ++d)
        lin +=
            " + (dt_u64)(" + gOff(d) + " + idx[" + std::to_string(d) + "]) * (dt_u64)" + gStride(d);
      char ks[40];
      std::snprintf(ks, sizeof ks, "0x%llxull", (unsigned long long)kernelSplitmix64(n.seed));
      std::string e = std::string(n.random == RandomKind::Normal ? "dt_normal(" : "dt_uniform01(") +
                      ks + ", " + lin + ")";
      return f32 ? e : "(double)" + e;
    }
    case KOp::Iota:
      return castExpr("(" + gOff(n.index) + " + idx[" + std::to_string(n.index) + "])", DType::I64,
                      n.dtype);
    case KOp::Neg:
      return fl ? "(-" + A(0) + ")" : W + "((" + U + ")0 - (" + U + ")" + A(0) + ")";
    case KOp::Abs:
      return fl ? math("fabs")
                : "(" + A(0) + " < 0 ? " + W + "((" + U + ")0 - (" + U + ")" + A(0) +
                      ") : " + A(0) + ")";
    case KOp::Relu:
      return fl ? "dt_fmax(" + A(0) + ", " + (f32 ? "0.0f" : "0.0") + ")"
                : "(" + A(0) + " > 0 ? " + A(0) + " : (" + T + ")0)";
    case KOp::Exp:
      return math("exp");
    case KOp::Log:
      return math("log");
    case KOp::Sqrt:
      return math("sqrt");
    case KOp::Rsqrt: // 1 / sqrt(x), both IEEE-rounded (not the approximate rsqrtf)
      return "(" + one + " / " + math("sqrt") + ")";
    case KOp::Tanh:
      return math("tanh");
    case KOp::Sigmoid:
      return "(" + one + " / (" + one + " + " + (f32 ? "expf(-" : "exp(-") + A(0) + ")))";
    case KOp::Sin:
      return math("sin");
    case KOp::Cos:
      return math("cos");
    case KOp::Erf:
      return math("erf");
    case KOp::Log1p:
      return math("log1p");
    case KOp::Expm1:
      return math("expm1");
    case KOp::Not:
      return "(!" + A(0) + ")";
    case KOp::Cast:
      return castExpr(A(0), AT(0), n.dtype);
    case KOp::Add:
    case KOp::Sub:
    case KOp::Mul: {
      const char *op = n.op == KOp::Add ? "+" : n.op == KOp::Sub ? "-" : "*";
      return fl ? "(" + A(0) + " " + op + " " + A(1) + ")" : wrapOp(op);
    }
    case KOp::Div:
      return fl ? "(" + A(0) + " / " + A(1) + ")" : "dt_idiv(" + A(0) + ", " + A(1) + ")";
    case KOp::Mod:
      return "dt_mod(" + A(0) + ", " + A(1) + ")";
    case KOp::FloorDiv:
      return "dt_floordiv(" + A(0) + ", " + A(1) + ")";
    case KOp::Pow:
      return fl ? std::string(f32 ? "powf(" : "pow(") + A(0) + ", " + A(1) + ")"
                : "dt_ipow(" + A(0) + ", " + A(1) + ")";
    case KOp::Maximum:
      return fl ? "dt_fmax(" + A(0) + ", " + A(1) + ")"
                : "(" + A(0) + " < " + A(1) + " ? " + A(1) + " : " + A(0) + ")";
    case KOp::Minimum:
      return fl ? "dt_fmin(" + A(0) + ", " + A(1) + ")"
                : "(" + A(1) + " < " + A(0) + " ? " + A(1) + " : " + A(0) + ")";
    case KOp::Eq:
    case KOp::Ne:
    case KOp::Lt:
    case KOp::Le:
    case KOp::Gt:
    case KOp::Ge: {
      static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
      return "(" + A(0) + " " + ops[(int)n.op - (int)KOp::Eq] + " " + A(1) + ")";
    }
    case KOp::And:
      return "(" + A(0) + " && " + A(1) + ")";
    case KOp::Or:
      return "(" + A(0) + " || " + A(1) + ")";
    case KOp::Select:
      return "(" + A(0) + " ? " + A(1) + " : " + A(2) + ")";
    }
    throw InternalError("emitCudaKernel: unknown kernel node");
  }

  /// `dt_body(a, idx, x<in>..., y<store>&...)`: the DAG at one point.
  void emitBody() {
    os << "static __device__ __forceinline__ void dt_body(const dt_args &a, const dt_i64 *idx";
    for (int i = 0; i < I; ++i)
      if (usedInput[i])
        os << ", const " << cType(k.inputs[i]) << " x" << i;
    for (size_t s = 0; s < k.stores.size(); ++s)
      os << ", " << cType(k.outputs[k.stores[s].output]) << " &y" << s;
    os << ") {\n  (void)a;\n  (void)idx;\n";
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (!live[i])
        continue;
      const KNode &n = k.nodes[i];
      std::string e = nodeExpr((int)i);
      // bf16/f16 ops compute in f32 and round once to the storage type (the
      // ops that only pick or flip an exact value need no rounding).
      bool exact = n.op == KOp::Load || n.op == KOp::Gather || n.op == KOp::Const ||
                   n.op == KOp::Select || n.op == KOp::Neg || n.op == KOp::Abs || n.op == KOp::Relu;
      if (isLowPrecision(n.dtype) && !exact)
        e = "dt_round_" + lowName(n.dtype) + "(" + e + ")";
      os << "  const " << cType(n.dtype) << " " << v((int)i) << " = " << e << ";\n";
    }
    for (size_t s = 0; s < k.stores.size(); ++s)
      os << "  y" << s << " = " << v(k.stores[s].node) << ";\n";
    os << "}\n\n";
  }

  /// idx[dims] from the row-major linear index `lin` over `dims`. With the
  /// kernel's `narrow` (its whole iteration space under 2^32 points: every
  /// index and extent fits) in 32-bit unsigned arithmetic, several times
  /// cheaper on a GPU than 64-bit division.
  void emitUnravel(const std::vector<int> &dims, const std::string &lin, const char *ind) {
    if (dims.empty())
      return;
    auto body = [&](const char *T, const std::string &in) {
      os << in << T << " t = (" << T << ")(" << lin << ");\n";
      for (int j = (int)dims.size() - 1; j > 0; --j) {
        std::string d = std::to_string(dims[j]);
        os << in << "idx[" << d << "] = (dt_i64)(t % (" << T << ")" << shape(dims[j]) << ");\n"
           << in << "t /= (" << T << ")" << shape(dims[j]) << ";\n";
      }
      os << in << "idx[" << dims[0] << "] = (dt_i64)t;\n";
    };
    if (dims.size() == 1) {
      os << ind << "idx[" << dims[0] << "] = (dt_i64)(" << lin << ");\n";
      return;
    }
    os << ind << "if (narrow) {\n";
    body("unsigned", std::string(ind) + "  ");
    os << ind << "} else {\n";
    body("dt_u64", std::string(ind) + "  ");
    os << ind << "}\n";
  }

  /// The prologue's `narrow`: fewer than 2^32 points in the iteration space.
  void emitNarrow() {
    os << "  const bool narrow = (dt_u64)(" << product(allDims()) << ") <= 0xffffffffull;\n"
       << "  (void)narrow;\n";
  }

  std::string product(const std::vector<int> &dims) const {
    std::string p = "(dt_i64)1";
    for (int d : dims)
      p += " * " + shape(d);
    return p;
  }

  std::string offset(bool input, int b) const {
    std::string s = "(dt_i64)0";
    for (int d = 0; d < R; ++d)
      s += " + idx[" + std::to_string(d) + "] * " + (input ? inStride(b, d) : outStride(b, d));
    return s;
  }

  std::string loadAt(int in, const std::string &off) const {
    return widenMem(k.inputs[in], ptr(in, k.inputs[in], true) + "[" + off + "]");
  }

  std::string storeVal(DType t, const std::string &y) const {
    if (isLowPrecision(t))
      return "dt_f32_to_" + lowName(t) + "(" + y + ")";
    return t == DType::Bool ? "(unsigned char)(" + y + " ? 1 : 0)" : y;
  }

  std::string bodyCall(const std::vector<std::string> &xs, const std::vector<std::string> &ys) {
    std::string c = "dt_body(a, idx";
    for (int i = 0; i < I; ++i)
      if (usedInput[i])
        c += ", " + xs[i];
    for (const auto &y : ys)
      c += ", " + y;
    return c + ")";
  }

  std::vector<int> allDims() const {
    std::vector<int> d(R);
    for (int i = 0; i < R; ++i)
      d[i] = i;
    return d;
  }

  void emitElementwise(const std::string &sym);
  void emitReduction(const std::string &sym);
  /// Every output's store from its accumulator `accS` (after a reduction).
  void emitReductionStores(const char *ind);
  /// Deterministic mode: one thread per output element, which reduces its
  /// inputs in row-major order over the reduced dims into one accumulator
  /// (f64 for float sums): the order of the interpreter and the CPU JIT.
  template <class Combine, class Identity>
  void emitDeterministicReduction(const std::string &sym, const std::vector<int> &kept,
                                  const std::vector<int> &red, Combine &&combine,
                                  Identity &&identity);
};

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
  os << "  if (split < 0) { // the second pass: a thread per output\n"
     << "    for (dt_i64 o = (dt_i64)blockIdx.x * blockDim.x + threadIdx.x; o < kept;\n"
     << "         o += (dt_i64)gridDim.x * blockDim.x) {\n";
  emitUnravel(kept, "o", "      ");
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "      " << accType(rop, t) << " acc" << s << " = part" << s << "[o * -split];\n"
       << "      for (dt_i64 c = 1; c < -split; ++c)\n"
       << "        acc" << s << " = comb" << s << "(acc" << s << ", part" << s
       << "[o * -split + c]);\n";
  }
  store("      ");
  os << "    }\n    return;\n  }\n"
     << "  const dt_i64 nsplit = split > 1 ? split : 1;\n"
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
     << "  const dt_i64 chunk = (red + nsplit - 1) / nsplit;\n"
     << "  const dt_i64 rbegin = nsplit > 1 ? (dt_i64)blockIdx.x % nsplit * chunk : 0;\n"
     << "  const dt_i64 rend = nsplit > 1 && rbegin + chunk < red ? rbegin + chunk : red;\n";
  os << "  for (dt_i64 o = first; o < kept; o += step) {\n";
  emitUnravel(kept, "o", "    ");
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "    " << accType(rop, t) << " acc" << s << " = " << identity(t) << ";\n";
  }
  os << "    for (dt_i64 r = rbegin + tfirst; r < rend; r += tstep) {\n";
  emitUnravel(red, "r", "      ");
  std::vector<std::string> xs(I), ys(S);
  for (int i = 0; i < I; ++i)
    if (usedInput[i]) {
      os << "      const " << cType(k.inputs[i]) << " s" << i << " = " << loadAt(i, offset(true, i))
         << ";\n";
      xs[i] = "s" + std::to_string(i);
    }
  for (size_t s = 0; s < S; ++s) {
    os << "      " << cType(k.outputs[k.stores[s].output]) << " y" << s << ";\n";
    ys[s] = "y" + std::to_string(s);
  }
  os << "      " << bodyCall(xs, ys) << ";\n";
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "      acc" << s << " = comb" << s << "(acc" << s << ", (" << accType(rop, t) << ")y" << s
       << ");\n";
  }
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

template <class Combine, class Identity>
void Emitter::emitDeterministicReduction(const std::string &sym, const std::vector<int> &kept,
                                         const std::vector<int> &red, Combine &&combine,
                                         Identity &&identity) {
  const size_t S = k.stores.size();
  const KReduce rop = k.reduce;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlock << ") " << sym
     << "(const dt_args a) {\n"
     << "  const dt_i64 kept = " << product(kept) << ";\n"
     << "  const dt_i64 red = " << product(red) << ";\n"
     << "  // Deterministic mode: one thread per output, sequential over the reduced dims.\n"
     << "  dt_i64 idx[" << std::max(R, 1) << "] = {0};\n";
  emitNarrow();
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "  auto comb" << s << " = [](" << accType(rop, t) << " p, " << accType(rop, t)
       << " q) { return (" << accType(rop, t) << ")" << combine(t) << "; };\n";
  }
  os << "  for (dt_i64 o = (dt_i64)blockIdx.x * blockDim.x + threadIdx.x; o < kept;\n"
     << "       o += (dt_i64)gridDim.x * blockDim.x) {\n";
  emitUnravel(kept, "o", "    ");
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "    " << accType(rop, t) << " acc" << s << " = " << identity(t) << ";\n";
  }
  os << "    for (dt_i64 r = 0; r < red; ++r) {\n";
  emitUnravel(red, "r", "      ");
  std::vector<std::string> xs(I), ys(S);
  for (int i = 0; i < I; ++i)
    if (usedInput[i]) {
      os << "      const " << cType(k.inputs[i]) << " s" << i << " = " << loadAt(i, offset(true, i))
         << ";\n";
      xs[i] = "s" + std::to_string(i);
    }
  for (size_t s = 0; s < S; ++s) {
    os << "      " << cType(k.outputs[k.stores[s].output]) << " y" << s << ";\n";
    ys[s] = "y" + std::to_string(s);
  }
  os << "      " << bodyCall(xs, ys) << ";\n";
  for (size_t s = 0; s < S; ++s) {
    DType t = k.outputs[k.stores[s].output];
    os << "      acc" << s << " = comb" << s << "(acc" << s << ", (" << accType(rop, t) << ")y" << s
       << ");\n";
  }
  os << "    }\n";
  emitReductionStores("    ");
  os << "  }\n}\n";
}

} // namespace

std::string cudaKernelSymbol(const Kernel &k) {
  char sym[40];
  std::snprintf(sym, sizeof sym, "dt_k_%016llx", (unsigned long long)kernelHash(k));
  return sym;
}

bool cudaSplitsReduction(const Kernel &k) { return k.reduce != KReduce::None && !k.deterministic; }

int cudaArgWords(const Kernel &k) {
  return (int)std::max<int64_t>(1, (int64_t)(k.inputs.size() + k.outputs.size()) + numParams(k) +
                                       (cudaSplitsReduction(k) ? 2 : 0));
}

CudaKernelSource emitCudaKernel(const Kernel &k, const std::string &symbol) {
  std::string err = verifyKernel(k);
  if (!err.empty())
    throw InternalError("emitCudaKernel: invalid kernel: " + err);
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
  // The kernel IR text as a comment: what this source implements.
  std::istringstream text(printKernel(k));
  for (std::string line; std::getline(text, line);)
    e.os << "// " << line << "\n";
  e.os << cudaPrelude() << "\n"
       << "struct dt_args {\n  dt_u64 w[" << out.argWords << "];\n};\n\n";
  e.emitBody();
  if (k.reduce == KReduce::None)
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

int64_t cudaReduceSplit(const Kernel &k, const int64_t *params, int numSMs) {
  if (!cudaSplitsReduction(k))
    return 1;
  int64_t kept = 1, red = 1;
  for (int i = 0; i < k.rank; ++i)
    (isReducedDim(k, i) ? red : kept) *= params[i];
  const int64_t target = (int64_t)std::max(numSMs, 1) * 4; // blocks to fill the machine
  if (kept <= 0 || kept >= target || red < kCudaSplitReduceMin)
    return 1;
  int64_t split = std::min((target + kept - 1) / kept, red / (kCudaSplitReduceMin / 8));
  return split >= 2 ? split : 1;
}

int64_t cudaSplitScratchBytes(const Kernel &k, const int64_t *params, int64_t split) {
  int64_t kept = 1;
  for (int i = 0; i < k.rank; ++i)
    if (!isReducedDim(k, i))
      kept *= params[i];
  return (int64_t)k.stores.size() * 8 * kept * split;
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
