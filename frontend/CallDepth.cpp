// This file implements Compilation::checkCallDepth: the executors run a call
// inside a call on the host stack up to a fixed depth
// (CompileOptions::maxCallDepth); a program whose calls nest deeper is an
// error when it is built, at the top-level call that starts the chain, so
// `check` accepts only what `run` can run.
#include "frontend/BuildIR.h"

#include <functional>
#include <map>

namespace dt {

bool Compilation::checkCallDepth() {
  const Function *main = module.find("main");
  if (!main)
    return true;
  // The longest chain of calls below each function (memoized; the builder
  // refuses recursion, so the graph has no cycle).
  std::map<const Function *, int> height;
  std::map<const Function *, const Function *> next; // its deepest callee
  std::function<int(const Function &)> below = [&](const Function &f) -> int {
    if (auto it = height.find(&f); it != height.end())
      return it->second;
    height[&f] = 0; // a cycle (never built) ends here
    int best = 0;
    const Function *deepest = nullptr;
    std::function<void(const Block &)> visit = [&](const Block &b) {
      for (const Inst &in : b.insts) {
        if (in.op == Op::Call)
          if (const Function *g = module.find(in.attrs.str); g && g != &f) {
            int h = below(*g) + 1;
            if (h > best)
              best = h, deepest = g;
          }
        for (const Block &r : in.regions)
          visit(r);
      }
    };
    visit(f.body);
    next[&f] = deepest;
    return height[&f] = best;
  };
  const int limit = options.maxCallDepth;
  std::function<const Inst *(const Block &)> deepCall = [&](const Block &b) -> const Inst * {
    for (const Inst &in : b.insts) {
      if (in.op == Op::Call)
        if (const Function *g = module.find(in.attrs.str); g && below(*g) + 1 > limit)
          return &in;
      for (const Block &r : in.regions)
        if (const Inst *d = deepCall(r))
          return d;
    }
    return nullptr;
  };
  const Inst *call = deepCall(main->body);
  if (!call)
    return true;
  std::string chain;
  int shown = 0;
  for (const Function *f = module.find(call->attrs.str); f; f = next[f], ++shown) {
    if (shown == 3) {
      chain += " -> ...";
      while (next[f])
        f = next[f];
      chain += " -> `" + f->name + "`";
      break;
    }
    chain += (chain.empty() ? "`" : " -> `") + f->name + "`";
  }
  diags.error(DiagId::CallsTooDeep, call->loc, {std::to_string(limit), chain}).hint =
      "the run would stop there; inline some of the functions, or merge a chain of small ones";
  return false;
}

} // namespace dt
