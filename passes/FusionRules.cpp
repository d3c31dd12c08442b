// This file implements the fusion pass's membership rules (FusionRules.h).
#include "passes/FusionRules.h"

namespace dt::fusion {

bool isElementwise(Op op) {
  OpClass c = opInfo(op).cls;
  return c == OpClass::Elementwise1 || c == OpClass::Elementwise2 || c == OpClass::Elementwise3;
}

bool isReduce(Op op) { return opInfo(op).cls == OpClass::Reduce; }

bool isPointwise(Op op) { return isElementwise(op) || op == Op::Broadcast; }

bool sameMesh(const TensorType &a, const TensorType &b) {
  if (a.isHost() || b.isHost())
    return a.isHost() && b.isHost();
  return a.mesh == b.mesh || *a.mesh == *b.mesh;
}

bool fits(const TensorType &t, const TensorType &it) {
  if (!isConcrete(t.shape) || !isConcrete(it.shape) || t.rank() > it.rank() || !sameMesh(t, it))
    return false;
  int lead = it.rank() - t.rank();
  for (int j = 0; j < t.rank(); ++j) {
    int64_t ts = t.shape[j].value, is = it.shape[j + lead].value;
    if (ts == is) {
      // A replicated dim of size 1 against a sharded one of size 1 is a
      // broadcast (ir/Infer.cpp): each rank's block holds that one index 0
      // or nothing, so the operand's index 0 is the one read.
      if (!t.isHost() && t.axesShardingDim(j) != it.axesShardingDim(j + lead) &&
          !(ts == 1 && t.axesShardingDim(j).empty()))
        return false;
    } else if (ts != 1 || (!t.isHost() && !t.axesShardingDim(j).empty())) {
      return false;
    }
  }
  return true;
}

bool sameLayoutAndShape(const TensorType &a, const TensorType &b) {
  return a.shape == b.shape && sameMesh(a, b) && (a.isHost() || a.placements == b.placements);
}

bool fusableSource(const Inst &in, const Function &f) {
  switch (in.op) {
  case Op::Fill:
    break;
  case Op::Const:
    if (in.results.size() != 1 || constCount(in.attrs, f.type(in.results[0]).dtype) != 1)
      return false;
    break;
  case Op::Random: {
    if (in.attrs.str != "normal" && in.attrs.str != "uniform")
      return false;
    if (in.operands.empty() ? in.attrs.ints.size() != 1 : in.operands.size() != 1)
      return false;
    if (in.operands.empty())
      break;
    // A run-time seed: a rank-0 integer on the device, read by the kernel.
    const TensorType &s = f.type(in.operands[0]);
    if (s.isHost() || s.rank() != 0 || s.hasPartial() ||
        (s.dtype != DType::I32 && s.dtype != DType::I64))
      return false;
    break;
  }
  case Op::Iota:
    if (in.attrs.ints.size() != 1)
      return false;
    break;
  default:
    return false;
  }
  const TensorType &t = f.type(in.results.at(0));
  if (in.op == Op::Random && t.dtype != DType::F32 && t.dtype != DType::F64)
    return false;
  return !t.hasPartial() && isConcrete(t.shape);
}

bool fusableGather(const Inst &in, const Function &f, const TensorType &it) {
  if (in.op != Op::IndexSelect || in.operands.size() != 2 || in.results.size() != 1 ||
      in.attrs.ints.size() != 1 || !in.regions.empty())
    return false;
  const TensorType &src = f.type(in.operands[0]), &ids = f.type(in.operands[1]),
                   &r = f.type(in.results[0]);
  return ids.rank() == 1 && (ids.dtype == DType::I32 || ids.dtype == DType::I64) &&
         src.rank() == r.rank() && isConcrete(src.shape) && isConcrete(ids.shape) &&
         sameLayoutAndShape(r, it) && !src.hasPartial() && !ids.hasPartial() && sameMesh(src, it) &&
         sameMesh(ids, it);
}

bool fusableReduce(const Inst &in, const Function &f) {
  if (!isReduce(in.op) || in.operands.size() != 1 || in.results.size() != 1)
    return false;
  const TensorType &x = f.type(in.operands[0]), &r = f.type(in.results[0]);
  return x.dtype == r.dtype && x.dtype != DType::Bool && isConcrete(x.shape);
}

} // namespace dt::fusion
