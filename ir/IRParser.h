// This file implements the parser of the IR's text form (see Printer.h for
// the grammar by example): a hand-written recursive-descent parser over
// characters, so that pass tests can feed IR in as text (MLIR-style) and the
// printer can be checked by round trip: print(parse(print(m))) == print(m).
//
// Coming in: any text. Going out: either a Module whose values, instructions
// and meshes are exactly those of the text (value ids are kept; the values
// vector is sized to the largest id + 1, unused ids get a default type), or
// false and an error `L:C: message`. The parser checks only what it needs to
// build the module (syntax, known ops/meshes/axes/dtypes, each id defined
// once and every used id defined somewhere); structure is the verifier's job.
// It never crashes on garbage: nesting depth, id range and mesh size are
// bounded, and every limit explains itself in the error.
#pragma once

#include "ir/IR.h"

#include <string>

namespace dt {

/// Parses a whole module (meshes, then functions). On failure returns false,
/// sets `err` to `line:col: message` and leaves `out` unspecified.
bool parseIR(const std::string &text, Module &out, std::string &err);

/// Parses one type, e.g. `f32[2, T] @ m{x: shard(0)}`, resolving the mesh in `m`.
bool parseTypeText(const std::string &text, const Module &m, TensorType &out, std::string &err);

} // namespace dt
