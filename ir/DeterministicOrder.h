// This file holds deterministic mode's summation order (docs/language.md,
// "Deterministic mode"), shared by SPMD lowering (which distributes a
// contraction or a sum only when every rank's shard of the summed dim is a
// whole subtree of leaves), the kernels that sum in that order (the kernel
// interpreter, the LLVM and CUDA code generators) and the products
// (runtime/BlasDeterministic.h).
//
// The order of one output's sum:
//   * the summed range splits into leaves of kDeterministicBlock consecutive
//     indices (the last one may be shorter): k of a product; the outermost
//     reduced dim of a kernel's sum, a leaf then covering its rows times all
//     inner reduced dims in row-major order;
//   * a leaf's value is one chain from zero over its indices in order (a
//     kernel's float sums in f64, rounded once at the end; a product in the
//     operands' precision with fma) -- except that a kernel sum over its
//     last dim splits the leaf into kDeterministicChains chains, chain j
//     taking the points whose last-dim index is j modulo kDeterministicChains
//     (each in row-major order from zero), and the leaf's value is the tree
//     of the chains (chainTree). The chains are what a vector register of
//     f64 accumulators holds, so such a sum vectorizes along its contiguous
//     dim instead of being one dependent add per element;
//   * the leaves combine in the fixed tree: tree(x[0..n)) is x[0] for n = 1,
//     else tree(x[0..h)) + tree(x[h..n)) with h the largest power of two
//     below n (the left subtree always the left operand).
// A rank holding an aligned run of 2^j leaves computes that subtree's node
// exactly, so the ranks' nodes combined by the same tree give the one-device
// bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt {

/// Leaves of this many consecutive indices. A constant of the mode: changing
/// it changes the bits of every deterministic sum and product.
inline constexpr int64_t kDeterministicBlock = 64;

/// Chains of a leaf of a kernel sum over its last dim (see above). A
/// constant of the mode, like kDeterministicBlock.
inline constexpr int kDeterministicChains = 8;

/// The most subtrees a tree walk holds at once: one per bit of the leaf count
/// (2^48 leaves are more elements than any buffer holds).
inline constexpr int kDeterministicDepth = 48;

/// The fixed tree walked as a binary counter: push() the leaves in order,
/// finish() gives tree(leaves) (zero for none). A finished leaf merges with
/// the stack's top while the top is a subtree of the same height, and the
/// stack then holds subtrees of strictly falling heights (the set bits of
/// the leaf count), which finish() combines right to left.
template <typename T> struct DeterministicTree {
  std::vector<T> stack;
  int64_t leaves = 0;

  void push(T v) {
    for (int64_t l = leaves++; l & 1; l >>= 1) {
      v = stack.back() + v;
      stack.pop_back();
    }
    stack.push_back(v);
  }
  T finish() const {
    if (stack.empty())
      return T(0);
    T v = stack.back();
    for (std::size_t i = stack.size() - 1; i-- > 0;)
      v = stack[i] + v;
    return v;
  }
};

/// A leaf's value from its kDeterministicChains chains: the fixed tree over
/// them, ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)).
inline double chainTree(const double *c) {
  return ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
}
static_assert(kDeterministicChains == 8, "chainTree spells the tree of 8 chains");

} // namespace dt
