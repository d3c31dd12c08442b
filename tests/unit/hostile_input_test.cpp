// Unit tests for hostile input at the edges of the compiler: the overflow-
// checked arithmetic of ir/Checked.h, the resource limits of CompileOptions
// (elements per tensor, ranks per process, source bytes) and the source file
// reader. The same classes are tested end to end in tests/lang/fail_*.dt and
// tests/hostile/input_files.sh.
#include "frontend/Compilation.h"
#include "ir/Collectives.h"
#include "support/Checked.h"

#include <doctest/doctest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace dt;

namespace {

/// The DiagIds of `src` compiled with `opts`.
std::vector<DiagId> errorsOf(const std::string &src, CompileOptions opts = {}) {
  Compilation s(opts);
  s.compile("t.dt", src);
  std::vector<DiagId> ids;
  for (auto &d : s.diags.all())
    if (d.severity == Severity::Error)
      ids.push_back(d.id);
  return ids;
}

} // namespace

TEST_CASE("hostile: checked arithmetic") {
  CHECK(checkedMul(INT64_MAX, 1) == INT64_MAX);
  CHECK(!checkedMul(INT64_MAX, 2));
  CHECK(!checkedMul(int64_t(1) << 32, int64_t(1) << 31));
  CHECK(checkedMul(int64_t(1) << 31, int64_t(1) << 31) == int64_t(1) << 62);
  CHECK(!checkedMul(3037000500, 3037000500)); // just above sqrt(2^63)
  CHECK(checkedMul(3037000499, 3037000499) == int64_t(9223372030926249001));
  CHECK(!checkedAdd(INT64_MAX, 1));
  CHECK(checkedAdd(INT64_MAX - 1, 1) == INT64_MAX);
  std::vector<int64_t> dims = {4294967296, 4294967296};
  CHECK(!checkedProduct(dims, [](int64_t v) { return v; }));
  CHECK(doubleToInt64(4.0) == 4);
  CHECK(doubleToInt64(-9223372036854775808.0) == INT64_MIN);
  CHECK(!doubleToInt64(9223372036854775808.0));
  CHECK(!doubleToInt64(1e300));
  CHECK(!doubleToInt64(0.5));
  CHECK(!doubleToInt64(std::nan("")));
}

TEST_CASE("hostile: an overflowing shape or mesh saturates instead of wrapping") {
  Shape s = {Dim::lit(4294967296), Dim::lit(4294967296)};
  CHECK(!checkedNumElements(s));
  CHECK(numElements(s) == INT64_MAX);
  Mesh m;
  m.axes = {{"x", 4294967296}, {"y", 4294967296}};
  CHECK(m.size() == INT64_MAX);
}

TEST_CASE("hostile: resource limits come from CompileOptions") {
  CompileOptions small;
  small.maxRanks = 8;
  small.maxTensorElements = 100;
  CHECK(errorsOf("mesh m = [x = 8]", small).empty());
  CHECK(errorsOf("mesh m = [x = 4, y = 4]", small) == std::vector{DiagId::MeshTooLarge});
  // a device id is a name, not a count: a large one costs nothing (sparse ids)
  CHECK(errorsOf("mesh m = [x = 2] devices [0, 1000000]", small).empty());
  // ... but the distinct ids of all meshes together are ranks: they must fit
  CHECK(errorsOf("mesh m = [x = 8]\nmesh q = [x = 8] devices [0, 1, 2, 3, 4, 5, 6, 7]", small)
            .empty());
  CHECK(errorsOf("mesh m = [x = 8]\nmesh q = [x = 2] devices [7, 8]", small) ==
        std::vector{DiagId::MeshesTooManyDevices});
  CHECK(errorsOf("mesh m = [x = 2] devices [0, 7]", small).empty());
  CHECK(errorsOf("let a : f32[10, 10] = ones()", small).empty());
  CHECK(errorsOf("let a : f32[10, 11] = ones()", small) == std::vector{DiagId::TensorTooLarge});
  // an inferred shape (an outer product by broadcasting) is checked too
  CHECK(errorsOf("let a : f32[20, 1] = ones()\nlet b : f32[1, 20] = ones()\nlet c = a + b",
                 small) == std::vector{DiagId::TensorTooLarge});
  // the defaults: a 4096-device mesh is fine, one more device is not
  CHECK(errorsOf("mesh m = [x = 4096]").empty());
  CHECK(errorsOf("mesh m = [x = 4097]") == std::vector{DiagId::MeshTooLarge});
}

TEST_CASE("hostile: call chains and struct nests are bounded where they are declared") {
  // Calls nested deeper than the executors run (256) are an error of the
  // program, not of its run; exactly at the limit they are fine.
  // f0 calls f1 ... calls fn; `param` is their parameter's type.
  auto chain = [](int n, const std::string &param = "f32[2]") {
    std::string sig = "(x: " + param + ") -> " + param;
    std::string s = "fn f" + std::to_string(n) + sig + " { return x }\n";
    for (int i = n - 1; i >= 0; --i)
      s += "fn f" + std::to_string(i) + sig + " { return f" + std::to_string(i + 1) + "(x) }\n";
    return s + "let a : f32[2] = ones()\nprint(f0(a))\n";
  };
  CHECK(errorsOf(chain(255)).empty()); // f0 .. f255: 256 calls deep
  CHECK(errorsOf(chain(256)) == std::vector{DiagId::CallsTooDeep});
  // A chain of generics is instantiated inside each other: bounded at the
  // same depth (this ran for minutes at 3000 and recursed without limit).
  CHECK(errorsOf(chain(200, "f32[N]")).empty());
  auto start = std::chrono::steady_clock::now();
  auto deep = errorsOf(chain(3000, "f32[N]"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  REQUIRE(!deep.empty());
  CHECK(deep[0] == DiagId::CallsTooDeep);
  // Definitions alone nest nothing: each one's check takes the declared
  // results of the one it calls (this was the limit's error, with false
  // "returns 0 values" errors after it, and n^2 work).
  std::string defs = chain(3000, "f32[N]");
  defs = defs.substr(0, defs.find("let a"));
  start = std::chrono::steady_clock::now();
  CHECK(errorsOf(defs).empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CompileOptions shallow;
  shallow.maxCallDepth = 3;
  CHECK(errorsOf(chain(2), shallow).empty());
  CHECK(errorsOf(chain(3), shallow) == std::vector{DiagId::CallsTooDeep});
  // Each struct nest doubling its tensors: 2^14 tensors are fine, 2^15 not
  // (this used to grow exponentially in time and memory, then abort).
  auto nest = [](int levels) {
    std::string s = "struct S0 { a: f32[2] }\n";
    for (int i = 1; i <= levels; ++i)
      s += "struct S" + std::to_string(i) + " { x: S" + std::to_string(i - 1) + ", y: S" +
           std::to_string(i - 1) + " }\n";
    return s;
  };
  CHECK(errorsOf(nest(14)).empty());
  auto ids = errorsOf(nest(40)); // S15 is refused; S16 .. S40 name it (twice each)
  REQUIRE(ids.size() == 51);
  CHECK(ids[0] == DiagId::StructTooLarge);
  CHECK(ids[1] == DiagId::UnknownType);
  // The same limit for a flat struct of plain fields.
  auto flat = [](int fields) {
    std::string s = "struct F { ";
    for (int i = 0; i < fields; ++i)
      s += (i ? ", f" : "f") + std::to_string(i) + ": f32[1]";
    return s + " }\n";
  };
  CHECK(errorsOf(flat(16384)).empty());
  CHECK(errorsOf(flat(16385)) == std::vector{DiagId::StructTooLarge});
}

TEST_CASE("hostile: source files are regular files under the size limit") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "dt_hostile_unit";
  fs::create_directories(dir / "sub.dt");
  std::string text;
  CHECK(readSourceFile((dir / "sub.dt").string(), 1000, text) == DiagId::SourceNotFile);
  CHECK(readSourceFile("/dev/zero", 1000, text) == DiagId::SourceNotFile);
  CHECK(readSourceFile((dir / "missing.dt").string(), 1000, text) == DiagId::SourceUnreadable);
  { std::ofstream(dir / "ok.dt") << std::string(100, '#'); }
  CHECK(!readSourceFile((dir / "ok.dt").string(), 100, text));
  CHECK(text.size() == 100);
  CHECK(readSourceFile((dir / "ok.dt").string(), 99, text) == DiagId::SourceTooLarge);
  Compilation s;
  CHECK(!s.compileFile((dir / "sub.dt").string()));
  REQUIRE(s.diags.all().size() == 1);
  CHECK(s.diags.all()[0].id == DiagId::SourceNotFile);
  fs::remove_all(dir);
}

TEST_CASE("hostile: the tiling check of a collective is near-linear in the mesh size") {
  // 4096 ranks on one axis: an all_gather and an all_to_all over the whole
  // axis. The old check compared every rank's block with every other rank's
  // block of its group for every rank (2^36 box intersections here).
  auto mesh = std::make_shared<Mesh>();
  mesh->name = "m";
  mesh->axes = {{"x", 4096}};
  for (int64_t i = 0; i < 4096; ++i)
    mesh->devices.push_back(i);
  TensorType sharded = replicatedType(DType::F32, {Dim::lit(8192), Dim::lit(8192)}, mesh);
  sharded.placements[0] = Placement::shard(0);
  TensorType gathered = replicatedType(DType::F32, sharded.shape, mesh);
  TensorType moved = sharded;
  moved.placements[0] = Placement::shard(1);
  auto start = std::chrono::steady_clock::now();
  CHECK(checkCollective(Op::AllGather, sharded, gathered, {0}) == "");
  CHECK(checkCollective(Op::AllToAll, sharded, moved, {0}) == "");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(secs < 10);
}
