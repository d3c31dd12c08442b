// This file implements flattening (Flatten.h): call inlining and loop
// unrolling by copying instructions with a value-id remapping. Control flow on
// host scalars (`if`, `while`, `for` with run-time bounds) is resolved while
// copying: host integer/bool scalars computed from constants are folded, so a
// condition known at compile time picks its branch or unrolls its loop; one
// that depends on a run-time value cannot be flattened (autodiff reports it).
#include "passes/Flatten.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace dt {

namespace {

/// Unrolled programs above this many instructions are refused: autodiff of a
/// long training loop is not what `grad` is for.
constexpr size_t kMaxInsts = 200000;

/// A folded host scalar (integer or bool dtypes only: exact).
using Known = std::map<int, int64_t>;

/// Folds `in` (operands already mapped) when it makes one host integer/bool
/// scalar from known ones; wraps like the IR's integers (ir/IR.h).
void fold(const Function &f, const Inst &in, Known &known) {
  if (in.results.size() != 1)
    return;
  const TensorType &t = f.type(in.results[0]);
  if (!t.isHost() || t.rank() != 0 || isFloat(t.dtype))
    return;
  if ((in.op == Op::Const || in.op == Op::Fill) && in.attrs.ints.size() == 1) {
    known[in.results[0]] = in.attrs.ints[0];
    return;
  }
  std::vector<int64_t> a;
  for (int o : in.operands) {
    auto it = known.find(o);
    if (it == known.end() || !f.type(o).isHost() || isFloat(f.type(o).dtype))
      return;
    a.push_back(it->second);
  }
  auto u = [](int64_t v) { return (uint64_t)v; };
  int64_t r;
  size_t n = a.size();
  switch (in.op) {
  case Op::Neg:
    if (n != 1)
      return;
    r = (int64_t)(0 - u(a[0]));
    break;
  case Op::Not:
    if (n != 1)
      return;
    r = !a[0];
    break;
  case Op::Abs:
    if (n != 1)
      return;
    r = a[0] < 0 ? (int64_t)(0 - u(a[0])) : a[0];
    break;
  case Op::Add:
    if (n != 2)
      return;
    r = (int64_t)(u(a[0]) + u(a[1]));
    break;
  case Op::Sub:
    if (n != 2)
      return;
    r = (int64_t)(u(a[0]) - u(a[1]));
    break;
  case Op::Mul:
    if (n != 2)
      return;
    r = (int64_t)(u(a[0]) * u(a[1]));
    break;
  case Op::Mod:
  case Op::FloorDiv:
  case Op::Div: {
    if (n != 2 || a[1] == 0 || (a[0] == INT64_MIN && a[1] == -1))
      return; // the executor's rules for these edges are not repeated here
    int64_t q = a[0] / a[1], m = a[0] % a[1];
    bool down = m != 0 && ((m < 0) != (a[1] < 0));
    r = in.op == Op::Div ? q : in.op == Op::FloorDiv ? q - down : m + (down ? a[1] : 0);
    break;
  }
  case Op::Maximum:
    if (n != 2)
      return;
    r = std::max(a[0], a[1]);
    break;
  case Op::Minimum:
    if (n != 2)
      return;
    r = std::min(a[0], a[1]);
    break;
  case Op::Eq:
    if (n != 2)
      return;
    r = a[0] == a[1];
    break;
  case Op::Ne:
    if (n != 2)
      return;
    r = a[0] != a[1];
    break;
  case Op::Lt:
    if (n != 2)
      return;
    r = a[0] < a[1];
    break;
  case Op::Le:
    if (n != 2)
      return;
    r = a[0] <= a[1];
    break;
  case Op::Gt:
    if (n != 2)
      return;
    r = a[0] > a[1];
    break;
  case Op::Ge:
    if (n != 2)
      return;
    r = a[0] >= a[1];
    break;
  case Op::And:
    if (n != 2)
      return;
    r = a[0] && a[1];
    break;
  case Op::Or:
    if (n != 2)
      return;
    r = a[0] || a[1];
    break;
  case Op::Select:
    if (n != 3)
      return;
    r = a[0] ? a[1] : a[2];
    break;
  case Op::Cast:
    if (n != 1)
      return;
    r = t.dtype == DType::Bool ? a[0] != 0 : t.dtype == DType::I32 ? (int32_t)a[0] : a[0];
    break;
  default:
    return;
  }
  if (t.dtype == DType::I32)
    r = (int32_t)r;
  known[in.results[0]] = r;
}

struct Flattener {
  const Module &m;
  Function &f;
  std::string why;
  Known known;

  /// A host scalar's folded value, or a reason in `why`.
  bool constant(int id, const char *what, int64_t &out) {
    auto it = known.find(id);
    if (it != known.end()) {
      out = it->second;
      return true;
    }
    why = std::string("grad through a run-time `") + what +
          "` is not supported: its condition or bounds depend on a value known only when the "
          "program runs (compute it outside the differentiated function, or make it depend only "
          "on constants and loop variables)";
    return false;
  }
  /// Copies `src` (from function `from`) into `out`, mapping value ids.
  bool emit(const Function &from, const Block &src, std::map<int, int> &map, std::vector<Inst> &out,
            std::vector<int> *returned) {
    for (const Inst &in : src.insts) {
      if (out.size() > kMaxInsts) {
        why = "flattening exceeds " + std::to_string(kMaxInsts) + " instructions";
        return false;
      }
      auto mapped = [&](int id) {
        auto it = map.find(id);
        return it == map.end() ? id : it->second;
      };
      std::vector<int> ops;
      for (int id : in.operands)
        ops.push_back(mapped(id));
      if (in.op == Op::Return || in.op == Op::Yield) {
        if (returned)
          *returned = ops;
        continue;
      }
      if (in.op == Op::Call) {
        const Function *callee = m.find(in.attrs.str);
        if (!callee) {
          why = "unknown callee `" + in.attrs.str + "`";
          return false;
        }
        std::map<int, int> inner;
        for (size_t i = 0; i < callee->params.size(); ++i)
          inner[callee->params[i]] = ops[i];
        cloneValues(*callee, callee->body, inner);
        std::vector<int> rets;
        if (!emit(*callee, callee->body, inner, out, &rets))
          return false;
        for (size_t i = 0; i < in.results.size(); ++i)
          bindResult(from, in.results[i], rets[i], map);
        continue;
      }
      if (in.op == Op::If) {
        int64_t c;
        if (!constant(ops[0], "if", c))
          return false;
        const Block &branch = in.regions[c ? 0 : 1];
        std::map<int, int> inner = map;
        cloneValues(from, branch, inner);
        std::vector<int> rets;
        if (!emit(from, branch, inner, out, &rets))
          return false;
        for (size_t k = 0; k < in.results.size(); ++k)
          bindResult(from, in.results[k], rets[k], map);
        continue;
      }
      if (in.op == Op::While) {
        int64_t go;
        if (!constant(ops[0], "while", go))
          return false;
        std::vector<int> carried(ops.begin() + 1, ops.end());
        const Block &body = in.regions[0];
        while (go) {
          if (out.size() > kMaxInsts) {
            why = "flattening exceeds " + std::to_string(kMaxInsts) + " instructions";
            return false;
          }
          std::map<int, int> inner = map;
          for (size_t k = 0; k < carried.size(); ++k)
            inner[body.args[k]] = carried[k];
          cloneValues(from, body, inner);
          std::vector<int> next;
          if (!emit(from, body, inner, out, &next) || !constant(next[0], "while", go))
            return false;
          carried.assign(next.begin() + 1, next.end());
        }
        for (size_t k = 0; k < in.results.size(); ++k)
          bindResult(from, in.results[k], carried[k], map);
        continue;
      }
      if (in.op == Op::For) {
        int64_t lo = in.attrs.ints[0], hi = in.attrs.ints[1], step = in.attrs.ints[2];
        size_t skip = in.attrs.flag ? 2 : 0;
        if (skip && !(constant(ops[0], "for", lo) && constant(ops[1], "for", hi)))
          return false;
        std::vector<int> carried(ops.begin() + (long)skip, ops.end());
        const Block &body = in.regions[0];
        for (uint64_t k = 0, n = forTripCount(lo, hi, step); k < n; ++k) {
          int64_t i = (int64_t)((uint64_t)lo + k * (uint64_t)step);
          std::map<int, int> inner = map;
          Inst c;
          c.op = Op::Const;
          c.attrs.ints = {i}; // the induction variable is i64: exact
          c.results = {f.newValue(from.type(body.args[0]))};
          inner[body.args[0]] = c.results[0];
          known[c.results[0]] = i;
          out.push_back(std::move(c));
          for (size_t k = 0; k < carried.size(); ++k)
            inner[body.args[k + 1]] = carried[k];
          cloneValues(from, body, inner);
          std::vector<int> next;
          if (!emit(from, body, inner, out, &next))
            return false;
          carried = next;
        }
        for (size_t k = 0; k < in.results.size(); ++k)
          bindResult(from, in.results[k], carried[k], map);
        continue;
      }
      Inst c = in;
      c.operands = ops;
      for (auto &r : c.results)
        r = mapped(r);
      fold(f, c, known);
      out.push_back(std::move(c));
    }
    return true;
  }

  /// Gives every value defined directly in `b` a fresh id in `f`. Nested
  /// regions are cloned when their own loop is unrolled, once per iteration.
  void cloneValues(const Function &from, const Block &b, std::map<int, int> &map) {
    for (const Inst &in : b.insts)
      for (int r : in.results)
        map[r] = f.newValue(from.type(r), from.values[r].name);
  }

  /// A call's or loop's result becomes an alias of the value it produced.
  void bindResult(const Function &, int result, int value, std::map<int, int> &map) {
    map[result] = value;
  }
};

} // namespace

bool flattenFunction(const Module &m, Function &f, std::string &why) {
  Flattener fl{m, f, "", {}};
  std::map<int, int> map; // own values keep their ids
  std::vector<Inst> out;
  std::vector<int> rets;
  Block body = f.body;
  if (!fl.emit(f, body, map, out, &rets)) {
    why = fl.why;
    return false;
  }
  Inst r;
  r.op = Op::Return;
  r.operands = rets;
  out.push_back(std::move(r));
  f.body.insts = std::move(out);
  return true;
}

} // namespace dt
