// This file implements distributed checkpoints on disk: a folder holding one
// shard file per writing rank (`rank-00003.bin`, its blocks back to back)
// and `index.json`, which records per tensor its dtype, global shape, the
// mesh and placements it was saved from, and every block: file, byte offset,
// global start, shape, tile shape and a CRC-32C per tile.
//
// A block is stored as tiles (version 2): boxes of about `chunk_bytes`
// bytes, each row-major, in row-major order of the tile grid. The last dim
// is cut into about 8 column groups, so a load onto a layout that shards any
// dim (rows, columns, a middle dim) reads the tiles its block overlaps, not
// every byte of every row: a column block of a row-sharded save reads its own
// bytes plus at most a tile at each edge. Version 1 (still read) stored a
// block row-major with a CRC per `chunk_bytes` chunk.
//
// Loading reads a region (any block of any layout) from the saved blocks it
// overlaps, reading only the checksummed tiles (chunks) that hold bytes of
// the region and verifying each, so a rank never reads a whole tensor and
// never returns a byte whose tile does not match its checksum.
//
// Saving is atomic: the shards and the index are written into `DIR.tmp`
// (beside the target), fsynced with the folder, then swapped with `DIR` in
// one rename (renameat2 RENAME_EXCHANGE, or a plain rename when DIR does not
// exist yet) and the parent folder fsynced; the previous checkpoint is
// removed only after. A crash at any point leaves DIR as the previous
// complete checkpoint (or absent) and at most a stale `DIR.tmp`, which the
// next save removes.
//
// The index is hostile input: its size is capped, every field is checked
// (dtypes, shapes, overflow, blocks inside the tensor, blocks covering it
// exactly with no overlap, file names without `/`), and anything else is a
// TensorFileError naming the file and tensor.
#pragma once

#include "support/TensorFile.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dt {

/// Bytes per checksummed tile (chunk) of a block: the granularity of
/// verified reads (a region's read rounds out to whole tiles).
constexpr uint64_t kCheckpointChunkBytes = 64u << 10;
/// Tiles of an index larger than this are rejected (a hostile index must not
/// make a reader allocate without bound).
constexpr uint64_t kMaxCheckpointTileBytes = 64u << 20;
/// index.json files longer than this are rejected.
constexpr uint64_t kMaxCheckpointIndexBytes = 256u << 20;
/// Blocks of one tensor (a mesh has at most 4096 devices).
constexpr size_t kMaxCheckpointBlocks = 4096;

/// One saved block of a tensor.
struct CheckpointBlock {
  std::string file;           ///< shard file name inside the checkpoint folder
  uint64_t offset = 0;        ///< byte offset of the block in its file
  std::vector<int64_t> start; ///< global index of the block's first element
  std::vector<int64_t> shape; ///< the block's shape (row-major in the file)
  /// The tile shape (one entry a dim; every tile but those at the block's
  /// far edges has it): tiles are stored in row-major order of the tile
  /// grid, each row-major, one checksum a tile. Empty: the block is stored
  /// row-major with one checksum a chunk of the index's `chunkBytes`
  /// (version 1, and every rank-0 block).
  std::vector<int64_t> tile;
  std::vector<uint32_t> crcs; ///< CRC-32C of each tile (chunk), in storage order
};

/// One saved tensor.
struct CheckpointTensor {
  std::string dtype;          ///< f32 f64 i32 i64 bool
  std::vector<int64_t> shape; ///< global shape
  /// The layout it was saved from (informational; loading uses the blocks):
  /// mesh axis names, sizes and device ids, and one placement a mesh axis
  /// (`shard(0)`, `replicate`); all empty for a host value.
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape, meshDevices;
  std::vector<std::string> placements;
  std::vector<CheckpointBlock> blocks;
};

struct CheckpointIndex {
  uint64_t chunkBytes = kCheckpointChunkBytes;
  std::map<std::string, CheckpointTensor> tensors;
};

/// The index as JSON text.
std::string writeCheckpointIndex(const CheckpointIndex &ix);
/// Parses and checks index text; `path` names it in errors.
CheckpointIndex parseCheckpointIndex(const std::string &text, const std::string &path);
/// Reads and checks `dir/index.json`.
CheckpointIndex readCheckpointIndex(const std::string &dir);

/// Number of checksummed chunks of `bytes` bytes.
uint64_t checkpointChunks(uint64_t bytes, uint64_t chunkBytes);
/// The tile shape a block of `shape` with elements of `elemSize` bytes is
/// saved in: about `tileBytes` bytes, the last dim cut into about 8 groups
/// of at least 128 bytes, then as many whole rows (and outer dims) as fit.
/// Empty for a rank-0 block (stored as one chunk).
std::vector<int64_t> checkpointTileShape(const std::vector<int64_t> &shape, uint64_t elemSize,
                                         uint64_t tileBytes);
/// Number of checksums of a block (of `b.shape` and `b.tile`): its tiles,
/// or its chunks when it has no tile shape.
uint64_t checkpointBlockChecksums(const CheckpointBlock &b, uint64_t elemSize, uint64_t chunkBytes);
/// The path of the index and of a shard file of the checkpoint in `dir`.
std::string checkpointIndexPath(const std::string &dir);
std::string checkpointShardName(int worldRank);
/// The temporary folder a save of `dir` writes into.
std::string checkpointTempDir(const std::string &dir);

/// Reads the region at `start` of shape `shape` of tensor `name` (an entry of
/// `ix`, read from `dir`) into `dst` (row-major), from the saved blocks it
/// overlaps, verifying the checksum of every tile (chunk) it reads. Returns
/// the number of bytes read from shard files.
uint64_t readCheckpointRegion(const std::string &dir, const CheckpointIndex &ix,
                              const std::string &name, const std::vector<int64_t> &start,
                              const std::vector<int64_t> &shape, void *dst);

/// Save, step 1 (one writer): checks that `dir` is absent or a checkpoint
/// (never replaces anything else), removes a stale temporary folder, and
/// creates an empty one.
void beginCheckpointSave(const std::string &dir);
/// Save, step 2 (each writing rank): its shard file in the temporary folder
/// of `dir`, written a block at a time (no rank holds more than one block on
/// the host), then synced.
class CheckpointShardWriter {
public:
  CheckpointShardWriter(const std::string &dir, const std::string &file, uint64_t chunkBytes);
  ~CheckpointShardWriter();
  CheckpointShardWriter(const CheckpointShardWriter &) = delete;
  CheckpointShardWriter &operator=(const CheckpointShardWriter &) = delete;
  /// Writes block `b` (its `offset`, `shape` and `tile`; `data` row-major,
  /// elements of `elemSize` bytes) in its storage order; returns its
  /// checksums (one a tile, or a chunk when `b.tile` is empty).
  std::vector<uint32_t> write(const CheckpointBlock &b, uint64_t elemSize, const void *data);
  /// fsyncs and closes the file.
  void finish();

private:
  /// Writes `bytes` bytes at `offset`.
  void put(uint64_t offset, const char *p, uint64_t bytes);

  std::string path_;
  uint64_t chunk_;
  int fd_ = -1;
};
/// Save, step 3 (one writer, after every shard is synced): writes the index
/// into the temporary folder, fsyncs it and the folder, and swaps it in.
void commitCheckpointSave(const std::string &dir, const CheckpointIndex &ix);
/// After a failed save: removes the temporary folder (best effort).
void abandonCheckpointSave(const std::string &dir);

} // namespace dt
