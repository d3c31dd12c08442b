// Unit tests of the embedding API (include/dtensor/dtensor.hpp): calls with
// host buffers and with session values, generic functions instantiated per
// shape and cached, results as global values and per-rank blocks,
// diagnostics and faults as values (never printed), and two sessions used
// from two threads at once. examples/embed is the same API from a separate
// project against the installed package (ctest `embed/installed`).
#include "dtensor/dtensor.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

const char *kProgram = R"(
mesh m = [x = 2, y = 2]
fn scale(a: f32[N] @ m[x], k: f32[] @ m[]) -> f32[N] @ m[x] {
  return a * k
}
fn twice(a: f32[N, K] @ *) -> f32[N, K] @ * {
  return a + a
}
fn both(a: f32[N] @ m[x]) -> (f32[N] @ m[x], f32[] @ m[]) {
  return exp(a) * 2.0, relayout(sum(a), m[])
}
let v : f32[4] @ m[x] = [1, 2, 3, 4]
let grid : i32[4, 2] @ m[x, y] = [[0, 1], [2, 3], [4, 5], [6, 7]]
let fgrid : f32[4, 2] @ m[x, y] = [[0, 1], [2, 3], [4, 5], [6, 7]]
print(v)
)";

std::vector<double> values(const dtensor::Tensor &t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.push_back(t.at(i));
  return out;
}

} // namespace

TEST_CASE("embed: calls with host buffers and session values; results and blocks") {
  dtensor::Session s;
  REQUIRE(s.compile(kProgram, "prog.dt"));
  CHECK(s.takeOutput() == "[1, 2, 3, 4]\n");
  CHECK(s.hasFunction("scale"));
  CHECK_FALSE(s.hasFunction("nope"));
  CHECK(s.hasValue("v"));

  // Host data takes the parameter's declared layout.
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  float k = 0.5f;
  auto r = s.call("scale", {dtensor::TensorView(a.data(), {6}), dtensor::TensorView(&k, {})});
  REQUIRE(r.size() == 1);
  CHECK(r[0].str() == "[0.5, 1, 1.5, 2, 2.5, 3]");
  CHECK(r[0].type() == "f32[6] @ m{x: shard(0), y: replicate}");
  CHECK(r[0].dtype() == dtensor::DType::F32);
  CHECK(r[0].shape() == std::vector<int64_t>{6});
  // A session value as an argument (by name), mixed with host data.
  r = s.call("scale", {"v", dtensor::TensorView(&k, {})});
  CHECK(r[0].str() == "[0.5, 1, 1.5, 2]");
  // Several results; the host's input buffer is read in place, never written.
  std::vector<float> z = {0, 0, 0, 0};
  r = s.call("both", {dtensor::TensorView(z.data(), {4})});
  REQUIRE(r.size() == 2);
  CHECK(values(r[0]) == std::vector<double>{2, 2, 2, 2});
  CHECK(r[1].str() == "0");
  CHECK(z == std::vector<float>{0, 0, 0, 0});
  CHECK(a == std::vector<float>{1, 2, 3, 4, 5, 6});
  // A result passed back in (its view).
  auto r2 = s.call("both", {r[0]});
  CHECK(r2[1].str() == "8");

  // Values and per-rank blocks.
  auto g = s.value("grid");
  CHECK(g.str() == "[[0, 1], [2, 3], [4, 5], [6, 7]]");
  CHECK(g.type() == "i32[4, 2] @ m{x: shard(0), y: shard(1)}");
  auto blocks = s.blocks("grid");
  REQUIRE(blocks.size() == 4);
  CHECK(blocks[0].tensor.str() == "[[0], [2]]");
  CHECK(blocks[1].tensor.str() == "[[1], [3]]");
  CHECK(blocks[2].tensor.str() == "[[4], [6]]");
  CHECK(blocks[3].tensor.str() == "[[5], [7]]");
  CHECK(blocks[3].device == 3);
  // The blocks of a call's result, as its type lays it out.
  std::vector<float> six = {1, 2, 3, 4, 5, 6};
  float one = 1;
  auto sr = s.call("scale", {dtensor::TensorView(six.data(), {6}), dtensor::TensorView(&one, {})});
  auto rb = s.blocks(sr[0]);
  REQUIRE(rb.size() == 4);
  CHECK(rb[0].tensor.str() == "[1, 2, 3]");
  CHECK(rb[1].tensor.str() == "[1, 2, 3]");
  CHECK(rb[3].tensor.str() == "[4, 5, 6]");
  auto vb = s.blocks("v");
  REQUIRE(vb.size() == 4);
  CHECK(vb[1].tensor.str() == "[1, 2]"); // replicated along y
  CHECK(vb[2].tensor.str() == "[3, 4]");
}

TEST_CASE("embed: generic functions are instantiated per shape, once") {
  dtensor::Session s;
  REQUIRE(s.compile(kProgram));
  std::vector<double> d = {1, 2, 3, 4, 5, 6};
  std::vector<float> f = {1, 2, 3, 4};
  CHECK(s.compiledCalls() == 0);
  // `@ *` with host data: a host instance, on f32 [2, 2] and [3, 2] ...
  auto r = s.call("twice", {dtensor::TensorView(f.data(), {2, 2})});
  CHECK(r[0].str() == "[[2, 4], [6, 8]]");
  CHECK(r[0].type() == "f32[2, 2]");
  CHECK(s.compiledCalls() == 1);
  std::vector<float> f6(f.begin(), f.end());
  f6.push_back(5);
  f6.push_back(6);
  r = s.call("twice", {dtensor::TensorView(f6.data(), {3, 2})});
  CHECK(r[0].str() == "[[2, 4], [6, 8], [10, 12]]");
  CHECK(s.compiledCalls() == 2);
  // ... and again on [2, 2]: cached.
  for (int i = 0; i < 3; ++i)
    s.call("twice", {dtensor::TensorView(f.data(), {2, 2})});
  CHECK(s.compiledCalls() == 2);
  // A distributed session value picks a distributed instance.
  r = s.call("twice", {"fgrid"});
  CHECK(r[0].type() == "f32[4, 2] @ m{x: shard(0), y: shard(1)}");
  CHECK(r[0].str() == "[[0, 2], [4, 6], [8, 10], [12, 14]]");
  // A size symbol bound differently gives a new instance of `scale`.
  float k = 2;
  for (int n : {2, 4, 8, 4, 2}) {
    std::vector<float> x(n, 1.f);
    auto y = s.call("scale", {dtensor::TensorView(x.data(), {n}), dtensor::TensorView(&k, {})});
    CHECK(values(y[0]) == std::vector<double>(n, 2.0));
  }
  CHECK(s.compiledCalls() == 6);
  (void)d;
}

TEST_CASE("embed: diagnostics and faults are values; the session goes on") {
  dtensor::Session s;
  REQUIRE(s.compile(kProgram));
  s.takeOutput();
  // A type error in host-supplied source.
  CHECK_FALSE(s.compile("let w : f32[4] @ m[y] = ones()\nlet bad = v + w\n", "host.dt"));
  REQUIRE(s.diagnostics().size() >= 1);
  const dtensor::Diagnostic &d = s.diagnostics()[0];
  CHECK(d.severity == dtensor::Diagnostic::Severity::Error);
  CHECK(d.kind == "ShardingMismatch");
  CHECK(d.file == "host.dt");
  CHECK(d.line == 2);
  CHECK(d.column == 11);
  CHECK(d.message.find("disagree") != std::string::npos);
  CHECK(d.hint.find("relayout") != std::string::npos);
  CHECK(d.rendered.find("host.dt:2:11: error:") == 0);
  CHECK_FALSE(s.hasValue("w")); // the failed source left nothing behind
  // ... nor its functions, meshes or structs: the host corrects the source
  // and compiles the same names again. (A broken function used to stay
  // registered: "already defined", then an internal error.)
  CHECK_FALSE(s.compile("mesh q = [z = 2]\nstruct S { a: f32[2] @ q[z] }\n"
                        "fn dbl(a: f32[2] @ q[z]) -> f32[2] @ q[z] { return a + true }\n",
                        "fix.dt"));
  CHECK(s.diagnostics().at(0).kind != "Redefined");
  CHECK(s.compile("mesh q = [z = 2]\nstruct S { a: f32[2] @ q[_] }\n"
                  "fn dbl(a: f32[2] @ q[z]) -> f32[2] @ q[z] { return a + a }\n",
                  "fix.dt"));
  std::vector<float> two = {1, 2};
  CHECK(s.call("dbl", {dtensor::TensorView(two.data(), {2})})[0].str() == "[2, 4]");
  // A parse error.
  CHECK_FALSE(s.compile("let = 3\n", "p.dt"));
  CHECK(s.diagnostics().at(0).kind == "ParseError");
  // Calls that do not type-check throw Error(Compile) with the diagnostics.
  float k = 1;
  std::vector<float> x = {1, 2, 3};
  auto kind = [&](auto &&f) {
    try {
      f();
    } catch (const dtensor::Error &e) {
      return e.kind;
    }
    return dtensor::Error::Kind::Internal; // not thrown
  };
  try {
    s.call("scael", {dtensor::TensorView(x.data(), {3}), dtensor::TensorView(&k, {})});
    FAIL("no error");
  } catch (const dtensor::Error &e) {
    CHECK(e.kind == dtensor::Error::Kind::Compile);
    REQUIRE(!e.diagnostics.empty());
    CHECK(e.diagnostics[0].kind == "UnknownFunction");
    CHECK(e.diagnostics[0].hint == "did you mean `scale`?");
  }
  std::vector<double> xd = {1, 2, 3};
  try {
    s.call("scale", {dtensor::TensorView(xd.data(), {3}), dtensor::TensorView(&k, {})});
    FAIL("no error");
  } catch (const dtensor::Error &e) {
    CHECK(e.kind == dtensor::Error::Kind::Compile);
    REQUIRE(!e.diagnostics.empty());
    CHECK(e.diagnostics[0].kind == "ArgType");
  }
  CHECK(kind([&] {
          s.call("scale", {"nothing", dtensor::TensorView(&k, {})});
        }) == dtensor::Error::Kind::Usage);
  CHECK(kind([&] {
          s.call("scale", {dtensor::TensorView(dtensor::DType::F32, {3}, nullptr),
                           dtensor::TensorView(&k, {})});
        }) == dtensor::Error::Kind::Usage);
  CHECK(kind([&] { s.value("nothing"); }) == dtensor::Error::Kind::Usage);
  // A fault while running: Error(Runtime); then the session still works.
  REQUIRE(s.compile("fn pick(t: f32[4, 2] @ m[_, _], i: i32[2] @ m[_]) -> f32[2, 2] @ m[_, _] {\n"
                    "  return index_select(t, i)\n}\n"));
  std::vector<float> t8(8, 1.f);
  std::vector<int32_t> ids = {9, 0};
  CHECK(kind([&] {
          s.call("pick",
                 {dtensor::TensorView(t8.data(), {4, 2}), dtensor::TensorView(ids.data(), {2})});
        }) == dtensor::Error::Kind::Runtime);
  // The fault is the Error's last diagnostic: the failed op's line and
  // column in the compiled text, with the source line and a caret.
  try {
    s.call("pick", {dtensor::TensorView(t8.data(), {4, 2}), dtensor::TensorView(ids.data(), {2})});
    FAIL("no error");
  } catch (const dtensor::Error &e) {
    REQUIRE(!e.diagnostics.empty());
    const dtensor::Diagnostic &d = e.diagnostics.back();
    CHECK(d.kind == "RuntimeError");
    CHECK(d.line == 2);
    CHECK(d.column == 10);
    CHECK(d.message.find("index 9 is out of range") != std::string::npos);
    CHECK(d.message.find("(line") == std::string::npos);
    CHECK(d.rendered.find("return index_select(t, i)") != std::string::npos);
    CHECK(std::string(e.what()).find("(line 2:10)") != std::string::npos);
  }
  ids = {3, 0};
  auto r = s.call("pick",
                  {dtensor::TensorView(t8.data(), {4, 2}), dtensor::TensorView(ids.data(), {2})});
  CHECK(r[0].str() == "[[1, 1], [1, 1]]");
  auto y = s.call("scale", {dtensor::TensorView(x.data(), {3}), dtensor::TensorView(&k, {})});
  CHECK(y[0].str() == "[1, 2, 3]");
  // A moved-from session says so (it crashed); the one moved to goes on.
  dtensor::Session t = std::move(s);
  CHECK(kind([&] { s.hasFunction("scale"); }) == dtensor::Error::Kind::Usage);
  CHECK(kind([&] { s.call("scale", {"nothing"}); }) == dtensor::Error::Kind::Usage);
  CHECK(kind([&] { s.compile("let q = 1\n"); }) == dtensor::Error::Kind::Usage);
  CHECK(t.hasFunction("scale"));
}

TEST_CASE("embed: a session entered by a second thread while busy says so") {
  // Every member that reads the session: value, takeOutput (a call may be
  // printing), diagnostics, hasValue, hasFunction, blocks, compiledCalls.
  dtensor::Session s;
  REQUIRE(s.compile("var v : f32[64] = zeros()\n"));
  dtensor::Tensor held = s.value("v");
  constexpr int kReaders = 7;
  std::atomic<bool> done{false};
  std::atomic<int> refused[kReaders] = {}, other{0}, rounds{0};
  auto allRefused = [&] {
    for (auto &r : refused)
      if (r == 0)
        return false;
    return true;
  };
  std::thread t([&] {
    // Runs a long input again and again until every reader was refused (a
    // loaded machine may not schedule the other thread during the first);
    // refused itself while the other thread is in, it tries again.
    while (!allRefused() && rounds < 400 && other == 0) {
      try {
        if (s.compile("for i in 0..20000 {\n  v = v + 1.0\n}\n"))
          ++rounds;
        else
          ++other;
      } catch (const dtensor::Error &e) {
        if (e.kind != dtensor::Error::Kind::Usage)
          ++other;
      }
    }
    done = true;
  });
  for (int i = 0; !done; i = (i + 1) % kReaders) {
    try {
      switch (i) {
      case 0:
        s.value("v");
        break;
      case 1:
        s.takeOutput();
        break;
      case 2:
        s.diagnostics();
        break;
      case 3:
        s.hasValue("v");
        break;
      case 4:
        s.hasFunction("f");
        break;
      case 5:
        s.blocks(held);
        break;
      default:
        s.compiledCalls();
        break;
      }
    } catch (const dtensor::Error &e) {
      if (e.kind == dtensor::Error::Kind::Usage &&
          std::string(e.what()).find("in use by another thread") != std::string::npos)
        ++refused[i];
      else
        ++other;
    }
  }
  t.join();
  CHECK(other == 0);
  for (int i = 0; i < kReaders; ++i) {
    INFO("reader " << i);
    CHECK(refused[i] > 0);
  }
  CHECK(s.value("v").at(0) == 20000.0 * rounds);
}

TEST_CASE("embed: a later compile may declare a function again; calls use the new body") {
  dtensor::Session s;
  REQUIRE(s.compile("mesh m = [x = 2]\n"
                    "fn f(a: f32[N] @ m[x]) -> f32[N] @ m[x] { return a * 2.0 }\n"
                    "fn g(a: f32[N] @ m[x]) -> f32[N] @ m[x] { return f(a) + 1.0 }\n"));
  std::vector<float> a = {1, 2};
  CHECK(s.call("g", {dtensor::TensorView(a.data(), {2})})[0].str() == "[3, 5]");
  REQUIRE(s.compile("fn f(a: f32[N] @ m[x]) -> f32[N] @ m[x] { return a * 10.0 }\n"));
  CHECK(s.call("g", {dtensor::TensorView(a.data(), {2})})[0].str() == "[11, 21]");
  CHECK(s.call("f", {dtensor::TensorView(a.data(), {2})})[0].str() == "[10, 20]");
}

TEST_CASE("embed: a call whose instance fails leaves the session as it was") {
  // The failed instance stayed half-built in the program: every later
  // compile() then failed its verification with an internal error that was
  // no dtensor::Error (a host catching those aborted).
  dtensor::Session s;
  REQUIRE(s.compile("fn sl(a: f32[N]) -> f32[2] { return a[1:3] }\n"));
  float a[6] = {1, 2, 3, 4, 5, 6};
  CHECK_THROWS_AS(s.call("sl", {dtensor::TensorView(a, {2})}), dtensor::Error);
  CHECK(s.call("sl", {dtensor::TensorView(a, {6})})[0].str() == "[2, 3]");
  for (int i = 0; i < 3; ++i)
    CHECK(s.compile("let q" + std::to_string(i) + " : f32[2] = ones()\n"));
  CHECK_THROWS_AS(s.call("sl", {dtensor::TensorView(a, {2})}), dtensor::Error);
  CHECK(s.call("sl", {dtensor::TensorView(a, {5})})[0].str() == "[2, 3]");
  // A callee declared again with a signature its caller no longer meets:
  // the call fails, the session goes on.
  REQUIRE(s.compile("fn inner(a: f32[4]) -> f32[4] { return a * 2.0 }\n"
                    "fn outer(a: f32[4]) -> f32[4] { return inner(a) + 1.0 }\n"));
  CHECK(s.call("outer", {dtensor::TensorView(a, {4})})[0].str() == "[3, 5, 7, 9]");
  REQUIRE(s.compile("fn inner(a: f32[5]) -> f32[5] { return a }\n"));
  CHECK_THROWS_AS(s.call("outer", {dtensor::TensorView(a, {4})}), dtensor::Error);
  CHECK(s.compile("let z : f32[2] = ones()\n"));
  REQUIRE(s.compile("fn inner(a: f32[4]) -> f32[4] { return a * 3.0 }\n"));
  CHECK(s.call("outer", {dtensor::TensorView(a, {4})})[0].str() == "[4, 7, 10, 13]");
}

TEST_CASE("embed: a save through a symbolic link writes the file it points to") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dt-embed-link-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string real = (dir / "real.npy").string(), link = (dir / "link.npy").string();
  dtensor::Session s;
  REQUIRE(s.compile("mesh m = [x = 2]\nlet a : f32[4] @ m[x] = [1, 2, 3, 4]\nsave(\"" + real +
                    "\", a)\n"));
  fs::create_symlink("real.npy", link);
  REQUIRE(s.compile("let b : f32[4] @ m[x] = [5, 6, 7, 8]\nsave(\"" + link + "\", b)\n"));
  CHECK(fs::is_symlink(fs::symlink_status(link))); // the link stays a link
  REQUIRE(s.compile("let c : f32[4] @ m[_] = load(\"" + real + "\")\n"));
  CHECK(s.value("c").str() == "[5, 6, 7, 8]");
  for (auto &e : fs::directory_iterator(dir)) // no temporary file left behind
    CHECK(e.path().filename().string().find("dtensor-tmp") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("embed: Options for untrusted programs: file access off, limits") {
  dtensor::Options o;
  o.fileAccess = false;
  o.maxTensorElements = 1000;
  o.maxLoopTrips = 50;
  dtensor::Session s(o);
  CHECK_FALSE(s.compile("mesh m = [x = 2]\nlet w : f32[4] @ m[x] = ones()\n"
                        "save(\"/tmp/dt-embed-never.npy\", w)\n"));
  REQUIRE(!s.diagnostics().empty());
  CHECK(s.diagnostics()[0].kind == "FileAccessOff");
  CHECK_FALSE(s.compile("let big : f32[2000] = zeros()\n"));
  REQUIRE(s.compile("mesh m = [x = 2]\n"
                    "fn spin(a: f32[] @ m[]) -> f32[] @ m[] {\n"
                    "  var t = a\n  while t < 1000.0 { t = t + 1.0 }\n  return t\n}\n"));
  std::vector<float> z = {0.0f};
  CHECK_THROWS_AS(s.call("spin", {dtensor::TensorView(z.data(), {})}), dtensor::Error);
  std::vector<float> near = {990.0f};
  CHECK(s.call("spin", {dtensor::TensorView(near.data(), {})})[0].at(0) == 1000.0);
  dtensor::Options bad;
  bad.maxLoopTrips = -1;
  CHECK_THROWS_AS(dtensor::Session{bad}, dtensor::Error);
  // A stdlib folder that does not exist is refused, not silently replaced.
  dtensor::Options noStdlib;
  noStdlib.stdlibDir = "/nonexistent/dtensor/stdlib";
  CHECK_THROWS_WITH_AS(dtensor::Session{noStdlib}, doctest::Contains("is not a folder"),
                       dtensor::Error);
  // A kernel cache that is a file, or cannot be made, is refused too; a
  // missing folder is made.
  dtensor::Options fileCache;
  fileCache.kernelCache = "/proc/self/status";
  CHECK_THROWS_WITH_AS(dtensor::Session{fileCache}, doctest::Contains("is not a folder"),
                       dtensor::Error);
  dtensor::Options badCache;
  badCache.kernelCache = "/proc/dtensor-kernels";
  CHECK_THROWS_WITH_AS(dtensor::Session{badCache}, doctest::Contains("cannot be made"),
                       dtensor::Error);
  // A default Tensor holds no data, and so no elements.
  dtensor::Tensor none;
  CHECK(none.numel() == 0);
  CHECK(none.raw() == nullptr);
}

TEST_CASE("embed: two sessions on two threads, each running its own program") {
  std::atomic<int> bad{0};
  auto worker = [&](int id) {
    try {
      dtensor::Session s;
      std::string prog = id == 0 ? "mesh m = [x = 2]\n"
                                   "fn f(a: f32[N] @ m[x]) -> f32[N] @ m[x] { return a * 3.0 }\n"
                                 : "mesh q = [a = 2, b = 2]\n"
                                   "fn f(a: f32[N] @ q[(a, b)]) -> f32[] @ q[] {\n"
                                   "  return relayout(sum(a * a), q[])\n}\n";
      if (!s.compile(prog)) {
        ++bad;
        return;
      }
      for (int i = 0; i < 30; ++i) {
        std::vector<float> x(8, (float)i);
        auto r = s.call("f", {dtensor::TensorView(x.data(), {8})});
        double want = id == 0 ? 3.0 * i : 8.0 * i * i;
        if (r[0].at(0) != want)
          ++bad;
      }
    } catch (const std::exception &) {
      ++bad;
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  CHECK(bad == 0);
}

TEST_CASE("embed: Options::world is checked against the program's meshes, in calls too") {
  const char *src = "mesh m = [x = 2]\n"
                    "fn twice(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a * 2.0 }\n";
  std::vector<float> x = {1, 2, 3, 4};
  for (int world : {0, 2}) {
    dtensor::Options o;
    o.world = world;
    dtensor::Session s(o);
    REQUIRE(s.compile(src));
    CHECK(s.call("twice", {dtensor::TensorView(x.data(), {4})})[0].str() == "[2, 4, 6, 8]");
  }
  dtensor::Options o;
  o.world = 3;
  dtensor::Session s(o);
  std::string what;
  try {
    if (s.compile(src))
      s.call("twice", {dtensor::TensorView(x.data(), {4})});
  } catch (const dtensor::Error &e) {
    what = e.what();
  }
  CHECK(what.find("need 2 ranks") != std::string::npos);
}

TEST_CASE("embed: Options::kernelCache keeps compiled kernels for the next session") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dt-embed-kcache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const char *src = "mesh m = [x = 2]\n"
                    "fn f(a: f32[6] @ m[x]) -> f32[6] @ m[x] { return exp(a * 0.5) - a }\n";
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto once = [&] {
    dtensor::Options o;
    o.kernelCache = dir.string();
    dtensor::Session s(o);
    REQUIRE(s.compile(src));
    return s.call("f", {dtensor::TensorView(x.data(), {6})})[0].str();
  };
  std::string first = once();
  std::vector<std::pair<std::string, fs::file_time_type>> entries;
  for (auto &e : fs::directory_iterator(dir))
    entries.push_back({e.path().string(), fs::last_write_time(e.path())});
  CHECK(!entries.empty());
  CHECK(once() == first);
  // The second session loaded every kernel: nothing new was written.
  std::vector<std::pair<std::string, fs::file_time_type>> after;
  for (auto &e : fs::directory_iterator(dir))
    after.push_back({e.path().string(), fs::last_write_time(e.path())});
  std::sort(entries.begin(), entries.end());
  std::sort(after.begin(), after.end());
  CHECK(after == entries);
  fs::remove_all(dir);
}
