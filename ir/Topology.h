// This file implements the machine topology the compiler plans for: which
// world ranks share a node (a host, or an NVLink island), so that the
// redistribution planner can cost a collective whose groups cross nodes as
// slower than one that stays inside a node, and `dtensorc explain` can say
// which collectives cross nodes.
//
// The launcher tells the layout: under mpirun, OMPI_COMM_WORLD_LOCAL_SIZE
// processes share a node (times --ranks-per-process); `--ranks-per-node R`
// or DTENSOR_RANKS_PER_NODE say it for explain and for launchers that do not
// (tools/dtensorc.cpp). World rank w is on node w / R; world ranks are the
// program's sorted distinct device ids (runtime/Executor.h), so on a mesh
// with row-major device ids the outer axes are the ones that cross nodes —
// torch_xla's HybridMesh(ici_mesh_shape, dcn_mesh_shape) is a mesh whose
// leading (DCN) axes are the node-crossing ones.
#pragma once

#include "ir/Types.h"

#include <cstdint>
#include <vector>

namespace dt {

class Module;

struct Topology {
  /// World ranks per node; 0: every rank on one node (nothing crosses).
  int64_t ranksPerNode = 0;
  /// How many bytes inside a node one byte across nodes costs the planner
  /// (network vs shared memory or NVLink: about an order of magnitude).
  int64_t crossNodeCost = 8;
  /// The program's sorted distinct device ids (world rank = index); empty:
  /// device ids are world ranks.
  std::vector<int64_t> worldIds;

  bool multiNode() const { return ranksPerNode > 0; }
  /// The node of device id `id`.
  int64_t nodeOf(int64_t id) const;
  /// Whether some group of `mesh` along `axes` (ranks that differ only in
  /// those axes' coordinates) holds ranks on two nodes.
  bool crosses(const Mesh &mesh, const std::vector<int64_t> &axes) const;
};

/// The sorted distinct device ids of every mesh of `m` ({0} when it has no
/// mesh: one rank runs the host program). World rank r is the r-th.
std::vector<int64_t> programDeviceIds(const Module &m);

} // namespace dt
