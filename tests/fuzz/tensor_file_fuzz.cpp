// This file implements the libFuzzer target for tensor-file headers: any
// byte string is parsed as an `.npy` file and as a safetensors file of its own
// length. Beyond "no crash, no hang, no sanitizer report" it checks the
// parsers' contract: an accepted entry's data lies inside the file and holds
// exactly numel * element size bytes (so a block read can never run wild).
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
  if (e.elementSize <= 0 || e.dataOffset > size || n * (uint64_t)e.elementSize > size - e.dataOffset) {
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
  return 0;
}
