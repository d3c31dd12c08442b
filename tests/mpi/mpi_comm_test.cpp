// The multi-process communicator test (runtime/MpiComm.h), run by ctest as
// `mpirun -np 2 dt_mpi_comm_test` and `-np 4`: every collective x dtype x
// reduce op on the world with uneven and zero counts and in-place buffers,
// then mesh-axis groups (rows and columns of a 2x2 mesh at np 4) and a
// partition that leaves a rank out. Each rank counts its own failures; the
// exit status is 0 when no rank failed (an MPI_Allreduce of the counts),
// 77 (ctest SKIP) when dtensor was built without MPI.
//
// `dt_mpi_comm_test --hybrid K` checks the hybrid communicators instead
// (runtime/HybridComm.h): each process hosts K ranks as threads, and every
// collective runs on the world, on the world in reverse and interleaved
// orders, and on groups that mix several ranks of one process with ranks of
// others (strided "columns").
#include "runtime/CpuBackend.h"
#include "runtime/HybridComm.h"
#include "runtime/MpiComm.h"
#include "runtime/ThreadComm.h"
#include "support/Diagnostics.h"
#include "support/LowPrecision.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace dt;

namespace {

std::atomic<int> failures{0};

void fail(int rank, const std::string &what) {
  if (failures++ < 10)
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
}

/// A small typed buffer read and written as doubles.
struct Buf {
  DType dt;
  std::vector<unsigned char> bytes;
  Buf(DType t, int64_t n) : dt(t), bytes((size_t)(n * dtypeSize(t)) + 1) {}
  void *data() { return bytes.data(); }
  unsigned char *at(int64_t i) { return bytes.data() + i * dtypeSize(dt); }
  double get(int64_t i) {
    double v = 0;
    switch (dt) {
    case DType::F32: {
      float x;
      std::memcpy(&x, at(i), 4);
      v = x;
      break;
    }
    case DType::F64:
      std::memcpy(&v, at(i), 8);
      break;
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, at(i), 4);
      v = x;
      break;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, at(i), 8);
      v = (double)x;
      break;
    }
    case DType::Bool:
      v = *at(i);
      break;
    case DType::BF16:
    case DType::F16: {
      uint16_t x;
      std::memcpy(&x, at(i), 2);
      v = dt == DType::BF16 ? bf16ToFloat(x) : halfToFloat(x);
      break;
    }
    }
    return v;
  }
  void set(int64_t i, double v) {
    switch (dt) {
    case DType::F32: {
      float x = (float)v;
      std::memcpy(at(i), &x, 4);
      break;
    }
    case DType::F64:
      std::memcpy(at(i), &v, 8);
      break;
    case DType::I32: {
      int32_t x = (int32_t)v;
      std::memcpy(at(i), &x, 4);
      break;
    }
    case DType::I64: {
      int64_t x = (int64_t)v;
      std::memcpy(at(i), &x, 8);
      break;
    }
    case DType::Bool:
      *at(i) = (unsigned char)v;
      break;
    case DType::BF16:
    case DType::F16: {
      uint16_t x = dt == DType::BF16 ? doubleToBf16(v) : doubleToHalf(v);
      std::memcpy(at(i), &x, 2);
      break;
    }
    }
  }
};

double value(DType dt, int r, int64_t i, int salt) {
  int64_t h = (r * 131 + i * 7 + salt * 17 + (i * i) % 13) % 17;
  return dt == DType::Bool ? (double)(h & 1) : (double)(h - 8);
}

double reduced(DType dt, ReduceOp op, int n, int64_t i, int salt) {
  double acc = value(dt, 0, i, salt);
  for (int r = 1; r < n; ++r) {
    double v = value(dt, r, i, salt);
    if (dt == DType::Bool)
      acc = op == ReduceOp::Min ? (double)((int)acc & (int)v) : (double)((int)acc | (int)v);
    else
      acc = op == ReduceOp::Max   ? std::max(acc, v)
            : op == ReduceOp::Min ? std::min(acc, v)
                                  : acc + v;
  }
  if (op == ReduceOp::Avg)
    acc = isFloat(dt) ? acc / n : std::trunc(acc / n);
  return acc;
}

bool near(DType dt, double a, double b) {
  // bf16/f16: sums of these small integers are exact; an average over a
  // group that is not a power of two rounds once.
  double rel = dt == DType::BF16 ? 0x1p-8 : dt == DType::F16 ? 0x1p-11 : 1e-6;
  return isFloat(dt) ? std::fabs(a - b) <= rel * std::max(1.0, std::fabs(b)) : a == b;
}

// bf16/f16: the values are small integers, so every combine is exact.
const DType kDTypes[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                         DType::Bool, DType::BF16, DType::F16};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};

std::vector<int64_t> uneven(int n, int p) {
  std::vector<int64_t> c(n);
  for (int r = 0; r < n; ++r)
    c[r] = p == 0 ? 5 : p == 1 ? (r * 3 + 1) % 4 : p == 2 ? 3000 + r : 0;
  return c;
}

/// Every collective of `c` (group rank r of n), checked against the formulas above.
void checkAll(Communicator &c, const std::string &name) {
  const int r = c.rank(), n = c.size();
  auto where = [&](const char *coll, DType dt) {
    return name + " " + coll + " " + dtypeName(dt) + " n=" + std::to_string(n);
  };
  for (DType dt : kDTypes) {
    for (ReduceOp op : kOps) {
      if (dt == DType::Bool && op == ReduceOp::Avg)
        continue;
      for (int64_t count : {0, 1, 7, 1000})
        for (bool inPlace : {false, true}) {
          Buf in(dt, count), out(dt, count);
          for (int64_t i = 0; i < count; ++i)
            in.set(i, value(dt, r, i, (int)count));
          Buf &dst = inPlace ? in : out;
          c.allReduce(in.data(), dst.data(), count, dt, op);
          for (int64_t i = 0; i < count; ++i)
            if (!near(dt, dst.get(i), reduced(dt, op, n, i, (int)count))) {
              fail(r, where("allReduce", dt) + " " + reduceOpName(op));
              break;
            }
        }
      for (int p = 0; p < 4; ++p)
        for (int mode = 0; mode < 3; ++mode) { // separate, recv = my block, recv = send
          std::vector<int64_t> counts = uneven(n, p), off = countOffsets(counts);
          Buf in(dt, off[n]), out(dt, counts[r]);
          for (int64_t i = 0; i < off[n]; ++i)
            in.set(i, value(dt, r, i, p));
          void *recv = mode == 0 ? out.data() : mode == 1 ? (void *)in.at(off[r]) : in.data();
          c.reduceScatterV(in.data(), recv, counts, dt, op);
          for (int64_t i = 0; i < counts[r]; ++i) {
            double got = mode == 0 ? out.get(i) : mode == 1 ? in.get(off[r] + i) : in.get(i);
            if (!near(dt, got, reduced(dt, op, n, off[r] + i, p))) {
              fail(r, where("reduceScatterV", dt) + " mode " + std::to_string(mode));
              break;
            }
          }
        }
    }
    for (int p = 0; p < 4; ++p)
      for (bool inPlace : {false, true}) {
        std::vector<int64_t> counts = uneven(n, p), off = countOffsets(counts);
        Buf in(dt, counts[r]), out(dt, off[n]);
        for (int64_t i = 0; i < counts[r]; ++i)
          in.set(i, value(dt, r, i, p));
        const void *send = in.data();
        if (inPlace) {
          std::memcpy(out.at(off[r]), in.data(), counts[r] * dtypeSize(dt));
          send = out.at(off[r]);
        }
        c.allGatherV(send, out.data(), counts, dt);
        for (int j = 0; j < n; ++j)
          for (int64_t i = 0; i < counts[j]; ++i)
            if (out.get(off[j] + i) != value(dt, j, i, p))
              fail(r, where("allGatherV", dt));
      }
    for (int p = 0; p < 3; ++p) {
      auto sc = [&](int i, int j) -> int64_t {
        return p == 0 ? 2 : p == 1 ? (i * 2 + j * 3) % 5 : 0;
      };
      std::vector<int64_t> sendCounts(n), recvCounts(n);
      for (int j = 0; j < n; ++j)
        sendCounts[j] = sc(r, j), recvCounts[j] = sc(j, r);
      std::vector<int64_t> so = countOffsets(sendCounts), ro = countOffsets(recvCounts);
      Buf in(dt, so[n]), out(dt, ro[n]);
      for (int j = 0; j < n; ++j)
        for (int64_t k = 0; k < sendCounts[j]; ++k)
          in.set(so[j] + k, value(dt, r, j * 100 + k, 9));
      c.allToAllV(in.data(), sendCounts, out.data(), recvCounts, dt);
      for (int j = 0; j < n; ++j)
        for (int64_t k = 0; k < recvCounts[j]; ++k)
          if (out.get(ro[j] + k) != value(dt, j, r * 100 + k, 9))
            fail(r, where("allToAllV", dt));
    }
    for (int root = 0; root < n; ++root) {
      Buf b(dt, 100);
      for (int64_t i = 0; i < 100; ++i)
        b.set(i, value(dt, r, i, root));
      c.broadcast(b.data(), 100, dt, root);
      for (int64_t i = 0; i < 100; ++i)
        if (b.get(i) != value(dt, root, i, root)) {
          fail(r, where("broadcast", dt));
          break;
        }
    }
  }
  c.barrier();
  try {
    uint8_t b = 1;
    c.allReduce(&b, &b, 1, DType::Bool, ReduceOp::Avg);
    fail(r, name + " bool avg accepted");
  } catch (const RuntimeFault &) {
  }
}

/// A rank whose program says where it is (Device::at), with MPI's communicators.
class SiteDevice final : public CpuDevice {
public:
  explicit SiteDevice(MpiWorld &w) : CpuDevice(w.rank()), w_(w) {}
  Communicator &world() override { return w_.world(); }
  Communicator &group(const std::vector<int> &members) override { return w_.group(members); }

private:
  MpiWorld &w_;
};

/// A deadlock on 3 ranks: ranks 0 and 2 all-reduce on the world (line 7)
/// while rank 1 all-reduces on the group {1, 2} (line 9), which rank 2 never
/// joins. The timeout report must name where the other ranks wait
/// (FaultWatch::peerSites) instead of "no answer".
int deadlockMain(int argc, char **argv) {
  MpiWorld world(&argc, &argv);
  world.watch().setTimeout(2);
  SiteDevice dev(world);
  world.watch().setDevice(&dev);
  Inst onWorld, onGroup;
  onWorld.op = onGroup.op = Op::AllReduce;
  onWorld.loc.line = 7, onGroup.loc.line = 9;
  onWorld.loc.col = onGroup.loc.col = 3;
  // With DT_FAULT_PRETEND_NODES=1 every process is on a node of its own, so
  // the report can only learn where the others wait by asking (MpiSites.h).
  if (world.rank() == 0) {
    int onNode = 0;
    for (const PeerProcess &p : world.watch().peers())
      onNode += p.sameNode;
    std::printf("mpi_comm_test --deadlock: %d of %d processes on rank 0's node\n", onNode,
                world.size());
    std::fflush(stdout);
  }
  int v = 1;
  Communicator *pair = world.rank() > 0 ? &world.group({1, 2}) : nullptr;
  if (world.rank() == 1) {
    dev.at(&onGroup);
    pair->allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
  } else {
    dev.at(&onWorld);
    world.world().allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
  }
  std::printf("mpi_comm_test --deadlock: the collectives completed\n");
  return 1;
}

/// A rank that ends early (`--ended early`: rank 1 returns without the
/// world all-reduce of rank 0, line 7) or stops after its last collective
/// (`--ended stopped`: rank 1 stops itself at exit, once rank 0 has ended):
/// the report names rank 1 "at the end of its program", or as stopped
/// (FaultWatch::kEndOfRun), instead of hanging in MPI_Finalize.
int endedMain(int argc, char **argv, const std::string &how) {
  MpiWorld world(&argc, &argv);
  world.watch().setTimeout(2);
  SiteDevice dev(world);
  world.watch().setDevice(&dev);
  Inst onWorld;
  onWorld.op = Op::AllReduce;
  onWorld.loc.line = 7, onWorld.loc.col = 3;
  int v = 1;
  if (how == "early") {
    if (world.rank() == 0) {
      dev.at(&onWorld);
      world.world().allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
    }
  } else {
    world.world().allReduce(&v, &v, 1, DType::I32, ReduceOp::Sum);
    if (world.rank() == 1)
      raise(SIGSTOP);
  }
  world.watch().setDevice(nullptr);
  return 0; // ~MpiWorld waits for the others (the end-of-run barrier)
}

/// The hybrid communicators: K thread ranks in each process.
int hybridMain(int argc, char **argv, int k) {
  MpiWorld world(&argc, &argv, /*threads=*/true);
  ThreadWorld threads(k);
  threads.setRankBase(world.rank() * k);
  HybridWorld hybrid(world, threads, k);
  const int w = hybrid.size();
  std::vector<std::vector<int>> groups;
  std::vector<int> all, reversed, interleaved;
  for (int r = 0; r < w; ++r)
    all.push_back(r), reversed.push_back(w - 1 - r);
  for (int i = 0; i < w; ++i)
    interleaved.push_back(i % 2 ? i / 2 : w - 1 - i / 2);
  threads.run([&](int t) {
    const int me = world.rank() * k + t;
    checkAll(hybrid.world(me), "hybrid world");
    checkAll(hybrid.group(me, reversed), "hybrid reversed");
    checkAll(hybrid.group(me, interleaved), "hybrid interleaved");
    for (int stride : {2, 3}) {
      std::vector<int> col;
      for (int j = me % stride; j < w; j += stride)
        col.push_back(j);
      checkAll(hybrid.group(me, col), "hybrid stride " + std::to_string(stride));
    }
    if (&hybrid.world(me) != &hybrid.group(me, all))
      fail(me, "hybrid group() not cached");
  });
  int local = failures, total = 0;
  world.world().allReduce(&local, &total, 1, DType::I32, ReduceOp::Sum);
  if (world.rank() == 0)
    std::printf("mpi_comm_test --hybrid %d: %d processes, %d ranks, %s (%d failures)\n", k,
                world.size(), w, total ? "FAILED" : "passed", total);
  return total ? 1 : 0;
}

/// Two worlds in one process (two embedded sessions), made in the same order
/// on every process, then used at once by a thread each: every collective
/// and every group a world makes stays within that world (each has its own
/// copy of MPI_COMM_WORLD), so no sum mixes the other world's values.
int twoWorldsMain(int argc, char **argv) {
  MpiWorld a(&argc, &argv, /*threads=*/true), b(nullptr, nullptr, /*threads=*/true);
  const int me = a.rank(), n = a.size();
  std::atomic<int> wrong{0};
  // My pair {2j, 2j + 1} (alone when the last is missing).
  const std::vector<int> pair =
      (me | 1) < n ? std::vector<int>{me & ~1, me | 1} : std::vector<int>{me};
  int64_t pairSum = 0;
  for (int r : pair)
    pairSum += r + 1;
  auto use = [&](MpiWorld &w, int64_t scale) {
    for (int i = 0; i < 200; ++i) {
      // Groups made lazily, at once in both threads: the pair and the world.
      Communicator &g = i % 2 ? w.world() : w.group(pair);
      int64_t v = scale * (me + 1);
      g.allReduce(&v, &v, 1, DType::I64, ReduceOp::Sum);
      if (v != scale * (i % 2 ? (int64_t)n * (n + 1) / 2 : pairSum))
        ++wrong;
    }
  };
  std::thread ta([&] { use(a, 1); }), tb([&] { use(b, 1000); });
  ta.join();
  tb.join();
  int local = wrong.load(), total = 0;
  a.world().allReduce(&local, &total, 1, DType::I32, ReduceOp::Sum);
  if (me == 0)
    std::printf("mpi_comm_test --two-worlds: %d processes, %s (%d wrong sums)\n", n,
                total ? "FAILED" : "passed", total);
  return total ? 1 : 0;
}

/// A world made after another ended (a host program's second mpi session):
/// MPI ends at the process's exit, not with the first world.
int sequentialMain(int argc, char **argv) {
  int64_t first = 0, second = 0;
  int n = 0, me = 0;
  {
    MpiWorld a(&argc, &argv);
    n = a.size(), me = a.rank();
    first = me + 1;
    a.world().allReduce(&first, &first, 1, DType::I64, ReduceOp::Sum);
  }
  MpiWorld b(nullptr, nullptr);
  second = 10 * (me + 1);
  b.world().allReduce(&second, &second, 1, DType::I64, ReduceOp::Sum);
  const bool ok = first == (int64_t)n * (n + 1) / 2 && second == 10 * first;
  if (me == 0)
    std::printf("mpi_comm_test --sequential: %d processes, %s\n", n, ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (!MpiWorld::available()) {
    std::printf("SKIP: dtensor was built without MPI\n");
    return 77;
  }
  try {
    if (argc == 2 && std::string(argv[1]) == "--deadlock")
      return deadlockMain(argc, argv);
    if (argc == 3 && std::string(argv[1]) == "--ended")
      return endedMain(argc, argv, argv[2]);
    if (argc == 2 && std::string(argv[1]) == "--sequential")
      return sequentialMain(argc, argv);
    if (argc == 2 && std::string(argv[1]) == "--two-worlds")
      return twoWorldsMain(argc, argv);
    if (argc == 3 && std::string(argv[1]) == "--hybrid")
      return hybridMain(argc, argv, std::atoi(argv[2]));
    MpiWorld world(&argc, &argv);
    const int me = world.rank(), n = world.size();
    checkAll(world.world(), "world");
    if (n % 2 == 0) {
      // A (n/2) x 2 mesh: rows {2i, 2i+1} and columns {j, j+2, ...}, both axes in turn.
      Communicator &row = world.group({me & ~1, me | 1});
      std::vector<int> colMembers;
      for (int j = me % 2; j < n; j += 2)
        colMembers.push_back(j);
      Communicator &col = world.group(colMembers);
      checkAll(row, "row");
      checkAll(col, "col");
      if (&world.group({me & ~1, me | 1}) != &row)
        fail(me, "group() not cached");
      int64_t v = me;
      row.allReduce(&v, &v, 1, DType::I64, ReduceOp::Sum);
      if (v != (me & ~1) + (me | 1))
        fail(me, "row sum");
    }
    // A partition that leaves rank 0 out when there is more than one rank.
    std::vector<int> rest;
    for (int j = (n > 1 ? 1 : 0); j < n; ++j)
      rest.push_back(j);
    Communicator *p = world.partition({rest});
    if ((p == nullptr) != (n > 1 && me == 0))
      fail(me, "partition membership");
    if (p)
      checkAll(*p, "partition");
    int local = failures, total = 0;
    world.world().allReduce(&local, &total, 1, DType::I32, ReduceOp::Sum);
    if (me == 0)
      std::printf("mpi_comm_test: %d ranks, %s (%d failures)\n", n, total ? "FAILED" : "passed",
                  total);
    return total ? 1 : 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mpi_comm_test: %s\n", e.what());
    return 1;
  }
}
