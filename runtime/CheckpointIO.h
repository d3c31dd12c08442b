// This file implements the run-time side of `save_checkpoint` and
// `load_checkpoint` (Ops.def save_checkpoint / load_checkpoint) over
// support/Checkpoint.h: the save plan every rank computes alike (which rank
// writes which block where), and a rank's read of its block.
//
// The save plan is a function of the values' types and the world's device
// ids only, so each rank knows, without talking, which blocks it writes and
// where in its shard file; the only data exchanged are the checksums (one
// all-reduce into disjoint slots) and go/no-go flags, both through the
// backend's world communicator (threads or processes alike).
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"
#include "support/Checkpoint.h"

#include <string>
#include <vector>

namespace dt {

/// Who writes what in a save_checkpoint.
struct CheckpointPlan {
  struct Block {
    size_t operand = 0;     ///< which value
    size_t tensorBlock = 0; ///< its index in the tensor's block list
    int writer = 0;         ///< world rank that writes it
    uint64_t bytes = 0;     ///< its size
    size_t firstChunk = 0;  ///< its first checksum slot
  };
  std::string dir;
  std::vector<std::string> names; ///< per operand
  std::vector<Block> blocks;
  size_t chunks = 0;     ///< checksum slots in all
  CheckpointIndex index; ///< every block's file, offset, start and shape; no checksums yet
};

/// The plan of `in` (save_checkpoint) for values of global types `types`
/// on a world of device ids `worldIds` (world rank -> id).
CheckpointPlan planCheckpoint(const Inst &in, const std::vector<TensorType> &types,
                              const std::vector<int64_t> &worldIds);
/// Puts the checksums (slot per chunk, as planned) into the plan's index.
void fillCheckpointChecksums(CheckpointPlan &plan, const std::vector<int64_t> &slots);

/// The block at `offset` of shape `shape` of the value `in`
/// (load_checkpoint) reads, of global type `t`. RuntimeFault naming the file
/// and tensor when the checkpoint is missing, malformed, corrupt or does not
/// match `t`.
HostTensor loadCheckpointBlock(const Inst &in, const TensorType &t,
                               const std::vector<int64_t> &offset,
                               const std::vector<int64_t> &shape);

/// The message prefix of a fault of `in`: `save_checkpoint` (the executor
/// adds the line, rethrowAt).
std::string checkpointWhere(const Inst &in);

} // namespace dt
