// This file implements CRC-32C (see Crc32c.h).
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
__attribute__((target("sse4.2"))) uint32_t crcHardware(uint32_t c, const unsigned char *p,
                                                       size_t n) {
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
