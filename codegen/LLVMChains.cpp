// This file implements deterministic mode's chained sums in the kernel IR ->
// LLVM IR lowering (codegen/LLVMLowering.h): a float sum over the last dim
// splits each leaf into kDeterministicChains chains by last-dim index
// (ir/DeterministicOrder.h), which is a vector of f64 accumulators. The loop
// of the last dim computes kDeterministicChains points side by side and adds
// them to the vector with one vector add, so the order is in the IR itself:
// no pass may reassociate it, and the SLP vectorizer makes the points' loads
// and math vector code where the inputs are unit-stride or broadcast.
#include "codegen/LLVMLowering.h"

#include "ir/DeterministicOrder.h"

namespace dt::llvmgen {

void Lowering::startChains() {
  IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  for (size_t s = chains_.size(); s < k_.stores.size(); ++s)
    chains_.push_back(treeStore(s) ? eb.CreateAlloca(chainsTy(), nullptr, "chains") : nullptr);
  for (size_t s = 0; s < k_.stores.size(); ++s)
    if (treeStore(s))
      b_.CreateStore(ConstantAggregateZero::get(chainsTy()), chains_[s]);
}

Value *Lowering::chainValue(Value *chains) {
  Value *v = b_.CreateLoad(chainsTy(), chains);
  Value *c[kDeterministicChains];
  for (int j = 0; j < kDeterministicChains; ++j)
    c[j] = b_.CreateExtractElement(v, (uint64_t)j);
  // chainTree's order.
  return b_.CreateFAdd(b_.CreateFAdd(b_.CreateFAdd(c[0], c[1]), b_.CreateFAdd(c[2], c[3])),
                       b_.CreateFAdd(b_.CreateFAdd(c[4], c[5]), b_.CreateFAdd(c[6], c[7])));
}

void Lowering::emitChainedLoop(int d, Value *n, const std::vector<Mode> &modes,
                               const Lanes &lanes) {
  const int64_t C = kDeterministicChains;
  const int L = (int)lanes.offs.size();
  // The point at trip i of lane `lane`: its nodes' values.
  auto nodesAt = [&](int lane, Value *i) {
    DimPoint p = innerPoint(d, modes, lanes.offs[lane], lanes.gls[lane], lanes.indexOf(lane, i));
    idx_ = lanes.idx[lane];
    idx_[d] = p.i;
    return emitNodes(p.off, p.gl);
  };
  // A store's value as its chain adds it (accumulate's f64 widening).
  auto wide = [&](Value *x) {
    return x->getType()->isFloatTy() ? b_.CreateFPExt(x, b_.getDoubleTy()) : x;
  };
  // Integer sums (any order) go to their accumulators as usual.
  auto other = [&](size_t s, const std::vector<Value *> &v) {
    accumulate(s, k_.outputs[k_.stores[s].output], v[k_.stores[s].node]);
  };
  Value *groups = b_.CreateUDiv(n, i64(C));
  loop(groups, [&](Value *q) {
    Value *q0 = b_.CreateMul(q, i64(C), "", true, true);
    for (int lane = 0; lane < L; ++lane) {
      std::vector<Value *> vec(k_.stores.size(), PoisonValue::get(chainsTy()));
      for (int64_t j = 0; j < C; ++j) {
        std::vector<Value *> v = nodesAt(lane, b_.CreateAdd(q0, i64(j), "", true, true));
        for (size_t s = 0; s < k_.stores.size(); ++s) {
          if (treeStore(s))
            vec[s] = b_.CreateInsertElement(vec[s], wide(v[k_.stores[s].node]), (uint64_t)j);
          else
            other(s, v);
        }
      }
      for (size_t s = 0; s < k_.stores.size(); ++s)
        if (treeStore(s)) {
          Value *p = lanes.chainAt(lane, s);
          b_.CreateStore(b_.CreateFAdd(b_.CreateLoad(chainsTy(), p), vec[s]), p);
        }
    }
  });
  Value *done = b_.CreateMul(groups, i64(C), "", true, true);
  loop(b_.CreateSub(n, done, "", true, true), [&](Value *j) {
    for (int lane = 0; lane < L; ++lane) {
      std::vector<Value *> v = nodesAt(lane, b_.CreateAdd(done, j, "", true, true));
      for (size_t s = 0; s < k_.stores.size(); ++s) {
        if (!treeStore(s)) {
          other(s, v);
          continue;
        }
        Value *p = lanes.chainAt(lane, s);
        Value *c = b_.CreateLoad(chainsTy(), p);
        Value *e = b_.CreateFAdd(b_.CreateExtractElement(c, j), wide(v[k_.stores[s].node]));
        b_.CreateStore(b_.CreateInsertElement(c, e, j), p);
      }
    }
  });
}

} // namespace dt::llvmgen
