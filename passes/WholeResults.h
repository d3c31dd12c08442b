// This file implements, for deterministic mode, the return of whole values
// across calls (part of the `spmd` step, after every function is lowered).
// In deterministic mode a partial value is whole on coordinate 0 of its
// partial axes: SPMD lowering computes a reduction over a sharded dim whole
// (gathered, or tree-combined) and `local_partial` then keeps it on
// coordinate 0 and zeros elsewhere. A function that returns such a value
// (a gradient function returns every parameter's gradient this way) made its
// caller broadcast (`all_reduce`) or scatter (`reduce_scatter`) it back from
// coordinate 0, although every rank had held it whole before the return.
//
// Here, first, an elementwise op whose operands are such partial copies (or
// values with no partial axis) runs on the whole values and its result
// becomes a partial copy too: the sum of two gradient contributions is one.
// Then a callee's result that is `local_partial(x)` returns `x` itself (the
// result type loses its partial axes); each call site gets the whole value
// and re-makes the partial copy after the call for the uses that need it,
// and the caller's `all_reduce` of it becomes the whole value, its
// `reduce_scatter` a `local_slice` (no communication). What is then unused
// (the callee's `local_partial`, the re-made copy) goes.
//
// Needs: an SPMD-lowered module in deterministic mode. `main` keeps its
// results. Guarantees: the same values on every rank where they are read;
// fewer collective steps, never more.
#pragma once

#include "ir/IR.h"

namespace dt {

/// Returns the number of collective steps removed or made local.
int returnWholeResults(Module &m);

} // namespace dt
