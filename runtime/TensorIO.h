// This file implements the run-time side of `load` and `save` (Ops.def
// load_file / save_file) over support/TensorFile.h: a rank reads only its
// block of a file; a save is created once and each block written by one rank.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"

#include <string>
#include <vector>

namespace dt {

/// The file and tensor names of a load_file / save_file (`str` attribute:
/// the path, then one name per line).
struct FileOperand {
  std::string path;
  std::vector<std::string> names;
};
FileOperand parseFileOperand(const std::string &str);

/// The block at `offset` of shape `shape` of the value `load_file` reads
/// (of global type `t`). RuntimeFault when the file no longer matches.
HostTensor loadFileBlock(const Inst &in, const TensorType &t, const std::vector<int64_t> &offset,
                         const std::vector<int64_t> &shape);

/// Creates the file of a `save_file` of values of global types `types`
/// (every block then written by writeFileBlock).
void createSaveFile(const Inst &in, const std::vector<TensorType> &types);
/// Writes the host block `block` at `offset` of operand `k` of `save_file`.
void writeFileBlock(const Inst &in, size_t k, const TensorType &t,
                    const std::vector<int64_t> &offset, const HostTensor &block);

} // namespace dt
