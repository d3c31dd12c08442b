// This file implements reducing before a product instead of after it: an
// `all_reduce` of a matmul whose one partial(sum) operand is smaller than
// the product becomes an `all_reduce` of that operand and a matmul of whole
// values, `all_reduce(P @ R) -> all_reduce(P) @ R`. A weight gradient made
// from a partial activation gradient (modulation's `g_w = g_pss^T @ cond`:
// a [16, 512] partial against a [512, 512] product) then moves 16 rows
// instead of 512, and two products of the same partial operand share its
// one `all_reduce`.
//
// Needs: an SPMD-lowered module (runs in the `fusion` step, after
// SinkIntoCalls has moved a caller's `all_reduce` of a returned gradient next
// to the product). Guarantees: the same global values up to reassociation in
// default mode (the ranks' parts are added before the product instead of
// after); in deterministic mode the same bits (a partial value is whole on
// coordinate 0, so both forms compute the one product of the whole operand:
// docs/language.md, "Deterministic mode"). Only plain `all_reduce` steps of
// sums change (not the tree-ordered ones).
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <vector>

namespace dt {

/// Rewrites every such all_reduce of `m`; returns how many.
int reduceEarly(Module &m);

/// True when `value`, defined in the body block of `f`, is a matmul (through
/// transposes and reshapes that only it reads) whose one operand partial on
/// `axes` is no larger than the product: an `all_reduce` of it over `axes`
/// placed after it would be rewritten, or (as large) share the operand's
/// all_reduce with another product. SinkIntoCalls moves only those: another
/// all_reduce moved into a callee would only allocate its result while the
/// callee's temporaries are alive.
bool reducesEarly(const Function &f, int value, const std::vector<int64_t> &axes);
/// The same with `uses` = useCounts(f.body), for a caller that asks of one
/// function many times (SinkIntoCalls: once per result of every call).
bool reducesEarly(const Function &f, int value, const std::vector<int64_t> &axes,
                  std::map<int, int> &uses);

} // namespace dt
