// This file implements reverse-mode automatic differentiation on the global
// IR. Given a function instance and the positions of the arguments to
// differentiate, it generates a new function that returns (optionally the
// primal value and) the gradient of each chosen argument. The backward of
// every op and every placement change is derived from the placement types
// (the transpose of all-gather is a local slice or reduce-scatter, a
// replicated value consumed by sharded work gets a partial(sum) gradient, ...),
// so a gradient's placement is part of its type and shows in `emit ir`.
//
// Needs: a type-checked function whose result is one scalar float.
// Guarantees: the generated function type-checks under ir/Infer.
#pragma once

#include "support/Diagnostics.h"
#include "ir/IR.h"

#include <string>
#include <vector>

namespace dt {

/// Generates (once per request) the gradient function of `fn` with respect to
/// the arguments `wrt` and returns its name, or "" after reporting an error.
/// Its results are the primal value first when `withValue`, then one gradient
/// per `wrt` entry.
std::string differentiate(Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                          bool withValue, DiagEngine &diags, SrcLoc loc);

} // namespace dt
