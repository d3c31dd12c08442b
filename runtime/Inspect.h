// This file implements the views of a distributed value that the executor and
// `dtensorc run --components / --visualize` offer: assembling the global value
// from the ranks' blocks (the inverse of the SPMD layout, reducing partial
// axes), the per-device component tensors (like TensorFlow DTensor's
// `unpack`), and a terminal table of which devices hold which block (like
// PyTorch/XLA's `visualize_tensor_sharding`).
#pragma once

#include "ir/Types.h"
#include "runtime/HostTensor.h"

#include <optional>
#include <string>
#include <vector>

namespace dt {

/// The global value of type `t` from the blocks of every mesh rank (indexed by
/// mesh rank; host types: blocks[0] is the value). Partial axes are reduced
/// axis by axis in mesh order with their op (avg: sum, then divide); in
/// deterministic mode (Module::deterministic) a partial value is whole on
/// coordinate 0 of its partial axes, which is taken as it is.
/// Throws InternalError when a needed block is missing or misshaped.
HostTensor assembleGlobal(const TensorType &t, const std::vector<std::optional<HostTensor>> &blocks,
                          bool deterministic = false);

/// One line per mesh rank: `device 3: [[20, 14]]` (device id, formatted block).
std::string formatComponents(const TensorType &t,
                             const std::vector<std::optional<HostTensor>> &blocks);

/// A grid of the blocks of `t` (rows: blocks of dim 0, columns: blocks of the
/// last dim; higher dims are listed in a note) labelled with the device ids
/// holding each block, plus a line per partial axis. Example for
/// f32[4, 4] @ m{x: shard(0), y: shard(1)} on m = [x = 2, y = 2]:
///   +-----+-----+
///   |  0  |  1  |
///   +-----+-----+
///   |  2  |  3  |
///   +-----+-----+
std::string visualizeLayout(const TensorType &t);

} // namespace dt
