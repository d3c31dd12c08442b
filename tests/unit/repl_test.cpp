// Unit tests of the REPL's logic (tools/Repl.h), without a terminal: values
// and types of expressions, definitions that persist, each input run once,
// errors and run-time faults that keep the session, continuation lines and
// every `:` command. The terminal (libedit, prompts, history) is tested
// through a pseudo-terminal in tests/repl/pty_test.py.
#include "tools/Repl.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace dt;

namespace {

struct Driver {
  std::ostringstream out, err;
  Repl repl{ReplOptions{}, out, err};

  /// Feeds the lines of `text`; returns what they printed to stdout, and
  /// what went to stderr in `errText`.
  std::string operator()(const std::string &text, std::string *errText = nullptr) {
    out.str("");
    err.str("");
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
      repl.feed(line);
    if (errText)
      *errText = err.str();
    else
      CHECK_MESSAGE(err.str() == "", err.str());
    return out.str();
  }
};

/// A temporary `.dt` file holding `text`; the caller removes it.
std::string writeTemp(const std::string &text) {
  char path[] = "/tmp/dt_repl_test_XXXXXX.dt";
  int fd = mkstemps(path, 3);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

} // namespace

TEST_CASE("repl: definitions persist, expressions print value and type, nothing re-runs") {
  Driver d;
  CHECK(d("mesh m = [x = 2, y = 2]\n"
          "let a : f32[4, 4] @ m[x, y] = ones()\n"
          "print(sum(relayout(a, m[_, _])))\n") == "16\n");
  // An expression statement prints its value and its type; the earlier
  // print does not run again.
  CHECK(d("a * 2.0") == "[[2, 2, 2, 2], [2, 2, 2, 2], [2, 2, 2, 2], [2, 2, 2, 2]] : "
                        "f32[4, 4] @ m{x: shard(0), y: shard(1)}\n");
  // A partial value prints as its global value, with the partial type.
  CHECK(d("sum(a, dim=0)") == "[4, 4, 4, 4] : f32[4] @ m{x: partial(sum), y: shard(0)}\n");
  // var: assignments persist across inputs.
  CHECK(d("var w : f32[4] @ m[x] = zeros()") == "");
  CHECK(d("w = w + 1.0") == "");
  CHECK(d("w = w * 3.0") == "");
  CHECK(d("w") == "[3, 3, 3, 3] : f32[4] @ m{x: shard(0), y: replicate}\n");
  // Scalars and host values.
  CHECK(d("let h : i32[3] = [1, 2, 3]\nh") == "[1, 2, 3] : i32[3]\n");
  // The printed value's binding does not leak into the program's names.
  std::string err;
  d("print(__repl_value)", &err);
  CHECK(err.find("unknown name `__repl_value`") != std::string::npos);
  CHECK(d.repl.failures() == 1);
}

TEST_CASE("repl: functions span lines and are called later; imports persist") {
  Driver d;
  CHECK(d.repl.feed("mesh m = [x = 2]") == Repl::Status::Done);
  CHECK(d.repl.feed("fn twice(v: f32[N] @ m[x]) -> f32[N] @ m[x] {") == Repl::Status::More);
  CHECK(d.repl.prompt() == "... ");
  CHECK(d.repl.feed("  return v + v  # a comment with a ( bracket") == Repl::Status::More);
  CHECK(d.repl.feed("}") == Repl::Status::Done);
  CHECK(d.repl.prompt() == "dt> ");
  CHECK(d("let x : f32[4] @ m[x] = [1, 2, 3, 4]\n") == "");
  CHECK(d("twice(x)") == "[2, 4, 6, 8] : f32[4] @ m{x: shard(0)}\n");
  // A call spread over lines, and a generic instance on another shape.
  CHECK(d("twice(\n  twice(x)\n)") == "[4, 8, 12, 16] : f32[4] @ m{x: shard(0)}\n");
  CHECK(d("let y : f32[6] @ m[x] = ones()\ntwice(y)") ==
        "[2, 2, 2, 2, 2, 2] : f32[6] @ m{x: shard(0)}\n");
  CHECK(d("import nn") == "");
  CHECK(d("let s : f32[2, 4] @ m[_, _] = ones()\n").empty());
  CHECK(d("nn.gelu(s * 0.0)") == "[[0, 0, 0, 0], [0, 0, 0, 0]] : f32[2, 4] @ m{x: replicate}\n");
  // A function without a result is called as written.
  CHECK(d("fn show(v: f32[4] @ m[x]) {\n  print(v)\n}\n") == "");
  CHECK(d("show(x)") == "[1, 2, 3, 4]\n");
}

TEST_CASE("repl: an error or a run-time fault keeps the session") {
  Driver d;
  CHECK(d("mesh m = [x = 2, y = 2]\nlet a : f32[4, 4] @ m[x, y] = ones()\n"
          "let b : f32[4] @ m[x] = ones()\n") == "");
  std::string err;
  CHECK(d("a + b", &err) == "");
  // The diagnostic points into the line just typed (the 2nd input here).
  CHECK(err.find("[4]:1:1: error: operand shardings disagree on mesh axis `x`") !=
        std::string::npos);
  CHECK(err.find("  1 | a + b") != std::string::npos);
  CHECK(err.find("hint:") != std::string::npos);
  // A statement that failed binds nothing; the names before it still work.
  CHECK(d("let c = a @ nothing", &err) == "");
  CHECK(err.find("unknown name `nothing`") != std::string::npos);
  d("c", &err);
  CHECK(err.find("unknown name `c`") != std::string::npos);
  CHECK(d("b + 1.0") == "[2, 2, 2, 2] : f32[4] @ m{x: shard(0), y: replicate}\n");
  // A fault at run time (an index out of range) drops only that input.
  CHECK(d("let r : f32[4, 4] @ m[_, y] = ones()\nlet ids : i32[2] @ m[_] = [7, 0]\n") == "");
  CHECK(d("let bad = index_select(r, ids)", &err) == "");
  CHECK(err.find("error: rank") != std::string::npos);
  CHECK(err.find("out of range") != std::string::npos);
  d("bad", &err);
  CHECK(err.find("unknown name `bad`") != std::string::npos);
  // ... and is not run again by the next input.
  CHECK(d("print(b * 2.0)") == "[2, 2, 2, 2]\n");
  // A parse error, then an unfinished input at the end.
  CHECK(d("let = 3", &err) == "");
  CHECK(err.find("error:") != std::string::npos);
  CHECK(d.repl.feed("print(b") == Repl::Status::More);
  d.err.str("");
  d.repl.finish();
  CHECK(d.err.str().find("error:") != std::string::npos);
  CHECK(d("print(b)") == "[1, 1, 1, 1]\n");
}

TEST_CASE("repl: an input that fails defines nothing, so it can be typed again corrected") {
  Driver d;
  std::string err;
  CHECK(d("mesh m = [x = 2]\nlet v : f32[4] @ m[x] = [1, 2, 3, 4]\n") == "");
  // A function with a type error, then the same name corrected. The broken
  // definition used to stay registered: "`g` is already defined", then an
  // internal error from the half-built function at the next input.
  d("fn g(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a * 2.0 + true }", &err);
  CHECK(err.find("needs a numeric tensor") != std::string::npos);
  CHECK(d("fn g(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a * 2.0 }") == "");
  CHECK(d("g(v)") == "[2, 4, 6, 8] : f32[4] @ m{x: shard(0)}\n");
  // A file loaded as one input: a mesh and a struct it declares before a
  // statement that fails are taken back with it.
  std::string path = writeTemp("mesh q = [y = 3]\nstruct P { w: f32[4] @ m[x] }\n"
                               "let bad = v @ nothing\n");
  d(":load " + path, &err);
  CHECK(err.find("unknown name `nothing`") != std::string::npos);
  CHECK(d("mesh q = [y = 2]") == "");
  CHECK(d("struct P { w: f32[4] @ m[_] }") == "");
  CHECK(d(":mesh").find("mesh q = [y = 2]") != std::string::npos);
  std::remove(path.c_str());
  // An input that compiles but faults at run time is taken back whole, the
  // function it defines included.
  CHECK(d("let r : f32[4, 4] @ m[_, _] = ones()\nlet ids : i32[2] @ m[_] = [7, 0]\n") == "");
  path = writeTemp("fn pick(t: f32[4, 4] @ m[_, _], i: i32[2] @ m[_]) -> f32[2, 4] @ m[_, _] {\n"
                   "  return index_select(t, i)\n}\nlet bad = pick(r, ids)\n");
  d(":load " + path, &err);
  CHECK(err.find("out of range") != std::string::npos);
  std::remove(path.c_str());
  CHECK(d("fn pick(t: f32[4, 4] @ m[_, _]) -> f32[4] @ m[_] { return sum(t, dim=0) }") == "");
  CHECK(d("pick(r)") == "[4, 4, 4, 4] : f32[4] @ m{x: replicate}\n");
  // A body ending in a bare expression says where and what to write.
  d("fn h(a: f32[4] @ m[x]) -> f32[4] @ m[x] { a }", &err);
  CHECK(err.find(":1:43: error: function `h` does not return a value") != std::string::npos);
  CHECK(err.find("write `return a`") != std::string::npos);
  CHECK(d("fn h(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a }\nh(v)") ==
        "[1, 2, 3, 4] : f32[4] @ m{x: shard(0)}\n");
}

TEST_CASE("repl: a function declared again replaces it, for the calls inside others too") {
  Driver d;
  CHECK(d("mesh m = [x = 2]\nlet v : f32[4] @ m[x] = ones()\n") == "");
  CHECK(d("fn f(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a * 2.0 }") == "");
  CHECK(d("fn g(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return f(a) + 1.0 }") == "");
  CHECK(d("g(v)") == "[3, 3, 3, 3] : f32[4] @ m{x: shard(0)}\n");
  // Fixed and run again: g, compiled with the old f, calls the new one.
  CHECK(d("fn f(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a * 3.0 }") == "");
  CHECK(d("g(v)") == "[4, 4, 4, 4] : f32[4] @ m{x: shard(0)}\n");
  CHECK(d("f(v)") == "[3, 3, 3, 3] : f32[4] @ m{x: shard(0)}\n");
  // Twice in one input (a file) stays an error; a failed redeclaration
  // keeps the old one.
  std::string err;
  std::string twice = writeTemp("fn k(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a }\n"
                                "fn k(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a }\n");
  d(":load " + twice, &err);
  CHECK(err.find("`k` is already defined") != std::string::npos);
  std::remove(twice.c_str());
  d("fn f(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a + true }", &err);
  CHECK(err.find("error:") != std::string::npos);
  CHECK(d("g(v)") == "[4, 4, 4, 4] : f32[4] @ m{x: shard(0)}\n");
  // A file loaded twice: its mesh (the same) and functions declared again.
  std::string path = writeTemp("mesh q = [y = 2]\nfn h(a: f32[2] @ q[y]) -> f32[2] @ q[y] "
                               "{ return a * 5.0 }\nlet w : f32[2] @ q[y] = ones()\n");
  CHECK(d(":load " + path) == "");
  CHECK(d(":load " + path) == "");
  CHECK(d("h(w)") == "[5, 5] : f32[2] @ q{y: shard(0)}\n");
  std::remove(path.c_str());
  // A redeclaration in an input that faults at run time is taken back with
  // the instances it dropped: g and f run as before, compiled or not.
  CHECK(d("let r : f32[4, 4] @ m[_, _] = ones()\nlet ids : i32[2] @ m[_] = [7, 0]\n") == "");
  path = writeTemp("fn f(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a * 10.0 }\n"
                   "let bad = index_select(r, ids)\nlet u = g(v)\n");
  d(":load " + path, &err);
  CHECK(err.find("out of range") != std::string::npos);
  std::remove(path.c_str());
  CHECK(d("g(v)") == "[4, 4, 4, 4] : f32[4] @ m{x: shard(0)}\n");
  CHECK(d("f(v + 1.0)") == "[6, 6, 6, 6] : f32[4] @ m{x: shard(0)}\n");
  CHECK(d("g(v * 2.0)") == "[7, 7, 7, 7] : f32[4] @ m{x: shard(0)}\n");
}

TEST_CASE("repl: :type, :layout, :explain, :mesh, :load, :reset, :help") {
  Driver d;
  CHECK(d(":mesh") == "no meshes (declare one: `mesh m = [x = 2, y = 2]`)\n");
  CHECK(d("mesh m = [x = 2, y = 2]\nmesh q = [z = 3] devices [4, 5, 6]\n") == "");
  CHECK(d(":mesh") == "mesh m = [x = 2, y = 2]\nmesh q = [z = 3] devices [4, 5, 6]\n");
  CHECK(d("let a : f32[4, 6] @ m[x, y] = ones()\n"
          "let t : f32[2, 4, 6] @ m[_, y, x] = ones()\n") == "");
  // :type checks without running: nothing printed, nothing bound.
  CHECK(d(":type relayout(a, m[_, _])") == "f32[4, 6] @ m{x: replicate, y: replicate}\n");
  CHECK(d(":type sum(a, dim=1)") == "f32[4] @ m{x: shard(0), y: partial(sum)}\n");
  CHECK(d(":type a") == "f32[4, 6] @ m{x: shard(0), y: shard(1)}\n");
  std::string err;
  CHECK(d(":type print(a)", &err) == "");
  CHECK(err.find("needs an expression") != std::string::npos);
  CHECK(d(":type a + t", &err) == "");
  CHECK(err.find("error:") != std::string::npos);
  // :layout: which device holds which block, rank 2 and rank 3.
  std::string lay = d(":layout a");
  CHECK(lay.find("f32[4, 6] @ m{x: shard(0), y: shard(1)}\n") == 0);
  CHECK(lay.find("| 0 | 1 |") != std::string::npos);
  CHECK(lay.find("| 2 | 3 |") != std::string::npos);
  std::string lay3 = d(":layout t");
  CHECK(lay3.find("f32[2, 4, 6] @ m{x: shard(2), y: shard(1)}") == 0);
  CHECK(lay3.find("dim 1") != std::string::npos);
  d(":layout b", &err);
  CHECK(err.find("unknown name `b`") != std::string::npos);
  // :explain lists the collectives with bytes, and runs nothing.
  std::string ex = d(":explain relayout(a, m[_, _])");
  CHECK(ex.find("all_gather") != std::string::npos);
  CHECK(ex.find("B per rank") != std::string::npos);
  CHECK(ex.find("total: ") != std::string::npos);
  CHECK(d(":explain let r = relayout(sum(a, dim=1), m[x])").find("all_reduce over y") !=
        std::string::npos);
  d("r", &err);
  CHECK(err.find("unknown name `r`") != std::string::npos);
  // What `:type` and `:explain` compile is taken back out whole: a function,
  // a mesh or an import they declare can be declared for real afterwards.
  d(":type fn g(v: f32[4] @ m[x]) -> f32[4] @ m[x] { return v }", &err);
  CHECK(err.find("needs an expression") != std::string::npos);
  d(":explain mesh p = [w = 2]", &err);
  CHECK(d("mesh p = [w = 2]\nfn g(v: f32[2] @ p[w]) -> f32[2] @ p[w] {\n  return v * 2.0\n}\n"
          "let pv : f32[2] @ p[w] = ones()\ng(pv)") == "[2, 2] : f32[2] @ p{w: shard(0)}\n");
  // :load runs a file's statements in the session; its names persist.
  std::string path = writeTemp("let loaded : f32[4] @ m[x] = [1, 2, 3, 4]\nprint(loaded)\n"
                               "fn inc(v: f32[4] @ m[x]) -> f32[4] @ m[x] {\n"
                               "  return v + 1.0\n}\n");
  CHECK(d(":load " + path) == "[1, 2, 3, 4]\n");
  CHECK(d("inc(loaded)") == "[2, 3, 4, 5] : f32[4] @ m{x: shard(0), y: replicate}\n");
  std::remove(path.c_str());
  d(":load /nonexistent/file.dt", &err);
  CHECK(err.find("error:") != std::string::npos);
  CHECK(d(":help").find(":explain EXPR") != std::string::npos);
  d(":lyaout a", &err);
  CHECK(err.find("unknown command `:lyaout`; did you mean `:layout`?") != std::string::npos);
  CHECK(d(":reset") == "session reset\n");
  d("a", &err);
  CHECK(err.find("unknown name `a`") != std::string::npos);
  CHECK(d("mesh m = [x = 2]\nlet a : f32[2] @ m[x] = ones()\na") ==
        "[1, 1] : f32[2] @ m{x: shard(0)}\n");
  CHECK(d.repl.feed(":quit") == Repl::Status::Quit);
}

TEST_CASE("repl: open brackets skip strings and comments") {
  CHECK(Repl::openBrackets("f(a, [1, 2") == 2);
  CHECK(Repl::openBrackets("fn f() {\n") == 1);
  CHECK(Repl::openBrackets("einsum(\"(ij\", a)") == 0);
  CHECK(Repl::openBrackets("x # (((") == 0);
  CHECK(Repl::openBrackets("a)") == -1);
}

TEST_CASE("repl: an input left open ends at an open string or a new statement") {
  Driver d;
  std::string err;
  // A string does not span lines: the input ends there (an error), and the
  // next line is an input of its own.
  CHECK(d.repl.feed("print(\"loss") == Repl::Status::Done);
  CHECK(d("let x = 1\nprint(x)", &err) == "1\n");
  // An open `(` or `[` ends where a line starts a statement; that line runs.
  CHECK(d.repl.feed("print(max(1, 2)") == Repl::Status::More);
  CHECK(d.repl.feed("  ,") == Repl::Status::More); // a continuation line stays
  err.clear();
  CHECK(d("print(x + 1)", &err) == "2\n");
  CHECK(err.find("never closed") != std::string::npos);
  CHECK(d.repl.feed("let v = [1,") == Repl::Status::More);
  CHECK(d("var w = 3\nprint(w)", &err) == "3\n");
  // Inside `{` a statement is the body going on.
  CHECK(d.repl.feed("fn f(a: f32[2]) -> f32[2] {") == Repl::Status::More);
  CHECK(d.repl.feed("  let b = a") == Repl::Status::More);
  CHECK(d.repl.feed("  return b") == Repl::Status::More);
  CHECK(d.repl.feed("}") == Repl::Status::Done);
  CHECK(Repl::brackets("print(\"a\nb").unterminatedString);
  CHECK(!Repl::brackets("print(\"a\\\"b\"").unterminatedString);
  CHECK(Repl::brackets("f([{").open == "([{");
}

TEST_CASE("repl: a struct or a tuple prints every part with its type") {
  Driver d;
  CHECK(d("struct Pair { a: f32[2], b: i32[2] }\n"
          "let p = Pair(a=[1, 2], b=[3, 4])\n") == "");
  CHECK(d("p") == "Pair\n  a = [1, 2] : f32[2]\n  b = [3, 4] : i32[2]\n");
  CHECK(d(":type p") == "Pair { a: f32[2], b: i32[2] }\n");
  CHECK(d(":layout p") == "p.a:\nf32[2]\n(host value: every rank holds all of it)\n"
                          "p.b:\ni32[2]\n(host value: every rank holds all of it)\n");
  CHECK(d("fn both(x: f32[2]) -> (f32[2], f32[]) {\n  return x * 2.0, sum(x)\n}\n") == "");
  CHECK(d("both(p.a)") == "0: [2, 4] : f32[2]\n1: 3 : f32[]\n");
  CHECK(d(":type both(p.a)") == "(f32[2], f32[])\n");
  // A tuple whose first part is a struct.
  CHECK(d("fn pair_and(x: f32[2]) -> (Pair, f32[2]) {\n  return Pair(a=x, b=[0, 1]), x\n}\n") ==
        "");
  CHECK(d("pair_and(p.a)") == "0: Pair\n  a = [1, 2] : f32[2]\n  b = [0, 1] : i32[2]\n"
                              "1: [1, 2] : f32[2]\n");
  // The parts' bindings do not leak into the program's names.
  std::string err;
  d("print(__repl_value0)", &err);
  CHECK(err.find("unknown name `__repl_value0`") != std::string::npos);
  CHECK(d.repl.failures() == 1);
  // A user's own name like the REPL's is kept; `:type` of a call without a
  // result says so.
  CHECK(d("let __repl_value : f32[2] = [7, 8]\n1 + 1\n__repl_value") ==
        "2 : i64 constant\n[7, 8] : f32[2]\n");
  CHECK(d("fn noret(x: f32[2]) {\n  print(x)\n}\n") == "");
  d(":type noret(p.a)", &err);
  CHECK(err == "error: `noret(p.a)` has no value (its function returns nothing)\n");
}

TEST_CASE("repl: commands that take no argument refuse one; :layout names what a name is") {
  Driver d;
  std::string err;
  CHECK(d.repl.feed(":quit now") == Repl::Status::Done); // refused: the session goes on
  d(":help me", &err);
  CHECK(err.find("`:help` takes no argument, got `me`") != std::string::npos);
  d(":reset now", &err);
  CHECK(err.find("`:reset` takes no argument") != std::string::npos);
  d("mesh m = [x = 2]\nlet K = 4\nlet u : f32[4] @ m[x] = ones()\n");
  d(":layout K", &err);
  CHECK(err.find("`K` is an i64 constant") != std::string::npos);
  d(":layout m", &err);
  CHECK(err.find("`m` is a mesh") != std::string::npos);
  CHECK(d(":layout u # the weights").find("| 1 |") != std::string::npos);
  CHECK(d.repl.failures() == 5); // `:quit now` counts too
}

TEST_CASE("repl: a note on a function of an earlier input names that input") {
  Driver d;
  std::string err;
  d("mesh m = [x = 2]\nlet a : f32[4] @ m[x] = ones()\n");
  d("fn h(u: f32[4] @ m[_]) -> f32[4] @ m[_] { return u }\n");
  d("h(a)", &err);
  CHECK(err.find("parameter `u` declared here: [3]:1") != std::string::npos);
}

TEST_CASE("repl: each input costs what it adds, not what the session ran before") {
  // The chunk's program holds only its statements (values renumbered) and
  // the front end verifies only what an input added: 2000 inputs that
  // rebind one variable took 15 s (quadratic), and now take about 1 s.
  Driver d;
  d("mesh m = [x = 2]\nvar a : f32[4] @ m[x] = [1, 2, 3, 4]\n");
  std::string many;
  for (int i = 0; i < 400; ++i)
    many += "a = a + 1\n";
  d(many);
  CHECK(d("a") == "[401, 402, 403, 404] : f32[4] @ m{x: shard(0)}\n");
  CHECK(d.repl.session().compilation().module.find("main")->body.insts.size() > 400);
}

TEST_CASE("repl: an input costs what it adds, however many functions the session declared") {
  // Each input compiled every function declared so far and verified them
  // again, and took back a copy of every function's entry: 2000 inputs
  // declaring one function each took 100 s, and now take under 1 s.
  Driver d;
  d("mesh m = [x = 2]\nlet v : f32[4] @ m[x] = [1, 2, 3, 4]\n");
  for (int i = 0; i < 300; ++i)
    CHECK(d("fn f" + std::to_string(i) + "(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a + " +
            std::to_string(i) + ".0 }") == "");
  CHECK(d("f299(f7(v))") == "[307, 308, 309, 310] : f32[4] @ m{x: shard(0)}\n");
  // A failing input among them takes back only itself.
  std::string err;
  d("fn f5(a: f32[4] @ m[x]) -> f32[4] @ m[x] { return a + true }", &err);
  CHECK(err.find("error:") != std::string::npos);
  CHECK(d("f5(v)") == "[6, 7, 8, 9] : f32[4] @ m{x: shard(0)}\n");
  const Module &mod = d.repl.session().compilation().module;
  CHECK(mod.functions.size() > 300);
}

TEST_CASE("repl: :load reads a quoted path as a shell would") {
  Driver d;
  std::string path = writeTemp("let q = 7\n");
  d(":load \"" + path + "\"");
  CHECK(d("q") == "7 : i64 constant\n");
  std::remove(path.c_str());
}

TEST_CASE("repl: :mesh lists the meshes in declaration order") {
  Driver d;
  d("mesh z = [a = 2]\nmesh b = [c = 3]\n");
  CHECK(d(":mesh") == "mesh z = [a = 2]\nmesh b = [c = 3]\n");
}
