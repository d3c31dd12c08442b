// This file implements the memory plan (see MemoryPlan.h).
#include "passes/MemoryPlan.h"

#include <algorithm>

namespace dt {

namespace {

/// Every value `in` reads, including reads inside its regions.
void reads(const Inst &in, std::vector<int> &out) {
  out.insert(out.end(), in.operands.begin(), in.operands.end());
  for (auto &r : in.regions)
    for (auto &sub : r.insts)
      reads(sub, out);
}

void printBlock(const MemoryPlan &p, const Block &b, const std::string &where, std::string &out) {
  const auto *d = p.dies(b);
  for (size_t i = 0; i < b.insts.size(); ++i) {
    if (d && i < d->size() && !(*d)[i].empty()) {
      std::vector<int> vs = (*d)[i];
      std::sort(vs.begin(), vs.end());
      out += where + " #" + std::to_string(i) + " " + opName(b.insts[i].op) + ":";
      for (int v : vs)
        out += " %" + std::to_string(v);
      out += "\n";
    }
    for (size_t r = 0; r < b.insts[i].regions.size(); ++r)
      printBlock(p, b.insts[i].regions[r],
                 where + " #" + std::to_string(i) + "." + std::to_string(r), out);
  }
}

} // namespace

MemoryPlan::MemoryPlan(const Module &m) {
  for (const Function &f : m.functions)
    add(f.body);
}

void MemoryPlan::add(const Block &b) {
  std::unordered_map<int, int> last; // value defined in b -> index of its last use
  for (int a : b.args)
    last[a] = 0; // an unused block argument dies at the first instruction
  std::vector<int> rd;
  for (size_t i = 0; i < b.insts.size(); ++i) {
    rd.clear();
    reads(b.insts[i], rd);
    for (int v : rd) {
      auto it = last.find(v);
      if (it != last.end())
        it->second = (int)i;
    }
    for (int r : b.insts[i].results)
      last[r] = (int)i;
    for (auto &r : b.insts[i].regions)
      add(r);
  }
  std::vector<std::vector<int>> dies(b.insts.size());
  for (auto &[v, i] : last)
    dies[i].push_back(v);
  dies_[&b] = std::move(dies);
}

const std::vector<std::vector<int>> *MemoryPlan::dies(const Block &b) const {
  auto it = dies_.find(&b);
  return it == dies_.end() ? nullptr : &it->second;
}

std::string MemoryPlan::print(const Module &m) const {
  std::string out;
  for (const Function &f : m.functions)
    printBlock(*this, f.body, "@" + f.name, out);
  return out;
}

} // namespace dt
