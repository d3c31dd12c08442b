// This file implements `.npy` and safetensors headers and block I/O (see
// TensorFile.h).
#include "support/TensorFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dt {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &why) {
  throw TensorFileError(path + ": " + why);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// numel of `shape`, or -1 when it overflows int64 or a dim is negative.
int64_t checkedNumel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > INT64_MAX / d)
      return -1;
    n *= d;
  }
  return n;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// A tiny cursor over header text (npy's Python dict literal, safetensors'
/// JSON): whitespace skipping, expected characters, quoted strings, integers.
struct Cursor {
  const std::string &s;
  size_t i = 0;
  const std::string &path;
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
      ++i;
  }
  bool peek(char c) {
    ws();
    return i < s.size() && s[i] == c;
  }
  bool eat(char c) {
    if (!peek(c))
      return false;
    ++i;
    return true;
  }
  void expect(char c, const char *what) {
    if (!eat(c))
      fail(path, std::string("malformed header: expected `") + c + "` " + what + " at byte " +
                     std::to_string(i));
  }
  /// The 4 hex digits at s[at..at+4) of a \u escape.
  uint32_t hex4(size_t at) {
    if (at + 4 > s.size())
      fail(path, "malformed header: a short \\u escape at byte " + std::to_string(at));
    uint32_t v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      char c = s[k];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0)
        fail(path, "malformed header: a bad \\u escape at byte " + std::to_string(at));
      v = v * 16 + (uint32_t)d;
    }
    return v;
  }
  static void appendUtf8(std::string &r, uint32_t cp) {
    if (cp < 0x80) {
      r += (char)cp;
    } else if (cp < 0x800) {
      r += (char)(0xc0 | (cp >> 6));
      r += (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      r += (char)(0xe0 | (cp >> 12));
      r += (char)(0x80 | ((cp >> 6) & 0x3f));
      r += (char)(0x80 | (cp & 0x3f));
    } else {
      r += (char)(0xf0 | (cp >> 18));
      r += (char)(0x80 | ((cp >> 12) & 0x3f));
      r += (char)(0x80 | ((cp >> 6) & 0x3f));
      r += (char)(0x80 | (cp & 0x3f));
    }
  }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '"' && s[i] != '\''))
      fail(path, "malformed header: expected a string at byte " + std::to_string(i));
    char q = s[i++];
    std::string r;
    while (i < s.size() && s[i] != q) {
      if (s[i] == '\\') {
        if (++i >= s.size())
          break;
        char e = s[i];
        if (e == 'u') { // \uXXXX (a surrogate pair for one code point) as UTF-8
          uint32_t cp = hex4(i + 1);
          i += 5;
          if (cp >= 0xd800 && cp < 0xdc00 && i + 1 < s.size() && s[i] == '\\' && s[i + 1] == 'u') {
            uint32_t lo = hex4(i + 2);
            if (lo >= 0xdc00 && lo < 0xe000) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
              i += 6;
            }
          }
          appendUtf8(r, cp);
          continue;
        }
        r += e == 'n'   ? '\n'
             : e == 't' ? '\t'
             : e == 'r' ? '\r'
             : e == 'b' ? '\b'
             : e == 'f' ? '\f'
                        : e;
        ++i;
        continue;
      }
      r += s[i++];
      if (r.size() > 4096)
        fail(path, "malformed header: a string longer than 4096 bytes");
    }
    if (i >= s.size())
      fail(path, "malformed header: an unterminated string");
    ++i;
    return r;
  }
  int64_t integer() {
    ws();
    size_t start = i;
    if (i < s.size() && s[i] == '-')
      ++i;
    uint64_t v = 0;
    size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (v > (uint64_t)INT64_MAX / 10)
        fail(path, "malformed header: an integer out of range");
      v = v * 10 + (uint64_t)(s[i++] - '0');
      if (v > (uint64_t)INT64_MAX)
        fail(path, "malformed header: an integer out of range");
      ++digits;
    }
    if (!digits)
      fail(path, "malformed header: expected an integer at byte " + std::to_string(start));
    return s[start] == '-' ? -(int64_t)v : (int64_t)v;
  }
  /// Skips one JSON value (safetensors' __metadata__), bounded nesting.
  void skipValue(int depth = 0) {
    if (depth > 64)
      fail(path, "malformed header: nesting deeper than 64");
    ws();
    if (i >= s.size())
      fail(path, "malformed header: truncated");
    char c = s[i];
    if (c == '"') {
      str();
    } else if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++i;
      if (eat(close))
        return;
      do {
        if (c == '{') {
          str();
          expect(':', "after a key");
        }
        skipValue(depth + 1);
      } while (eat(','));
      expect(close, "closing a list or object");
    } else {
      while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']')
        ++i;
    }
  }
};

std::string readHead(const std::string &path, int fd, uint64_t n) {
  std::string buf(n, '\0');
  uint64_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, buf.data() + got, n - got, (off_t)got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      fail(path,
           "cannot read the header: " + std::string(r < 0 ? std::strerror(errno) : "truncated"));
    got += (uint64_t)r;
  }
  return buf;
}

/// Calls `run(fileByteOffset, blockByteOffset, bytes)` for each contiguous
/// row run of the block at `offset` of shape `block` inside `e`.
template <class F>
void forEachRun(const std::string &path, const TensorFileEntry &e,
                const std::vector<int64_t> &offset, const std::vector<int64_t> &block, F run) {
  size_t r = e.shape.size();
  if (offset.size() != r || block.size() != r)
    fail(path, "a block of rank " + std::to_string(block.size()) + " in an array of rank " +
                   std::to_string(r));
  for (size_t d = 0; d < r; ++d)
    if (offset[d] < 0 || block[d] < 0 || offset[d] > e.shape[d] - block[d])
      fail(path, "block " + shapeStr(block) + " at " + shapeStr(offset) + " is outside " +
                     shapeStr(e.shape));
  if (checkedNumel(block) == 0)
    return;
  // The innermost dims the block spans whole are one contiguous run.
  size_t inner = r;
  int64_t runElems = 1;
  while (inner > 0) {
    runElems *= block[inner - 1];
    --inner;
    if (block[inner] != e.shape[inner])
      break;
  }
  std::vector<int64_t> stride(r, 1);
  for (size_t d = r; d-- > 1;)
    stride[d - 1] = stride[d] * e.shape[d];
  std::vector<int64_t> idx(inner, 0);
  int64_t done = 0;
  for (;;) {
    int64_t elem = 0;
    for (size_t d = 0; d < r; ++d)
      elem += (offset[d] + (d < inner ? idx[d] : 0)) * stride[d];
    run(e.dataOffset + (uint64_t)elem * (uint64_t)e.elementSize, done * e.elementSize,
        runElems * e.elementSize);
    done += runElems;
    size_t d = inner;
    while (d > 0) {
      --d;
      if (++idx[d] < block[d])
        break;
      idx[d] = 0;
      if (d == 0)
        return;
    }
    if (inner == 0)
      return;
  }
}

void checkEntry(const std::string &path, const std::string &what, const TensorFileEntry &e,
                uint64_t end, uint64_t fileSize) {
  int64_t n = checkedNumel(e.shape);
  if (n < 0)
    fail(path, what + "shape " + shapeStr(e.shape) + " has a negative or too large size");
  if ((uint64_t)n > (UINT64_MAX - e.dataOffset) / (uint64_t)e.elementSize)
    fail(path, what + "data size overflows");
  uint64_t bytes = (uint64_t)n * (uint64_t)e.elementSize;
  if (end != UINT64_MAX && end - e.dataOffset != bytes)
    fail(path, what + "holds " + std::to_string(end - e.dataOffset) + " bytes, but " + e.dtype +
                   shapeStr(e.shape) + " needs " + std::to_string(bytes));
  if (e.dataOffset + bytes > fileSize)
    fail(path, what + "data ends at byte " + std::to_string(e.dataOffset + bytes) +
                   ", past the end of the file (" + std::to_string(fileSize) +
                   " bytes): truncated?");
}

void writeAll(const std::string &path, int fd, const char *p, uint64_t n, uint64_t at) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, (off_t)at);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      fail(path, "write failed: " + std::string(w < 0 ? std::strerror(errno) : "no space"));
    p += w;
    at += (uint64_t)w;
    n -= (uint64_t)w;
  }
}

int openOrFail(const std::string &path, int flags, const char *what) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (fstat then
  // rejects anything that is not a regular file).
  int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    const int err = errno;
    std::string why = std::string("cannot ") + what + ": " + std::strerror(err);
    // A file to create in a folder that does not exist: say which folder
    // (save never makes folders, as numpy's and torch's do not).
    const size_t slash = path.rfind('/');
    struct stat st;
    if (err == ENOENT && (flags & O_CREAT) && slash != std::string::npos && slash > 0 &&
        ::stat(path.substr(0, slash).c_str(), &st) != 0)
      why += " (the folder `" + path.substr(0, slash) + "` does not exist: create it first)";
    fail(path, why);
  }
  return fd;
}

uint64_t fileSizeOf(const std::string &path, int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0)
    fail(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(path, "not a regular file");
  return (uint64_t)st.st_size;
}

std::string npyDescr(const std::string &dtype) {
  if (dtype == "f32")
    return "<f4";
  if (dtype == "f64")
    return "<f8";
  if (dtype == "i32")
    return "<i4";
  if (dtype == "i64")
    return "<i8";
  if (dtype == "bool")
    return "|b1";
  if (dtype == "f16")
    return "<f2";
  return ""; // bf16: numpy has no such dtype
}

std::string safetensorsName(const std::string &dtype) {
  if (dtype == "bool")
    return "BOOL";
  std::string r = dtype;
  for (char &c : r)
    c = (char)std::toupper((unsigned char)c);
  return r;
}

void finishCreate(const std::string &path, int fd, const std::string &head, uint64_t total) {
  writeAll(path, fd, head.data(), head.size(), 0);
  if (::ftruncate(fd, (off_t)total) != 0)
    fail(path, std::string("cannot size the file: ") + std::strerror(errno));
}

} // namespace

int64_t tensorFileElementSize(const std::string &dtype) {
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "bool")
    return 1;
  if (dtype == "bf16" || dtype == "f16")
    return 2;
  return 0;
}

bool isSafetensorsPath(const std::string &path) {
  const std::string ext = ".safetensors";
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

TensorFileEntry parseNpyHeader(const std::string &data, uint64_t fileSize) {
  const std::string path = "npy";
  static const char magic[] = "\x93NUMPY";
  if (data.size() < 10 || data.compare(0, 6, magic, 6) != 0)
    fail(path, "not an .npy file (no \\x93NUMPY magic)");
  int major = (unsigned char)data[6];
  uint64_t hlen, start;
  if (major == 1) {
    hlen = (unsigned char)data[8] | (uint64_t)(unsigned char)data[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      fail(path, "truncated header");
    hlen = 0;
    for (int b = 0; b < 4; ++b)
      hlen |= (uint64_t)(unsigned char)data[8 + b] << (8 * b);
    start = 12;
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  if (hlen > kMaxTensorHeaderBytes)
    fail(path, "header of " + std::to_string(hlen) + " bytes is over the limit");
  if (start + hlen > data.size() || start + hlen > fileSize)
    fail(path, "truncated header");
  std::string h = data.substr(start, hlen);
  Cursor c{h, 0, path};
  TensorFileEntry e;
  bool haveDescr = false, haveShape = false, haveOrder = false;
  c.expect('{', "opening the header");
  while (!c.peek('}')) {
    std::string key = c.str();
    c.expect(':', "after a key");
    // A key given twice is a corrupt header (two shapes were read as one).
    if ((key == "descr" && haveDescr) || (key == "shape" && haveShape) ||
        (key == "fortran_order" && haveOrder))
      fail(path, "malformed header: key `" + key + "` twice");
    if (key == "descr") {
      std::string d = c.str();
      if (d.size() == 3 && (d[0] == '<' || d[0] == '=' || d[0] == '|')) {
        std::string t = d.substr(1);
        e.dtype = t == "f4"   ? "f32"
                  : t == "f8" ? "f64"
                  : t == "i4" ? "i32"
                  : t == "i8" ? "i64"
                  : t == "b1" ? "bool"
                  : t == "f2" ? "f16"
                              : "";
      }
      if (e.dtype.empty())
        fail(path, "dtype `" + d + "` is not one of the language's (<f4 <f8 <f2 <i4 <i8 |b1)" +
                       (d.size() && d[0] == '>' ? ": big-endian data" : ""));
      haveDescr = true;
    } else if (key == "fortran_order") {
      c.ws();
      if (h.compare(c.i, 5, "False") == 0) {
        c.i += 5;
      } else if (h.compare(c.i, 4, "True") == 0) {
        fail(path, "Fortran-order arrays are not supported (save with order='C')");
      } else {
        fail(path, "malformed header: fortran_order is not True or False");
      }
      haveOrder = true;
    } else if (key == "shape") {
      c.expect('(', "opening the shape");
      while (!c.peek(')')) {
        e.shape.push_back(c.integer());
        if (e.shape.size() > 64)
          fail(path, "more than 64 dims");
        if (!c.eat(','))
          break;
      }
      c.expect(')', "closing the shape");
      haveShape = true;
    } else {
      fail(path, "malformed header: unknown key `" + key + "`");
    }
    if (!c.eat(','))
      break;
  }
  c.expect('}', "closing the header");
  // The format pads the header with spaces and ends it with a newline: any
  // other byte there is a corrupt header (a changed length byte would make
  // its padding read as data).
  for (size_t i = c.i; i < h.size(); ++i)
    if (h[i] != ' ' && h[i] != '\n' && h[i] != '\r' && h[i] != '\t')
      fail(path, "malformed header: bytes after the closing `}` that are not padding");
  if (!haveDescr || !haveShape || !haveOrder)
    fail(path, "malformed header: descr, fortran_order and shape are required");
  e.elementSize = tensorFileElementSize(e.dtype);
  e.dataOffset = start + hlen;
  // The data is the rest of the file, exactly: a file longer than dtype x
  // shape is as malformed as a shorter one (a changed shape byte would
  // otherwise read a part of the data silently).
  checkEntry(path, "", e, UINT64_MAX, fileSize);
  uint64_t bytes = (uint64_t)checkedNumel(e.shape) * (uint64_t)e.elementSize;
  if (fileSize != UINT64_MAX && fileSize - e.dataOffset > bytes)
    fail(path, "holds " + std::to_string(fileSize - e.dataOffset) + " bytes of data, but " +
                   e.dtype + shapeStr(e.shape) + " needs " + std::to_string(bytes) +
                   ": extra bytes at the end");
  return e;
}

std::map<std::string, TensorFileEntry> parseSafetensorsHeader(const std::string &data,
                                                              uint64_t fileSize) {
  const std::string path = "safetensors";
  if (data.size() < 8)
    fail(path, "truncated: no header length");
  uint64_t n = 0;
  for (int b = 0; b < 8; ++b)
    n |= (uint64_t)(unsigned char)data[b] << (8 * b);
  if (n > kMaxTensorHeaderBytes)
    fail(path, "header of " + std::to_string(n) + " bytes is over the limit");
  if (8 + n > data.size() || 8 + n > fileSize)
    fail(path, "truncated header");
  std::string h = data.substr(8, n);
  Cursor c{h, 0, path};
  std::map<std::string, TensorFileEntry> out;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  const uint64_t base = 8 + n;
  c.expect('{', "opening the header");
  while (!c.peek('}')) {
    std::string name = c.str();
    c.expect(':', "after a tensor name");
    if (name == "__metadata__") {
      c.skipValue();
    } else {
      if (out.count(name))
        fail(path, "tensor `" + name + "` appears twice");
      TensorFileEntry e;
      int64_t b = -1, en = -1;
      bool haveDtype = false, haveShape = false;
      c.expect('{', "opening a tensor entry");
      while (!c.peek('}')) {
        std::string key = c.str();
        c.expect(':', "after a key");
        if (key == "dtype") {
          std::string d = c.str();
          e.dtype = d == "F32"    ? "f32"
                    : d == "F64"  ? "f64"
                    : d == "I32"  ? "i32"
                    : d == "I64"  ? "i64"
                    : d == "BOOL" ? "bool"
                    : d == "BF16" ? "bf16"
                    : d == "F16"  ? "f16"
                                  : "";
          if (e.dtype.empty())
            fail(path, "tensor `" + name + "`: dtype " + d +
                           " is not one of the language's (F32 F64 BF16 F16 I32 I64 BOOL)");
          haveDtype = true;
        } else if (key == "shape") {
          c.expect('[', "opening a shape");
          while (!c.peek(']')) {
            e.shape.push_back(c.integer());
            if (e.shape.size() > 64)
              fail(path, "tensor `" + name + "`: more than 64 dims");
            if (!c.eat(','))
              break;
          }
          c.expect(']', "closing a shape");
          haveShape = true;
        } else if (key == "data_offsets") {
          c.expect('[', "opening data_offsets");
          b = c.integer();
          c.expect(',', "in data_offsets");
          en = c.integer();
          c.expect(']', "closing data_offsets");
        } else {
          c.skipValue();
        }
        if (!c.eat(','))
          break;
      }
      c.expect('}', "closing a tensor entry");
      if (!haveDtype || !haveShape || b < 0)
        fail(path,
             "tensor `" + name + "`: dtype, shape and data_offsets [begin, end] are required");
      if (en < b)
        fail(path, "tensor `" + name + "`: data_offsets [" + std::to_string(b) + ", " +
                       std::to_string(en) + "] end before they begin");
      if ((uint64_t)en > fileSize - base)
        fail(path, "tensor `" + name + "`: data_offsets end " + std::to_string(en) +
                       " is past the end of the file: truncated?");
      e.elementSize = tensorFileElementSize(e.dtype);
      e.dataOffset = base + (uint64_t)b;
      checkEntry(path, "tensor `" + name + "`: ", e, base + (uint64_t)en, fileSize);
      spans.push_back({(uint64_t)b, (uint64_t)en});
      out.emplace(name, e);
    }
    if (!c.eat(','))
      break;
  }
  c.expect('}', "closing the header");
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      fail(path, "two tensors' data overlap");
  return out;
}

TensorFileEntry readTensorFileEntry(const std::string &path, const std::string &key) {
  Fd f{openOrFail(path, O_RDONLY, "open")};
  uint64_t size = fileSizeOf(path, f.fd);
  try {
    if (isSafetensorsPath(path)) {
      std::string len = readHead(path, f.fd, std::min<uint64_t>(size, 8));
      uint64_t n = 0;
      for (size_t b = 0; b < len.size(); ++b)
        n |= (uint64_t)(unsigned char)len[b] << (8 * b);
      uint64_t want = len.size() < 8
                          ? len.size()
                          : std::min<uint64_t>(size, 8 + std::min(n, kMaxTensorHeaderBytes + 1));
      auto all = parseSafetensorsHeader(readHead(path, f.fd, want), size);
      auto it = all.find(key);
      if (it == all.end()) {
        std::string names;
        for (auto &[k, v] : all)
          if (names.size() < 400)
            names += (names.empty() ? "" : ", ") + k;
        fail(path,
             "no tensor named `" + key + "` (it has: " + (names.empty() ? "none" : names) + ")");
      }
      return it->second;
    }
    std::string head = readHead(path, f.fd, std::min<uint64_t>(size, 12));
    uint64_t hlen = 0, start = 10;
    if (head.size() >= 10 && head[6] == 1)
      hlen = (unsigned char)head[8] | (uint64_t)(unsigned char)head[9] << 8;
    else if (head.size() >= 12) {
      start = 12;
      for (int b = 0; b < 4; ++b)
        hlen |= (uint64_t)(unsigned char)head[8 + b] << (8 * b);
    }
    uint64_t want = std::min<uint64_t>(size, start + std::min(hlen, kMaxTensorHeaderBytes + 1));
    return parseNpyHeader(readHead(path, f.fd, want), size);
  } catch (const TensorFileError &e) {
    std::string m = e.what();
    // Parsers name the format; say which file.
    size_t colon = m.find(": ");
    throw TensorFileError(path + (colon == std::string::npos ? ": " + m : m.substr(colon)));
  }
}

void readTensorBlock(const std::string &path, const TensorFileEntry &e,
                     const std::vector<int64_t> &offset, const std::vector<int64_t> &block,
                     void *dst) {
  Fd f{openOrFail(path, O_RDONLY, "open")};
  char *out = static_cast<char *>(dst);
  forEachRun(path, e, offset, block, [&](uint64_t at, int64_t to, int64_t bytes) {
    int64_t got = 0;
    while (got < bytes) {
      ssize_t r = ::pread(f.fd, out + to + got, (size_t)(bytes - got), (off_t)(at + got));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        fail(path, r < 0 ? std::string("read failed: ") + std::strerror(errno)
                         : "the file is shorter than its header says: truncated?");
      got += r;
    }
  });
  if (e.dtype == "bool") // any nonzero byte is true; the language's bool is 0/1
    for (int64_t i = 0, n = checkedNumel(block); i < n; ++i)
      out[i] = out[i] != 0;
}

TensorFileEntry createNpyFile(const std::string &path, const std::string &dtype,
                              const std::vector<int64_t> &shape) {
  std::string descr = npyDescr(dtype);
  if (descr.empty())
    fail(path, dtype == "bf16" ? std::string("`.npy` has no bf16 dtype: save bf16 values to a "
                                             "`.safetensors` file, or `cast` them to f32 first")
                               : "cannot write dtype `" + dtype + "`");
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  if (shape.size() == 1)
    dict.pop_back();
  dict += "), }";
  bool v2 = dict.size() + 11 > 65535;
  size_t pre = v2 ? 12 : 10;
  size_t total = pre + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string head = "\x93NUMPY";
  head += (char)(v2 ? 2 : 1);
  head += '\0';
  uint64_t hl = dict.size();
  for (size_t b = 0; b < (v2 ? 4u : 2u); ++b)
    head += (char)((hl >> (8 * b)) & 0xff);
  head += dict;
  TensorFileEntry e;
  e.dtype = dtype;
  e.shape = shape;
  e.elementSize = tensorFileElementSize(dtype);
  e.dataOffset = head.size();
  int64_t n = checkedNumel(shape);
  if (n < 0)
    fail(path, "shape " + shapeStr(shape) + " is too large");
  Fd f{openOrFail(path, O_WRONLY | O_CREAT | O_TRUNC, "create")};
  fileSizeOf(path, f.fd); // a regular file, not a device or FIFO
  finishCreate(path, f.fd, head, e.dataOffset + (uint64_t)n * (uint64_t)e.elementSize);
  return e;
}

std::map<std::string, TensorFileEntry>
createSafetensorsFile(const std::string &path,
                      const std::vector<std::pair<std::string, TensorFileEntry>> &tensors) {
  std::string json = "{";
  uint64_t at = 0;
  std::map<std::string, TensorFileEntry> out;
  std::vector<uint64_t> begins;
  for (auto &[name, t] : tensors) {
    if (out.count(name))
      fail(path, "tensor `" + name + "` is written twice");
    int64_t es = tensorFileElementSize(t.dtype), n = checkedNumel(t.shape);
    if (!es || n < 0)
      fail(path, "cannot write tensor `" + name + "`");
    std::string esc; // a JSON string: quotes, backslashes and control bytes escaped
    for (char ch : name) {
      if (ch == '"' || ch == '\\') {
        esc += '\\';
        esc += ch;
      } else if ((unsigned char)ch < 0x20 || ch == 0x7f) {
        char u[8];
        std::snprintf(u, sizeof u, "\\u%04x", (unsigned)(unsigned char)ch);
        esc += u;
      } else {
        esc += ch;
      }
    }
    json += std::string(json.size() > 1 ? "," : "") + "\"" + esc + "\":{\"dtype\":\"" +
            safetensorsName(t.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      json += (i ? "," : "") + std::to_string(t.shape[i]);
    uint64_t bytes = (uint64_t)n * (uint64_t)es;
    json += "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + bytes) + "]}";
    TensorFileEntry e = t;
    e.elementSize = es;
    e.dataOffset = at; // made absolute below
    out.emplace(name, e);
    at += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' '); // data starts 8-byte aligned
  std::string head;
  for (int b = 0; b < 8; ++b)
    head += (char)((json.size() >> (8 * b)) & 0xff);
  head += json;
  for (auto &[name, e] : out)
    e.dataOffset += head.size();
  Fd f{openOrFail(path, O_WRONLY | O_CREAT | O_TRUNC, "create")};
  fileSizeOf(path, f.fd); // a regular file, not a device or FIFO
  finishCreate(path, f.fd, head, head.size() + at);
  return out;
}

void writeTensorBlock(const std::string &path, const TensorFileEntry &e,
                      const std::vector<int64_t> &offset, const std::vector<int64_t> &block,
                      const void *src) {
  Fd f{openOrFail(path, O_WRONLY, "open for writing")};
  const char *in = static_cast<const char *>(src);
  forEachRun(path, e, offset, block, [&](uint64_t at, int64_t from, int64_t bytes) {
    writeAll(path, f.fd, in + from, (uint64_t)bytes, at);
  });
  if (::fsync(f.fd) != 0 && errno != EINVAL)
    fail(path, std::string("fsync failed: ") + std::strerror(errno));
}

} // namespace dt
