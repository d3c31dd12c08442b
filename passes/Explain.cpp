// This file implements the communication report (see Explain.h).
#include "passes/Explain.h"

#include "ir/Collectives.h"

#include <map>
#include <tuple>

namespace dt {

namespace {

bool communicates(Op op) { return op != Op::LocalSlice && op != Op::LocalPartial; }

class Walker {
public:
  Walker(const Module &m, const Topology &topo) : m_(m), topo_(topo) {}

  void function(const Function &f, int64_t times, int depth) {
    if (depth > 64)
      return; // recursion is not a feature; the executor reports it
    block(f, f.body, times, depth);
  }

  std::vector<ExplainEntry> entries;

private:
  void block(const Function &f, const Block &b, int64_t times, int depth) {
    for (auto &in : b.insts) {
      if (opInfo(in.op).cls == OpClass::Collective) {
        auto key = std::make_tuple(f.name, &in);
        auto it = index_.find(key);
        if (it != index_.end()) {
          entries[it->second].count += times;
          continue;
        }
        ExplainEntry e{f.name,
                       in.loc,
                       in.op,
                       in.attrs.ints,
                       f.type(in.operands.at(0)),
                       f.type(in.results.at(0)),
                       0,
                       times};
        e.bytes = isConcrete(e.from.shape)
                      ? collectiveBytes(in.op, e.from, e.to, e.axes, sliceOffset(in.attrs))
                      : 0;
        e.crossNode = communicates(in.op) && topo_.crosses(*e.from.mesh, e.axes);
        e.tree = in.op == Op::AllReduce && in.attrs.str.rfind("tree ", 0) == 0;
        index_[key] = entries.size();
        entries.push_back(std::move(e));
      } else if ((in.op == Op::If || in.op == Op::While || (in.op == Op::For && in.attrs.flag)) &&
                 !in.regions.empty()) {
        // Counts unknown before the run: each region is listed as if it ran
        // once per time its statement runs.
        for (const Block &r : in.regions)
          block(f, r, times, depth);
      } else if (in.op == Op::For && in.attrs.ints.size() == 3 && in.attrs.ints[2] != 0 &&
                 !in.regions.empty()) {
        int64_t lo = in.attrs.ints[0], hi = in.attrs.ints[1], st = in.attrs.ints[2];
        uint64_t trips = forTripCount(lo, hi, st);
        int64_t inner = 0; // saturates: a count past int64 is shown as the limit
        if (trips > (uint64_t)INT64_MAX || __builtin_mul_overflow(times, (int64_t)trips, &inner))
          inner = INT64_MAX;
        block(f, in.regions[0], inner, depth);
      } else if (in.op == Op::Call || in.op == Op::Grad) {
        if (const Function *g = m_.find(in.attrs.str))
          function(*g, times, depth + 1);
      }
    }
  }

  const Module &m_;
  const Topology &topo_;
  std::map<std::tuple<std::string, const Inst *>, size_t> index_;
};

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

} // namespace

std::vector<ExplainEntry> collectCollectives(const Module &m, const std::string &entry,
                                             const Topology &topology) {
  Topology topo = topology;
  if (topo.multiNode() && topo.worldIds.empty())
    topo.worldIds = programDeviceIds(m);
  Walker w(m, topo);
  if (const Function *f = m.find(entry))
    w.function(*f, 1, 0);
  return std::move(w.entries);
}

std::string explainModule(const Module &m, const SourceManager &sources, const std::string &entry,
                          const Topology &topo) {
  auto entries = collectCollectives(m, entry, topo);
  std::string out;
  std::string lastHead;
  int64_t total = 0, steps = 0, comm = 0, crossSteps = 0, crossBytes = 0;
  for (auto &e : entries) {
    std::string head = e.function == entry ? "" : "in @" + e.function + ", ";
    if (e.loc.known()) {
      // A line inside an imported module names its file.
      if (e.loc.file > 0 && e.loc.file < sources.count())
        head += sources.path(e.loc.file) + ":" + std::to_string(e.loc.line);
      else
        head += "line " + std::to_string(e.loc.line);
      if (e.loc.file < sources.count())
        head += ": " + trim(sources.line(e.loc.file, e.loc.line));
    } else {
      head += "(no source line)";
    }
    if (head != lastHead)
      out += head + "\n";
    lastHead = head;
    out += "  " + std::string(opName(e.op)) + " over " + axesName(*e.from.mesh, e.axes) + ": " +
           e.from.layoutStr() + " -> " + e.to.layoutStr() + ", " + std::to_string(e.bytes) +
           " B per rank";
    if (e.count != 1)
      out += " x " + std::to_string(e.count);
    if (e.tree)
      out += ", the ranks' partial sums (subtree nodes) added in the fixed tree order";
    out += !communicates(e.op) ? " (local, no communication)\n"
           : e.crossNode       ? " (crosses nodes)\n"
                               : "\n";
    if (e.crossNode) {
      crossSteps += e.count;
      crossBytes += e.bytes * e.count;
    }
    total += e.bytes * e.count;
    steps += e.count;
    comm += communicates(e.op) ? e.count : 0;
  }
  if (entries.empty())
    out += "no collectives: every statement runs on local blocks\n";
  out += "total: " + std::to_string(steps) + " collective steps (" + std::to_string(comm) +
         " communicating), " + std::to_string(total) + " B per rank\n";
  if (topo.multiNode())
    out += "across nodes (" + std::to_string(topo.ranksPerNode) +
           " ranks per node): " + std::to_string(crossSteps) + " collective steps, " +
           std::to_string(crossBytes) + " B per rank\n";
  return out;
}

} // namespace dt
