// This file implements the whole-compiler fuzz target: a program from the
// fuzzer's bytes is compiled by both pipelines (global view for the reference
// evaluator, SPMD for the executor), run on its own small mesh and the outputs
// compared (runtime/Verify.h). The bytes are source text, or `# gen N` on the
// first line for the random well-typed program of tests/SpmdProgramGen.h with
// seed N (so mutations of the seed explore the generator's space too).
//
// It fails (aborts, so libFuzzer and tests/fuzz/FuzzMain.cpp keep the input)
// on an internal error, on an output that differs from the reference, and on
// a rejected program without a located `error:`. A RuntimeFault is a user
// error at run time (an index out of range) and is allowed. Costs are bounded
// through the Session's resource limits (8 ranks, 4096 elements a tensor,
// 4096 iterations a loop: a mutated `while` may never end) and by skipping
// inputs with a number above 64 (loop trip counts).
//
// Run: build/tests/compile_fuzz -max_total_time=60 tests/fuzz/corpus_compile
#include "SpmdProgramGen.h"

#include "frontend/Compilation.h"
#include "runtime/Verify.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const std::string &what, const std::string &program) {
  std::fprintf(stderr, "compile_fuzz: %s\n--- program:\n%s\n", what.c_str(), program.c_str());
  std::abort();
}

/// True when every run of digits in `text` is at most `max`.
bool smallNumbers(const std::string &text, long max) {
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit((unsigned char)text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit((unsigned char)text[j]))
      ++j;
    if (j - i > 3 || std::atol(text.substr(i, j - i).c_str()) > max)
      return false;
    i = j;
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096)
    return 0;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (text.rfind("# gen ", 0) == 0)
    text = dt::generateSpmdProgram(std::strtoull(text.c_str() + 6, nullptr, 10));
  else if (!smallNumbers(text, 64))
    return 0;
  dt::CompileOptions opts;
  opts.maxRanks = 8;
  opts.maxTensorElements = 4096;
  opts.maxLoopTrips = 4096; // a mutated `while` may never end
  opts.fileAccess = false;  // a mutated `save` path must never clobber a file
  try {
    dt::VerifyResult vr = dt::verifySource("fuzz.dt", text, {}, 0, opts);
    if (!vr.compiled) {
      if (vr.diagnostics.find(": error: ") == std::string::npos)
        fail("rejected without a located error:\n" + vr.diagnostics, text);
      return 0;
    }
    // `time()` reads the clock: a program that prints it differs by design.
    const bool clock = text.find("time(") != std::string::npos;
    if (!clock && !dt::allPass(vr.checks))
      fail("the SPMD run differs from the reference:\n" + dt::formatChecks(vr.checks), text);
  } catch (const dt::RuntimeFault &) {
    // a run-time user error (e.g. an index out of range) is a valid outcome
  } catch (const dt::InternalError &e) {
    fail(std::string("internal error: ") + e.what(), text);
  } catch (const std::exception &e) {
    fail(std::string("exception: ") + e.what(), text);
  }
  return 0;
}
