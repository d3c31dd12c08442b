// This file implements the fusion pass: it groups rank-local elementwise work
// into kernels. Each group — a maximal DAG of elementwise ops (unary, binary
// with broadcasting, select, cast, compares, and `broadcast` itself, which is
// the identity on a local block that broadcasts to the group's), the sources feeding it (fill,
// splat const, random, iota) and optionally one trailing reduction — is
// outlined into a kernel function `@fused.N` of the module, and the group is
// replaced by one `call @fused.N(inputs...)` at the position of its root.
//
// Representation: a kernel function is an ordinary function of the module
// (the module's function list is the kernel table), so the IR printer/parser
// round trip and the verifier need nothing new, and `--print-after=fusion`
// shows every kernel. Its body is straight-line global-IR ops ending in
// `return` of its results (the root's first); codegen/FusedKernel.h turns it into the one kernel IR
// (codegen/KernelIR.h) that both the LLVM and the CUDA lowerings consume.
// Without a JIT the executor simply runs the call (op by op, reference kernels).
//
// Needs: an SPMD-lowered module (runs after `spmd`; collectives stay outside
// kernels). Guarantees:
//  * a group's root is the last of its members in block order; every other
//    member's results are used only inside the group or, in a group without
//    a reduction, after the root (such a member is one more result of the
//    kernel: multi-output fusion, up to kMaxExtraOutputs), so moving the
//    group to the root keeps the program's meaning; an extra result has
//    exactly the iteration type's shape and placements. An earlier
//    elementwise user of a member (a sibling of the root: `u = t * b` beside
//    the root `v = t + b`) joins the group as one more result when nothing
//    before the root reads its value, so a shared producer is computed once
//    and not written out;
//  * every member and input broadcasts (numpy, right-aligned) to the group's
//    iteration type (the root's result type, or the reduction's operand type)
//    on the same mesh, and a dim that does not broadcast is sharded by the
//    same mesh axes as the iteration type's, so per-rank local blocks
//    broadcast exactly as the global shapes do;
//  * random/iota members have exactly the iteration type (their global index
//    is the iteration space's); sources with a partial placement stay outside;
//  * an `index_select` with rank-1 integer ids whose result has exactly the
//    iteration type is a member (the kernel's `gather` node reads the source
//    at the ids' rows: the gathered tensor is never written out); its source
//    and ids are inputs of the kernel that no other member reads or
//    computes, and it is never an extra output. An `index_select` read by
//    several pointwise ops or reductions is copied once per such user first,
//    so every kernel gathers for itself; copies no kernel takes are merged
//    back into one;
//  * a reduction root keeps its dtype (no bool) and has the reduced operand's
//    group feeding only it;
//  * groups hold at most kMaxFusedOps non-source ops (bounded compile time);
//  * an `index_add` is never a member here; passes/FuseScatter.h then moves
//    one whose rows a kernel computes into that kernel;
//  * a fill, const or random alone is a kernel only with
//    `FusionOptions::loneSources` (the device backends: a fill on the host
//    would be a copy to the device); on the cpu it stays on the reference
//    kernels (a kernel would only cost a compile); an iota alone is always a
//    kernel.
#pragma once

#include "ir/IR.h"

#include <string>

namespace dt {

/// Non-source ops per kernel at most: long chains split into several kernels,
/// which keeps each LLVM compile short (and the identical chunks hit the JIT
/// cache). 128 holds a 100-op loop body in one kernel (one pass over memory
/// instead of two; the LLVM lowering interleaves long bodies, so the longer
/// kernel is not latency-bound).
constexpr int kMaxFusedOps = 128;

/// What a `random` source counts towards kMaxFusedOps (other sources count
/// nothing): a normal one is a Box-Muller transform with inline f64 log and
/// cos, and LLVM's time on a kernel grows faster than its size (a chain
/// adding 130 of them compiled in 7.3 s as one kernel).
constexpr int kRandomOpWeight = 16;

/// Results of one kernel beyond its root's (multi-output fusion).
constexpr int kMaxExtraOutputs = 7;

/// Name prefix of kernel functions (`.` never appears in source identifiers).
constexpr const char *kFusedPrefix = "fused.";

/// True when `f` is a kernel function made by this pass.
bool isFusedKernel(const Function &f);
/// True when `name` names a kernel function.
bool isFusedKernelName(const std::string &name);

struct FusionOptions {
  /// Caps the non-source ops of one kernel (1: one kernel per op, no fusion).
  int maxOps = kMaxFusedOps;
  /// Make a kernel of a source that feeds no group (device backends).
  bool loneSources = false;
};

/// Fuses every function of `m` in place; returns the number of kernels made.
int fuseModule(Module &m, FusionOptions opts);
/// `maxOps` caps the ops of one kernel (1: one kernel per op, no fusion).
inline int fuseModule(Module &m, int maxOps = kMaxFusedOps) {
  return fuseModule(m, FusionOptions{maxOps, false});
}

} // namespace dt
