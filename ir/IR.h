// This file implements dtensor's typed global-view IR: SSA values whose every
// type carries dtype, shape, mesh and placements (Types.h), instructions from
// the one op table (Ops.def), blocks, functions and a module.
//
// Semantics (the global view; SPMD lowering is what makes it per-rank):
//  * Evaluation order: instructions of a block run top to bottom. A `for`
//    runs its body region ceil((hi - lo) / step) times (forTripCount; exact
//    for any int64 bounds); block arguments of the body
//    are the induction variable (i64[] host) followed by the loop-carried
//    values; `yield` passes the next iteration's values; the `for`'s results
//    are the last yielded values.
//  * Every value has a global value; placements only say how the global value
//    is stored across the ranks of its mesh. Relayout never changes a global
//    value (layout invariance). A Partial value's global value is the reduction
//    of the rank-local parts.
//  * Broadcasting (binary elementwise): numpy rules, right-aligned; a size-1
//    dim stretches. Example: `%c = add %a, %b : f32[4, 3] @ ...` with a
//    f32[4, 3] and b f32[3].
//  * Integers wrap on overflow (two's complement); integer division truncates
//    towards zero and division by zero yields 0. Integer constants are exact
//    (Const/Fill keep them in `ints`). Floats follow IEEE-754 with
//    round-to-nearest; reductions may be reassociated. `maximum`, `minimum`,
//    `reduce_max`, `reduce_min` and partial(max)/partial(min) reductions
//    propagate NaN: one NaN operand makes the result NaN.
//  * Partial values are linear maps applied per rank, so an op may take a
//    `partial` operand only where it commutes with the reduction exactly
//    (ir/Infer.cpp's linearity table, per dtype): on integers `+ - *`, sums
//    and contractions commute with a wrap-around `partial(sum)`, but integer
//    `/` does not (it truncates), nor does anything but data movement after a
//    `partial(avg)` integer (its average truncates). On floats, x * c
//    distributes over the ranks' sum for every finite c, infinite and NaN
//    parts included (inf + -inf = nan on both sides), but not for c = +-inf
//    (a rank holding a zero part gives 0 * inf = nan): `check_factor` guards
//    the factor of every partial(sum) product (mul, matmul, einsum: no
//    infinity; div: no zero divisor) and stops the program with an error
//    instead of a silently different result. Overflow of a rank's part is
//    outside this contract (as for reassociated sums).
//  * Bool is 0/1; comparisons yield bool; `and`/`or`/`not` take bool.
//  * Sources are layout-independent: `random` with seed s gives element at
//    global linear index i the value of a counter-based RNG keyed by (s, i),
//    so every layout sees the same global tensor.
//
// One line of example per op (text form, see Printer):
//   %0 = const [[1, 2], [3, 4]] : f32[2, 2] @ m{x: replicate}
//   %1 = fill 1 : f32[6, 4] @ m{x: shard(0), y: shard(1)}
//   %2 = random normal 7 : f32[4] @ m{x: replicate}
//   %3 = exp %1 : f32[6, 4] @ m{x: shard(0), y: shard(1)}
//   %4 = add %3, %3 : ...            %5 = select %c, %a, %b : ...
//   %6 = reduce_sum %1 dims [1] : f32[6] @ m{x: shard(0), y: partial(sum)}
//   %7 = matmul %a, %b : f32[2, 2] @ m{x: partial(sum), y: replicate}
//     (`attrs{ints [1, 0]}`: a read transposed, see passes/FoldTranspose.h)
//   %8 = einsum "ik,kj->ij" %a, %b : ...
//   %9 = transpose %a perm [1, 0] : ...   %10 = reshape %a : f32[6] @ ...
//   %11 = index_select %x, %ids dim 0 : ...
//   %12 = relayout %7 : f32[2, 2] @ m{x: replicate, y: replicate}
//   %13 = to_host %12 : f32[2, 2]
//   %r:2 = for 0 to 10 step 1 iter(%w, %m) { ^(%i, %w1, %m1): ... yield %w2, %m2 }
//   print %12 "d"
//   %14 = all_reduce %7 attrs{ints [0]} : f32[2, 2] @ m{x: replicate, y: replicate}
//     (collectives exist only after SPMD lowering; ints = mesh axes, see Ops.def)
#pragma once

#include "ir/Types.h"
#include "support/SourceLoc.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dt {

enum class Op {
#define OP(Enum, name, nopnds, nres, cls) Enum,
#include "ir/Ops.def"
};

enum class OpClass {
  Elementwise1,
  Elementwise2,
  Elementwise3,
  Reduce,
  Contract,
  Data,
  Layout,
  Source,
  Control,
  Effect,
  Collective
};

struct OpInfo {
  const char *name;
  int numOperands; ///< -1: variadic
  int numResults;  ///< -1: variadic
  OpClass cls;
};
const OpInfo &opInfo(Op op);
const char *opName(Op op);
/// How an op is spelled in source (`+` for add, `@` for matmul), for messages.
const char *opDisplayName(Op op);
bool parseOpName(const std::string &s, Op &out);

/// An SSA value. Owned by the Function; referred to by id.
struct Value {
  int id = -1;
  TensorType type;
  std::string name; ///< source-level name hint (may be empty)
};

struct Block;

/// Attributes of an instruction; which fields an op uses is listed in Ops.def.
struct Attrs {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string str;
  bool flag = false;
  bool operator==(const Attrs &o) const {
    return ints == o.ints && floats == o.floats && str == o.str && flag == o.flag;
  }
};

/// Const/Fill values: integer and bool dtypes keep their exact values in
/// `ints` (a double rounds integers above 2^53), float dtypes in `floats`.
inline bool constInInts(DType t) { return !isFloat(t); }
/// How many values a Const/Fill of dtype `t` holds (1 = splat).
inline size_t constCount(const Attrs &a, DType t) {
  return constInInts(t) ? a.ints.size() : a.floats.size();
}
/// Value i of a Const/Fill as a double (exact for floats and |ints| <= 2^53).
inline double constDouble(const Attrs &a, DType t, size_t i) {
  return constInInts(t) ? (double)a.ints[i] : a.floats[i];
}

/// Attrs of a one-value Const/Fill of dtype `t` holding the small number `v`
/// (integers: truncated towards zero).
inline Attrs scalarConstAttrs(double v, DType t) {
  Attrs a;
  if (constInInts(t))
    a.ints = {(int64_t)v};
  else
    a.floats = {v};
  return a;
}

/// Whether a `matmul` with attrs `a` reads operand `i` (0 or 1) with its last
/// two dims swapped: ints [ta, tb] are transpose flags set by
/// passes/FoldTranspose.h (empty: none; ignored on a 1-D operand).
inline bool matmulTransposed(const Attrs &a, int i) {
  return (int)a.ints.size() > i && a.ints[i] != 0;
}

/// The iteration count of `for lo to hi step s` (s != 0), computed without
/// overflow for any int64 bounds; iteration k has i = lo + k * s.
uint64_t forTripCount(int64_t lo, int64_t hi, int64_t step);

struct Inst {
  Op op;
  std::vector<int> operands; ///< value ids
  std::vector<int> results;  ///< value ids
  Attrs attrs;
  std::vector<Block> regions;
  SrcLoc loc;
};

struct Block {
  std::vector<int> args; ///< block arguments (value ids)
  std::vector<Inst> insts;
};

/// How many times each value is an operand in `b`, its regions included
/// (values never used are absent).
std::map<int, int> useCounts(const Block &b);

/// Calls `fn` on `b`, then on every block nested in its instructions'
/// regions (after `fn` returns: it may rewrite the block it is given).
void forEachBlock(Block &b, const std::function<void(Block &)> &fn);

struct Function {
  std::string name;
  std::vector<int> params;         ///< value ids; also the body's arguments
  std::vector<TensorType> results; ///< declared result types
  Block body;
  std::vector<Value> values; ///< indexed by id
  SrcLoc loc;

  /// Creates a new value of type `t` and returns its id.
  int newValue(const TensorType &t, const std::string &name = "");
  const TensorType &type(int id) const { return values[id].type; }
};

struct Module {
  std::vector<MeshRef> meshes;
  /// Deterministic mode (CompileOptions::deterministic; docs/language.md,
  /// "Deterministic mode"): set by the pipeline on the program's copy. SPMD
  /// lowering then computes every reduction over a sharded dim whole, the
  /// executor keeps partial values on coordinate 0 of their axes and moves
  /// them without arithmetic, and kernels reduce in one fixed order.
  bool deterministic = false;
  /// `main` holds the top-level program. A deque: adding a function never
  /// moves the others (the builder holds pointers while instantiating).
  std::deque<Function> functions;
  Function *find(const std::string &name);
  const Function *find(const std::string &name) const;
  MeshRef findMesh(const std::string &name) const;
};

} // namespace dt
