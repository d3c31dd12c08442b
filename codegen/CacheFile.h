// This file implements the file primitives of the two on-disk kernel caches
// (codegen/CpuJIT's objects, codegen/Nvrtc's CUBIN/PTX): a content hash,
// whole-file reads, and writes that readers see whole or not at all. A cache
// only saves work, so every failure here is a miss, never an error.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

/// FNV-1a 64 of `s` from offset basis `h` (two bases give 128 bits).
uint64_t fnv1a(const std::string &s, uint64_t h = 0xcbf29ce484222325ull);

/// `v` as 16 lowercase hex digits.
std::string hex64(uint64_t v);

/// The whole file at `path`; false when it cannot be read.
bool readCacheFile(const std::string &path, std::string *out);

/// Writes `data` to `path` (in folder `dir`, made if missing) atomically: a
/// unique temporary file in the same folder, then rename(2). Failures only
/// cost the cache entry.
void writeCacheFile(const std::string &dir, const std::string &path, const std::string &data);

} // namespace dt
