// This file implements result-type inference for every IR op: dtype rules,
// shape rules (through index signatures) and the placement rule derived from
// the signature — the heart of the placement type checker.
//
// The placement rule, per mesh axis, from the operands' placements on it:
//  * No operand partial: collect the factors the operands shard on the axis.
//    All must be the same factor f, and every operand that has f must shard
//    it there. Then f's role decides: Kept -> the result shards f's dim;
//    Summed -> partial(sum); MaxReduced/MinReduced -> partial(max/min);
//    Pinned -> a type error. No sharded factor -> replicate.
//  * Some operand partial: the op must be linear in that operand (a table,
//    `linearity()` in Infer.cpp), all partial operands must agree on the
//    reduction, and the result is partial with it.
// A failure names the operand to change and the type to relayout it to, so
// the caller can print the exact `relayout` that fixes the program.
//
// Used by the IR builder (which reports the diagnostics) and by the verifier
// (which re-infers every instruction after every pass).
#pragma once

#include "ir/IR.h"
#include "ir/Signatures.h"
#include "support/Diagnostics.h"

#include <optional>
#include <vector>

namespace dt {

struct TypeError {
  DiagId id{}; ///< always set by the checker
  std::vector<std::string> args;
  int operand = -1;                  ///< operand the fix applies to (-1: none)
  std::optional<TensorType> suggest; ///< relayout target for that operand
  std::vector<std::string> notes;
};

struct Inferred {
  std::vector<TensorType> results;
  std::optional<TypeError> error;
  bool ok() const { return !error.has_value(); }
};

/// Infers the result types of `op` on `operands`. `given` holds the declared
/// result types of ops whose result comes from the program text (sources,
/// relayout, distribute, cast, reshape, broadcast); it is ignored otherwise.
/// Control ops (call, for, yield, return, grad) are typed by the IR builder.
Inferred inferTypes(Op op, const std::vector<TensorType> &operands, const Attrs &attrs,
                    const std::vector<TensorType> &given = {});

/// The placement rule alone, for a signature and operand types (exposed for
/// unit tests and the random program generator).
Inferred derivePlacements(Op op, const IndexSignature &sig, const std::vector<TensorType> &operands,
                          const TensorType &resultBase);

/// Checks a declared layout against a shape: axes in range, one dim per axis.
std::optional<TypeError> checkLayout(const TensorType &t);

} // namespace dt
