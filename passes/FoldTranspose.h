// This file implements transpose folding on the per-rank program: a
// `transpose` that swaps the last two dims of a matmul operand becomes the
// matmul's transpose flag (BLAS reads the operand transposed, no copy), and a
// transpose of a transpose becomes one transpose (none when the two cancel).
// Autodiff writes dA = g @ B^T and dB = A^T @ g, so every matmul backward had
// a copied transpose before this pass. Two more forms fold:
//  * transpose(a @ b), when the product has no other use, is b @ a with
//    both flags flipped (the gradient of `w` in `x @ transpose(w)`);
//  * check_factor(transpose(x)) feeding only a matmul (SPMD lowering's guard
//    on a partial(sum) times a replicated factor) checks `x` instead, so the
//    transpose becomes the flag;
//  * all_gather(transpose(x)) feeding only a matmul (deterministic mode
//    gathers the operands of a contraction over a sharded dim) gathers `x`
//    along the swapped dim instead, so the transpose becomes the flag.
//
// Representation: `matmul` with attrs ints [ta, tb] (0/1 each; empty = no
// transposes) is matmul(ta ? swapLast(a) : a, tb ? swapLast(b) : b), where
// swapLast swaps the last two dims of an operand of rank >= 2 (a flag on a
// 1-D operand is ignored). ir/Signatures.cpp types it; the reference
// evaluator, the local-op fallback and every Device::matmul honour it.
//
// Needs: an SPMD-lowered module (runs at the start of the `fusion` step).
// Guarantees: every rewritten matmul has the same result type and value; a
// transpose whose uses all folded away is removed; nothing else moves.
#pragma once

#include "ir/IR.h"

namespace dt {

/// Folds transposes into matmul flags and composes transposes of transposes
/// in every function of `m`. Returns how many transposes were removed.
int foldTransposes(Module &m);

} // namespace dt
