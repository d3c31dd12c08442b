// This file implements Compilation::checkCallDepth: the executors run a call
// inside a call on the host stack up to a fixed depth
// (CompileOptions::maxCallDepth); a program whose calls nest deeper is an
// error when it is built, at the top-level call that starts the chain, so
// `check` accepts only what `run` can run. The walk itself uses no recursion
// along the call chain (a chain may be tens of thousands of functions long).
#include "frontend/BuildIR.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

namespace dt {

bool Compilation::checkCallDepth() {
  // Functions by name, made at the first call (Module::find is a linear
  // scan, and a session's input without calls should not cost its size).
  std::unordered_map<std::string, const Function *> byName;
  auto find = [&](const std::string &name) -> const Function * {
    if (byName.empty())
      for (const Function &f : module.functions)
        byName.emplace(f.name, &f);
    auto it = byName.find(name);
    return it == byName.end() ? nullptr : it->second;
  };
  const Function *main = module.find("main");
  if (!main)
    return true;
  // The functions each one calls (regions nest at most ~200 levels deep).
  std::map<const Function *, std::vector<const Function *>> callees;
  auto calleesOf = [&](const Function *f) -> const std::vector<const Function *> & {
    auto [it, fresh] = callees.try_emplace(f);
    if (fresh) {
      std::function<void(const Block &)> visit = [&](const Block &b) {
        for (const Inst &in : b.insts) {
          if (in.op == Op::Call)
            if (const Function *g = find(in.attrs.str); g && g != f)
              it->second.push_back(g);
          for (const Block &r : in.regions)
            visit(r);
        }
      };
      visit(f->body);
    }
    return it->second;
  };
  // The longest chain of calls below each function, and its first callee,
  // by a post-order walk on an explicit stack. The builder refuses recursion;
  // a cycle all the same would count as no deeper.
  std::map<const Function *, int> height, state; // state: 1 on the stack, 2 done
  std::map<const Function *, const Function *> next;
  auto heightOf = [&](const Function *root) {
    if (state[root] == 2)
      return height[root];
    std::vector<std::pair<const Function *, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      const Function *f = stack.back().first;
      const auto &cs = calleesOf(f);
      if (stack.back().second < cs.size()) {
        const Function *g = cs[stack.back().second++];
        if (state[g] == 0) {
          state[g] = 1;
          stack.push_back({g, 0});
        }
        continue;
      }
      int best = 0;
      const Function *deepest = nullptr;
      for (const Function *g : cs)
        if (state[g] == 2 && height[g] + 1 > best)
          best = height[g] + 1, deepest = g;
      height[f] = best;
      next[f] = deepest;
      state[f] = 2;
      stack.pop_back();
    }
    return height[root];
  };
  const int limit = options.maxCallDepth;
  std::function<const Inst *(const Block &)> deepCall = [&](const Block &b) -> const Inst * {
    for (const Inst &in : b.insts) {
      if (in.op == Op::Call)
        if (const Function *g = find(in.attrs.str); g && heightOf(g) + 1 > limit)
          return &in;
      for (const Block &r : in.regions)
        if (const Inst *d = deepCall(r))
          return d;
    }
    return nullptr;
  };
  // The statements of `main` verified after an earlier build passed this
  // check then (a session's inputs append to `main`).
  const auto &insts = main->body.insts;
  size_t first = std::min(builderState ? builderState->verifiedMainInsts : 0, insts.size());
  const Inst *call = nullptr;
  for (size_t i = first; i < insts.size() && !call; ++i) {
    if (insts[i].op == Op::Call)
      if (const Function *g = find(insts[i].attrs.str); g && heightOf(g) + 1 > limit)
        call = &insts[i];
    for (size_t r = 0; r < insts[i].regions.size() && !call; ++r)
      call = deepCall(insts[i].regions[r]);
  }
  if (!call)
    return true;
  std::string chain;
  int shown = 0;
  for (const Function *f = find(call->attrs.str); f; f = next[f], ++shown) {
    if (shown == 3) {
      while (next[f])
        f = next[f];
      chain += " -> ... -> `" + f->name + "`";
      break;
    }
    chain += (chain.empty() ? "`" : " -> `") + f->name + "`";
  }
  diags.error(DiagId::CallsTooDeep, call->loc, {std::to_string(limit), chain}).hint =
      "the run would stop there; inline some of the functions, or merge a chain of small ones";
  return false;
}

} // namespace dt
