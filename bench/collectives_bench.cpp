// Benchmark of the shared-memory collectives (runtime/ThreadComm.h): 2 and 4
// ranks, 64 MiB of f32, all-reduce, all-gather and reduce-scatter, reported
// with NCCL-tests' definitions and against a single-threaded memcpy of the
// same size measured in the same run:
//   size     all-reduce: the buffer of every rank; all-gather: the gathered
//            output (each rank contributes size/n); reduce-scatter: the input
//            of every rank (each rank receives size/n)
//   algbw  = size / time
//   busbw  = algbw * 2(n-1)/n (all-reduce), algbw * (n-1)/n (the others)
//   memcpy = bytes copied / time, one thread, same size
// The ranks are threads; on a machine with fewer cores than ranks they
// oversubscribe it, which the printed core count makes visible. Also prints
// the latency of a tiny all-reduce with and without spinning before sleeping.
//
// Usage: collectives_bench [MiB (default 64)] [iterations (default 10)]
#include "runtime/ThreadComm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

using namespace dt;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// CPU seconds used by the calling thread (to show how much of a core a rank actually got).
double threadCpu() {
  rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/// Median single-threaded memcpy bandwidth (bytes copied per second); *cpuShare = CPU time /
/// wall time of the copying thread.
double memcpyBandwidth(size_t bytes, int iters, double *cpuShare) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::vector<double> t;
  auto w0 = Clock::now();
  double c0 = threadCpu();
  for (int i = 0; i < iters + 2; ++i) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    auto t1 = Clock::now();
    if (i >= 2)
      t.push_back(seconds(t0, t1));
    a[i % bytes] = b[(i * 7) % bytes]; // keep the copies observable
  }
  *cpuShare = (threadCpu() - c0) / seconds(w0, Clock::now());
  std::sort(t.begin(), t.end());
  return (double)bytes / t[t.size() / 2];
}

/// Bytes per second copied by `threads` threads at once, each memcpy-ing
/// its own `bytes` (median of the rounds' slowest thread): what the machine's
/// cores and memory give together.
double memcpyAllCores(size_t bytes, int iters, int threads) {
  std::vector<std::vector<char>> a(threads, std::vector<char>(bytes, 1)),
      b(threads, std::vector<char>(bytes, 2));
  std::vector<double> t;
  for (int i = 0; i < iters + 2; ++i) {
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    auto t0 = Clock::now();
    for (int k = 0; k < threads; ++k)
      ts.emplace_back([&, k] {
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        std::memcpy(b[k].data(), a[k].data(), bytes);
      });
    for (auto &th : ts)
      th.join();
    auto t1 = Clock::now();
    if (i >= 2)
      t.push_back(seconds(t0, t1));
  }
  std::sort(t.begin(), t.end());
  return (double)bytes * threads / t[t.size() / 2];
}

enum class Coll { AllReduce, AllGather, ReduceScatter };
const char *collName(Coll c) {
  return c == Coll::AllReduce ? "allreduce" : c == Coll::AllGather ? "allgather" : "reducescatter";
}

/// Seconds per collective (median over iterations, as measured by rank 0 between barriers);
/// *cpuShare = the ranks' mean CPU time / wall time over the timed iterations.
double timeCollective(ThreadWorld &world, Coll coll, size_t bytes, int iters, double *cpuShare) {
  const int n = world.size();
  std::atomic<double> share{0};
  const int64_t count = (int64_t)(bytes / sizeof(float)), shard = count / n;
  std::vector<double> times;
  world.run([&](int r) {
    Communicator &c = world.world(r);
    std::vector<int64_t> counts(n, shard);
    std::vector<float> send(coll == Coll::AllGather ? shard : count, 1.0f + r);
    std::vector<float> recv(coll == Coll::ReduceScatter ? shard : count, 0.0f);
    Clock::time_point w0;
    double c0 = 0;
    for (int i = 0; i < iters + 2; ++i) {
      c.barrier();
      if (i == 2)
        w0 = Clock::now(), c0 = threadCpu();
      auto t0 = Clock::now();
      switch (coll) {
      case Coll::AllReduce:
        c.allReduce(send.data(), recv.data(), count, DType::F32, ReduceOp::Sum);
        break;
      case Coll::AllGather:
        c.allGatherV(send.data(), recv.data(), counts, DType::F32);
        break;
      case Coll::ReduceScatter:
        c.reduceScatterV(send.data(), recv.data(), counts, DType::F32, ReduceOp::Sum);
        break;
      }
      c.barrier(); // the slowest rank's finish
      auto t1 = Clock::now();
      if (r == 0 && i >= 2)
        times.push_back(seconds(t0, t1));
    }
    share.fetch_add((threadCpu() - c0) / seconds(w0, Clock::now()) / n);
    float want = coll == Coll::AllGather ? 1.0f + (float)(n - 1) : (float)(n * (n + 1) / 2);
    if (recv.back() != want) {
      std::fprintf(stderr, "wrong result: %g, want %g\n", recv.back(), want);
      std::exit(1);
    }
  });
  *cpuShare = share.load();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Microseconds per tiny (one float) all-reduce.
double tinyLatency(int n, int spin) {
  ThreadWorld world(n);
  if (spin >= 0)
    world.setSpinLimit(spin);
  const int iters = 20000;
  double us = 0;
  world.run([&](int r) {
    Communicator &c = world.world(r);
    float x = 1;
    c.barrier();
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i)
      c.allReduce(&x, &x, 1, DType::F32, ReduceOp::Max);
    if (r == 0)
      us = seconds(t0, Clock::now()) * 1e6 / iters;
  });
  return us;
}

} // namespace

int main(int argc, char **argv) {
  const size_t mib = argc > 1 ? (size_t)std::atoll(argv[1]) : 64;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  const size_t bytes = mib << 20;
  std::printf("collectives_bench: %zu MiB f32, %d iterations, %u hardware threads\n", mib, iters,
              std::thread::hardware_concurrency());
  double memShare = 0;
  const double memBw = memcpyBandwidth(bytes, iters, &memShare);
  std::printf("memcpy (1 thread, %zu MiB): %.2f GB/s  (cpu %.0f%% of wall)\n", mib, memBw / 1e9,
              memShare * 100);
  // Thread ranks share the cores and the memory: how much more than one
  // thread's memcpy do all cores copy together (a memory-bound machine
  // gives little more, and n ranks on it share that).
  const int cores = (int)std::max(1u, std::thread::hardware_concurrency());
  const double allBw = memcpyAllCores(bytes, iters, cores);
  std::printf("memcpy (%d threads at once, %zu MiB each): %.2f GB/s together (%.2fx one thread)\n",
              cores, mib, allBw / 1e9, allBw / memBw);
  std::string summary[2], normalized[2];
  const int rankCounts[2] = {2, 4};
  for (int k = 0; k < 2; ++k) {
    const int n = rankCounts[k];
    ThreadWorld world(n);
    summary[k] = "collectives (" + std::to_string(n) + " ranks):";
    for (Coll coll : {Coll::AllReduce, Coll::AllGather, Coll::ReduceScatter}) {
      double share = 0;
      double t = timeCollective(world, coll, bytes, iters, &share);
      double algbw = (double)bytes / t;
      double factor = coll == Coll::AllReduce ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
      double busbw = algbw * factor, ratio = busbw / memBw;
      std::printf("%d ranks %-13s %8.2f ms  algbw %6.2f GB/s  busbw %6.2f GB/s  %.2fx memcpy  "
                  "(cpu %.0f%% of wall per rank)\n",
                  n, collName(coll), t * 1e3, algbw / 1e9, busbw / 1e9, ratio, share * 100);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %s %.2fx memcpy", coll == Coll::AllReduce ? "" : ",",
                    collName(coll), ratio);
      summary[k] += buf;
      // Bus bytes per CPU-second of the ranks against memcpy's bytes per CPU-second: what the
      // ratio would be if the ranks had had the CPU that the memcpy thread had.
      std::snprintf(buf, sizeof buf, "%s %s %.2fx", coll == Coll::AllReduce ? "" : ",",
                    collName(coll), (busbw / (share * n)) / (memBw / memShare));
      normalized[k] += buf;
    }
  }
  for (int n : {2, 4}) {
    std::printf("tiny allreduce, %d ranks: %.2f us (default spin)", n, tinyLatency(n, -1));
    for (int spin : {0, 200, 2000, 20000})
      std::printf(", %.2f us (spin %d)", tinyLatency(n, spin), spin);
    std::printf("\n");
  }
  for (int k = 0; k < 2; ++k)
    std::printf("cpu-normalized (%d ranks, bus bytes per cpu-second vs memcpy's):%s\n",
                rankCounts[k], normalized[k].c_str());
  std::printf("%s\n", summary[0].c_str());
  // The headline line: 4 ranks, as in the target (busbw >= 0.5x memcpy).
  std::string headline = summary[1];
  headline.replace(0, headline.find(':'), "collectives");
  std::printf("%s\n", headline.c_str());
  return 0;
}
