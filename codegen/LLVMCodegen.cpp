// This file implements the kernel IR -> LLVM IR lowering (see LLVMCodegen.h
// for the loop structure and the guarantees). Every node's meaning here must
// equal KernelIR.h and interpretKernel; comments name the rule where the LLVM
// instruction alone would be ambiguous (saturating casts, division by zero,
// unsigned bool compares).
#include "codegen/LLVMCodegen.h"
#include "codegen/LLVMLowering.h"

#include "support/Diagnostics.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <functional>
#include <limits>

namespace dt {

std::vector<LibmSymbol> kernelLibmSymbols() {
  using F1 = float (*)(float);
  using D1 = double (*)(double);
  using F2 = float (*)(float, float);
  using D2 = double (*)(double, double);
  return {
      {"expf", (void *)(F1)::expf}, {"exp", (void *)(D1)::exp},     {"logf", (void *)(F1)::logf},
      {"log", (void *)(D1)::log},   {"tanhf", (void *)(F1)::tanhf}, {"tanh", (void *)(D1)::tanh},
      {"sinf", (void *)(F1)::sinf}, {"sin", (void *)(D1)::sin},     {"cosf", (void *)(F1)::cosf},
      {"cos", (void *)(D1)::cos},   {"powf", (void *)(F2)::powf},   {"pow", (void *)(D2)::pow}};
}

namespace llvmgen {

Value *Lowering::tag(Instruction *i, int buf) {
  i->setMetadata(LLVMContext::MD_alias_scope, MDNode::get(ctx_, {scope_[buf]}));
  i->setMetadata(LLVMContext::MD_noalias, noalias_[buf]);
  return i;
}

void Lowering::loadParams(Value *buffers, Value *params) {
  int p = 0;
  auto next = [&] {
    return b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), params, p++));
  };
  for (int d = 0; d < R_; ++d)
    shape_.push_back(next());
  stride_.assign(nIn_ + nOut_, {});
  for (int bf = 0; bf < nIn_ + nOut_; ++bf)
    for (int d = 0; d < R_; ++d)
      stride_[bf].push_back(next());
  if (usesGlobalIndex(k_)) {
    for (int d = 0; d < R_; ++d)
      gOff_.push_back(next());
    for (int d = 0; d < R_; ++d)
      gStr_.push_back(next());
  }
  // Lifted constants follow the params (KernelIR.h): read once, here.
  lifted_.assign(numLifted(k_), nullptr);
  for (const KNode &n : k_.nodes) {
    if (n.slot < 0)
      continue;
    Value *word = b_.CreateLoad(
        b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), params, numParams(k_) + n.slot));
    if (n.op == KOp::Random)
      lifted_[n.slot] = emitSplitmix64(word);
    else if (n.dtype == DType::F64)
      lifted_[n.slot] = b_.CreateBitCast(word, b_.getDoubleTy());
    else // f32, and bf16/f16 in their f32 registers: the value is exact there
      lifted_[n.slot] = b_.CreateFPTrunc(b_.CreateBitCast(word, b_.getDoubleTy()), regTy(n.dtype));
  }
  // A scatter output's loops never advance along its dim (the ids pick the
  // element there): its stride along that dim scales the key instead.
  if (const KStore *sc = scatterStore(k_)) {
    std::vector<Value *> &st = stride_[nIn_ + sc->output];
    scatterStride_ = st[sc->dim];
    st[sc->dim] = i64(0);
  }
  for (int bf = 0; bf < nIn_ + nOut_; ++bf)
    base_.push_back(
        b_.CreateLoad(b_.getPtrTy(), b_.CreateConstGEP1_64(b_.getPtrTy(), buffers, bf)));
  MDBuilder mdb(ctx_);
  MDNode *domain = mdb.createAnonymousAliasScopeDomain("dtk.buffers");
  for (int bf = 0; bf < nIn_ + nOut_; ++bf)
    scope_.push_back(mdb.createAnonymousAliasScope(domain, "buf" + std::to_string(bf)));
  for (int bf = 0; bf < nIn_ + nOut_; ++bf) {
    std::vector<Metadata *> others;
    for (int o = 0; o < nIn_ + nOut_; ++o)
      if (o != bf)
        others.push_back(scope_[o]);
    noalias_.push_back(MDNode::get(ctx_, others));
  }
}

void Lowering::loop(Value *n, const std::function<void(Value *)> &body, int interleave) {
  IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  AllocaInst *iv = eb.CreateAlloca(b_.getInt64Ty(), nullptr, "iv");
  b_.CreateStore(i64(0), iv);
  BasicBlock *head = BasicBlock::Create(ctx_, "loop", f_);
  BasicBlock *bodyBB = BasicBlock::Create(ctx_, "body", f_);
  BasicBlock *exit = BasicBlock::Create(ctx_, "exit", f_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  Value *i = b_.CreateLoad(b_.getInt64Ty(), iv, "i");
  b_.CreateCondBr(b_.CreateICmpSLT(i, n), bodyBB, exit);
  b_.SetInsertPoint(bodyBB);
  body(i);
  b_.CreateStore(b_.CreateAdd(i, i64(1), "", true, true), iv);
  BranchInst *latch = b_.CreateBr(head);
  if (interleave > 1) {
    Metadata *count[] = {MDString::get(ctx_, "llvm.loop.interleave.count"),
                         ConstantAsMetadata::get(b_.getInt32(interleave))};
    Metadata *ops[] = {nullptr, MDNode::get(ctx_, count)};
    MDNode *md = MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    latch->setMetadata(LLVMContext::MD_loop, md);
  }
  b_.SetInsertPoint(exit);
}

void Lowering::emitLevel(int level, const Offs &off, Value *gl) {
  if (rowReduce_ && level == nKept_ - 1)
    return emitRowReduce(off, gl);
  if (k_.reduce != KReduce::None && level == nKept_ && !inReduction_)
    return emitReduction(level, off, gl);
  if (level == R_)
    return emitPoint(off, gl);
  if (level == R_ - 1)
    return emitInner(level, off, gl);
  int d = order_[level];
  loop(extent(d), [&](Value *i0) {
    Value *i = first(d, i0);
    DimPoint p = at(d, off, gl, i);
    idx_[d] = i;
    emitLevel(level + 1, p.off, p.gl);
  });
}

Lowering::DimPoint Lowering::at(int d, const Offs &off, Value *gl, Value *i) {
  DimPoint p{Offs(off.size()), gl, i};
  for (int bf = 0; bf < nIn_ + nOut_; ++bf)
    p.off[bf] =
        b_.CreateAdd(off[bf], b_.CreateMul(i, stride_[bf][d], "", false, true), "", false, true);
  if (gl)
    p.gl = b_.CreateAdd(gl, b_.CreateMul(b_.CreateAdd(gOff_[d], i), gStr_[d]));
  return p;
}

void Lowering::emitInner(int level, const Offs &off, Value *gl) {
  int d = order_[level];
  if (chained_ && inReduction_ && d == R_ - 1) {
    Lanes one{{off},
              {gl},
              {idx_},
              [&](int, Value *i) { return first(d, i); },
              [&](int, size_t s) -> Value * { return chains_[s]; }};
    return dispatchInner(
        d, [&](const std::vector<Mode> &modes) { emitChainedLoop(d, extent(d), modes, one); });
  }
  dispatchInner(d, [&](const std::vector<Mode> &modes) { emitInnerLoop(d, modes, off, gl); });
}

void Lowering::dispatchInner(int d, const std::function<void(const std::vector<Mode> &)> &variant) {
  bool ew = k_.reduce == KReduce::None;
  // Inputs with an inner stride hint get the hinted mode in the fast loop;
  // the others (`used`) are specialised over every 0/1 pattern.
  std::vector<int> used, hinted;
  for (int in = 0; in < nIn_; ++in)
    if (usedInput(in))
      (k_.innerStrideHint(in) >= 0 && d == R_ - 1 ? hinted : used).push_back(in);
  bool masks = (int)used.size() <= kMaxMaskInputs;
  // Fast when every used input's inner stride is 0 or 1 (or exactly 1 past
  // kMaxMaskInputs), every hinted one's is its hint and, elementwise, every
  // output's inner stride is 1.
  Value *fast = b_.getTrue();
  for (int in : used)
    fast = b_.CreateAnd(fast, masks ? b_.CreateICmpULE(stride_[in][d], i64(1))
                                    : b_.CreateICmpEQ(stride_[in][d], i64(1)));
  for (int in : hinted)
    fast = b_.CreateAnd(fast, b_.CreateICmpEQ(stride_[in][d], i64(k_.innerStrideHint(in))));
  if (ew)
    for (int o = 0; o < nOut_; ++o)
      fast = b_.CreateAnd(fast, b_.CreateICmpEQ(stride_[nIn_ + o][d], i64(1)));
  BasicBlock *fastBB = BasicBlock::Create(ctx_, "fast", f_);
  BasicBlock *slowBB = BasicBlock::Create(ctx_, "strided", f_);
  BasicBlock *join = BasicBlock::Create(ctx_, "inner.done", f_);
  b_.CreateCondBr(fast, fastBB, slowBB);

  std::vector<Mode> modes(nIn_ + nOut_, ew ? Mode::Contig : Mode::Bcast);
  auto hintModes = [&] {
    for (int in : hinted)
      modes[in] = k_.innerStrideHint(in) == 0 ? Mode::Bcast : Mode::Contig;
  };
  b_.SetInsertPoint(fastBB);
  if (!masks || used.empty()) {
    for (int in = 0; in < nIn_; ++in)
      modes[in] = Mode::Contig;
    hintModes();
    variant(modes);
    b_.CreateBr(join);
  } else {
    Value *mask = i64(0);
    for (size_t j = 0; j < used.size(); ++j)
      mask = b_.CreateOr(
          mask,
          b_.CreateShl(b_.CreateZExt(b_.CreateICmpEQ(stride_[used[j]][d], i64(0)), b_.getInt64Ty()),
                       (uint64_t)j));
    BasicBlock *none = BasicBlock::Create(ctx_, "unreachable", f_);
    SwitchInst *sw = b_.CreateSwitch(mask, none, 1u << used.size());
    for (unsigned m = 0; m < (1u << used.size()); ++m) {
      BasicBlock *bb = BasicBlock::Create(ctx_, "fast.m" + std::to_string(m), f_);
      sw->addCase(b_.getInt64(m), bb);
      b_.SetInsertPoint(bb);
      for (size_t j = 0; j < used.size(); ++j)
        modes[used[j]] = (m >> j) & 1 ? Mode::Bcast : Mode::Contig;
      hintModes();
      variant(modes);
      b_.CreateBr(join);
    }
    b_.SetInsertPoint(none);
    b_.CreateUnreachable();
  }
  b_.SetInsertPoint(slowBB);
  std::fill(modes.begin(), modes.end(), Mode::Strided);
  variant(modes);
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
}

int Lowering::chainInterleave() const {
  // The values a point keeps live at once (each node live from its
  // definition to its last use; a store is a use), and the loop-invariant
  // nodes it reads (broadcast constants, held in registers across the loop).
  const std::vector<bool> inv = invariantNodes(k_);
  const int n = (int)k_.nodes.size();
  std::vector<int> lastUse(n, -1);
  std::vector<bool> invUsed(n, false);
  for (int i = 0; i < n; ++i) {
    const KNode &nd = k_.nodes[i];
    for (int a = 0; a < nodeArity(nd); ++a) {
      const int j = nd.args[a];
      if (j < 0)
        continue;
      if (inv[j] && !inv[i])
        invUsed[j] = true;
      else
        lastUse[j] = std::max(lastUse[j], i);
    }
  }
  for (const KStore &st : k_.stores)
    lastUse[st.node] = n;
  int live = 0, maxLive = 1, invariants = 0;
  std::vector<int> ends(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    invariants += invUsed[i];
    live -= ends[i];
    if (!inv[i] && lastUse[i] > i) {
      ++live;
      ++ends[lastUse[i]];
    }
    maxLive = std::max(maxLive, live);
  }
  // 16 vector registers: 8 copies of a chain that keeps one or two values
  // live, else 4 (measured: the 100-op chain of bench/peers' ew100, f32[1M],
  // 2 threads, 0.80 ms a run with 4 and 0.58 ms with 8).
  return 8 * maxLive + invariants <= 14 ? 8 : 4;
}

void Lowering::emitInnerLoop(int d, const std::vector<Mode> &modes, const Offs &off, Value *gl) {
  loop(
      extent(d),
      [&](Value *i0) {
        DimPoint p = innerPoint(d, modes, off, gl, first(d, i0));
        idx_[d] = p.i;
        emitPoint(p.off, p.gl);
      },
      interleave_);
}

Lowering::DimPoint Lowering::innerPoint(int d, const std::vector<Mode> &modes, const Offs &off,
                                        Value *gl, Value *i) {
  DimPoint p{off, gl, i};
  for (int bf = 0; bf < nIn_ + nOut_; ++bf) {
    if (modes[bf] == Mode::Contig)
      p.off[bf] = b_.CreateAdd(off[bf], i, "", false, true);
    else if (modes[bf] == Mode::Strided)
      p.off[bf] =
          b_.CreateAdd(off[bf], b_.CreateMul(i, stride_[bf][d], "", false, true), "", false, true);
  }
  if (gl)
    p.gl = b_.CreateAdd(gl, b_.CreateMul(b_.CreateAdd(gOff_[d], i), gStr_[d]));
  return p;
}

void Lowering::emitPoint(const Offs &off, Value *glin) {
  std::vector<Value *> v = emitNodes(off, glin);
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    int o = k_.stores[s].output, bf = nIn_ + o;
    DType t = k_.outputs[o];
    Value *x = v[k_.stores[s].node];
    if (k_.stores[s].scatter()) { // out[key along dim] += x, in the output's precision
      Value *key = b_.CreateSExt(v[k_.stores[s].key], b_.getInt64Ty());
      Value *p = addr(bf, b_.CreateAdd(off[bf], b_.CreateMul(key, scatterStride_, "", false, true),
                                       "", false, true));
      Value *old = tag(b_.CreateLoad(memTy(t), p), bf);
      tag(b_.CreateStore(b_.CreateFAdd(old, x), p), bf);
      continue;
    }
    if (k_.reduce == KReduce::None) {
      tag(b_.CreateStore(toMem(x, t), addr(bf, off[bf])), bf);
      continue;
    }
    accumulate(s, t, x);
  }
}

// Loop-invariant nodes (a uniform input's element, constants and what only
// they feed: `pow(0.9, t)` of a bias correction) are computed once per launch,
// not per point, which also keeps libm calls out of the vectorized loops. A
// uniform input is read through a zero slot when its pointer is null (an
// empty iteration space may pass null buffers).
void Lowering::emitHoisted() {
  std::vector<bool> inv = invariantNodes(k_);
  hoisted_.assign(k_.nodes.size(), nullptr);
  std::vector<Value *> loaded(nIn_, nullptr);
  for (size_t i = 0; i < k_.nodes.size(); ++i) {
    const KNode &n = k_.nodes[i];
    if (!inv[i])
      continue;
    if (n.op == KOp::Load) {
      if (!loaded[n.index]) {
        Type *mt = memTy(n.dtype);
        IRBuilder<> eb(&f_->getEntryBlock(), f_->getEntryBlock().begin());
        AllocaInst *zero = eb.CreateAlloca(mt, nullptr, "uniform.zero");
        b_.CreateStore(Constant::getNullValue(mt), zero);
        Value *p = base_[n.index];
        Value *src = b_.CreateSelect(b_.CreateIsNull(p), zero, p);
        loaded[n.index] = fromMem(b_.CreateLoad(mt, src), n.dtype);
      }
      hoisted_[i] = loaded[n.index];
      continue;
    }
    hoisted_[i] = roundNode(n, emitNode(n, hoisted_, Offs{}, nullptr));
  }
}

std::vector<Value *> Lowering::emitNodes(const Offs &off, Value *glin) {
  std::vector<Value *> v(k_.nodes.size(), nullptr);
  std::vector<Value *> loaded(nIn_, nullptr);
  for (size_t i = 0; i < k_.nodes.size(); ++i) {
    const KNode &n = k_.nodes[i];
    if (hoisted_[i]) {
      v[i] = hoisted_[i];
      continue;
    }
    if (n.op == KOp::Load) {
      if (!loaded[n.index]) {
        auto *ld = b_.CreateLoad(memTy(n.dtype), addr(n.index, off[n.index]));
        tag(ld, n.index);
        loaded[n.index] = fromMem(ld, n.dtype);
      }
      v[i] = loaded[n.index];
      continue;
    }
    if (n.op == KOp::Gather) {
      // The running offset holds idx[dim] * stride; the gather swaps in the
      // index node's value (KernelIR.h). Every loop mode keeps `off` equal
      // to sum idx * stride, so the real stride is right in all of them.
      Value *x = b_.CreateSExt(v[n.args[0]], b_.getInt64Ty());
      Value *delta = b_.CreateMul(b_.CreateSub(x, idx_[n.dim]), stride_[n.index][n.dim]);
      auto *ld = b_.CreateLoad(memTy(n.dtype), addr(n.index, b_.CreateAdd(off[n.index], delta)));
      tag(ld, n.index);
      v[i] = fromMem(ld, n.dtype);
      continue;
    }
    v[i] = roundNode(n, emitNode(n, v, off, glin));
  }
  return v;
}

Value *Lowering::libm(const char *f32Name, const char *f64Name, DType t,
                      std::vector<Value *> args) {
  Type *ty = regTy(t);
  std::vector<Type *> params(args.size(), ty);
  FunctionCallee fc = m_.getOrInsertFunction(ty->isFloatTy() ? f32Name : f64Name,
                                             FunctionType::get(ty, params, false));
  if (auto *fn = dyn_cast<Function>(fc.getCallee())) {
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory(); // errno is never read
    fn->addFnAttr(Attribute::WillReturn);
  }
  CallInst *c = b_.CreateCall(fc, args);
  // No libcall simplification (pow(x, 2) -> x*x, pow(2, x) -> exp2): the
  // interpreter calls exactly these functions, so the results are bitwise.
  c->addFnAttr(Attribute::NoBuiltin);
  return c;
}

Value *Lowering::emitCast(Value *v, DType from, DType to) {
  if (from == to)
    return v;
  Type *ty = regTy(to);
  if (to == DType::Bool)
    return isFloat(from) ? b_.CreateFCmpUNE(v, ConstantFP::get(v->getType(), 0.0))
                         : b_.CreateICmpNE(v, ConstantInt::get(v->getType(), 0));
  if (isLowPrecision(to)) {
    // To an f32 register the caller rounds to bf16/f16: from f64 and ints
    // through f64 and round-to-odd, so the two steps are one rounding.
    if (from == DType::Bool)
      return b_.CreateUIToFP(v, ty);
    if (!isFloat(from))
      v = b_.CreateSIToFP(v, b_.getDoubleTy());
    return v->getType()->isDoubleTy() ? toFloatOdd(v) : v;
  }
  if (isFloat(from)) {
    if (isFloat(to))
      return b_.CreateFPCast(v, ty);
    // Truncates toward zero, saturates, NaN -> 0.
    return b_.CreateIntrinsic(Intrinsic::fptosi_sat, {ty, v->getType()}, {v});
  }
  if (from == DType::Bool)
    return isFloat(to) ? b_.CreateUIToFP(v, ty) : b_.CreateZExt(v, ty);
  if (isFloat(to))
    return b_.CreateSIToFP(v, ty);
  return b_.CreateSExtOrTrunc(v, ty);
}

Value *Lowering::widenBits(Value *h, DType t) {
  Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  Value *u = b_.CreateZExt(h, i32);
  if (t == DType::BF16)
    return b_.CreateBitCast(b_.CreateShl(u, 16), f32);
  auto c = [&](uint32_t x) { return b_.getInt32(x); };
  Value *sign = b_.CreateShl(b_.CreateAnd(u, c(0x8000)), 16);
  Value *e = b_.CreateAnd(b_.CreateLShr(u, 10), c(0x1f));
  Value *m = b_.CreateAnd(u, c(0x3ff));
  Value *mHigh = b_.CreateShl(m, 13);
  // Subnormal or zero: m * 2^-24, exact in f32.
  Value *sub = b_.CreateOr(
      b_.CreateBitCast(b_.CreateFMul(b_.CreateUIToFP(m, f32), ConstantFP::get(f32, 0x1p-24)), i32),
      sign);
  Value *special = b_.CreateOr(b_.CreateOr(sign, c(0x7f800000)), mHigh);
  Value *normal = b_.CreateOr(b_.CreateOr(sign, b_.CreateShl(b_.CreateAdd(e, c(112)), 23)), mHigh);
  Value *r = b_.CreateSelect(b_.CreateICmpEQ(e, c(0)), sub,
                             b_.CreateSelect(b_.CreateICmpEQ(e, c(31)), special, normal));
  return b_.CreateBitCast(r, f32);
}

Value *Lowering::narrowBits(Value *f, DType t) {
  Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  auto c = [&](uint32_t x) { return b_.getInt32(x); };
  Value *u = b_.CreateBitCast(f, i32);
  if (t == DType::BF16) {
    Value *isNan = b_.CreateFCmpUNO(f, f);
    Value *top = b_.CreateLShr(u, 16);
    Value *nan = b_.CreateSelect(b_.CreateICmpEQ(b_.CreateAnd(top, c(0x7f)), c(0)),
                                 b_.CreateOr(top, c(0x40)), top);
    Value *rne =
        b_.CreateLShr(b_.CreateAdd(b_.CreateAdd(u, c(0x7fff)), b_.CreateAnd(top, c(1))), 16);
    return b_.CreateTrunc(b_.CreateSelect(isNan, nan, rne), b_.getInt16Ty());
  }
  Value *sign = b_.CreateAnd(b_.CreateLShr(u, 16), c(0x8000));
  Value *a = b_.CreateAnd(u, c(0x7fffffff));
  Value *m = b_.CreateAnd(b_.CreateLShr(a, 13), c(0x3ff));
  Value *nan = b_.CreateOr(c(0x7c00), b_.CreateSelect(b_.CreateICmpEQ(m, c(0)), c(0x200), m));
  Value *big = b_.CreateSelect(b_.CreateICmpUGT(a, c(0x7f800000)), nan, c(0x7c00));
  // Below 2^-14: adding 0.5 puts the f16 subnormal grid on f32's last bit.
  Value *sub = b_.CreateSub(
      b_.CreateBitCast(b_.CreateFAdd(b_.CreateBitCast(a, f32), ConstantFP::get(f32, 0.5)), i32),
      c(0x3f000000));
  Value *odd = b_.CreateAnd(b_.CreateLShr(a, 13), c(1));
  Value *norm = b_.CreateLShr(b_.CreateAdd(b_.CreateAdd(a, c(0xc8000fff)), odd), 13);
  Value *o = b_.CreateSelect(b_.CreateICmpUGE(a, c(0x47800000)), big,
                             b_.CreateSelect(b_.CreateICmpULT(a, c(0x38800000)), sub, norm));
  return b_.CreateTrunc(b_.CreateOr(o, sign), b_.getInt16Ty());
}

Value *Lowering::toFloatOdd(Value *d) {
  Type *f32 = b_.getFloatTy(), *i32 = b_.getInt32Ty();
  Value *f = b_.CreateFPTrunc(d, f32);
  Value *back = b_.CreateFPExt(f, b_.getDoubleTy());
  Value *keep = b_.CreateOr(b_.CreateFCmpOEQ(back, d), b_.CreateFCmpUNO(d, d));
  Value *u = b_.CreateBitCast(f, i32);
  Value *away = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(Intrinsic::fabs, back),
                                 b_.CreateUnaryIntrinsic(Intrinsic::fabs, d));
  Value *t = b_.CreateSelect(away, b_.CreateSub(u, b_.getInt32(1)), u);
  Value *odd = b_.CreateBitCast(b_.CreateOr(t, b_.getInt32(1)), f32);
  return b_.CreateSelect(keep, f, odd);
}

Value *Lowering::emitMaxMin(bool isMax, DType t, Value *a, Value *c) {
  if (!isFloat(t)) {
    Value *lt = isMax ? b_.CreateICmpSLT(a, c) : b_.CreateICmpSLT(c, a);
    return b_.CreateSelect(lt, c, a);
  }
  // NaN in either -> a + b; else maximum = a < b ? b : a, minimum = b < a ? b : a.
  Value *lt = isMax ? b_.CreateFCmpOLT(a, c) : b_.CreateFCmpOLT(c, a);
  Value *pick = b_.CreateSelect(lt, c, a);
  return b_.CreateSelect(b_.CreateFCmpUNO(a, c), b_.CreateFAdd(a, c), pick);
}

// `%` and `//` on floats, step by step as floorDivF/modF (codegen/FloorMod.h).
Value *Lowering::emitFloorModF(bool mod, Value *a, Value *c) {
  Type *ty = a->getType();
  Value *zero = ConstantFP::get(ty, 0.0), *one = ConstantFP::get(ty, 1.0);
  Value *m = b_.CreateFRem(a, c);
  Value *signsDiffer = b_.CreateXor(b_.CreateFCmpOLT(c, zero), b_.CreateFCmpOLT(m, zero));
  Value *adjust = b_.CreateAnd(b_.CreateFCmpUNE(m, zero), signsDiffer);
  if (mod) {
    Value *r = b_.CreateSelect(adjust, b_.CreateFAdd(m, c), m);
    Value *signedZero = b_.CreateBinaryIntrinsic(Intrinsic::copysign, zero, c);
    return b_.CreateSelect(b_.CreateFCmpUNE(m, zero), r, signedZero);
  }
  Value *q = b_.CreateFDiv(a, c);
  Value *d = b_.CreateFDiv(b_.CreateFSub(a, m), c);
  d = b_.CreateSelect(adjust, b_.CreateFSub(d, one), d);
  Value *f = b_.CreateUnaryIntrinsic(Intrinsic::floor, d);
  f = b_.CreateSelect(b_.CreateFCmpOGT(b_.CreateFSub(d, f), ConstantFP::get(ty, 0.5)),
                      b_.CreateFAdd(f, one), f);
  Value *r = b_.CreateSelect(b_.CreateFCmpOEQ(d, zero),
                             b_.CreateBinaryIntrinsic(Intrinsic::copysign, zero, q), f);
  return b_.CreateSelect(b_.CreateFCmpOEQ(c, zero), q, r);
}

// `%` and `//` on ints as floorDivI/modI: x // 0 = x % 0 = 0; a divisor of -1
// is handled apart (INT_MIN / -1 would trap).
Value *Lowering::emitFloorModI(bool mod, Value *a, Value *c) {
  Type *ty = a->getType();
  Value *zero = ConstantInt::get(ty, 0), *one = ConstantInt::get(ty, 1);
  Value *isZero = b_.CreateICmpEQ(c, zero),
        *isM1 = b_.CreateICmpEQ(c, ConstantInt::get(ty, -1, true));
  Value *safe = b_.CreateSelect(b_.CreateOr(isZero, isM1), one, c);
  Value *q = b_.CreateSDiv(a, safe), *r = b_.CreateSRem(a, safe);
  Value *adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                               b_.CreateXor(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
  if (mod)
    return b_.CreateSelect(b_.CreateOr(isZero, isM1), zero,
                           b_.CreateSelect(adjust, b_.CreateAdd(r, c), r));
  Value *fq = b_.CreateSelect(adjust, b_.CreateSub(q, one), q);
  return b_.CreateSelect(isZero, zero, b_.CreateSelect(isM1, b_.CreateSub(zero, a), fq));
}

Value *Lowering::emitIntPow(DType t, Value *base, Value *e) {
  unsigned bits = t == DType::I32 ? 32 : 64;
  Type *ty = regTy(t);
  Value *one = ConstantInt::get(ty, 1), *r = one, *x = base;
  // Square-and-multiply over the exponent's non-sign bits, branch-free.
  for (unsigned j = 0; j + 1 < bits; ++j) {
    Value *bit = b_.CreateICmpNE(b_.CreateAnd(b_.CreateLShr(e, j), one), ConstantInt::get(ty, 0));
    r = b_.CreateSelect(bit, b_.CreateMul(r, x), r);
    if (j + 2 < bits)
      x = b_.CreateMul(x, x);
  }
  Value *minus1 = ConstantInt::get(ty, -1, true), *zero = ConstantInt::get(ty, 0);
  Value *odd = b_.CreateICmpNE(b_.CreateAnd(e, one), zero);
  Value *negRes = b_.CreateSelect(
      b_.CreateICmpEQ(base, one), one,
      b_.CreateSelect(b_.CreateICmpEQ(base, minus1), b_.CreateSelect(odd, minus1, one), zero));
  return b_.CreateSelect(b_.CreateICmpSLT(e, zero), negRes, r);
}

Value *Lowering::emitSplitmix64(Value *x) {
  x = b_.CreateAdd(x, b_.getInt64(0x9E3779B97F4A7C15ull));
  x = b_.CreateMul(b_.CreateXor(x, b_.CreateLShr(x, 30)), b_.getInt64(0xBF58476D1CE4E5B9ull));
  x = b_.CreateMul(b_.CreateXor(x, b_.CreateLShr(x, 27)), b_.getInt64(0x94D049BB133111EBull));
  return b_.CreateXor(x, b_.CreateLShr(x, 31));
}

Value *Lowering::emitUniform(Value *mixed, Value *ctr) {
  Value *x = emitSplitmix64(b_.CreateXor(mixed, ctr));
  Value *f = b_.CreateUIToFP(b_.CreateLShr(x, 40), b_.getFloatTy());
  return b_.CreateFMul(f, ConstantFP::get(b_.getFloatTy(), 0x1p-24));
}

Value *Lowering::emitBinary(KOp op, DType t, Value *a, Value *c) {
  bool fl = isFloat(t);
  switch (op) {
  case KOp::Add:
    return fl ? b_.CreateFAdd(a, c) : b_.CreateAdd(a, c);
  case KOp::Sub:
    return fl ? b_.CreateFSub(a, c) : b_.CreateSub(a, c);
  case KOp::Mul:
    return fl ? b_.CreateFMul(a, c) : b_.CreateMul(a, c);
  case KOp::Div: {
    if (fl)
      return b_.CreateFDiv(a, c);
    // x / 0 = 0 and INT_MIN / -1 wraps: divide by a safe divisor, then patch.
    Value *zero = ConstantInt::get(a->getType(), 0), *m1 = ConstantInt::get(a->getType(), -1, true);
    Value *isZero = b_.CreateICmpEQ(c, zero), *isM1 = b_.CreateICmpEQ(c, m1);
    Value *safe = b_.CreateSelect(b_.CreateOr(isZero, isM1), ConstantInt::get(a->getType(), 1), c);
    Value *q = b_.CreateSDiv(a, safe);
    return b_.CreateSelect(isZero, zero, b_.CreateSelect(isM1, b_.CreateSub(zero, a), q));
  }
  case KOp::Mod:
  case KOp::FloorDiv:
    return fl ? emitFloorModF(op == KOp::Mod, a, c) : emitFloorModI(op == KOp::Mod, a, c);
  case KOp::Pow:
    if (!fl)
      return emitIntPow(t, a, c);
    // pow(a, 2) is a * a (KernelIR.h); a constant 2 folds the select away.
    return b_.CreateSelect(b_.CreateFCmpOEQ(c, ConstantFP::get(c->getType(), 2.0)),
                           b_.CreateFMul(a, a), libm("powf", "pow", t, {a, c}));
  case KOp::Maximum:
    return emitMaxMin(true, t, a, c);
  case KOp::Minimum:
    return emitMaxMin(false, t, a, c);
  case KOp::And:
    return b_.CreateAnd(a, c);
  case KOp::Or:
    return b_.CreateOr(a, c);
  default:
    break;
  }
  // Comparisons: floats ordered except `ne`; bool compares unsigned (0 < 1).
  CmpInst::Predicate p;
  bool bl = t == DType::Bool;
  switch (op) {
  case KOp::Eq:
    p = fl ? CmpInst::FCMP_OEQ : CmpInst::ICMP_EQ;
    break;
  case KOp::Ne:
    p = fl ? CmpInst::FCMP_UNE : CmpInst::ICMP_NE;
    break;
  case KOp::Lt:
    p = fl ? CmpInst::FCMP_OLT : bl ? CmpInst::ICMP_ULT : CmpInst::ICMP_SLT;
    break;
  case KOp::Le:
    p = fl ? CmpInst::FCMP_OLE : bl ? CmpInst::ICMP_ULE : CmpInst::ICMP_SLE;
    break;
  case KOp::Gt:
    p = fl ? CmpInst::FCMP_OGT : bl ? CmpInst::ICMP_UGT : CmpInst::ICMP_SGT;
    break;
  case KOp::Ge:
    p = fl ? CmpInst::FCMP_OGE : bl ? CmpInst::ICMP_UGE : CmpInst::ICMP_SGE;
    break;
  default:
    throw InternalError(std::string("LLVM lowering: unexpected `") + kopName(op) + "`");
  }
  return fl ? b_.CreateFCmp(p, a, c) : b_.CreateICmp(p, a, c);
}

Value *Lowering::emitNode(const KNode &n, const std::vector<Value *> &v, const Offs &,
                          Value *glin) {
  Type *ty = regTy(n.dtype);
  auto A = [&](int i) { return v[n.args[i]]; };
  DType at = n.args[0] >= 0 ? k_.nodes[n.args[0]].dtype : n.dtype;
  bool fl = isFloat(n.dtype);
  switch (n.op) {
  case KOp::Const:
    if (n.slot >= 0)
      return lifted_[n.slot];
    return fl ? (Value *)ConstantFP::get(ty, kernelConstFloat(n))
              : (Value *)ConstantInt::get(ty, (uint64_t)kernelConstInt(n), true);
  case KOp::Random: {
    Value *r;
    Value *mixed = n.args[0] >= 0 ? emitSplitmix64(b_.CreateSExt(A(0), b_.getInt64Ty()))
                   : n.slot >= 0  ? lifted_[n.slot]
                                  : b_.getInt64(kernelSplitmix64(n.seed));
    if (n.random == RandomKind::Uniform) {
      r = emitUniform(mixed, glin);
    } else {
      Value *c1 = b_.CreateShl(glin, 1), *c2 = b_.CreateOr(c1, b_.getInt64(1));
      Value *u1 = emitUniform(mixed, c1), *u2 = emitUniform(mixed, c2);
      // As support/Random.h: log and cos in f64 (FloatMath.h), rounded to f32.
      Type *f = b_.getFloatTy(), *d = b_.getDoubleTy();
      Value *x = b_.CreateFPExt(b_.CreateFSub(ConstantFP::get(f, 1.0), u1), d);
      Value *lg = b_.CreateFPTrunc(emitLogForF32(x), f);
      Value *s =
          b_.CreateIntrinsic(Intrinsic::sqrt, {f}, {b_.CreateFMul(ConstantFP::get(f, -2.0), lg)});
      const float twoPi = 6.28318530717958647692f; // as support/Random.h
      Value *a = b_.CreateFPExt(b_.CreateFMul(ConstantFP::get(f, twoPi), u2), d);
      Value *c = b_.CreateFPTrunc(emitCosForNormal(a), f);
      r = b_.CreateFMul(s, c);
    }
    return n.dtype == DType::F64 ? b_.CreateFPExt(r, b_.getDoubleTy()) : r;
  }
  case KOp::Iota:
    return emitCast(b_.CreateAdd(gOff_[n.index], idx_[n.index]), DType::I64, n.dtype);
  case KOp::Cast:
    return emitCast(A(0), at, n.dtype);
  case KOp::Not:
    return b_.CreateNot(A(0));
  case KOp::Neg:
    return fl ? b_.CreateFNeg(A(0)) : b_.CreateNeg(A(0));
  case KOp::Abs:
    if (fl)
      return b_.CreateUnaryIntrinsic(Intrinsic::fabs, A(0));
    return b_.CreateSelect(b_.CreateICmpSLT(A(0), ConstantInt::get(ty, 0)), b_.CreateNeg(A(0)),
                           A(0));
  case KOp::Relu: // x < 0 ? 0 : x (NaN, -0 pass through)
    return b_.CreateSelect(fl ? b_.CreateFCmpOLT(A(0), ConstantFP::get(ty, 0.0))
                              : b_.CreateICmpSLT(A(0), ConstantInt::get(ty, 0)),
                           Constant::getNullValue(ty), A(0));
  case KOp::Exp: // f32 (bf16/f16 compute in f32): support/FloatMath.h
    return ty->isFloatTy() ? emitExpF32(A(0)) : libm("expf", "exp", n.dtype, {A(0)});
  case KOp::Log:
    return ty->isFloatTy() ? emitLogF32(A(0)) : libm("logf", "log", n.dtype, {A(0)});
  case KOp::Tanh:
    return ty->isFloatTy() ? emitTanhF32(A(0)) : libm("tanhf", "tanh", n.dtype, {A(0)});
  case KOp::Sin:
    return libm("sinf", "sin", n.dtype, {A(0)});
  case KOp::Cos:
    return libm("cosf", "cos", n.dtype, {A(0)});
  case KOp::Erf:
    return ty->isFloatTy() ? emitErfF32(A(0)) : libm("erff", "erf", n.dtype, {A(0)});
  case KOp::Log1p:
    return ty->isFloatTy() ? emitLog1pF32(A(0)) : libm("log1pf", "log1p", n.dtype, {A(0)});
  case KOp::Expm1:
    return ty->isFloatTy() ? emitExpm1F32(A(0)) : libm("expm1f", "expm1", n.dtype, {A(0)});
  case KOp::Sqrt:
    return b_.CreateUnaryIntrinsic(Intrinsic::sqrt, A(0));
  case KOp::Rsqrt:
    return b_.CreateFDiv(ConstantFP::get(ty, 1.0), b_.CreateUnaryIntrinsic(Intrinsic::sqrt, A(0)));
  case KOp::Sigmoid: {
    if (ty->isFloatTy())
      return emitSigmoidF32(A(0));
    Value *e = libm("expf", "exp", n.dtype, {b_.CreateFNeg(A(0))});
    return b_.CreateFDiv(ConstantFP::get(ty, 1.0), b_.CreateFAdd(ConstantFP::get(ty, 1.0), e));
  }
  case KOp::Select:
    return b_.CreateSelect(A(0), A(1), A(2));
  default:
    return emitBinary(n.op, at, A(0), A(1));
  }
}

void Lowering::run(const std::string &symbol) {
  auto *fty = FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy()}, false);
  f_ = Function::Create(fty, Function::ExternalLinkage, symbol, m_);
  f_->setDoesNotThrow();
  f_->getArg(0)->setName("buffers");
  f_->getArg(1)->setName("params");
  b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", f_));
  loadParams(f_->getArg(0), f_->getArg(1));
  for (int d = 0; d < R_; ++d)
    if (!isReducedDim(k_, d))
      order_.push_back(d);
  nKept_ = (int)order_.size();
  for (int d : k_.reduceDims)
    order_.push_back(d);
  treeSum_ = deterministicTreeSum(k_);
  chained_ = deterministicChains(k_);
  lanes_ = chained_ ? kChainLanes : kTreeLanes;
  // A long chain of dependent ops per point is latency-bound: several
  // independent vectors per iteration keep the FP units busy (the cost
  // model picks 1 for long bodies). Reductions keep the vectorizer's choice.
  interleave_ = k_.reduce == KReduce::None && k_.nodes.size() >= 24 ? chainInterleave() : 0;
  rowReduce_ = k_.reduce != KReduce::None && R_ >= 2 && nKept_ >= 1 && !isReducedDim(k_, R_ - 1) &&
               !k_.reduceDims.empty();
  idx_.assign(R_, nullptr);
  emitHoisted();
  Offs off(nIn_ + nOut_, i64(0));
  emitLevel(0, off, usesGlobalIndex(k_) ? i64(0) : nullptr);
  b_.CreateRetVoid();
}

} // namespace llvmgen

std::unique_ptr<llvm::Module> lowerKernelToLLVM(const Kernel &k, llvm::LLVMContext &ctx,
                                                const std::string &symbol) {
  std::string err = verifyKernel(k);
  if (!err.empty())
    throw InternalError("LLVM lowering: invalid kernel: " + err);
  auto m = std::make_unique<llvm::Module>("dtk." + k.name, ctx);
  llvmgen::Lowering(k, ctx, *m).run(symbol);
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*m, &os))
    throw InternalError("LLVM lowering produced invalid IR for kernel `" + k.name +
                        "`: " + os.str());
  return m;
}

} // namespace dt
