// This file implements HostTensor storage and element access.
#include "runtime/HostTensor.h"

#include "support/Diagnostics.h"

#include <cstdlib>
#include <new>

namespace dt {

Buffer::Buffer(size_t bytes, bool zeroFill) : bytes_(bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_)
    throw RuntimeFault("out of host memory allocating " + std::to_string(bytes) + " bytes");
  if (zeroFill)
    std::memset(data_, 0, rounded);
}

Buffer::Buffer(void *data, size_t bytes, Where where, std::function<void(void *)> release)
    : data_(data), bytes_(bytes), where_(where), release_(std::move(release)) {}

Buffer::~Buffer() {
  if (release_)
    release_(data_);
  else
    std::free(data_);
}

HostTensor::HostTensor(DType dt, std::vector<int64_t> s) : dtype(dt), shape(std::move(s)) {
  buf = std::make_shared<Buffer>((size_t)bytes());
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

double HostTensor::get(int64_t i) const {
  switch (dtype) {
  case DType::F32:
    return data<float>()[i];
  case DType::F64:
    return data<double>()[i];
  case DType::I32:
    return data<int32_t>()[i];
  case DType::I64:
    return (double)data<int64_t>()[i];
  case DType::Bool:
    return data<uint8_t>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

void HostTensor::set(int64_t i, double v) {
  switch (dtype) {
  case DType::F32:
    data<float>()[i] = (float)v;
    break;
  case DType::F64:
    data<double>()[i] = v;
    break;
  case DType::I32:
    data<int32_t>()[i] = (int32_t)(int64_t)v;
    break;
  case DType::I64:
    data<int64_t>()[i] = (int64_t)v;
    break;
  case DType::Bool:
    data<uint8_t>()[i] = v != 0;
    break;
  }
}

HostTensor HostTensor::clone() const {
  HostTensor t(dtype, shape);
  if (bytes())
    std::memcpy(t.raw(), raw(), (size_t)bytes());
  return t;
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

} // namespace dt
