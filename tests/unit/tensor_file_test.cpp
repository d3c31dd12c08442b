// Unit tests for support/TensorFile: `.npy` and safetensors round trips for
// every dtype and rank 0-4 written and read a block at a time (uneven and
// empty blocks), files written by numpy and in the safetensors reference
// layout (tests/data/), and every class of malformed header.
#include "runtime/TensorIO.h"
#include "support/TensorFile.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace dt;

namespace {

std::string tmpPath(const std::string &name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("dt_tensor_file_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

/// The bytes of element `i` of a test array of `dtype`: distinct per index.
std::vector<char> pattern(const std::string &dtype, int64_t n) {
  int64_t es = tensorFileElementSize(dtype);
  std::vector<char> out((size_t)(n * es));
  for (int64_t i = 0; i < n; ++i) {
    char *p = out.data() + i * es;
    if (dtype == "f32") {
      float v = (float)i * 0.5f - 3;
      std::memcpy(p, &v, 4);
    } else if (dtype == "f64") {
      double v = (double)i * 0.25 - 7;
      std::memcpy(p, &v, 8);
    } else if (dtype == "i32") {
      int32_t v = (int32_t)(i * 7919 - 100000);
      std::memcpy(p, &v, 4);
    } else if (dtype == "i64") {
      int64_t v = i * 1000000007LL - (1LL << 40);
      std::memcpy(p, &v, 8);
    } else {
      *p = (char)(i % 3 == 0);
    }
  }
  return out;
}

/// Splits each dim into two blocks (the first ceil(d/2) wide, torch.chunk
/// style; an empty second block when d is 1 or 0) and calls `f(offset, shape)`.
template <class F> void forEachBlock(const std::vector<int64_t> &shape, F f) {
  size_t r = shape.size();
  for (int mask = 0; mask < (1 << r); ++mask) {
    std::vector<int64_t> off(r), blk(r);
    for (size_t d = 0; d < r; ++d) {
      int64_t first = (shape[d] + 1) / 2;
      bool second = mask >> d & 1;
      off[d] = second ? first : 0;
      blk[d] = second ? shape[d] - first : first;
    }
    f(off, blk);
  }
}

/// Copies the block at `off` of shape `blk` out of a row-major array.
std::vector<char> slice(const std::vector<char> &all, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &off, const std::vector<int64_t> &blk,
                        int64_t es) {
  std::vector<char> out((size_t)(numel(blk) * es));
  int64_t n = numel(blk);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, g = 0, stride = 1;
    std::vector<int64_t> idx(blk.size());
    for (size_t d = blk.size(); d-- > 0;) {
      idx[d] = rem % blk[d];
      rem /= blk[d];
    }
    for (size_t d = blk.size(); d-- > 0;) {
      g += (off[d] + idx[d]) * stride;
      stride *= shape[d];
    }
    std::memcpy(out.data() + i * es, all.data() + g * es, (size_t)es);
  }
  return out;
}

std::string slurp(const std::string &p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::string &p, const std::string &bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

const char *kDTypes[] = {"f32", "f64", "i32", "i64", "bool"};
const std::vector<std::vector<int64_t>> kShapes = {{},     {0},    {1},       {7},
                                                   {3, 5}, {4, 0}, {2, 3, 5}, {3, 1, 4, 2}};

} // namespace

TEST_CASE("tensor files: .npy and safetensors round trip every dtype and rank 0-4 by blocks") {
  for (const char *dt : kDTypes) {
    for (const auto &shape : kShapes) {
      int64_t es = tensorFileElementSize(dt);
      std::vector<char> data = pattern(dt, numel(shape));
      for (bool st : {false, true}) {
        CAPTURE(dt);
        CAPTURE(shape.size());
        CAPTURE(st);
        std::string path = tmpPath(st ? "rt.safetensors" : "rt.npy");
        TensorFileEntry e;
        e.dtype = dt;
        e.shape = shape;
        if (st) {
          TensorFileEntry other; // a second tensor before it in the file
          other.dtype = "f32";
          other.shape = {3};
          auto all = createSafetensorsFile(path, {{"first", other}, {"layers.0.w", e}});
          e = all.at("layers.0.w");
        } else {
          e = createNpyFile(path, dt, shape);
        }
        // Written by blocks (each block once, as ranks do)...
        forEachBlock(shape, [&](auto &off, auto &blk) {
          auto part = slice(data, shape, off, blk, es);
          writeTensorBlock(path, e, off, blk, part.data());
        });
        // ...read back whole and by blocks, through a fresh header parse.
        TensorFileEntry r = readTensorFileEntry(path, st ? "layers.0.w" : "");
        CHECK(r.dtype == dt);
        CHECK(r.shape == shape);
        // The data section starts aligned, as numpy and safetensors writers do
        // (the safetensors tensor follows `first`'s 12 bytes).
        CHECK((st ? r.dataOffset - 12 : r.dataOffset) % (st ? 8 : 64) == 0);
        std::vector<char> whole(data.size());
        readTensorBlock(path, r, std::vector<int64_t>(shape.size(), 0), shape, whole.data());
        CHECK(whole == data);
        forEachBlock(shape, [&](auto &off, auto &blk) {
          std::vector<char> got((size_t)(numel(blk) * es));
          readTensorBlock(path, r, off, blk, got.data());
          CHECK(got == slice(data, shape, off, blk, es));
        });
        CHECK(std::filesystem::file_size(path) == r.dataOffset + data.size());
      }
    }
  }
}

TEST_CASE("tensor files: files written by numpy and in the safetensors reference layout") {
  const std::string dir = DT_TEST_DATA_DIR;
  // tests/data/make_fixtures.py wrote these with numpy.save: arange-based values.
  struct Case {
    const char *file, *dtype;
    std::vector<int64_t> shape;
  } cases[] = {{"np_f32_2x3.npy", "f32", {2, 3}},
               {"np_f64_4.npy", "f64", {4}},
               {"np_i32_2x2x2.npy", "i32", {2, 2, 2}},
               {"np_i64_scalar.npy", "i64", {}},
               {"np_bool_5.npy", "bool", {5}}};
  for (auto &c : cases) {
    CAPTURE(c.file);
    std::string p = dir + "/" + c.file;
    TensorFileEntry e = readTensorFileEntry(p, "");
    CHECK(e.dtype == c.dtype);
    CHECK(e.shape == c.shape);
    std::vector<char> got((size_t)(numel(c.shape) * e.elementSize));
    readTensorBlock(p, e, std::vector<int64_t>(c.shape.size(), 0), c.shape, got.data());
    for (int64_t i = 0; i < numel(c.shape); ++i) {
      double v = 0;
      if (e.dtype == "f32") {
        float f;
        std::memcpy(&f, got.data() + i * 4, 4);
        v = f;
      } else if (e.dtype == "f64") {
        std::memcpy(&v, got.data() + i * 8, 8);
      } else if (e.dtype == "i32") {
        int32_t x;
        std::memcpy(&x, got.data() + i * 4, 4);
        v = x;
      } else if (e.dtype == "i64") {
        int64_t x;
        std::memcpy(&x, got.data() + i * 8, 8);
        v = (double)x;
      } else {
        v = got[i];
      }
      double want = e.dtype == "bool"  ? (double)(i % 2)
                    : e.dtype == "i64" ? 42.0
                    : e.dtype == "i32" ? (double)(i * 3 / 2)
                                       : (double)i * 1.5;
      CHECK(v == want);
    }
  }
  // The safetensors fixture: metadata, two tensors, data not in name order.
  std::string p = dir + "/ref_two.safetensors";
  TensorFileEntry w = readTensorFileEntry(p, "w"), b = readTensorFileEntry(p, "b");
  CHECK(w.dtype == "f32");
  CHECK(w.shape == std::vector<int64_t>{2, 2});
  CHECK(b.dtype == "i64");
  CHECK(b.shape == std::vector<int64_t>{3});
  float wv[4];
  readTensorBlock(p, w, {0, 0}, {2, 2}, wv);
  CHECK(wv[0] == 1.0f);
  CHECK(wv[3] == 4.0f);
  int64_t bv[3];
  readTensorBlock(p, b, {1}, {2}, bv);
  CHECK(bv[0] == -2);
  CHECK(bv[1] == 3);
  CHECK_THROWS_WITH_AS(readTensorFileEntry(p, "nope"),
                       doctest::Contains("no tensor named `nope` (it has: b, w)"), TensorFileError);
}

TEST_CASE("tensor files: safetensors names are JSON strings, escapes written and read") {
  // Written: a quote, a backslash and control bytes are escaped, so a JSON
  // reader (Python's json) takes the header; read back to the same names.
  TensorFileEntry e;
  e.dtype = "f32";
  e.shape = {1};
  std::string p = tmpPath("esc.safetensors");
  const std::string odd = std::string("a\"b\\c\td") + (char)1;
  createSafetensorsFile(p, {{odd, e}, {"w\xc3\xa9", e}});
  std::string bytes = slurp(p);
  CHECK(bytes.find("a\\\"b\\\\c\\u0009d\\u0001") != std::string::npos);
  CHECK(bytes.find('\t') == std::string::npos);
  CHECK(readTensorFileEntry(p, odd).shape == std::vector<int64_t>{1});
  CHECK(readTensorFileEntry(p, "w\xc3\xa9").dtype == "f32");
  // Read: \uXXXX escapes (json.dumps writes every non-ASCII character so),
  // a surrogate pair among them, decode to UTF-8.
  std::string h = "{\"w\\u00e9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                  "\"\\ud83d\\ude00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[i] = (char)((h.size() >> (8 * i)) & 0xff);
  file += h + std::string(8, '\0');
  std::string q = tmpPath("uni.safetensors");
  spit(q, file);
  CHECK(readTensorFileEntry(q, "w\xc3\xa9").dtype == "f32");
  CHECK(readTensorFileEntry(q, "\xf0\x9f\x98\x80").shape == std::vector<int64_t>{1});
}

TEST_CASE("tensor files: malformed headers are clear errors naming the file") {
  std::string good = tmpPath("good.npy");
  createNpyFile(good, "f32", {2, 3});
  const std::string bytes = slurp(good);
  auto bad = [&](const std::string &content, const std::string &why, const char *ext = ".npy",
                 const std::string &key = "") {
    std::string p = tmpPath(std::string("bad") + ext);
    spit(p, content);
    CAPTURE(why);
    CHECK_THROWS_WITH_AS(readTensorFileEntry(p, key), doctest::Contains(why.c_str()),
                         TensorFileError);
    try {
      readTensorFileEntry(p, key);
    } catch (const TensorFileError &e) {
      CHECK(std::string(e.what()).rfind(p, 0) == 0); // names the file first
    }
  };
  bad("", "not an .npy file");
  bad("hello world, not numpy", "not an .npy file");
  bad(bytes.substr(0, 9), "not an .npy file");
  bad(bytes.substr(0, 40), "truncated header");
  bad(bytes.substr(0, bytes.size() - 1), "past the end of the file");
  // A longer file and a header whose padding holds other bytes are as
  // malformed (a changed shape or length byte read data silently).
  bad(bytes + "xyz", "extra bytes at the end");
  std::string junk = bytes;
  junk[junk.find('}') + 2] = 'Z';
  bad(junk, "bytes after the closing `}` that are not padding");
  std::string v9 = bytes;
  v9[6] = 9;
  bad(v9, "unsupported .npy version 9");
  auto withDict = [&](const std::string &dict) {
    std::string h = "\x93NUMPY";
    h += (char)1;
    h += '\0';
    std::string d = dict + "\n";
    h += (char)(d.size() & 0xff);
    h += (char)(d.size() >> 8);
    return h + d + std::string(24, '\0');
  };
  bad(withDict("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"), "big-endian");
  bad(withDict("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }"), "dtype `<c8`");
  bad(withDict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"), "Fortran-order");
  bad(withDict("{'descr': '<f4', 'shape': (2, 3), }"), "are required");
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }"), "negative");
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }"),
      "too large");
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
      "out of range");
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"), "closing the header");
  bad(withDict("{'descr: '<f4'}"), "malformed header");
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
      "unknown key `x`");
  // A key twice: the shapes were concatenated (f32[2, 3, 3, 2] from 24 bytes).
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (3, 2), }"),
      "key `shape` twice");
  bad(withDict("{'descr': '<f4', 'fortran_order': False, 'fortran_order': True, 'shape': (6,)}"),
      "key `fortran_order` twice");

  auto st = [](const std::string &json, size_t dataBytes, uint64_t lenOverride = 0) {
    std::string h;
    uint64_t n = lenOverride ? lenOverride : json.size();
    for (int b = 0; b < 8; ++b)
      h += (char)((n >> (8 * b)) & 0xff);
    return h + json + std::string(dataBytes, '\0');
  };
  const char *S = ".safetensors";
  bad(st("{}", 0).substr(0, 5), "no header length", S, "w");
  bad(st("{}", 0, 1ull << 40), "over the limit", S, "w");
  bad(st("{}", 0, 100), "truncated header", S, "w");
  bad(st(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,4]}})", 4), "dtype F8_E4M3", S,
      "w");
  bad(st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4), "needs 8", S, "w");
  bad(st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "past the end", S, "w");
  bad(st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
      "[8, 0] end before they begin", S, "w");
  bad(st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
         12),
      "overlap", S, "w");
  bad(st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
         16),
      "appears twice", S, "w");
  bad(st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8), "closing the header", S,
      "w");
  bad(st(R"({"__metadata__":{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}})",
         0),
      "nesting deeper", S, "w");
  CHECK_THROWS_WITH_AS(readTensorFileEntry(tmpPath("missing.npy"), ""),
                       doctest::Contains("cannot open"), TensorFileError);
  CHECK_THROWS_WITH_AS(readTensorFileEntry(std::filesystem::temp_directory_path().string(), ""),
                       doctest::Contains("not a regular file"), TensorFileError);
}

TEST_CASE("tensor files: a block outside the array is an error, not a wild read") {
  std::string p = tmpPath("blk.npy");
  TensorFileEntry e = createNpyFile(p, "i32", {4, 4});
  std::vector<int32_t> buf(16);
  CHECK_THROWS_AS(readTensorBlock(p, e, {3, 0}, {2, 4}, buf.data()), TensorFileError);
  CHECK_THROWS_AS(readTensorBlock(p, e, {-1, 0}, {1, 4}, buf.data()), TensorFileError);
  CHECK_THROWS_AS(readTensorBlock(p, e, {0}, {4}, buf.data()), TensorFileError);
  CHECK_THROWS_AS(writeTensorBlock(p, e, {0, 2}, {4, 3}, buf.data()), TensorFileError);
  // The file shrank after its header was read: a read error, not garbage.
  std::filesystem::resize_file(p, e.dataOffset + 8);
  CHECK_THROWS_WITH_AS(readTensorBlock(p, e, {0, 0}, {4, 4}, buf.data()),
                       doctest::Contains("truncated"), TensorFileError);
}

TEST_CASE("tensor files: a save removes the temporary files killed runs left, only theirs") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dt-stale-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string target = (dir / "w.npy").string();
  uint64_t serial = 0;
  auto temp = [&](uint64_t pid, int minutesOld) {
    std::string p = dt::saveTempPath(target, (pid << 40) | ++serial);
    std::ofstream(p) << "partial";
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::minutes(minutesOld));
    return p;
  };
  const std::string dead = temp(0xfffffe, 60);   // no such process, an hour old
  const std::string fresh = temp(0xfffffe, 0);   // maybe another host's save now
  const std::string live = temp(::getpid(), 60); // this process: alive
  const std::string other = (dir / "x.dtensor-tmp-00000000000000ff.npy").string();
  std::ofstream(other) << "another target's";
  fs::last_write_time(other, fs::file_time_type::clock::now() - std::chrono::minutes(60));
  dt::removeStaleSaves(target);
  CHECK(!fs::exists(dead));
  CHECK(fs::exists(fresh));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  fs::remove_all(dir);
}
