// This file implements the reference evaluator's kernels: plain, obviously
// correct loops over whole (global) HostTensors, one function per op family.
// They define the numerics every backend is compared against:
//  * computation happens in the operands' dtype (f32 math in f32), except that
//    f32/f64 sums, matmuls and einsums accumulate in double for a stable oracle;
//  * integers wrap (two's complement); integer division truncates and x / 0 = 0;
//  * `maximum`/`minimum`/`reduce_max`/`reduce_min` propagate NaN (numpy);
//  * cast float -> int truncates towards zero, saturates at the integer range
//    and maps NaN to 0; int -> int wraps; anything -> bool is `!= 0`.
// Kernels never modify their inputs; outputs are fresh tensors (reshape may
// share the input's buffer, which is safe because values are immutable).
// Bad shapes that the type checker should have caught raise InternalError;
// data-dependent faults (index out of range) raise RuntimeFault.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"

#include <functional>
#include <string>
#include <vector>

namespace dt::ref {

using Dims = std::vector<int64_t>;

/// numpy broadcast of several shapes (right-aligned, size 1 stretches).
Dims broadcastShapes(const std::vector<Dims> &shapes);

HostTensor cast(const HostTensor &x, DType to);
/// Unary elementwise op (not Cast), result converted to `out`.
HostTensor unary(Op op, const HostTensor &x, DType out);
/// Binary elementwise op with broadcasting, result converted to `out`.
HostTensor binary(Op op, const HostTensor &a, const HostTensor &b, DType out);
HostTensor select(const HostTensor &c, const HostTensor &a, const HostTensor &b, DType out);
/// reduce_sum / reduce_max / reduce_min over `dims` (removed from the shape).
HostTensor reduce(Op op, const HostTensor &x, const std::vector<int64_t> &dims, DType out);
/// numpy matmul: batch dims broadcast; 1-D operands are promoted and squeezed.
HostTensor matmul(const HostTensor &a, const HostTensor &b, DType out);
/// Operand `i` of matmul `in` as the matmul reads it: transposed on its last
/// two dims when the instruction's flag says so (ir/IR.h matmulTransposed).
HostTensor matmulOperand(const HostTensor &x, const Inst &in, int i);
/// The permutation 0, 1, ..., rank-1 with its last two dims swapped (a matmul
/// transpose flag); rank >= 2.
std::vector<int64_t> lastTwoSwapped(int64_t rank);
/// General einsum over one or two operands (repeated letters = diagonals).
HostTensor einsum(const std::string &spec, const std::vector<HostTensor> &xs, DType out);
HostTensor transpose(const HostTensor &x, const std::vector<int64_t> &perm);
HostTensor reshape(const HostTensor &x, const Dims &shape);
HostTensor broadcastTo(const HostTensor &x, const Dims &shape);
/// Ids that step evenly: id0, id0 + step, id0 + 2 step, ... (a slice, a step
/// slice, a reversal, one id repeated: step 0).
struct IdProgression {
  int64_t first = -1; ///< -1: the ids do not step evenly (or there are none)
  int64_t step = 1;
  bool consecutive() const { return first >= 0 && step == 1; }
};
/// Checks every id against `bound` (checkedId's fault for the first one out
/// of range) and says whether they step evenly.
IdProgression checkedProgression(const char *op, const HostTensor &ids, int64_t dim, int64_t bound);
/// out = x[:dim] + ids.shape + x[dim+1:]; ids i32/i64, range-checked.
HostTensor indexSelect(const HostTensor &x, const HostTensor &ids, int64_t dim);
/// The shape indexSelect(x, ids, dim) returns.
std::vector<int64_t> indexSelectShape(const HostTensor &x, const HostTensor &ids, int64_t dim);
/// indexSelect into `out`, a tensor of x's dtype and indexSelectShape (the
/// cpu device passes one from its buffer cache).
void indexSelectInto(const HostTensor &x, const HostTensor &ids, int64_t dim, HostTensor &out);
/// Runs body(lo, hi) over the parts of [0, n) (a device's threads; each
/// part's range disjoint), or, empty, body(0, n) on the calling thread.
using SplitRun = std::function<void(int64_t n, const std::function<void(int64_t, int64_t)> &body)>;
/// base with src's slices added at rows ids along dim (adjoint of indexSelect).
/// indexAddInto writes it into `out` (base's dtype and shape; may be base);
/// `split` divides the dims before `dim` (each part adds into its own rows,
/// in the same order as one thread).
void indexAddInto(const HostTensor &base, const HostTensor &ids, const HostTensor &src, int64_t dim,
                  HostTensor &out, const SplitRun &split = {});
HostTensor indexAdd(const HostTensor &base, const HostTensor &ids, const HostTensor &src,
                    int64_t dim);
/// Running sums along `dim` (`reverse`: from the end, suffix sums). Floats
/// accumulate in double and round each sum once to the dtype (bf16/f16
/// included), so NaN and inf propagate forward as IEEE addition does;
/// integers wrap.
HostTensor cumsum(const HostTensor &x, int64_t dim, bool reverse);

HostTensor constant(const std::vector<double> &data, DType dt, const Dims &shape);
/// Exact integer values (1 = splat): converted like an int64 `cast`.
HostTensor constantInts(const std::vector<int64_t> &data, DType dt, const Dims &shape);
/// A Const/Fill's values (IR.h: `ints` for integer dtypes, `floats` for floats).
HostTensor constantOf(const Attrs &a, DType dt, const Dims &shape);
HostTensor fill(double v, DType dt, const Dims &shape);
/// `kind` is "normal" or "uniform"; element i gets the Random.h value for (seed, i).
HostTensor random(const std::string &kind, uint64_t seed, DType dt, const Dims &shape);
HostTensor iota(int64_t dim, DType dt, const Dims &shape);

/// `[2, 3]` for messages.
std::string dimsStr(const Dims &d);

} // namespace dt::ref
