// Unit tests that walk the op tables (docs/architecture.md, "Where op meaning
// lives"): every kernel node (codegen/KernelOps.def, generated from
// ir/Ops.def) has scalar semantics (codegen/ScalarOps.h), an LLVM lowering
// that matches the interpreter and a CUDA C++ lowering (compiled by NVRTC in
// the `nvrtc` case); every builtin of the table (frontend/Builtins.h) is
// documented in docs/language.md and typed by its op as its dtype rule says;
// every op of the global IR is classified by autodiff's backward table.
#include "codegen/CudaEmitter.h"
#include "codegen/CudaLoader.h"
#include "codegen/Nvrtc.h"
#include "codegen/ScalarOps.h"
#include "frontend/Builtins.h"
#include "passes/Autodiff.h"

#include "kernel_test_util.h"

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <doctest/doctest.h>

using namespace dt;
using namespace dt::ktest;

namespace {

std::vector<Op> allOps() {
  return {
#define OP(Enum, name, nopnds, nres, cls) Op::Enum,
#include "ir/Ops.def"
  };
}

const DType kDTypes[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                         DType::Bool, DType::BF16, DType::F16};

/// The one-node kernel of `op` on dtype `t`, named after both (a cast goes
/// to i32 from f32, else to f32), or nullopt when the op is not defined on `t`.
std::optional<Kernel> oneNode(KOp op, DType t) {
  auto k = ktest::oneNode(op, t, t == DType::F32 ? DType::I32 : DType::F32);
  if (k)
    k->name = std::string("op_") + kopName(op) + "_" + dtypeName(t);
  return k;
}

/// Every arithmetic kernel node on every dtype it accepts.
std::vector<std::pair<KOp, Kernel>> everyOpKernel() {
  std::vector<std::pair<KOp, Kernel>> ks;
  for (int i = 0; i < kNumKOps; ++i) {
    KOp op = (KOp)i;
    if (kopArity(op) == 0)
      continue;
    for (DType t : kDTypes)
      if (auto k = oneNode(op, t))
        ks.push_back({op, *k});
  }
  return ks;
}

/// The words of the first cells of docs/language.md's tables.
std::set<std::string> documentedNames() {
  std::ifstream f(DT_TEST_LANG_DIR "/../../docs/language.md");
  REQUIRE(f.good());
  std::set<std::string> words;
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("| `", 0) != 0)
      continue;
    std::string cell = line.substr(1, line.find('|', 1) - 1), w;
    for (char c : cell + " ") {
      if (std::isalnum((unsigned char)c) || c == '_') {
        w += c;
      } else {
        if (!w.empty())
          words.insert(w);
        w.clear();
      }
    }
  }
  return words;
}

} // namespace

TEST_CASE("op tables: the kernel node list is ir/Ops.def's elementwise ops, same names") {
  int elementwise = 0;
  for (Op op : allOps()) {
    OpClass c = opInfo(op).cls;
    bool ew =
        c == OpClass::Elementwise1 || c == OpClass::Elementwise2 || c == OpClass::Elementwise3;
    if (!ew)
      continue;
    ++elementwise;
    std::optional<KOp> k = kopFromOp(op);
    REQUIRE(k);
    CHECK(std::string(kopName(*k)) == opName(op));
    CHECK(kopArity(*k) == opInfo(op).numOperands);
    CHECK(parseKOp(opName(op)) == k);
  }
  CHECK(kNumKOps == elementwise + 5); // load, const, random, iota, gather
}

TEST_CASE("op tables: every arithmetic kernel node has scalar semantics") {
  // Each node but cast, select (conversions, not arithmetic) and gather (a
  // load) evaluates through ScalarOps.h on at least one C++ type without
  // being refused.
  for (int i = 0; i < kNumKOps; ++i) {
    KOp op = (KOp)i;
    if (kopArity(op) == 0 || op == KOp::Cast || op == KOp::Select || op == KOp::Gather)
      continue;
    int defined = 0;
    auto tryOn = [&](auto v) {
      using T = decltype(v);
      try {
        if (kopArity(op) == 1)
          (void)scalarUnary<T>(op, T(1));
        else if (isPredicate(op))
          (void)scalarPredicate<T>(op, T(1), T(2));
        else
          (void)scalarBinary<T>(op, T(1), T(2));
        ++defined;
      } catch (const InternalError &) {
      }
    };
    tryOn(float{});
    tryOn(double{});
    tryOn(int32_t{});
    tryOn(int64_t{});
    tryOn(uint8_t{});
    INFO(kopName(op));
    CHECK(defined > 0);
  }
}

TEST_CASE("op tables: every kernel node lowers to LLVM, matching the interpreter") {
  CpuJIT jit;
  std::mt19937_64 rng(7);
  std::set<KOp> seen;
  for (auto &[op, k] : everyOpKernel()) {
    INFO(printKernel(k));
    Case c = makeCase(k, rng, /*cornerValues=*/true);
    CHECK(runAndCompare(jit, k, c) == "");
    seen.insert(op);
  }
  for (int i = 0; i < kNumKOps; ++i)
    if (kopArity((KOp)i) > 0) {
      INFO(kopName((KOp)i));
      CHECK(seen.count((KOp)i));
    }
}

TEST_CASE("op tables: every kernel node lowers to CUDA C++") {
  std::set<KOp> seen;
  for (auto &[op, k] : everyOpKernel()) {
    CudaKernelSource src = emitCudaKernel(k, "dt_" + k.name);
    CHECK(src.source.find("dt_" + k.name) != std::string::npos);
    seen.insert(op);
  }
  for (int i = 0; i < kNumKOps; ++i)
    if (kopArity((KOp)i) > 0)
      CHECK(seen.count((KOp)i));
}

TEST_CASE("nvrtc: every kernel node's CUDA C++ compiles warning-free") {
  if (!cudaHeadersAvailable())
    return;
  CudaLibraries libs;
  NvrtcCompiler nvrtc(libs, "");
  int n = 0;
  for (auto &[op, k] : everyOpKernel()) {
    CudaKernelSource src = emitCudaKernel(k, "dt_" + k.name);
    NvrtcRequest req;
    req.source = src.source;
    req.name = k.name + ".cu";
    req.arch = "sm_80";
    NvrtcResult r = nvrtc.compile(req);
    INFO(k.name << ":\n" << r.log);
    CHECK(r.ok);
    ++n;
  }
  MESSAGE(n << " one-node kernels compiled");
}

TEST_CASE("op tables: every builtin is in the table once and documented") {
  std::set<std::string> docs = documentedNames(), names;
  for (const BuiltinInfo &b : builtinTable()) {
    INFO(std::string(b.name));
    CHECK(names.insert(b.name).second);
    CHECK(findBuiltin(b.name) == &b);
    CHECK(docs.count(b.name));
    CHECK((b.minArgs < 0) == (b.maxArgs < 0));
    CHECK(b.minArgs <= b.maxArgs);
    CHECK(bool(b.build));
  }
  CHECK(findBuiltin("no_such_builtin") == nullptr);
}

TEST_CASE("op tables: an elementwise builtin's op types it as its dtype rule says") {
  auto host = [](DType t) {
    TensorType r;
    r.dtype = t;
    return r;
  };
  int checked = 0;
  for (const BuiltinInfo &b : builtinTable()) {
    if (!b.op || b.minArgs != b.maxArgs || b.minArgs != opInfo(*b.op).numOperands)
      continue; // `cast(x, dtype)`: the dtype is no operand
    OpClass c = opInfo(*b.op).cls;
    if (c != OpClass::Elementwise1 && c != OpClass::Elementwise2 && c != OpClass::Elementwise3)
      continue;
    INFO(std::string(b.name));
    ++checked;
    auto infer = [&](DType t) {
      std::vector<TensorType> xs;
      for (int i = 0; i < b.minArgs; ++i)
        xs.push_back(host(i == 0 && *b.op == Op::Select ? DType::Bool
                          : b.dtype == DTypeRule::Bool  ? DType::Bool
                                                        : t));
      return inferTypes(*b.op, xs, {});
    };
    Inferred f = infer(DType::F32);
    REQUIRE(f.ok());
    CHECK(f.results[0].dtype == (b.dtype == DTypeRule::Bool ? DType::Bool : DType::F32));
    if (b.dtype == DTypeRule::FloatOnly)
      CHECK_FALSE(infer(DType::I32).ok());
    if (b.dtype == DTypeRule::Same) {
      Inferred i = infer(DType::I32);
      REQUIRE(i.ok());
      CHECK(i.results[0].dtype == DType::I32);
    }
  }
  CHECK(checked >= 20);
}

TEST_CASE("op tables: autodiff classifies every op that reaches it") {
  for (Op op : allOps()) {
    INFO(opName(op));
    OpClass c = opInfo(op).cls;
    bool reaches = c != OpClass::Control && c != OpClass::Effect && c != OpClass::Collective;
    // Every op of a flattened global function has a rule or no gradient;
    // control flow is flattened first, effects have no results and
    // collectives exist only after SPMD lowering.
    CHECK((backwardKind(op) != BackwardKind::None) == reaches);
    // A float result of a float op that is not a comparison has a rule.
    if (c == OpClass::Elementwise1 || c == OpClass::Reduce || c == OpClass::Contract ||
        c == OpClass::Data || c == OpClass::Layout)
      if (op != Op::Not)
        CHECK(backwardKind(op) == BackwardKind::Rule);
  }
}
