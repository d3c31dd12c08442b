// This file implements the removal of dead collectives from the per-rank
// program: a collective step (all_gather, all_reduce, reduce_scatter,
// all_to_all, slice_gather, local_slice, local_partial) whose result nothing
// reads is dropped, and so, in turn, are the steps that only fed it. SPMD
// lowering can leave such steps behind: deterministic mode moves a
// reduction's whole result to the partial type the program names and a
// relayout of that result then moves from the whole value instead (a
// `local_partial` and an `all_gather` nobody reads, one sync point each).
//
// Every rank runs the same program, so dropping a step on all of them keeps
// the collectives matched. Needs: an SPMD-lowered module (runs at the start
// of the `fusion` step, so `explain` and `emit spmd` still show the steps of
// a statement whose value is never read). Guarantees: only collectives go,
// values are unchanged.
#pragma once

#include "ir/IR.h"

namespace dt {

/// Removes dead collectives from every function of `m`; returns how many.
int removeDeadCollectives(Module &m);

} // namespace dt
