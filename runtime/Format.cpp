// This file implements tensor formatting (see Format.h).
#include "runtime/Format.h"

#include "support/Errors.h"
#include "support/LowPrecision.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace dt {

namespace {

constexpr int64_t kSummaryThreshold = 1000; ///< numpy's default threshold
constexpr int64_t kEdgeItems = 3;           ///< numpy's default edgeitems

template <class F> std::string shortest(F v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  // Whole numbers below 2^24 in full (100000, not the shorter 1e+05: a step
  // counter or a size reads as written), others the shortest round trip.
  auto r = v == std::trunc(v) && std::fabs(v) < F(0x1p24)
               ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
               : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

/// The shortest decimal that reads back (rounded to nearest even) as the
/// same bf16/f16 `bits` (0.1, 3.14), written as f32 values are: the float
/// nearest to it printed shortest (it has no more digits, and reads back
/// alike). Whole numbers below 2^24 print exactly, as f32 prints them.
std::string shortestLow(uint16_t bits, bool bf16) {
  float v = bf16 ? bf16ToFloat(bits) : halfToFloat(bits);
  // Whole numbers below 2^24 in full (4096, 65504: the shortest decimal
  // would be 4100, 65500).
  if (std::isnan(v) || std::isinf(v) || (v == std::trunc(v) && std::fabs(v) < 0x1p24f))
    return shortest(v);
  auto back = [&](double d) { return bf16 ? doubleToBf16(d) : doubleToHalf(d); };
  char buf[64];
  for (int p = 1; p <= 9; ++p) {
    auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, p);
    double d = std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
    if (back(d) != bits)
      continue;
    std::string s = shortest((float)d);
    if (back(std::strtod(s.c_str(), nullptr)) == bits)
      return s;
  }
  return shortest(v);
}

void formatRec(const HostTensor &t, const std::vector<int64_t> &strides, int dim, int64_t base,
               bool summary, std::string &out) {
  if (dim == t.rank()) {
    out += formatElement(t, base);
    return;
  }
  int64_t n = t.shape[dim];
  out += '[';
  bool cut = summary && n > 2 * kEdgeItems;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      out += ", ...";
      i = n - kEdgeItems;
    }
    if (i)
      out += ", ";
    formatRec(t, strides, dim + 1, base + i * strides[dim], summary, out);
  }
  out += ']';
}

std::string formatImpl(const HostTensor &t, bool summary) {
  if (t.rank() == 0)
    return formatElement(t, 0);
  std::string out;
  formatRec(t, rowMajorStrides(t.shape), 0, 0, summary, out);
  return out;
}

} // namespace

std::string formatF32(float v) { return shortest(v); }
std::string formatF64(double v) { return shortest(v); }

std::string formatElement(const HostTensor &t, int64_t i) {
  switch (t.dtype) {
  case DType::F32:
    return formatF32(t.data<float>()[i]);
  case DType::F64:
    return formatF64(t.data<double>()[i]);
  case DType::I32:
    return std::to_string(t.data<int32_t>()[i]);
  case DType::I64:
    return std::to_string(t.data<int64_t>()[i]);
  case DType::Bool:
    return t.data<uint8_t>()[i] ? "true" : "false";
  case DType::BF16:
    return shortestLow(t.data<uint16_t>()[i], true);
  case DType::F16:
    return shortestLow(t.data<uint16_t>()[i], false);
  }
  return "?";
}

std::string formatTensor(const HostTensor &t) {
  return formatImpl(t, t.numel() > kSummaryThreshold);
}

std::string formatTensorFull(const HostTensor &t) { return formatImpl(t, false); }

namespace {

/// Calls `f(operand or -1, text)` for each item of a line-form print.
template <class F> void forEachPrintItem(const Attrs &a, int64_t nvals, F f) {
  if (a.ints.size() % 2)
    throw InternalError("malformed `print`: its items need an even list of ints");
  size_t pos = 0;
  for (size_t i = 0; i < a.ints.size(); i += 2) {
    int64_t k = a.ints[i], len = a.ints[i + 1];
    if (k < -1 || k >= nvals || len < 0 || (uint64_t)len > a.str.size() - pos)
      throw InternalError("malformed `print`: item " + std::to_string(i / 2) + " is out of range");
    f(k, a.str.substr(pos, (size_t)len));
    pos += (size_t)len;
  }
  if (pos != a.str.size())
    throw InternalError("malformed `print`: its text is longer than its items");
}

} // namespace

std::string formatPrintLine(const Attrs &a, const std::vector<const HostTensor *> &vals) {
  if (!a.flag) {
    if (vals.size() != 1)
      throw InternalError("malformed `print`: one operand without items");
    return formatTensor(*vals[0]);
  }
  std::string out;
  bool first = true;
  forEachPrintItem(a, (int64_t)vals.size(), [&](int64_t k, const std::string &text) {
    if (!first)
      out += ' ';
    first = false;
    out += k < 0 ? text : formatTensor(*vals[(size_t)k]);
  });
  return out;
}

std::string printItemLabel(const Attrs &a, size_t k) {
  if (!a.flag)
    return a.str;
  std::string label;
  forEachPrintItem(a, INT64_MAX, [&](int64_t i, const std::string &text) {
    if (i == (int64_t)k)
      label = text;
  });
  return label;
}

} // namespace dt
