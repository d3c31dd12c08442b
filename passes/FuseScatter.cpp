// This file implements fusing an index_add into its source's kernel
// (FuseScatter.h).
#include "passes/FuseScatter.h"
#include "passes/Fusion.h"
#include "passes/FusionRules.h"

#include <algorithm>
#include <unordered_map>

namespace dt {

namespace {

bool isScatterFloat(DType t) { return t == DType::F32 || t == DType::F64; }

/// An instruction without effects that may move earlier in its block, to
/// just before instruction `to`: a fill, a one-value const or a kernel call
/// whose operands all exist there.
bool movesBefore(const Block &b, const Inst &in, int to) {
  if (!in.regions.empty() || in.results.empty() ||
      !(in.op == Op::Fill || in.op == Op::Const ||
        (in.op == Op::Call && isFusedKernelName(in.attrs.str))))
    return false;
  for (int o : in.operands)
    for (int i = to; i < (int)b.insts.size(); ++i)
      for (int r : b.insts[i].results)
        if (r == o)
          return false;
  return true;
}

class ScatterFuser {
public:
  explicit ScatterFuser(Module &m) : m_(m) {
    for (Function &f : m_.functions)
      byName_[f.name] = &f;
    // A kernel called from two places keeps its one meaning.
    for (Function &f : m_.functions)
      forEachBlock(f.body, [&](Block &b) {
        for (const Inst &in : b.insts)
          if (in.op == Op::Call)
            ++calls_[in.attrs.str];
      });
  }

  int run() {
    int fused = 0;
    for (Function &f : m_.functions)
      if (!isFusedKernel(f))
        forEachBlock(f.body, [&](Block &b) { fused += block(f, b); });
    return fused;
  }

private:
  int block(Function &f, Block &b) {
    int fused = 0;
    for (size_t x = 0; x < b.insts.size(); ++x)
      if (b.insts[x].op == Op::IndexAdd && tryFuse(f, b, x)) {
        ++fused;
        --x; // the index_add is gone; the next one moved into its slot
      }
    return fused;
  }

  /// The index of the instruction of `b` that defines `v`, or -1 (a block
  /// argument or a value defined outside `b`).
  static int defIndex(const Block &b, int v) {
    for (size_t i = 0; i < b.insts.size(); ++i)
      if (std::find(b.insts[i].results.begin(), b.insts[i].results.end(), v) !=
          b.insts[i].results.end())
        return (int)i;
    return -1;
  }

  bool tryFuse(Function &f, Block &b, size_t x) {
    const Inst &add = b.insts[x];
    if (add.operands.size() != 3 || add.results.size() != 1 || add.attrs.ints.size() != 1 ||
        add.attrs.ints[0] != 0 || !add.regions.empty())
      return false;
    const int base = add.operands[0], ids = add.operands[1], src = add.operands[2];
    const TensorType &bt = f.type(base), &it = f.type(ids), &st = f.type(src);
    if (!isScatterFloat(st.dtype) || bt.dtype != st.dtype || bt.rank() != st.rank() ||
        it.rank() != 1 || (it.dtype != DType::I32 && it.dtype != DType::I64) ||
        !isConcrete(bt.shape) || !isConcrete(st.shape) || !isConcrete(it.shape) ||
        f.type(add.results[0]) != bt)
      return false;
    // The source: one result of a kernel call in this block, read only here.
    const int c = defIndex(b, src);
    if (c < 0 || (size_t)c >= x || b.insts[c].op != Op::Call || useCounts(f.body)[src] != 1)
      return false;
    Inst &call = b.insts[c];
    auto g = byName_.find(call.attrs.str);
    if (g == byName_.end() || !isFusedKernel(*g->second) || calls_[call.attrs.str] != 1)
      return false;
    Function &k = *g->second;
    if (!kernelTakes(k, call, ids, st))
      return false;
    // base and ids must exist at the call: defined before it, or sources
    // that move there.
    std::vector<int> moves;
    for (int v : {base, ids}) {
      int d = defIndex(b, v);
      if (d == c)
        return false; // made by the kernel itself
      if (d > c) {
        if (!movesBefore(b, b.insts[d], c))
          return false;
        moves.push_back(d);
      }
    }
    const size_t j =
        std::find(call.results.begin(), call.results.end(), src) - call.results.begin();
    // The kernel: base (and ids, unless it reads them already) become
    // parameters, and the index_add of the returned source its result.
    // The base is a parameter of its own even when the kernel reads the same
    // value (the kernel never reads the base: its output starts as a copy).
    auto param = [&](int v, bool reuse) {
      for (size_t p = 0; reuse && p < call.operands.size(); ++p)
        if (call.operands[p] == v)
          return k.params[p];
      int p = k.newValue(f.type(v), f.values[v].name);
      k.params.push_back(p);
      k.body.args.push_back(p);
      call.operands.push_back(v);
      return p;
    };
    const int pb = param(base, false), pi = param(ids, true);
    Inst &ret = k.body.insts.back();
    Inst member;
    member.op = Op::IndexAdd;
    member.operands = {pb, pi, ret.operands[j]};
    member.attrs = add.attrs;
    member.loc = add.loc;
    member.results = {k.newValue(bt, f.values[add.results[0]].name)};
    ret.operands[j] = member.results[0];
    k.results[j] = bt;
    k.body.insts.insert(k.body.insts.end() - 1, std::move(member));
    // The caller: the call's result j is the index_add's value now.
    call.results[j] = add.results[0];
    std::vector<Inst> moved;
    std::sort(moves.begin(), moves.end());
    moves.erase(std::unique(moves.begin(), moves.end()), moves.end());
    for (int d : moves)
      moved.push_back(std::move(b.insts[d]));
    std::vector<Inst> out;
    out.reserve(b.insts.size());
    for (size_t i = 0; i < b.insts.size(); ++i) {
      if ((int)i == c)
        for (Inst &m : moved)
          out.push_back(std::move(m));
      if (i == x || std::find(moves.begin(), moves.end(), (int)i) != moves.end())
        continue;
      out.push_back(std::move(b.insts[i]));
    }
    b.insts = std::move(out);
    return true;
  }

  /// Whether kernel `k` (called by `call`) can take the scatter of its result
  /// of type `src`: no reduction, no index_add yet, every result of the
  /// source's type, and `ids` (when it is an operand already) read only as
  /// index_select ids along dim 0.
  bool kernelTakes(const Function &k, const Inst &call, int ids, const TensorType &src) const {
    if (k.body.insts.empty() || k.body.insts.back().op != Op::Return)
      return false;
    for (const TensorType &r : k.results)
      if (!fusion::sameLayoutAndShape(r, src))
        return false;
    int pids = -1;
    for (size_t p = 0; p < call.operands.size() && p < k.params.size(); ++p)
      if (call.operands[p] == ids)
        pids = k.params[p];
    for (const Inst &in : k.body.insts) {
      if (in.op == Op::IndexAdd || opInfo(in.op).cls == OpClass::Reduce)
        return false;
      for (size_t o = 0; o < in.operands.size(); ++o)
        if (in.operands[o] == pids && !(in.op == Op::IndexSelect && o == 1 &&
                                        in.attrs.ints.size() == 1 && in.attrs.ints[0] == 0))
          return false;
    }
    return true;
  }

  Module &m_;
  std::unordered_map<std::string, Function *> byName_;
  std::unordered_map<std::string, int> calls_;
};

} // namespace

int fuseScatters(Module &m) { return ScatterFuser(m).run(); }

} // namespace dt
