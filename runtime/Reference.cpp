// This file implements the reference evaluator's interpreter loop: frames,
// size-symbol binding, control flow (for, call, return) and the dispatch of
// every op to its kernel in RefKernels.h.
#include "runtime/Reference.h"

#include "runtime/Executor.h"

#include "ir/Collectives.h"

#include "runtime/CheckpointIO.h"
#include "runtime/TensorIO.h"

#include "runtime/Format.h"
#include "runtime/RefKernels.h"
#include "support/Diagnostics.h"

#include <chrono>
#include <map>

namespace dt {

struct ReferenceEvaluator::Frame {
  const Function &f;
  std::vector<HostTensor> vals;
  std::vector<bool> set;
  std::map<std::string, int64_t> syms; ///< size symbols bound at the call

  explicit Frame(const Function &fn)
      : f(fn), vals(fn.values.size()), set(fn.values.size(), false) {}

  const HostTensor &get(int id) const {
    if (id < 0 || id >= (int)vals.size() || !set[id])
      throw InternalError("reference evaluator: value %" + std::to_string(id) + " of `" + f.name +
                          "` is used before it is defined");
    return vals[id];
  }
  void put(int id, HostTensor t) {
    if (id < 0 || id >= (int)vals.size())
      throw InternalError("reference evaluator: bad value id %" + std::to_string(id));
    vals[id] = std::move(t);
    set[id] = true;
  }
  const TensorType &type(int id) const {
    if (id < 0 || id >= (int)f.values.size())
      throw InternalError("reference evaluator: bad value id %" + std::to_string(id));
    return f.values[id].type;
  }
  /// The concrete shape of a type, with this call's size symbols substituted.
  std::vector<int64_t> dims(const TensorType &t) const {
    std::vector<int64_t> r;
    for (auto &d : t.shape) {
      if (!d.isSym()) {
        r.push_back(d.value);
        continue;
      }
      auto it = syms.find(d.sym);
      if (it == syms.end())
        throw InternalError("reference evaluator: size `" + d.sym + "` of `" + t.str() + "` in `" +
                            f.name + "` is not bound; specialize the function first");
      r.push_back(it->second);
    }
    return r;
  }
};

ReferenceEvaluator::ReferenceEvaluator(const Module &m, std::ostream &out, LoopProgress *progress)
    : m_(m), out_(out), progress_(progress) {}

void ReferenceEvaluator::checkTrips(uint64_t trips, const Inst &in) const {
  if (maxLoopTrips_ > 0 && trips > (uint64_t)maxLoopTrips_)
    throw RuntimeFault(std::string("`") + opName(in.op) + "` loop at line " +
                       std::to_string(in.loc.line) + " runs more than " +
                       std::to_string(maxLoopTrips_) + " iterations (the run's loop limit)");
}

std::vector<HostTensor> ReferenceEvaluator::run(const std::string &fn,
                                                const std::vector<HostTensor> &args) {
  const Function *f = m_.find(fn);
  if (!f)
    throw RuntimeFault("no function `" + fn + "` to run");
  return call(*f, args, 0);
}

std::vector<HostTensor> ReferenceEvaluator::call(const Function &f,
                                                 const std::vector<HostTensor> &args, int depth) {
  if (depth > kMaxCallDepth)
    throw RuntimeFault("calls nest deeper than " + std::to_string(kMaxCallDepth) + " at `" +
                       f.name + "`");
  if (args.size() != f.params.size())
    throw RuntimeFault("`" + f.name + "` takes " + std::to_string(f.params.size()) +
                       " arguments, got " + std::to_string(args.size()));
  Frame fr(f);
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType &t = fr.type(f.params[i]);
    const HostTensor &a = args[i];
    auto mismatch = [&]() {
      return RuntimeFault("argument " + std::to_string(i) + " of `" + f.name + "`: expected `" +
                          t.str() + "`, got " + dtypeName(a.dtype) + ref::dimsStr(a.shape));
    };
    if (a.dtype != t.dtype || a.rank() != t.rank())
      throw mismatch();
    for (int d = 0; d < t.rank(); ++d) {
      const Dim &dim = t.shape[d];
      if (!dim.isSym()) {
        if (dim.value != a.shape[d])
          throw mismatch();
      } else if (auto it = fr.syms.find(dim.sym); it != fr.syms.end()) {
        if (it->second != a.shape[d])
          throw mismatch();
      } else {
        fr.syms[dim.sym] = a.shape[d];
      }
    }
    fr.put(f.params[i], a);
  }
  for (size_t i = 0; i < f.body.args.size() && i < args.size(); ++i)
    if (f.body.args[i] != f.params[i])
      fr.put(f.body.args[i], args[i]);
  return runBlock(f.body, fr, depth);
}

std::vector<HostTensor> ReferenceEvaluator::runBlock(const Block &b, Frame &fr, int depth) {
  for (auto &in : b.insts) {
    if (in.op == Op::Return || in.op == Op::Yield) {
      std::vector<HostTensor> r;
      for (int id : in.operands)
        r.push_back(fr.get(id));
      return r;
    }
    std::vector<HostTensor> res;
    try {
      res = evalInst(in, fr, depth);
    } catch (const RuntimeFault &f) {
      rethrowAt(f, in.loc, moduleFileOf(sources_, in.loc, programFile_), in.op == Op::Call);
    }
    if (res.size() != in.results.size())
      throw InternalError(std::string("reference evaluator: `") + opName(in.op) + "` produced " +
                          std::to_string(res.size()) + " values for " +
                          std::to_string(in.results.size()) + " results");
    for (size_t i = 0; i < res.size(); ++i) {
      const TensorType &t = fr.type(in.results[i]);
      auto want = fr.dims(t);
      if (res[i].shape != want || res[i].dtype != t.dtype)
        throw InternalError(std::string("reference evaluator: `") + opName(in.op) + "` computed " +
                            dtypeName(res[i].dtype) + ref::dimsStr(res[i].shape) +
                            " but its result %" + std::to_string(in.results[i]) + " has type `" +
                            t.str() + "`");
      fr.put(in.results[i], std::move(res[i]));
    }
  }
  return {}; // a block without terminator returns nothing (the verifier rejects it)
}

std::vector<HostTensor> ReferenceEvaluator::evalInst(const Inst &in, Frame &fr, int depth) {
  auto opnd = [&](size_t i) -> const HostTensor & {
    if (i >= in.operands.size())
      throw InternalError(std::string("reference evaluator: `") + opName(in.op) +
                          "` is missing operand " + std::to_string(i));
    return fr.get(in.operands[i]);
  };
  auto resType = [&]() -> const TensorType & {
    if (in.results.empty())
      throw InternalError(std::string("reference evaluator: `") + opName(in.op) +
                          "` has no result");
    return fr.type(in.results[0]);
  };
  auto attrInt = [&](size_t i) {
    if (i >= in.attrs.ints.size())
      throw InternalError(std::string("reference evaluator: `") + opName(in.op) +
                          "` is missing integer attribute " + std::to_string(i));
    return in.attrs.ints[i];
  };
  auto one = [](HostTensor t) { return std::vector<HostTensor>{std::move(t)}; };
  const OpInfo &info = opInfo(in.op);
  switch (info.cls) {
  case OpClass::Elementwise1:
    return one(ref::unary(in.op, opnd(0), resType().dtype));
  case OpClass::Elementwise2:
    return one(ref::binary(in.op, opnd(0), opnd(1), resType().dtype));
  case OpClass::Elementwise3:
    return one(ref::select(opnd(0), opnd(1), opnd(2), resType().dtype));
  case OpClass::Reduce:
    return one(ref::reduce(in.op, opnd(0), in.attrs.ints, resType().dtype));
  case OpClass::Collective:
    if (in.op == Op::SliceGather) { // rows [offset, offset + n) of the dim it cuts
      int64_t d = fr.type(in.operands[0]).placements[in.attrs.ints.at(0)].dim;
      int64_t n = fr.dims(resType())[d], lo = sliceOffset(in.attrs);
      HostTensor ids(DType::I64, {n});
      for (int64_t i = 0; i < n; ++i)
        ids.data<int64_t>()[i] = lo + i;
      return one(ref::indexSelect(opnd(0), ids, d));
    }
    return one(opnd(0)); // one step of a relayout: the global value does not change
  case OpClass::Effect:
    if (in.op == Op::CheckFactor)
      return one(opnd(0)); // exact on the global view: nothing to check
    break;
  default:
    break;
  }
  switch (in.op) {
  case Op::Const:
    return one(ref::constantOf(in.attrs, resType().dtype, fr.dims(resType())));
  case Op::Fill:
    if (constCount(in.attrs, resType().dtype) != 1)
      throw InternalError("reference evaluator: `fill` needs one value");
    return one(ref::constantOf(in.attrs, resType().dtype, fr.dims(resType())));
  case Op::Random: {
    // A run-time seed (one host i64[] operand) or a constant one.
    uint64_t seed =
        in.operands.size() == 1 ? (uint64_t)opnd(0).data<int64_t>()[0] : (uint64_t)attrInt(0);
    return one(ref::random(in.attrs.str, seed, resType().dtype, fr.dims(resType())));
  }
  case Op::Iota:
    return one(ref::iota(attrInt(0), resType().dtype, fr.dims(resType())));
  case Op::MatMul:
    return one(ref::matmul(ref::matmulOperand(opnd(0), in, 0), ref::matmulOperand(opnd(1), in, 1),
                           resType().dtype));
  case Op::Einsum: {
    std::vector<HostTensor> xs;
    for (size_t i = 0; i < in.operands.size(); ++i)
      xs.push_back(opnd(i));
    return one(ref::einsum(in.attrs.str, xs, resType().dtype));
  }
  case Op::Transpose:
    return one(ref::transpose(opnd(0), in.attrs.ints));
  case Op::Reshape:
    return one(ref::reshape(opnd(0), fr.dims(resType())));
  case Op::Broadcast:
    return one(ref::broadcastTo(opnd(0), fr.dims(resType())));
  case Op::IndexSelect:
    return one(ref::indexSelect(opnd(0), opnd(1), attrInt(0)));
  case Op::IndexAdd:
    return one(ref::indexAdd(opnd(0), opnd(1), opnd(2), attrInt(0)));
  case Op::Cumsum:
    return one(ref::cumsum(opnd(0), attrInt(0), in.attrs.flag));
  case Op::Relayout:
  case Op::Distribute:
  case Op::ToHost:
    return one(opnd(0)); // placements do not change global values
  case Op::Print: {
    std::vector<const HostTensor *> vals;
    for (size_t k = 0; k < in.operands.size(); ++k)
      vals.push_back(&opnd(k));
    if (progress_)
      progress_->clear();
    out_ << formatPrintLine(in.attrs, vals) << "\n";
    return {};
  }
  case Op::Time: {
    HostTensor t(DType::F64, {});
    t.data<double>()[0] =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return one(std::move(t));
  }
  case Op::LoadFile: {
    auto dims = fr.dims(resType());
    return one(loadFileBlock(in, resType(), std::vector<int64_t>(dims.size(), 0), dims));
  }
  case Op::LoadCheckpoint: {
    auto dims = fr.dims(resType());
    return one(loadCheckpointBlock(in, resType(), std::vector<int64_t>(dims.size(), 0), dims));
  }
  case Op::SaveCheckpoint: {
    // One writer holding every value whole: one shard file, a block a value.
    std::vector<TensorType> types;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      Shape s;
      for (int64_t d : opnd(k).shape)
        s.push_back(Dim::lit(d));
      types.push_back(TensorType{opnd(k).dtype, s, nullptr, {}});
    }
    CheckpointPlan plan = planCheckpoint(in, types, {0});
    std::vector<int64_t> slots(plan.chunks, 0);
    try {
      beginCheckpointSave(plan.dir);
      if (!plan.blocks.empty()) {
        CheckpointShardWriter w(plan.dir, checkpointShardName(0), plan.index.chunkBytes);
        for (auto &b : plan.blocks) {
          const CheckpointBlock &cb =
              plan.index.tensors.at(plan.names[b.operand]).blocks.at(b.tensorBlock);
          const HostTensor &h = opnd(b.operand);
          auto crcs = w.write(cb, (uint64_t)dtypeSize(h.dtype), h.raw());
          for (size_t i = 0; i < crcs.size(); ++i)
            slots[b.firstChunk + i] = crcs[i];
        }
        w.finish();
      }
      fillCheckpointChecksums(plan, slots);
      commitCheckpointSave(plan.dir, plan.index);
    } catch (const TensorFileError &err) {
      abandonCheckpointSave(plan.dir);
      throw RuntimeFault(checkpointWhere(in) + ": " + err.what());
    }
    return {};
  }
  case Op::SaveFile: {
    std::vector<TensorType> types; // host types of the actual (concrete) shapes
    for (size_t k = 0; k < in.operands.size(); ++k) {
      Shape s;
      for (int64_t d : opnd(k).shape)
        s.push_back(Dim::lit(d));
      types.push_back(TensorType{opnd(k).dtype, s, nullptr, {}});
    }
    // Into a temporary file renamed over the target (TensorIO.h).
    const std::string path = parseFileOperand(in.attrs.str).path;
    const std::string temp = saveTempPath(path, saveNonce());
    createSaveFile(in, types, temp);
    try {
      for (size_t k = 0; k < in.operands.size(); ++k)
        writeFileBlock(in, k, types[k], std::vector<int64_t>(opnd(k).shape.size(), 0), opnd(k),
                       temp);
    } catch (...) {
      abandonSave(temp);
      throw;
    }
    commitSave(temp, path);
    return {};
  }
  case Op::Call: {
    const Function *callee = m_.find(in.attrs.str);
    if (!callee)
      throw InternalError("reference evaluator: unknown callee `" + in.attrs.str + "`");
    std::vector<HostTensor> args;
    for (size_t i = 0; i < in.operands.size(); ++i)
      args.push_back(opnd(i));
    return call(*callee, args, depth + 1);
  }
  case Op::For: {
    if (in.regions.size() != 1)
      throw InternalError("reference evaluator: `for` needs exactly one body region");
    const Block &body = in.regions[0];
    size_t skip = in.attrs.flag ? 2 : 0; // run-time bounds come first
    if (in.operands.size() < skip || body.args.size() != in.operands.size() - skip + 1)
      throw InternalError("reference evaluator: `for` body has the wrong number of arguments");
    int64_t lo = skip ? opnd(0).data<int64_t>()[0] : attrInt(0);
    int64_t hi = skip ? opnd(1).data<int64_t>()[0] : attrInt(1), step = attrInt(2);
    if (step == 0)
      throw InternalError("reference evaluator: `for` with step 0");
    std::vector<HostTensor> cur;
    for (size_t i = skip; i < in.operands.size(); ++i)
      cur.push_back(opnd(i));
    const uint64_t n = forTripCount(lo, hi, step);
    checkTrips(n, in);
    // Only the outermost loops of the entry function report progress.
    LoopReport report(loopNest_, depth == 0 ? progress_ : nullptr, in.loc, n);
    for (uint64_t k = 0; k < n; ++k) {
      int64_t i = (int64_t)((uint64_t)lo + k * (uint64_t)step); // no overflow near the limits
      HostTensor iv(DType::I64, {});
      iv.data<int64_t>()[0] = i;
      fr.put(body.args[0], iv);
      for (size_t k = 0; k < cur.size(); ++k)
        fr.put(body.args[k + 1], cur[k]);
      auto next = runBlock(body, fr, depth);
      if (next.size() != cur.size())
        throw InternalError("reference evaluator: `for` body yields " +
                            std::to_string(next.size()) + " values for " +
                            std::to_string(cur.size()) + " loop-carried values");
      cur = std::move(next);
      report.step(k + 1);
    }
    return cur;
  }
  case Op::If: {
    if (in.regions.size() != 2 || in.operands.size() != 1)
      throw InternalError("reference evaluator: malformed `if`");
    return runBlock(in.regions[opnd(0).data<uint8_t>()[0] ? 0 : 1], fr, depth);
  }
  case Op::While: {
    if (in.regions.size() != 1 || in.operands.empty() ||
        in.regions[0].args.size() != in.operands.size() - 1)
      throw InternalError("reference evaluator: malformed `while`");
    const Block &body = in.regions[0];
    bool go = opnd(0).data<uint8_t>()[0] != 0;
    std::vector<HostTensor> cur;
    for (size_t i = 1; i < in.operands.size(); ++i)
      cur.push_back(opnd(i));
    for (uint64_t trips = 1; go; ++trips) {
      checkTrips(trips, in);
      for (size_t k = 0; k < cur.size(); ++k)
        fr.put(body.args[k], cur[k]);
      auto next = runBlock(body, fr, depth);
      if (next.size() != cur.size() + 1)
        throw InternalError("reference evaluator: `while` body yields the wrong number of values");
      go = next[0].data<uint8_t>()[0] != 0;
      cur.assign(std::make_move_iterator(next.begin() + 1), std::make_move_iterator(next.end()));
    }
    return cur;
  }
  case Op::Grad:
    throw InternalError("grad reached the reference evaluator; run the autodiff pass first");
  default:
    break;
  }
  throw InternalError(std::string("reference evaluator: no semantics for `") + opName(in.op) + "`");
}

} // namespace dt
