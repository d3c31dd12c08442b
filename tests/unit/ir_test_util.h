// This file implements small helpers shared by the IR unit tests: meshes and
// types in one line, a function builder for hand-built modules, and parsing
// IR text with a doctest failure that shows the parse error.
#pragma once

#include "ir/IR.h"
#include "ir/IRParser.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dt::test {

inline MeshRef makeMesh(const std::string &name, std::vector<MeshAxis> axes) {
  auto m = std::make_shared<Mesh>();
  m->name = name;
  m->axes = std::move(axes);
  for (int64_t i = 0; i < m->size(); ++i)
    m->devices.push_back(i);
  return m;
}

/// `dt[dims] @ mesh{placements}` (host when mesh is null).
inline TensorType ty(DType dt, std::vector<int64_t> dims, MeshRef mesh = nullptr,
                     std::vector<Placement> pl = {}) {
  Shape s;
  for (auto d : dims)
    s.push_back(Dim::lit(d));
  TensorType t = replicatedType(dt, s, mesh);
  if (!pl.empty())
    t.placements = pl;
  return t;
}

/// Appends instructions to a function (or to a nested region).
struct FnBuilder {
  Function &f;
  std::vector<Block *> blocks;

  explicit FnBuilder(Function &fn) : f(fn) { blocks.push_back(&f.body); }
  int param(const TensorType &t, const std::string &name = "") {
    int id = f.newValue(t, name);
    f.params.push_back(id);
    f.body.args.push_back(id);
    return id;
  }
  /// Emits `op` with one result of type `t` (none when `t` is null) and returns it.
  int emit(Op op, std::vector<int> operands, const TensorType *t, Attrs a = {},
           const std::string &name = "") {
    Inst in;
    in.op = op;
    in.operands = std::move(operands);
    in.attrs = std::move(a);
    int r = -1;
    if (t) {
      r = f.newValue(*t, name);
      in.results.push_back(r);
    }
    blocks.back()->insts.push_back(std::move(in));
    return r;
  }
  int emit(Op op, std::vector<int> operands, const TensorType &t, Attrs a = {},
           const std::string &name = "") {
    return emit(op, std::move(operands), &t, std::move(a), name);
  }
  void ret(std::vector<int> vals) {
    for (int v : vals)
      f.results.push_back(f.type(v));
    emit(Op::Return, std::move(vals), nullptr);
  }
};

inline Attrs ints(std::vector<int64_t> v) {
  Attrs a;
  a.ints = std::move(v);
  return a;
}
inline Attrs floats(std::vector<double> v) {
  Attrs a;
  a.floats = std::move(v);
  return a;
}
inline Attrs strAttr(std::string s, std::vector<int64_t> i = {}) {
  Attrs a;
  a.str = std::move(s);
  a.ints = std::move(i);
  return a;
}

/// Parses IR text; fails the test (showing the error) if it does not parse.
inline Module parseOrFail(const std::string &text) {
  Module m;
  std::string err;
  bool ok = parseIR(text, m, err);
  INFO("parse error: ", err);
  REQUIRE(ok);
  return m;
}

} // namespace dt::test
