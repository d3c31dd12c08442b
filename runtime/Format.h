// This file implements the one textual rendering of tensor values, used by
// `print`, the REPL, the test runners and error messages: nested lists
// `[[20, 14], [56, 41]]` with ", " separators, rank-0 as a bare number,
// floats in shortest round-trip form for their dtype (`20`, `0.1`, `nan`,
// `inf`, `-inf`), integers as integers, bools as `true`/`false`. Tensors with
// more than 1000 elements are summarised numpy-style: every dim longer than 6
// shows its first and last 3 entries around `...`.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"

#include <string>
#include <vector>

namespace dt {

/// Shortest round-trip text of a float (f32 precision): `20`, `0.1`, `nan`.
std::string formatF32(float v);
/// Shortest round-trip text of a double: `20`, `0.1`, `nan`, `-inf`.
std::string formatF64(double v);
/// Element `i` of `t` as text, per its dtype.
std::string formatElement(const HostTensor &t, int64_t i);

/// Nested-list text, summarised with `...` above 1000 elements.
std::string formatTensor(const HostTensor &t);
/// Nested-list text of every element (no summary).
std::string formatTensorFull(const HostTensor &t);

/// The line of a `print` (without its newline): the items its attributes
/// list (Ops.def `print`), strings as written and values formatted, joined by
/// one space. `vals[k]` is operand k's global value. InternalError when the
/// attributes are malformed.
std::string formatPrintLine(const Attrs &a, const std::vector<const HostTensor *> &vals);
/// The label of operand `k` of a line-form `print` (its source text).
std::string printItemLabel(const Attrs &a, size_t k);

} // namespace dt
