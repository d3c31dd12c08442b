// This file implements the text form of the IR (the inverse of IRParser.h):
// meshes first, then functions, one instruction a line.
//
//   mesh m = [x = 3, y = 2]
//   func @main() {
//     %0:a = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3] @ m{x: shard(1), y: replicate}
//     %2:c = matmul %0, %1 : f32[2, 2] @ m{x: partial(sum), y: replicate}
//     print %2 "c"
//     return
//   }
//   func @f(%0:x: f32[T, H] @ g{t: shard(0)}) -> (f32[T, H] @ g{t: shard(0)}) { ... }
//
// Text-form decisions (all round-trip through parseIR, byte for byte):
//  * Values are `%<id>` everywhere. A definition (result, parameter, block
//    argument) may carry its source name hint right after the id with no
//    space: `%3:d`, or `%3:"any text"` for names that are not [A-Za-z0-9_.]+.
//  * Several results print as `%4, %5 = for ...` with types `: t4, t5`.
//  * Per-op attribute syntax (canonical):
//      const [[1, 2], [3, 4]] (nested by the result shape; a bare number = splat)
//      fill 1 | random normal 7 | iota dim 0 | reduce_sum %x dims [1]
//      einsum "ik,kj->ij" %a, %b | transpose %a perm [1, 0]
//      index_select %x, %ids dim 0 | index_add %b, %ids, %s dim 0
//      call @f(%1, %2) | grad @f(%1, %2) wrt [0, 1] [value_and_grad]
//      for 0 to 10 step 1 iter(%w) { ^(%9: i64[], %10: f32[4]): ... yield %11 }
//      print %3 "label" | all_gather %3 axes [0] (every collective: mesh axis indices)
//    Any attribute field an op does not use canonically (e.g. a `str` on a
//    `for`) prints in a trailing generic dict `attrs{ints [..], floats [..],
//    str "..", flag}` so nothing is ever lost.
//  * Floats print in shortest round-trip form (std::to_chars on double).
//  * Source locations print only with PrintOptions::locs, as a trailing
//    `loc(L:C)`, `loc(L:C-E)` (endCol), or `loc(F/L:C-E)` (file index != 0).
#pragma once

#include "ir/IR.h"

#include <string>

namespace dt {

struct PrintOptions {
  bool locs = false; ///< append `loc(..)` to instructions and functions
  bool names = true; ///< append source name hints `%3:d` to definitions
};

std::string printModule(const Module &m, const PrintOptions &opts = {});
std::string printFunction(const Function &f, const PrintOptions &opts = {});
/// One instruction (and its regions), indented by `indent` spaces, no final newline.
std::string printInst(const Function &f, const Inst &inst, const PrintOptions &opts = {},
                      int indent = 0);
/// A type as text; like TensorType::str() but never reads out of bounds on a
/// malformed type (prints `?` for placements without a mesh axis).
std::string printType(const TensorType &t);
/// Shortest round-trip text of a double (`1`, `0.1`, `nan`, `-inf`).
std::string printDouble(double v);
/// A double-quoted string literal with `\"`, `\\`, `\n`, `\t`, `\xHH` escapes.
std::string quoteString(const std::string &s);

} // namespace dt
