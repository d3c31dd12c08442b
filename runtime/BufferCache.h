// This file implements the cpu device's cache of freed host buffers.
//
// A loop step allocates the same sizes as the step before. Fresh memory of a
// large size comes from the kernel page by page: a page fault and a page
// clear per 4 KiB, then the allocator hands it back when freed, and the next
// step faults again. On seed 001's modulation (tp=4) that was a quarter of
// every step. The cache keeps freed buffers of at least kMinBytes and hands
// them out again: a request takes the smallest cached buffer of at least its
// size and at most 5/4 of it, so a small request never pins a large buffer.
//
// Bound: the cache holds at most the peak number of bytes its buffers ever
// had in use at once, so a program's footprint stays within twice its peak.
// trim() frees everything cached. Buffers keep the cache alive (their
// release callback holds it), so a buffer may outlive its device.
// Thread-safe: a buffer may die on another rank's thread.
#pragma once

#include "runtime/HostTensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace dt {

class BufferCache : public std::enable_shared_from_this<BufferCache> {
public:
  /// Smaller buffers come from the C allocator directly (fast, no faults).
  static constexpr size_t kMinBytes = 64 * 1024;

  static std::shared_ptr<BufferCache> make() {
    return std::shared_ptr<BufferCache>(new BufferCache());
  }
  ~BufferCache();
  BufferCache(const BufferCache &) = delete;
  BufferCache &operator=(const BufferCache &) = delete;

  /// A buffer of `bytes` bytes, zero-filled when `zero` (a reused buffer is
  /// cleared; a fresh one too).
  std::shared_ptr<Buffer> get(size_t bytes, bool zero);
  /// Frees every cached buffer.
  void trim();

  struct Stats {
    int64_t hits = 0, misses = 0;
    size_t cachedBytes = 0, inUseBytes = 0, peakInUseBytes = 0;
  };
  Stats stats() const;

private:
  BufferCache() = default;
  void release(void *p, size_t capacity);

  mutable std::mutex mu_;
  std::multimap<size_t, void *> free_; ///< capacity -> buffer
  Stats stats_;
};

} // namespace dt
