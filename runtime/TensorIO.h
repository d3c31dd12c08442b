// This file implements the run-time side of `load` and `save` (Ops.def
// load_file / save_file) over support/TensorFile.h: a rank reads only its
// block of a file; a save is created once and each block written by one rank.
#pragma once

#include "ir/IR.h"
#include "runtime/HostTensor.h"

#include <cstdint>
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

/// A save never writes over the file it replaces: it writes a temporary
/// file next to it (`saveTempPath`, the same name on every rank for one
/// `nonce`), and the first rank renames it over the target once every block
/// is written (`commitSave`). A save that fails, or a run killed while it
/// saves, leaves the old file as it was (`abandonSave` removes the
/// temporary file where the run can).
std::string saveTempPath(const std::string &path, uint64_t nonce);
/// The file a save to `path` replaces: `path`, or the file the symbolic
/// link there points to (a save through a link writes its target, as `cp`
/// does; renaming onto the link replaced the link and left the target old).
std::string saveTarget(const std::string &path);
/// Removes the temporary files that earlier saves to `path` left when their
/// run was killed (SIGKILL runs no cleanup; a preempted job restarted again
/// and again filled the disk): the same name pattern, a process id not alive
/// on this host, and untouched for 10 minutes (a save another host runs now
/// still writes to its file). createSaveFile runs it.
void removeStaleSaves(const std::string &path);
/// A nonce for saveTempPath, distinct across processes and saves.
uint64_t saveNonce();
/// Syncs `temp` and renames it over `path`; RuntimeFault naming `in` if not.
void commitSave(const std::string &temp, const std::string &path);
void abandonSave(const std::string &temp);

/// Creates the file of a `save_file` of values of global types `types` at
/// its temporary path `temp` (saveTempPath; every block then written by
/// writeFileBlock); refuses a target that is not a regular file.
void createSaveFile(const Inst &in, const std::vector<TensorType> &types, const std::string &temp);
/// Writes the host block `block` at `offset` of operand `k` of `save_file`
/// into its temporary file `temp`.
void writeFileBlock(const Inst &in, size_t k, const TensorType &t,
                    const std::vector<int64_t> &offset, const HostTensor &block,
                    const std::string &temp);

} // namespace dt
