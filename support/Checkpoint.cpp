// This file implements checkpoint shard I/O and the atomic save (see
// Checkpoint.h); the index is in CheckpointIndex.cpp.
#include "support/Checkpoint.h"

#include "support/Crc32c.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
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

/// Copies the bytes of one saved block that fall inside the wanted region,
/// one contiguous run at a time, through a buffer of verified chunks: a
/// chunk is read (with the chunks after it that the same run needs, up to
/// kBatch) only when a run first touches it, and checked against its CRC.
class BlockReader {
public:
  BlockReader(const std::string &dir, const std::string &name, const CheckpointBlock &b,
              uint64_t blockBytes, uint64_t chunkBytes)
      : name_(name), b_(b), bytes_(blockBytes), chunk_(chunkBytes) {
    path_ = dir + "/" + b.file;
    f_.fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f_.fd < 0)
      throw TensorFileError(path_ + ": cannot open shard of tensor `" + name +
                            "`: " + std::strerror(errno));
    struct stat st;
    if (::fstat(f_.fd, &st) != 0 || !S_ISREG(st.st_mode))
      throw TensorFileError(path_ + ": shard of tensor `" + name + "` is not a regular file");
    if ((uint64_t)st.st_size < b.offset + bytes_)
      throw TensorFileError(path_ + ": shard of tensor `" + name + "` is truncated: it has " +
                            std::to_string(st.st_size) + " bytes, the block needs " +
                            std::to_string(b.offset + bytes_));
  }

  /// Copies `n` bytes at byte `at` of the block to `dst`.
  void copy(uint64_t at, uint64_t n, char *dst) {
    // Whole chunks go straight into `dst` and are verified there (no second
    // copy); on a mismatch the caller's buffer is discarded with the error.
    if (at % chunk_ == 0 && (n >= chunk_ || at + n == bytes_)) {
      uint64_t end = at + n == bytes_ ? bytes_ : at + n / chunk_ * chunk_;
      readExact(dst, at, end - at);
      verify(dst, at / chunk_, checkpointChunks(end, chunk_), at);
      dst += end - at;
      n -= end - at;
      at = end;
    }
    while (n > 0) {
      uint64_t c = at / chunk_;
      if (c < lo_ || c >= hi_)
        load(c, checkpointChunks(at + n, chunk_));
      uint64_t inBuf = at - lo_ * chunk_;
      uint64_t take = std::min(n, hi_ * chunk_ - at);
      take = std::min(take, bytes_ - at);
      std::memcpy(dst, buf_.data() + inBuf, take);
      dst += take;
      at += take;
      n -= take;
    }
  }

private:
  static constexpr uint64_t kBatch = 64; ///< chunks read with one pread (4 MiB)

  void load(uint64_t c, uint64_t needEnd) {
    lo_ = c;
    hi_ = std::min({needEnd, c + kBatch, (uint64_t)b_.crcs.size()});
    uint64_t from = lo_ * chunk_, to = std::min(hi_ * chunk_, bytes_);
    buf_.resize(to - from);
    uint64_t c0 = lo_, c1 = hi_;
    hi_ = lo_ = 0; // nothing is kept unless it verifies
    readExact(buf_.data(), from, to - from);
    verify(buf_.data(), c0, c1, from);
    lo_ = c0;
    hi_ = c1;
  }

  /// Reads bytes [from, from + n) of the block into `dst`.
  void readExact(char *dst, uint64_t from, uint64_t n) {
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
  }

  /// Checks chunks [c0, c1), held at `p` (which starts at byte `from`).
  void verify(const char *p, uint64_t c0, uint64_t c1, uint64_t from) {
    for (uint64_t k = c0; k < c1; ++k) {
      uint64_t s = k * chunk_ - from, e = std::min((k + 1) * chunk_, bytes_) - from;
      uint32_t crc = crc32c(0, p + s, e - s);
      if (crc != b_.crcs[k]) {
        char want[16], have[16];
        std::snprintf(want, sizeof want, "%08x", b_.crcs[k]);
        std::snprintf(have, sizeof have, "%08x", crc);
        throw TensorFileError(path_ + ": checksum mismatch in tensor `" + name_ + "` (bytes " +
                              std::to_string(b_.offset + from + s) + " to " +
                              std::to_string(b_.offset + from + e) + " of the file: crc32c " +
                              have + ", the index says " + want + ")");
      }
    }
  }

  std::string name_, path_;
  const CheckpointBlock &b_;
  uint64_t bytes_, chunk_;
  Fd f_;
  std::vector<char> buf_;
  uint64_t lo_ = 0, hi_ = 0; ///< chunks [lo_, hi_) are in buf_, verified
};

} // namespace

void readCheckpointRegion(const std::string &dir, const CheckpointIndex &ix,
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
      return;
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
    BlockReader rd(dir, name, b, blockBytes, ix.chunkBytes);
    // Row-major strides of the block and of the region, in elements.
    std::vector<int64_t> bs(rank, 1), rs(rank, 1);
    for (size_t d = rank; d-- > 1;) {
      bs[d - 1] = bs[d] * b.shape[d];
      rs[d - 1] = rs[d] * shape[d];
    }
    // A run: the innermost dims whose overlap spans both the block and the
    // region whole are contiguous in both, so they merge into one copy.
    size_t outer = rank; // dims [0, outer) are iterated, [outer, rank) are one run
    int64_t run = 1;
    while (outer > 0) {
      size_t d = outer - 1;
      run *= hi[d] - lo[d];
      --outer;
      if (hi[d] - lo[d] != b.shape[d] || hi[d] - lo[d] != shape[d])
        break;
    }
    std::vector<int64_t> idx(lo.begin(), lo.begin() + (long)outer);
    for (;;) {
      int64_t src = 0, dsto = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t i = d < outer ? idx[d] : lo[d];
        src += (i - b.start[d]) * bs[d];
        dsto += (i - start[d]) * rs[d];
      }
      rd.copy((uint64_t)src * es, (uint64_t)run * es, out + (uint64_t)dsto * es);
      bool done = true; // advance the outer index, row-major
      for (size_t d = outer; d-- > 0;) {
        if (++idx[d] < hi[d]) {
          done = false;
          break;
        }
        idx[d] = lo[d];
      }
      if (done)
        break;
    }
  }
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
  fs::remove_all(tmp, ec); // a save that crashed earlier
  if (ec)
    throw TensorFileError(tmp + ": cannot remove the stale temporary folder: " + ec.message());
  if (::mkdir(tmp.c_str(), 0777) != 0)
    ioFail(tmp, "cannot create the temporary folder");
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

std::vector<uint32_t> CheckpointShardWriter::write(uint64_t offset, const void *data,
                                                   uint64_t bytes) {
  auto p = static_cast<const char *>(data);
  uint64_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pwrite(fd_, p + done, bytes - done, (off_t)(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      ioFail(path_, "cannot write shard");
    done += (uint64_t)n;
  }
  std::vector<uint32_t> c;
  for (uint64_t at = 0; at < bytes; at += chunk_)
    c.push_back(crc32c(0, p + at, std::min(chunk_, bytes - at)));
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
