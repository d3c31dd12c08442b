// This file declares the kernel IR -> LLVM IR lowering's one class, shared
// by its two files: codegen/LLVMCodegen.cpp (the loop nest, the nodes, the
// casts) and codegen/LLVMReduction.cpp (accumulators, the kept-innermost row
// reduction, deterministic mode's leaf tree). Internal to codegen/.
#pragma once

#include "codegen/KernelIR.h"
#include "ir/DeterministicOrder.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

namespace dt::llvmgen {
using namespace llvm;
// dt has its own Value/Function/Module (ir/IR.h); inside the lowering the
// LLVM ones are meant.
using llvm::Function;
using llvm::Module;
using llvm::Value;

/// How the innermost loop addresses one buffer: `off + i*stride`, `off + i`
/// (stride 1) or `off` (stride 0).
enum class Mode { Strided, Contig, Bcast };

/// Inputs up to which the fast path specialises every 0/1 stride pattern
/// (2^n loop copies); beyond it only the all-contiguous pattern is fast.
constexpr int kMaxMaskInputs = 3;

/// Elements of the last dim a row reduction accumulates at once (f64
/// accumulators: 4 KiB per store on the stack).
constexpr int64_t kRowTile = 512;
/// Leaves a deterministic sum (the loop-nest path) computes side by side (a
/// power of two: a group is a whole subtree of the leaf tree).
constexpr int kTreeLanes = 8;
/// The same for a sum over the last dim, whose leaves are vectors of chains.
constexpr int kChainLanes = 4;
/// Rows of a row reduction added per pass over the tile's accumulators.
constexpr int kRowUnroll = 4;

class Lowering {
public:
  Lowering(const Kernel &k, LLVMContext &ctx, Module &m)
      : k_(k), ctx_(ctx), m_(m), b_(ctx), R_(k.rank), nIn_((int)k.inputs.size()),
        nOut_((int)k.outputs.size()) {}

  void run(const std::string &symbol);

private:
  using Offs = std::vector<Value *>;
  Type *regTy(DType t) {
    switch (t) {
    case DType::F32:
      return b_.getFloatTy();
    case DType::F64:
      return b_.getDoubleTy();
    case DType::I32:
      return b_.getInt32Ty();
    case DType::I64:
      return b_.getInt64Ty();
    case DType::Bool:
      return b_.getInt1Ty();
    case DType::BF16: // computed in f32; in memory as 16-bit patterns
    case DType::F16:
      return b_.getFloatTy();
    }
    return nullptr;
  }
  Type *memTy(DType t) {
    return t == DType::Bool ? b_.getInt8Ty() : isLowPrecision(t) ? b_.getInt16Ty() : regTy(t);
  }
  // bf16/f16 (support/LowPrecision.h's algorithms, spelled in IR: no libcall,
  // no CPU feature): memory bits <-> f32 registers, and the f64 -> f32
  // round-to-odd step that makes f64 -> bf16/f16 one rounding.
  Value *widenBits(Value *h, DType t);
  Value *narrowBits(Value *f, DType t);
  Value *roundLow(Value *f, DType t) { return widenBits(narrowBits(f, t), t); }
  Value *toFloatOdd(Value *d);
  /// A register value as stored in memory (bool -> i8, bf16/f16 -> bits).
  Value *toMem(Value *v, DType t) {
    if (t == DType::Bool)
      return b_.CreateZExt(v, b_.getInt8Ty());
    return isLowPrecision(t) ? narrowBits(v, t) : v;
  }
  /// A value loaded from memory as its register value.
  Value *fromMem(Value *ld, DType t) {
    if (t == DType::Bool)
      return b_.CreateICmpNE(ld, b_.getInt8(0));
    return isLowPrecision(t) ? widenBits(ld, t) : ld;
  }
  /// Node `n`'s value `v`: bf16/f16 ops compute in f32 and round once to the
  /// storage type (the ops that only pick or flip an exact value need not).
  Value *roundNode(const KNode &n, Value *v) {
    bool exact = n.op == KOp::Const || n.op == KOp::Select || n.op == KOp::Neg ||
                 n.op == KOp::Abs || n.op == KOp::Relu;
    return isLowPrecision(n.dtype) && !exact ? roundLow(v, n.dtype) : v;
  }
  /// A finished accumulator as stored in memory: f64 sums round once.
  Value *accToMem(Value *v, DType t) {
    if (isLowPrecision(t) && v->getType()->isDoubleTy())
      v = toFloatOdd(v);
    else if (v->getType() != regTy(t))
      v = b_.CreateFPTrunc(v, regTy(t)); // f32 sum: round once
    return toMem(v, t);
  }
  DType bufTy(int buf) { return buf < nIn_ ? k_.inputs[buf] : k_.outputs[buf - nIn_]; }
  Value *i64(int64_t v) { return b_.getInt64((uint64_t)v); }

  void loadParams(Value *buffers, Value *params);
  /// `interleave` > 1: asks the loop vectorizer for that many independent
  /// vectors per iteration (llvm.loop.interleave.count).
  void loop(Value *n, const std::function<void(Value *)> &body, int interleave = 0);
  void emitLevel(int level, const Offs &off, Value *gl);
  /// The reduced loops of the kept point `off` (level nKept_) between the
  /// accumulators' start and their stores.
  void emitReduction(int level, const Offs &off, Value *gl);
  /// acc(store s) = combine(acc, x) for store s of output dtype t.
  void accumulate(size_t s, DType t, Value *x);
  void emitRowReduce(const Offs &off, Value *gl);
  void emitRowReduced(size_t r, const Offs &off, Value *gl, Value *t0, Value *len);
  /// The buffers' offsets and the global index advanced to dim d = i.
  struct DimPoint {
    Offs off;
    Value *gl;
    Value *i;
  };
  DimPoint at(int d, const Offs &off, Value *gl, Value *i);
  void emitRowTile(int d, const std::vector<DimPoint> &rows, Value *t0, Value *len);
  void emitInner(int level, const Offs &off, Value *gl);
  /// The innermost loop of dim d as run-time variants: `variant(modes)` for
  /// each fast 0/1-stride pattern, then for the strided loop.
  void dispatchInner(int d, const std::function<void(const std::vector<Mode> &)> &variant);
  void emitInnerLoop(int d, const std::vector<Mode> &modes, const Offs &off, Value *gl);
  /// The buffers' offsets and the global index at dim d = i of the innermost
  /// loop, each buffer addressed by its mode.
  DimPoint innerPoint(int d, const std::vector<Mode> &modes, const Offs &off, Value *gl, Value *i);
  /// emitInnerLoop's llvm.loop.interleave.count (0: the vectorizer's choice).
  int interleave_ = 0;
  /// The interleave count of a long elementwise body: 8 when 8 copies of
  /// its live values and its invariants fit the vector registers, else 4.
  int chainInterleave() const;
  void emitPoint(const Offs &off, Value *glin);
  std::vector<Value *> emitNodes(const Offs &off, Value *glin);
  Value *emitNode(const KNode &n, const std::vector<Value *> &v, const Offs &off, Value *glin);
  Value *emitCast(Value *v, DType from, DType to);
  Value *emitBinary(KOp op, DType t, Value *a, Value *c);
  Value *emitMaxMin(bool isMax, DType t, Value *a, Value *c);
  Value *emitFloorModF(bool mod, Value *a, Value *c);
  Value *emitFloorModI(bool mod, Value *a, Value *c);
  Value *emitIntPow(DType t, Value *base, Value *e);
  /// uniform(seed, ctr) with `mixed` = splitmix64(seed) (an i64 value).
  Value *emitUniform(Value *mixed, Value *ctr);
  /// splitmix64 of an i64 value, in IR.
  Value *emitSplitmix64(Value *x);
  Value *libm(const char *f32Name, const char *f64Name, DType t, std::vector<Value *> args);
  // dtensor's own f32 exp/tanh/sigmoid (support/FloatMath.h; LLVMMath.cpp).
  Value *emitHorner(const double *c, int n, Value *x); ///< fmath::horner, f64
  Value *emitExpForF32(Value *x);                      ///< f64 in and out
  Value *emitExpF32(Value *x);
  Value *emitTanhF32(Value *x);
  Value *emitSigmoidF32(Value *x);
  Value *emitErfF32(Value *x);
  Value *emitLogForF32(Value *x);    ///< f64 in and out
  Value *emitCosForNormal(Value *x); ///< f64 in and out (randn's angle)
  Value *emitLogF32(Value *x);
  Value *emitLog1pF32(Value *x);
  Value *emitExpm1F32(Value *x);
  Value *tag(Instruction *i, int buf);
  Value *addr(int buf, Value *off) {
    return b_.CreateInBoundsGEP(memTy(bufTy(buf)), base_[buf], off);
  }
  /// Read per point (a uniform input is read once, see emitHoisted).
  bool usedInput(int in) const {
    if (k_.isUniformInput(in))
      return false;
    for (const KNode &n : k_.nodes)
      if ((n.op == KOp::Load || n.op == KOp::Gather) && n.index == in)
        return true;
    return false;
  }

  // Accumulators (reduction kernels), one per store.
  Type *accTy(DType t) { return isFloat(t) ? (Type *)b_.getDoubleTy() : regTy(t); }
  Type *accTyOf(DType t) { return k_.reduce == KReduce::Sum ? accTy(t) : regTy(t); }
  Value *identity(DType t);

  // Deterministic mode's float sums (ir/DeterministicOrder.h): the loop of
  // reduceDims[0] runs leaf by leaf, [rangeStart_, rangeStart_ + rangeLen_)
  // of it at a time, each leaf's accumulator pushed onto a stack of subtrees.
  /// The trip count of dim d's loop / dim d's index at trip i (i itself
  /// unless d is the leaf loop's dim).
  Value *extent(int d) { return d == rangeDim_ ? rangeLen_ : shape_[d]; }
  Value *first(int d, Value *i) {
    return d == rangeDim_ ? b_.CreateAdd(rangeStart_, i, "", true, true) : i;
  }
  /// An empty stack of subtrees.
  void startTree();
  /// `push(merges, sp)` for finished leaf l: it merges with the `merges`
  /// subtrees below stack slot `sp` (the binary counter's carries) into slot
  /// sp - merges.
  void pushLeaf(Value *l, const std::function<void(Value *merges, Value *sp)> &push);
  /// Runs `leaf` once per leaf from leaf `from` on, with the range set, then
  /// pushes it.
  void forEachLeaf(Value *from, const std::function<void()> &leaf,
                   const std::function<void(Value *merges, Value *sp)> &push);
  /// The points of whole leaves firstLeaf + lane (a lane per element of
  /// offs), lane by lane at each step of the reduced loops (reduceDims[r]
  /// on), each lane's float sums into laneAcc_ (integer sums into acc_: any
  /// order).
  void emitLeafGroup(size_t r, std::vector<Offs> &offs, std::vector<Value *> &gls,
                     std::vector<std::vector<Value *>> &idx, Value *firstLeaf);
  /// Leaves side by side: kTreeLanes, or kChainLanes with chains.
  int lanes_ = kTreeLanes;
  /// Per store: lanes_ leaf accumulators (each kDeterministicChains chains
  /// with chains), of laneTy(); laneAt(s, lane) is one of them.
  std::vector<AllocaInst *> laneAcc_;
  Type *laneTy() {
    return ArrayType::get(chained_ ? chainsTy() : (Type *)b_.getDoubleTy(), lanes_);
  }
  Value *laneAt(size_t s, int lane) {
    return b_.CreateInBoundsGEP(laneTy(), laneAcc_[s], {i64(0), i64(lane)});
  }
  /// The push of one element: v merged with slots sp-1, ..., sp-merges
  /// (left operand the older subtree), stored in slot sp - merges.
  void treePush(const std::function<Value *(Value *)> &slot, Value *v, Value *merges, Value *sp);
  /// The tree of the sp subtrees in slots [0, sp), right to left (0: +0).
  Value *treeFinish(const std::function<Value *(Value *)> &slot, Value *sp);
  bool treeStore(size_t s) const { return treeSum_ && isFloat(k_.outputs[k_.stores[s].output]); }
  // A sum over the last dim (deterministicChains, codegen/LLVMChains.cpp):
  // each leaf accumulates into a <kDeterministicChains x double> vector,
  // point i into lane i mod kDeterministicChains.
  /// The leaves a chained loop adds into: per lane its offsets, global
  /// index and indices; indexOf(lane, i) is the last dim's index at trip i;
  /// chainAt(lane, s) the chains vector of store s (a float sum).
  struct Lanes {
    std::vector<Offs> offs;
    std::vector<Value *> gls;
    std::vector<std::vector<Value *>> idx;
    std::function<Value *(int, Value *)> indexOf;
    std::function<Value *(int, size_t)> chainAt;
  };
  /// The loop of the last dim (d, n trips) of every lane: groups of
  /// kDeterministicChains points computed side by side and added as one
  /// vector (the SLP vectorizer turns a group's loads and math into vector
  /// code on unit-stride and broadcast inputs), then the rest point by point.
  void emitChainedLoop(int d, Value *n, const std::vector<Mode> &modes, const Lanes &lanes);
  Type *chainsTy() { return FixedVectorType::get(b_.getDoubleTy(), kDeterministicChains); }
  /// Store s's chains (chains_) set to zero; a chains vector's leaf value
  /// (chainTree's order).
  void startChains();
  Value *chainValue(Value *chains);
  bool chained_ = false;
  std::vector<AllocaInst *> chains_; ///< per store: a chains vector (float sums)
  bool treeSum_ = false;
  int rangeDim_ = -1;
  Value *rangeStart_ = nullptr, *rangeLen_ = nullptr;
  AllocaInst *treeSp_ = nullptr, *treeTmp_ = nullptr;
  std::vector<AllocaInst *> tree_; ///< per store: kDeterministicDepth slots
  /// The same for a row reduction, each slot a row of kRowTile (as many
  /// slots as the leaf count has bits: a dynamic alloca in the entry block).
  std::vector<AllocaInst *> treeRows_;

  const Kernel &k_;
  LLVMContext &ctx_;
  Module &m_;
  IRBuilder<> b_;
  int R_, nIn_, nOut_;
  Function *f_ = nullptr;
  std::vector<Value *> shape_, gOff_, gStr_, base_;
  /// Per lifted slot (liftConstants), read in the entry block: a const's
  /// value in its register type, or a random node's premixed seed.
  std::vector<Value *> lifted_;
  std::vector<std::vector<Value *>> stride_; ///< [buffer][dim]
  Value *scatterStride_ = nullptr;           ///< the scatter output's stride along its dim
  std::vector<MDNode *> scope_, noalias_;
  std::vector<int> order_; ///< loop order: kept dims, then reduced dims
  int nKept_ = 0;
  bool inReduction_ = false;
  std::vector<Value *> idx_; ///< current index per dim (for iota)
  std::vector<AllocaInst *> acc_;
  /// Where emitPoint accumulates store s: acc_[s], or one element of a row
  /// of accumulators (kept-innermost reductions, emitRowReduce).
  std::vector<Value *> accAt_;
  /// Kept-innermost schedule: the last iteration dim is kept and some other
  /// dim is reduced, so the reduced loops run outside a loop over a tile of
  /// the last dim that adds whole rows into a row of accumulators.
  bool rowReduce_ = false;
  std::vector<AllocaInst *> accRows_; ///< one row of accumulators per store
  /// Nodes computed once in the entry block (invariantNodes), else null.
  std::vector<Value *> hoisted_;
  void emitHoisted();
};

} // namespace dt::llvmgen
