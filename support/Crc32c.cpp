// This file implements CRC-32C (see Crc32c.h). The hardware path runs three
// independent streams at once (lanes of 8 KiB, then 256 B) and combines them
// with precomputed shift tables, as Intel's white paper on iSCSI CRC and Mark
// Adler's crc32c.c describe: about 3x one stream.
#include "support/Crc32c.h"

#include <array>
#include <cstring>

namespace dt {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u; // reflected Castagnoli polynomial

/// Slicing-by-8 tables: t[0] is the bytewise table, t[k][b] advances b by k
/// more zero bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables makeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int k = 0; k < 8; ++k)
      c = (c >> 1) ^ (c & 1 ? kPoly : 0);
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (int k = 1; k < 8; ++k)
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  return t;
}

constexpr Tables kTables = makeTables();

// Shifting a CRC register past zero bytes, for the interleaved hardware path:
// the register after A ++ B is shift(register after A, |B|) ^ CRC of B from
// 0, so three lanes can run at once and be combined. The shift by a fixed
// length is linear in the register: a 32x32 matrix over GF(2) (column i = the
// image of bit i), applied through four 256-entry tables.
using Matrix = std::array<uint32_t, 32>;

constexpr uint32_t apply(const Matrix &m, uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; v; ++i, v >>= 1)
    if (v & 1)
      r ^= m[i];
  return r;
}

constexpr Matrix square(const Matrix &m) {
  Matrix r{};
  for (int i = 0; i < 32; ++i)
    r[i] = apply(m, m[i]);
  return r;
}

/// Tables that shift a register past 2^log2Bytes zero bytes.
using ShiftTables = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTables makeShift(int log2Bytes) {
  Matrix m{}; // one zero bit: c -> (c >> 1) ^ (c & 1 ? poly : 0)
  m[0] = kPoly;
  for (int i = 1; i < 32; ++i)
    m[i] = 1u << (i - 1);
  for (int k = 0; k < 3 + log2Bytes; ++k) // 8 bits per byte
    m = square(m);
  ShiftTables t{};
  for (int k = 0; k < 4; ++k)
    for (uint32_t b = 0; b < 256; ++b)
      t[k][b] = apply(m, b << (8 * k));
  return t;
}

constexpr int kLongLog2 = 13, kShortLog2 = 8; // lanes of 8 KiB and 256 B
constexpr size_t kLong = size_t(1) << kLongLog2, kShort = size_t(1) << kShortLog2;
constexpr ShiftTables kShiftLong = makeShift(kLongLog2);
constexpr ShiftTables kShiftShort = makeShift(kShortLog2);

inline uint32_t shift(const ShiftTables &t, uint32_t c) {
  return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

uint32_t crcTable(uint32_t c, const unsigned char *p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8); // little-endian hosts only (the file formats are too)
    w ^= c;
    c = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
        kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
        kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--)
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// Three lanes of `lane` bytes at p, p + lane, p + 2 lane, in parallel (the
/// crc32 instruction has a latency of 3 cycles and a throughput of 1), then
/// combined; returns the register after all 3 lanes.
__attribute__((target("sse4.2"))) inline uint32_t
crc3Lanes(uint32_t c, const unsigned char *p, size_t lane, const ShiftTables &shiftLane) {
  uint64_t a = c, b = 0, d = 0;
  for (size_t i = 0; i < lane; i += 8) {
    uint64_t wa, wb, wd;
    std::memcpy(&wa, p + i, 8);
    std::memcpy(&wb, p + lane + i, 8);
    std::memcpy(&wd, p + 2 * lane + i, 8);
    a = __builtin_ia32_crc32di(a, wa);
    b = __builtin_ia32_crc32di(b, wb);
    d = __builtin_ia32_crc32di(d, wd);
  }
  uint32_t r = shift(shiftLane, (uint32_t)a) ^ (uint32_t)b;
  return shift(shiftLane, r) ^ (uint32_t)d;
}

__attribute__((target("sse4.2"))) uint32_t crcHardware(uint32_t c, const unsigned char *p,
                                                       size_t n) {
  while (n >= 3 * kLong) {
    c = crc3Lanes(c, p, kLong, kShiftLong);
    p += 3 * kLong;
    n -= 3 * kLong;
  }
  while (n >= 3 * kShort) {
    c = crc3Lanes(c, p, kShort, kShiftShort);
    p += 3 * kShort;
    n -= 3 * kShort;
  }
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = __builtin_ia32_crc32di(c64, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c64;
  while (n--)
    c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

bool haveHardware() {
  static const bool have = __builtin_cpu_supports("sse4.2"); // a CPU fact, not state
  return have;
}
#endif

} // namespace

uint32_t crc32c(uint32_t crc, const void *data, size_t n) {
  auto p = static_cast<const unsigned char *>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (haveHardware())
    return ~crcHardware(c, p, n);
#endif
  return ~crcTable(c, p, n);
}

} // namespace dt
