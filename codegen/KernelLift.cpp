// This file implements liftConstants (KernelIR.h's "lifted constants"): a
// kernel's float constants and random seeds move out of the kernel into
// params words after its own, so that kernels which differ only in those
// values share one compiled function. A program that writes each layer's
// scale, each optimizer's rate or each init's seed as its own literal makes
// as many such kernels as it has literals; lifted, the CPU JIT compiles one.
//
// A constant stays in the kernel where the compiler's folding of it matters:
// a divisor (`x / 2` is a multiply, an integer `%` by a constant is cheap) and
// either operand of `pow` (`x ** 2` is `x * x`, a libm call otherwise).
// Integer and bool constants stay too: they index, shift and compare.
#include "codegen/KernelIR.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <cstring>

namespace dt {

int numLifted(const Kernel &k) {
  int n = 0;
  for (const KNode &node : k.nodes)
    n = std::max(n, node.slot + 1);
  return n;
}

namespace {

/// Per node: true when a use needs its value in the kernel (see above).
std::vector<bool> foldedUses(const Kernel &k) {
  std::vector<bool> keep(k.nodes.size(), false);
  for (const KNode &n : k.nodes) {
    switch (n.op) {
    case KOp::Div:
    case KOp::FloorDiv:
    case KOp::Mod:
      keep[n.args[1]] = true;
      break;
    case KOp::Pow:
      keep[n.args[0]] = keep[n.args[1]] = true;
      break;
    default:
      break;
    }
  }
  return keep;
}

} // namespace

Kernel liftConstants(const Kernel &k, std::vector<int64_t> &values) {
  if (numLifted(k) > 0)
    throw InternalError("liftConstants: kernel `" + k.name + "` is lifted already");
  Kernel out = k;
  const std::vector<bool> keep = foldedUses(k);
  int slot = 0;
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    KNode &n = out.nodes[i];
    if (keep[i])
      continue;
    if (n.op == KOp::Const && isFloat(n.dtype)) {
      double v = kernelConstFloat(n);
      int64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      values.push_back(bits);
      n.value = 0;
      n.ivalue = 0;
      n.slot = slot++;
    } else if (n.op == KOp::Random && n.args[0] < 0) { // a run-time seed is read already
      values.push_back((int64_t)n.seed);
      n.seed = 0;
      n.slot = slot++;
    }
  }
  return out;
}

} // namespace dt
