// This file implements the memory plan of a per-rank program: for every block
// of every function, per instruction, the values defined in that block (or
// its arguments) whose last use is that instruction. A use inside a nested
// region counts as a use by the instruction that owns the region; an unused
// value dies at its definition. The executor releases a value's buffer right
// after the instruction it dies at, pools it for reuse and runs kernels in
// place over dying inputs (runtime/KernelRuntime.h).
//
// Needs: a module whose blocks do not move while the plan is used (the plan
// is keyed by block address; a CompiledProgram owns both).
#pragma once

#include "ir/IR.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace dt {

class MemoryPlan {
public:
  explicit MemoryPlan(const Module &m);
  /// Per instruction of `b`, the values that die there; null for a block the
  /// plan does not know.
  const std::vector<std::vector<int>> *dies(const Block &b) const;
  /// One line per instruction with dying values (`@main #3: %4 %7`), for
  /// `dtensorc emit memplan`.
  std::string print(const Module &m) const;

private:
  void add(const Block &b);
  std::unordered_map<const Block *, std::vector<std::vector<int>>> dies_;
};

} // namespace dt
