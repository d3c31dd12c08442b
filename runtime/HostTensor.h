// This file implements HostTensor, the one in-memory tensor value of dtensor:
// a dtype, a concrete row-major shape and a 64-byte aligned buffer shared by
// reference. The reference evaluator, the per-rank runtime, the collectives
// and the kernels all read and write HostTensors (a rank's local block is a
// HostTensor too).
#pragma once

#include "ir/Types.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dt {

/// Which memory a Buffer's pointer addresses.
enum class Where { Host, Device };

/// An aligned, zero-initialised byte buffer: host memory, or memory a
/// backend's allocator made (runtime/Backend.h), freed through its release.
class Buffer {
public:
  /// `bytes` bytes of host memory, zero-filled unless `zeroFill` is false
  /// (for a result its producer writes in full: no second pass over memory).
  explicit Buffer(size_t bytes, bool zeroFill = true);
  /// Adopts `data` (`bytes` bytes in `where` memory); the destructor calls
  /// release(data).
  Buffer(void *data, size_t bytes, Where where, std::function<void(void *)> release);
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void *data() { return data_; }
  const void *data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Where where() const { return where_; }

private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
  Where where_ = Where::Host;
  std::function<void(void *)> release_; ///< empty: std::free
};

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::shared_ptr<Buffer> buf;

  HostTensor() = default;
  HostTensor(DType dt, std::vector<int64_t> shape); ///< zero-filled

  int64_t numel() const;
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  int rank() const { return (int)shape.size(); }
  void *raw() { return buf ? buf->data() : nullptr; }
  const void *raw() const { return buf ? buf->data() : nullptr; }
  template <class T> T *data() { return static_cast<T *>(raw()); }
  template <class T> const T *data() const { return static_cast<const T *>(raw()); }

  /// Element i as a double (any dtype); set element i from a double.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  HostTensor clone() const;
};

/// A reference that keeps a tensor's elements as they are while it lives:
/// the executor pools a buffer, or writes a kernel's output into it in
/// place, only when nothing else references it (runtime/KernelRuntime.h).
/// What caches by a tensor's contents (checked gather ids, a scatter-add's
/// plan) holds one.
struct HeldTensor {
  explicit HeldTensor(const HostTensor &t) : buf(t.buf), dtype(t.dtype), numel(t.numel()) {}
  /// `t` reads exactly the held elements (the same buffer, as a view of any
  /// shape, of the same dtype and count).
  bool holds(const HostTensor &t) const {
    return buf && buf == t.buf && dtype == t.dtype && numel == t.numel();
  }
  std::shared_ptr<Buffer> buf;
  DType dtype;
  int64_t numel;
};

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

} // namespace dt
