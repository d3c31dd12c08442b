// This file implements fusing an `index_add` into the kernel that makes the
// rows it adds: `index_add(base, ids, x, dim 0)` whose source x is a result
// of a fusion-pass kernel, read by nothing else, becomes a member of that
// kernel (the kernel IR's scatter-add store, codegen/KernelIR.h). The rows
// are then added where they are computed instead of written out whole and
// read back: modulation's backward kernel adds `g * up * tokens` into the 16
// rows of the conditioning's gradient instead of writing f32[16384, 4096]
// for a separate index_add to read.
//
// Needs: a module after the fusion pass (passes/Fusion.h). Runs in the
// `fusion` step, after fuseModule.
// Guarantees: the same values, bit for bit, in both modes: the kernel adds
// each output element's rows in ascending source-row order, the reference
// index_add's order (a GPU's default mode may split long row lists, as its
// unfused index_add does). Only an f32/f64 index_add along dim 0 with rank-1
// i32/i64 ids, into a base of the source's rank, whose kernel has no
// reduction and no other index_add, returns only values of the source's
// type, and reads the ids (if at all) only as index_select ids along dim 0;
// its base and ids must be defined before the kernel's call, or be a fill,
// a const or a kernel call whose operands are (moved to just before it).
#pragma once

#include "ir/IR.h"

namespace dt {

/// Fuses every such index_add of `m`; returns how many.
int fuseScatters(Module &m);

} // namespace dt
