// Unit tests of runtime/BufferCache.h and the cpu device's use of it: freed
// buffers are reused (the same memory, cleared when asked), only for sizes
// within 5/4 of a request, never beyond the peak in use, small buffers
// bypass it, buffers outlive the cache, and the device's transpose, gather
// and scatter-add give the reference kernels' values from cached buffers.
#include "runtime/BufferCache.h"
#include "runtime/CpuBackend.h"
#include "runtime/RefKernels.h"
#include "support/Errors.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

using namespace dt;

TEST_CASE("buffer cache: a freed buffer is reused, cleared when asked") {
  auto cache = BufferCache::make();
  const size_t n = 1 << 20;
  void *first = nullptr;
  {
    auto b = cache->get(n, false);
    first = b->data();
    std::memset(b->data(), 0xab, n);
  }
  CHECK(cache->stats().cachedBytes >= n);
  {
    auto b = cache->get(n, true); // same size: the same memory, zeroed
    CHECK(b->data() == first);
    CHECK(b->bytes() == n);
    const unsigned char *p = static_cast<const unsigned char *>(b->data());
    bool zero = true;
    for (size_t i = 0; i < n; ++i)
      zero &= p[i] == 0;
    CHECK(zero);
  }
  auto s = cache->stats();
  CHECK(s.hits == 1);
  CHECK(s.misses == 1);
  CHECK(s.inUseBytes == 0);
}

TEST_CASE("buffer cache: sizes within 5/4 only; small requests bypass it; bounded by the peak") {
  auto cache = BufferCache::make();
  const size_t n = 1 << 20;
  { auto b = cache->get(n, false); }
  {
    auto small = cache->get(n / 2, false); // would waste half: a fresh buffer
    CHECK(cache->stats().hits == 0);
    auto close = cache->get(n - 4096, false); // within 5/4: the cached one
    CHECK(cache->stats().hits == 1);
  }
  // Below kMinBytes nothing is cached.
  { auto tiny = cache->get(100, true); }
  CHECK(cache->stats().misses == 2);
  // The cache never holds more than the peak in use: after freeing more
  // buffers than were ever live at once... they were all live at once here,
  // so all are kept; a cache whose peak is one buffer keeps one.
  auto one = BufferCache::make();
  for (int i = 0; i < 4; ++i) {
    auto b = one->get(n, false);
  }
  CHECK(one->stats().cachedBytes <= one->stats().peakInUseBytes);
  std::vector<std::shared_ptr<Buffer>> many;
  for (int i = 0; i < 4; ++i)
    many.push_back(one->get(n, false));
  many.clear();
  CHECK(one->stats().cachedBytes == one->stats().peakInUseBytes);
  one->trim();
  CHECK(one->stats().cachedBytes == 0);
}

TEST_CASE("buffer cache: buffers outlive the cache and die on other threads") {
  std::shared_ptr<Buffer> kept;
  {
    auto cache = BufferCache::make();
    kept = cache->get(1 << 18, true);
  } // the cache lives on in `kept`'s release
  std::memset(kept->data(), 1, kept->bytes());
  auto cache = BufferCache::make();
  std::vector<std::shared_ptr<Buffer>> bufs;
  for (int i = 0; i < 64; ++i)
    bufs.push_back(cache->get((size_t)(1 << 16) * (1 + i % 3), i % 2 == 0));
  std::thread t([&] { bufs.clear(); });
  std::vector<std::shared_ptr<Buffer>> mine;
  for (int i = 0; i < 64; ++i)
    mine.push_back(cache->get((size_t)(1 << 16) * (1 + i % 3), false));
  t.join();
  mine.clear();
  CHECK(cache->stats().inUseBytes == 0);
  kept.reset();
}

namespace {
/// A cpu device with no communicator (these tests move no data between ranks).
struct LoneDevice final : CpuDevice {
  LoneDevice() : CpuDevice(0) {}
  Communicator &world() override { throw InternalError("no communicator"); }
  Communicator &group(const std::vector<int> &) override { throw InternalError("no communicator"); }
};
} // namespace

TEST_CASE("buffer cache: the cpu device's transpose, gather and scatter-add match the reference") {
  LoneDevice dev;
  for (DType dt : {DType::F32, DType::F64, DType::I32, DType::I64, DType::BF16, DType::Bool}) {
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
             {0, 5}, {1, 1}, {33, 70}, {3, 65, 31}, {2, 0, 4}, {300, 257}}) {
      HostTensor x(dt, shape);
      for (int64_t k = 0; k < x.numel(); ++k)
        x.set(k, dt == DType::Bool ? k % 3 == 0 : (double)((k * 7) % 23) - 11);
      std::vector<int64_t> perm(shape.size());
      for (size_t i = 0; i < perm.size(); ++i)
        perm[i] = (int64_t)i;
      std::swap(perm[perm.size() - 2], perm.back());
      for (int rep = 0; rep < 2; ++rep) { // the second from the cache
        HostTensor got = dev.transpose(x, perm), want = ref::transpose(x, perm);
        REQUIRE(got.shape == want.shape);
        CHECK(std::memcmp(got.raw(), want.raw(), (size_t)want.bytes()) == 0);
      }
      if (shape[0] == 0 || dt == DType::Bool)
        continue;
      HostTensor ids(DType::I64, {5});
      for (int64_t k = 0; k < 5; ++k)
        ids.set(k, (double)((k * 3) % shape[0]));
      HostTensor g = dev.gather(x, ids, 0), gw = ref::indexSelect(x, ids, 0);
      REQUIRE(g.shape == gw.shape);
      CHECK(std::memcmp(g.raw(), gw.raw(), (size_t)gw.bytes()) == 0);
      HostTensor before = x.clone();
      HostTensor a = dev.scatterAdd(x, ids, g, 0, false), aw = ref::indexAdd(x, ids, gw, 0);
      REQUIRE(a.shape == aw.shape);
      CHECK(std::memcmp(a.raw(), aw.raw(), (size_t)aw.bytes()) == 0);
      // The base is untouched: the sum went into a new buffer.
      CHECK(std::memcmp(x.raw(), before.raw(), (size_t)x.bytes()) == 0);
    }
  }
  CHECK(dev.bufferCache().stats().hits > 0);
}

TEST_CASE("cpu transpose: every permutation of ranks 1-4, size-1 and empty dims, split or not") {
  // The merged-dims paths (one copy, contiguous rows, batched tiles) and the
  // reference fallback against ref::transpose, bit for bit, on one thread
  // and split among two (a tensor above the split size).
  LoneDevice dev;
  int checked = 0;
  for (int threads : {1, 2})
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{7},
                                                                        {3, 1},
                                                                        {5, 9},
                                                                        {2, 3, 4},
                                                                        {1, 6, 1},
                                                                        {4, 0, 3},
                                                                        {2, 3, 5, 7},
                                                                        {3, 1, 4, 2},
                                                                        {6, 130, 7, 33},
                                                                        {2, 70, 3, 400}}) {
      dev.setBlasThreads(threads);
      for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::Bool}) {
        HostTensor x(dt, shape);
        for (int64_t k = 0; k < x.numel(); ++k)
          x.set(k, dt == DType::Bool ? k % 3 == 0 : (double)((k * 7) % 251) - 100);
        std::vector<int64_t> perm(shape.size());
        for (size_t i = 0; i < perm.size(); ++i)
          perm[i] = (int64_t)i;
        do {
          HostTensor got = dev.transpose(x, perm), want = ref::transpose(x, perm);
          INFO("shape " << shape.size() << "-d, first " << shape[0] << ", threads " << threads);
          REQUIRE(got.shape == want.shape);
          CHECK(std::memcmp(got.raw(), want.raw(), (size_t)want.bytes()) == 0);
          ++checked;
        } while (std::next_permutation(perm.begin(), perm.end()));
      }
    }
  CHECK(checked > 500);
}
