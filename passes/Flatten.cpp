// This file implements flattening (Flatten.h): call inlining and loop
// unrolling by copying instructions with a value-id remapping.
#include "passes/Flatten.h"

#include <map>

namespace dt {

namespace {

/// Unrolled programs above this many instructions are refused: autodiff of a
/// long training loop is not what `grad` is for.
constexpr size_t kMaxInsts = 200000;

struct Flattener {
  const Module &m;
  Function &f;
  std::string why;

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
      if (in.op == Op::For) {
        int64_t lo = in.attrs.ints[0], hi = in.attrs.ints[1], step = in.attrs.ints[2];
        std::vector<int> carried = ops;
        const Block &body = in.regions[0];
        for (uint64_t k = 0, n = forTripCount(lo, hi, step); k < n; ++k) {
          int64_t i = (int64_t)((uint64_t)lo + k * (uint64_t)step);
          std::map<int, int> inner = map;
          Inst c;
          c.op = Op::Const;
          c.attrs.ints = {i}; // the induction variable is i64: exact
          c.results = {f.newValue(from.type(body.args[0]))};
          inner[body.args[0]] = c.results[0];
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
  Flattener fl{m, f, ""};
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
