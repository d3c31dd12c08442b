// This file implements the kernel IR's text form and its hash (see
// KernelIR.h): printKernel, the text the JIT and NVRTC caches compare, and
// kernelHash, FNV-1a of that text.
#include "codegen/KernelIR.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace dt {

static std::string fmtDouble(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string printKernel(const Kernel &k, bool withName) {
  std::string s = "kernel";
  if (withName)
    s += " @" + k.name;
  s += " rank " + std::to_string(k.rank);
  if (k.reduce != KReduce::None) {
    s += std::string(" reduce ") + kreduceName(k.reduce) + " dims [";
    for (size_t i = 0; i < k.reduceDims.size(); ++i)
      s += (i ? ", " : "") + std::to_string(k.reduceDims[i]);
    s += "]";
  }
  if (k.deterministic)
    s += " deterministic";
  s += "\n";
  for (size_t i = 0; i < k.inputs.size(); ++i)
    s += "  in" + std::to_string(i) + " : " + dtypeName(k.inputs[i]) +
         (k.isUniformInput((int)i) ? " uniform" : "") +
         (k.innerStrideHint((int)i) >= 0 ? " inner " + std::to_string(k.innerStrideHint((int)i))
                                         : std::string()) +
         "\n";
  for (size_t i = 0; i < k.outputs.size(); ++i)
    s += "  out" + std::to_string(i) + " : " + dtypeName(k.outputs[i]) + "\n";
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode &n = k.nodes[i];
    s += "  %" + std::to_string(i) + " = " + kopName(n.op);
    switch (n.op) {
    case KOp::Load:
      s += " in" + std::to_string(n.index);
      break;
    case KOp::Const:
      s += " " + (n.slot >= 0        ? "$" + std::to_string(n.slot)
                  : isFloat(n.dtype) ? fmtDouble(n.value)
                                     : std::to_string(n.ivalue));
      break;
    case KOp::Random:
      s += n.random == RandomKind::Normal ? " normal" : " uniform";
      s += " seed " + (n.args[0] >= 0 ? "%" + std::to_string(n.args[0])
                       : n.slot >= 0  ? "$" + std::to_string(n.slot)
                                      : std::to_string(n.seed));
      break;
    case KOp::Iota:
      s += " dim " + std::to_string(n.index);
      break;
    case KOp::Gather:
      s += " in" + std::to_string(n.index) + ", %" + std::to_string(n.args[0]) + " dim " +
           std::to_string(n.dim);
      break;
    default:
      for (int a = 0; a < kopArity(n.op); ++a)
        s += (a ? ", %" : " %") + std::to_string(n.args[a]);
    }
    s += std::string(" : ") + dtypeName(n.dtype) + "\n";
  }
  for (const KStore &st : k.stores)
    s += "  store out" + std::to_string(st.output) + ", %" + std::to_string(st.node) +
         (st.scatter() ? " scatter %" + std::to_string(st.key) + " dim " + std::to_string(st.dim)
                       : std::string()) +
         "\n";
  return s;
}

uint64_t kernelHash(const Kernel &k) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : printKernel(k, false)) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace dt
