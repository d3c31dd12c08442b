// Unit tests of GroupBarrier (runtime/CudaComm.h), the barrier the cuda
// backend's virtual ranks meet at in every collective: it must let a group
// through, wake every waiter when a member fails (the first GPU run hung there
// instead), and name the missing members after its timeout. Needs no GPU.
#include "runtime/CudaComm.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace dt;

TEST_CASE("group barrier: members pass together, many times") {
  GroupBarrier b({0, 1, 2, 3}, 0);
  std::atomic<int> phase{0}, bad{0};
  std::vector<std::thread> ts;
  for (int r = 0; r < 4; ++r)
    ts.emplace_back([&, r] {
      for (int i = 0; i < 200; ++i) {
        if (phase.load() / 4 != i) // nobody is a round ahead before all arrived
          ++bad;
        ++phase;
        b.arrive(r, "test");
        if (phase.load() < 4 * (i + 1))
          ++bad;
        b.arrive(r, "test"); // everyone has checked before the next round
      }
    });
  for (auto &t : ts)
    t.join();
  CHECK(bad.load() == 0);
  CHECK(phase.load() == 800);
}

TEST_CASE("group barrier: abort wakes every waiter, and later arrivals throw until reset") {
  GroupBarrier b({0, 1, 2}, 0);
  std::atomic<int> aborted{0};
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r) // member 2 never comes: it failed
    ts.emplace_back([&, r] {
      try {
        b.arrive(r, "allReduce");
      } catch (const CudaGroupAborted &) {
        ++aborted;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  b.abort();
  for (auto &t : ts)
    t.join();
  CHECK(aborted.load() == 2);
  CHECK_THROWS_AS(b.arrive(0, "allReduce"), CudaGroupAborted);
  b.reset(); // the next run starts clean
  std::thread t1([&] { b.arrive(1, "x"); });
  std::thread t2([&] { b.arrive(2, "x"); });
  b.arrive(0, "x");
  t1.join();
  t2.join();
}

TEST_CASE("group barrier: a member left waiting past the timeout names who did not arrive") {
  GroupBarrier b({4, 7, 9}, 0.2); // world ranks 4, 7, 9
  std::string what;
  std::thread t([&] {
    try {
      b.arrive(1, "allGatherV");
    } catch (const CudaGroupAborted &) {
      what = "aborted";
    } catch (const RuntimeFault &e) {
      what = e.what();
    }
  });
  try {
    b.arrive(0, "allGatherV");
  } catch (const RuntimeFault &e) {
    CHECK(std::string(e.what()).find("for ranks 9 (arrived: 4, 7)") != std::string::npos);
  }
  t.join();
  CHECK(what.find("rank 7 waited 0.2 s") != std::string::npos);
  CHECK(what.find("in allGatherV for ranks 9 (arrived: 4, 7)") != std::string::npos);
}
