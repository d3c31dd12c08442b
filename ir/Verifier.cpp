// This file implements the IR verifier (see Verifier.h for the invariants).
#include "ir/Verifier.h"

#include "ir/Infer.h"
#include "ir/Printer.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

namespace dt {

namespace {

/// The module's functions by name (the first of a name, as Module::find).
using FunctionTable = std::unordered_map<std::string_view, const Function *>;

class FnVerifier {
public:
  FnVerifier(const Module &m, const Function &f, std::vector<std::string> &errs,
             const VerifyOptions &o, const FunctionTable *byName = nullptr)
      : m_(m), f_(f), errs_(errs), opts_(o), byName_(byName), defined_(f.values.size(), false),
        visible_(f.values.size(), false) {}

  void run() {
    for (size_t i = 0; i < f_.values.size(); ++i)
      if (f_.values[i].id != (int)i)
        err("value in slot " + std::to_string(i) + " has id %" + std::to_string(f_.values[i].id));
    for (int p : f_.params)
      define(p, "parameter");
    for (size_t i = 0; i < f_.body.args.size(); ++i)
      if (i >= f_.params.size() || f_.body.args[i] != f_.params[i])
        err("the body's arguments must be the function's parameters");
    for (auto &t : f_.results)
      checkType(t, "declared result");
    block(f_.body, nullptr);
    if (f_.body.insts.empty() || f_.body.insts.back().op != Op::Return)
      err("function body must end with `return`");
  }

private:
  void err(const std::string &msg) { errs_.push_back("@" + f_.name + ": " + msg); }
  void instErr(const Inst &in, const std::string &msg) {
    std::string what = std::string("`") + opName(in.op) + "`";
    if (!in.results.empty())
      what += " (%" + std::to_string(in.results[0]) + ")";
    err(what + ": " + msg);
  }
  bool valid(int id) const { return id >= 0 && id < (int)f_.values.size(); }
  std::string v(int id) const { return "%" + std::to_string(id); }
  std::string ty(int id) const { return valid(id) ? printType(f_.type(id)) : "?"; }
  bool sameType(int a, int b) const { return valid(a) && valid(b) && f_.type(a) == f_.type(b); }

  /// What is wrong with `t`, each said after the type (`f32[4]` + " has a
  /// negative dim"); empty when it is well formed. `declared`: also whether
  /// the module declares its mesh.
  std::vector<std::string> typeProblems(const TensorType &t, bool declared) const {
    std::vector<std::string> p;
    for (auto &d : t.shape)
      if (!d.isSym() && d.value < 0)
        p.push_back(" has a negative dim");
    if (!t.mesh) {
      if (!t.placements.empty())
        p.push_back(" is a host type with placements");
      return p;
    }
    if (declared) {
      MeshRef decl = m_.findMesh(t.mesh->name);
      if (!decl || !(*decl == *t.mesh))
        p.push_back(" uses mesh `" + t.mesh->name + "`, which the module does not declare");
    }
    if (t.placements.size() != t.mesh->axes.size())
      p.push_back(" has " + std::to_string(t.placements.size()) + " placements for mesh `" +
                  t.mesh->name + "` with " + std::to_string(t.mesh->axes.size()) + " axes");
    for (auto &pl : t.placements)
      if (pl.isShard() && (pl.dim < 0 || pl.dim >= t.rank()))
        p.push_back(": `shard(" + std::to_string(pl.dim) + ")` names a dim of a tensor with " +
                    std::to_string(t.rank()) + " dims");
    if (!isCanonicalShardOrder(t.placements))
      p.push_back(" numbers the axes of a multi-axis shard other than 0..k-1");
    return p;
  }

  void checkType(const TensorType &t, const std::string &what) {
    for (const std::string &p : typeProblems(t, true))
      err(what + " `" + printType(t) + "`" + p);
  }

  void define(int id, const std::string &what) {
    if (!valid(id)) {
      err(what + " " + v(id) + " is not a value of the function");
      return;
    }
    if (defined_[id])
      err(v(id) + " is defined twice");
    defined_[id] = visible_[id] = true;
    checkType(f_.type(id), what + " " + v(id));
  }

  void use(const Inst &in, int id) {
    if (!valid(id))
      instErr(in, "operand " + v(id) + " is not a value of the function");
    else if (!visible_[id])
      instErr(in, "operand " + v(id) +
                      (defined_[id] ? " is not in scope here (defined in another block)"
                                    : " is used before it is defined"));
  }

  /// `loop` is the enclosing `for` when `b` is its body, else null.
  void block(const Block &b, const Inst *loop) {
    std::vector<int> scope;
    auto def = [&](int id, const std::string &what) {
      bool fresh = valid(id) && !defined_[id];
      define(id, what);
      if (fresh)
        scope.push_back(id);
    };
    if (loop)
      for (int a : b.args)
        def(a, "block argument");
    size_t first = 0;
    if (&b == &f_.body && !opts_.trusted.empty() && f_.name == opts_.trusted)
      for (; first < opts_.trustedInsts && first < b.insts.size(); ++first)
        for (int r : b.insts[first].results)
          if (valid(r))
            defined_[r] = visible_[r] = true; // verified before (VerifyOptions)
    for (size_t i = first; i < b.insts.size(); ++i) {
      const Inst &in = b.insts[i];
      bool term = in.op == Op::Return || in.op == Op::Yield;
      if (term && i + 1 != b.insts.size())
        instErr(in, "a terminator must be the last instruction of its block");
      if (in.op == Op::Yield && !loop)
        instErr(in, "`yield` outside a `for`/`while` body or `if` branch");
      if (in.op == Op::Return && loop)
        instErr(in, "`return` inside a `" + std::string(opName(loop->op)) + "` body");
      for (int o : in.operands)
        use(in, o);
      inst(in, loop);
      for (int r : in.results)
        def(r, "result");
    }
    for (int id : scope)
      visible_[id] = false;
  }

  /// A print's items (Ops.def): one operand without `flag`; with it, pairs
  /// (operand or -1, length) that cover `str` exactly.
  void printItems(const Inst &in) {
    const Attrs &a = in.attrs;
    if (!a.flag) {
      if (in.operands.size() != 1)
        instErr(in, "takes 1 operand without `flag`, got " + std::to_string(in.operands.size()));
      return;
    }
    if (a.ints.size() % 2) {
      instErr(in, "needs (operand, length) pairs in `ints`");
      return;
    }
    uint64_t len = 0;
    for (size_t i = 0; i < a.ints.size(); i += 2) {
      if (a.ints[i] < -1 || a.ints[i] >= (int64_t)in.operands.size() || a.ints[i + 1] < 0 ||
          (uint64_t)a.ints[i + 1] > a.str.size() - len) {
        instErr(in, "item " + std::to_string(i / 2) + " is out of range");
        return;
      }
      len += (uint64_t)a.ints[i + 1];
    }
    if (len != a.str.size())
      instErr(in, "its items do not cover its text");
  }

  void inst(const Inst &in, const Inst *loop) {
    const OpInfo &info = opInfo(in.op);
    size_t no = in.operands.size(), nr = in.results.size();
    if (in.op == Op::Einsum) {
      if (no != 1 && no != 2)
        instErr(in, "takes 1 or 2 operands, got " + std::to_string(no));
    } else if (info.numOperands >= 0 && no != (size_t)info.numOperands) {
      instErr(in,
              "takes " + std::to_string(info.numOperands) + " operands, got " + std::to_string(no));
    }
    if (info.numResults >= 0 && nr != (size_t)info.numResults)
      instErr(in, "produces " + std::to_string(info.numResults) + " results, got " +
                      std::to_string(nr));
    if (in.op != Op::For && in.op != Op::If && in.op != Op::While && !in.regions.empty())
      instErr(in, "cannot have regions");
    if (in.op == Op::Print)
      printItems(in);
    for (int o : in.operands)
      if (!valid(o))
        return; // already reported; the checks below read operand types
    for (int r : in.results)
      if (!valid(r))
        return;
    switch (in.op) {
    case Op::For:
      forLoop(in);
      return;
    case Op::If:
      ifInst(in);
      return;
    case Op::While:
      whileLoop(in);
      return;
    case Op::Yield:
      yield(in, loop);
      return;
    case Op::Return:
      ret(in);
      return;
    case Op::Call:
    case Op::Grad:
      call(in);
      return;
    default:
      break;
    }
    attrs(in);
    checkInferredTypes(in);
  }

  static bool isHostScalar(const TensorType &t, DType d) {
    return t == TensorType{d, {}, nullptr, {}};
  }

  /// The loop-carried initial values of a `for` (after its run-time bounds)
  /// or `while` (after its initial condition).
  static std::vector<int> carriedOf(const Inst &in) {
    size_t skip = in.op == Op::While ? 1 : in.op == Op::For && in.attrs.flag ? 2 : 0;
    if (in.operands.size() < skip)
      return {};
    return std::vector<int>(in.operands.begin() + (long)skip, in.operands.end());
  }

  /// Checks a loop body's arguments (`lead` leading ones, then one per
  /// carried value) and its results.
  void loopShape(const Inst &in, const Block &body, const std::vector<int> &carried, size_t lead) {
    size_t n = carried.size();
    if (in.results.size() != n)
      instErr(in, "has " + std::to_string(in.results.size()) + " results for " + std::to_string(n) +
                      " loop-carried values");
    if (body.args.size() != n + lead) {
      instErr(in, "body has " + std::to_string(body.args.size()) + " arguments; expected " +
                      (lead ? "the induction variable and " : "") + std::to_string(n) +
                      " loop-carried values");
    } else {
      for (size_t k = 0; k < n; ++k)
        if (!sameType(body.args[k + lead], carried[k]))
          instErr(in, "loop-carried value " + std::to_string(k) + ": body argument has type `" +
                          ty(body.args[k + lead]) + "` but the initial value has type `" +
                          ty(carried[k]) + "`");
    }
    for (size_t k = 0; k < n && k < in.results.size(); ++k)
      if (!sameType(in.results[k], carried[k]))
        instErr(in, "result " + std::to_string(k) + " has type `" + ty(in.results[k]) +
                        "` but the loop carries `" + ty(carried[k]) + "`");
    if (body.insts.empty() || body.insts.back().op != Op::Yield)
      instErr(in, "body must end with `yield`");
  }

  void forLoop(const Inst &in) {
    if (in.attrs.ints.size() != 3)
      instErr(in, "needs bounds `ints = {lo, hi, step}`");
    else if (in.attrs.ints[2] == 0)
      instErr(in, "step must not be 0");
    if (in.attrs.flag) {
      if (in.operands.size() < 2) {
        instErr(in, "with run-time bounds needs operands `lo, hi`");
        return;
      }
      for (int k = 0; k < 2; ++k)
        if (!isHostScalar(f_.type(in.operands[k]), DType::I64))
          instErr(in, std::string(k ? "upper" : "lower") + " bound " + v(in.operands[k]) +
                          " must have type `i64[]`, got `" + ty(in.operands[k]) + "`");
    }
    if (in.regions.size() != 1) {
      instErr(in, "needs exactly one body region, got " + std::to_string(in.regions.size()));
      return;
    }
    const Block &body = in.regions[0];
    loopShape(in, body, carriedOf(in), 1);
    if (body.args.size() == carriedOf(in).size() + 1) {
      int iv = body.args[0];
      if (valid(iv) && !isHostScalar(f_.type(iv), DType::I64))
        instErr(in,
                "induction variable " + v(iv) + " must have type `i64[]`, got `" + ty(iv) + "`");
    }
    block(body, &in);
  }

  void whileLoop(const Inst &in) {
    if (in.operands.empty()) {
      instErr(in, "needs an initial condition operand");
      return;
    }
    if (!isHostScalar(f_.type(in.operands[0]), DType::Bool))
      instErr(in, "condition " + v(in.operands[0]) + " must have type `bool[]`, got `" +
                      ty(in.operands[0]) + "`");
    if (in.regions.size() != 1) {
      instErr(in, "needs exactly one body region, got " + std::to_string(in.regions.size()));
      return;
    }
    loopShape(in, in.regions[0], carriedOf(in), 0);
    block(in.regions[0], &in);
  }

  void ifInst(const Inst &in) {
    if (in.operands.size() != 1) {
      instErr(in, "takes 1 operand (the condition), got " + std::to_string(in.operands.size()));
      return;
    }
    if (!isHostScalar(f_.type(in.operands[0]), DType::Bool))
      instErr(in, "condition " + v(in.operands[0]) + " must have type `bool[]`, got `" +
                      ty(in.operands[0]) + "`");
    if (in.regions.size() != 2) {
      instErr(in, "needs a then and an else region, got " + std::to_string(in.regions.size()));
      return;
    }
    for (const Block &r : in.regions) {
      if (!r.args.empty())
        instErr(in, "branches take no arguments");
      if (r.insts.empty() || r.insts.back().op != Op::Yield)
        instErr(in, "each branch must end with `yield`");
      block(r, &in);
    }
  }

  void yield(const Inst &in, const Inst *loop) {
    if (!loop)
      return;
    // What the enclosing region must pass on: its results (if), or the
    // next condition and the carried values (while), or the carried values.
    std::vector<TensorType> want;
    std::string what = "the loop carries";
    if (loop->op == Op::If) {
      for (int r : loop->results)
        if (!valid(r))
          return;
      for (int r : loop->results)
        want.push_back(f_.type(r));
      what = "the `if` has results of";
    } else {
      if (loop->op == Op::While)
        want.push_back(TensorType{DType::Bool, {}, nullptr, {}});
      for (int c : carriedOf(*loop)) {
        if (!valid(c))
          return;
        want.push_back(f_.type(c));
      }
      if (loop->op == Op::While)
        what = "the `while` needs its condition and";
    }
    if (in.operands.size() != want.size()) {
      instErr(in, "yields " + std::to_string(in.operands.size()) + " values but " + what + " " +
                      std::to_string(want.size()));
      return;
    }
    for (size_t k = 0; k < in.operands.size(); ++k)
      if (!(f_.type(in.operands[k]) == want[k]))
        instErr(in, "value " + std::to_string(k) + " has type `" + ty(in.operands[k]) + "` but " +
                        what + " `" + printType(want[k]) + "`");
  }

  void ret(const Inst &in) {
    if (in.operands.size() != f_.results.size()) {
      instErr(in, "gives " + std::to_string(in.operands.size()) + " values but @" + f_.name +
                      " declares " + std::to_string(f_.results.size()) + " results");
      return;
    }
    for (size_t k = 0; k < in.operands.size(); ++k)
      if (!(f_.type(in.operands[k]) == f_.results[k]))
        instErr(in, "value " + std::to_string(k) + " has type `" + ty(in.operands[k]) + "` but @" +
                        f_.name + " declares `" + printType(f_.results[k]) + "`");
  }

  void call(const Inst &in) {
    const Function *g = nullptr;
    if (!byName_) {
      g = m_.find(in.attrs.str);
    } else if (auto it = byName_->find(in.attrs.str); it != byName_->end()) {
      g = it->second;
    }
    if (!g) {
      instErr(in, "unknown callee `@" + in.attrs.str + "`");
      return;
    }
    if (in.op == Op::Grad) {
      for (auto w : in.attrs.ints)
        if (w < 0 || w >= (int64_t)g->params.size())
          instErr(in,
                  "`wrt` index " + std::to_string(w) + " is not a parameter of `@" + g->name + "`");
    }
    if (in.operands.size() != g->params.size())
      instErr(in, "passes " + std::to_string(in.operands.size()) + " arguments to `@" + g->name +
                      "`, which takes " + std::to_string(g->params.size()));
    // A grad's results are the gradients (autodiff checks their types).
    if (in.op == Op::Call && in.results.size() != g->results.size())
      instErr(in, "has " + std::to_string(in.results.size()) + " results but `@" + g->name +
                      "` returns " + std::to_string(g->results.size()));
    for (size_t k = 0; k < in.operands.size() && k < g->params.size(); ++k) {
      int p = g->params[k];
      if (p < 0 || p >= (int)g->values.size())
        continue;
      const TensorType &want = g->values[p].type;
      const TensorType &got = f_.type(in.operands[k]);
      bool ok = isConcrete(want.shape) ? got == want
                                       : got.dtype == want.dtype && got.rank() == want.rank();
      if (!ok)
        instErr(in, "argument " + std::to_string(k) + " has type `" + printType(got) + "` but `@" +
                        g->name + "` takes `" + printType(want) + "`");
    }
  }

  void attrs(const Inst &in) {
    const Attrs &a = in.attrs;
    const TensorType *x = in.operands.empty() ? nullptr : &f_.type(in.operands[0]);
    const TensorType *r = in.results.empty() ? nullptr : &f_.type(in.results[0]);
    auto dimOk = [&](int64_t d, const TensorType *t) { return t && d >= 0 && d < t->rank(); };
    switch (in.op) {
    case Op::ReduceSum:
    case Op::ReduceMax:
    case Op::ReduceMin:
      for (size_t i = 0; i < a.ints.size(); ++i)
        if (!dimOk(a.ints[i], x) || (i && a.ints[i] <= a.ints[i - 1])) {
          instErr(in, "reduce dims must be sorted, unique and in range");
          break;
        }
      break;
    case Op::Transpose: {
      auto p = a.ints;
      std::sort(p.begin(), p.end());
      bool ok = x && (int)p.size() == x->rank();
      for (size_t i = 0; ok && i < p.size(); ++i)
        ok = p[i] == (int64_t)i;
      if (!ok)
        instErr(in, "`perm` is not a permutation of the operand's dims");
      break;
    }
    case Op::IndexSelect:
    case Op::IndexAdd:
    case Op::Cumsum:
    case Op::Iota:
      if (a.ints.size() != 1 || !dimOk(a.ints[0], in.op == Op::Iota ? r : x))
        instErr(in, "needs one dim attribute in range");
      break;
    case Op::Einsum:
      if (a.str.empty())
        instErr(in, "needs an einsum spec");
      break;
    case Op::Random:
      if ((a.str != "normal" && a.str != "uniform") || a.ints.size() + in.operands.size() != 1)
        instErr(in, "needs a distribution (`normal` or `uniform`) and a seed");
      else if (!in.operands.empty() && valid(in.operands[0]) &&
               (f_.type(in.operands[0]).dtype != DType::I64 ||
                f_.type(in.operands[0]).rank() != 0 || f_.type(in.operands[0]).hasPartial()))
        instErr(in, "its run-time seed must be an `i64[]` (host or replicated), got `" +
                        ty(in.operands[0]) + "`");
      break;
    case Op::Fill:
      if (r && (constInInts(r->dtype) ? a.floats.size() : a.ints.size()))
        instErr(in, std::string("keeps its value in `") +
                        (constInInts(r->dtype) ? "ints" : "floats") + "` for `" +
                        dtypeName(r->dtype) + "`");
      else if (r && constCount(a, r->dtype) != 1)
        instErr(in, "needs exactly one value");
      break;
    case Op::Const:
      if (r && (constInInts(r->dtype) ? a.floats.size() : a.ints.size()))
        instErr(in, std::string("keeps its values in `") +
                        (constInInts(r->dtype) ? "ints" : "floats") + "` for `" +
                        dtypeName(r->dtype) + "`");
      if (r && constCount(a, r->dtype) != 1 && isConcrete(r->shape) &&
          (int64_t)constCount(a, r->dtype) != numElements(r->shape))
        instErr(in, "has " + std::to_string(constCount(a, r->dtype)) + " values for type `" +
                        printType(*r) + "`");
      break;
    default:
      break;
    }
  }

  /// Re-infers the result types of a non-control instruction with ir/Infer.h
  /// and compares them with the declared ones: a pass that rewrites an
  /// instruction must keep its type consistent with the placement rules.
  void checkInferredTypes(const Inst &in) {
    if (!opts_.inferTypes || in.results.empty())
      return;
    // A wrong operand count is reported by inst(); inference assumes it right.
    const OpInfo &info = opInfo(in.op);
    if (info.numOperands >= 0 && in.operands.size() != (size_t)info.numOperands)
      return;
    std::vector<TensorType> ops, given;
    for (int o : in.operands)
      ops.push_back(f_.type(o));
    for (int r : in.results)
      given.push_back(f_.type(r));
    // A malformed type is reported where its value is defined; inference
    // assumes well-formed ones (a shard of a dim the tensor lacks).
    for (auto *ts : {&ops, &given})
      for (const TensorType &t : *ts)
        if (!typeProblems(t, false).empty())
          return;
    Inferred inf = inferTypes(in.op, ops, in.attrs, given);
    if (!inf.ok()) {
      instErr(in, "type inference rejects it: " +
                      formatDiag(diagFormat(inf.error->id), inf.error->args));
      return;
    }
    for (size_t i = 0; i < inf.results.size() && i < given.size(); ++i)
      if (!(inf.results[i] == given[i]))
        instErr(in, "result " + v(in.results[i]) + " has type `" + printType(given[i]) +
                        "` but its operands give `" + printType(inf.results[i]) + "`");
  }

  const Module &m_;
  const Function &f_;
  std::vector<std::string> &errs_;
  const VerifyOptions &opts_;
  const FunctionTable *byName_; ///< null: Module::find (a linear search)
  std::vector<bool> defined_, visible_;
};

} // namespace

bool verifyFunction(const Module &m, const Function &f, std::vector<std::string> &errors,
                    const VerifyOptions &opts) {
  size_t before = errors.size();
  FnVerifier(m, f, errors, opts).run();
  return errors.size() == before;
}

bool verifyModule(const Module &m, std::vector<std::string> &errors, const VerifyOptions &opts) {
  size_t before = errors.size();
  std::set<std::string> meshNames;
  for (auto &mesh : m.meshes) {
    if (!meshNames.insert(mesh->name).second)
      errors.push_back("mesh `" + mesh->name + "` is declared twice");
    if ((int64_t)mesh->devices.size() != mesh->size())
      errors.push_back("mesh `" + mesh->name + "` has " + std::to_string(mesh->size()) +
                       " devices in its shape but " + std::to_string(mesh->devices.size()) +
                       " device ids");
  }
  // A call's callee in O(1): a module may hold thousands of kernels. A
  // session's build verifies only what it added, its calls and names looked
  // up by Module::find: building the table would cost the whole session.
  FunctionTable byName;
  const bool incremental = opts.trustedFunctions > 0;
  if (!incremental) {
    byName.reserve(m.functions.size());
    for (auto &f : m.functions)
      if (!byName.emplace(f.name, &f).second)
        errors.push_back("function `@" + f.name + "` is defined twice");
  }
  size_t others = 0;
  for (auto &f : m.functions) {
    if (incremental && (f.name == opts.trusted || others >= opts.trustedFunctions) &&
        m.find(f.name) != &f)
      errors.push_back("function `@" + f.name + "` is defined twice");
    if (f.name != opts.trusted && others++ < opts.trustedFunctions)
      continue;
    FnVerifier(m, f, errors, opts, incremental ? nullptr : &byName).run();
  }
  return errors.size() == before;
}

std::string verifyModuleText(const Module &m, const VerifyOptions &opts) {
  std::vector<std::string> errs;
  verifyModule(m, errs, opts);
  std::string r;
  for (auto &e : errs)
    r += (r.empty() ? "" : "\n") + e;
  return r;
}

} // namespace dt
