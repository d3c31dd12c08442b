// This file implements the cpu device's buffer cache (see BufferCache.h).
#include "runtime/BufferCache.h"

#include "support/Errors.h"

#include <cstdlib>
#include <cstring>

namespace dt {

BufferCache::~BufferCache() { trim(); }

std::shared_ptr<Buffer> BufferCache::get(size_t bytes, bool zero) {
  if (bytes < kMinBytes)
    return std::make_shared<Buffer>(bytes, zero);
  void *p = nullptr;
  size_t capacity = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= bytes + bytes / 4) {
      capacity = it->first;
      p = it->second;
      free_.erase(it);
      stats_.cachedBytes -= capacity;
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  if (!p) {
    capacity = (bytes + 4095) / 4096 * 4096; // whole pages, 64-byte aligned
    p = std::aligned_alloc(64, capacity);
    if (!p) {
      trim(); // what the cache holds may be what the request needs
      p = std::aligned_alloc(64, capacity);
    }
    if (!p)
      throw RuntimeFault("out of host memory allocating " + std::to_string(bytes) + " bytes");
  }
  if (zero)
    std::memset(p, 0, bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.inUseBytes += capacity;
    stats_.peakInUseBytes = std::max(stats_.peakInUseBytes, stats_.inUseBytes);
  }
  std::shared_ptr<BufferCache> self = shared_from_this();
  return std::make_shared<Buffer>(p, bytes, Where::Host,
                                  [self, capacity](void *q) { self->release(q, capacity); });
}

void BufferCache::release(void *p, size_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.inUseBytes -= capacity;
  if (stats_.cachedBytes + capacity > stats_.peakInUseBytes) {
    std::free(p);
    return;
  }
  free_.emplace(capacity, p);
  stats_.cachedBytes += capacity;
}

void BufferCache::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &[capacity, p] : free_)
    std::free(p);
  free_.clear();
  stats_.cachedBytes = 0;
}

BufferCache::Stats BufferCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

} // namespace dt
