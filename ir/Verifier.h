// This file implements the structural verifier of the IR, run after every
// pass in tests and debug builds (`--verify-each`) so that a broken invariant
// is reported by the pass that broke it, not by a crash three passes later.
//
// Checked invariants (each error message starts with `@function: `):
//  * value ids are in range, match their slot, and are defined exactly once;
//  * block-scoped SSA: an operand is a parameter, a block argument of the
//    current or an enclosing block, or a result defined earlier in the current
//    or an enclosing block;
//  * operand and result counts per Ops.def (einsum takes 1 or 2 operands);
//  * only `for` has regions; it has exactly one, with arguments
//    (i64[] host induction variable, loop-carried values...) whose types match
//    the initial values and the results, and ends with a matching `yield`;
//  * a function body ends with `return` matching the declared result types;
//    terminators appear only last, `yield` only in a `for` body;
//  * `call`/`grad` callees exist; call arity matches the callee;
//  * every type is well formed: host types have no placements, distributed
//    types have one placement per axis of a mesh declared in the module, shard
//    dims are in range (several axes may shard the same dim);
//  * per-op attributes are well formed (reduce dims, perm, dim, seeds, const size);
//  * per-op result types agree with ir/Infer.h's inference, when available
//    (see checkInferredTypes in Verifier.cpp).
#pragma once

#include "ir/IR.h"

#include <string>
#include <vector>

namespace dt {

struct VerifyOptions {
  /// Re-infer every non-control instruction's result types with ir/Infer.h
  /// and require them to equal the declared ones.
  bool inferTypes = true;
  /// The first `trustedInsts` instructions of the body of function
  /// `trusted` passed verification before and are unchanged (a REPL
  /// session's `main` only grows): their results are taken as defined
  /// without checking them again, so verifying an input costs what it adds.
  std::string trusted{};
  size_t trustedInsts = 0;
  /// The first `trustedFunctions` functions of the module other than
  /// `trusted` passed verification before and are unchanged (a session only
  /// appends functions; one that rolls back lowers this): they are not
  /// verified again, so a session's input costs what it adds.
  size_t trustedFunctions = 0;
};

/// Verifies every mesh and function; appends one message per broken invariant.
bool verifyModule(const Module &m, std::vector<std::string> &errors,
                  const VerifyOptions &opts = {});
/// Verifies one function of `m` (callees are looked up in `m`).
bool verifyFunction(const Module &m, const Function &f, std::vector<std::string> &errors,
                    const VerifyOptions &opts = {});
/// All errors of verifyModule joined by newlines ("" when valid); handy in tests.
std::string verifyModuleText(const Module &m, const VerifyOptions &opts = {});

} // namespace dt
