// Unit tests for ir/Printer and ir/IRParser: the text form of every op, the
// byte-identical round trip print(parse(print(m))) == print(m), line:col
// parse errors, and parser robustness on random bytes, truncations and
// mutations (never a crash; whatever parses also round-trips).
#include "ir/IRParser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir_test_util.h"

#include <doctest/doctest.h>

#include <random>

using namespace dt;
using namespace dt::test;

namespace {

constexpr int kNumOps = 0
#define OP(Enum, name, nopnds, nres, cls) +1
#include "ir/Ops.def"
    ;

/// A module that uses every op of Ops.def at least once (grad included), with
/// names, locations, host and distributed types, a for loop and calls.
Module everyOpModule() {
  Module mod;
  auto m = makeMesh("m", {{"x", 2}, {"y", 2}});
  auto q = std::make_shared<Mesh>(*makeMesh("q", {{"dp", 2}}));
  q->devices = {5, 3};
  mod.meshes = {m, q};
  TensorType f23 = ty(DType::F32, {2, 3}), f32s = ty(DType::F32, {});
  TensorType sh = ty(DType::F32, {4, 3}, m, {Placement::shard(0), Placement::replicate()});

  Function &helper = mod.functions.emplace_back();
  helper.name = "helper";
  {
    FnBuilder b(helper);
    int a = b.param(sh, "a");
    b.ret({b.emit(Op::Exp, {a}, sh, {}, "b")});
  }
  Function &loss = mod.functions.emplace_back();
  loss.name = "loss";
  {
    FnBuilder b(loss);
    int w = b.param(f23, "w");
    b.ret({b.emit(Op::ReduceSum, {w}, f32s, ints({0, 1}))});
  }

  Function &f = mod.functions.emplace_back();
  f.name = "main";
  f.loc = {0, 1, 1, 0};
  FnBuilder b(f);
  int c = b.emit(Op::Const, {}, f23, floats({1, 2, 3, 4, 5, 6.5}), "c");
  f.body.insts.back().loc = {0, 3, 9, 14};
  int splat = b.emit(Op::Const, {}, f23, floats({0.1}));
  int fl = b.emit(Op::Fill, {}, sh, floats({-2.5e-30}));
  int rnd = b.emit(Op::Random, {}, f23, strAttr("normal", {7}), "r w");
  int io = b.emit(Op::Iota, {}, ty(DType::I64, {2, 3}), ints({1}));
  int bo = b.emit(Op::Lt, {c, rnd}, ty(DType::Bool, {2, 3}));
  for (int i = 0; i < kNumOps; ++i) {
    Op op = (Op)i;
    OpClass cls = opInfo(op).cls;
    if (op == Op::Not || op == Op::And || op == Op::Or)
      continue;
    if (cls == OpClass::Elementwise1 && op != Op::Cast)
      b.emit(op, {c}, f23);
    if (cls == OpClass::Elementwise2) {
      bool cmp = op >= Op::Eq && op <= Op::Ge;
      b.emit(op, {c, splat}, cmp ? ty(DType::Bool, {2, 3}) : f23);
    }
  }
  b.emit(Op::Not, {bo}, ty(DType::Bool, {2, 3}));
  b.emit(Op::And, {bo, bo}, ty(DType::Bool, {2, 3}));
  b.emit(Op::Or, {bo, bo}, ty(DType::Bool, {2, 3}));
  b.emit(Op::Cast, {io}, f23);
  b.emit(Op::Select, {bo, c, splat}, f23);
  b.emit(Op::ReduceSum, {c}, ty(DType::F32, {2}), ints({1}));
  b.emit(Op::ReduceMax, {c}, ty(DType::F32, {3}), ints({0}));
  b.emit(Op::ReduceMin, {c}, f32s, ints({0, 1}));
  int t = b.emit(Op::Transpose, {c}, ty(DType::F32, {3, 2}), ints({1, 0}));
  b.emit(Op::MatMul, {c, t}, ty(DType::F32, {2, 2}));
  b.emit(Op::Einsum, {c, t}, ty(DType::F32, {2, 2}), strAttr("ik,kj->ij"));
  b.emit(Op::Reshape, {c}, ty(DType::F32, {6}));
  b.emit(Op::Broadcast, {c}, ty(DType::F32, {4, 2, 3}));
  int ids = b.emit(Op::Const, {}, ty(DType::I32, {2}), ints({1, 0}));
  int sel = b.emit(Op::IndexSelect, {c, ids}, f23, ints({0}));
  b.emit(Op::IndexAdd, {c, ids, sel}, f23, ints({0}));
  int rl = b.emit(Op::Relayout, {fl}, ty(DType::F32, {4, 3}, m));
  int d = b.emit(Op::Distribute, {c}, ty(DType::F32, {2, 3}, q, {Placement::shard(1)}));
  b.emit(Op::ToHost, {d}, f23);
  b.emit(Op::Call, {fl}, sh, strAttr("helper"));
  // The collectives of SPMD IR, each one step of a placement change on axis x.
  Placement R = Placement::replicate(), P = Placement::partial();
  int ag = b.emit(Op::AllGather, {fl}, ty(DType::F32, {4, 3}, m, {R, R}), ints({0}));
  b.emit(Op::LocalSlice, {ag}, ty(DType::F32, {4, 3}, m, {Placement::shard(1), R}), ints({0}));
  b.emit(Op::AllToAll, {fl}, ty(DType::F32, {4, 3}, m, {Placement::shard(1), R}), ints({0}));
  int lp = b.emit(Op::LocalPartial, {ag}, ty(DType::F32, {4, 3}, m, {P, R}), ints({0}));
  b.emit(Op::AllReduce, {lp}, ty(DType::F32, {4, 3}, m, {R, R}), ints({0}));
  b.emit(Op::ReduceScatter, {lp}, sh, ints({0}));
  b.emit(Op::CheckFactor, {c}, f23, strAttr("finite"));
  (void)rl;
  Attrs ga = strAttr("loss", {0});
  ga.flag = true;
  Inst &g = f.body.insts.emplace_back();
  g.op = Op::Grad;
  g.operands = {c};
  g.attrs = ga;
  g.results = {f.newValue(f32s), f.newValue(f23, "dw")};

  // for 0 to 3 step 1 iter(c) { ^(i, w): w2 = add w, w; yield w2 }
  Inst loop;
  loop.op = Op::For;
  loop.attrs = ints({0, 3, 1});
  loop.attrs.str = "T"; // an extra attribute prints in the generic dict
  loop.operands = {c};
  loop.loc = {2, 7, 3, 0};
  Block &body = loop.regions.emplace_back();
  body.args = {f.newValue(ty(DType::I64, {}), "i"), f.newValue(f23, "w")};
  b.blocks.push_back(&body);
  int w2 = b.emit(Op::Add, {body.args[1], body.args[1]}, f23);
  b.emit(Op::Yield, {w2}, nullptr);
  b.blocks.pop_back();
  loop.results = {f.newValue(f23, "acc")};
  int acc = loop.results[0];
  f.body.insts.push_back(std::move(loop));
  // if %cond { yield acc } { yield acc2 }; while %cond iter(acc) { yield %cond, w }
  int iv0 = b.emit(Op::Fill, {}, ty(DType::I64, {}), ints({3}));
  int cond = b.emit(Op::Lt, {iv0, iv0}, ty(DType::Bool, {}));
  Inst br;
  br.op = Op::If;
  br.operands = {cond};
  for (int k = 0; k < 2; ++k) {
    Block &r = br.regions.emplace_back();
    b.blocks.push_back(&r);
    int v = k ? acc : b.emit(Op::Add, {acc, acc}, f23);
    b.emit(Op::Yield, {v}, nullptr);
    b.blocks.pop_back();
  }
  br.results = {f.newValue(f23, "picked")};
  int picked = br.results[0];
  f.body.insts.push_back(std::move(br));
  Inst wl;
  wl.op = Op::While;
  wl.operands = {cond, picked};
  Block &wb = wl.regions.emplace_back();
  wb.args = {f.newValue(f23, "v")};
  b.blocks.push_back(&wb);
  b.emit(Op::Yield, {cond, wb.args[0]}, nullptr);
  b.blocks.pop_back();
  wl.results = {f.newValue(f23, "looped")};
  acc = wl.results[0];
  f.body.insts.push_back(std::move(wl));
  b.emit(Op::Random, {iv0}, f23, strAttr("uniform"));
  int lf = b.emit(Op::LoadFile, {}, f23, strAttr("/tmp/m.safetensors\nlayers.0.w"));
  b.emit(Op::SaveFile, {lf, acc}, nullptr, strAttr("/tmp/o.safetensors\na\nb"));
  b.emit(Op::Print, {acc}, nullptr, strAttr("acc \"quoted\"\n"));
  b.emit(Op::Time, {}, ty(DType::F64, {}), {});
  int lc = b.emit(Op::LoadCheckpoint, {}, f23, strAttr("/tmp/ckpt\nw"));
  b.emit(Op::SaveCheckpoint, {lc, acc}, nullptr, strAttr("/tmp/ckpt2\na\nb"));
  Attrs line = strAttr("stepacc", {-1, 4, 0, 3});
  line.flag = true; // print("step", acc): a line of items
  b.emit(Op::Print, {acc}, nullptr, line);
  // Last, so that the value numbers the canonical-line test reads stay put.
  Attrs sg = ints({0}); // rows [1, 3) of dim 0, sharded on x: replicated
  sg.floats = {1};
  b.emit(Op::SliceGather, {fl},
         ty(DType::F32, {2, 3}, m, {Placement::replicate(), Placement::replicate()}), sg);
  Attrs rev = ints({1});
  rev.flag = true; // suffix sums
  b.emit(Op::Cumsum, {lc}, f23, rev);
  b.ret({});
  return mod;
}

void checkRoundTrip(const Module &m, const PrintOptions &opts = {}) {
  std::string once = printModule(m, opts);
  Module back = parseOrFail(once);
  std::string twice = printModule(back, opts);
  CHECK(once == twice);
}

} // namespace

TEST_CASE("ir print: every op prints and round-trips byte for byte") {
  Module m = everyOpModule();
  CHECK(verifyModuleText(m, {false}) == "");
  checkRoundTrip(m);
  PrintOptions locs;
  locs.locs = true;
  checkRoundTrip(m, locs);
  PrintOptions anon;
  anon.names = false;
  checkRoundTrip(m, anon);
  std::string text = printModule(m);
  for (int i = 0; i < kNumOps; ++i) {
    INFO("op ", opName((Op)i));
    CHECK(text.find(std::string(" ") + opName((Op)i) + " ") != std::string::npos);
  }
  // The parsed module is structurally the same, locations included.
  Module back = parseOrFail(printModule(m, locs));
  const Function &f = *back.find("main");
  CHECK(f.body.insts[0].loc.line == 3);
  CHECK(f.body.insts[0].loc.endCol == 14);
  CHECK(f.loc.line == 1);
  CHECK(verifyModuleText(back, {false}) == "");
}

TEST_CASE("ir print: canonical lines") {
  Module m = everyOpModule();
  std::string text = printModule(m);
  INFO(text);
  CHECK(text.rfind("mesh m = [x = 2, y = 2]\nmesh q = [dp = 2] devices [5, 3]\n\n", 0) == 0);
  CHECK(text.find("func @helper(%0:a: f32[4, 3] @ m{x: shard(0), y: replicate}) -> (f32[4, 3] @ "
                  "m{x: shard(0), y: replicate}) {\n") != std::string::npos);
  CHECK(text.find("  %0:c = const [[1, 2, 3], [4, 5, 6.5]] : f32[2, 3]\n") != std::string::npos);
  CHECK(text.find("  %1 = const 0.1 : f32[2, 3]\n") != std::string::npos);
  CHECK(text.find(" = fill -2.5e-30 : f32[4, 3] @ m{x: shard(0), y: replicate}\n") !=
        std::string::npos);
  CHECK(text.find("  %3:\"r w\" = random normal 7 : f32[2, 3]\n") != std::string::npos);
  CHECK(text.find(" = iota %") == std::string::npos);
  CHECK(text.find(" = iota dim 1 : i64[2, 3]\n") != std::string::npos);
  CHECK(text.find(" = reduce_sum %0 dims [1] : f32[2]\n") != std::string::npos);
  CHECK(text.find(" = einsum \"ik,kj->ij\" %0, %") != std::string::npos);
  CHECK(text.find(" = transpose %0 perm [1, 0] : f32[3, 2]\n") != std::string::npos);
  CHECK(text.find(" = call @helper(%") != std::string::npos);
  CHECK(text.find(" = all_gather %2 axes [0] : f32[4, 3] @ m{x: replicate, y: replicate}\n") !=
        std::string::npos);
  CHECK(text.find(":dw = grad @loss(%0) wrt [0] value_and_grad : f32[], f32[2, 3]\n") !=
        std::string::npos);
  CHECK(text.find(" = for 0 to 3 step 1 iter(%0) attrs{str \"T\"} {\n    ^(%") !=
        std::string::npos);
  CHECK(text.find(":i: i64[], %") != std::string::npos);
  CHECK(text.find("  } : f32[2, 3]\n") != std::string::npos);
  CHECK(text.find("  print %") != std::string::npos);
  CHECK(text.find(" \"acc \\\"quoted\\\"\\n\"\n") != std::string::npos);
  CHECK(text.find("  print %73 \"stepacc\" attrs{ints [-1, 4, 0, 3], flag}\n  %78 = slice_gather "
                  "%2 axes [0] "
                  "from 1 : f32[2, 3] @ m{x: replicate, y: replicate}\n  %79 = cumsum %77 dim 1 "
                  "reverse : f32[2, 3]\n  return\n}\n") != std::string::npos);
  CHECK(text.find(":picked = if %69 {\n") != std::string::npos);
  CHECK(text.find(":looped = while %69, %71 {\n    ^(%72:v: f32[2, 3]):\n    yield %69, %72\n") !=
        std::string::npos);
  CHECK(text.find(" = random uniform %68 : f32[2, 3]\n") != std::string::npos);
}

TEST_CASE("ir print: text in, same text out") {
  std::string text = R"(mesh m = [x = 3, y = 2]
mesh g = [t = 2]

func @f(%0:tokens: f32[T, H] @ g{t: shard(0)}, %1: f32[H, H] @ g{t: replicate}) -> (f32[T, H] @ g{t: shard(0)}) {
  %2 = matmul %0, %1 : f32[T, H] @ g{t: shard(0)}
  return %2
}

func @main() {
  %0:a = const [[1, 2, 3], [4, 5, 6]] : f32[2, 3] @ m{x: shard(1), y: replicate}
  %1:b = const [[6, 5], [4, 3], [2, 1]] : f32[3, 2] @ m{x: shard(0), y: replicate}
  %2:c = matmul %0, %1 : f32[2, 2] @ m{x: partial(sum), y: replicate}
  %3:d = relayout %2 : f32[2, 2] @ m{x: replicate, y: replicate}
  %12:p.attn.wq = relayout %2 : f32[2, 2] @ m{x: replicate, y: replicate}
  %4, %5 = for -1 to 9 step 2 iter(%3, %3) {
    ^(%6:i: i64[], %7: f32[2, 2] @ m{x: replicate, y: replicate}, %8: f32[2, 2] @ m{x: replicate, y: replicate}):
    %9 = add %7, %8 : f32[2, 2] @ m{x: replicate, y: replicate}
    yield %9, %8
  } : f32[2, 2] @ m{x: replicate, y: replicate}, f32[2, 2] @ m{x: replicate, y: replicate}
  %10 = const [nan, inf, -inf, -0] : f64[4]
  %11 = const [] : f32[0]
  print %3 "d"
  return
}
)";
  Module m = parseOrFail(text);
  CHECK(printModule(m) == text);
  PrintOptions locs;
  locs.locs = true;
  CHECK(printModule(m, locs) == text); // no locations were given
  // Comments and free whitespace are accepted.
  Module c = parseOrFail("# a comment\nmesh   m=[x=2]   // another\nfunc @main(){return}");
  CHECK(printModule(c) == "mesh m = [x = 2]\n\nfunc @main() {\n  return\n}\n");
}

TEST_CASE("ir print: bf16 and f16 types and constants round-trip") {
  std::string text = R"(mesh m = [x = 2]

func @main() {
  %0:a = const [1.00390625, nan, -inf, -0, 65520] : bf16[5] @ m{x: shard(0)}
  %1 = cast %0 : f16[5] @ m{x: shard(0)}
  %2 = fill 0.1 : f16[5] @ m{x: shard(0)}
  %3 = mul %1, %2 : f16[5] @ m{x: shard(0)}
  %4 = cast %3 : bf16[5] @ m{x: shard(0)}
  print %4 "b"
  return
}
)";
  Module m = parseOrFail(text);
  CHECK(printModule(m) == text);
}

TEST_CASE("ir parse: errors name line and column") {
  auto error = [](const std::string &text) {
    Module m;
    std::string err;
    CHECK_FALSE(parseIR(text, m, err));
    return err;
  };
  CHECK(error("func @main() {\n  %0 = frobnicate : f32[]\n}") == "2:8: unknown op `frobnicate`");
  CHECK(error("func @main() {\n  %0 = fill 1 : f32[2] @ m{x: replicate}\n}") ==
        "2:26: unknown mesh `m`");
  CHECK(error("mesh m = [x = 2]\nfunc @main() {\n  %0 = fill 1 : f32[2] @ m{y: replicate}\n}") ==
        "3:28: mesh `m` has no axis `y`");
  CHECK(error("func @main() {\n  %0 = neg %4 : f32[]\n  return\n}") ==
        "2:12: use of undefined value %4");
  CHECK(error("func @main() {\n  %0 = fill 1 : f32[]\n  %0 = fill 2 : f32[]\n}") ==
        "3:3: value %0 is defined twice");
  CHECK(error("func @main() {\n  %0 = fill 1 : q32[]\n}") == "2:17: unknown element type `q32`");
  CHECK(error("func @main() {\n  %0 = fill 1 : f32[\n") ==
        "3:1: expected an integer at end of input");
  CHECK(error("func @main() {\n  return\n") == "3:1: missing `}`");
  CHECK(error("mesh m = [x = 0]") == "1:16: mesh axis `x` must have a positive size");
  CHECK(error("mesh m = [x = 2] devices [0]") ==
        "1:29: mesh `m` has 2 devices in its shape but 1 device ids");
  CHECK(error("func @main() {\n  %0 = const [1, 2e] : f32[2]\n}") == "2:18: malformed number `2e`");
  CHECK(error("func @main() {\n  %99999999 = fill 1 : f32[]\n}") ==
        "2:3: value id %99999999 is too large");
  CHECK(error("garbage") == "1:1: expected `mesh` or `func`, got `garbage`");
}

TEST_CASE("ir parse: never crashes on garbage, truncations or mutations") {
  std::string good = printModule(everyOpModule(), PrintOptions{true, true});
  std::mt19937 rng(1234);
  int parsed = 0;
  auto tryParse = [&](const std::string &text) {
    Module m;
    std::string err;
    if (!parseIR(text, m, err)) {
      CHECK(err.find(':') != std::string::npos);
      return;
    }
    ++parsed;
    // Whatever parses prints in a form that parses to the same text again.
    std::string once = printModule(m, PrintOptions{true, true});
    Module again;
    REQUIRE(parseIR(once, again, err));
    CHECK(printModule(again, PrintOptions{true, true}) == once);
  };
  for (size_t n = 0; n <= good.size(); n += 7)
    tryParse(good.substr(0, n));
  const std::string alphabet = "%@:=,()[]{}^\"\\-0123456789 \nabcdefxyz_.#/";
  for (int it = 0; it < 3000; ++it) {
    std::string s = good;
    int edits = 1 + (int)(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % s.size();
      char c = (rng() % 4 == 0) ? (char)(rng() % 256) : alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
      case 0:
        s[pos] = c;
        break;
      case 1:
        s.insert(s.begin() + (long)pos, c);
        break;
      default:
        s.erase(pos, 1 + rng() % 5);
        break;
      }
    }
    tryParse(s);
  }
  for (int it = 0; it < 2000; ++it) {
    std::string s;
    size_t len = rng() % 120;
    for (size_t i = 0; i < len; ++i)
      s += (rng() % 3 == 0) ? (char)(rng() % 256) : alphabet[rng() % alphabet.size()];
    tryParse(s);
  }
  std::string deep = "func @main() {\n  %0 = const " + std::string(100000, '[');
  tryParse(deep);
  MESSAGE("mutants that still parsed: ", parsed);
}
