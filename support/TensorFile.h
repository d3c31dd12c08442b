// This file implements tensor files: numpy's `.npy` (one array) and
// safetensors (several named arrays), read and written a block at a time.
//
// Reading: the header gives dtype, shape and where the data starts; a block
// (an offset and a shape inside the global array) is read with one `pread`
// per contiguous row run, so a rank reads only the bytes of its block, never
// the whole file. Writing: one writer creates the file with its header and
// its full size; then each block's writer `pwrite`s its rows (no process
// holds the whole array). Both formats store row-major little-endian data.
//
// Headers are hostile input: lengths are capped, every offset must lie inside
// the file, safetensors entries must not overlap and must hold exactly
// numel * element size bytes; anything else is a TensorFileError naming the
// file (and the tensor). Dtypes are the language's names: f32 f64 i32 i64
// bool (npy `<f4 <f8 <i4 <i8 |b1`, safetensors F32 F64 I32 I64 BOOL).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dt {

/// A malformed, missing or mismatched tensor file (the message names it).
class TensorFileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One array in a file.
struct TensorFileEntry {
  std::string dtype;          ///< f32 f64 bf16 f16 i32 i64 bool
  std::vector<int64_t> shape; ///< row-major
  uint64_t dataOffset = 0;    ///< byte offset of element 0 in the file
  int64_t elementSize = 0;    ///< bytes per element
};

/// Headers longer than this are rejected (numpy's own limit is 64 KiB for
/// v1; safetensors writers stay far below).
constexpr uint64_t kMaxTensorHeaderBytes = 100u << 20;

/// Whether `path` names a safetensors file (by its extension).
bool isSafetensorsPath(const std::string &path);

/// Parses an `.npy` file's first bytes (`data`, at least the whole header)
/// of a file of `fileSize` bytes.
TensorFileEntry parseNpyHeader(const std::string &data, uint64_t fileSize);
/// Parses a safetensors file's first bytes (the 8-byte length and the JSON
/// header) of a file of `fileSize` bytes: every tensor by name.
std::map<std::string, TensorFileEntry> parseSafetensorsHeader(const std::string &data,
                                                              uint64_t fileSize);

/// The array `key` of the file at `path` (`key` is ignored for `.npy`, and
/// required for safetensors). Reads only the header.
TensorFileEntry readTensorFileEntry(const std::string &path, const std::string &key);

/// Reads the block at `offset` of shape `block` of `e` from `path` into
/// `dst` (row-major, numel(block) * elementSize bytes).
void readTensorBlock(const std::string &path, const TensorFileEntry &e,
                     const std::vector<int64_t> &offset, const std::vector<int64_t> &block,
                     void *dst);

/// Creates `path` (replacing it) as an `.npy` file of `dtype` and `shape`,
/// its data zero until written; returns its entry.
TensorFileEntry createNpyFile(const std::string &path, const std::string &dtype,
                              const std::vector<int64_t> &shape);
/// Creates `path` (replacing it) as a safetensors file holding `tensors`
/// (name, dtype, shape; dataOffset and elementSize are filled in), their data
/// zero until written; returns the entries by name.
std::map<std::string, TensorFileEntry>
createSafetensorsFile(const std::string &path,
                      const std::vector<std::pair<std::string, TensorFileEntry>> &tensors);
/// Writes the block at `offset` of shape `block` from `src` into the array
/// `e` of the existing file `path`.
void writeTensorBlock(const std::string &path, const TensorFileEntry &e,
                      const std::vector<int64_t> &offset, const std::vector<int64_t> &block,
                      const void *src);

/// The bytes of an element of `dtype` (a language dtype name); 0 if unknown.
int64_t tensorFileElementSize(const std::string &dtype);

} // namespace dt
