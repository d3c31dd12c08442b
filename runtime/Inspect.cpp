// This file implements assembling, listing and drawing distributed values
// (see Inspect.h).
#include "runtime/Inspect.h"

#include "runtime/Communicator.h"
#include "runtime/Format.h"
#include "runtime/LocalOps.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <map>
#include <set>

namespace dt {

HostTensor assembleGlobal(const TensorType &t, const std::vector<std::optional<HostTensor>> &blocks,
                          bool deterministic) {
  auto need = [&](int64_t r) -> const HostTensor & {
    if (r >= (int64_t)blocks.size() || !blocks[r])
      throw InternalError("executor: no block of `" + t.str() + "` on mesh rank " +
                          std::to_string(r));
    return *blocks[r];
  };
  auto dims = concreteDims(t.shape);
  if (t.isHost())
    return need(0);
  const Mesh &mesh = *t.mesh;
  std::vector<int> partialAxes;
  for (size_t a = 0; a < t.placements.size(); ++a)
    if (t.placements[a].isPartial())
      partialAxes.push_back((int)a);
  // One assembled tensor per combination of coordinates on the partial axes.
  std::map<std::vector<int64_t>, HostTensor> parts;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    auto c = mesh.coords(r);
    std::vector<int64_t> pc;
    for (int a : partialAxes)
      pc.push_back(c[a]);
    auto it = parts.find(pc);
    if (it == parts.end())
      it = parts.emplace(pc, HostTensor(t.dtype, dims)).first;
    const HostTensor &b = need(r);
    LocalBlock lb = localBlock(t, r);
    if (b.shape != lb.shape)
      throw InternalError("executor: block of mesh rank " + std::to_string(r) + " of `" + t.str() +
                          "` has the wrong shape");
    copyRegion(b.raw(), b.shape, std::vector<int64_t>(lb.shape.size(), 0), it->second.raw(), dims,
               lb.offset, lb.shape, dtypeSize(t.dtype));
  }
  if (deterministic && !partialAxes.empty())
    return parts.at(std::vector<int64_t>(partialAxes.size(), 0));
  // Reduce the partial axes, last axis first (inner reductions first).
  for (size_t k = partialAxes.size(); k-- > 0;) {
    ReduceOp op = t.placements[partialAxes[k]].op;
    std::map<std::vector<int64_t>, HostTensor> next;
    int64_t n = mesh.axes[partialAxes[k]].size;
    for (auto &[pc, v] : parts) {
      std::vector<int64_t> key(pc.begin(), pc.begin() + k);
      auto it = next.find(key);
      if (it == next.end()) {
        next.emplace(key, v.clone());
        continue;
      }
      reduceInto(it->second.raw(), v.raw(), v.numel(), t.dtype, op);
    }
    for (auto &[key, v] : next)
      finishAvg(v.raw(), v.numel(), t.dtype, op, (int)n);
    parts = std::move(next);
  }
  return parts.begin()->second;
}

std::string formatComponents(const TensorType &t,
                             const std::vector<std::optional<HostTensor>> &blocks) {
  std::string out;
  int64_t n = t.isHost() ? 1 : t.mesh->size();
  for (int64_t r = 0; r < n && r < (int64_t)blocks.size(); ++r) {
    int64_t dev = t.isHost() ? 0 : t.mesh->devices[r];
    out += "device " + std::to_string(dev) + ": " +
           (blocks[r] ? formatTensor(*blocks[r]) : std::string("(none)")) + "\n";
  }
  return out;
}

namespace {

std::string center(const std::string &s, size_t w) {
  size_t pad = w > s.size() ? w - s.size() : 0;
  return std::string(pad / 2, ' ') + s + std::string(pad - pad / 2, ' ');
}

} // namespace

std::string visualizeLayout(const TensorType &t) {
  std::string out = t.str() + "\n";
  if (t.isHost())
    return out + "(host value: every rank holds all of it)\n";
  const Mesh &mesh = *t.mesh;
  int rd = t.rank() > 0 ? 0 : -1, cd = t.rank() > 1 ? t.rank() - 1 : -1;
  using Range = std::pair<int64_t, int64_t>;
  std::set<Range> rows, cols;
  std::map<std::pair<Range, Range>, std::vector<int64_t>> cells;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    LocalBlock b = localBlock(t, r);
    Range row = rd >= 0 ? Range{b.offset[rd], b.shape[rd]} : Range{0, 1};
    Range col = cd >= 0 ? Range{b.offset[cd], b.shape[cd]} : Range{0, 1};
    rows.insert(row);
    cols.insert(col);
    auto &devs = cells[{row, col}];
    if (std::find(devs.begin(), devs.end(), mesh.devices[r]) == devs.end())
      devs.push_back(mesh.devices[r]);
  }
  std::map<std::pair<Range, Range>, std::string> labels;
  size_t w = 3;
  for (auto &[k, devs] : cells) {
    std::string s;
    for (size_t i = 0; i < devs.size(); ++i)
      s += (i ? "," : "") + std::to_string(devs[i]);
    labels[k] = s;
    w = std::max(w, s.size() + 2);
  }
  std::string sep = "+";
  for (size_t i = 0; i < cols.size(); ++i)
    sep += std::string(w, '-') + "+";
  out += sep + "\n";
  for (auto &row : rows) {
    out += "|";
    for (auto &col : cols) {
      auto it = labels.find({row, col});
      out += center(it == labels.end() ? "" : it->second, w) + "|";
    }
    out += "\n" + sep + "\n";
  }
  auto rangeStr = [](const Range &r) {
    return "[" + std::to_string(r.first) + ":" + std::to_string(r.first + r.second) + "]";
  };
  if (rd >= 0) {
    out += "rows: dim 0 blocks";
    for (auto &r : rows)
      out += " " + rangeStr(r);
    out += "\n";
  }
  if (cd >= 0) {
    out += "cols: dim " + std::to_string(cd) + " blocks";
    for (auto &c : cols)
      out += " " + rangeStr(c);
    out += "\n";
  }
  for (int d = 1; d + 1 < t.rank(); ++d)
    if (!t.axesShardingDim(d).empty())
      out += "dim " + std::to_string(d) + " is also sharded (not drawn): devices in one cell " +
             "hold different blocks of it\n";
  for (size_t a = 0; a < t.placements.size(); ++a)
    if (t.placements[a].isPartial())
      out += "partial(" + std::string(reduceOpName(t.placements[a].op)) + ") over `" +
             mesh.axes[a].name + "`: the devices of a cell hold partial values\n";
  return out;
}

} // namespace dt
