// This file implements reverse-mode autodiff on the global IR (Autodiff.h).
//
// The gradient function is the primal function, made straight-line (calls
// inlined, constant-bound loops unrolled by passes/Flatten), followed by the
// backward instructions in reverse order. Every backward instruction is typed
// by ir/Infer exactly like user code, so a gradient's placement is derived
// from the primal placements: e.g. the cotangent of a replicated weight that
// meets token-sharded work comes out `partial(sum)`, and the program must
// relayout it (an all-reduce, visible) before it can be printed or applied
// to a replicated variable. Where two cotangent contributions of one value
// have different placements, they are brought to a common placement first
// (accumulate()): replicate+partial -> partial (local), shard+replicate ->
// shard (local slice), partial+shard -> shard (reduce-scatter).
// Only values that depend on a `wrt` argument get cotangents, and pure
// instructions whose results end up unused are removed (the gradient of the
// input batch is never computed). Same-rank matmuls differentiate to matmuls
// (dA = g @ B^T, dB = A^T @ g) so the backward runs on BLAS like the forward.
#include "passes/Autodiff.h"

#include "ir/Infer.h"
#include "passes/AutodiffRules.h"
#include "passes/Flatten.h"

#include <algorithm>
#include <map>
#include <set>

namespace dt {

using ad::Differentiator;
using ad::NotDiff;

namespace {

/// Removes pure instructions whose results are never used: cotangents of
/// inactive operands (e.g. the input batch) and forward values that only the
/// dropped primal result needed. Prints and control stay.
void removeDeadCode(Function &g) {
  std::vector<bool> used(g.values.size(), false);
  auto &insts = g.body.insts;
  std::vector<bool> keep(insts.size(), false);
  for (size_t i = insts.size(); i-- > 0;) {
    const Inst &in = insts[i];
    OpClass cls = opInfo(in.op).cls;
    bool live = in.results.empty() || cls == OpClass::Effect || cls == OpClass::Control;
    for (int r : in.results)
      live = live || used[r];
    if (!live)
      continue;
    keep[i] = true;
    for (int o : in.operands)
      used[o] = true;
  }
  std::vector<Inst> out;
  for (size_t i = 0; i < insts.size(); ++i)
    if (keep[i])
      out.push_back(std::move(insts[i]));
  insts = std::move(out);
}

} // namespace

namespace {

constexpr const char *kFlatSuffix = ".flat";

/// Whether `name` is the flat copy of a function of `m` (`f.flat` of `f`),
/// not a program's own function that ends so (`flat` in module `util`).
bool isFlatCopy(const Module &m, const std::string &name) {
  const size_t n = std::string(kFlatSuffix).size();
  return name.size() > n && name.compare(name.size() - n, n, kFlatSuffix) == 0 &&
         m.find(name.substr(0, name.size() - n)) != nullptr;
}

/// Calls `fn` on every instruction of `b`, nested regions included.
template <class F> void forEachInst(Block &b, F &&fn) {
  for (Inst &in : b.insts) {
    fn(in);
    for (Block &r : in.regions)
      forEachInst(r, fn);
  }
}

/// Makes `<fn>.flat` unless it exists; false after reporting an error.
bool flatCopy(Module &m, const std::string &fn, DiagEngine &diags, SrcLoc loc) {
  if (m.find(fn + kFlatSuffix))
    return true;
  const Function *primal = m.find(fn);
  if (!primal)
    throw InternalError("flatten: no function `" + fn + "`");
  Function g = *primal;
  g.name = fn + kFlatSuffix;
  std::string why;
  if (!flattenFunction(m, g, why)) {
    diags.error(DiagId::FnNotDifferentiable, loc, {fn, why});
    return false;
  }
  m.functions.push_back(std::move(g));
  return true;
}

std::string expandOne(Module &m, const Inst &in, DiagEngine &diags, int depth);

/// Expands the `grad`s of the flat copy of `fn` (a gradient taken inside a
/// differentiated function) and inlines the calls they become.
bool expandInFlat(Module &m, const std::string &fn, DiagEngine &diags, SrcLoc loc, int depth) {
  Function *flat = m.find(fn + kFlatSuffix);
  bool any = false;
  for (Inst &in : flat->body.insts)
    any |= in.op == Op::Grad;
  if (!any)
    return true;
  for (size_t i = 0; i < flat->body.insts.size(); ++i) {
    Inst &in = m.find(fn + kFlatSuffix)->body.insts[i];
    if (in.op != Op::Grad)
      continue;
    std::string g = expandOne(m, in, diags, depth + 1);
    if (g.empty())
      return false;
    Inst &again = m.find(fn + kFlatSuffix)->body.insts[i];
    again.op = Op::Call;
    again.attrs = Attrs{};
    again.attrs.str = g;
  }
  flat = m.find(fn + kFlatSuffix);
  std::string why;
  if (!flattenFunction(m, *flat, why)) {
    diags.error(DiagId::FnNotDifferentiable, loc, {fn, why});
    return false;
  }
  return true;
}

/// The gradient function of one `grad` instruction ("" after an error).
std::string expandOne(Module &m, const Inst &in, DiagEngine &diags, int depth) {
  if (depth > 64)
    throw InternalError("autodiff: `grad` nested more than 64 deep");
  const std::string fn = in.attrs.str;
  std::vector<int64_t> wrt = in.attrs.ints;
  bool withValue = in.attrs.flag;
  SrcLoc loc = in.loc;
  // The builder checked this for source programs; IR input is checked here.
  const Function *primal = m.find(fn);
  if (!primal)
    throw InternalError("autodiff: no function `" + fn + "`");
  if (primal->results.size() != 1 || primal->results[0].rank() != 0 ||
      !isFloat(primal->results[0].dtype)) {
    std::string r;
    for (size_t i = 0; i < primal->results.size(); ++i)
      r += (i ? ", " : "") + primal->results[i].str();
    diags.error(DiagId::GradNotScalar, loc, {fn, r.empty() ? "nothing" : r});
    return "";
  }
  if (!flatCopy(m, fn, diags, loc) || !expandInFlat(m, fn, diags, loc, depth))
    return "";
  return differentiate(m, fn, wrt, withValue, diags, loc);
}

/// The functions reachable from `fn` through calls and grads.
void reach(const Module &m, const std::string &fn, std::set<std::string> &seen) {
  if (!seen.insert(fn).second)
    return;
  const Function *f = m.find(fn);
  if (!f)
    return;
  std::vector<std::string> callees;
  forEachInst(const_cast<Block &>(f->body), [&](Inst &in) {
    if (in.op == Op::Call || in.op == Op::Grad)
      callees.push_back(in.attrs.str);
  });
  for (auto &c : callees)
    reach(m, c, seen);
}

} // namespace

bool flattenGradients(Module &m, DiagEngine &diags) {
  std::vector<std::pair<std::string, SrcLoc>> todo;
  for (Function &f : m.functions)
    forEachInst(f.body, [&](Inst &in) {
      if (in.op == Op::Grad)
        todo.push_back({in.attrs.str, in.loc});
    });
  for (auto &[fn, loc] : todo)
    if (!flatCopy(m, fn, diags, loc))
      return false;
  return true;
}

bool expandGradients(Module &m, DiagEngine &diags) {
  // Functions are appended while expanding (flat copies, gradients): index,
  // and re-find after each expansion.
  for (size_t k = 0; k < m.functions.size(); ++k) {
    if (isFlatCopy(m, m.functions[k].name))
      continue; // flat copies are expanded when they are differentiated
    std::vector<Inst *> grads;
    forEachInst(m.functions[k].body, [&](Inst &in) {
      if (in.op == Op::Grad)
        grads.push_back(&in);
    });
    for (Inst *in : grads) {
      std::string g = expandOne(m, *in, diags, 0);
      if (g.empty())
        return false;
      // The builder typed the `grad` by the same derivation; IR input may not have.
      const Function *gf = m.find(g);
      std::string want, got;
      for (size_t i = 0; i < gf->results.size(); ++i)
        want += (i ? ", " : "") + gf->results[i].str();
      for (size_t i = 0; i < in->results.size(); ++i)
        got += (i ? ", " : "") + m.functions[k].type(in->results[i]).str();
      if (want != got) {
        diags.error(DiagId::GradMistyped, in->loc, {g, want, got});
        return false;
      }
      in->op = Op::Call;
      in->attrs = Attrs{};
      in->attrs.str = g;
    }
  }
  // The flat copies were only autodiff's input: nothing calls them, and later
  // steps would lower, fuse and compile them for nothing.
  std::set<std::string> flat;
  for (const Function &f : m.functions)
    if (isFlatCopy(m, f.name))
      flat.insert(f.name);
  m.functions.erase(std::remove_if(m.functions.begin(), m.functions.end(),
                                   [&](const Function &f) { return flat.count(f.name) > 0; }),
                    m.functions.end());
  return true;
}

bool gradientTypes(const Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                   bool withValue, DiagEngine &diags, SrcLoc loc, std::vector<TensorType> &out) {
  std::set<std::string> seen;
  reach(m, fn, seen);
  Module scratch;
  scratch.meshes = m.meshes;
  for (const Function &f : m.functions)
    if (seen.count(f.name))
      scratch.functions.push_back(f);
  Inst g;
  g.op = Op::Grad;
  g.attrs.str = fn;
  g.attrs.ints = wrt;
  g.attrs.flag = withValue;
  g.loc = loc;
  std::string name = expandOne(scratch, g, diags, 0);
  if (name.empty())
    return false;
  out = scratch.find(name)->results;
  return true;
}

std::string differentiate(Module &m, const std::string &fn, const std::vector<int64_t> &wrt,
                          bool withValue, DiagEngine &diags, SrcLoc loc) {
  std::string name = fn + (withValue ? ".value_and_grad" : ".grad");
  for (auto w : wrt)
    name += "." + std::to_string(w);
  if (m.find(name))
    return name;
  const Function *primal = m.find(fn + kFlatSuffix);
  if (!primal)
    primal = m.find(fn);
  if (!primal)
    throw InternalError("differentiate: no function `" + fn + "`");
  // A non-float argument in `wrt` is an integer or bool field of a struct
  // argument (the front end refuses a non-float tensor argument): it is a
  // constant, and its gradient is zeros.
  Function g = *primal;
  g.name = name;
  std::string why;
  if (!flattenFunction(m, g, why)) {
    diags.error(DiagId::FnNotDifferentiable, loc, {fn, why});
    return "";
  }
  Inst ret = g.body.insts.back();
  g.body.insts.pop_back();
  int y = ret.operands[0];
  // Active values depend on a `wrt` argument; only they need cotangents.
  std::vector<bool> active(g.values.size(), false);
  for (auto w : wrt)
    active[g.params[w]] = isFloat(g.type(g.params[w]).dtype);
  auto anyActive = [&](const Inst &in) {
    for (int o : in.operands)
      if (active[o])
        return true;
    return false;
  };
  for (const Inst &in : g.body.insts)
    if (anyActive(in))
      for (int r : in.results)
        active[r] = true;
  Differentiator d(g);
  d.active_ = active;
  try {
    const TensorType &yt = g.type(y);
    d.cot_[y] = d.bw_.fill(1, replicatedType(yt.dtype, {}, yt.mesh));
    for (auto it = g.body.insts.rbegin(); it != g.body.insts.rend(); ++it) {
      if (it->results.empty() || !anyActive(*it))
        continue;
      auto c = d.cot_.find(it->results[0]);
      if (c == d.cot_.end())
        continue;
      d.backward(*it, c->second);
    }
  } catch (const NotDiff &e) {
    diags.error(DiagId::FnNotDifferentiable, loc, {fn, e.why});
    return "";
  }
  Inst r;
  r.op = Op::Return;
  r.loc = loc;
  if (withValue)
    r.operands.push_back(y);
  for (auto w : wrt) {
    int p = g.params[w];
    auto c = d.cot_.find(p);
    r.operands.push_back(c != d.cot_.end() ? c->second : d.bw_.fill(0, g.type(p)));
  }
  for (auto &in : d.insts_)
    g.body.insts.push_back(std::move(in));
  g.body.insts.push_back(std::move(r));
  removeDeadCode(g);
  g.results.clear();
  for (int id : g.body.insts.back().operands)
    g.results.push_back(g.type(id));
  m.functions.push_back(std::move(g));
  return name;
}

} // namespace dt
