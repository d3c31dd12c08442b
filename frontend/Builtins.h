// This file declares the builtin table: every function a program can call
// without defining it, once, with its arity, its dtype rule, the IR op whose
// type rule (ir/Infer: shapes and the placement/index signature) checks it,
// and the IRBuilder member that builds it. `IRBuilder::builtin` dispatches
// through it, "did you mean" suggests from it, and tests/unit/op_tables_test
// checks that each entry is documented in docs/language.md. Families keep
// their builders in their own Build*.cpp files.
#pragma once

#include "frontend/BuildIR.h"

#include <optional>
#include <vector>

namespace dt {

/// How a builtin's result dtype follows from its arguments (documentation
/// and tests; ir/Infer enforces the op's rule).
enum class DTypeRule {
  Same,      ///< the (common) operand dtype, numeric or any
  FloatOnly, ///< float operands only; the operand dtype
  Bool,      ///< a predicate: bool
  I64,       ///< indices: i64
  F64,       ///< a host f64 scalar
  Given,     ///< named by an argument, a file or the declared type
  NoValue,   ///< an effect: no value
};
const char *dtypeRuleName(DTypeRule r);

struct BuiltinInfo {
  const char *name;
  /// Positional arguments, checked before the builder runs (`ArgCount`);
  /// -1 when the builder checks them itself (keyword forms, variadic).
  int minArgs, maxArgs;
  DTypeRule dtype;
  /// The IR op the builtin emits, whose ir/Infer rule types it; none for
  /// builtins written as several ops (composites, effects, `grad`).
  std::optional<Op> op;
  EV (*build)(IRBuilder &b, const BuiltinInfo &info, const ast::Expr &call);
};

/// Every builtin, in a fixed order (the order "did you mean" breaks ties in).
const std::vector<BuiltinInfo> &builtinTable();
/// The builtin named `name`, or null.
const BuiltinInfo *findBuiltin(const std::string &name);
/// The keyword arguments builtin `name` accepts (`dim` of `sum`, `seed` of
/// `randn`); empty for the builtins that take none.
const std::vector<std::string> &builtinKeywords(const std::string &name);

} // namespace dt
