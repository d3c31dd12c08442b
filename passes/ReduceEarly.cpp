// This file implements reducing before a product (ReduceEarly.h).
#include "passes/ReduceEarly.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace dt {

namespace {

/// True when every axis of `axes` is partial(sum) (want = true) or replicate
/// (want = false) in `t`.
bool onAxes(const TensorType &t, const std::vector<int64_t> &axes, bool partial) {
  if (t.isHost())
    return false;
  for (int64_t a : axes) {
    if (a < 0 || (size_t)a >= t.placements.size())
      return false;
    const Placement &p = t.placements[a];
    if (partial ? !(p.isPartial() && p.op == ReduceOp::Sum) : !p.isReplicate())
      return false;
  }
  return true;
}

TensorType replicatedOn(TensorType t, const std::vector<int64_t> &axes) {
  for (int64_t a : axes)
    t.placements[a] = Placement::replicate();
  return t;
}

/// The index in `b` (below `below`) of the instruction defining `v`, or
/// `below` when none does.
size_t defOf(const Block &b, int v, size_t below) {
  for (size_t k = below; k-- > 0;)
    if (std::find(b.insts[k].results.begin(), b.insts[k].results.end(), v) !=
        b.insts[k].results.end())
      return k;
  return below;
}

/// The matmul that `value` (partial(sum) on `axes`, concrete) comes from in
/// `b`, below index `below`: back through transposes and reshapes (autodiff
/// writes a weight gradient as transpose(g^T @ x)), each read only by the
/// next, to a product whose operand `partial` is partial(sum) on the axes
/// and whose other operand is whole on them.
struct Product {
  size_t at = 0;
  std::vector<size_t> layout; ///< the steps from the product to `value`, last first
  int partial = -1;
};
std::optional<Product> productOf(const Function &f, const Block &b, int value, size_t below,
                                 const std::vector<int64_t> &axes, std::map<int, int> &uses) {
  const TensorType &t = f.type(value);
  if (!onAxes(t, axes, true) || !isConcrete(t.shape))
    return std::nullopt;
  Product p;
  p.at = defOf(b, value, below);
  while (p.at < below && (b.insts[p.at].op == Op::Transpose || b.insts[p.at].op == Op::Reshape) &&
         b.insts[p.at].operands.size() == 1 && uses[b.insts[p.at].operands[0]] == 1) {
    p.layout.push_back(p.at);
    const size_t def = defOf(b, b.insts[p.at].operands[0], p.at);
    if (def == p.at) // defined by no instruction above (a parameter): no product
      return std::nullopt;
    p.at = def;
  }
  if (p.at >= below || b.insts[p.at].op != Op::MatMul || b.insts[p.at].operands.size() != 2 ||
      b.insts[p.at].results.size() != 1)
    return std::nullopt;
  const std::vector<int> &ops = b.insts[p.at].operands;
  for (int s = 0; s < 2; ++s)
    if (onAxes(f.type(ops[s]), axes, true) && onAxes(f.type(ops[1 - s]), axes, false) &&
        isConcrete(f.type(ops[s]).shape))
      p.partial = s;
  if (p.partial < 0)
    return std::nullopt;
  return p;
}

int block(Function &f, Block &b, std::map<int, int> &uses) {
  int n = 0;
  for (Inst &in : b.insts)
    for (Block &r : in.regions)
      n += block(f, r, uses);
  std::map<std::pair<int, std::vector<int64_t>>, int> reduced; // (operand, axes) -> whole
  for (const Inst &in : b.insts)
    if (in.op == Op::AllReduce && in.attrs.str.empty() && in.operands.size() == 1 &&
        in.results.size() == 1)
      reduced.emplace(std::make_pair(in.operands[0], in.attrs.ints), in.results[0]);
    else if (in.op == Op::LocalPartial && in.operands.size() == 1 && in.results.size() == 1 &&
             onAxes(f.type(in.operands[0]), in.attrs.ints, false))
      // Deterministic mode's partial values are `local_partial` of whole
      // ones (passes/SpmdLower.cpp): reducing one gives back the whole value.
      reduced.emplace(std::make_pair(in.results[0], in.attrs.ints), in.operands[0]);
  for (size_t i = 0; i < b.insts.size(); ++i) {
    const Inst &ar = b.insts[i];
    if (ar.op != Op::AllReduce || !ar.attrs.str.empty() || ar.operands.size() != 1 ||
        ar.results.size() != 1 || uses[ar.operands[0]] != 1)
      continue;
    const int p = ar.operands[0];
    const std::vector<int64_t> axes = ar.attrs.ints;
    std::optional<Product> prod = productOf(f, b, p, i, axes, uses);
    if (!prod)
      continue;
    const size_t k = prod->at;
    const int q = prod->partial;
    const std::vector<size_t> &layout = prod->layout;
    const TensorType tp = f.type(p);
    const int operand = b.insts[k].operands[q];
    // Smaller, or reduced already (for another product): no more to move.
    if (numElements(f.type(operand).shape) >= numElements(tp.shape) &&
        !reduced.count(std::make_pair(operand, axes)))
      continue;
    const int result = ar.results[0];
    auto key = std::make_pair(operand, axes);
    auto made = reduced.find(key);
    const bool fresh = made == reduced.end();
    const int whole = fresh ? f.newValue(replicatedOn(f.type(operand), axes)) : made->second;
    std::vector<Inst> before;
    if (fresh) {
      Inst s = ar;
      s.operands = {operand};
      s.results = {whole};
      before.push_back(std::move(s));
      reduced[key] = whole;
    }
    --uses[operand];
    ++uses[whole];
    b.insts[k].operands[q] = whole;
    // The product and its layout steps are whole on the axes now; the last
    // of them defines the all_reduce's result.
    for (size_t s : layout)
      f.values[b.insts[s].results[0]].type = replicatedOn(f.type(b.insts[s].results[0]), axes);
    f.values[b.insts[k].results[0]].type = replicatedOn(f.type(b.insts[k].results[0]), axes);
    b.insts[layout.empty() ? k : layout.front()].results = {result};
    if (!fresh) { // made for a later product: it moves up to this one
      size_t d = 0;
      while (b.insts[d].results.empty() || b.insts[d].results[0] != whole)
        ++d;
      if (d > k) {
        before.push_back(std::move(b.insts[d]));
        b.insts.erase(b.insts.begin() + (long)d);
        i -= d < i; // the all_reduce at i moved down one
      }
    }
    --uses[p];
    b.insts.erase(b.insts.begin() + (long)i);
    b.insts.insert(b.insts.begin() + (long)k, before.begin(), before.end());
    i = i + before.size() - 1; // the step after the erased all_reduce comes next
    ++n;
  }
  return n;
}

} // namespace

bool reducesEarly(const Function &f, int value, const std::vector<int64_t> &axes) {
  std::map<int, int> uses = useCounts(f.body);
  return reducesEarly(f, value, axes, uses);
}

bool reducesEarly(const Function &f, int value, const std::vector<int64_t> &axes,
                  std::map<int, int> &uses) {
  std::optional<Product> p = productOf(f, f.body, value, f.body.insts.size(), axes, uses);
  return p && numElements(f.type(f.body.insts[p->at].operands[p->partial]).shape) <=
                  numElements(f.type(value).shape);
}

int reduceEarly(Module &m) {
  int n = 0;
  for (Function &f : m.functions) {
    // Until nothing changes: a product as large as its operand goes once
    // another product has reduced that operand.
    for (int k = 1; k;) {
      std::map<int, int> uses = useCounts(f.body);
      n += k = block(f, f.body, uses);
    }
  }
  return n;
}

} // namespace dt
