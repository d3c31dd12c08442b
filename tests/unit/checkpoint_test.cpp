// Unit tests of checkpoints on disk (support/Checkpoint.h, support/Crc32c.h):
// the checksum, the index writer and its hardened reader, and region reads
// of every layout from blocks of another, with checksum failures.
#include "support/Checkpoint.h"
#include "support/Crc32c.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace dt;

namespace {

std::string tempDir(const char *tag) {
  auto p = std::filesystem::temp_directory_path() /
           ("dt_ckpt_" + std::string(tag) + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::remove_all(p.string() + ".tmp");
  return p.string();
}

/// torch.chunk blocks of `n` over `k`: (start, size) per part.
std::vector<std::pair<int64_t, int64_t>> chunks(int64_t n, int64_t k) {
  int64_t c = (n + k - 1) / k;
  std::vector<std::pair<int64_t, int64_t>> r;
  for (int64_t i = 0; i < k; ++i) {
    int64_t s = std::min(n, i * c), e = std::min(n, (i + 1) * c);
    r.push_back({s, e - s});
  }
  return r;
}

/// A 2-D grid of blocks: rows split `pr` ways, columns `pc` ways.
struct Grid {
  std::vector<std::vector<int64_t>> start, shape;
};
Grid grid(int64_t rows, int64_t cols, int64_t pr, int64_t pc) {
  Grid g;
  for (auto [rs, rn] : chunks(rows, pr))
    for (auto [cs, cn] : chunks(cols, pc)) {
      g.start.push_back({rs, cs});
      g.shape.push_back({rn, cn});
    }
  return g;
}

/// How a test saves its blocks: row-major chunks (version 1), tiles of the
/// writer's rule, or tiles of a fixed shape (clipped to the block).
struct Tiling {
  enum Kind { Chunks, Rule, Fixed } kind = Rule;
  std::vector<int64_t> tile = {};
};

/// Saves the `rows` x `cols` array `data` (element size `es`) as blocks of
/// `saved`, one shard file per block, chunks (tiles) of `chunk` bytes.
CheckpointIndex saveGrid(const std::string &dir, const std::vector<unsigned char> &data,
                         int64_t rows, int64_t cols, int64_t es, const std::string &dtype,
                         const Grid &saved, uint64_t chunk, Tiling tiling = {}) {
  CheckpointIndex ix;
  ix.chunkBytes = chunk;
  CheckpointTensor t;
  t.dtype = dtype;
  t.shape = {rows, cols};
  beginCheckpointSave(dir);
  for (size_t k = 0; k < saved.start.size(); ++k) {
    int64_t r0 = saved.start[k][0], c0 = saved.start[k][1];
    int64_t rn = saved.shape[k][0], cn = saved.shape[k][1];
    if (rn * cn == 0)
      continue;
    std::vector<unsigned char> blk;
    for (int64_t r = r0; r < r0 + rn; ++r)
      blk.insert(blk.end(), data.begin() + (r * cols + c0) * es,
                 data.begin() + (r * cols + c0 + cn) * es);
    CheckpointBlock b;
    b.file = checkpointShardName((int)k);
    b.offset = 8 * k; // not at 0: offsets are honoured
    b.start = saved.start[k];
    b.shape = saved.shape[k];
    if (tiling.kind == Tiling::Rule)
      b.tile = checkpointTileShape(b.shape, (uint64_t)es, chunk);
    if (tiling.kind == Tiling::Fixed)
      b.tile = {std::min(tiling.tile[0], rn), std::min(tiling.tile[1], cn)};
    CheckpointShardWriter w(dir, b.file, chunk);
    b.crcs = w.write(b, (uint64_t)es, blk.data());
    CHECK(b.crcs.size() == checkpointBlockChecksums(b, (uint64_t)es, chunk));
    w.finish();
    t.blocks.push_back(b);
  }
  ix.tensors["t"] = t;
  commitCheckpointSave(dir, ix);
  return ix;
}

std::string expectBad(const std::string &text) {
  try {
    parseCheckpointIndex(text, "ix.json");
  } catch (const TensorFileError &e) {
    return e.what();
  }
  return "(accepted)";
}

std::string validIndex(const std::string &tensorBody) {
  return "{\"format\": \"dtensor-checkpoint\", \"version\": 1, \"chunk_bytes\": 16, "
         "\"tensors\": {\"w\": {" +
         tensorBody + "}}}";
}

const char *kMeta = "\"mesh_axes\": [\"x\"], \"mesh_shape\": [2], \"mesh_devices\": [0, 1], "
                    "\"placements\": [\"shard(0)\"], ";

} // namespace

TEST_CASE("crc32c: the standard check value, incremental, hardware = table") {
  const char *s = "123456789";
  CHECK(crc32c(0, s, 9) == 0xE3069283u);
  CHECK(crc32c(crc32c(0, s, 4), s + 4, 5) == 0xE3069283u);
  CHECK(crc32c(0, "", 0) == 0u);
  // Every length and alignment near the 8-byte steps against bytewise.
  std::vector<unsigned char> buf(100);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = (unsigned char)(i * 37 + 11);
  for (size_t off = 0; off < 9; ++off)
    for (size_t n = 0; n + off <= buf.size(); n += 7) {
      uint32_t one = 0;
      for (size_t i = 0; i < n; ++i)
        one = crc32c(one, &buf[off + i], 1);
      CHECK(crc32c(0, &buf[off], n) == one);
    }
  // The interleaved hardware path (lanes of 8 KiB and 256 B, 3 at a time):
  // lengths around every lane boundary, split at any point, against a
  // byte-at-a-time CRC of the same bytes.
  std::vector<unsigned char> big(3 * 8192 * 2 + 3 * 256 * 3 + 50);
  uint64_t x = 88172645463325252ull;
  for (auto &b : big) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = (unsigned char)x;
  }
  std::vector<uint32_t> prefix(big.size() + 1); // prefix[n]: byte-at-a-time CRC of n bytes
  for (size_t i = 0; i < big.size(); ++i)
    prefix[i + 1] = crc32c(prefix[i], &big[i], 1);
  for (size_t n : {size_t(767), size_t(768), size_t(769), size_t(3 * 8192 - 1), size_t(3 * 8192),
                   size_t(3 * 8192 + 1), size_t(3 * 8192 + 768 + 7), big.size()})
    for (size_t off : {size_t(0), size_t(1), size_t(5)}) {
      if (n + off > big.size())
        continue;
      CAPTURE(n);
      CAPTURE(off);
      uint32_t ref = 0;
      for (size_t i = 0; i < n; ++i)
        ref = crc32c(ref, &big[off + i], 1);
      CHECK(crc32c(0, &big[off], n) == ref);
      if (off == 0) {
        CHECK(crc32c(0, big.data(), n) == prefix[n]);
        CHECK(crc32c(crc32c(0, big.data(), n / 3), &big[n / 3], n - n / 3) == prefix[n]);
      }
    }
}

TEST_CASE("checkpoint index: writes and reads back every field") {
  CheckpointIndex ix;
  ix.chunkBytes = 32;
  CheckpointTensor t;
  t.dtype = "i64";
  t.shape = {3, 5};
  t.meshAxes = {"a", "b"};
  t.meshShape = {2, 2};
  t.meshDevices = {4, 5, 6, 7};
  t.placements = {"shard(1)", "replicate"};
  t.blocks.push_back({"rank-00000.bin", 0, {0, 0}, {3, 3}, {}, {1, 2, 3}});             // chunks
  t.blocks.push_back({"rank-00002.bin", 72, {0, 3}, {3, 2}, {2, 2}, {4294967295u, 0}}); // tiles
  ix.tensors["layers.0.w \"quoted\"\n"] = t;
  CheckpointTensor s;
  s.dtype = "bool";
  s.blocks.push_back({"rank-00000.bin", 120, {}, {}, {}, {9}});
  ix.tensors["step"] = s;
  CheckpointTensor e; // an empty tensor has no blocks
  e.dtype = "f32";
  e.shape = {0, 4};
  ix.tensors["empty"] = e;
  std::string text = writeCheckpointIndex(ix);
  CheckpointIndex back = parseCheckpointIndex(text, "ix.json");
  CHECK(writeCheckpointIndex(back) == text);
  REQUIRE(back.tensors.size() == 3);
  const CheckpointTensor &b = back.tensors.at("layers.0.w \"quoted\"\n");
  CHECK(b.meshDevices == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(b.placements == std::vector<std::string>{"shard(1)", "replicate"});
  CHECK(b.blocks[1].offset == 72);
  CHECK(b.blocks[1].crcs == std::vector<uint32_t>{4294967295u, 0});
  CHECK(b.blocks[1].tile == std::vector<int64_t>{2, 2});
  CHECK(b.blocks[0].tile.empty());
  CHECK(back.chunkBytes == 32);
}

TEST_CASE("checkpoint index: hostile indices are errors naming the file and tensor") {
  std::string blk = "\"blocks\": [{\"file\": \"r0.bin\", \"offset\": 0, \"start\": [0], "
                    "\"shape\": [2], \"crc32c\": [1]}";
  std::string good = validIndex(std::string("\"dtype\": \"f32\", \"shape\": [4], ") + kMeta + blk +
                                ", {\"file\": \"r1.bin\", \"offset\": 0, \"start\": [2], "
                                "\"shape\": [2], \"crc32c\": [2]}]");
  CHECK(expectBad(good) == "(accepted)");
  auto with = [&](const std::string &from, const std::string &to) {
    std::string s = good;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  struct Case {
    std::string text, want;
  };
  std::vector<Case> cases = {
      {"", "truncated"},
      {"{", "expected a string"},
      {"[]", "not a JSON object"},
      {good + "x", "text after the index"},
      {with("dtensor-checkpoint", "other"), "`format` is not"},
      {with("\"version\": 1", "\"version\": 3"), "version 3"},
      {with("\"version\": 1", "\"version\": 0"), "version 0"},
      {with("\"shape\": [2], \"crc32c\": [1]", "\"shape\": [2], \"tile\": [2], \"crc32c\": [1]"),
       "a `tile` in a version 1 index"},
      {with("\"chunk_bytes\": 16", "\"chunk_bytes\": 0"), "`chunk_bytes` = 0 is out of range"},
      {with("\"f32\"", "\"f8\""), "tensor `w`): unknown dtype `f8`"},
      {with("\"shape\": [4]", "\"shape\": [-4]"), "`shape` holds a bad value"},
      {with("\"shape\": [4]", "\"shape\": [4611686018427387904, 4]"), "overflows"},
      {with("\"r0.bin\"", "\"../etc/passwd\""), "not a plain name inside the checkpoint"},
      {with("\"r0.bin\"", "\"..\""), "not a plain name"},
      {with("\"start\": [2]", "\"start\": [3]"), "block 1): the block lies outside the tensor"},
      {with("\"start\": [2]", "\"start\": [1]"), "blocks 0 and 1 overlap"},
      {with("\"shape\": [2], \"crc32c\": [2]", "\"shape\": [1], \"crc32c\": [2]"),
       "the blocks hold 3 of the tensor's 4 elements"},
      {with("\"crc32c\": [1]", "\"crc32c\": [1, 2]"), "2 checksums for 1 chunks"},
      {with("\"crc32c\": [1]", "\"crc32c\": [4294967296]"), "`crc32c` holds a bad value"},
      {with("\"offset\": 0", "\"offset\": 9223372036854775807"), "overflows"},
      {with("\"offset\": 0", "\"offset\": 99999999999999999999"), "an integer out of range"},
      {with("\"offset\": 0", "\"offset\": 1.5"), "a non-integer number"},
      {with("\"start\": [0]", "\"start\": [0, 0]"), "one entry per dim"},
      {with("\"placements\": [\"shard(0)\"]", "\"placements\": []"), "differ in length"},
      {with("\"dtype\"", "\"dtype\": \"f32\", \"dtype\""), "the key `dtype` twice"},
      {with("\"mesh_axes\": [\"x\"]", "\"mesh_axes\": [\"x\\u0001\"]"), "(accepted)"},
      {with("\"mesh_axes\": [\"x\"]", "\"mesh_axes\": [\"x\\u00e9\"]"), "non-ASCII"},
      {with("\"mesh_axes\": [\"x\"]", "\"mesh_axes\": [\"x\x01\"]"), "a control character"},
      {with("\"blocks\": [", "\"blocks\": {"), "expected a string"},
      {with("\"file\": \"r0.bin\", ", ""), "block 0): missing `file`"},
      {std::string(200, '['), "nesting deeper than 16"},
  };
  for (auto &c : cases) {
    INFO(c.text);
    std::string got = expectBad(c.text);
    CHECK(got.find(c.want) != std::string::npos);
    if (c.want != "(accepted)")
      CHECK(got.rfind("ix.json: ", 0) == 0);
  }
}

TEST_CASE("checkpoint index: hostile tiles are errors") {
  auto index = [](const std::string &tile, const std::string &crcs) {
    return "{\"format\": \"dtensor-checkpoint\", \"version\": 2, \"chunk_bytes\": 16, "
           "\"tensors\": {\"w\": {\"dtype\": \"f32\", \"shape\": [4, 6], " +
           std::string(kMeta) +
           "\"blocks\": [{\"file\": \"r0.bin\", \"offset\": 0, \"start\": [0, 0], "
           "\"shape\": [4, 6]" +
           tile + ", \"crc32c\": " + crcs + "}]}}}";
  };
  CHECK(expectBad(index(", \"tile\": [3, 4]", "[1, 2, 3, 4]")) == "(accepted)"); // 2x2 tiles
  CHECK(expectBad(index("", "[1, 2, 3, 4, 5, 6]")) == "(accepted)"); // 96 bytes: 6 chunks
  struct Case {
    std::string tile, crcs, want;
  };
  std::vector<Case> cases = {
      {", \"tile\": [3, 4]", "[1, 2, 3]", "3 checksums for 4 tiles"},
      {", \"tile\": [3]", "[1]", "`tile` needs one entry per dim"},
      {", \"tile\": [0, 4]", "[1]", "`tile` holds a bad value"},
      {", \"tile\": [5, 4]", "[1]", "the tile is larger than the block in dim 0"},
      {", \"tile\": 3", "[1]", "`tile` has the wrong type"},
  };
  for (auto &c : cases) {
    INFO(c.tile);
    CHECK(expectBad(index(c.tile, c.crcs)).find(c.want) != std::string::npos);
  }
  // A tile larger than the reader allows (a hostile index must not make it
  // allocate without bound).
  std::string huge = "{\"format\": \"dtensor-checkpoint\", \"version\": 2, "
                     "\"chunk_bytes\": 16, \"tensors\": {\"w\": {\"dtype\": \"f64\", "
                     "\"shape\": [16777216], " +
                     std::string(kMeta) +
                     "\"blocks\": [{\"file\": \"r0.bin\", \"offset\": 0, \"start\": [0], "
                     "\"shape\": [16777216], \"tile\": [16777216], \"crc32c\": [1]}]}}}";
  CHECK(expectBad(huge).find("a tile of 134217728 bytes") != std::string::npos);
}

TEST_CASE("checkpoint: a region of any layout reads from blocks of another") {
  std::mt19937 rng(7);
  for (int64_t es : {1, 4, 8}) {
    const char *dtype = es == 1 ? "bool" : es == 4 ? "f32" : "f64";
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 5}, {1, 9}, {6, 1}, {0, 3}}) {
      std::vector<unsigned char> data((size_t)(rows * cols * es));
      for (auto &b : data)
        b = (unsigned char)rng();
      for (auto [pr, pc] : {std::pair<int64_t, int64_t>{4, 1}, {2, 2}, {1, 3}, {3, 4}})
        for (Tiling tiling :
             {Tiling{Tiling::Chunks}, Tiling{Tiling::Rule}, Tiling{Tiling::Fixed, {2, 2}},
              Tiling{Tiling::Fixed, {1, 3}}, Tiling{Tiling::Fixed, {3, 1}}}) {
          std::string dir = tempDir("region");
          // Small chunks (tiles): a region read crosses tile and batch boundaries.
          CheckpointIndex ix =
              saveGrid(dir, data, rows, cols, es, dtype, grid(rows, cols, pr, pc), 12, tiling);
          CheckpointIndex read = readCheckpointIndex(dir);
          CHECK(writeCheckpointIndex(read) == writeCheckpointIndex(ix));
          for (auto [qr, qc] : {std::pair<int64_t, int64_t>{1, 1}, {3, 1}, {1, 4}, {2, 3}}) {
            Grid want = grid(rows, cols, qr, qc);
            for (size_t k = 0; k < want.start.size(); ++k) {
              int64_t r0 = want.start[k][0], c0 = want.start[k][1];
              int64_t rn = want.shape[k][0], cn = want.shape[k][1];
              std::vector<unsigned char> got((size_t)(rn * cn * es) + 1, 0xAB);
              readCheckpointRegion(dir, read, "t", want.start[k], want.shape[k], got.data());
              bool same = true;
              for (int64_t r = 0; r < rn; ++r)
                same &= std::memcmp(&got[(size_t)(r * cn * es)],
                                    &data[(size_t)(((r0 + r) * cols + c0) * es)],
                                    (size_t)(cn * es)) == 0;
              INFO(dtype, " ", rows, "x", cols, " saved ", pr, "x", pc, " read ", qr, "x", qc,
                   " tiling ", (int)tiling.kind);
              CHECK(same);
              CHECK(got.back() == 0xAB); // nothing written past the region
            }
          }
          std::filesystem::remove_all(dir);
        }
    }
  }
}

TEST_CASE("checkpoint: a corrupt chunk is an error only for regions that read it") {
  std::string dir = tempDir("corrupt");
  std::vector<unsigned char> data(8 * 4 * 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (unsigned char)i;
  // One block, 16-byte chunks (version 1).
  saveGrid(dir, data, 8, 4, 4, "f32", grid(8, 4, 1, 1), 16, Tiling{Tiling::Chunks});
  CheckpointIndex ix = readCheckpointIndex(dir);
  { // flip a byte of row 6 (bytes 96..111: chunk 6)
    std::fstream f(dir + "/rank-00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put((char)0x7f);
  }
  std::vector<unsigned char> got(64);
  readCheckpointRegion(dir, ix, "t", {0, 0}, {4, 4}, got.data()); // rows 0-3: fine
  try {
    readCheckpointRegion(dir, ix, "t", {4, 0}, {4, 4}, got.data());
    FAIL("a corrupt chunk was read");
  } catch (const TensorFileError &e) {
    CHECK(std::string(e.what()).find(
              "rank-00000.bin: checksum mismatch in tensor `t` (bytes 96 to 112") !=
          std::string::npos);
  }
  std::filesystem::resize_file(dir + "/rank-00000.bin", 50);
  CHECK_THROWS_WITH_AS(readCheckpointRegion(dir, ix, "t", {0, 0}, {1, 1}, got.data()),
                       doctest::Contains("shard of tensor `t` is truncated"), TensorFileError);
  CHECK_THROWS_WITH_AS(readCheckpointRegion(dir, ix, "nope", {0, 0}, {1, 1}, got.data()),
                       doctest::Contains("no tensor `nope`"), TensorFileError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint: the tile rule") {
  CHECK(checkpointTileShape({}, 4, 65536).empty());
  CHECK(checkpointTileShape({7}, 4, 65536) == std::vector<int64_t>{7});
  CHECK(checkpointTileShape({65536, 1024}, 4, 65536) == std::vector<int64_t>{128, 128});
  CHECK(checkpointTileShape({3, 5}, 8, 65536) == std::vector<int64_t>{3, 5});
  CHECK(checkpointTileShape({4, 50, 1024}, 4, 65536) == std::vector<int64_t>{2, 50, 128});
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::vector<int64_t> shape(rng() % 5);
    for (auto &d : shape)
      d = 1 + (int64_t)(rng() % (rng() % 2 ? 9 : 5000));
    uint64_t es = 1u << (rng() % 4), bytes = 1u << (4 + rng() % 14);
    std::vector<int64_t> tile = checkpointTileShape(shape, es, bytes);
    INFO(i);
    REQUIRE(tile.size() == shape.size());
    uint64_t n = es;
    for (size_t d = 0; d < shape.size(); ++d) {
      CHECK(tile[d] >= 1);
      CHECK(tile[d] <= shape[d]);
      n *= (uint64_t)tile[d];
    }
    CHECK(n <= std::max(bytes, es));
  }
}

TEST_CASE("checkpoint: a load onto another layout reads about its own bytes") {
  // [512, 1024] f32 saved in 4 row blocks; loaded in 4 column blocks, 4 row
  // blocks and a 2x2 grid. Version 1 (chunks of whole rows) read 4x the bytes
  // of a column block; tiles read exactly its bytes (edges fall on tiles).
  const int64_t rows = 512, cols = 1024, es = 4;
  std::vector<unsigned char> data((size_t)(rows * cols * es));
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (unsigned char)(i * 7 + i / 4093);
  for (bool tiled : {false, true}) {
    std::string dir = tempDir("reads");
    saveGrid(dir, data, rows, cols, es, "f32", grid(rows, cols, 4, 1), kCheckpointChunkBytes,
             Tiling{tiled ? Tiling::Rule : Tiling::Chunks});
    CheckpointIndex ix = readCheckpointIndex(dir);
    for (auto [qr, qc] : {std::pair<int64_t, int64_t>{1, 4}, {4, 1}, {2, 2}}) {
      Grid want = grid(rows, cols, qr, qc);
      for (size_t k = 0; k < want.start.size(); ++k) {
        uint64_t need = (uint64_t)(want.shape[k][0] * want.shape[k][1] * es);
        std::vector<unsigned char> got(need);
        uint64_t read =
            readCheckpointRegion(dir, ix, "t", want.start[k], want.shape[k], got.data());
        bool same = true;
        for (int64_t r = 0; r < want.shape[k][0]; ++r)
          same &=
              std::memcmp(&got[(size_t)(r * want.shape[k][1] * es)],
                          &data[(size_t)(((want.start[k][0] + r) * cols + want.start[k][1]) * es)],
                          (size_t)(want.shape[k][1] * es)) == 0;
        INFO("tiled ", tiled, " read ", qr, "x", qc, " block ", k);
        CHECK(same);
        if (tiled || qc == 1)
          CHECK(read == need);
        else
          CHECK(read == need * (uint64_t)qc); // whole rows: the old format's cost
      }
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("checkpoint: a corrupt tile is an error only for regions that read it") {
  std::string dir = tempDir("corrupt_tile");
  std::vector<unsigned char> data(8 * 4 * 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (unsigned char)i;
  // One block of 8x4 f32 in tiles of 2x2: 8 tiles of 16 bytes, tile (r, c)
  // at byte 32 r + 16 c. Tile (3, 1) holds rows 6-7, columns 2-3.
  saveGrid(dir, data, 8, 4, 4, "f32", grid(8, 4, 1, 1), 16, Tiling{Tiling::Fixed, {2, 2}});
  CheckpointIndex ix = readCheckpointIndex(dir);
  REQUIRE(ix.tensors.at("t").blocks[0].tile == std::vector<int64_t>{2, 2});
  { // the block starts at byte 0 of its file: flip a byte of tile (3, 1)
    std::fstream f(dir + "/rank-00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 * 32 + 16 + 5);
    f.put((char)0x7f);
  }
  std::vector<unsigned char> got(128);
  readCheckpointRegion(dir, ix, "t", {0, 0}, {8, 2}, got.data()); // columns 0-1: fine
  readCheckpointRegion(dir, ix, "t", {0, 0}, {6, 4}, got.data()); // rows 0-5: fine
  CHECK(std::memcmp(got.data(), data.data(), 6 * 16) == 0);
  CHECK_THROWS_WITH_AS(readCheckpointRegion(dir, ix, "t", {7, 3}, {1, 1}, got.data()),
                       doctest::Contains("checksum mismatch in tensor `t` (bytes 112 to 128"),
                       TensorFileError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint: saving replaces the previous one in one step") {
  std::string dir = tempDir("replace");
  std::vector<unsigned char> a(16, 1), b(16, 2);
  saveGrid(dir, a, 4, 1, 4, "f32", grid(4, 1, 2, 1), 64);
  saveGrid(dir, b, 4, 1, 4, "f32", grid(4, 1, 1, 1), 64);
  CHECK(!std::filesystem::exists(checkpointTempDir(dir)));
  CheckpointIndex ix = readCheckpointIndex(dir);
  CHECK(ix.tensors.at("t").blocks.size() == 1);
  std::vector<unsigned char> got(16);
  readCheckpointRegion(dir, ix, "t", {0, 0}, {4, 1}, got.data());
  CHECK(got == b);
  // A stale temporary folder (a crashed save: its `.owner` names a process
  // that is gone) is removed by the next save.
  const std::string tmp = checkpointTempDir(dir);
  std::filesystem::create_directory(tmp);
  std::ofstream(tmp + "/junk") << "x";
  std::ofstream(tmp + "/.owner") << "999999999 - 0\n";
  saveGrid(dir, a, 4, 1, 4, "f32", grid(4, 1, 1, 1), 64);
  CHECK(!std::filesystem::exists(tmp));
  // DIR.tmp that is no save's (no `.owner`): the user's, refused and kept.
  std::filesystem::create_directory(tmp);
  std::ofstream(tmp + "/mine") << "x";
  CHECK_THROWS_WITH_AS(beginCheckpointSave(dir), doctest::Contains("not removing it"),
                       TensorFileError);
  CHECK(std::filesystem::exists(tmp + "/mine"));
  std::filesystem::remove_all(tmp);
  std::ofstream(tmp) << "a file";
  CHECK_THROWS_AS(beginCheckpointSave(dir), TensorFileError);
  CHECK(std::filesystem::is_regular_file(tmp));
  std::filesystem::remove(tmp);
  // Not a checkpoint: refused.
  std::string other = tempDir("other");
  std::filesystem::create_directory(other);
  std::ofstream(other + "/keep") << "x";
  CHECK_THROWS_WITH_AS(beginCheckpointSave(other), doctest::Contains("is not a checkpoint"),
                       TensorFileError);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(other);
}
