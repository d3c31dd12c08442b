// This file implements the libFuzzer target for the parser: any byte string
// goes through parseProgram. Beyond "no crash, no hang, no sanitizer report"
// it checks the parser's contracts: a failed parse leaves a diagnostic, a
// clean one leaves none, and whatever parsed prints to text that parses back
// to the same print (parse(print(x)) == print(x)).
// Build: CC=clang-19 CXX=clang++-19 cmake -B build-fuzz -DDT_FUZZ=ON && ninja -C build-fuzz
// parse_fuzz Run:   ./build-fuzz/parse_fuzz -max_total_time=60 tests/fuzz/corpus
#include "grammar/Parser.h"

#include <cstdio>
#include <cstdlib>

namespace {

std::string parseAndPrint(const std::string &text, bool &ok, int &errors) {
  dt::SourceManager sm;
  int f = sm.add("fuzz.dt", text);
  dt::DiagEngine diags(sm);
  dt::ast::Program prog;
  ok = dt::parseProgram(text, f, diags, prog);
  errors = diags.errorCount();
  for (const auto &d : diags.all())
    (void)diags.render(d); // rendering must cope with any location
  return dt::ast::printProgram(prog);
}

[[noreturn]] void fail(const char *what, const std::string &a, const std::string &b) {
  std::fprintf(stderr, "parse_fuzz: %s\n--- first:\n%s\n--- second:\n%s\n", what, a.c_str(),
               b.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  bool ok = false;
  int errors = 0;
  std::string printed = parseAndPrint(text, ok, errors);
  if (ok != (errors == 0))
    fail("result disagrees with the diagnostics", text, printed);
  bool ok2 = false;
  int errors2 = 0;
  std::string again = parseAndPrint(printed, ok2, errors2);
  if (!ok2)
    fail("printed AST does not parse", printed, again);
  if (again != printed)
    fail("print(parse(print(x))) != print(x)", printed, again);
  return 0;
}
