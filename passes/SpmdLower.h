// This file implements SPMD lowering: it turns the global-view program into
// the program every rank runs, by making each placement change an explicit
// list of collective steps (ir/Collectives.h) chosen by the redistribution
// planner (passes/Redistribute.h).
//
// Needs: a verified module with concrete shapes in every function (the
// builder instantiates generic functions per call) and, once autodiff lands,
// `grad` already expanded into calls of generated functions (lowering walks
// every function, so gradient collectives are lowered like any other).
// Guarantees, in every function and every `for` body:
//  * no `relayout` remains: each is replaced by its planned steps, the last
//    step defining the relayout's result (an identity relayout disappears and
//    its uses read the operand);
//  * `distribute` produces the fully replicated type (every rank holds the
//    host value) and is followed by the steps to the declared layout (local
//    slices, no communication);
//  * `to_host` and `print` read a fully replicated value: a sharded operand
//    first gets the gathers it needs, so that communication is visible;
//  * every other instruction is unchanged. By the derived placement rule
//    (ir/Infer.h), each such op applied to local blocks yields the local
//    block of its result, so the module means, per rank: "run every op on
//    your block of the operands" (runtime/Executor.h).
// Inserted steps carry the source location of the instruction they came from,
// so `dtensorc explain` reports them per statement. The output still
// type-checks as a global program (the verifier re-checks every step).
#pragma once

#include "ir/IR.h"
#include "ir/Topology.h"

namespace dt {

/// Lowers every function of `m` in place; returns the number of collective
/// steps inserted. `topo`: which ranks share a node (the planner keeps
/// traffic inside nodes where it can; ir/Topology.h). With `m.deterministic`,
/// an op that reduces or contracts a dim sharded on some mesh axes computes
/// every output in the one-device order (docs/language.md, "Deterministic
/// mode"): a matmul whose k shards are whole subtrees of the fixed leaf tree
/// runs on the shards and an `all_reduce` marked `tree G` adds the ranks'
/// nodes in tree order; a reduction moves its shard to a kept dim; any other
/// op gets its operands gathered on those axes. The (whole) result moves
/// back to the partial type with `local_partial`.
int lowerToSpmd(Module &m, const Topology &topo = {});

} // namespace dt
