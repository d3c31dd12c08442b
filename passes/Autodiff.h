// This file implements reverse-mode automatic differentiation on the global
// IR. Given a function instance and the positions of the arguments to
// differentiate, it generates a new function that returns (optionally the
// primal value and) the gradient of each chosen argument. The backward of
// every op and every placement change is derived from the placement types
// (the transpose of all-gather is a local slice or reduce-scatter, a
// replicated value consumed by sharded work gets a partial(sum) gradient, ...),
// so a gradient's placement is part of its type and shows in `emit ir`.
//
// The builder records `grad(f, wrt=[..])(args)` as an unexpanded `grad`
// instruction whose result types come from gradientTypes() (so type errors
// stay at build time); the pipeline's `flatten` step makes the straight-line
// copy `<f>.flat` of every differentiated function and its `autodiff` step
// replaces every `grad` by a `call` of the generated gradient function.
//
// Needs: a type-checked function whose result is one scalar float.
// Guarantees: the generated function type-checks under ir/Infer.
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <string>
#include <vector>

namespace dt {

/// Generates (once per request) the gradient function of `fn` with respect to
/// the arguments `wrt` and returns its name, or "" after reporting an error.
/// Its results are the primal value first when `withValue`, then one gradient
/// per `wrt` entry.
/// Differentiates the flat copy `<fn>.flat` when the module has one.
std::string differentiate(Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                          bool withValue, DiagEngine &diags, SrcLoc loc);

/// The `flatten` step: adds `<f>.flat` (calls inlined, loops unrolled; a
/// `grad` inside stays) for every function some `grad` of `m` differentiates.
/// False after reporting an error (a flattening over the size limit).
bool flattenGradients(Module &m, DiagEngine &diags);

/// The `autodiff` step: every `grad` of `m` becomes a `call` of its generated
/// gradient function (a `grad` inside a differentiated function is expanded
/// and inlined first); the flat copies are removed. False after reporting an
/// error.
bool expandGradients(Module &m, DiagEngine &diags);

/// For the builder: the result types of `grad` of `fn` (w.r.t. `wrt`, the
/// primal value first when `withValue`), derived by differentiating a scratch
/// copy of the functions `fn` reaches; `m` is unchanged. False after
/// reporting an error at `loc`.
bool gradientTypes(const Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                   bool withValue, DiagEngine &diags, SrcLoc loc, std::vector<TensorType> &out);

/// How autodiff treats an op of the global IR (the backward table of
/// passes/AutodiffRules.cpp): a backward rule; no gradient by definition
/// (comparisons, logic, `//`, sources); or none, for ops that never reach it
/// (control flow is flattened first, effects have no results, collectives
/// exist only after SPMD lowering), which a gradient reports as not
/// differentiable.
enum class BackwardKind { None, Rule, NoGradient };
BackwardKind backwardKind(Op op);

} // namespace dt
