// Unit tests of runtime/Session and the pipeline's contract: statements
// compiled and run a chunk at a time with values kept between runs (the
// REPL), nothing re-run, a chunk with errors leaving the program unchanged,
// the user's global module never rewritten by lowering, and two Sessions
// compiling and running different programs on two threads at once.
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "runtime/Session.h"
#include "runtime/Verify.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <thread>

using namespace dt;

namespace {

/// Compiles `text` as the next chunk of `s` and runs it; returns what it printed.
std::string chunk(Session &s, const std::string &text) {
  std::ostringstream out, log;
  bool ok = s.compile("chunk.dt", text);
  INFO(s.diags().renderAll());
  REQUIRE(ok);
  REQUIRE(s.run(out, log));
  return out.str();
}

SessionOptions withRef(bool reference) {
  SessionOptions o;
  o.reference = reference;
  return o;
}

} // namespace

TEST_CASE("session: chunks run once each and keep `let`/`var` values (distributed and reference)") {
  for (bool reference : {false, true}) {
    CAPTURE(reference);
    Session s(withRef(reference));
    CHECK(chunk(s, "mesh m = [x = 2, y = 2]\n"
                   "let a1 : f32[4, 4] @ m[x, y] = ones()\n"
                   "let a = a1 * 3.0\n"
                   "print(relayout(sum(a), m[]))\n") == "48\n");
    // Only the new statement runs: the first chunk's print is not repeated.
    CHECK(chunk(s, "print(relayout(sum(a + 1.0), m[]))\n") == "64\n");
    // A value made in an earlier chunk keeps its placement (shard on x, y).
    CHECK(chunk(s, "var w : f32[4] @ m[x] = zeros()\n"
                   "w = w + 2.0\n") == "");
    CHECK(chunk(s, "w = w * 5.0\nprint(w)\n") == "[10, 10, 10, 10]\n");
    CHECK(chunk(s, "print(w + relayout(sum(a), m[]))\n") == "[58, 58, 58, 58]\n");
    // A partial value crosses chunks as its (reduced) global value.
    CHECK(chunk(s, "let p = sum(a, dim=0)\n") == "");
    CHECK(chunk(s, "print(relayout(p, m[y]))\n") == "[12, 12, 12, 12]\n");
    // A function declared in one chunk is called in a later one.
    CHECK(chunk(s, "fn twice(v: f32[4] @ m[x]) -> f32[4] @ m[x] {\n  return v + v\n}\n") == "");
    CHECK(chunk(s, "print(twice(w))\n") == "[20, 20, 20, 20]\n");
    // Running with nothing new compiled runs nothing.
    std::ostringstream out, log;
    CHECK(s.run(out, log));
    CHECK(out.str() == "");
  }
}

TEST_CASE("session: a chunk with errors leaves the program and its names as they were") {
  Session s;
  CHECK(chunk(s, "mesh m = [x = 2]\nlet a : f32[4] @ m[x] = ones()\n") == "");
  // `b` is bound before the error: it must not survive the failed chunk.
  CHECK_FALSE(s.compile("bad.dt", "let b = a * 2.0\nlet c = a @ nothing\n"));
  CHECK(s.diags().errorCount() > 0);
  CHECK_FALSE(s.compile("bad2.dt", "print(b)\n")); // `b` is unknown
  CHECK(chunk(s, "print(a * 3.0)\n") == "[3, 3, 3, 3]\n");
}

TEST_CASE("session: gradients are expanded by the autodiff step, across chunks") {
  Session s;
  CHECK(chunk(s, "mesh m = [x = 2]\n"
                 "fn loss(w: f32[4] @ m[_], x: f32[6, 4] @ m[x, _]) -> f32[] @ m[] {\n"
                 "  return relayout(sum(w * x), m[])\n"
                 "}\n"
                 "let w : f32[4] @ m[_] = ones()\n"
                 "let x1 : f32[6, 4] @ m[x, _] = ones()\n"
                 "let x = x1 * 2.0\n") == "");
  CHECK(chunk(s, "let g = grad(loss, wrt=[0])(w, x)\nprint(relayout(g, m[_]))\n") ==
        "[12, 12, 12, 12]\n");
  // The user's module keeps the unexpanded `grad`; no generated function is in it.
  const Module &global = s.compilation().module;
  CHECK(global.find("loss.grad.0") == nullptr);
  CHECK(printModule(global).find(" = grad @loss") != std::string::npos);
}

TEST_CASE("pipeline: lowering works on a copy; the user's global module is never rewritten") {
  Compilation c(pipelineCompileOptions());
  REQUIRE(c.compile("t.dt", "mesh m = [x = 2]\n"
                            "fn f(w: f32[4] @ m[_], x: f32[6, 4] @ m[x, _]) -> f32[] @ m[] {\n"
                            "  return relayout(sum(exp(w * x) + x), m[])\n"
                            "}\n"
                            "let w : f32[4] @ m[_] = ones()\n"
                            "let x : f32[6, 4] @ m[x, _] = ones()\n"
                            "let g = grad(f, wrt=[0])(w, x)\n"
                            "print(relayout(g, m[_]) + w)\n"));
  std::string before = printModule(c.module);
  PipelineOptions po;
  po.spmd = true;
  std::ostringstream log;
  auto p = compileProgram(c, po, log);
  REQUIRE(p);
  CHECK(printModule(c.module) == before);
  CHECK(p->spmd());
  CHECK(p->last() == Step::MemPlan);
  CHECK(p->module().find("f.grad.0") != nullptr);
  CHECK(!p->kernels().empty());
  REQUIRE(p->memoryPlan() != nullptr);
  CHECK(p->code().empty()); // codegen did not run (last = memplan)
  // A second program from the same module is the same program.
  auto q = compileProgram(c, po, log);
  CHECK(printModule(q->module()) == printModule(p->module()));
  // codegen: one piece of code per kernel.
  po.last = Step::Codegen;
  po.target = CodeTarget::Cuda;
  auto r = compileProgram(c, po, log);
  CHECK(r->code().size() == r->kernels().size());
  CHECK(r->code()[0].find("__global__") != std::string::npos);
}

TEST_CASE("pipeline: step names, --print-after and --time-passes cover every step") {
  CHECK(stepNameList() ==
        "parse, build, flatten, autodiff, spmd, fusion, kernels, memplan, codegen");
  for (int i = 0; i < kNumSteps; ++i)
    CHECK(parseStep(stepName((Step)i)) == (Step)i);
  CHECK_FALSE(parseStep("ir"));
  CHECK_FALSE(parseStep("lower"));
  Compilation c(pipelineCompileOptions());
  PipelineOptions po;
  po.timePasses = true;
  po.spmd = true;
  po.last = Step::Codegen;
  po.printAfter = "flatten";
  std::ostringstream log;
  REQUIRE(runFrontEnd(c, "t.dt",
                      "mesh m = [x = 2]\nfn f(w: f32[2] @ m[_]) -> f32[] @ m[] {\n"
                      "  return sum(w * w)\n}\nlet w : f32[2] @ m[_] = ones()\n"
                      "print(grad(f)(w) + w)\n",
                      po, log));
  REQUIRE(compileProgram(c, po, log));
  for (int i = 0; i < kNumSteps; ++i)
    CHECK(log.str().find(std::string("pass ") + stepName((Step)i) + ": ") != std::string::npos);
  // After flatten, the straight-line copy exists and the `grad` is not expanded yet.
  CHECK(log.str().find("func @f.flat(") != std::string::npos);
  CHECK(log.str().find(" = grad @f") != std::string::npos);
}

TEST_CASE("session: two Sessions compile and run different programs on two threads") {
  // Each thread owns its Session (JITs, diagnostics, values); nothing is shared.
  auto program = [](int k) {
    std::string n = std::to_string(k);
    return "mesh m = [x = 2, y = " + n +
           "]\n"
           "var v : f32[8, 6] @ m[x, y] = ones()\n"
           "v = v * " +
           n +
           ".0\n"
           "for i in 0..20 {\n  v = exp(v * 0.0) * v + 1.0\n}\n"
           "let s = relayout(sum(v), m[])\n";
  };
  std::string out[2];
  std::string err[2];
  auto work = [&](int t) {
    try {
      Session s;
      for (int round = 0; round < 3; ++round) {
        if (round == 0) {
          if (!s.compile("t.dt", program(t + 1))) {
            err[t] = s.diags().renderAll();
            return;
          }
        } else if (!s.compile("t.dt", "v = v + 1.0\nprint(s + relayout(sum(v), m[]))\n")) {
          err[t] = s.diags().renderAll();
          return;
        }
        std::ostringstream o, log;
        s.run(o, log);
        out[t] += o.str();
      }
    } catch (const std::exception &e) {
      err[t] = e.what();
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  CHECK(err[0] == "");
  CHECK(err[1] == "");
  // Program k: s = (k + 20) * 48; then v grows by 1 per round.
  CHECK(out[0] == "2064\n2112\n");
  CHECK(out[1] == "2160\n2208\n");
}

TEST_CASE("verify: a loop past CompileOptions::maxLoopTrips stops both evaluators") {
  // An endless `while` (the compile fuzzer's mutations make them) and a
  // run-time-bound `for` past the limit end with a RuntimeFault naming the
  // loop, in the reference evaluator and in the executor alike.
  CompileOptions opts;
  opts.maxLoopTrips = 100;
  const char *endless = "mesh m = [x = 2]\nvar n = 1\nwhile n < 10 {\n  n = n * 1\n}\nprint(n)\n";
  try {
    verifySource("w.dt", endless, {}, 0, opts);
    FAIL("an endless while ran to an end");
  } catch (const RuntimeFault &e) {
    CHECK(std::string(e.what()).find("`while` loop at line 3 runs more than 100 iterations") !=
          std::string::npos);
  }
  const char *longFor =
      "mesh m = [x = 2]\nvar n = 1000\nvar s = 0\nfor i in 0..n {\n  s = s + 1\n}\n"
      "print(s)\n";
  CHECK_THROWS_AS(verifySource("f.dt", longFor, {}, 0, opts), RuntimeFault);
  opts.maxLoopTrips = 1000;
  VerifyResult ok = verifySource("f.dt", longFor, {}, 0, opts);
  CHECK(ok.compiled);
  CHECK(allPass(ok.checks));
  // The executor on its own (the reference evaluator above ran first).
  SessionOptions so;
  so.exec.maxLoopTrips = 100;
  Session s(so);
  REQUIRE(s.compile("w.dt", endless));
  std::ostringstream out, log;
  try {
    s.run(out, log);
    FAIL("an endless while ran to an end on the executor");
  } catch (const RuntimeFault &e) {
    CHECK(std::string(e.what()).find("`while` loop at line 3 runs more than 100 iterations") !=
          std::string::npos);
  }
}

TEST_CASE("session: a `load` of a file a `save` above writes is checked against that save") {
  // On disk before the program compiles: a file of another dtype and shape.
  const std::string npy = "/tmp/dt_session_save_load.npy";
  const std::string st = "/tmp/dt_session_save_load.safetensors";
  {
    Session old;
    chunk(old,
          "let o : i32[2] = [7, 8]\nsave(\"" + npy + "\", o)\nsave(\"" + st + "\", \"old\", o)\n");
  }
  Session s;
  // The declared and undeclared loads take the saves' types, not the old files'.
  CHECK(chunk(s, "let x : f32[4] = [1, 2, 3, 4]\n"
                 "save(\"" +
                     npy +
                     "\", x)\n"
                     "let y : f32[4] = load(\"" +
                     npy +
                     "\")\n"
                     "let z = load(\"" +
                     npy +
                     "\")\n"
                     "save(\"" +
                     st +
                     "\", \"w\", x, \"n\", [true, false])\n"
                     "let w = load(\"" +
                     st +
                     "\", \"w\")\n"
                     "print(y + z)\nprint(w)\nprint(load(\"" +
                     st + "\", \"n\"))\n") == "[2, 4, 6, 8]\n[1, 2, 3, 4]\n[true, false]\n");
  // A name the save above does not write is an error at compile time (the
  // old file's `old` is overwritten by it).
  Session t;
  std::ostringstream out, log;
  CHECK_FALSE(t.compile("p.dt", "let x : f32[4] = [1, 2, 3, 4]\n"
                                "save(\"" +
                                    st +
                                    "\", \"w\", x)\n"
                                    "let o = load(\"" +
                                    st + "\", \"old\")\n"));
  CHECK(t.diags().renderAll().find("the `save` above writes no tensor named `old`") !=
        std::string::npos);
  // And a declared type that differs from what the save writes, too.
  Session u;
  CHECK_FALSE(u.compile("p.dt", "let x : f32[4] = [1, 2, 3, 4]\n"
                                "save(\"" +
                                    npy +
                                    "\", x)\n"
                                    "let y : f32[2] = load(\"" +
                                    npy + "\")\n"));
  CHECK(u.diags().renderAll().find("holds f32[4], but the declared type is f32[2]") !=
        std::string::npos);
  std::remove(npy.c_str());
  std::remove(st.c_str());
}
