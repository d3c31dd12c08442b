// This file implements the op table lookups and the small helpers of IR.h.
#include "ir/IR.h"

namespace dt {

static const OpInfo kOpInfos[] = {
#define OP(Enum, name, nopnds, nres, cls) {name, nopnds, nres, OpClass::cls},
#include "ir/Ops.def"
};

const OpInfo &opInfo(Op op) { return kOpInfos[(int)op]; }
const char *opName(Op op) { return kOpInfos[(int)op].name; }

bool parseOpName(const std::string &s, Op &out) {
  for (size_t i = 0; i < sizeof(kOpInfos) / sizeof(kOpInfos[0]); ++i)
    if (s == kOpInfos[i].name) {
      out = (Op)i;
      return true;
    }
  return false;
}

/// How an op is spelled in source, for messages.
const char *opDisplayName(Op op) {
  switch (op) {
  case Op::Add:
    return "+";
  case Op::Sub:
    return "-";
  case Op::Mul:
    return "*";
  case Op::Div:
    return "/";
  case Op::Pow:
    return "**";
  case Op::Mod:
    return "%";
  case Op::FloorDiv:
    return "//";
  case Op::Neg:
    return "-";
  case Op::MatMul:
    return "@";
  case Op::Eq:
    return "==";
  case Op::Ne:
    return "!=";
  case Op::Lt:
    return "<";
  case Op::Le:
    return "<=";
  case Op::Gt:
    return ">";
  case Op::Ge:
    return ">=";
  case Op::And:
    return "&&";
  case Op::Or:
    return "||";
  case Op::Not:
    return "!";
  case Op::Select:
    return "where";
  case Op::ReduceSum:
    return "sum";
  case Op::ReduceMax:
    return "max";
  case Op::ReduceMin:
    return "min";
  default:
    return opName(op);
  }
}

int Function::newValue(const TensorType &t, const std::string &name) {
  Value v;
  v.id = (int)values.size();
  v.type = t;
  v.name = name;
  values.push_back(std::move(v));
  return values.back().id;
}

Function *Module::find(const std::string &name) {
  for (auto &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

const Function *Module::find(const std::string &name) const {
  for (auto &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

MeshRef Module::findMesh(const std::string &name) const {
  for (auto &m : meshes)
    if (m->name == name)
      return m;
  return nullptr;
}

static void addUses(const Block &b, std::map<int, int> &uses) {
  for (const Inst &in : b.insts) {
    for (int o : in.operands)
      ++uses[o];
    for (const Block &r : in.regions)
      addUses(r, uses);
  }
}

std::map<int, int> useCounts(const Block &b) {
  std::map<int, int> uses;
  addUses(b, uses);
  return uses;
}

void forEachBlock(Block &b, const std::function<void(Block &)> &fn) {
  fn(b);
  for (Inst &in : b.insts)
    for (Block &r : in.regions)
      forEachBlock(r, fn);
}

uint64_t forTripCount(int64_t lo, int64_t hi, int64_t step) {
  if (step > 0 ? hi <= lo : hi >= lo)
    return 0;
  // Unsigned differences are exact for any int64 pair.
  uint64_t span = step > 0 ? (uint64_t)hi - (uint64_t)lo : (uint64_t)lo - (uint64_t)hi;
  uint64_t s = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
  return span / s + (span % s != 0);
}

} // namespace dt
