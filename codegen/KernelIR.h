// This file implements the kernel IR: the one small loop/kernel representation
// in which every rank-local kernel (elementwise chains, reductions, sources) is
// described. SPMD lowering produces it; it is lowered twice, to LLVM IR for the
// CPU (codegen/LLVMCodegen) and to CUDA C++ for NVRTC. Nothing about a
// kernel's meaning may live only in one lowering: this header is the contract,
// `interpretKernel` is its executable oracle (its arithmetic is
// codegen/ScalarOps.h, which the reference evaluator shares).
//
// A Kernel iterates over an R-dimensional iteration space (R >= 0; sizes are
// run-time values, never part of the kernel). For every point `idx` it
// evaluates a DAG of scalar nodes and stores one value per output.
//
// Run-time ABI (one C signature for every kernel, CPU and GPU alike):
//
//   void kernel(void **buffers, const int64_t *params);
//
//   buffers: inputs 0..I-1, then outputs 0..O-1 (element pointers; may be null
//            when the iteration space is empty).
//   params : shape[R]                       iteration-space sizes
//            inStride[I][R]                 per input, per dim (elements)
//            outStride[O][R]                per output, per dim (elements)
//            globalOffset[R], globalStride[R]   only if usesGlobalIndex(k)
//   Element at idx of input k is `in_k[sum_d idx[d] * inStride[k][d]]`; stride
//   0 broadcasts. Strides may be any int64 (negative ones are fine).
//   Global index (Random / Iota): g[d] = globalOffset[d] + idx[d]; the global
//   row-major linear index is sum_d g[d] * globalStride[d]. A rank passes the
//   offset of its block in the full tensor and the full tensor's row-major
//   strides, so its shard generates exactly its slice of the global tensor.
//   Outputs must not overlap the inputs or each other; an output's strides must
//   be injective on the kept (non-reduced) dims. Bool is one byte (0/1; any
//   non-zero byte reads as true). Kernels keep no state: several threads may
//   call one kernel concurrently on disjoint outputs.
//   numParams(k) = R * (1 + I + O) + (usesGlobalIndex(k) ? 2R : 0).
//   Lifted constants (the CPU JIT's form, liftConstants): a kernel whose
//   nodes have slots reads numLifted(k) more words after those,
//   params[numParams(k) + slot]: a float `const`'s value (the f64 bits of
//   kernelConstFloat) or a `random` node's seed. One compiled kernel then
//   serves every kernel that differs only in such values.
//
// Semantics of the nodes (identical to ir/IR.h; each dtype is computed in its
// own precision; f32 ops are f32 ops, never wider). bf16/f16 are storage
// types: a node of either dtype computes in f32 (operands widened exactly)
// and rounds its result once to the dtype (nearest even,
// support/LowPrecision.h); lowerings keep such values in f32 registers and
// memory holds their 16-bit patterns:
//   load in_k          : element of input k (node dtype = input dtype)
//   const v : t        : v converted to t by the `cast` rules (from f64)
//   neg abs            : numeric (not bool); ints wrap (neg/abs of INT_MIN =
//                        INT_MIN); floats flip/clear the sign bit
//   relu               : numeric; x < 0 ? 0 : x (NaN and -0 pass through)
//   exp log sqrt rsqrt tanh sin cos sigmoid erf log1p expm1 : float only
//                        (f32 via the f32 libm function, f64 via the f64
//                        one); rsqrt(x) = 1 / sqrt(x); sigmoid(x) =
//                        1 / (1 + exp(-x))
//   not                : bool only
//   cast x : t         : int->int truncates/sign-extends (two's complement);
//                        int->float rounds to nearest; float->int truncates
//                        toward zero, saturates at the int range, NaN -> 0;
//                        f64->f32 rounds to nearest; f64/int->bf16/f16
//                        round once from the exact value (round-to-odd to
//                        f32 first); x->bool is x != 0 (NaN
//                        -> true); bool->x is 0 or 1
//   add sub mul        : same dtype operands, numeric; ints wrap
//   div                : floats IEEE; ints truncate toward zero, x / 0 = 0,
//                        INT_MIN / -1 = INT_MIN (wraps)
//   floordiv mod       : numpy's floor_divide / remainder (Python's // and %):
//                        ints: q = a / b truncated, r = a - q * b; when
//                        r != 0 and r, b differ in sign, q -= 1 and r += b;
//                        x // 0 = x % 0 = 0, INT_MIN // -1 = INT_MIN (wraps),
//                        INT_MIN % -1 = 0. floats: m = fmod(a, b); when
//                        m != 0 and m, b differ in sign, m += b; m == 0 gives
//                        copysign(0, b) (mod; NaN for b = 0). floordiv: b = 0
//                        gives a / b; else d = (a - fmod(a, b)) / b, minus 1
//                        when fmod(a, b) != 0 differs in sign from b; then
//                        d != 0 gives f = floor(d), plus 1 when d - f > 0.5,
//                        and d == 0 gives copysign(0, a / b)
//   pow                : floats: a * a when b == 2 (numpy's square), else
//                        libm powf/pow; ints: exact power modulo
//                        2^bits (square-and-multiply, wraps); for a negative
//                        exponent the truncated real result (1 for base 1,
//                        +-1 for base -1, 0 otherwise; 0^negative = 0)
//   maximum(a, b)      : floats: a + b (a NaN) if either is NaN, else
//                        (a < b ? b : a); minimum: NaN as maximum, else
//                        (b < a ? b : a) (so equal values, e.g. +-0, give a);
//                        ints: the same comparisons
//   eq ne lt le gt ge  : same dtype operands, result bool; floats: ordered
//                        except ne (NaN != x is true); bool compares as 0 < 1
//   and or             : bool only
//   select(c, a, b)    : c bool; a if c else b
//   random normal|uniform seed s : f32 or f64. i = global linear index;
//                        the seed is a constant, or a run-time value: the
//                        node's operand (i32/i64, sign-extended: a uniform
//                        input's `load`), `random normal seed %n`;
//                        uniform = (float)(rngBits(s,i) >> 40) * 0x1p-24f;
//                        normal = sqrtf(-2*logf(1-u1)) * cosf(2*pi*u2) with
//                        u1 = uniform(s,2i), u2 = uniform(s,2i+1), in f32
//                        (libm logf/cosf, 2*pi rounded to f32 first); f64
//                        widens the f32 value. rngBits(s,i) =
//                        splitmix64(splitmix64(s) ^ i) as in support/Random.h
//   iota d : t         : g[d] (global index along iteration dim d) cast to t
//   gather in_k, x dim d : element of input k at idx with idx[d] replaced
//                        by x (an i32/i64 node, sign-extended):
//                        in_k[sum_d' idx[d'] * inStride[k][d'] +
//                        (x - idx[d]) * inStride[k][d]], where inStride[k][d]
//                        is the input's own stride along d (its extent
//                        there may differ from the iteration space's). The
//                        caller guarantees 0 <= x < that extent (the
//                        executor checks index_select's ids before a
//                        launch); node dtype = input dtype. An input that
//                        is gathered may not be overwritten in place.
//   store out_k, x     : out_k[idx] = x (x's dtype must be out_k's dtype)
//   store out_k, x scatter %key dim d : the scatter-add store (`index_add`
//                        fused into its source's kernel): out_k[idx with
//                        idx[d] replaced by key] += x, with key an i32/i64
//                        `load` node (the ids, read along dim d). The caller
//                        fills out_k first (index_add's base), and checks
//                        every key against out_k's extent along d (the
//                        kernel does not). Adds happen in row-major point
//                        order, so each element of out_k sums its points in
//                        ascending order of idx[d] -- the order of the
//                        reference's index_add. x is f32 or f64 (added in
//                        its own precision). out_k's stride along d is the
//                        stride of ITS dim d (its extent there differs from
//                        the iteration space's); it is never written in
//                        place over an input. A kernel with a scatter store
//                        has no reduction, and never both a scatter store
//                        and a gather along d of an input it also writes.
//
// Reduction (optional): `reduceDims` (sorted, unique iteration dims) and a
// `reduce` op (sum, max, min). Each output then receives the reduction of its
// stored value over the reduced dims; its strides on the reduced dims must be
// 0. Order: row-major over the reduced dims, but lowerings may reassociate
// (ir/IR.h allows it; a reassociated max/min may then give either zero where
// -0 and +0 tie). Identities for empty reductions: sum 0, max -inf /
// INT_MIN, min +inf / INT_MAX. Accumulators: float sums (bf16 and f16 too)
// accumulate in f64 (then round once to the output dtype), so an f32 sum of n terms has error
// ~n*2^-53 relative to the sum of magnitudes before the final rounding; int sums wrap in the output
// dtype; max/min use `maximum`/`minimum` (acc = maximum(acc, x)). Bool outputs cannot be reduced.
//
// Example (printKernel):
//   kernel @scale_add rank 2
//     in0 : f32
//     in1 : f32
//     out0 : f32
//     %0 = load in0 : f32
//     %1 = const 2 : f32
//     %2 = mul %0, %1 : f32
//     %3 = load in1 : f32
//     %4 = add %2, %3 : f32
//     store out0, %4
#pragma once

#include "ir/IR.h"
#include "ir/Types.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt {

/// The kernel IR's node list, generated from ir/Ops.def (codegen/KernelOps.def):
/// load, const, random, iota, gather, then every elementwise op of the global IR.
enum class KOp {
#define KOP(E, name, arity) E,
#include "codegen/KernelOps.def"
};
/// Number of kernel node kinds; KOp values are 0..kNumKOps-1.
constexpr int kNumKOps = 0
#define KOP(E, name, arity) +1
#include "codegen/KernelOps.def"
    ;

const char *kopName(KOp op);
int kopArity(KOp op);
struct KNode;
/// The operands `n` reads: kopArity, but 1 for a `random` with a run-time
/// seed (its args[0]).
int nodeArity(const KNode &n);
std::optional<KOp> parseKOp(const std::string &s);
/// The kernel node for a global-IR elementwise/source op (Neg..Select, Random,
/// Iota); nullopt for ops that are not kernel nodes (Const/Fill are `const`).
std::optional<KOp> kopFromOp(Op op);
bool isCompare(KOp op);        ///< eq ne lt le gt ge
bool isTranscendental(KOp op); ///< exp log sqrt rsqrt tanh sigmoid sin cos erf log1p expm1

enum class RandomKind { Uniform, Normal };
/// Kernel-level reduction; `None` means elementwise.
enum class KReduce { None, Sum, Max, Min };
const char *kreduceName(KReduce r);

/// One scalar node of the DAG. Operands refer to earlier nodes (by index), so
/// the node list is in a valid evaluation order.
struct KNode {
  KOp op = KOp::Const;
  DType dtype = DType::F32;                ///< result dtype
  std::array<int, 3> args{-1, -1, -1};     ///< operand node indices (arity many)
  int index = 0;                           ///< Load, Gather: input; Iota: iteration dim
  int dim = 0;                             ///< Gather: the iteration dim it indexes
  double value = 0;                        ///< Const of a float dtype
  int64_t ivalue = 0;                      ///< Const of an integer/bool dtype (exact)
  RandomKind random = RandomKind::Uniform; ///< Random
  uint64_t seed = 0;                       ///< Random
  /// Const (float dtype), Random: >= 0 when the value (the seed) is lifted
  /// to params[numParams(k) + slot] (liftConstants); `value`/`seed` are 0.
  int slot = -1;
};

/// `out_k <- node` (one store per output, any order); with `key` >= 0 the
/// scatter-add store `out_k[idx with idx[dim] := key] += node`.
struct KStore {
  int output = 0;
  int node = 0;
  int key = -1; ///< scatter: the i32/i64 `load` node of the ids
  int dim = 0;  ///< scatter: the iteration dim the ids run along
  bool scatter() const { return key >= 0; }
};

struct Kernel {
  std::string name = "kernel"; ///< symbol hint; not part of the hash
  int rank = 0;                ///< iteration-space rank R
  std::vector<DType> inputs;
  /// Per input: uniform (its strides are 0 on every dim, as for a rank-0
  /// value), so every point reads its one element. A lowering may read it and
  /// compute everything that depends only on uniform inputs and constants
  /// once per launch instead of once per point (loop-invariant hoisting).
  /// Empty means none is uniform.
  std::vector<bool> uniformInputs;
  /// Per input: the stride it is expected to have along the last iteration
  /// dim, 0 (broadcast there: a size-1 last dim, the ids of a gather along
  /// another dim) or 1 (contiguous), or -1 when unknown. A lowering may build
  /// its fast inner loop for the expected strides (checking them at run
  /// time: any stride stays valid). Empty means all unknown.
  std::vector<int> innerStrideHints;
  std::vector<DType> outputs;
  std::vector<KNode> nodes;
  std::vector<KStore> stores;
  KReduce reduce = KReduce::None;
  std::vector<int> reduceDims; ///< sorted, unique; empty when reduce == None
  /// Deterministic mode: the reduction order is exactly the interpreter's,
  /// never reassociated, so a result's bits depend only on the reduced extent
  /// and the inputs: float sums in f64 over leaves of kDeterministicBlock rows
  /// of reduceDims[0] (each leaf row-major over the reduced dims, in
  /// kDeterministicChains chains by last-dim index when the last dim is
  /// reduced), combined in the fixed tree of ir/DeterministicOrder.h;
  /// max/min one row-major chain.
  /// Part of the kernel text (and hash).
  bool deterministic = false;

  // Builders: append a node, infer its dtype, check operands (InternalError on
  // misuse) and return its index.
  int addInput(DType t, bool uniform = false); ///< returns the input index
  bool isUniformInput(int in) const { return in < (int)uniformInputs.size() && uniformInputs[in]; }
  int innerStrideHint(int in) const {
    return in < (int)innerStrideHints.size() ? innerStrideHints[in] : -1;
  }
  int addOutput(DType t); ///< returns the output index
  int load(int input);
  int constant(double v, DType t);     ///< integers: truncated and saturated
  int constantInt(int64_t v, DType t); ///< exact (wraps to i32 like a cast)
  int unary(KOp op, int a);
  int cast(int a, DType t);
  int binary(KOp op, int a, int b);
  int select(int c, int a, int b);
  int random(RandomKind kind, uint64_t seed, DType t);
  /// A random node whose seed is node `seedNode` (i32/i64) at run time.
  int randomSeeded(RandomKind kind, int seedNode, DType t);
  int iota(int dim, DType t);
  /// Input `input`'s element with iteration dim `dim` indexed by node `index`.
  int gather(int input, int index, int dim);
  void store(int output, int node);
  /// The scatter-add store of `node` into `output` at the ids node `key`
  /// along iteration dim `dim`.
  void scatterStore(int output, int node, int key, int dim);
  void setReduce(KReduce op, std::vector<int> dims);
};

/// Per node: true when its value is the same at every point (a constant, a
/// load of a uniform input, or an op other than random/iota whose operands
/// all are), so a lowering may compute it once per launch.
std::vector<bool> invariantNodes(const Kernel &k);

/// Per input: true when a `gather` node reads it (its elements are read at
/// other points than the one being stored: never overwritten in place);
/// with `dim` >= 0, only gathers along iteration dim `dim` count.
std::vector<bool> gatheredInputs(const Kernel &k, int dim = -1);

/// True when a node needs the global offsets/strides (Random, Iota).
bool usesGlobalIndex(const Kernel &k);

/// The kernel's scatter-add store, or null (a kernel has at most one).
const KStore *scatterStore(const Kernel &k);
/// The input the scatter store's key loads (-1 without one).
int scatterIdsInput(const Kernel &k);
/// Number of int64 params the kernel reads (see the ABI above).
int64_t numParams(const Kernel &k);
/// Number of lifted values the kernel reads after its params (max slot + 1).
int numLifted(const Kernel &k);
/// `k` with its float constants and random seeds lifted out of the kernel
/// (slots numbered in node order; their values appended to `values`, as the
/// ABI reads them): kernels that differ only in those values then print,
/// hash and compile alike. A constant that is a divisor (`div`, `floordiv`,
/// `mod`) or an operand of `pow` stays in the kernel, where the compiler
/// folds it (`x ** 2` is `x * x`, `x / 2` a multiply).
Kernel liftConstants(const Kernel &k, std::vector<int64_t> &values);
/// True when `d` is one of the kernel's reduced iteration dims.
bool isReducedDim(const Kernel &k, int d);
/// True when the kernel's float sums follow deterministic mode's leaf tree
/// (ir/DeterministicOrder.h): leaves of kDeterministicBlock rows of
/// reduceDims[0], combined in the fixed tree (integer sums: any order).
bool deterministicTreeSum(const Kernel &k);

/// True when, in addition, the last dim is reduced: a leaf's float sum is
/// then kDeterministicChains chains by last-dim index, combined by chainTree.
bool deterministicChains(const Kernel &k);

/// Checks every structural and typing rule of this header; returns an empty
/// string when valid, else the first violation.
std::string verifyKernel(const Kernel &k);

/// Readable text (see the example above). With `withName` false the header
/// omits the name: that is the text the hash and the JIT cache compare.
std::string printKernel(const Kernel &k, bool withName = true);
/// 64-bit FNV-1a of printKernel(k, false): structure + dtypes + rank, never
/// sizes or the name.
uint64_t kernelHash(const Kernel &k);

/// Assembles the params array of the ABI. `inStrides`/`outStrides` hold one
/// R-vector per input/output; `globalOffset`/`globalStrides` are needed only
/// when usesGlobalIndex(k) (empty means offset 0 and row-major of `shape`).
std::vector<int64_t> kernelParams(const Kernel &k, const std::vector<int64_t> &shape,
                                  const std::vector<std::vector<int64_t>> &inStrides,
                                  const std::vector<std::vector<int64_t>> &outStrides,
                                  const std::vector<int64_t> &globalOffset = {},
                                  const std::vector<int64_t> &globalStrides = {});

/// The reference interpreter: runs `k` element by element exactly as this
/// header defines (sequential reduction order, f64 sum accumulators). The
/// oracle of the lowerings' tests; slow.
void interpretKernel(const Kernel &k, void **buffers, const int64_t *params);

/// A `const` node's value after the cast rule: as an int (int and bool
/// dtypes) and as a double (float dtypes; f32 values are exact floats).
int64_t kernelConstInt(const KNode &n);
/// `v` as a value of integer/bool dtype `t`: truncated, saturated, NaN -> 0.
int64_t saturatingInt(double v, DType t);
double kernelConstFloat(const KNode &n);

/// The RNG of support/Random.h (these forward to it), for lowerings that need
/// the bits at compile time (the LLVM lowering pre-mixes the seed).
uint64_t kernelSplitmix64(uint64_t x);
float kernelUniform01(uint64_t seed, uint64_t i);
float kernelNormal(uint64_t seed, uint64_t i);

} // namespace dt
