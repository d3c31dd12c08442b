// This file implements the redistribution planner: given two types of the
// same tensor (same mesh, dtype and concrete shape) it returns the cheapest
// list of collective steps (ir/Collectives.h) that takes a value of the first
// layout to the second.
//
// Every transition of DESIGN.md is one step on a group of mesh axes:
//   shard -> replicate all_gather, partial -> replicate all_reduce,
//   partial -> shard reduce_scatter, replicate -> shard local_slice,
//   shard(i) -> shard(j) all_to_all, replicate -> partial local_partial.
// Multi-axis layouts move axis group by axis group. The planner runs a
// shortest-path search over layouts (at most a few axes, so the graph is
// small): from each layout, every step on every subset of axes that hold the
// same placement and still need to change (an axis already at its target
// placement, with an unchanged set of axes sharding its dim, is never
// touched), kept only when ir/Collectives.h accepts it — which includes
// the torch.chunk tiling check, so a dim whose set of sharding axes changes
// unevenly is gathered over its joint group and sliced again, never treated
// as nested chunks. The cost of a step is collectiveBytes() of its
// intermediate types (bytes received by the busiest rank), times the
// topology's cross-node cost when its groups span nodes; ties go to fewer
// communicating steps, then fewer steps, then a fixed order, so plans are
// deterministic. Example: partial(sum) on x + shard(0) on y -> replicate
// all-reduces on x first (on half the data), then all-gathers on y.
#pragma once

#include "ir/IR.h"
#include "ir/Topology.h"

#include <string>
#include <vector>

namespace dt {

/// One step of a plan: the collective op, the mesh axes it runs over and the
/// global type after it.
struct RedistStep {
  Op op;
  std::vector<int64_t> axes;
  TensorType to;
  int64_t bytes = 0;      ///< bytes received by the busiest rank
  bool crossNode = false; ///< some group of the step holds ranks on two nodes
};

struct RedistPlan {
  std::vector<RedistStep> steps; ///< empty when the layouts are equal
  int64_t bytes = 0;             ///< sum of the steps' bytes
};

/// The cheapest plan from `from` to `to`. With a multi-node `topo`, a step
/// whose groups cross nodes costs `topo.crossNodeCost` times its bytes, so
/// the planner moves data inside nodes first (e.g. partial on an intra- and
/// an inter-node axis: reduce-scatter inside, all-reduce across on the
/// smaller shard, all-gather inside). Throws InternalError when the types
/// differ in mesh, dtype or shape, or the shape is not concrete.
RedistPlan planRedistribution(const TensorType &from, const TensorType &to,
                              const Topology &topo = {});

/// `all_gather over y: m{x: replicate, y: shard(0)} -> m{x: replicate, y: replicate}, 8 B`
std::string describeStep(const TensorType &from, const RedistStep &step);

} // namespace dt
