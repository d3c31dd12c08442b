// This file implements the removal of dead collectives (DeadCollectives.h).
#include "passes/DeadCollectives.h"

#include <map>
#include <vector>

namespace dt {

namespace {

/// Drops the dead collectives of `b` and its regions (last first, so a step
/// that only fed a dropped one goes in the same sweep); returns how many.
int sweep(Block &b, std::map<int, int> &uses) {
  int n = 0;
  for (Inst &in : b.insts)
    for (Block &r : in.regions)
      n += sweep(r, uses);
  std::vector<char> dead(b.insts.size(), 0);
  for (size_t i = b.insts.size(); i-- > 0;) {
    const Inst &in = b.insts[i];
    if (opInfo(in.op).cls != OpClass::Collective || in.results.size() != 1 ||
        uses[in.results[0]] != 0)
      continue;
    dead[i] = 1;
    for (int o : in.operands)
      --uses[o];
    ++n;
  }
  if (n) {
    std::vector<Inst> kept;
    kept.reserve(b.insts.size());
    for (size_t i = 0; i < b.insts.size(); ++i)
      if (!dead[i])
        kept.push_back(std::move(b.insts[i]));
    b.insts = std::move(kept);
  }
  return n;
}

} // namespace

int removeDeadCollectives(Module &m) {
  int total = 0;
  for (Function &f : m.functions) {
    std::map<int, int> uses = useCounts(f.body);
    // A region's dead step can feed nothing outside it, but one outside can
    // feed only a dead step inside: sweep until nothing more goes.
    for (int n = sweep(f.body, uses); n; n = sweep(f.body, uses))
      total += n;
  }
  return total;
}

} // namespace dt
