// This file implements the topology helpers (see Topology.h).
#include "ir/Topology.h"

#include "ir/IR.h"

#include <algorithm>
#include <map>

namespace dt {

int64_t Topology::nodeOf(int64_t id) const {
  if (ranksPerNode <= 0)
    return 0;
  int64_t rank = id;
  if (!worldIds.empty()) {
    auto it = std::lower_bound(worldIds.begin(), worldIds.end(), id);
    rank = it != worldIds.end() && *it == id ? it - worldIds.begin() : id;
  }
  return rank / ranksPerNode;
}

bool Topology::crosses(const Mesh &mesh, const std::vector<int64_t> &axes) const {
  if (!multiNode())
    return false;
  const int64_t n = mesh.size();
  std::map<std::vector<int64_t>, int64_t> nodeOfGroup;
  for (int64_t r = 0; r < n && r < (int64_t)mesh.devices.size(); ++r) {
    std::vector<int64_t> key = mesh.coords(r);
    for (int64_t a : axes)
      if (a >= 0 && a < (int64_t)key.size())
        key[a] = 0;
    int64_t node = nodeOf(mesh.devices[r]);
    auto [it, fresh] = nodeOfGroup.emplace(std::move(key), node);
    if (!fresh && it->second != node)
      return true;
  }
  return false;
}

std::vector<int64_t> programDeviceIds(const Module &m) {
  std::vector<int64_t> ids;
  for (auto &mesh : m.meshes)
    ids.insert(ids.end(), mesh->devices.begin(), mesh->devices.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty())
    ids.push_back(0); // no mesh: one rank runs the host program
  return ids;
}

} // namespace dt
