// This file implements the executor's output steps (see runtime/RankRunner.h):
// print, printing lines, `time()`, `save` and checkpoints, gathered to world
// rank 0 through the world communicator.
#include "runtime/RankRunner.h"

#include "ir/Topology.h"

#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "runtime/Blas.h"
#include "runtime/CheckpointIO.h"
#include "runtime/CollectiveSteps.h"
#include "runtime/CpuBackend.h"
#include "runtime/Format.h"
#include "runtime/Inspect.h"
#include "runtime/LocalOps.h"
#include "runtime/RefKernels.h"
#include "runtime/TensorIO.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

namespace dt::exec {

/// The value as the program wrote it: `id` before the gathers lowering put
/// in front of print `in` (they carry the print's source location, which
/// spans the whole printed expression; a `relayout` the user wrote there
/// spans only its name, and is the program's, not the print's).
int RankRunner::printedSource(const Inst &in, const Frame &fr, int id) {
  int src = id;
  // A `slice_gather` takes rows of its operand: the slice is the value.
  while (fr.def[src] && opInfo(fr.def[src]->op).cls == OpClass::Collective &&
         fr.def[src]->op != Op::SliceGather && fr.def[src]->loc.line == in.loc.line &&
         fr.def[src]->loc.col == in.loc.col && fr.def[src]->loc.endCol == in.loc.endCol)
    src = fr.def[src]->operands.at(0);
  return src;
}

void RankRunner::print(const Inst &in, Frame &fr) {
  if (in.attrs.flag)
    return printLine(in, fr);
  int id = in.operands.at(0), src = sh_.wantSources ? printedSource(in, fr, id) : id;
  const TensorType &type = fr.type(id), &srcType = fr.type(src);
  dev_.at(&in);
  std::vector<Slot> blocks = gather(type, fr.vals.at(id));
  std::vector<Slot> srcBlocks;
  if (sh_.wantSources)
    srcBlocks = gather(srcType, fr.vals.at(src), true); // every device's component
  if (rank_ != 0)
    return;
  // Written as the program runs (a long loop shows its prints as it goes);
  // a stream that cannot take them (a full disk, a closed pipe) fails the
  // run rather than losing values.
  PrintedValue pv{
      in.attrs.str, assembleGlobal(type, blocks, sh_.m.deterministic), srcType, false, {}, {}};
  std::string text = formatTensor(pv.value) + "\n";
  if (sh_.opts.components)
    text += "components of `" + pv.label + "`: " + pv.type.str() + "\n" +
            formatComponents(pv.type, srcBlocks);
  if (sh_.opts.visualize)
    text += visualizeLayout(pv.type);
  writeOutput(text);
  sh_.printed->push_back(std::move(pv));
}

void RankRunner::printLine(const Inst &in, Frame &fr) {
  dev_.at(&in);
  std::vector<HostTensor> globals;
  std::string extra; // --components and --layout, after the line
  for (size_t k = 0; k < in.operands.size(); ++k) {
    int id = in.operands[k], src = sh_.wantSources ? printedSource(in, fr, id) : id;
    const TensorType &type = fr.type(id), &srcType = fr.type(src);
    std::vector<Slot> blocks = gather(type, fr.vals.at(id));
    std::vector<Slot> srcBlocks;
    if (sh_.wantSources)
      srcBlocks = gather(srcType, fr.vals.at(src), true); // every device's component
    if (rank_ != 0)
      continue;
    globals.push_back(assembleGlobal(type, blocks, sh_.m.deterministic));
    if (sh_.opts.components)
      extra += "components of `" + printItemLabel(in.attrs, k) + "`: " + srcType.str() + "\n" +
               formatComponents(srcType, srcBlocks);
    if (sh_.opts.visualize)
      extra += visualizeLayout(srcType);
  }
  if (rank_ != 0)
    return;
  std::vector<const HostTensor *> vals;
  PrintedValue pv;
  for (auto &g : globals)
    vals.push_back(&g);
  pv.isLine = true;
  pv.line = formatPrintLine(in.attrs, vals);
  pv.lineValues = std::move(globals);
  writeOutput(pv.line + "\n" + extra);
  sh_.printed->push_back(std::move(pv));
}

void RankRunner::writeOutput(const std::string &text) {
  if (sh_.opts.progress)
    sh_.opts.progress->clear();
  std::ostream &out = sh_.out;
  errno = 0;
  out << text;
  out.flush();
  if (!out)
    throw RuntimeFault(std::string("cannot write the output of `print`") +
                       (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

HostTensor RankRunner::timeValue(const Inst &in) {
  HostTensor t(DType::F64, {});
  dev_.synchronize(); // the work before `time()` has run (a GPU's stream)
  t.data<double>()[0] =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  dev_.at(&in);
  dev_.hostWorld().broadcast(t.raw(), 1, DType::F64, 0);
  return t;
}

namespace {
/// Ends a collective file step on every rank of `world` with the failing
/// rank `root`'s message (sent as bytes), so the run names the cause
/// whichever rank it reports.
[[noreturn]] void failEverywhere(Communicator &world, std::string why, int root) {
  int64_t n = (int64_t)why.size();
  world.broadcast(&n, 1, DType::I64, root);
  why.resize((size_t)n);
  world.broadcast(why.data(), n, DType::Bool, root);
  throw RuntimeFault(why);
}
} // namespace

void RankRunner::saveFile(const Inst &in, Frame &fr) {
  if (!dev_.computes()) { // zeros would replace the file (RankStats::savesSkipped)
    ++rs_.stats.savesSkipped;
    return;
  }
  std::vector<TensorType> types;
  for (int o : in.operands)
    types.push_back(fr.type(o));
  Communicator &world = dev_.hostWorld(); // host flags and checksums
  // The blocks go to a temporary file that rank 0 renames over the target
  // once all are written (TensorIO.h): a failed or killed save leaves the
  // old file. A failure to create it on rank 0 is every rank's: it is
  // broadcast with the name so no rank waits for a file that will not come.
  int64_t head[2] = {1, 0}; // ok, nonce
  std::string why;
  const std::string path = parseFileOperand(in.attrs.str).path;
  if (rank_ == 0) {
    head[1] = (int64_t)saveNonce();
    try {
      createSaveFile(in, types, saveTempPath(path, (uint64_t)head[1]));
    } catch (const RuntimeFault &f) {
      head[0] = 0;
      why = f.what();
    }
  }
  world.broadcast(head, 2, DType::I64, 0);
  if (!head[0])
    failEverywhere(world, why, 0);
  const std::string temp = saveTempPath(path, (uint64_t)head[1]);
  try {
    writeSaveBlocks(in, fr, types, temp);
    // Test hook (tests/ckpt): die as a crash would, mid-save.
    if (rank_ == 0 && sh_.opts.crashInSave)
      std::_Exit(86);
    world.barrier();
  } catch (...) {
    if (rank_ == 0)
      abandonSave(temp);
    throw;
  }
  // Rank 0 replaces the file; a failure there is every rank's.
  int32_t ok = 1;
  if (rank_ == 0) {
    try {
      commitSave(temp, path);
    } catch (const RuntimeFault &f) {
      ok = 0;
      why = f.what();
    }
  }
  world.broadcast(&ok, 1, DType::I32, 0);
  if (!ok)
    failEverywhere(world, why, 0);
}

void RankRunner::writeSaveBlocks(const Inst &in, Frame &fr, const std::vector<TensorType> &types,
                                 const std::string &temp) {
  for (size_t k = 0; k < in.operands.size(); ++k) {
    const TensorType &t = types[k];
    if (t.isHost()) {
      if (rank_ == 0)
        writeFileBlock(in, k, t, std::vector<int64_t>(t.rank(), 0),
                       dev_.toHost(get(fr, in.operands[k], in)), temp);
      continue;
    }
    int64_t mr = meshRank(t);
    if (mr < 0)
      continue;
    auto c = t.mesh->coords(mr);
    bool writer = true;
    for (size_t a = 0; a < t.placements.size(); ++a)
      writer &= t.placements[a].isShard() || c[a] == 0;
    if (!writer)
      continue;
    LocalBlock b = localBlock(t, mr);
    writeFileBlock(in, k, t, b.offset, dev_.toHost(get(fr, in.operands[k], in)), temp);
  }
}

void RankRunner::saveCheckpoint(const Inst &in, Frame &fr) {
  if (!dev_.computes()) {
    ++rs_.stats.savesSkipped;
    return;
  }
  std::vector<TensorType> types;
  for (int o : in.operands)
    types.push_back(fr.type(o));
  CheckpointPlan plan = planCheckpoint(in, types, sh_.ids);
  Communicator &world = dev_.hostWorld(); // host flags and checksums
  dev_.at(&in);
  // A failure is every rank's, with the failing rank's message.
  auto agree = [&](int32_t ok, const std::string &why) {
    world.broadcast(&ok, 1, DType::I32, 0);
    if (!ok)
      failEverywhere(world, why, 0);
  };
  std::string why;
  int32_t ok = 1;
  if (rank_ == 0) {
    try {
      beginCheckpointSave(plan.dir);
    } catch (const TensorFileError &e) {
      ok = 0;
      why = checkpointWhere(in) + ": " + e.what();
    }
  }
  agree(ok, why);
  // Slots: every chunk's checksum, then this rank's failure flag.
  std::vector<int64_t> slots(plan.chunks + 1, 0), all(plan.chunks + 1, 0);
  try {
    std::optional<CheckpointShardWriter> w;
    for (auto &b : plan.blocks) {
      if (b.writer != rank_)
        continue;
      if (!w)
        w.emplace(plan.dir, checkpointShardName(rank_), plan.index.chunkBytes);
      const CheckpointBlock &cb =
          plan.index.tensors.at(plan.names[b.operand]).blocks.at(b.tensorBlock);
      HostTensor h = dev_.toHost(get(fr, in.operands[b.operand], in));
      if ((uint64_t)h.bytes() != b.bytes)
        throw InternalError("executor: rank " + std::to_string(rank_) + " holds " +
                            std::to_string(h.bytes()) + " bytes of `" + plan.names[b.operand] +
                            "`, its checkpoint block has " + std::to_string(b.bytes));
      auto crcs = w->write(cb, (uint64_t)dtypeSize(h.dtype), h.raw());
      for (size_t i = 0; i < crcs.size(); ++i)
        slots[b.firstChunk + i] = crcs[i];
    }
    if (w)
      w->finish();
  } catch (const TensorFileError &e) {
    slots.back() = 1;
    why = checkpointWhere(in) + ": " + e.what();
  }
  // Test hook (tests/ckpt): die as a crash would, between shards.
  if (rank_ == 0 && sh_.opts.crashInSave)
    std::_Exit(86);
  world.allReduce(slots.data(), all.data(), (int64_t)all.size(), DType::I64, ReduceOp::Sum);
  if (all.back()) {
    if (rank_ == 0)
      abandonCheckpointSave(plan.dir);
    int64_t mine = slots.back() ? rank_ : INT64_MAX, first = 0;
    world.allReduce(&mine, &first, 1, DType::I64, ReduceOp::Min);
    failEverywhere(world, why, (int)first);
  }
  if (rank_ == 0) {
    try {
      all.pop_back();
      fillCheckpointChecksums(plan, all);
      commitCheckpointSave(plan.dir, plan.index);
    } catch (const TensorFileError &e) {
      ok = 0;
      why = checkpointWhere(in) + ": " + e.what();
      abandonCheckpointSave(plan.dir);
    }
  }
  agree(ok, why);
}

} // namespace dt::exec
