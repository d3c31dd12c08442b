// This file implements the LLVM lowering of dtensor's own f32 exp, tanh,
// sigmoid, erf, log, log1p and expm1, and randn's cos (support/FloatMath.h): the same IEEE steps in
// the same order, on scalars the loop vectorizer widens (no call, no table, no branch), so a
// kernel's results equal the interpreter's bit for bit.
#include "codegen/LLVMLowering.h"
#include "support/FloatMath.h"

namespace dt::llvmgen {

Value *Lowering::emitHorner(const double *c, int n, Value *x) {
  Type *d = b_.getDoubleTy();
  Value *p = ConstantFP::get(d, c[0]);
  for (int i = 1; i < n; ++i)
    p = b_.CreateFAdd(b_.CreateFMul(p, x), ConstantFP::get(d, c[i]));
  return p;
}

Value *Lowering::emitExpForF32(Value *x) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double v) { return ConstantFP::get(d, v); };
  x = b_.CreateSelect(b_.CreateFCmpOGT(x, c(fmath::kExpMax)), c(fmath::kExpMax), x);
  x = b_.CreateSelect(b_.CreateFCmpOLT(x, c(fmath::kExpMin)), c(fmath::kExpMin), x);
  Value *t = b_.CreateFAdd(b_.CreateFMul(x, c(fmath::kInvLn2)), c(fmath::kShifter));
  Value *n = b_.CreateFSub(t, c(fmath::kShifter));
  Value *r = b_.CreateFSub(b_.CreateFSub(x, b_.CreateFMul(n, c(fmath::kLn2Hi))),
                           b_.CreateFMul(n, c(fmath::kLn2Lo)));
  Value *p = emitHorner(fmath::kExpCoef, fmath::kExpTerms, r);
  Value *k = b_.CreateSub(b_.CreateBitCast(t, b_.getInt64Ty()),
                          b_.getInt64((uint64_t)fmath::doubleToBits(fmath::kShifter)));
  Value *scale = b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, b_.getInt64(1023)), 52), d);
  return b_.CreateFMul(p, scale);
}

Value *Lowering::emitExpF32(Value *x) {
  return b_.CreateFPTrunc(emitExpForF32(b_.CreateFPExt(x, b_.getDoubleTy())), b_.getFloatTy());
}

Value *Lowering::emitTanhF32(Value *v) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double w) { return ConstantFP::get(d, w); };
  Value *x = b_.CreateFPExt(v, d);
  Value *neg = b_.CreateFCmpOLT(x, c(0.0));
  Value *ax = b_.CreateSelect(neg, b_.CreateFNeg(x), x);
  Value *x2 = b_.CreateFMul(x, x);
  Value *q = emitHorner(fmath::kTanhCoef, fmath::kTanhTerms, x2);
  Value *small = b_.CreateFMul(x, b_.CreateFAdd(c(1.0), b_.CreateFMul(x2, q)));
  Value *e = emitExpForF32(b_.CreateFAdd(ax, ax));
  Value *big = b_.CreateFDiv(b_.CreateFSub(e, c(1.0)), b_.CreateFAdd(e, c(1.0)));
  Value *r = b_.CreateSelect(b_.CreateFCmpOLT(ax, c(fmath::kTanhSmall)), small,
                             b_.CreateSelect(neg, b_.CreateFNeg(big), big));
  return b_.CreateFPTrunc(r, b_.getFloatTy());
}

Value *Lowering::emitSigmoidF32(Value *x) {
  Type *d = b_.getDoubleTy();
  Value *e = emitExpForF32(b_.CreateFNeg(b_.CreateFPExt(x, d)));
  Value *s = b_.CreateFDiv(ConstantFP::get(d, 1.0), b_.CreateFAdd(ConstantFP::get(d, 1.0), e));
  return b_.CreateFPTrunc(s, b_.getFloatTy());
}

Value *Lowering::emitErfF32(Value *v) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double w) { return ConstantFP::get(d, w); };
  Value *x = b_.CreateFPExt(v, d);
  Value *neg = b_.CreateFCmpOLT(x, c(0.0));
  Value *ax = b_.CreateSelect(neg, b_.CreateFNeg(x), x);
  Value *x2 = b_.CreateFMul(x, x);
  Value *small = b_.CreateFMul(x, emitHorner(fmath::kErfTaylor, fmath::kErfTerms, x2));
  Value *a = b_.CreateSelect(b_.CreateFCmpOGT(ax, c(4.0)), c(4.0), ax);
  Value *t = b_.CreateFDiv(b_.CreateFSub(b_.CreateFAdd(a, a), c(5.0)), c(3.0));
  Value *t2 = b_.CreateFAdd(t, t);
  Value *b1 = c(0.0), *b2 = c(0.0);
  for (int k = fmath::kErfcTerms - 1; k >= 1; --k) {
    Value *b0 = b_.CreateFSub(b_.CreateFAdd(c(fmath::kErfcCheb[k]), b_.CreateFMul(t2, b1)), b2);
    b2 = b1;
    b1 = b0;
  }
  Value *g = b_.CreateFSub(b_.CreateFAdd(c(fmath::kErfcCheb[0]), b_.CreateFMul(t, b1)), b2);
  Value *e = emitExpForF32(b_.CreateFNeg(b_.CreateFMul(a, a)));
  Value *r = b_.CreateSelect(b_.CreateFCmpOGE(ax, c(4.0)), c(1.0),
                             b_.CreateFSub(c(1.0), b_.CreateFMul(e, g)));
  Value *big = b_.CreateSelect(neg, b_.CreateFNeg(r), r);
  Value *out = b_.CreateSelect(b_.CreateFCmpOLT(ax, c(1.0)), small, big);
  return b_.CreateFPTrunc(out, b_.getFloatTy());
}

Value *Lowering::emitLogForF32(Value *x) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double w) { return ConstantFP::get(d, w); };
  Value *bits = b_.CreateBitCast(x, b_.getInt64Ty());
  Value *e0 = b_.CreateSub(b_.CreateAShr(bits, 52), b_.getInt64(1023));
  Value *m0 = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, b_.getInt64(0x000fffffffffffff)),
                                           b_.getInt64(0x3ff0000000000000)),
                               d);
  Value *high = b_.CreateFCmpOGT(m0, c(fmath::kSqrt2));
  Value *m = b_.CreateSelect(high, b_.CreateFMul(m0, c(0.5)), m0);
  Value *e = b_.CreateSIToFP(b_.CreateSelect(high, b_.CreateAdd(e0, b_.getInt64(1)), e0), d);
  Value *s = b_.CreateFDiv(b_.CreateFSub(m, c(1.0)), b_.CreateFAdd(m, c(1.0)));
  Value *s2 = b_.CreateFMul(s, s);
  Value *lm = b_.CreateFMul(
      s,
      b_.CreateFAdd(c(2.0), b_.CreateFMul(s2, emitHorner(fmath::kLogCoef, fmath::kLogTerms, s2))));
  Value *r = b_.CreateFAdd(b_.CreateFMul(e, c(fmath::kLn2Hi)),
                           b_.CreateFAdd(b_.CreateFMul(e, c(fmath::kLn2Lo)), lm));
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, ConstantFP::getInfinity(d)), x, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), ConstantFP::getInfinity(d, true), r);
  r = b_.CreateSelect(b_.CreateFCmpOLT(x, c(0.0)), ConstantFP::getNaN(d), r);
  return b_.CreateSelect(b_.CreateFCmpUNE(x, x), x, r);
}

Value *Lowering::emitCosForNormal(Value *x) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double w) { return ConstantFP::get(d, w); };
  Value *t = b_.CreateFAdd(b_.CreateFMul(x, c(fmath::kTwoOverPi)), c(fmath::kShifter));
  Value *n = b_.CreateFSub(t, c(fmath::kShifter));
  Value *r = x;
  for (double part : fmath::kPio2Part)
    r = b_.CreateFSub(r, b_.CreateFMul(n, c(part)));
  Value *r2 = b_.CreateFMul(r, r);
  Value *cr =
      b_.CreateFAdd(c(1.0), b_.CreateFMul(r2, emitHorner(fmath::kCosCoef, fmath::kCosTerms, r2)));
  Value *sr = b_.CreateFAdd(
      r, b_.CreateFMul(r, b_.CreateFMul(r2, emitHorner(fmath::kSinCoef, fmath::kCosTerms, r2))));
  Value *q = b_.CreateAnd(b_.CreateSub(b_.CreateBitCast(t, b_.getInt64Ty()),
                                       b_.getInt64((uint64_t)fmath::doubleToBits(fmath::kShifter))),
                          b_.getInt64(3));
  Value *odd = b_.CreateTrunc(q, b_.getInt1Ty());
  Value *v = b_.CreateSelect(odd, sr, cr); // q 1, 3: sin; q 0, 2: cos
  // The sign: q 0 and 3 keep it, q 1 and 2 negate.
  Value *flip = b_.CreateICmpEQ(b_.CreateAnd(b_.CreateAdd(q, b_.getInt64(1)), b_.getInt64(2)),
                                b_.getInt64(2));
  return b_.CreateSelect(flip, b_.CreateFNeg(v), v);
}

Value *Lowering::emitLogF32(Value *x) {
  return b_.CreateFPTrunc(emitLogForF32(b_.CreateFPExt(x, b_.getDoubleTy())), b_.getFloatTy());
}

Value *Lowering::emitLog1pF32(Value *v) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double w) { return ConstantFP::get(d, w); };
  Value *x = b_.CreateFPExt(v, d);
  Value *u = b_.CreateFAdd(c(1.0), x);
  Value *r = b_.CreateFMul(emitLogForF32(u), b_.CreateFDiv(x, b_.CreateFSub(u, c(1.0))));
  r = b_.CreateSelect(b_.CreateFCmpOEQ(u, c(1.0)), x, r);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, ConstantFP::getInfinity(d)), x, r);
  return b_.CreateFPTrunc(r, b_.getFloatTy());
}

Value *Lowering::emitExpm1F32(Value *v) {
  Type *d = b_.getDoubleTy();
  auto c = [&](double w) { return ConstantFP::get(d, w); };
  Value *x = b_.CreateFPExt(v, d);
  Value *ax = b_.CreateSelect(b_.CreateFCmpOLT(x, c(0.0)), b_.CreateFNeg(x), x);
  Value *small = b_.CreateFMul(x, emitHorner(fmath::kExpCoef, fmath::kExpTerms - 1, x));
  Value *big = b_.CreateFSub(emitExpForF32(x), c(1.0));
  Value *r = b_.CreateSelect(b_.CreateFCmpOLT(ax, c(fmath::kExpm1Small)), small, big);
  return b_.CreateFPTrunc(r, b_.getFloatTy());
}

} // namespace dt::llvmgen
