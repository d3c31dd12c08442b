// Benchmark of distributed checkpoints (support/Checkpoint.h) against raw
// file I/O of the same bytes on the same disk, measured in the same run.
//
// One f32 tensor of SIZE MiB, 4 ranks (threads, as the cpu backend runs
// them), rows sharded 4 ways:
//   raw save   each rank write()s its rows to its own file and fsyncs it
//   ckpt save  each rank writes its shard (64 KiB tiles of 128 rows x 128
//              columns, a CRC-32C each; pwrite, fsync), then rank 0 writes
//              the index, fsyncs and swaps the folder in (the whole atomic
//              save)
//   raw load   each rank pread()s the bytes of its row block back
//   ckpt load  each rank reads its row block through the index, every chunk
//              verified (the same layout as saved)
//   reshard    each rank reads a column block (every saved block overlaps
//              it: the load onto another layout; it reads the tiles of its
//              columns), against a raw load of the same number of bytes
// Reported: GiB/s of each and the ratio checkpoint / raw (the target
// is >= 0.7). Reads come from the page cache for both (written just before).
//
// Usage: checkpoint_bench [MiB (default 64)] [repetitions (default 3)] [folder (default /tmp)]
#include "BenchUtil.h"
#include "support/Checkpoint.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dt;

namespace {

constexpr int kRanks = 4;

void parallel(const std::function<void(int)> &f) {
  std::vector<std::thread> ts;
  for (int r = 0; r < kRanks; ++r)
    ts.emplace_back(f, r);
  for (auto &t : ts)
    t.join();
}

void writeAll(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) {
      std::perror("write");
      std::exit(1);
    }
    p += w;
    n -= (size_t)w;
  }
}

void readAll(int fd, char *p, size_t n, off_t at) {
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, at);
    if (r <= 0) {
      std::perror("pread");
      std::exit(1);
    }
    p += r;
    at += r;
    n -= (size_t)r;
  }
}

} // namespace

int main(int argc, char **argv) {
  int64_t mib = argc > 1 ? std::atoll(argv[1]) : 64;
  int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  std::string base = argc > 3 ? argv[3] : "/tmp";
  const int64_t cols = 1024, rows = std::max<int64_t>(kRanks, mib * (1 << 20) / 4 / cols);
  const int64_t rowsPer = rows / kRanks; // rows divisible by 4 for simplicity
  const size_t blockBytes = (size_t)(rowsPer * cols * 4);
  const double total = (double)blockBytes * kRanks;
  std::vector<std::vector<char>> blocks(kRanks, std::vector<char>(blockBytes));
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < blockBytes; ++i)
      blocks[r][i] = (char)(i * 31 + (size_t)r);
  std::vector<std::vector<char>> back(kRanks, std::vector<char>(blockBytes));
  std::string rawDir = base + "/dt_ckpt_bench_raw_" + std::to_string(getpid());
  std::string dir = base + "/dt_ckpt_bench_" + std::to_string(getpid());
  std::filesystem::create_directories(rawDir);

  double rawSave = bench::best(reps, [&] {
    parallel([&](int r) {
      std::string p = rawDir + "/rank-" + std::to_string(r) + ".bin";
      int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
      writeAll(fd, blocks[r].data(), blockBytes);
      ::fsync(fd);
      ::close(fd);
    });
  });
  double rawLoad = bench::best(reps, [&] {
    parallel([&](int r) {
      std::string p = rawDir + "/rank-" + std::to_string(r) + ".bin";
      int fd = ::open(p.c_str(), O_RDONLY);
      readAll(fd, back[r].data(), blockBytes, 0);
      ::close(fd);
    });
  });

  double ckptSave = bench::best(reps, [&] {
    CheckpointIndex ix;
    CheckpointTensor t;
    t.dtype = "f32";
    t.shape = {rows, cols};
    t.meshAxes = {"x"};
    t.meshShape = {kRanks};
    t.meshDevices = {0, 1, 2, 3};
    t.placements = {"shard(0)"};
    t.blocks.resize(kRanks);
    beginCheckpointSave(dir);
    parallel([&](int r) {
      CheckpointBlock &b = t.blocks[r];
      b.file = checkpointShardName(r);
      b.start = {r * rowsPer, 0};
      b.shape = {rowsPer, cols};
      b.tile = checkpointTileShape(b.shape, 4, ix.chunkBytes);
      CheckpointShardWriter w(dir, b.file, ix.chunkBytes);
      b.crcs = w.write(b, 4, blocks[r].data());
      w.finish();
    });
    ix.tensors["w"] = t;
    commitCheckpointSave(dir, ix);
  });
  CheckpointIndex ix = readCheckpointIndex(dir);
  double ckptLoad = bench::best(reps, [&] {
    parallel([&](int r) {
      readCheckpointRegion(dir, ix, "w", {r * rowsPer, 0}, {rowsPer, cols}, back[r].data());
    });
  });
  for (int r = 0; r < kRanks; ++r)
    if (back[r] != blocks[r]) {
      std::fprintf(stderr, "checkpoint_bench: rank %d read wrong bytes\n", r);
      return 1;
    }
  double reshard = bench::best(reps, [&] {
    parallel([&](int r) {
      readCheckpointRegion(dir, ix, "w", {0, r * (cols / kRanks)}, {rows, cols / kRanks},
                           back[r].data());
    });
  });

  auto gibs = [&](double s) { return total / s / (1 << 30); };
  std::printf("checkpoint_bench: %.0f MiB of f32 [%lld, %lld], %d ranks (threads), %u cores, "
              "best of %d, in %s\n",
              total / (1 << 20), (long long)rows, (long long)cols, kRanks,
              std::thread::hardware_concurrency(), reps, base.c_str());
  std::printf("  save: raw write+fsync %.2f GiB/s, checkpoint %.2f GiB/s: ratio %.2f\n",
              gibs(rawSave), gibs(ckptSave), rawSave / ckptSave);
  std::printf("  load: raw pread %.2f GiB/s, checkpoint (verified) %.2f GiB/s: ratio %.2f\n",
              gibs(rawLoad), gibs(ckptLoad), rawLoad / ckptLoad);
  std::printf("  load onto another layout (column blocks): %.2f GiB/s: ratio %.2f\n", gibs(reshard),
              rawLoad / reshard);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(rawDir);
  return 0;
}
