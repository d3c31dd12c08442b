// This file implements the libFuzzer target for tensor-file headers: any
// byte string is parsed as an `.npy` file and as a safetensors file of its own
// length. Beyond "no crash, no hang, no sanitizer report" it checks the
// parsers' contract: an accepted entry's data lies inside the file and holds
// exactly numel * element size bytes (so a block read can never run wild).
// The same bytes are parsed as a checkpoint index (support/Checkpoint.h): an
// accepted index has blocks inside their tensors with one checksum a chunk,
// and writes back to text that parses to the same index.
#include "support/Checkpoint.h"
#include "support/TensorFile.h"

#include <cstdio>
#include <cstdlib>

namespace {

void checkEntry(const dt::TensorFileEntry &e, uint64_t size) {
  uint64_t n = 1;
  for (int64_t d : e.shape) {
    if (d < 0) {
      std::fprintf(stderr, "tensor_file_fuzz: accepted a negative dim\n");
      std::abort();
    }
    n *= (uint64_t)d;
  }
  if (e.elementSize <= 0 || e.dataOffset > size ||
      n * (uint64_t)e.elementSize > size - e.dataOffset) {
    std::fprintf(stderr, "tensor_file_fuzz: accepted data outside the file\n");
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string s(reinterpret_cast<const char *>(data), size);
  try {
    checkEntry(dt::parseNpyHeader(s, size), size);
  } catch (const dt::TensorFileError &) {
  }
  try {
    for (auto &[name, e] : dt::parseSafetensorsHeader(s, size))
      checkEntry(e, size);
  } catch (const dt::TensorFileError &) {
  }
  try {
    dt::CheckpointIndex ix = dt::parseCheckpointIndex(s, "index.json");
    for (auto &[name, t] : ix.tensors)
      for (auto &b : t.blocks)
        for (size_t d = 0; d < t.shape.size(); ++d)
          if (b.start[d] < 0 || b.shape[d] <= 0 || b.start[d] + b.shape[d] > t.shape[d]) {
            std::fprintf(stderr, "tensor_file_fuzz: accepted a block outside its tensor\n");
            std::abort();
          }
    std::string again = dt::writeCheckpointIndex(ix);
    if (dt::writeCheckpointIndex(dt::parseCheckpointIndex(again, "again")) != again) {
      std::fprintf(stderr, "tensor_file_fuzz: a checkpoint index does not round-trip\n");
      std::abort();
    }
  } catch (const dt::TensorFileError &) {
  }
  return 0;
}
