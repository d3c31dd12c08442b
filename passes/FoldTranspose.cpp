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
  std::unordered_map<int, int> rename;       ///< a cancelled transpose's result -> its source
  std::unordered_map<int, int> uses;
  int removed = 0;

  void collect(const Block &b) {
    for (const Inst &in : b.insts) {
      if (in.op == Op::Transpose && in.operands.size() == 1 && in.results.size() == 1)
        def[in.results[0]] = &in;
      for (const Block &r : in.regions)
        collect(r);
    }
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
          }
        }
        if (flags[0] || flags[1])
          in.attrs.ints = flags;
      }
      for (Block &r : in.regions)
        rewrite(r);
    }
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
    for (size_t i = b.insts.size(); i-- > 0;) {
      Inst &in = b.insts[i];
      if (in.op != Op::Transpose || uses[in.results[0]] != 0)
        continue;
      for (int o : in.operands)
        --uses[o];
      b.insts.erase(b.insts.begin() + (std::ptrdiff_t)i);
      ++removed;
    }
  }

  int run() {
    collect(f.body);
    rewrite(f.body);
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
