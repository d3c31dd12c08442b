// This file implements the kernel IR's tables, builders, verifier and ABI
// helpers (KernelIR.h). The printer and the hash live in KernelIRPrint.cpp,
// the reference interpreter in KernelInterp.cpp.
#include "codegen/KernelIR.h"

#include "support/Diagnostics.h"
#include "support/LowPrecision.h"
#include "support/Random.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace dt {

namespace {
struct KOpInfo {
  const char *name;
  int arity;
};
const KOpInfo kKOpInfos[] = {
#define KOP(E, name, arity) {name, arity},
#include "codegen/KernelOps.def"
};
static_assert(sizeof(kKOpInfos) / sizeof(kKOpInfos[0]) == kNumKOps);

bool isNumeric(DType t) { return t != DType::Bool; }
} // namespace

const char *kopName(KOp op) { return kKOpInfos[(int)op].name; }
int kopArity(KOp op) { return kKOpInfos[(int)op].arity; }
int nodeArity(const KNode &n) { return n.op == KOp::Random && n.args[0] >= 0 ? 1 : kopArity(n.op); }

std::optional<KOp> parseKOp(const std::string &s) {
  for (int i = 0; i < kNumKOps; ++i)
    if (s == kKOpInfos[i].name)
      return (KOp)i;
  return std::nullopt;
}

std::optional<KOp> kopFromOp(Op op) {
  switch (op) {
  case Op::Const:
  case Op::Fill:
    return KOp::Const;
  case Op::Random:
    return KOp::Random;
  case Op::Iota:
    return KOp::Iota;
    // Elementwise ops are kernel nodes of the same enum name (KernelOps.def).
#define KOP(E, name, arity)                                                                        \
  case Op::E:                                                                                      \
    return KOp::E;
#define DT_KOP_ELEMENTWISE_ONLY
#include "codegen/KernelOps.def"
  default:
    return std::nullopt;
  }
}

bool isCompare(KOp op) { return op >= KOp::Eq && op <= KOp::Ge; }

bool isTranscendental(KOp op) {
  switch (op) {
  case KOp::Exp:
  case KOp::Log:
  case KOp::Sqrt:
  case KOp::Rsqrt:
  case KOp::Tanh:
  case KOp::Sigmoid:
  case KOp::Sin:
  case KOp::Cos:
  case KOp::Erf:
  case KOp::Log1p:
  case KOp::Expm1:
    return true;
  default:
    return false;
  }
}

const char *kreduceName(KReduce r) {
  switch (r) {
  case KReduce::None:
    return "none";
  case KReduce::Sum:
    return "sum";
  case KReduce::Max:
    return "max";
  case KReduce::Min:
    return "min";
  }
  return "?";
}

// --- typing ---------------------------------------------------------------------

/// The result dtype of a node, or an error message.
static std::string typeNode(const Kernel &k, const KNode &n, int self, DType &out) {
  int ar = nodeArity(n);
  for (int i = 0; i < ar; ++i)
    if (n.args[i] < 0 || n.args[i] >= self)
      return std::string("`") + kopName(n.op) + "` operand " + std::to_string(i) +
             " does not name an earlier node";
  auto at = [&](int i) { return k.nodes[n.args[i]].dtype; };
  std::string op = kopName(n.op);
  switch (n.op) {
  case KOp::Load:
    if (n.index < 0 || n.index >= (int)k.inputs.size())
      return "`load` of a missing input";
    out = k.inputs[n.index];
    return "";
  case KOp::Const:
    out = n.dtype;
    return "";
  case KOp::Random:
    if (!isFloat(n.dtype))
      return "`random` needs a float dtype";
    if (ar == 1 && at(0) != DType::I32 && at(0) != DType::I64)
      return "`random` needs an i32 or i64 seed";
    if (ar == 1 && n.slot >= 0)
      return "`random` with a run-time seed has no lifted one";
    out = n.dtype;
    return "";
  case KOp::Gather:
    if (n.index < 0 || n.index >= (int)k.inputs.size())
      return "`gather` of a missing input";
    if (n.dim < 0 || n.dim >= k.rank)
      return "`gather` of a missing iteration dim";
    if (at(0) != DType::I32 && at(0) != DType::I64)
      return "`gather` needs an i32 or i64 index";
    if (k.isUniformInput(n.index))
      return "`gather` of a uniform input";
    out = k.inputs[n.index];
    return "";
  case KOp::Iota:
    if (n.index < 0 || n.index >= k.rank)
      return "`iota` of a missing iteration dim";
    if (!isNumeric(n.dtype))
      return "`iota` needs a numeric dtype";
    out = n.dtype;
    return "";
  case KOp::Cast:
    out = n.dtype;
    return "";
  case KOp::Not:
    if (at(0) != DType::Bool)
      return "`not` needs a bool operand";
    out = DType::Bool;
    return "";
  case KOp::Neg:
  case KOp::Abs:
  case KOp::Relu:
    if (!isNumeric(at(0)))
      return "`" + op + "` needs a numeric operand";
    out = at(0);
    return "";
  case KOp::Select:
    if (at(0) != DType::Bool)
      return "`select` condition must be bool";
    if (at(1) != at(2))
      return "`select` arms have different dtypes";
    out = at(1);
    return "";
  default:
    break;
  }
  if (isTranscendental(n.op)) {
    if (!isFloat(at(0)))
      return "`" + op + "` needs a float operand";
    out = at(0);
    return "";
  }
  // Binary.
  if (at(0) != at(1))
    return "`" + op + "` operands have different dtypes";
  if (isCompare(n.op)) {
    out = DType::Bool;
    return "";
  }
  if (n.op == KOp::And || n.op == KOp::Or) {
    if (at(0) != DType::Bool)
      return "`" + op + "` needs bool operands";
    out = DType::Bool;
    return "";
  }
  if (!isNumeric(at(0)))
    return "`" + op + "` needs numeric operands";
  out = at(0);
  return "";
}

std::string verifyKernel(const Kernel &k) {
  if (k.rank < 0)
    return "negative rank";
  if (k.outputs.empty())
    return "kernel has no outputs";
  if (k.uniformInputs.size() > k.inputs.size())
    return "a uniform flag for a missing input";
  if (k.innerStrideHints.size() > k.inputs.size())
    return "a stride hint for a missing input";
  for (int h : k.innerStrideHints)
    if (h < -1 || h > 1)
      return "an inner stride hint other than -1, 0 or 1";
  for (int i = 0; i < (int)k.nodes.size(); ++i) {
    DType t;
    std::string err = typeNode(k, k.nodes[i], i, t);
    if (!err.empty())
      return "%" + std::to_string(i) + ": " + err;
    if (t != k.nodes[i].dtype)
      return "%" + std::to_string(i) + ": recorded dtype " + dtypeName(k.nodes[i].dtype) +
             " but the operands give " + dtypeName(t);
  }
  // Lifted values: slots 0..numLifted-1, each once, on float consts and
  // random nodes only.
  std::vector<bool> slotUsed(k.nodes.size(), false);
  for (int i = 0; i < (int)k.nodes.size(); ++i) {
    const KNode &n = k.nodes[i];
    if (n.slot < 0)
      continue;
    if (!(n.op == KOp::Random || (n.op == KOp::Const && isFloat(n.dtype))))
      return "%" + std::to_string(i) + ": only a float const or a random node has a slot";
    if (n.slot >= (int)k.nodes.size() || slotUsed[n.slot])
      return "%" + std::to_string(i) + ": slot " + std::to_string(n.slot) +
             " out of range or taken";
    slotUsed[n.slot] = true;
  }
  if (std::find(slotUsed.begin(), slotUsed.begin() + numLifted(k), false) !=
      slotUsed.begin() + numLifted(k))
    return "lifted slots are not numbered 0..n-1";
  std::vector<int> stored(k.outputs.size(), 0);
  for (const KStore &s : k.stores) {
    if (s.output < 0 || s.output >= (int)k.outputs.size())
      return "store to a missing output";
    if (s.node < 0 || s.node >= (int)k.nodes.size())
      return "store of a missing node";
    if (k.nodes[s.node].dtype != k.outputs[s.output])
      return "store of a " + std::string(dtypeName(k.nodes[s.node].dtype)) + " node to " +
             dtypeName(k.outputs[s.output]) + " output " + std::to_string(s.output);
    if (++stored[s.output] > 1)
      return "output " + std::to_string(s.output) + " stored twice";
    if (!s.scatter())
      continue;
    if (s.key >= (int)k.nodes.size() || k.nodes[s.key].op != KOp::Load ||
        (k.nodes[s.key].dtype != DType::I32 && k.nodes[s.key].dtype != DType::I64))
      return "a scatter store's key must be a load of i32/i64 ids";
    if (s.dim < 0 || s.dim >= k.rank)
      return "a scatter store's dim is out of range";
    if (k.outputs[s.output] != DType::F32 && k.outputs[s.output] != DType::F64)
      return "a scatter store adds f32 or f64";
    if (k.reduce != KReduce::None)
      return "a kernel with a scatter store has no reduction";
    if (&s != scatterStore(k))
      return "a kernel has at most one scatter store";
  }
  for (size_t o = 0; o < stored.size(); ++o)
    if (!stored[o])
      return "output " + std::to_string(o) + " is never stored";
  if ((k.reduce == KReduce::None) != k.reduceDims.empty())
    return "reduce op and reduced dims must be given together";
  for (size_t i = 0; i < k.reduceDims.size(); ++i) {
    int d = k.reduceDims[i];
    if (d < 0 || d >= k.rank)
      return "reduced dim out of range";
    if (i && d <= k.reduceDims[i - 1])
      return "reduced dims must be sorted and unique";
  }
  if (k.reduce != KReduce::None)
    for (DType t : k.outputs)
      if (t == DType::Bool)
        return "bool outputs cannot be reduced";
  return "";
}

// --- builders ---------------------------------------------------------------------

static int push(Kernel &k, KNode n) {
  DType t;
  std::string err = typeNode(k, n, (int)k.nodes.size(), t);
  if (!err.empty())
    throw InternalError("kernel builder: " + err);
  n.dtype = t;
  k.nodes.push_back(n);
  return (int)k.nodes.size() - 1;
}

int Kernel::addInput(DType t, bool uniform) {
  inputs.push_back(t);
  if (uniform) {
    uniformInputs.resize(inputs.size(), false);
    uniformInputs.back() = true;
  }
  return (int)inputs.size() - 1;
}

std::vector<bool> invariantNodes(const Kernel &k) {
  std::vector<bool> inv(k.nodes.size(), false);
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode &n = k.nodes[i];
    switch (n.op) {
    case KOp::Const:
      inv[i] = true;
      break;
    case KOp::Load:
      inv[i] = k.isUniformInput(n.index);
      break;
    case KOp::Random:
    case KOp::Iota:
    case KOp::Gather: // reads a different element at every point
      break;
    default: {
      bool all = true;
      for (int a = 0; a < nodeArity(n); ++a)
        all = all && inv[n.args[a]];
      inv[i] = all;
    }
    }
  }
  return inv;
}
int Kernel::addOutput(DType t) {
  outputs.push_back(t);
  return (int)outputs.size() - 1;
}
int Kernel::load(int input) {
  KNode n;
  n.op = KOp::Load;
  n.index = input;
  return push(*this, n);
}
/// An equal constant already in `k` (same dtype and bits: NaN equals NaN,
/// -0 differs from 0), so each constant is one node however many copies of
/// a splat the fusion pass gave a kernel.
static int findConstant(const Kernel &k, const KNode &n) {
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode &c = k.nodes[i];
    if (c.op == KOp::Const && c.dtype == n.dtype && c.ivalue == n.ivalue &&
        std::memcmp(&c.value, &n.value, sizeof(double)) == 0)
      return (int)i;
  }
  return -1;
}

int Kernel::constant(double v, DType t) {
  KNode n;
  n.op = KOp::Const;
  n.dtype = t;
  n.value = v;
  n.ivalue = saturatingInt(v, t);
  int same = findConstant(*this, n);
  return same >= 0 ? same : push(*this, n);
}
int Kernel::constantInt(int64_t v, DType t) {
  KNode n;
  n.op = KOp::Const;
  n.dtype = t;
  n.value = (double)v;
  n.ivalue = v;
  int same = findConstant(*this, n);
  return same >= 0 ? same : push(*this, n);
}
int Kernel::unary(KOp op, int a) {
  if (kopArity(op) != 1 || op == KOp::Cast)
    throw InternalError(std::string("kernel builder: `") + kopName(op) + "` is not unary");
  KNode n;
  n.op = op;
  n.args[0] = a;
  return push(*this, n);
}
int Kernel::cast(int a, DType t) {
  KNode n;
  n.op = KOp::Cast;
  n.dtype = t;
  n.args[0] = a;
  return push(*this, n);
}
int Kernel::binary(KOp op, int a, int b) {
  if (kopArity(op) != 2)
    throw InternalError(std::string("kernel builder: `") + kopName(op) + "` is not binary");
  KNode n;
  n.op = op;
  n.args = {a, b, -1};
  return push(*this, n);
}
int Kernel::select(int c, int a, int b) {
  KNode n;
  n.op = KOp::Select;
  n.args = {c, a, b};
  return push(*this, n);
}
int Kernel::random(RandomKind kind, uint64_t s, DType t) {
  KNode n;
  n.op = KOp::Random;
  n.random = kind;
  n.seed = s;
  n.dtype = t;
  return push(*this, n);
}
int Kernel::randomSeeded(RandomKind kind, int seedNode, DType t) {
  KNode n;
  n.op = KOp::Random;
  n.random = kind;
  n.args[0] = seedNode;
  n.dtype = t;
  return push(*this, n);
}
int Kernel::iota(int dim, DType t) {
  KNode n;
  n.op = KOp::Iota;
  n.index = dim;
  n.dtype = t;
  return push(*this, n);
}
int Kernel::gather(int input, int index, int dim) {
  KNode n;
  n.op = KOp::Gather;
  n.index = input;
  n.dim = dim;
  n.args = {index, -1, -1};
  return push(*this, n);
}
void Kernel::store(int output, int node) {
  if (output < 0 || output >= (int)outputs.size() || node < 0 || node >= (int)nodes.size() ||
      nodes[node].dtype != outputs[output])
    throw InternalError("kernel builder: bad store");
  stores.push_back({output, node});
}
void Kernel::scatterStore(int output, int node, int key, int d) {
  store(output, node);
  stores.back().key = key;
  stores.back().dim = d;
}
void Kernel::setReduce(KReduce op, std::vector<int> dims) {
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  reduce = dims.empty() ? KReduce::None : op;
  reduceDims = op == KReduce::None ? std::vector<int>{} : std::move(dims);
}

// --- queries ------------------------------------------------------------------------

std::vector<bool> gatheredInputs(const Kernel &k, int dim) {
  std::vector<bool> g(k.inputs.size(), false);
  for (const KNode &n : k.nodes)
    if (n.op == KOp::Gather && (dim < 0 || n.dim == dim) && n.index >= 0 && n.index < (int)g.size())
      g[n.index] = true;
  return g;
}

bool usesGlobalIndex(const Kernel &k) {
  for (const KNode &n : k.nodes)
    if (n.op == KOp::Random || n.op == KOp::Iota)
      return true;
  return false;
}

const KStore *scatterStore(const Kernel &k) {
  for (const KStore &s : k.stores)
    if (s.scatter())
      return &s;
  return nullptr;
}

int scatterIdsInput(const Kernel &k) {
  const KStore *s = scatterStore(k);
  return s && s->key < (int)k.nodes.size() ? k.nodes[s->key].index : -1;
}

int64_t numParams(const Kernel &k) {
  int64_t r = k.rank;
  return r * (1 + (int64_t)k.inputs.size() + (int64_t)k.outputs.size()) +
         (usesGlobalIndex(k) ? 2 * r : 0);
}

bool isReducedDim(const Kernel &k, int d) {
  return std::find(k.reduceDims.begin(), k.reduceDims.end(), d) != k.reduceDims.end();
}

bool deterministicTreeSum(const Kernel &k) {
  return k.deterministic && k.reduce == KReduce::Sum && !k.reduceDims.empty();
}

bool deterministicChains(const Kernel &k) {
  return deterministicTreeSum(k) && isReducedDim(k, k.rank - 1);
}

std::vector<int64_t> kernelParams(const Kernel &k, const std::vector<int64_t> &shape,
                                  const std::vector<std::vector<int64_t>> &inStrides,
                                  const std::vector<std::vector<int64_t>> &outStrides,
                                  const std::vector<int64_t> &globalOffset,
                                  const std::vector<int64_t> &globalStrides) {
  auto need = [&](const std::vector<int64_t> &v, const char *what) {
    if ((int)v.size() != k.rank)
      throw InternalError(std::string("kernelParams: ") + what + " has the wrong rank");
  };
  need(shape, "shape");
  if (inStrides.size() != k.inputs.size() || outStrides.size() != k.outputs.size())
    throw InternalError("kernelParams: wrong number of stride vectors");
  std::vector<int64_t> p(shape);
  for (auto &s : inStrides)
    need(s, "input strides"), p.insert(p.end(), s.begin(), s.end());
  for (auto &s : outStrides)
    need(s, "output strides"), p.insert(p.end(), s.begin(), s.end());
  if (usesGlobalIndex(k)) {
    std::vector<int64_t> off =
        globalOffset.empty() ? std::vector<int64_t>(k.rank, 0) : globalOffset;
    std::vector<int64_t> gs(k.rank, 1);
    if (globalStrides.empty())
      for (int d = k.rank - 2; d >= 0; --d)
        gs[d] = gs[d + 1] * shape[d + 1];
    else
      gs = globalStrides;
    need(off, "global offset");
    need(gs, "global strides");
    p.insert(p.end(), off.begin(), off.end());
    p.insert(p.end(), gs.begin(), gs.end());
  }
  return p;
}

// --- constants and RNG --------------------------------------------------------------

int64_t kernelConstInt(const KNode &n) {
  switch (n.dtype) {
  case DType::Bool:
    return n.ivalue != 0;
  case DType::I32:
    return (int32_t)n.ivalue; // wraps, as an int64 -> i32 cast
  case DType::I64:
    return n.ivalue;
  default:
    return 0;
  }
}

int64_t saturatingInt(double v, DType t) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::I32:
    if (std::isnan(v))
      return 0;
    if (v >= 2147483648.0)
      return std::numeric_limits<int32_t>::max();
    if (v <= -2147483649.0)
      return std::numeric_limits<int32_t>::min();
    return (int64_t)v;
  case DType::I64:
    if (std::isnan(v))
      return 0;
    if (v >= 9223372036854775808.0)
      return std::numeric_limits<int64_t>::max();
    if (v < -9223372036854775808.0)
      return std::numeric_limits<int64_t>::min();
    return (int64_t)v;
  default:
    return 0;
  }
}

double kernelConstFloat(const KNode &n) {
  switch (n.dtype) {
  case DType::F32:
    return (double)(float)n.value;
  case DType::BF16: // rounded once from the f64, nearest even
    return bf16ToFloat(doubleToBf16(n.value));
  case DType::F16:
    return halfToFloat(doubleToHalf(n.value));
  default:
    return n.value;
  }
}

uint64_t kernelSplitmix64(uint64_t x) { return splitmix64(x); }
float kernelUniform01(uint64_t seed, uint64_t i) { return uniform01(seed, i); }
float kernelNormal(uint64_t seed, uint64_t i) { return normal(seed, i); }

} // namespace dt
