// Internal to codegen/: the CUDA emitter's state and helpers, shared by
// CudaEmitter.cpp (dt_body, the elementwise kernel, emitCudaKernel) and
// CudaReduction.cpp (the reduction kernels and their launch geometry).
// CudaEmitter.h has the contract; nothing outside codegen/ includes this.
#pragma once

#include "codegen/CudaEmitter.h"
#include "support/Diagnostics.h"

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace dt::cudaemit {

/// The C type of a value in registers (bf16/f16 compute in float).
const char *cType(DType t);
/// The type in memory (bool is one byte; bf16/f16 are their bit patterns).
const char *memType(DType t);
/// The prelude's name suffix of a bf16/f16 conversion.
std::string lowName(DType t);
/// A value read from memory as its register value.
std::string widenMem(DType t, const std::string &e);
/// The reduction accumulator type: float sums accumulate in f64.
const char *accType(KReduce r, DType t);
/// A float literal that reads back exactly (hex), or inf/nan.
std::string hexFloat(double v, bool f32);
/// An integer literal of dtype t.
std::string intLit(int64_t v, DType t);
/// `(T)x` under the cast rules of KernelIR.h, from dtype `from` to `to`.
std::string castExpr(const std::string &x, DType from, DType to);

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
        for (int a = 0; a < nodeArity(k.nodes[i]); ++a)
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
      // A run-time seed (sign-extended) is mixed here; a constant one is folded.
      std::string mix =
          n.args[0] >= 0 ? "dt_splitmix64((dt_u64)(dt_i64)" + A(0) + ")" : std::string(ks);
      std::string e = std::string(n.random == RandomKind::Normal ? "dt_normal(" : "dt_uniform01(") +
                      mix + ", " + lin + ")";
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
    case KOp::Exp: // f32: support/FloatMath.h's, as the CPU's
      return f32 ? "dt_expf(" + A(0) + ")" : math("exp");
    case KOp::Log:
      return f32 ? "dt_logf(" + A(0) + ")" : math("log");
    case KOp::Sqrt:
      return math("sqrt");
    case KOp::Rsqrt: // 1 / sqrt(x), both IEEE-rounded (not the approximate rsqrtf)
      return "(" + one + " / " + math("sqrt") + ")";
    case KOp::Tanh:
      return f32 ? "dt_tanhf(" + A(0) + ")" : math("tanh");
    case KOp::Sigmoid:
      return f32 ? "dt_sigmoidf(" + A(0) + ")" : "(1.0 / (1.0 + exp(-" + A(0) + ")))";
    case KOp::Sin:
      return math("sin");
    case KOp::Cos:
      return math("cos");
    case KOp::Erf:
      return f32 ? "dt_erff(" + A(0) + ")" : math("erf");
    case KOp::Log1p:
      return f32 ? "dt_log1pf(" + A(0) + ")" : math("log1p");
    case KOp::Expm1:
      return f32 ? "dt_expm1f(" + A(0) + ")" : math("expm1");
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
      return fl ? "(" + A(1) + " == 2 ? " + A(0) + " * " + A(0) + " : " +
                      std::string(f32 ? "powf(" : "pow(") + A(0) + ", " + A(1) + "))"
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

  /// Input (or output) b's offset at the point held in the array `idx`.
  std::string offset(bool input, int b, const std::string &idx = "idx") const {
    std::string s = "(dt_i64)0";
    for (int d = 0; d < R; ++d)
      s += " + " + idx + "[" + std::to_string(d) + "] * " +
           (input ? inStride(b, d) : outStride(b, d));
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

  std::string bodyCall(const std::vector<std::string> &xs, const std::vector<std::string> &ys,
                       const std::string &idx = "idx") {
    std::string c = "dt_body(a, " + idx;
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
  /// A kernel with a scatter-add store (CudaScatter.cpp).
  void emitScatter(const std::string &sym);
  void emitReduction(const std::string &sym);
  /// Every output's store from its accumulator `accS` (after a reduction).
  void emitReductionStores(const char *ind);
  /// A reduction's step at point idx (CudaReduction.cpp).
  void emitPointAccumulate(const std::string &ind);
  /// The same step on given input values (the vector path's m<i>[j]).
  void emitAccumulate(const std::string &ind, const std::vector<std::string> &xs);
  /// Deterministic mode's reductions (CudaDeterministic.cpp): sums in the
  /// fixed order of ir/DeterministicOrder.h, max and min a thread per output.
  void emitDeterministicReduction(const std::string &sym, const std::vector<int> &kept,
                                  const std::vector<int> &red,
                                  const std::function<std::string(DType)> &combine,
                                  const std::function<std::string(DType)> &identity);
  /// The lane-per-chain body of a deterministic sum over the last dim
  /// (leaves shorter than the warp-per-leaf layout's).
  void emitChainLanes(const std::vector<int> &kept, const std::vector<int> &red,
                      const std::function<std::string(DType)> &identity);
  /// Opens the walk over a leaf's row segments [r, rowEnd) (o's kept
  /// indices, then idx at r and c0: point p's last-dim index is c0 + p).
  void emitLeafRows(const std::vector<int> &kept, const std::vector<int> &red);
  /// A chained layout's run node acc<s>: part[o * nsplit + chunk] when
  /// split, else output o's stores.
  void emitRunNode(const std::vector<int> &kept);
  /// The warp-per-leaf body of a deterministic sum over the last dim.
  void emitChainedLeaves(const std::vector<int> &kept, const std::vector<int> &red,
                         const std::function<std::string(DType)> &identity);
  /// The column path of a reduction whose last dim is kept (CudaEmitter.h).
  template <class Identity>
  void emitColumnReduction(const std::vector<int> &kept, const std::vector<int> &red,
                           Identity &&identity);
};

/// Output elements of `k` at `params`: the product of its kept dims.
int64_t keptPoints(const Kernel &k, const int64_t *params);

/// Deterministic mode's launch geometry (CudaDeterministic.cpp): the chunks
/// an output's sum is cut into (cudaReduceSplit), and the grid of a launch
/// with that split (1: the one-pass launch).
int64_t deterministicSplit(const Kernel &k, const int64_t *params, int numSMs);
int64_t deterministicBlocks(const Kernel &k, const int64_t *params, int64_t split);

} // namespace dt::cudaemit
