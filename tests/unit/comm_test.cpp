// Unit tests of the shared-memory communicators (runtime/ThreadComm.h): every
// collective x dtype x reduce op on groups of 1, 2, 3, 4, 6 and 8 ranks with
// uneven and zero counts and in-place buffers; mesh sub-groups (rows and
// columns of 3x2 and 2x4 meshes) running concurrently; 1000 back-to-back
// iterations to shake out races; argument mismatches; fault injection. Every
// test that runs ranks is guarded by a watchdog so that a hang fails loudly.
#include "runtime/Communicator.h"
#include "runtime/HostTensor.h"
#include "runtime/ThreadComm.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

#include <cstring>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

using namespace dt;

namespace {

/// Kills the process if the scope is not left within `seconds` (a deadlocked collective).
class Watchdog {
public:
  Watchdog(const char *what, int seconds)
      : t_([this, what, seconds] {
          std::unique_lock<std::mutex> lk(m_);
          if (!cv_.wait_for(lk, std::chrono::seconds(seconds), [&] { return done_; })) {
            std::fprintf(stderr, "watchdog: `%s` still running after %d s: deadlock\n", what,
                         seconds);
            std::fflush(stderr);
            std::_Exit(124);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lk(m_);
      done_ = true;
    }
    cv_.notify_all();
    t_.join();
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread t_;
};

/// Failures reported by rank threads, checked on the test thread (keeps doctest single-threaded).
struct Errors {
  std::mutex m;
  std::vector<std::string> list;
  void add(const std::string &s) {
    std::lock_guard<std::mutex> lk(m);
    if (list.size() < 8)
      list.push_back(s);
  }
  void check() {
    for (auto &s : list)
      FAIL_CHECK(s);
    CHECK(list.empty());
  }
};

const DType kDTypes[] = {DType::F32,  DType::F64,  DType::I32, DType::I64,
                         DType::Bool, DType::BF16, DType::F16};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};
const int kSizes[] = {1, 2, 3, 4, 6, 8};

/// The deterministic input of rank r at element i (small integers, exact in every dtype).
double inputValue(DType dt, int r, int64_t i, int salt) {
  int64_t h = (r * 131 + i * 7 + salt * 17 + (i * i) % 13) % 17;
  return dt == DType::Bool ? (double)(h & 1) : (double)(h - 8);
}

HostTensor makeInput(DType dt, int r, int64_t n, int salt, int64_t base = 0) {
  HostTensor t(dt, {n});
  for (int64_t i = 0; i < n; ++i)
    t.set(i, inputValue(dt, r, base + i, salt));
  return t;
}

/// op over ranks 0..n-1 of inputValue(r, i), in rank order like the communicators.
double expectedReduce(DType dt, ReduceOp op, int n, int64_t i, int salt) {
  double acc = inputValue(dt, 0, i, salt);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(dt, r, i, salt);
    if (dt == DType::Bool)
      acc = op == ReduceOp::Min ? (double)((int)acc & (int)v) : (double)((int)acc | (int)v);
    else if (op == ReduceOp::Max)
      acc = std::max(acc, v);
    else if (op == ReduceOp::Min)
      acc = std::min(acc, v);
    else
      acc += v;
  }
  if (op == ReduceOp::Avg)
    acc = isFloat(dt) ? acc / n : std::trunc(acc / n);
  return acc;
}

bool near(DType dt, double got, double want) {
  // bf16/f16 round each combine (sums of these small integers are exact; an
  // average by a group size that is not a power of two rounds once).
  double rel = dt == DType::BF16 ? 0x1p-8 : dt == DType::F16 ? 0x1p-11 : 1e-6;
  return isFloat(dt) ? std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want)) : got == want;
}

std::string where(const char *coll, DType dt, ReduceOp op, int n, int r, int64_t i, double got,
                  double want) {
  return std::string(coll) + " " + dtypeName(dt) + " " + reduceOpName(op) +
         " n=" + std::to_string(n) + " rank " + std::to_string(r) + " elem " + std::to_string(i) +
         ": got " + std::to_string(got) + ", want " + std::to_string(want);
}

bool reducible(DType dt, ReduceOp op) { return !(dt == DType::Bool && op == ReduceOp::Avg); }

/// Uneven counts with zeros for a group of n: pattern p selects the shape.
std::vector<int64_t> unevenCounts(int n, int p) {
  std::vector<int64_t> c(n);
  for (int r = 0; r < n; ++r) {
    switch (p) {
    case 0:
      c[r] = 5;
      break; // even
    case 1:
      c[r] = (r * 3 + 1) % 4;
      break; // uneven, zeros
    case 2:
      c[r] = r == n - 1 ? 0 : 9000 + r;
      break; // large (crosses reduction blocks)
    case 3:
      c[r] = 0;
      break; // empty
    default:
      c[r] = (r % 2) ? 0 : 2 * r + 1; // every other rank empty
    }
  }
  return c;
}

} // namespace

TEST_CASE("comm: allReduce every dtype, op and group size, in place and not") {
  for (int n : kSizes) {
    Watchdog wd("allReduce", 120);
    ThreadWorld world(n);
    Errors errs;
    world.run([&](int r) {
      Communicator &c = world.world(r);
      for (DType dt : kDTypes)
        for (ReduceOp op : kOps) {
          if (!reducible(dt, op))
            continue;
          for (int64_t count : {0, 1, 7, 3 * n + 1, 20000})
            for (bool inPlace : {false, true}) {
              int salt = (int)count + inPlace;
              HostTensor in = makeInput(dt, r, count, salt);
              HostTensor out = inPlace ? in : HostTensor(dt, {count});
              c.allReduce(in.raw(), out.raw(), count, dt, op);
              for (int64_t i = 0; i < count; ++i) {
                double want = expectedReduce(dt, op, n, i, salt);
                if (!near(dt, out.get(i), want)) {
                  errs.add(where("allReduce", dt, op, n, r, i, out.get(i), want));
                  break;
                }
              }
            }
        }
    });
    errs.check();
  }
}

TEST_CASE("comm: allGatherV uneven and zero counts, every dtype, in place") {
  for (int n : kSizes) {
    Watchdog wd("allGatherV", 120);
    ThreadWorld world(n);
    Errors errs;
    world.run([&](int r) {
      Communicator &c = world.world(r);
      for (DType dt : kDTypes)
        for (int p = 0; p < 5; ++p)
          for (bool inPlace : {false, true}) {
            std::vector<int64_t> counts = unevenCounts(n, p);
            std::vector<int64_t> off = countOffsets(counts);
            HostTensor out(dt, {off[n]});
            HostTensor in = makeInput(dt, r, counts[r], p);
            const void *send = in.raw();
            if (inPlace) {
              std::memcpy((char *)out.raw() + off[r] * dtypeSize(dt), in.raw(), in.bytes());
              send = (char *)out.raw() + off[r] * dtypeSize(dt);
            }
            c.allGatherV(send, out.raw(), counts, dt);
            for (int j = 0; j < n; ++j)
              for (int64_t i = 0; i < counts[j]; ++i) {
                double want = inputValue(dt, j, i, p), got = out.get(off[j] + i);
                if (got != want)
                  errs.add(where("allGatherV", dt, ReduceOp::Sum, n, r, i, got, want));
              }
          }
    });
    errs.check();
  }
}

TEST_CASE("comm: reduceScatterV every dtype and op, uneven counts, in place") {
  for (int n : kSizes) {
    Watchdog wd("reduceScatterV", 120);
    ThreadWorld world(n);
    Errors errs;
    world.run([&](int r) {
      Communicator &c = world.world(r);
      for (DType dt : kDTypes)
        for (ReduceOp op : kOps) {
          if (!reducible(dt, op))
            continue;
          for (int p = 0; p < 5; ++p)
            for (int mode = 0; mode < 3;
                 ++mode) { // 0: separate, 1: recv = my block, 2: recv = send
              std::vector<int64_t> counts = unevenCounts(n, p);
              std::vector<int64_t> off = countOffsets(counts);
              int salt = p * 3 + mode;
              HostTensor in = makeInput(dt, r, off[n], salt);
              HostTensor out(dt, {counts[r]});
              void *recv = mode == 0   ? out.raw()
                           : mode == 1 ? (char *)in.raw() + off[r] * dtypeSize(dt)
                                       : in.raw();
              c.reduceScatterV(in.raw(), recv, counts, dt, op);
              HostTensor view = mode == 0 ? out : HostTensor(dt, {counts[r]});
              if (mode != 0)
                std::memcpy(view.raw(), recv, view.bytes());
              for (int64_t i = 0; i < counts[r]; ++i) {
                double want = expectedReduce(dt, op, n, off[r] + i, salt);
                if (!near(dt, view.get(i), want)) {
                  errs.add(where("reduceScatterV", dt, op, n, r, i, view.get(i), want));
                  break;
                }
              }
            }
        }
    });
    errs.check();
  }
}

TEST_CASE("comm: allToAllV uneven and zero counts, every dtype, overlapping buffers") {
  for (int n : kSizes) {
    Watchdog wd("allToAllV", 120);
    ThreadWorld world(n);
    Errors errs;
    // sc(i, j): elements rank i sends to rank j; the value of element k is a function of (i, j, k).
    auto sc = [](int i, int j, int p) -> int64_t {
      return p == 0 ? 3 : p == 1 ? (i * 2 + j * 3) % 5 : p == 2 ? (i == j ? 0 : 3000 + i) : 0;
    };
    auto val = [](DType dt, int i, int j, int64_t k) { return inputValue(dt, i, j * 1000 + k, 5); };
    world.run([&](int r) {
      Communicator &c = world.world(r);
      for (DType dt : kDTypes)
        for (int p = 0; p < 4; ++p)
          for (bool sameBuffer : {false, true}) {
            std::vector<int64_t> sendCounts(n), recvCounts(n);
            for (int j = 0; j < n; ++j)
              sendCounts[j] = sc(r, j, p), recvCounts[j] = sc(j, r, p);
            std::vector<int64_t> so = countOffsets(sendCounts), ro = countOffsets(recvCounts);
            HostTensor in(dt, {std::max(so[n], ro[n])});
            for (int j = 0; j < n; ++j)
              for (int64_t k = 0; k < sendCounts[j]; ++k)
                in.set(so[j] + k, val(dt, r, j, k));
            HostTensor out = sameBuffer ? in : HostTensor(dt, {ro[n]});
            c.allToAllV(in.raw(), sendCounts, out.raw(), recvCounts, dt);
            for (int j = 0; j < n; ++j)
              for (int64_t k = 0; k < recvCounts[j]; ++k) {
                double got = out.get(ro[j] + k), want = val(dt, j, r, k);
                if (got != want) {
                  errs.add(where("allToAllV", dt, ReduceOp::Sum, n, r, k, got, want));
                  break;
                }
              }
          }
    });
    errs.check();
  }
}

TEST_CASE("comm: broadcast from every root and barrier ordering") {
  for (int n : kSizes) {
    Watchdog wd("broadcast", 60);
    ThreadWorld world(n);
    Errors errs;
    std::atomic<int> arrived{0};
    world.run([&](int r) {
      Communicator &c = world.world(r);
      for (DType dt : kDTypes)
        for (int root = 0; root < n; ++root)
          for (int64_t count : {0, 5, 10000}) {
            HostTensor buf = makeInput(dt, r, count, root);
            c.broadcast(buf.raw(), count, dt, root);
            for (int64_t i = 0; i < count; ++i)
              if (buf.get(i) != inputValue(dt, root, i, root)) {
                errs.add(where("broadcast", dt, ReduceOp::Sum, n, r, i, buf.get(i),
                               inputValue(dt, root, i, root)));
                break;
              }
          }
      for (int it = 0; it < 50; ++it) {
        arrived.fetch_add(1);
        c.barrier();
        if (arrived.load() < n * (it + 1))
          errs.add("barrier passed before every rank arrived");
        c.barrier();
      }
    });
    errs.check();
  }
}

TEST_CASE("comm: large collectives (non-temporal stores) on 3 ranks, odd sizes") {
  Watchdog wd("large", 120);
  ThreadWorld world(3);
  Errors errs;
  const int64_t count = (5 << 20) / 4 + 3; // > 4 MiB of f32, not a multiple of the block
  world.run([&](int r) {
    Communicator &c = world.world(r);
    std::vector<float> a(count), b(count);
    for (int64_t i = 0; i < count; ++i)
      a[i] = (float)((i + r) % 5);
    c.allReduce(a.data(), b.data(), count, DType::F32, ReduceOp::Sum);
    for (int64_t i = 0; i < count; ++i)
      if (b[i] != (float)(i % 5 + (i + 1) % 5 + (i + 2) % 5)) {
        errs.add("large allReduce wrong at " + std::to_string(i));
        break;
      }
    std::vector<int64_t> counts = {count / 2 + 1, 0, count / 2 + 7};
    std::vector<float> all(countOffsets(counts).back());
    std::vector<float> mine(counts[r], (float)r);
    c.allGatherV(mine.data(), all.data(), counts, DType::F32);
    for (int64_t i = 0; i < (int64_t)all.size(); ++i)
      if (all[i] != (i < counts[0] ? 0.0f : 2.0f)) {
        errs.add("large allGatherV wrong at " + std::to_string(i));
        break;
      }
    std::vector<float> bc(count, (float)r + 1);
    c.broadcast(bc.data(), count, DType::F32, 2);
    if (bc.front() != 3.0f || bc.back() != 3.0f)
      errs.add("large broadcast wrong");
  });
  errs.check();
}

namespace {

/// Along every axis of `mesh` (concurrently across the other coordinates): allReduce of the
/// rank's mesh rank, then allGatherV of uneven blocks, checked against the mesh coordinates.
void checkMeshGroups(const Mesh &mesh, int iterations) {
  int n = (int)mesh.size();
  ThreadWorld world(n);
  Errors errs;
  world.run([&](int r) { // r is the world rank (device id); mr the mesh rank on that device
    int64_t mr = r;
    for (size_t i = 0; i < mesh.devices.size(); ++i)
      if (mesh.devices[i] == r)
        mr = (int64_t)i;
    std::vector<int64_t> me = mesh.coords(mr);
    for (int it = 0; it < iterations; ++it)
      for (int a = 0; a < (int)mesh.axes.size(); ++a) {
        std::vector<int> members = meshAxisGroup(mesh, mr, a);
        Communicator &c = world.group(r, members);
        if (c.size() != (int)mesh.axes[a].size || c.rank() != (int)me[a])
          errs.add("axis group has wrong size or rank");
        // allReduce: sum of the world ranks along the axis.
        int64_t want = 0;
        for (int m : members)
          want += m * 10 + it;
        int64_t v[3] = {r * 10 + it, 1, -r};
        c.allReduce(v, v, 3, DType::I64, ReduceOp::Sum);
        if (v[0] != want || v[1] != c.size())
          errs.add("mesh allReduce wrong on axis " + mesh.axes[a].name);
        // allGatherV: member j contributes j + 1 copies of its world rank.
        std::vector<int64_t> counts(c.size());
        for (int j = 0; j < c.size(); ++j)
          counts[j] = j + 1 + it % 2;
        std::vector<int32_t> mine(counts[c.rank()], r + it), all(countOffsets(counts).back());
        c.allGatherV(mine.data(), all.data(), counts, DType::I32);
        size_t k = 0;
        for (int j = 0; j < c.size(); ++j)
          for (int64_t e = 0; e < counts[j]; ++e)
            if (all[k++] != members[j] + it)
              errs.add("mesh allGatherV wrong on axis " + mesh.axes[a].name);
      }
  });
  errs.check();
}

Mesh makeMesh(std::vector<int64_t> sizes, std::vector<int64_t> devices = {}) {
  Mesh m;
  m.name = "m";
  const char *names[] = {"x", "y", "z"};
  for (size_t i = 0; i < sizes.size(); ++i)
    m.axes.push_back({names[i], sizes[i]});
  m.devices = devices;
  return m;
}

} // namespace

TEST_CASE("comm: mesh sub-groups, rows and columns concurrently (3x2, 2x4, permuted devices)") {
  Watchdog wd("mesh groups", 120);
  checkMeshGroups(makeMesh({3, 2}), 20);
  checkMeshGroups(makeMesh({2, 4}), 20);
  checkMeshGroups(makeMesh({2, 2, 2}), 5);
  checkMeshGroups(makeMesh({2, 3}, {5, 4, 3, 2, 1, 0}), 5);
}

TEST_CASE("comm: 1000 back-to-back mixed collectives on world and sub-groups") {
  Watchdog wd("stress", 180);
  for (int n : {4, 8}) {
    ThreadWorld world(n);
    Errors errs;
    world.run([&](int r) {
      Communicator &w = world.world(r);
      std::vector<int> half;
      for (int j = r % 2; j < n; j += 2)
        half.push_back(j);
      Communicator &h = world.group(r, half);
      for (int it = 0; it < 1000; ++it) {
        int64_t count = 1 + (it * 37) % 300;
        std::vector<float> a(count, (float)(r + it % 3));
        w.allReduce(a.data(), a.data(), count, DType::F32, ReduceOp::Max);
        if (a[count - 1] != (float)(n - 1 + it % 3))
          errs.add("stress allReduce max wrong");
        std::vector<int64_t> counts(h.size());
        for (int j = 0; j < h.size(); ++j)
          counts[j] = (j + it) % 4;
        int64_t total = countOffsets(counts).back();
        std::vector<int64_t> send(total, it), recv(counts[h.rank()]);
        h.reduceScatterV(send.data(), recv.data(), counts, DType::I64, ReduceOp::Sum);
        for (int64_t x : recv)
          if (x != (int64_t)it * h.size())
            errs.add("stress reduceScatterV wrong");
        std::vector<int64_t> sc(n, it % 3), rc(n, it % 3);
        std::vector<int32_t> s2(n * (it % 3), r), r2(n * (it % 3));
        w.allToAllV(s2.data(), sc, r2.data(), rc, DType::I32);
        for (size_t k = 0; k < r2.size(); ++k)
          if (r2[k] != (int32_t)(k / (it % 3)))
            errs.add("stress allToAllV wrong");
        if (it % 100 == 0)
          w.barrier();
      }
    });
    errs.check();
  }
}

TEST_CASE("comm: a failing rank aborts the others and run() names it") {
  Watchdog wd("fault injection", 60);
  ThreadWorld world(4);
  auto program = [&](int failAt, int failRank) {
    world.run([&](int r) {
      Communicator &w = world.world(r);
      std::vector<int> pair = {r & ~1, r | 1};
      Communicator &p = world.group(r, pair);
      std::vector<double> v(1000, 1.0);
      for (int it = 0; it < 100; ++it) {
        if (r == failRank && it == failAt)
          throw std::runtime_error("boom at " + std::to_string(it));
        p.allReduce(v.data(), v.data(), 1000, DType::F64, ReduceOp::Avg);
        w.allReduce(v.data(), v.data(), 1000, DType::F64, ReduceOp::Avg);
      }
    });
  };
  CHECK_THROWS_WITH_AS(program(37, 3), "rank 3 failed: boom at 37", RuntimeFault);
  CHECK_THROWS_WITH_AS(program(0, 0), "rank 0 failed: boom at 0", RuntimeFault);
  CHECK_THROWS_WITH_AS(program(99, 2), "rank 2 failed: boom at 99", RuntimeFault);
  // The world is reusable after a failure.
  CHECK_NOTHROW(program(-1, -1));
  // A failure while the others are already blocked (rank 1 sleeps first, then throws).
  CHECK_THROWS_WITH_AS(world.run([&](int r) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      throw RuntimeFault("late");
    }
    world.world(r).barrier();
  }),
                       "rank 1 failed: late", RuntimeFault);
}

TEST_CASE("comm: the rank pool keeps its threads between runs") {
  Watchdog wd("rank pool", 60);
  for (int spin : {0, 4000}) { // sleep-only waits, and the default spin
    ThreadWorld world(3);
    world.setSpinLimit(spin);
    std::vector<std::thread::id> first(3), now(3);
    world.run([&](int r) { first[r] = std::this_thread::get_id(); });
    CHECK(first[0] == std::this_thread::get_id()); // rank 0 runs on the caller
    CHECK(first[1] != first[2]);
    CHECK(first[1] != first[0]);
    // Many short runs: every rank runs exactly once per run, on the same threads, and data
    // written in one run is seen by the next (run() is a full synchronisation point).
    std::vector<int64_t> last(3, -1);
    std::vector<char> ranOnce(3);
    bool sameThreads = true, sawPrevious = true, callerSees = true;
    for (int64_t it = 0; it < 300; ++it) {
      world.run([&](int r) {
        sameThreads &= std::this_thread::get_id() == first[r];
        sawPrevious &= last[(r + 1) % 3] == it - 1; // another thread wrote it in the last run
        ranOnce[r] += 1;
      });
      // The peer's read above happens before any write below: one run reads, the next writes.
      world.run([&](int r) { last[r] = it; });
      for (int r = 0; r < 3; ++r)
        callerSees &= last[r] == it && ranOnce[r] == 1, ranOnce[r] = 0;
    }
    CHECK(sawPrevious);
    CHECK(callerSees);
    CHECK(sameThreads);
    // A failed run, then the same threads run again.
    CHECK_THROWS_AS(world.run([&](int r) {
      if (r == 2)
        throw RuntimeFault("x");
    }),
                    RuntimeFault);
    world.run([&](int r) { now[r] = std::this_thread::get_id(); });
    CHECK(now == first);
  } // destroying an idle world joins its threads (the watchdog catches a hang)
}

TEST_CASE("comm: mismatched calls fail on every rank instead of hanging") {
  Watchdog wd("mismatch", 60);
  ThreadWorld world(2);
  CHECK_THROWS_WITH_AS(world.run([&](int r) {
    float x[5] = {};
    world.world(r).allReduce(x, x, 4 + r, DType::F32, ReduceOp::Sum);
  }),
                       doctest::Contains("collective mismatch on group [0, 1]"), RuntimeFault);
  CHECK_THROWS_WITH_AS(world.run([&](int r) {
    float x[4] = {};
    if (r == 0)
      world.world(r).allReduce(x, x, 4, DType::F32, ReduceOp::Sum);
    else
      world.world(r).barrier();
  }),
                       doctest::Contains("rank 1 calls barrier()"), RuntimeFault);
  CHECK_THROWS_WITH_AS(world.run([&](int r) {
    int32_t s[4] = {}, d[4] = {};
    std::vector<int64_t> sc = {1, 1}, rc = {1, r == 0 ? 2 : 1};
    world.world(r).allToAllV(s, sc, d, rc, DType::I32);
  }),
                       doctest::Contains("which expects 2"), RuntimeFault);
  CHECK_THROWS_WITH_AS(world.run([&](int r) {
    if (r == 1)
      return; // returns without joining the collective
    float x[4] = {};
    world.world(r).allReduce(x, x, 4, DType::F32, ReduceOp::Sum);
  }),
                       doctest::Contains("world rank 1 returned from its program"), RuntimeFault);
  CHECK_THROWS_WITH_AS(world.run([&](int r) {
    uint8_t b[2] = {1, 0};
    world.world(r).allReduce(b, b, 2, DType::Bool, ReduceOp::Avg);
  }),
                       doctest::Contains("`avg` is not defined on `bool`"), RuntimeFault);
  CHECK_THROWS_AS(world.group(0, {1, 2}), RuntimeFault);
  CHECK_THROWS_AS(world.group(0, {0, 0}), RuntimeFault);
  CHECK_THROWS_AS(world.group(1, {0}), RuntimeFault);
}

TEST_CASE("comm: reduction kernels and helpers") {
  std::vector<int32_t> a = {INT32_MAX, -3, 7}, b = {1, 5, -7};
  reduceInto(a.data(), b.data(), 3, DType::I32, ReduceOp::Sum);
  CHECK(a == std::vector<int32_t>{INT32_MIN, 2, 0}); // wraps
  std::vector<int64_t> c = {-7, 7};
  finishAvg(c.data(), 2, DType::I64, ReduceOp::Avg, 2);
  CHECK(c == std::vector<int64_t>{-3, 3}); // truncating
  std::vector<uint8_t> x = {0, 1, 1, 0}, y = {0, 0, 1, 1};
  std::vector<uint8_t> z(4);
  const void *xy[] = {x.data(), y.data()};
  reduceMany(z.data(), xy, 2, 4, DType::Bool, ReduceOp::Min);
  CHECK(z == std::vector<uint8_t>{0, 0, 1, 0});
  reduceMany(z.data(), xy, 2, 4, DType::Bool, ReduceOp::Sum);
  CHECK(z == std::vector<uint8_t>{0, 1, 1, 1});
  // reduceMany: the sources combined in order j, bit for bit what a chain
  // of reduceInto gives (floats whose sum depends on the order), any n.
  for (int n = 1; n <= 7; ++n) {
    std::vector<std::vector<float>> src(n, std::vector<float>(37));
    std::vector<const void *> ptrs;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < 37; ++i)
        src[j][i] = (float)((j % 2 ? 1e8 : 1.0) * (i + 1) + 0.1 * j);
      ptrs.push_back(src[j].data());
    }
    std::vector<float> want = src[0], got(37);
    for (int j = 1; j < n; ++j)
      reduceInto(want.data(), src[j].data(), 37, DType::F32, ReduceOp::Sum);
    reduceMany(got.data(), ptrs.data(), n, 37, DType::F32, ReduceOp::Sum);
    CHECK_MESSAGE(std::memcmp(got.data(), want.data(), 37 * 4) == 0, "n=" << n);
    std::vector<float> mx(37);
    reduceMany(mx.data(), ptrs.data(), n, 37, DType::F32, ReduceOp::Max);
    float top = src[0][36];
    for (int j = 1; j < n; ++j)
      top = std::max(top, src[j][36]);
    CHECK(mx[36] == top);
  }
  CHECK(countOffsets({2, 0, 3}) == std::vector<int64_t>{0, 2, 2, 5});
  CHECK_THROWS_AS(totalCount({1, -1}), RuntimeFault);
  Mesh m = makeMesh({3, 2});
  CHECK(meshAxisGroup(m, 3, 0) == std::vector<int>{1, 3, 5});
  CHECK(meshAxisGroup(m, 3, 1) == std::vector<int>{2, 3});
}
