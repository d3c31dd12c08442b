// Unit tests of modules (`import`): what a module may hold, and the error
// for what it may not, which is in the module's file (a golden test cannot
// expect it there).
#include "frontend/Compilation.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dt;

TEST_CASE("modules: a module holds fn, struct and import; a mesh there is refused with why") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dt_module_unit_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "lib.dt") << "struct Pair { a: f32[4], b: f32[4] }\n"
                                   "fn total(p: Pair) -> f32[] { return sum(p.a + p.b) }\n";
  std::ofstream(dir / "bad.dt") << "mesh m = [x = 2]\nfn f(a: f32[4]) -> f32[4] { return a }\n";
  std::ofstream(dir / "ok.dt") << "import lib\nlet p = lib.Pair(a=[1.0, 2.0, 3.0, 4.0], "
                                  "b=[1.0, 1.0, 1.0, 1.0])\nprint(lib.total(p))\n";
  std::ofstream(dir / "uses_bad.dt") << "import bad\nprint(bad.f([1.0, 2.0, 3.0, 4.0]))\n";
  {
    Compilation c;
    CHECK(c.compileFile((dir / "ok.dt").string()));
    CHECK(c.diags.errorCount() == 0);
  }
  Compilation c;
  CHECK(!c.compileFile((dir / "uses_bad.dt").string()));
  REQUIRE(c.diags.all().size() >= 1);
  const Diagnostic &d = c.diags.all()[0];
  CHECK(d.id == DiagId::ModuleStatement);
  CHECK(d.message == "a module holds only `fn`, `struct` and `import`");
  CHECK(d.hint.find("meshes belong to the program") == 0);
  CHECK(c.sources.path(d.loc.file).find("bad.dt") != std::string::npos);
  CHECK(d.loc.line == 1);
  fs::remove_all(dir);
}
