// This file implements checkpoint shard I/O and the atomic save (see
// Checkpoint.h); the index is in CheckpointIndex.cpp.
#include "support/Checkpoint.h"

#include "support/CheckpointTiles.h"
#include "support/Crc32c.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace dt {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Process `pid`'s state letter from /proc/PID/stat ('R', 'S', 'Z', ...;
/// 0 when there is no such process) and its start time (clock ticks after
/// boot), which tells a reused pid from the process that wrote a record.
char processState(long pid, unsigned long long &started) {
  started = 0;
  FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f)
    return 0;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char *p = std::strrchr(buf, ')'); // "pid (comm) S ...": comm may hold ')'
  if (!p || p[1] != ' ')
    return 0;
  char state = p[2];
  // q: the space before field 4 (ppid); 18 spaces on, the one before
  // field 22 (starttime).
  const char *q = p + 3;
  for (int field = 4; field < 22 && q; ++field)
    q = std::strchr(q + 1, ' ');
  if (q)
    started = std::strtoull(q + 1, nullptr, 10);
  return state;
}

/// Whether the process that wrote a record (pid, start time; 0: unknown) is
/// still running: not gone, not a zombie waiting to be reaped (a killed run
/// whose parent has not collected it yet), not a new process with its pid.
bool processAlive(long pid, unsigned long long startedThen) {
  if (::kill((pid_t)pid, 0) != 0 && errno != EPERM)
    return false;
  unsigned long long started = 0;
  char state = processState(pid, started);
  if (state == 0) // no /proc: trust kill()
    return true;
  if (state == 'Z' || state == 'X')
    return false;
  return startedThen == 0 || started == startedThen;
}

[[noreturn]] void ioFail(const std::string &path, const std::string &what) {
  throw TensorFileError(path + ": " + what + ": " + std::strerror(errno));
}

void fsyncPath(const std::string &path, bool dir) {
  Fd f;
  f.fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (f.fd < 0)
    ioFail(path, "cannot open to sync");
  if (::fsync(f.fd) != 0)
    ioFail(path, "cannot sync");
}

std::string parentOf(const std::string &dir) {
  std::filesystem::path p(dir);
  std::filesystem::path parent = p.lexically_normal().parent_path();
  return parent.empty() ? "." : parent.string();
}

/// Bytes read with one pread (whole tiles or chunks; at least one): small
/// enough to stay in the core's L2 cache, so the checksum reads cached bytes
/// and memory sees one read of the file's bytes and one write of the
/// destination's, as a plain pread into the destination would.
constexpr uint64_t kBatchBytes = 256u << 10;

/// The shard file of one saved block: opened and checked to hold the block.
class ShardFile {
public:
  ShardFile(const std::string &dir, const std::string &name, const CheckpointBlock &b,
            uint64_t blockBytes)
      : name_(name), b_(b) {
    path_ = dir + "/" + b.file;
    f_.fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f_.fd < 0)
      throw TensorFileError(path_ + ": cannot open shard of tensor `" + name +
                            "`: " + std::strerror(errno));
    struct stat st;
    if (::fstat(f_.fd, &st) != 0 || !S_ISREG(st.st_mode))
      throw TensorFileError(path_ + ": shard of tensor `" + name + "` is not a regular file");
    if ((uint64_t)st.st_size < b.offset + blockBytes)
      throw TensorFileError(path_ + ": shard of tensor `" + name + "` is truncated: it has " +
                            std::to_string(st.st_size) + " bytes, the block needs " +
                            std::to_string(b.offset + blockBytes));
  }

  /// Reads bytes [from, from + n) of the block into `dst`.
  void read(char *dst, uint64_t from, uint64_t n) {
    uint64_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(f_.fd, dst + got, n - got, (off_t)(b_.offset + from + got));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        throw TensorFileError(path_ + ": cannot read shard of tensor `" + name_ +
                              "`: " + std::strerror(errno));
      if (r == 0)
        throw TensorFileError(path_ + ": shard of tensor `" + name_ + "` is truncated");
      got += (uint64_t)r;
    }
    bytesRead += n;
  }

  /// Checks `n` bytes at `p`, which are bytes [from, from + n) of the block,
  /// against checksum `k` of the block.
  void verify(const char *p, uint64_t n, uint64_t k, uint64_t from) const {
    uint32_t crc = crc32c(0, p, n);
    if (crc == b_.crcs[k])
      return;
    char want[16], have[16];
    std::snprintf(want, sizeof want, "%08x", b_.crcs[k]);
    std::snprintf(have, sizeof have, "%08x", crc);
    throw TensorFileError(path_ + ": checksum mismatch in tensor `" + name_ + "` (bytes " +
                          std::to_string(b_.offset + from) + " to " +
                          std::to_string(b_.offset + from + n) + " of the file: crc32c " + have +
                          ", the index says " + want + ")");
  }

  uint64_t bytesRead = 0;

private:
  std::string name_, path_;
  const CheckpointBlock &b_;
  Fd f_;
};

/// A version-1 block (row-major, a checksum a chunk): copies the bytes that
/// fall inside the wanted region, one contiguous run at a time, through a
/// buffer of verified chunks. A chunk is read (with the chunks after it that
/// the same run needs, up to kBatchBytes) when a run first touches it.
class ChunkReader {
public:
  ChunkReader(ShardFile &f, const CheckpointBlock &b, uint64_t blockBytes, uint64_t chunkBytes)
      : f_(f), b_(b), bytes_(blockBytes), chunk_(chunkBytes) {}

  /// Copies `n` bytes at byte `at` of the block to `dst`.
  void copy(uint64_t at, uint64_t n, char *dst) {
    while (n > 0) {
      uint64_t c = at / chunk_;
      if (c < lo_ || c >= hi_)
        load(c, checkpointChunks(at + n, chunk_));
      uint64_t take = std::min({n, hi_ * chunk_ - at, bytes_ - at});
      std::memcpy(dst, buf_.data() + (at - lo_ * chunk_), take);
      dst += take;
      at += take;
      n -= take;
    }
  }

private:
  void load(uint64_t c, uint64_t needEnd) {
    uint64_t batch = std::max<uint64_t>(1, kBatchBytes / chunk_);
    uint64_t c1 = std::min({needEnd, c + batch, (uint64_t)b_.crcs.size()});
    uint64_t from = c * chunk_, to = std::min(c1 * chunk_, bytes_);
    buf_.resize(to - from);
    hi_ = lo_ = 0; // nothing is kept unless it verifies
    f_.read(buf_.data(), from, to - from);
    for (uint64_t k = c; k < c1; ++k) {
      uint64_t s = k * chunk_, e = std::min((k + 1) * chunk_, bytes_);
      f_.verify(buf_.data() + (s - from), e - s, k, s);
    }
    lo_ = c;
    hi_ = c1;
  }

  ShardFile &f_;
  const CheckpointBlock &b_;
  uint64_t bytes_, chunk_;
  std::vector<char> buf_;
  uint64_t lo_ = 0, hi_ = 0; ///< chunks [lo_, hi_) are in buf_, verified
};

/// A tiled block: reads the tiles that overlap [lo, hi) (global), batching
/// tiles that follow each other in the file, verifies each, and copies its
/// part of the region into `out` (the region at `start` of `shape`).
void readTiles(ShardFile &f, const CheckpointBlock &b, uint64_t es, const std::vector<int64_t> &lo,
               const std::vector<int64_t> &hi, const std::vector<int64_t> &start,
               const std::vector<int64_t> &shape, char *out) {
  const size_t rank = b.shape.size();
  TileGrid grid(b.shape, b.tile);
  std::vector<int64_t> glo(rank), ghi(rank); // the tiles overlapping the region
  for (size_t d = 0; d < rank; ++d) {
    glo[d] = (lo[d] - b.start[d]) / b.tile[d];
    ghi[d] = (hi[d] - b.start[d] - 1) / b.tile[d] + 1;
  }
  struct Tile {
    std::vector<int64_t> g;
    uint64_t at, bytes; // in the block
  };
  std::vector<Tile> tiles;
  // The grid box of tiles, walked row-major (the order they are stored in).
  std::vector<int64_t> g = glo;
  do
    tiles.push_back({g, grid.offset(g) * es, grid.elements(g) * es});
  while (nextIndex(g, glo, ghi));
  std::vector<char> buf;
  std::vector<int64_t> t0(rank), text(rank), clo(rank), chi(rank);
  for (size_t i = 0; i < tiles.size();) {
    size_t j = i + 1;
    uint64_t end = tiles[i].at + tiles[i].bytes;
    while (j < tiles.size() && tiles[j].at == end &&
           end + tiles[j].bytes - tiles[i].at <= kBatchBytes) {
      end += tiles[j].bytes;
      ++j;
    }
    buf.resize(end - tiles[i].at);
    f.read(buf.data(), tiles[i].at, end - tiles[i].at);
    for (size_t k = i; k < j; ++k) {
      const Tile &t = tiles[k];
      const char *p = buf.data() + (t.at - tiles[i].at);
      f.verify(p, t.bytes, grid.linear(t.g), t.at);
      for (size_t d = 0; d < rank; ++d) {
        t0[d] = b.start[d] + t.g[d] * b.tile[d];
        text[d] = grid.extent(t.g, d);
        clo[d] = std::max(t0[d], lo[d]);
        chi[d] = std::min(t0[d] + text[d], hi[d]);
      }
      forEachRun(clo, chi, t0, text, start, shape, [&](uint64_t s, uint64_t o, uint64_t n) {
        std::memcpy(out + o * es, p + s * es, n * es);
      });
    }
    i = j;
  }
}

} // namespace

uint64_t readCheckpointRegion(const std::string &dir, const CheckpointIndex &ix,
                              const std::string &name, const std::vector<int64_t> &start,
                              const std::vector<int64_t> &shape, void *dst) {
  auto it = ix.tensors.find(name);
  if (it == ix.tensors.end())
    throw TensorFileError(checkpointIndexPath(dir) + ": no tensor `" + name + "`");
  const CheckpointTensor &t = it->second;
  const size_t rank = t.shape.size();
  if (start.size() != rank || shape.size() != rank)
    throw TensorFileError(dir + ": a region of rank " + std::to_string(shape.size()) +
                          " of tensor `" + name + "` of rank " + std::to_string(rank));
  for (size_t d = 0; d < rank; ++d)
    if (start[d] < 0 || shape[d] < 0 || start[d] > t.shape[d] - shape[d])
      throw TensorFileError(dir + ": a region outside tensor `" + name + "`");
  const uint64_t es = (uint64_t)tensorFileElementSize(t.dtype);
  char *out = static_cast<char *>(dst);
  for (int64_t s : shape)
    if (s == 0)
      return 0;
  uint64_t bytesRead = 0;
  for (const CheckpointBlock &b : t.blocks) {
    // The overlap of the block and the region; nothing to read if empty.
    std::vector<int64_t> lo(rank), hi(rank);
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = std::max(b.start[d], start[d]);
      hi[d] = std::min(b.start[d] + b.shape[d], start[d] + shape[d]);
      empty |= lo[d] >= hi[d];
    }
    if (empty)
      continue;
    uint64_t blockBytes = es;
    for (int64_t s : b.shape)
      blockBytes *= (uint64_t)s;
    ShardFile f(dir, name, b, blockBytes);
    if (!b.tile.empty()) {
      readTiles(f, b, es, lo, hi, start, shape, out);
    } else {
      ChunkReader rd(f, b, blockBytes, ix.chunkBytes);
      forEachRun(lo, hi, b.start, b.shape, start, shape, [&](uint64_t s, uint64_t o, uint64_t n) {
        rd.copy(s * es, n * es, out + o * es);
      });
    }
    bytesRead += f.bytesRead;
  }
  return bytesRead;
}

void beginCheckpointSave(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::exists(st)) {
    // Replace only a checkpoint (or an empty folder): never a user's data.
    bool ok =
        fs::is_directory(st) && (fs::exists(checkpointIndexPath(dir), ec) || fs::is_empty(dir, ec));
    if (!ok)
      throw TensorFileError(dir + ": exists and is not a checkpoint (no `index.json`); "
                                  "not replacing it");
  }
  std::string tmp = checkpointTempDir(dir);
  // The temporary folder is this save's own while it exists (its `.owner`
  // names the process): a second run saving the same checkpoint at once is
  // refused instead of deleting the first one's files (both used to end
  // with exit 0 and the checkpoint gone). A folder whose owner is gone is a
  // crashed save's, removed.
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  if (::mkdir(tmp.c_str(), 0777) != 0) {
    if (errno != EEXIST)
      ioFail(tmp, "cannot create the temporary folder");
    // Only a save's own leftover is removed: a folder with its `.owner`
    // (or an empty one). Anything else at DIR.tmp is the user's: a file, a
    // link, a folder of their files (it was deleted without a word).
    fs::file_status ts = fs::symlink_status(tmp, ec);
    if (!fs::is_directory(ts) ||
        (!fs::exists(fs::symlink_status(tmp + "/.owner", ec)) && !fs::is_empty(tmp, ec)))
      throw TensorFileError(tmp +
                            ": exists and is not the temporary folder of a checkpoint save "
                            "(no `.owner`); not removing it (move it away to save `" +
                            dir + "`)");
    long pid = 0;
    unsigned long long started = 0; // 0: not recorded (an older .owner)
    char ownerHost[256] = {0};
    if (FILE *f = std::fopen((tmp + "/.owner").c_str(), "r")) {
      int n = std::fscanf(f, "%ld %255s %llu", &pid, ownerHost, &started);
      if (n < 2)
        pid = 0;
      if (n < 3)
        started = 0;
      std::fclose(f);
    }
    if (pid > 0 && pid != (long)::getpid() && std::strcmp(ownerHost, host) == 0 &&
        processAlive(pid, started))
      throw TensorFileError(dir + ": another run (pid " + std::to_string(pid) +
                            ") is saving this checkpoint now; not saving over it");
    fs::remove_all(tmp, ec); // a save that crashed earlier
    if (ec)
      throw TensorFileError(tmp + ": cannot remove the stale temporary folder: " + ec.message());
    if (::mkdir(tmp.c_str(), 0777) != 0)
      ioFail(tmp, "cannot create the temporary folder");
  }
  if (FILE *f = std::fopen((tmp + "/.owner").c_str(), "w")) {
    unsigned long long started = 0;
    processState((long)::getpid(), started);
    std::fprintf(f, "%ld %s %llu\n", (long)::getpid(), host[0] ? host : "-", started);
    std::fclose(f);
  }
}

CheckpointShardWriter::CheckpointShardWriter(const std::string &dir, const std::string &file,
                                             uint64_t chunkBytes)
    : path_(checkpointTempDir(dir) + "/" + file), chunk_(chunkBytes) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0)
    ioFail(path_, "cannot create shard");
}

CheckpointShardWriter::~CheckpointShardWriter() {
  if (fd_ >= 0)
    ::close(fd_);
}

void CheckpointShardWriter::put(uint64_t offset, const char *p, uint64_t bytes) {
  uint64_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pwrite(fd_, p + done, bytes - done, (off_t)(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      ioFail(path_, "cannot write shard");
    done += (uint64_t)n;
  }
}

std::vector<uint32_t> CheckpointShardWriter::write(const CheckpointBlock &b, uint64_t elemSize,
                                                   const void *data) {
  auto p = static_cast<const char *>(data);
  uint64_t bytes = elemSize;
  for (int64_t s : b.shape)
    bytes *= (uint64_t)s;
  std::vector<uint32_t> c;
  if (b.tile.empty()) {
    put(b.offset, p, bytes);
    for (uint64_t at = 0; at < bytes; at += chunk_)
      c.push_back(crc32c(0, p + at, std::min(chunk_, bytes - at)));
    return c;
  }
  // Tiles in storage order, gathered into a buffer that stays in cache,
  // checksummed there and written kBatchBytes at a time.
  const size_t rank = b.shape.size();
  TileGrid grid(b.shape, b.tile);
  std::vector<int64_t> g(rank, 0), t0(rank), t1(rank), ext(rank), zero(rank, 0);
  std::vector<char> buf;
  uint64_t at = b.offset; // where buf goes in the file
  for (bool more = bytes > 0; more;) {
    for (size_t d = 0; d < rank; ++d) {
      t0[d] = g[d] * b.tile[d];
      ext[d] = grid.extent(g, d);
      t1[d] = t0[d] + ext[d];
    }
    size_t from = buf.size();
    buf.resize(from + grid.elements(g) * elemSize);
    char *q = buf.data() + from;
    forEachRun(t0, t1, zero, b.shape, t0, ext, [&](uint64_t s, uint64_t o, uint64_t n) {
      std::memcpy(q + o * elemSize, p + s * elemSize, n * elemSize);
    });
    c.push_back(crc32c(0, q, buf.size() - from));
    more = nextIndex(g, zero, grid.count);
    if (buf.size() >= kBatchBytes || !more) {
      put(at, buf.data(), buf.size());
      at += buf.size();
      buf.clear();
    }
  }
  return c;
}

void CheckpointShardWriter::finish() {
  if (::fsync(fd_) != 0)
    ioFail(path_, "cannot sync shard");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    ioFail(path_, "cannot close shard");
}

void commitCheckpointSave(const std::string &dir, const CheckpointIndex &ix) {
  namespace fs = std::filesystem;
  std::string tmp = checkpointTempDir(dir);
  std::string index = checkpointIndexPath(tmp), text = writeCheckpointIndex(ix);
  {
    Fd f;
    f.fd = ::open(index.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (f.fd < 0)
      ioFail(index, "cannot create");
    uint64_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(f.fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        ioFail(index, "cannot write");
      done += (uint64_t)n;
    }
    if (::fsync(f.fd) != 0)
      ioFail(index, "cannot sync");
  }
  std::remove((tmp + "/.owner").c_str()); // not part of the checkpoint
  fsyncPath(tmp, true);
  std::error_code ec;
  bool replace = fs::exists(fs::symlink_status(dir, ec));
  if (replace) {
    // One atomic step: the target is the old or the new checkpoint, never
    // neither; the old one then sits at `tmp` and is removed.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0) {
      if (errno != EINVAL && errno != ENOSYS)
        ioFail(dir, "cannot swap in the new checkpoint");
      // A file system without RENAME_EXCHANGE: a window where the target is
      // absent, the old checkpoint kept beside it until the new one is in.
      std::string old = dir + ".old";
      fs::remove_all(old, ec);
      if (::rename(dir.c_str(), old.c_str()) != 0)
        ioFail(dir, "cannot move the previous checkpoint aside");
      if (::rename(tmp.c_str(), dir.c_str()) != 0)
        ioFail(dir, "cannot move the new checkpoint in");
      fsyncPath(parentOf(dir), true);
      fs::remove_all(old, ec);
      return;
    }
  } else if (::rename(tmp.c_str(), dir.c_str()) != 0) {
    ioFail(dir, "cannot move the new checkpoint in");
  }
  fsyncPath(parentOf(dir), true);
  if (replace)
    fs::remove_all(tmp, ec); // the previous checkpoint
}

void abandonCheckpointSave(const std::string &dir) {
  std::error_code ec;
  std::filesystem::remove_all(checkpointTempDir(dir), ec);
}

} // namespace dt
