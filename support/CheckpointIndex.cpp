// This file implements the checkpoint index (see Checkpoint.h): its JSON
// writer and its hardened reader.
#include "support/Checkpoint.h"
#include "support/CheckpointTiles.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace dt {

namespace {

constexpr const char *kFormat = "dtensor-checkpoint";
/// Version 2 stores blocks as tiles (a `tile` per block); version 1 (read
/// still) stored them row-major with a checksum a chunk.
constexpr int64_t kVersion = 2;

// --- writer -----------------------------------------------------------------

std::string quote(const std::string &s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += (char)c;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else {
      r += (char)c;
    }
  }
  return r + "\"";
}

template <class T> std::string list(const std::vector<T> &v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i)
    r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

std::string strList(const std::vector<std::string> &v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i)
    r += (i ? ", " : "") + quote(v[i]);
  return r + "]";
}

// --- reader: a small JSON DOM with bounded size and depth -----------------------

struct Json {
  enum Kind { Null, Bool, Int, Str, Arr, Obj } kind = Null;
  int64_t i = 0;
  std::string s;
  std::vector<Json> a;           ///< array elements, or an object's values
  std::vector<std::string> keys; ///< an object's keys, keys[i] naming a[i]
  // (Not a vector of pair<string, Json>: a pair of an incomplete type is not allowed, and
  // clang's libstdc++ checks refuse it.)
  const Json *get(const std::string &k) const {
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == k)
        return &a[i];
    return nullptr;
  }
};

struct Reader {
  const std::string &t;
  const std::string &path;
  size_t p = 0;

  [[noreturn]] void bad(const std::string &why) {
    throw TensorFileError(path + ": malformed checkpoint index: " + why + " at byte " +
                          std::to_string(p));
  }
  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r'))
      ++p;
  }
  bool lit(const char *w) {
    size_t n = std::strlen(w);
    if (t.compare(p, n, w) != 0)
      return false;
    p += n;
    return true;
  }
  std::string str() {
    if (p >= t.size() || t[p] != '"')
      bad("expected a string");
    ++p;
    std::string r;
    for (;;) {
      if (p >= t.size())
        bad("an unterminated string");
      unsigned char c = (unsigned char)t[p++];
      if (c == '"')
        return r;
      if (c < 0x20)
        bad("a control character in a string");
      if (c != '\\') {
        r += (char)c;
        continue;
      }
      if (p >= t.size())
        bad("an unterminated string");
      char e = t[p++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        r += e;
        break;
      case 'n':
        r += '\n';
        break;
      case 't':
        r += '\t';
        break;
      case 'r':
        r += '\r';
        break;
      case 'b':
        r += '\b';
        break;
      case 'f':
        r += '\f';
        break;
      case 'u': {
        if (p + 4 > t.size())
          bad("a short \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
          char h = t[p++];
          v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                  : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                         : (bad("a bad \\u escape"), 0));
        }
        if (v >= 0x80)
          bad("a non-ASCII \\u escape"); // the writer only escapes control characters
        r += (char)v;
        break;
      }
      default:
        bad("a bad escape");
      }
    }
  }
  Json value(int depth) {
    if (depth > 16)
      bad("nesting deeper than 16");
    ws();
    if (p >= t.size())
      bad("truncated");
    Json j;
    char c = t[p];
    if (c == '{' || c == '[') {
      ++p;
      j.kind = c == '{' ? Json::Obj : Json::Arr;
      char close = c == '{' ? '}' : ']';
      ws();
      if (p < t.size() && t[p] == close) {
        ++p;
        return j;
      }
      for (;;) {
        ws();
        if (c == '{') {
          std::string k = str();
          ws();
          if (p >= t.size() || t[p] != ':')
            bad("expected `:`");
          ++p;
          if (j.get(k))
            bad("the key `" + k + "` twice");
          j.a.push_back(value(depth + 1));
          j.keys.push_back(std::move(k));
        } else {
          j.a.push_back(value(depth + 1));
        }
        ws();
        if (p < t.size() && t[p] == ',') {
          ++p;
          continue;
        }
        if (p < t.size() && t[p] == close) {
          ++p;
          return j;
        }
        bad(std::string("expected `,` or `") + close + "`");
      }
    }
    if (c == '"') {
      j.kind = Json::Str;
      j.s = str();
      return j;
    }
    if (lit("true") || lit("false")) {
      j.kind = Json::Bool;
      j.i = t[p - 1] == 'e' && t[p - 2] == 'u';
      return j;
    }
    if (lit("null"))
      return j;
    if (c == '-' || (c >= '0' && c <= '9')) {
      bool neg = c == '-';
      if (neg)
        ++p;
      uint64_t v = 0;
      size_t digits = 0;
      while (p < t.size() && t[p] >= '0' && t[p] <= '9') {
        if (v > ((uint64_t)INT64_MAX - (uint64_t)(t[p] - '0')) / 10)
          bad("an integer out of range");
        v = v * 10 + (uint64_t)(t[p++] - '0');
        ++digits;
      }
      if (!digits)
        bad("expected a number");
      if (p < t.size() && (t[p] == '.' || t[p] == 'e' || t[p] == 'E'))
        bad("a non-integer number");
      j.kind = Json::Int;
      j.i = neg ? -(int64_t)v : (int64_t)v;
      return j;
    }
    bad("unexpected character");
  }
};

/// Typed access to the DOM with messages naming the tensor.
struct Checker {
  const std::string &path;
  std::string what; ///< "tensor `w`" (or empty at the top)

  [[noreturn]] void bad(const std::string &why) const {
    throw TensorFileError(path + ": malformed checkpoint index" +
                          (what.empty() ? "" : " (" + what + ")") + ": " + why);
  }
  const Json &field(const Json &o, const char *k, Json::Kind kind) const {
    const Json *v = o.get(k);
    if (!v)
      bad(std::string("missing `") + k + "`");
    if (v->kind != kind)
      bad(std::string("`") + k + "` has the wrong type");
    return *v;
  }
  int64_t integer(const Json &o, const char *k, int64_t lo, int64_t hi) const {
    int64_t v = field(o, k, Json::Int).i;
    if (v < lo || v > hi)
      bad(std::string("`") + k + "` = " + std::to_string(v) + " is out of range");
    return v;
  }
  std::vector<int64_t> ints(const Json &o, const char *k, int64_t lo, int64_t hi,
                            size_t maxLen) const {
    const Json &a = field(o, k, Json::Arr);
    if (a.a.size() > maxLen)
      bad(std::string("`") + k + "` is too long");
    std::vector<int64_t> r;
    for (auto &e : a.a) {
      if (e.kind != Json::Int || e.i < lo || e.i > hi)
        bad(std::string("`") + k + "` holds a bad value");
      r.push_back(e.i);
    }
    return r;
  }
  std::vector<std::string> strs(const Json &o, const char *k, size_t maxLen) const {
    const Json &a = field(o, k, Json::Arr);
    if (a.a.size() > maxLen)
      bad(std::string("`") + k + "` is too long");
    std::vector<std::string> r;
    for (auto &e : a.a) {
      if (e.kind != Json::Str)
        bad(std::string("`") + k + "` holds a non-string");
      r.push_back(e.s);
    }
    return r;
  }
};

constexpr size_t kMaxRank = 64;

/// numel of `shape` (dims checked non-negative), or -1 on overflow.
int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > INT64_MAX / d)
      return -1;
    n *= d;
  }
  return n;
}

bool safeFileName(const std::string &f) {
  return !f.empty() && f.size() <= 255 && f != "." && f != ".." &&
         f.find('/') == std::string::npos && f.find('\0') == std::string::npos;
}

bool boxesOverlap(const CheckpointBlock &a, const CheckpointBlock &b) {
  for (size_t d = 0; d < a.start.size(); ++d)
    if (a.start[d] >= b.start[d] + b.shape[d] || b.start[d] >= a.start[d] + a.shape[d])
      return false;
  return true;
}

CheckpointTensor tensorOf(const Json &j, const Checker &c, uint64_t chunkBytes, int64_t version) {
  if (j.kind != Json::Obj)
    c.bad("not an object");
  CheckpointTensor t;
  t.dtype = c.field(j, "dtype", Json::Str).s;
  int64_t esize = tensorFileElementSize(t.dtype);
  if (!esize)
    c.bad("unknown dtype `" + t.dtype + "`");
  t.shape = c.ints(j, "shape", 0, INT64_MAX, kMaxRank);
  int64_t numel = numelOf(t.shape);
  if (numel < 0 || numel > INT64_MAX / esize)
    c.bad("the shape's size overflows");
  t.meshAxes = c.strs(j, "mesh_axes", kMaxRank);
  t.meshShape = c.ints(j, "mesh_shape", 1, INT64_MAX, kMaxRank);
  t.meshDevices = c.ints(j, "mesh_devices", 0, INT64_MAX, 1 << 20);
  t.placements = c.strs(j, "placements", kMaxRank);
  if (t.meshShape.size() != t.meshAxes.size() || t.placements.size() != t.meshAxes.size())
    c.bad("`mesh_axes`, `mesh_shape` and `placements` differ in length");
  const Json &blocks = c.field(j, "blocks", Json::Arr);
  if (blocks.a.size() > kMaxCheckpointBlocks)
    c.bad("more than " + std::to_string(kMaxCheckpointBlocks) + " blocks");
  int64_t covered = 0;
  for (size_t k = 0; k < blocks.a.size(); ++k) {
    const Json &bj = blocks.a[k];
    Checker bc{c.path, c.what + ", block " + std::to_string(k)};
    if (bj.kind != Json::Obj)
      bc.bad("not an object");
    CheckpointBlock b;
    b.file = bc.field(bj, "file", Json::Str).s;
    if (!safeFileName(b.file))
      bc.bad("the file name `" + b.file + "` is not a plain name inside the checkpoint");
    b.offset = (uint64_t)bc.integer(bj, "offset", 0, INT64_MAX);
    b.start = bc.ints(bj, "start", 0, INT64_MAX, kMaxRank);
    b.shape = bc.ints(bj, "shape", 0, INT64_MAX, kMaxRank);
    if (b.start.size() != t.shape.size() || b.shape.size() != t.shape.size())
      bc.bad("`start` and `shape` need one entry per dim of the tensor");
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (b.shape[d] > t.shape[d] || b.start[d] > t.shape[d] - b.shape[d])
        bc.bad("the block lies outside the tensor in dim " + std::to_string(d));
    int64_t n = numelOf(b.shape); // <= the tensor's numel: no overflow
    if (n == 0)
      bc.bad("an empty block (empty blocks are not saved)");
    uint64_t bytes = (uint64_t)n * (uint64_t)esize;
    if (b.offset > (uint64_t)INT64_MAX - bytes)
      bc.bad("`offset` + the block's bytes overflows");
    if (bj.get("tile")) {
      if (version < 2)
        bc.bad("a `tile` in a version 1 index");
      b.tile = bc.ints(bj, "tile", 1, INT64_MAX, kMaxRank);
      if (b.tile.size() != b.shape.size() || b.tile.empty())
        bc.bad("`tile` needs one entry per dim of the tensor");
      uint64_t tileBytes = (uint64_t)esize;
      for (size_t d = 0; d < b.tile.size(); ++d) {
        if (b.tile[d] > b.shape[d])
          bc.bad("the tile is larger than the block in dim " + std::to_string(d));
        tileBytes *= (uint64_t)b.tile[d]; // <= the block's bytes: no overflow
      }
      if (tileBytes > kMaxCheckpointTileBytes)
        bc.bad("a tile of " + std::to_string(tileBytes) + " bytes (at most " +
               std::to_string(kMaxCheckpointTileBytes) + ")");
    }
    std::vector<int64_t> crcs = bc.ints(bj, "crc32c", 0, UINT32_MAX, SIZE_MAX);
    uint64_t want = checkpointBlockChecksums(b, (uint64_t)esize, chunkBytes);
    if ((uint64_t)crcs.size() != want)
      bc.bad("it has " + std::to_string(crcs.size()) + " checksums for " + std::to_string(want) +
             (b.tile.empty() ? " chunks" : " tiles"));
    for (int64_t v : crcs)
      b.crcs.push_back((uint32_t)v);
    covered += n;
    t.blocks.push_back(std::move(b));
  }
  // Exact cover: no two blocks overlap, and together they hold every element.
  for (size_t a = 0; a < t.blocks.size(); ++a)
    for (size_t b = a + 1; b < t.blocks.size(); ++b)
      if (boxesOverlap(t.blocks[a], t.blocks[b]))
        c.bad("blocks " + std::to_string(a) + " and " + std::to_string(b) + " overlap");
  if (covered != numel)
    c.bad("the blocks hold " + std::to_string(covered) + " of the tensor's " +
          std::to_string(numel) + " elements");
  return t;
}

} // namespace

uint64_t checkpointChunks(uint64_t bytes, uint64_t chunkBytes) {
  return bytes / chunkBytes + (bytes % chunkBytes != 0);
}

std::vector<int64_t> checkpointTileShape(const std::vector<int64_t> &shape, uint64_t elemSize,
                                         uint64_t tileBytes) {
  if (shape.empty())
    return {};
  const size_t rank = shape.size();
  std::vector<int64_t> tile(rank, 1);
  int64_t budget = (int64_t)std::max<uint64_t>(1, tileBytes / elemSize); // elements
  // The last dim in about 8 column groups of at least 128 bytes, so that a
  // load sharding columns up to 8 ways reads about its own bytes.
  int64_t cols = std::max<int64_t>(1, shape[rank - 1]);
  int64_t minRun = (int64_t)std::max<uint64_t>(1, 128 / elemSize);
  int64_t w = (cols + 7) / 8;
  w = (w + minRun - 1) / minRun * minRun;
  w = std::min({w, cols, budget});
  tile[rank - 1] = w;
  int64_t rest = budget / w;
  for (size_t d = rank - 1; d-- > 0 && rest > 1;) {
    tile[d] = std::min(std::max<int64_t>(1, shape[d]), rest);
    rest /= tile[d];
  }
  return tile;
}

uint64_t checkpointBlockChecksums(const CheckpointBlock &b, uint64_t elemSize,
                                  uint64_t chunkBytes) {
  if (!b.tile.empty())
    return TileGrid(b.shape, b.tile).tiles();
  uint64_t bytes = elemSize;
  for (int64_t s : b.shape)
    bytes *= (uint64_t)s;
  return checkpointChunks(bytes, chunkBytes);
}

std::string checkpointIndexPath(const std::string &dir) { return dir + "/index.json"; }

std::string checkpointShardName(int worldRank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d.bin", worldRank);
  return buf;
}

std::string checkpointTempDir(const std::string &dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/')
    d.pop_back();
  return d + ".tmp";
}

std::string writeCheckpointIndex(const CheckpointIndex &ix) {
  std::string out =
      "{\n  \"format\": " + quote(kFormat) + ",\n  \"version\": " + std::to_string(kVersion) +
      ",\n  \"chunk_bytes\": " + std::to_string(ix.chunkBytes) + ",\n  \"tensors\": {";
  bool firstT = true;
  for (auto &[name, t] : ix.tensors) {
    out += (firstT ? "\n    " : ",\n    ") + quote(name) + ": {\n";
    firstT = false;
    out += "      \"dtype\": " + quote(t.dtype) + ", \"shape\": " + list(t.shape) + ",\n";
    out += "      \"mesh_axes\": " + strList(t.meshAxes) +
           ", \"mesh_shape\": " + list(t.meshShape) + ", \"mesh_devices\": " + list(t.meshDevices) +
           ",\n";
    out += "      \"placements\": " + strList(t.placements) + ",\n      \"blocks\": [";
    for (size_t k = 0; k < t.blocks.size(); ++k) {
      const CheckpointBlock &b = t.blocks[k];
      out += std::string(k ? "," : "") + "\n        {\"file\": " + quote(b.file) +
             ", \"offset\": " + std::to_string(b.offset) + ", \"start\": " + list(b.start) +
             ", \"shape\": " + list(b.shape) +
             (b.tile.empty() ? "" : ", \"tile\": " + list(b.tile)) +
             ", \"crc32c\": " + list(b.crcs) + "}";
    }
    out += t.blocks.empty() ? "]\n    }" : "\n      ]\n    }";
  }
  out += firstT ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

CheckpointIndex parseCheckpointIndex(const std::string &text, const std::string &path) {
  if (text.size() > kMaxCheckpointIndexBytes)
    throw TensorFileError(path + ": malformed checkpoint index: larger than " +
                          std::to_string(kMaxCheckpointIndexBytes) + " bytes");
  Reader r{text, path};
  Json top = r.value(0);
  r.ws();
  if (r.p != text.size())
    r.bad("text after the index");
  Checker c{path, ""};
  if (top.kind != Json::Obj)
    c.bad("not a JSON object");
  if (c.field(top, "format", Json::Str).s != kFormat)
    c.bad("`format` is not `" + std::string(kFormat) + "`");
  int64_t version = c.field(top, "version", Json::Int).i;
  if (version < 1 || version > kVersion)
    c.bad("version " + std::to_string(version) + " (this dtensor reads versions 1 to " +
          std::to_string(kVersion) + ")");
  CheckpointIndex ix;
  ix.chunkBytes = (uint64_t)c.integer(top, "chunk_bytes", 1, 1 << 30);
  const Json &ts = c.field(top, "tensors", Json::Obj);
  for (size_t i = 0; i < ts.keys.size(); ++i) {
    const std::string &name = ts.keys[i];
    Checker tc{path, "tensor `" + name + "`"};
    ix.tensors[name] = tensorOf(ts.a[i], tc, ix.chunkBytes, version);
  }
  return ix;
}

CheckpointIndex readCheckpointIndex(const std::string &dir) {
  std::string path = checkpointIndexPath(dir);
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0)
      throw TensorFileError(dir + ": no such checkpoint");
    throw TensorFileError(path + ": " + std::strerror(errno));
  }
  std::unique_ptr<int, void (*)(int *)> guard(&fd, [](int *f) { ::close(*f); });
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw TensorFileError(path + ": not a regular file");
  if ((uint64_t)st.st_size > kMaxCheckpointIndexBytes)
    throw TensorFileError(path + ": malformed checkpoint index: larger than " +
                          std::to_string(kMaxCheckpointIndexBytes) + " bytes");
  std::string text((size_t)st.st_size, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::pread(fd, text.data() + got, text.size() - got, (off_t)got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw TensorFileError(path +
                            ": cannot read: " + (n < 0 ? std::strerror(errno) : "the file shrank"));
    got += (size_t)n;
  }
  return parseCheckpointIndex(text, path);
}

} // namespace dt
