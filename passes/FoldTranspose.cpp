// This file implements transpose folding (see FoldTranspose.h).
#include "passes/FoldTranspose.h"

#include <unordered_map>

namespace dt {

namespace {

/// True when `perm` swaps the last two dims and keeps the others.
bool swapsLastTwo(const std::vector<int64_t> &perm) {
  size_t r = perm.size();
  if (r < 2)
    return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != (int64_t)i)
      return false;
  return perm[r - 2] == (int64_t)r - 1 && perm[r - 1] == (int64_t)r - 2;
}

bool identity(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != (int64_t)i)
      return false;
  return true;
}

struct Folder {
  explicit Folder(Function &fn) : f(fn) {}
  Function &f;
  std::unordered_map<int, const Inst *> def; ///< transpose results -> their transpose
  std::unordered_map<int, Inst *> matmuls;   ///< matmul results -> their matmul
  std::unordered_map<int, Inst *> checks;    ///< check_factor results -> their check
  std::unordered_map<int, Inst *> gathers;   ///< all_gather results -> their all_gather
  std::unordered_map<int, int> rename;       ///< a cancelled transpose's result -> its source
  std::unordered_map<int, int> uses;
  std::unordered_map<int, bool> absorbed; ///< transposes now computed by their matmul
  int removed = 0;

  void collect(Block &b) {
    for (Inst &in : b.insts) {
      if (in.op == Op::Transpose && in.operands.size() == 1 && in.results.size() == 1)
        def[in.results[0]] = &in;
      if (in.op == Op::MatMul && in.operands.size() == 2 && in.results.size() == 1)
        matmuls[in.results[0]] = &in;
      if (in.op == Op::CheckFactor && in.operands.size() == 1 && in.results.size() == 1)
        checks[in.results[0]] = &in;
      if (in.op == Op::AllGather && in.operands.size() == 1 && in.results.size() == 1)
        gathers[in.results[0]] = &in;
      for (Block &r : in.regions)
        collect(r);
    }
  }

  /// `check_factor(transpose(x))` feeding only a matmul: the check moves
  /// onto `x` (it reads every element either way), so the transpose can
  /// become the matmul's flag. Returns the operand to fold, or -1.
  int throughCheck(int operand) {
    auto c = checks.find(operand);
    if (c == checks.end() || uses[operand] != 1)
      return -1;
    Inst &check = *c->second;
    auto t = def.find(check.operands[0]);
    if (t == def.end() || !swapsLastTwo(t->second->attrs.ints))
      return -1;
    int src = t->second->operands[0];
    int moved = f.newValue(f.type(src));
    check.operands[0] = src;
    check.results[0] = moved;
    checks.erase(c);
    return moved;
  }

  /// `all_gather(transpose(x))` feeding only a matmul (deterministic mode
  /// gathers a contraction's operands): gathering `x` along the swapped dim
  /// gives the transposed gather, so the transpose can become the matmul's
  /// flag. Returns the operand to fold, or -1.
  int throughGather(int operand) {
    auto g = gathers.find(operand);
    if (g == gathers.end() || uses[operand] != 1)
      return -1;
    Inst &gather = *g->second;
    auto t = def.find(gather.operands[0]);
    if (t == def.end() || !swapsLastTwo(t->second->attrs.ints) || uses[gather.operands[0]] != 1)
      return -1;
    TensorType moved = f.type(operand); // the gathered transpose, swapped back
    const int r = moved.rank();
    std::swap(moved.shape[r - 2], moved.shape[r - 1]);
    for (Placement &p : moved.placements)
      if (p.isShard() && p.dim >= r - 2)
        p.dim = p.dim == r - 2 ? r - 1 : r - 2;
    gather.operands[0] = t->second->operands[0];
    gather.results[0] = f.newValue(moved);
    gathers.erase(g);
    return gather.results[0];
  }

  int resolve(int v) const {
    auto it = rename.find(v);
    return it == rename.end() ? v : it->second;
  }

  /// Rewrites `b` in order: a use always follows its definition, so an
  /// operand's transpose is already in its final form when a use is seen.
  void rewrite(Block &b) {
    for (Inst &in : b.insts) {
      for (int &o : in.operands)
        o = resolve(o);
      if (in.op == Op::Transpose && in.operands.size() == 1 && in.results.size() == 1) {
        auto it = def.find(in.operands[0]);
        if (it != def.end()) {
          // transpose(transpose(x, p1), p2) = transpose(x, q), q[i] = p1[p2[i]].
          const Inst &inner = *it->second;
          std::vector<int64_t> q;
          for (int64_t p : in.attrs.ints)
            q.push_back(inner.attrs.ints.at(p));
          int src = inner.operands[0];
          if (identity(q) && f.type(src) == f.type(in.results[0])) {
            rename[in.results[0]] = src;
            def.erase(in.results[0]);
          } else if (!identity(q)) {
            in.operands[0] = src;
            in.attrs.ints = q;
          }
        }
      }
      if (in.op == Op::MatMul && in.operands.size() == 2 && in.attrs.ints.empty()) {
        std::vector<int64_t> flags{0, 0};
        for (int i = 0; i < 2; ++i) {
          auto it = def.find(in.operands[i]);
          if (it != def.end() && swapsLastTwo(it->second->attrs.ints)) {
            in.operands[i] = it->second->operands[0];
            flags[i] = 1;
          } else if (int moved = throughCheck(in.operands[i]); moved >= 0) {
            in.operands[i] = moved;
            flags[i] = 1;
          } else if (int gathered = throughGather(in.operands[i]); gathered >= 0) {
            in.operands[i] = gathered;
            flags[i] = 1;
          }
        }
        if (flags[0] || flags[1])
          in.attrs.ints = flags;
      }
      if (in.op == Op::Transpose && in.operands.size() == 1 && in.results.size() == 1 &&
          swapsLastTwo(in.attrs.ints))
        absorbIntoMatmul(in);
      for (Block &r : in.regions)
        rewrite(r);
    }
  }

  /// transpose(matmul(a, b)) = matmul(b, a) with both flags flipped, when
  /// the transpose is the product's only use (autodiff writes
  /// dW = transpose(X^T @ G) for `x @ transpose(w)`): the matmul computes the
  /// transpose's result directly and the copy goes.
  void absorbIntoMatmul(Inst &t) {
    int prod = t.operands[0];
    auto m = matmuls.find(prod);
    if (m == matmuls.end() || uses[prod] != 1)
      return;
    Inst &mm = *m->second;
    if (f.type(mm.operands[0]).rank() < 2 || f.type(mm.operands[1]).rank() < 2)
      return; // a 1-D operand has no dim to swap
    int64_t fa = matmulTransposed(mm.attrs, 0), fb = matmulTransposed(mm.attrs, 1);
    std::swap(mm.operands[0], mm.operands[1]);
    mm.attrs.ints = {1 - fb, 1 - fa};
    mm.results[0] = t.results[0];
    matmuls.erase(m);
    def.erase(t.results[0]);
    absorbed[t.results[0]] = true;
  }

  void count(const Block &b) {
    for (const Inst &in : b.insts) {
      for (int o : in.operands)
        ++uses[o];
      for (const Block &r : in.regions)
        count(r);
    }
  }

  /// Drops transposes (pure) whose results lost every use; repeats inner
  /// first, since removing an outer transpose can free its operand's.
  void prune(Block &b) {
    for (Inst &in : b.insts)
      for (Block &r : in.regions)
        prune(r);
    std::vector<char> drop(b.insts.size(), 0);
    for (size_t i = b.insts.size(); i-- > 0;) {
      Inst &in = b.insts[i];
      if (in.op != Op::Transpose || (uses[in.results[0]] != 0 && !absorbed.count(in.results[0])))
        continue;
      for (int o : in.operands)
        --uses[o];
      drop[i] = 1;
      ++removed;
    }
    size_t i = 0; // one pass: erasing one at a time was quadratic in the block
    std::erase_if(b.insts, [&](const Inst &) { return drop[i++] != 0; });
  }

  int run() {
    collect(f.body);
    count(f.body);
    rewrite(f.body);
    uses.clear();
    count(f.body);
    prune(f.body);
    return removed;
  }
};

} // namespace

int foldTransposes(Module &m) {
  int removed = 0;
  for (Function &f : m.functions)
    removed += Folder(f).run();
  return removed;
}

} // namespace dt
