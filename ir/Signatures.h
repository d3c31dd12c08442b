// This file implements index signatures: the einsum-like description of an op
// instance from which its placement rule is derived (DESIGN.md "Sharding rules
// are derived, not hand-written").
//
// A signature names a *factor* for every dim of every operand and of the
// result (`matmul: ik,kj->ij`). Each factor has a size and a role:
//   Kept        appears in the result; sharding it shards the result dim,
//   Summed      contracted or sum-reduced; sharding it makes the result
//               partial(sum),
//   MaxReduced / MinReduced  reduced by max/min: partial(max) / partial(min),
//   Pinned      may not be sharded at all (the indexed dim of index_select,
//               the scattered dim of index_add).
// A broadcast operand dim of size 1 carries no factor (-1).
// Signatures need the operand shapes, so they are built per op instance;
// building one also checks the shapes and reports a shape error.
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <optional>
#include <string>
#include <vector>

namespace dt {

enum class FactorRole { Kept, Summed, MaxReduced, MinReduced, Pinned };

struct IndexSignature {
  std::vector<std::vector<int>> operands; ///< factor id per operand dim (-1: broadcast)
  std::vector<int> result;                ///< factor id per result dim
  std::vector<Dim> sizes;                 ///< per factor
  std::vector<FactorRole> roles;          ///< per factor
  Shape resultShape;

  int addFactor(Dim size, FactorRole role) {
    sizes.push_back(size);
    roles.push_back(role);
    return (int)sizes.size() - 1;
  }
  /// Operand dim that carries factor `f` in operand `i`, or -1.
  int dimOf(int i, int f) const;
  int resultDimOf(int f) const;
};

/// A failed shape check while building a signature.
struct ShapeError {
  DiagId id = DiagId::ShapeMismatch;
  std::vector<std::string> args;
};

/// Builds the signature of `op` on operands with `shapes` and attributes.
/// `given` is the result shape for ops whose result shape comes from the
/// program (reshape, broadcast). Returns nullopt and fills `err` on a shape
/// error. Ops without an index signature (sources, layout ops, control) are
/// not accepted here.
std::optional<IndexSignature> buildSignature(Op op, const std::vector<Shape> &shapes,
                                             const Attrs &attrs, const Shape *given,
                                             ShapeError &err);

/// numpy broadcast of two shapes; nullopt if incompatible.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// An einsum spec cut into its operands' letters and the result's, spaces
/// dropped. Without `->` the result is numpy's implicit one (the letters
/// used exactly once, sorted) and `explicitOutput` is false. Nothing is
/// checked: parseEinsum does the checker's checks, and the kernels, which
/// also run IR text (diagonals such as `ii->i`), do their own.
struct EinsumLetters {
  std::vector<std::string> inputs;
  std::string output;
  bool explicitOutput = false;
};
EinsumLetters splitEinsum(const std::string &spec);

/// Parses an einsum spec `ik,kj->ij` into per-operand letter lists and the
/// result letters; returns an error text on failure.
bool parseEinsum(const std::string &spec, std::vector<std::string> &inputs, std::string &output,
                 std::string &error);

} // namespace dt
