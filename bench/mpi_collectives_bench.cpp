// Benchmark of the multi-process collectives (runtime/MpiComm.h, one rank per
// process, Open MPI over shared memory on one node): all-reduce, all-gather
// and reduce-scatter of 64 MiB of f32, with the definitions of
// collectives_bench.cpp (the thread ranks' benchmark; run both for the
// ratio) and a single-threaded memcpy of the same size measured in the same
// run:
//   algbw  = size / time
//   busbw  = algbw * 2(n-1)/n (all-reduce), algbw * (n-1)/n (the others)
// The collectives wait by polling under the fault watch (FaultWatch.h), as
// `dtensorc run` does. World rank 0 prints.
//
// `--hybrid K` first: each process hosts K ranks as threads over the hybrid
// communicators of `--ranks-per-process` (runtime/HybridComm.h); the rows
// then cover N*K ranks, to compare with N*K processes and N*K thread ranks.
//
// Usage: mpirun -np N mpi_collectives_bench [--hybrid K] [MiB (default 64)]
//                                           [iterations (default 10)]
#include "runtime/HybridComm.h"
#include "runtime/MpiComm.h"
#include "runtime/ThreadComm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

using namespace dt;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The median over `iters` timed runs of `fn` (after two warm-ups), every
/// rank starting together; the slowest rank's time.
double timeIt(Communicator &world, int iters, const std::function<void()> &fn) {
  std::vector<double> t;
  for (int i = 0; i < iters + 2; ++i) {
    world.barrier();
    auto t0 = Clock::now();
    fn();
    double mine = seconds(t0, Clock::now()), slowest = 0;
    world.allReduce(&mine, &slowest, 1, DType::F64, ReduceOp::Max);
    if (i >= 2)
      t.push_back(slowest);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double memcpyBandwidth(int iters, double bytes, std::vector<float> &a, std::vector<float> &b) {
  std::vector<double> t;
  for (int i = 0; i < iters + 2; ++i) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), (size_t)bytes);
    if (i >= 2)
      t.push_back(seconds(t0, Clock::now()));
    a[i % a.size()] = b[(i * 7) % b.size()];
  }
  std::sort(t.begin(), t.end());
  return bytes / t[t.size() / 2] / 1e9;
}

/// N processes x K thread ranks over the hybrid communicators.
int hybridMain(int argc, char **argv, int k, double mib, int iters) {
  MpiWorld w(&argc, &argv, /*threads=*/true);
  ThreadWorld threads(k);
  HybridWorld hybrid(w, threads, k);
  const int n = hybrid.size();
  const int64_t count = (int64_t)(mib * 1024 * 1024 / 4) / n * n;
  const double bytes = (double)count * 4;
  threads.run([&](int t) {
    const int me = w.rank() * k + t;
    Communicator &world = hybrid.world(me);
    std::vector<float> a(count, 1.0f), b(count, 0.0f);
    std::vector<int64_t> parts(n, count / n);
    double ar = timeIt(world, iters, [&] {
      world.allReduce(a.data(), b.data(), count, DType::F32, ReduceOp::Sum);
    });
    double ag =
        timeIt(world, iters, [&] { world.allGatherV(a.data(), b.data(), parts, DType::F32); });
    double rs = timeIt(world, iters, [&] {
      world.reduceScatterV(a.data(), b.data(), parts, DType::F32, ReduceOp::Sum);
    });
    if (me != 0)
      return;
    double mc = memcpyBandwidth(iters, bytes, a, b);
    auto row = [&](const char *name, double tm, double busFactor) {
      double alg = bytes / tm / 1e9;
      std::printf("%-15s %d processes x %d threads  %7.2f ms  algbw %6.2f GB/s  busbw %6.2f GB/s"
                  "  busbw/memcpy %.2f\n",
                  name, w.size(), k, tm * 1e3, alg, alg * busFactor, alg * busFactor / mc);
    };
    std::printf("%.0f MiB f32, median of %d; memcpy (1 thread) %.2f GB/s\n", mib, iters, mc);
    row("all-reduce", ar, 2.0 * (n - 1) / n);
    row("all-gather", ag, (double)(n - 1) / n);
    row("reduce-scatter", rs, (double)(n - 1) / n);
  });
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (!MpiWorld::available()) {
    std::printf("SKIP: built without MPI\n");
    return 77;
  }
  if (argc > 2 && std::string(argv[1]) == "--hybrid")
    return hybridMain(argc, argv, std::atoi(argv[2]), argc > 3 ? std::atof(argv[3]) : 64,
                      argc > 4 ? std::atoi(argv[4]) : 10);
  MpiWorld w(&argc, &argv);
  const double mib = argc > 1 ? std::atof(argv[1]) : 64;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  const int n = w.size();
  const int64_t count = (int64_t)(mib * 1024 * 1024 / 4) / n * n;
  const double bytes = (double)count * 4;
  Communicator &world = w.world();
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  std::vector<int64_t> parts(n, count / n);

  double ar = timeIt(
      world, iters, [&] { world.allReduce(a.data(), b.data(), count, DType::F32, ReduceOp::Sum); });
  double ag =
      timeIt(world, iters, [&] { world.allGatherV(a.data(), b.data(), parts, DType::F32); });
  double rs = timeIt(world, iters, [&] {
    world.reduceScatterV(a.data(), b.data(), parts, DType::F32, ReduceOp::Sum);
  });
  // The same through MPI's blocking collectives (no fault watch), to show
  // what polling the non-blocking forms costs.
  MPI_Comm comm = *static_cast<MPI_Comm *>(static_cast<MpiComm &>(world).nativeHandle());
  std::vector<int> icounts(n, (int)(count / n));
  std::vector<int> displs(n);
  for (int r = 0; r < n; ++r)
    displs[r] = r * (int)(count / n);
  double arB = timeIt(world, iters, [&] {
    MPI_Allreduce(a.data(), b.data(), (int)count, MPI_FLOAT, MPI_SUM, comm);
  });
  double agB = timeIt(world, iters, [&] {
    MPI_Allgatherv(a.data(), (int)(count / n), MPI_FLOAT, b.data(), icounts.data(), displs.data(),
                   MPI_FLOAT, comm);
  });
  double rsB = timeIt(world, iters, [&] {
    MPI_Reduce_scatter(a.data(), b.data(), icounts.data(), MPI_FLOAT, MPI_SUM, comm);
  });
  double mc = w.rank() == 0 ? memcpyBandwidth(iters, bytes, a, b) : 0;
  if (w.rank() == 0) {
    auto row = [&](const char *name, double t, double busFactor) {
      double alg = bytes / t / 1e9;
      std::printf("%-15s %d processes  %7.2f ms  algbw %6.2f GB/s  busbw %6.2f GB/s  "
                  "busbw/memcpy %.2f\n",
                  name, n, t * 1e3, alg, alg * busFactor, alg * busFactor / mc);
    };
    std::printf("%.0f MiB f32, median of %d; memcpy (1 thread) %.2f GB/s\n", mib, iters, mc);
    row("all-reduce", ar, 2.0 * (n - 1) / n);
    row("all-gather", ag, (double)(n - 1) / n);
    row("reduce-scatter", rs, (double)(n - 1) / n);
    row("blocking AR", arB, 2.0 * (n - 1) / n);
    row("blocking AG", agB, (double)(n - 1) / n);
    row("blocking RS", rsB, (double)(n - 1) / n);
  }
  return 0;
}
