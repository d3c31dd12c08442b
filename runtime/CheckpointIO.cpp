// This file implements the save plan and block loads of checkpoints (see
// CheckpointIO.h).
#include "runtime/CheckpointIO.h"

#include "runtime/Communicator.h"
#include "runtime/TensorIO.h"
#include "support/Errors.h"

#include <map>

namespace dt {

std::string checkpointWhere(const Inst &in) { return opName(in.op); }

CheckpointPlan planCheckpoint(const Inst &in, const std::vector<TensorType> &types,
                              const std::vector<int64_t> &worldIds) {
  FileOperand f = parseFileOperand(in.attrs.str);
  if (f.names.size() != types.size())
    throw InternalError("executor: `save_checkpoint` names " + std::to_string(f.names.size()) +
                        " values but has " + std::to_string(types.size()) + " operands");
  CheckpointPlan plan;
  plan.dir = f.path;
  plan.names = f.names;
  std::map<int, uint64_t> fileEnd; // per writing world rank
  for (size_t k = 0; k < types.size(); ++k) {
    const TensorType &t = types[k];
    CheckpointTensor ct;
    ct.dtype = dtypeName(t.dtype);
    ct.shape = concreteDims(t.shape);
    uint64_t es = (uint64_t)dtypeSize(t.dtype);
    // Each block once: a host value by world rank 0; a distributed one by
    // the rank that holds it at coordinate 0 of every axis not sharding it.
    std::vector<std::pair<int, LocalBlock>> blocks;
    if (t.isHost()) {
      blocks.push_back({0, LocalBlock{std::vector<int64_t>(ct.shape.size(), 0), ct.shape}});
    } else {
      for (auto &a : t.mesh->axes) {
        ct.meshAxes.push_back(a.name);
        ct.meshShape.push_back(a.size);
      }
      ct.meshDevices = t.mesh->devices;
      for (size_t a = 0; a < t.placements.size(); ++a)
        ct.placements.push_back(t.placementStr(a));
      for (int64_t mr = 0; mr < t.mesh->size(); ++mr) {
        auto c = t.mesh->coords(mr);
        bool writer = true;
        for (size_t a = 0; a < t.placements.size(); ++a)
          writer &= t.placements[a].isShard() || c[a] == 0;
        if (writer)
          blocks.push_back({worldRankOf(worldIds, t.mesh->devices[(size_t)mr]), localBlock(t, mr)});
      }
    }
    for (auto &[w, lb] : blocks) {
      uint64_t n = 1;
      for (int64_t d : lb.shape)
        n *= (uint64_t)d;
      if (n == 0)
        continue; // an empty block holds no bytes: not saved
      CheckpointPlan::Block pb;
      pb.operand = k;
      pb.tensorBlock = ct.blocks.size();
      pb.writer = w;
      pb.bytes = n * es;
      CheckpointBlock cb;
      cb.file = checkpointShardName(w);
      cb.offset = fileEnd[w];
      fileEnd[w] += pb.bytes;
      cb.start = lb.offset;
      cb.shape = lb.shape;
      cb.tile = checkpointTileShape(cb.shape, es, plan.index.chunkBytes);
      pb.firstChunk = plan.chunks;
      plan.chunks += checkpointBlockChecksums(cb, es, plan.index.chunkBytes);
      ct.blocks.push_back(std::move(cb));
      plan.blocks.push_back(pb);
    }
    plan.index.tensors[f.names[k]] = std::move(ct);
  }
  return plan;
}

void fillCheckpointChecksums(CheckpointPlan &plan, const std::vector<int64_t> &slots) {
  for (auto &b : plan.blocks) {
    CheckpointTensor &ct = plan.index.tensors.at(plan.names[b.operand]);
    CheckpointBlock &cb = ct.blocks.at(b.tensorBlock);
    uint64_t n = checkpointBlockChecksums(cb, (uint64_t)tensorFileElementSize(ct.dtype),
                                          plan.index.chunkBytes);
    cb.crcs.clear();
    for (uint64_t i = 0; i < n; ++i)
      cb.crcs.push_back((uint32_t)slots.at(b.firstChunk + i));
  }
}

HostTensor loadCheckpointBlock(const Inst &in, const TensorType &t,
                               const std::vector<int64_t> &offset,
                               const std::vector<int64_t> &shape) {
  FileOperand f = parseFileOperand(in.attrs.str);
  if (f.names.size() != 1)
    throw InternalError("executor: `load_checkpoint` needs one tensor name");
  const std::string &name = f.names[0];
  HostTensor r(t.dtype, shape);
  try {
    CheckpointIndex ix = readCheckpointIndex(f.path);
    auto it = ix.tensors.find(name);
    if (it == ix.tensors.end())
      throw TensorFileError(checkpointIndexPath(f.path) + ": no tensor `" + name + "`");
    const CheckpointTensor &ct = it->second;
    if (ct.dtype != dtypeName(t.dtype) || ct.shape != concreteDims(t.shape)) {
      std::string dims;
      for (size_t i = 0; i < ct.shape.size(); ++i)
        dims += (i ? ", " : "") + std::to_string(ct.shape[i]);
      throw TensorFileError(checkpointIndexPath(f.path) + ": tensor `" + name + "` is " + ct.dtype +
                            "[" + dims + "], not the declared `" + t.str() + "`");
    }
    readCheckpointRegion(f.path, ix, name, offset, shape, r.raw());
  } catch (const TensorFileError &err) {
    throw RuntimeFault(checkpointWhere(in) + ": " + err.what());
  }
  return r;
}

} // namespace dt
