// This file implements `dtensorc explain`: the communication report of an
// SPMD-lowered module. It walks the program from `main` the way it runs —
// into called functions (including the gradient functions autodiff
// generates) and `for` bodies (multiplied by their trip counts) — and lists,
// per source statement, every collective step with its mesh axes, its
// from -> to layouts and the bytes the busiest rank receives
// (ir/Collectives.h's cost model), then the totals.
//
// Needs: a module after the `spmd` pipeline step. Pure: reads the module only.
#pragma once

#include "ir/IR.h"
#include "ir/Topology.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

/// One collective step as it runs.
struct ExplainEntry {
  std::string function; ///< the function holding the step
  SrcLoc loc;           ///< the statement it came from
  Op op;
  std::vector<int64_t> axes;
  TensorType from, to;
  int64_t bytes = 0;      ///< per execution, busiest rank
  int64_t count = 0;      ///< executions per run of main
  bool crossNode = false; ///< its groups hold ranks on two nodes (ir/Topology.h)
  /// `all_reduce` of deterministic mode's distributed contraction: the
  /// ranks' nodes combined in the fixed tree order (passes/SpmdLower.h)
  bool tree = false;
};

/// Every collective step reachable from `entry`, in first-execution order;
/// the same step reached again (loops, repeated calls) increments its count.
std::vector<ExplainEntry> collectCollectives(const Module &m, const std::string &entry = "main",
                                             const Topology &topo = {});

/// The report text: per statement `line L: <source line>`, one indented line
/// per step, then `total: N collectives (M communicating), B bytes per rank`.
/// With a multi-node `topo`, a step whose groups cross nodes ends in
/// `(crosses nodes)` and a last line totals the cross-node traffic.
std::string explainModule(const Module &m, const SourceManager &sources,
                          const std::string &entry = "main", const Topology &topo = {});

} // namespace dt
