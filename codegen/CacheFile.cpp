// This file implements the cache file primitives (see CacheFile.h).
#include "codegen/CacheFile.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

namespace dt {

uint64_t fnv1a(const std::string &s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

bool readCacheFile(const std::string &path, std::string *out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return !in.bad();
}

void writeCacheFile(const std::string &dir, const std::string &path, const std::string &data) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::random_device rd;
  std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + hex64(rd() ^ ((uint64_t)rd() << 32));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return;
    out.write(data.data(), (std::streamsize)data.size());
    if (!out.good()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

} // namespace dt
