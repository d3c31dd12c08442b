// This file implements the reductions of the kernel IR -> LLVM IR lowering
// (codegen/LLVMLowering.h): the accumulators of a reduction kernel, the
// kept-innermost row reduction and deterministic mode's leaf tree of float
// sums (ir/DeterministicOrder.h).
#include "codegen/LLVMLowering.h"

#include "ir/DeterministicOrder.h"

#include <llvm/IR/Intrinsics.h>

namespace dt::llvmgen {

Value *Lowering::identity(DType t) {
  if (k_.reduce == KReduce::Sum)
    return Constant::getNullValue(accTyOf(t));
  bool mx = k_.reduce == KReduce::Max;
  if (isFloat(t))
    return ConstantFP::getInfinity(regTy(t), mx);
  unsigned bits = t == DType::I32 ? 32 : 64;
  return b_.getInt(mx ? APInt::getSignedMinValue(bits) : APInt::getSignedMaxValue(bits));
}

void Lowering::emitReduction(int level, const Offs &off, Value *gl) {
  IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    DType t = k_.outputs[k_.stores[s].output];
    if (acc_.size() <= s) {
      acc_.push_back(eb.CreateAlloca(accTyOf(t), nullptr, "acc"));
      accAt_.push_back(acc_.back());
    }
    if (tree_.size() <= s)
      tree_.push_back(treeStore(s)
                          ? eb.CreateAlloca(ArrayType::get(b_.getDoubleTy(), kDeterministicDepth),
                                            nullptr, "tree")
                          : nullptr);
    b_.CreateStore(identity(t), acc_[s]);
  }
  auto reduced = [&] {
    inReduction_ = true;
    emitLevel(level, off, gl);
    inReduction_ = false;
  };
  BasicBlock *treeDone = nullptr;
  if (treeSum_) {
    // One leaf (a reduced dim of at most 64 rows, a softmax or layer-norm
    // row of up to 64): the tree is the leaf itself, summed straight into
    // the accumulators (or the chains) with no stack.
    BasicBlock *oneBB = BasicBlock::Create(ctx_, "leaf.one", f_);
    BasicBlock *treeBB = BasicBlock::Create(ctx_, "leaf.tree", f_);
    treeDone = BasicBlock::Create(ctx_, "leaf.done", f_);
    Value *n = shape_[k_.reduceDims[0]];
    b_.CreateCondBr(b_.CreateICmpULE(n, i64(kDeterministicBlock)), oneBB, treeBB);
    b_.SetInsertPoint(oneBB);
    if (chained_)
      startChains();
    reduced();
    if (chained_)
      for (size_t s = 0; s < k_.stores.size(); ++s)
        if (treeStore(s))
          b_.CreateStore(chainValue(chains_[s]), acc_[s]);
    b_.CreateBr(treeDone);
    b_.SetInsertPoint(treeBB);
  }
  if (!treeSum_) {
    reduced();
  } else {
    Type *st = ArrayType::get(b_.getDoubleTy(), kDeterministicDepth);
    auto slots = [&](size_t s) {
      return [this, s, st](Value *q) { return b_.CreateInBoundsGEP(st, tree_[s], {i64(0), q}); };
    };
    startTree();
    // Whole leaves lanes_ at a time, their chains interleaved (one add's
    // latency hides behind the others'), pushed in leaf order; then the
    // rest one by one. A lane's accumulator: one f64, or its chains.
    IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
    for (size_t s = laneAcc_.size(); s < k_.stores.size(); ++s)
      laneAcc_.push_back(treeStore(s) ? eb.CreateAlloca(laneTy(), nullptr, "lanes") : nullptr);
    // L whole leaves from firstLeaf (aligned: a whole subtree), side by
    // side, combined here and pushed once as node `unit` of a counter of
    // such subtrees.
    auto group = [&](Value *firstLeaf, int L, Value *unit) {
      for (size_t s = 0; s < k_.stores.size(); ++s)
        if (treeStore(s))
          for (int lane = 0; lane < L; ++lane)
            b_.CreateStore(chained_ ? ConstantAggregateZero::get(chainsTy()) : identity(DType::F64),
                           laneAt(s, lane));
      std::vector<Offs> offs(L, off);
      std::vector<Value *> gls(L, gl);
      std::vector<std::vector<Value *>> idx(L, idx_);
      inReduction_ = true;
      emitLeafGroup(0, offs, gls, idx, firstLeaf);
      inReduction_ = false;
      pushLeaf(unit, [&](Value *merges, Value *sp) {
        for (size_t s = 0; s < k_.stores.size(); ++s)
          if (treeStore(s)) {
            std::vector<Value *> v;
            for (int lane = 0; lane < L; ++lane)
              v.push_back(chained_ ? chainValue(laneAt(s, lane))
                                   : b_.CreateLoad(b_.getDoubleTy(), laneAt(s, lane)));
            for (size_t w = 1; w < v.size(); w *= 2)
              for (size_t i = 0; i + w < v.size(); i += 2 * w)
                v[i] = b_.CreateFAdd(v[i], v[i + w]);
            treePush(slots(s), v[0], merges, sp);
          }
      });
    };
    Value *whole = b_.CreateUDiv(shape_[k_.reduceDims[0]], i64(kDeterministicBlock));
    Value *groups = b_.CreateUDiv(whole, i64(lanes_));
    loop(groups, [&](Value *g) { group(b_.CreateMul(g, i64(lanes_), "", true, true), lanes_, g); });
    Value *from = b_.CreateMul(groups, i64(lanes_), "", true, true);
    if (chained_) {
      // Chains: a pair of the rest's whole leaves side by side too (a
      // softmax row of 128 or 192); it and the leaves after it carry only
      // among themselves (the counter of pairs is even there).
      Value *pairs =
          b_.CreateZExt(b_.CreateICmpUGE(b_.CreateSub(whole, from), i64(2)), b_.getInt64Ty());
      loop(pairs, [&](Value *) { group(from, 2, b_.CreateMul(groups, i64(lanes_ / 2))); });
      from = b_.CreateAdd(from, b_.CreateMul(pairs, i64(2)));
    }
    forEachLeaf(
        from,
        [&] {
          for (size_t s = 0; s < k_.stores.size(); ++s)
            if (treeStore(s))
              b_.CreateStore(identity(DType::F64), acc_[s]);
          if (chained_)
            startChains();
          reduced();
        },
        [&](Value *merges, Value *sp) {
          for (size_t s = 0; s < k_.stores.size(); ++s)
            if (treeStore(s))
              treePush(slots(s),
                       chained_ ? chainValue(chains_[s]) : b_.CreateLoad(b_.getDoubleTy(), acc_[s]),
                       merges, sp);
        });
    Value *sp = b_.CreateLoad(b_.getInt64Ty(), treeSp_);
    for (size_t s = 0; s < k_.stores.size(); ++s)
      if (treeStore(s))
        b_.CreateStore(treeFinish(slots(s), sp), acc_[s]);
    b_.CreateBr(treeDone);
    b_.SetInsertPoint(treeDone);
  }
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    int o = k_.stores[s].output;
    DType t = k_.outputs[o];
    Value *v = accToMem(b_.CreateLoad(accTyOf(t), acc_[s]), t);
    tag(b_.CreateStore(v, addr(nIn_ + o, off[nIn_ + o])), nIn_ + o);
  }
}

void Lowering::accumulate(size_t s, DType t, Value *x) {
  Value *a = b_.CreateLoad(accTyOf(t), accAt_[s]);
  Value *r;
  if (k_.reduce == KReduce::Sum && isFloat(t)) {
    // f64 accumulation; `reassoc` lets the vectorizer split the sum,
    // except in deterministic mode (one sequential order at O0 and O2).
    r = b_.CreateFAdd(a, x->getType()->isFloatTy() ? b_.CreateFPExt(x, b_.getDoubleTy()) : x);
    if (auto *inst = dyn_cast<Instruction>(r); inst && !k_.deterministic)
      inst->setHasAllowReassoc(true);
  } else if (k_.reduce == KReduce::Sum) {
    r = b_.CreateAdd(a, x);
  } else if (isFloat(t) && !k_.deterministic) {
    // llvm.maximum/minimum: NaN-propagating as emitMaxMin, and a reduction
    // the vectorizer splits (emitMaxMin's select is not one); a tie of -0
    // and +0 gives +0 for max, -0 for min, whichever came first (default
    // mode's split reductions pick either already).
    r = b_.CreateBinaryIntrinsic(
        k_.reduce == KReduce::Max ? Intrinsic::maximum : Intrinsic::minimum, a, x);
  } else {
    r = emitMaxMin(k_.reduce == KReduce::Max, t, a, x);
  }
  b_.CreateStore(r, accAt_[s]);
}

void Lowering::startTree() {
  IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  if (!treeSp_) {
    treeSp_ = eb.CreateAlloca(b_.getInt64Ty(), nullptr, "tree.sp");
    treeTmp_ = eb.CreateAlloca(b_.getDoubleTy(), nullptr, "tree.v");
  }
  b_.CreateStore(i64(0), treeSp_);
}

void Lowering::pushLeaf(Value *l, const std::function<void(Value *, Value *)> &push) {
  // Leaf l's carries: the trailing ones of l.
  Value *merges =
      b_.CreateIntrinsic(Intrinsic::cttz, {b_.getInt64Ty()}, {b_.CreateNot(l), b_.getFalse()});
  Value *sp = b_.CreateLoad(b_.getInt64Ty(), treeSp_);
  push(merges, sp);
  b_.CreateStore(b_.CreateAdd(b_.CreateSub(sp, merges), i64(1)), treeSp_);
}

void Lowering::forEachLeaf(Value *from, const std::function<void()> &leaf,
                           const std::function<void(Value *, Value *)> &push) {
  const int d0 = k_.reduceDims[0];
  const int64_t B = kDeterministicBlock;
  Value *n = shape_[d0];
  Value *leaves = b_.CreateUDiv(b_.CreateAdd(n, i64(B - 1)), i64(B));
  loop(b_.CreateSub(leaves, from), [&](Value *i) {
    Value *l = b_.CreateAdd(from, i, "", true, true);
    Value *start = b_.CreateMul(l, i64(B), "", true, true);
    Value *rest = b_.CreateSub(n, start, "", true, true);
    rangeDim_ = d0;
    rangeStart_ = start;
    rangeLen_ = b_.CreateSelect(b_.CreateICmpSLT(rest, i64(B)), rest, i64(B));
    leaf();
    rangeDim_ = -1;
    pushLeaf(l, push);
  });
}

void Lowering::emitLeafGroup(size_t r, std::vector<Offs> &offs, std::vector<Value *> &gls,
                             std::vector<std::vector<Value *>> &idx, Value *firstLeaf) {
  const int L = (int)offs.size();
  if (r == k_.reduceDims.size()) {
    const std::vector<Value *> saved = accAt_;
    for (int lane = 0; lane < L; ++lane) {
      for (size_t s = 0; s < k_.stores.size(); ++s)
        if (treeStore(s))
          accAt_[s] = laneAt(s, lane);
      idx_ = idx[lane];
      emitPoint(offs[lane], gls[lane]);
    }
    accAt_ = saved;
    return;
  }
  const int d = k_.reduceDims[r];
  // Index i of this loop in lane `lane`: row i of leaf firstLeaf + lane for
  // the leaf dim, else i itself.
  auto indexOf = [&](int lane, Value *i) {
    if (r != 0)
      return i;
    return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(firstLeaf, i64(lane), "", true, true),
                                     i64(kDeterministicBlock), "", true, true),
                        i, "", true, true);
  };
  Value *n = r == 0 ? i64(kDeterministicBlock) : shape_[d];
  if (chained_ && d == R_ - 1) {
    Lanes lanes{offs, gls, idx, indexOf, [&](int lane, size_t s) { return laneAt(s, lane); }};
    return dispatchInner(
        d, [&](const std::vector<Mode> &modes) { emitChainedLoop(d, n, modes, lanes); });
  }
  loop(n, [&](Value *i) {
    std::vector<Offs> o2(offs);
    std::vector<Value *> g2(gls);
    std::vector<std::vector<Value *>> x2(idx);
    for (int lane = 0; lane < L; ++lane) {
      Value *at = indexOf(lane, i);
      DimPoint p = this->at(d, offs[lane], gls[lane], at);
      o2[lane] = p.off;
      g2[lane] = p.gl;
      x2[lane][d] = at;
    }
    emitLeafGroup(r + 1, o2, g2, x2, firstLeaf);
  });
}

void Lowering::treePush(const std::function<Value *(Value *)> &slot, Value *v, Value *merges,
                        Value *sp) {
  Type *f64 = b_.getDoubleTy();
  b_.CreateStore(v, treeTmp_);
  loop(merges, [&](Value *q) {
    Value *older = b_.CreateLoad(f64, slot(b_.CreateSub(b_.CreateSub(sp, i64(1)), q)));
    b_.CreateStore(b_.CreateFAdd(older, b_.CreateLoad(f64, treeTmp_)), treeTmp_);
  });
  b_.CreateStore(b_.CreateLoad(f64, treeTmp_), slot(b_.CreateSub(sp, merges)));
}

Value *Lowering::treeFinish(const std::function<Value *(Value *)> &slot, Value *sp) {
  Type *f64 = b_.getDoubleTy();
  b_.CreateStore(ConstantFP::get(f64, 0.0), treeTmp_);
  loop(sp, [&](Value *q) {
    Value *x = b_.CreateLoad(f64, slot(b_.CreateSub(b_.CreateSub(sp, i64(1)), q)));
    Value *sum = b_.CreateFAdd(x, b_.CreateLoad(f64, treeTmp_));
    b_.CreateStore(b_.CreateSelect(b_.CreateICmpEQ(q, i64(0)), x, sum), treeTmp_);
  });
  return b_.CreateLoad(f64, treeTmp_);
}

// Kept-innermost reduction: for each tile [t0, t0 + len) of the last dim, a
// row of accumulators starts at the identity, the reduced dims loop outside
// (emitRowReduced) a unit-stride loop over the tile that adds one row of the
// input into the row of accumulators, and the row is stored once. Every
// output element still sums its inputs in row-major order over the reduced
// dims; reads walk memory contiguously instead of with the row stride.
void Lowering::emitRowReduce(const Offs &off, Value *gl) {
  int last = R_ - 1;
  const int64_t T = kRowTile;
  IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  std::vector<AllocaInst *> &rows = accRows_;
  for (size_t s = rows.size(); s < k_.stores.size(); ++s) {
    DType t = k_.outputs[k_.stores[s].output];
    rows.push_back(eb.CreateAlloca(ArrayType::get(accTyOf(t), T), nullptr, "accrow"));
  }
  if (treeSum_ && treeRows_.empty()) {
    // The stacks of subtrees: rows of T, as many as the leaf count has bits
    // (the binary counter's most entries), allocated once in the entry block
    // after the parameters.
    BasicBlock &entry = f_->getEntryBlock();
    IRBuilder<> db(&entry);
    if (Instruction *term = entry.getTerminator())
      db.SetInsertPoint(term);
    Value *leaves =
        db.CreateUDiv(db.CreateAdd(shape_[k_.reduceDims[0]], i64(kDeterministicBlock - 1)),
                      i64(kDeterministicBlock));
    Value *bits =
        db.CreateSub(i64(64), db.CreateIntrinsic(Intrinsic::ctlz, {db.getInt64Ty()},
                                                 {db.CreateOr(leaves, i64(1)), db.getFalse()}));
    for (size_t s = 0; s < k_.stores.size(); ++s)
      treeRows_.push_back(
          treeStore(s) ? db.CreateAlloca(db.getDoubleTy(), db.CreateMul(bits, i64(T)), "treerows")
                       : nullptr);
  }
  accAt_.assign(k_.stores.size(), nullptr);
  auto accIn = [&](size_t s, Value *j) {
    DType t = k_.outputs[k_.stores[s].output];
    return b_.CreateInBoundsGEP(ArrayType::get(accTyOf(t), T), rows[s], {i64(0), j});
  };
  auto start = [&](size_t s, Value *len) {
    DType t = k_.outputs[k_.stores[s].output];
    loop(len, [&](Value *j) { b_.CreateStore(identity(t), accIn(s, j)); });
  };
  Value *n = shape_[last];
  Value *tiles = b_.CreateUDiv(b_.CreateAdd(n, i64(T - 1)), i64(T));
  loop(tiles, [&](Value *ti) {
    Value *t0 = b_.CreateMul(ti, i64(T), "", true, true);
    Value *rest = b_.CreateSub(n, t0, "", true, true);
    Value *len = b_.CreateSelect(b_.CreateICmpSLT(rest, i64(T)), rest, i64(T));
    for (size_t s = 0; s < k_.stores.size(); ++s)
      start(s, len);
    if (!treeSum_) {
      emitRowReduced(0, off, gl, t0, len);
    } else {
      // Deterministic mode: every accumulator of the tile walks the same
      // leaves; slot q of store s's stack is the row [q T, q T + len).
      auto slots = [&](size_t s, Value *j) {
        return [this, s, j, T](Value *q) {
          Value *e = b_.CreateAdd(b_.CreateMul(q, i64(T), "", true, true), j, "", true, true);
          return b_.CreateInBoundsGEP(b_.getDoubleTy(), treeRows_[s], e);
        };
      };
      // acc[j] = slot q[j] + acc[j] over the tile (the older subtree on the left).
      auto addRow = [&](size_t s, Value *n, auto &slotsOf, Value *q) {
        loop(n, [&](Value *j) {
          Value *older = b_.CreateLoad(b_.getDoubleTy(), slotsOf(s, j)(q));
          Value *acc = b_.CreateLoad(b_.getDoubleTy(), accIn(s, j));
          b_.CreateStore(b_.CreateFAdd(older, acc), accIn(s, j));
        });
      };
      startTree();
      forEachLeaf(
          i64(0),
          [&] {
            for (size_t s = 0; s < k_.stores.size(); ++s)
              if (treeStore(s))
                start(s, len);
            emitRowReduced(0, off, gl, t0, len);
          },
          [&](Value *merges, Value *sp) {
            // treePush for the whole row, a merge at a time (unit-stride
            // loops over the tile, which vectorize; the same adds).
            for (size_t s = 0; s < k_.stores.size(); ++s)
              if (treeStore(s)) {
                loop(merges, [&](Value *q) {
                  Value *older = b_.CreateSub(b_.CreateSub(sp, i64(1)), q);
                  addRow(s, len, slots, older);
                });
                Value *at = b_.CreateSub(sp, merges);
                loop(len, [&](Value *j) {
                  b_.CreateStore(b_.CreateLoad(b_.getDoubleTy(), accIn(s, j)), slots(s, j)(at));
                });
              }
          });
      // treeFinish for the whole row: the newest subtree, then each older
      // one added on its left (no leaves: the identities stay).
      Value *sp = b_.CreateLoad(b_.getInt64Ty(), treeSp_);
      Value *any = b_.CreateZExt(b_.CreateICmpSGT(sp, i64(0)), b_.getInt64Ty());
      for (size_t s = 0; s < k_.stores.size(); ++s)
        if (treeStore(s))
          loop(any, [&](Value *) {
            Value *top = b_.CreateSub(sp, i64(1));
            loop(len, [&](Value *j) {
              b_.CreateStore(b_.CreateLoad(b_.getDoubleTy(), slots(s, j)(top)), accIn(s, j));
            });
            loop(top, [&](Value *q) {
              addRow(s, len, slots, b_.CreateSub(top, b_.CreateAdd(q, i64(1))));
            });
          });
    }
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      int o = k_.stores[s].output, bf = nIn_ + o;
      DType t = k_.outputs[o];
      loop(len, [&](Value *j) {
        Value *v = accToMem(b_.CreateLoad(accTyOf(t), accIn(s, j)), t);
        Value *e = b_.CreateAdd(t0, j, "", true, true);
        Value *o2 = b_.CreateAdd(off[bf], b_.CreateMul(e, stride_[bf][last], "", false, true), "",
                                 false, true);
        tag(b_.CreateStore(v, addr(bf, o2)), bf);
      });
    }
  });
}

/// The reduced loops of a row reduction (reduced dim r of order_'s tail).
/// The innermost reduced dim's rows go kRowUnroll at a time to one tile
/// loop (emitRowTile), which adds them into each accumulator in row order:
/// the accumulator is read and written once per kRowUnroll rows.
void Lowering::emitRowReduced(size_t r, const Offs &off, Value *gl, Value *t0, Value *len) {
  int d = k_.reduceDims[r];
  auto point = [&](Value *i) { return at(d, off, gl, i); };
  if (r + 1 < k_.reduceDims.size()) {
    loop(extent(d), [&](Value *i0) {
      Value *i = first(d, i0);
      DimPoint p = point(i);
      idx_[d] = i;
      emitRowReduced(r + 1, p.off, p.gl, t0, len);
    });
    return;
  }
  Value *full = b_.CreateUDiv(extent(d), i64(kRowUnroll));
  loop(full, [&](Value *q) {
    std::vector<DimPoint> rows;
    for (int u = 0; u < kRowUnroll; ++u)
      rows.push_back(point(first(d, b_.CreateAdd(b_.CreateMul(q, i64(kRowUnroll), "", true, true),
                                                 i64(u), "", true, true))));
    emitRowTile(d, rows, t0, len);
  });
  Value *done = b_.CreateMul(full, i64(kRowUnroll), "", true, true);
  loop(b_.CreateSub(extent(d), done, "", true, true), [&](Value *ri) {
    emitRowTile(d, {point(first(d, b_.CreateAdd(done, ri, "", true, true)))}, t0, len);
  });
}

/// The tile loop of a row reduction: for each j of [t0, t0 + len), every
/// row of `rows` (dim d at row.i) in order into accumulator j; unit-stride
/// addresses when every used input's last stride is 1 (a run-time check),
/// strided otherwise.
void Lowering::emitRowTile(int d, const std::vector<DimPoint> &rows, Value *t0, Value *len) {
  int last = R_ - 1;
  Value *contig = b_.getTrue();
  for (int in = 0; in < nIn_; ++in)
    if (usedInput(in))
      contig = b_.CreateAnd(contig, b_.CreateICmpEQ(stride_[in][last], i64(1)));
  BasicBlock *fastBB = BasicBlock::Create(ctx_, "row.fast", f_);
  BasicBlock *slowBB = BasicBlock::Create(ctx_, "row.strided", f_);
  BasicBlock *join = BasicBlock::Create(ctx_, "row.done", f_);
  b_.CreateCondBr(contig, fastBB, slowBB);
  for (int pass = 0; pass < 2; ++pass) {
    b_.SetInsertPoint(pass == 0 ? fastBB : slowBB);
    std::vector<Offs> bases;
    for (const DimPoint &p : rows) {
      Offs base(p.off);
      for (int in = 0; in < nIn_; ++in)
        base[in] = b_.CreateAdd(p.off[in], b_.CreateMul(t0, stride_[in][last], "", false, true), "",
                                false, true);
      bases.push_back(base);
    }
    loop(len, [&](Value *j) {
      Value *e = b_.CreateAdd(t0, j, "", true, true);
      for (size_t s = 0; s < k_.stores.size(); ++s) {
        DType t = k_.outputs[k_.stores[s].output];
        accAt_[s] =
            b_.CreateInBoundsGEP(ArrayType::get(accTyOf(t), kRowTile), accRows_[s], {i64(0), j});
      }
      for (size_t u = 0; u < rows.size(); ++u) {
        Offs o2(bases[u]);
        for (int in = 0; in < nIn_; ++in)
          o2[in] = pass == 0 ? b_.CreateAdd(bases[u][in], j, "", false, true)
                             : b_.CreateAdd(bases[u][in],
                                            b_.CreateMul(j, stride_[in][last], "", false, true), "",
                                            false, true);
        Value *g2 = rows[u].gl;
        if (g2)
          g2 = b_.CreateAdd(g2, b_.CreateMul(b_.CreateAdd(gOff_[last], e), gStr_[last]));
        idx_[d] = rows[u].i;
        idx_[last] = e;
        emitPoint(o2, g2);
      }
    });
    b_.CreateBr(join);
  }
  b_.SetInsertPoint(join);
}

} // namespace dt::llvmgen
