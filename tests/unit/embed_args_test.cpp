// Unit tests of the embedding API's arguments and results at their edges:
// a result that is an argument (or a view of one) owns its data after the
// call; struct values passed by name; views whose shape is negative or
// overflows; Options::deterministic in calls; the source size limit for
// text compiled from memory; Options refused by name.
#include "dtensor/dtensor.hpp"

#include <doctest/doctest.h>

#include <climits>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

dtensor::Error::Kind kindOf(const std::function<void()> &f, std::string *what = nullptr) {
  try {
    f();
  } catch (const dtensor::Error &e) {
    if (what)
      *what = e.what();
    return e.kind;
  }
  return dtensor::Error::Kind::Internal; // not thrown
}

} // namespace

TEST_CASE("embed: a result that is an argument owns its data after the call") {
  dtensor::Session s;
  REQUIRE(s.compile("fn id(a: f32[N]) -> f32[N] { return a }\n"
                    "fn flat(a: i64[2, 3]) -> i64[6] { return reshape(a, [6]) }\n"
                    "fn pair(a: f32[N]) -> (f32[N], f32[N]) { return a, a }\n",
                    "alias.dt"));
  std::vector<float> x = {1, 2, 3, 4};
  auto r = s.call("id", {dtensor::TensorView(x.data(), {4})});
  CHECK(r[0].raw() != (const void *)x.data());
  std::vector<int64_t> g = {1, 2, 3, 4, 5, 6};
  auto f = s.call("flat", {dtensor::TensorView(g.data(), {2, 3})});
  auto p = s.call("pair", {dtensor::TensorView(x.data(), {4})});
  // The host reuses (here: overwrites) its buffers; the results keep the
  // values the call returned.
  x.assign(4, -7.f);
  g.assign(6, 0);
  CHECK(r[0].str() == "[1, 2, 3, 4]");
  CHECK(f[0].str() == "[1, 2, 3, 4, 5, 6]");
  CHECK(p[0].str() == "[1, 2, 3, 4]");
  CHECK(p[1].str() == "[1, 2, 3, 4]");
}

TEST_CASE("embed: struct values are passed to calls by name; value() names their fields") {
  dtensor::Session s;
  REQUIRE(s.compile("mesh m = [x = 2]\n"
                    "struct Inner { b: f32[2] @ m[_] }\n"
                    "struct P { w: f32[4] @ m[x], inner: Inner }\n"
                    "let pv = P(w=[1, 2, 3, 4], inner=Inner(b=[10, 20]))\n"
                    "fn total(p: P, k: f32[] @ m[]) -> f32[] @ m[] {\n"
                    "  return relayout(sum(p.w), m[]) * k + relayout(sum(p.inner.b), m[])\n"
                    "}\n"
                    "fn scaled(p: P) -> P { return P(w=p.w * 2.0, inner=p.inner) }\n",
                    "structs.dt"));
  float k = 3;
  auto t = s.call("total", {"pv", dtensor::TensorView(&k, {})});
  REQUIRE(t.size() == 1);
  CHECK(t[0].str() == "60");
  // A struct result comes back as its leaves, in field order.
  auto q = s.call("scaled", {"pv"});
  REQUIRE(q.size() == 2);
  CHECK(q[0].str() == "[2, 4, 6, 8]");
  CHECK(q[1].str() == "[10, 20]");
  CHECK(s.value("pv.w").str() == "[1, 2, 3, 4]");
  CHECK(s.value("pv.inner.b").str() == "[10, 20]");
  std::string what;
  CHECK(kindOf([&] { s.value("pv"); }, &what) == dtensor::Error::Kind::Usage);
  CHECK(what.find("`pv` is a value of struct `P`") != std::string::npos);
  CHECK(what.find("`pv.w`, `pv.inner.b`") != std::string::npos);
  CHECK(kindOf([&] { s.blocks("pv"); }) == dtensor::Error::Kind::Usage);
  // A tensor where the struct goes is a type error of the call.
  std::vector<float> w = {1, 2, 3, 4};
  CHECK(kindOf([&] { s.call("scaled", {dtensor::TensorView(w.data(), {4})}); }) ==
        dtensor::Error::Kind::Compile);
  // A struct where a tensor goes, likewise.
  CHECK(kindOf([&] { s.call("total", {"pv", "pv"}); }) == dtensor::Error::Kind::Compile);
}

TEST_CASE("embed: a view's shape that is negative or overflows is refused by name") {
  dtensor::Session s;
  REQUIRE(s.compile("fn h(a: f32[N, M]) -> f32[N, M] { return a + 1.0 }\n", "shape.dt"));
  std::vector<float> x(16, 1.f);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{INT64_MAX, 2},
                                     {3037000500LL, 3037000500LL},
                                     {int64_t(1) << 62, 4},
                                     {-1, 4},
                                     {4, -4}}) {
    dtensor::TensorView v(x.data(), shape);
    CHECK(v.numel() == -1);
    std::string what;
    CHECK(kindOf([&] { s.call("h", {v}); }, &what) == dtensor::Error::Kind::Usage);
    CHECK(what.find("the view's shape [") != std::string::npos);
  }
  // A null pointer with elements, and an empty view without data (fine).
  std::string what;
  CHECK(kindOf(
            [&] {
              s.call("h", {dtensor::TensorView(dtensor::DType::F32, {2, 2}, nullptr)});
            },
            &what) == dtensor::Error::Kind::Usage);
  CHECK(what.find("without data") != std::string::npos);
  auto r = s.call("h", {dtensor::TensorView(dtensor::DType::F32, {0, 3}, nullptr)});
  CHECK(r[0].numel() == 0);
}

TEST_CASE("embed: Options::deterministic holds for calls: the same bits on any mesh") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  const int N = 8, K = 700, M = 4;
  std::vector<float> a(N * K), b(K * M);
  for (auto &v : a)
    v = nd(rng) * 100;
  for (auto &v : b)
    v = nd(rng);
  std::vector<std::vector<float>> got;
  for (const char *mesh : {"[x = 1]", "[x = 2]", "[x = 3]"}) {
    dtensor::Options o;
    o.deterministic = true;
    dtensor::Session s(o);
    REQUIRE(s.compile(std::string("mesh m = ") + mesh +
                          "\nfn mm(a: f32[N, K] @ m[_, x], b: f32[K, M] @ m[x, _]) -> "
                          "f32[N, M] @ m[_, _] { return relayout(a @ b, m[_, _]) }\n",
                      "det.dt"));
    auto r = s.call("mm",
                    {dtensor::TensorView(a.data(), {N, K}), dtensor::TensorView(b.data(), {K, M})});
    got.emplace_back(r[0].data<float>(), r[0].data<float>() + N * M);
  }
  CHECK(got[0] == got[1]);
  CHECK(got[0] == got[2]);
}

TEST_CASE("embed: compile() of text over the source size limit is refused as a file is") {
  dtensor::Session s;
  std::string big = "let a = 1\n#" + std::string((size_t(16) << 20) + 16, 'x') + "\n";
  CHECK_FALSE(s.compile(big, "big.dt"));
  REQUIRE(!s.diagnostics().empty());
  CHECK(s.diagnostics()[0].message.find("larger than the limit of 16777216 bytes") !=
        std::string::npos);
  CHECK_FALSE(s.hasValue("a"));
  CHECK(s.compile("let a : f32[] = 1\n", "small.dt"));
}

TEST_CASE("embed: Options with a negative world or an unknown backend are refused by name") {
  std::string what;
  dtensor::Options o;
  o.world = -1;
  CHECK(kindOf([&] { dtensor::Session s(o); }, &what) == dtensor::Error::Kind::Usage);
  CHECK(what.find("Options::world is -1") != std::string::npos);
  o.world = 0;
  o.backend = "gpu";
  CHECK(kindOf([&] { dtensor::Session s(o); }, &what) == dtensor::Error::Kind::Usage);
  CHECK(what.find("Options::backend is `gpu`; use one of cpu") != std::string::npos);
  o.backend = "null";
  CHECK(kindOf([&] { dtensor::Session s(o); }) == dtensor::Error::Kind::Internal); // no throw
}

TEST_CASE("embed: a Tensor without data and an element out of range are refused, not read") {
  dtensor::Tensor none;
  CHECK(kindOf([&] { none.at(0); }) == dtensor::Error::Kind::Usage);
  CHECK(none.str() == "(no data: a default-constructed Tensor)");
  dtensor::Session s;
  CHECK(kindOf([&] { s.blocks(none); }) == dtensor::Error::Kind::Usage);
  REQUIRE(s.compile("let w : f32[4] = [1, 2, 3, 4]\n"));
  dtensor::Tensor w = s.value("w");
  CHECK(w.at(3) == 4);
  std::string what;
  CHECK(kindOf([&] { w.at(4); }, &what) == dtensor::Error::Kind::Usage);
  CHECK(what == "element 4 is out of range for a tensor of 4 elements");
  CHECK(kindOf([&] { w.at(-1); }) == dtensor::Error::Kind::Usage);
}

TEST_CASE("embed: an error carries the diagnostics of its own call, never an earlier one's") {
  dtensor::Session s;
  REQUIRE(s.compile("struct P { a: f32[2] }\nlet p = P(a=[1.0, 2.0])\n"
                    "fn f(x: f32[2]) -> f32[2] { return x }\n"));
  try {
    s.call("nosuch", {});
    FAIL("no error");
  } catch (const dtensor::Error &e) {
    CHECK(!e.diagnostics.empty()); // `unknown function`: this call's
  }
  try {
    s.value("w");
    FAIL("no error");
  } catch (const dtensor::Error &e) {
    CHECK(e.kind == dtensor::Error::Kind::Usage);
    CHECK(e.diagnostics.empty()); // not the earlier call's `unknown function`
  }
  CHECK(s.hasValue("p")); // a struct value: call() takes it by name
  CHECK(!s.hasValue("q"));
}

TEST_CASE("embed: an argument that names no value (an empty name) is refused as such") {
  dtensor::Session s;
  REQUIRE(s.compile("fn f(x: f32[2]) -> f32[2] { return x }\n"));
  std::string what;
  CHECK(kindOf([&] { s.call("f", {dtensor::Session::Arg(std::string())}); }, &what) ==
        dtensor::Error::Kind::Usage);
  CHECK(what == "argument 1 of `f` names no value (an empty name)");
}
