// This file implements sinking a call result's consumers into the callee:
// when a result of `call @g` is read only by a chain of elementwise ops (and
// `all_reduce` steps) whose other operands are the call's own arguments or
// constants (an optimizer step after `value_and_grad`: `tokens - 0.001 *
// g_tok`), the chain moves into @g, right after the returned value's
// definition, and @g returns its value instead. Fusion then puts it in the
// kernel that produced the result (the gradient), so the result is never
// written out and read back: modulation's step moves two fewer tensors of
// the tokens' size. A moved `all_reduce` of a product may then reduce the
// product's smaller operand instead (ReduceEarly.h).
//
// @g is changed in place when this is its one call site and it is not the
// program's entry (whose results the caller of the program reads); otherwise
// the call moves to a copy of @g. Needs: an SPMD-lowered module (types are
// per-rank layouts; runs at the start of the `fusion` step). Guarantees: the
// same values (the moved ops are pure and read the same values: the
// callee's parameters are the call's arguments; a moved collective runs at
// the same point of every rank's program); a function's declared result
// types follow its return.
#pragma once

#include "ir/IR.h"

#include <string>

namespace dt {

/// Sinks consumer chains into callees throughout `m`; `entry` is never
/// changed in place. Returns how many ops moved.
int sinkIntoCalls(Module &m, const std::string &entry);

} // namespace dt
