// Unit tests of the folder-chain check (tests/layering/LayerCheck.h) on small
// trees written to a temporary folder: it must find a planted upward include
// in any file kind, accept downward and same-folder ones, honour exactly the
// listed back edges and report stale ones, and fail on a tree it cannot read.
#include "tests/layering/LayerCheck.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace dtlayers;

namespace {

struct TempTree {
  fs::path root;
  TempTree() {
    std::string tmpl = (fs::temp_directory_path() / "dt_layers_XXXXXX").string();
    root = mkdtemp(tmpl.data());
  }
  ~TempTree() { fs::remove_all(root); }
  void write(const std::string &rel, const std::string &text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
};

const std::vector<std::string> kOrder = {"support", "ir", "frontend", "tools"};

// A tree that holds: every include goes down or stays in its folder.
void writeGoodTree(TempTree &t) {
  t.write("support/Diag.h", "#pragma once\n#include <string>\n");
  t.write("support/Diag.cpp", "#include \"support/Diag.h\"\n");
  t.write("ir/IR.h", "#pragma once\n#include \"support/Diag.h\"\n");
  t.write("ir/IR.cpp", "#include \"ir/IR.h\"\n#include \"Local.h\"\n");
  t.write("ir/Local.h", "#pragma once\n");
  t.write("frontend/Build.cpp", "#include \"ir/IR.h\"\n  #  include \"support/Diag.h\"\n");
  t.write("tools/main.cpp", "#include \"frontend/Build.h\"\n#include <vector>\n");
}

} // namespace

TEST_CASE("layering: a tree whose includes all go down holds") {
  TempTree t;
  writeGoodTree(t);
  LayerReport r = checkLayers(t.root, kOrder, {});
  CHECK(r.ok());
  CHECK(r.files == 7);
  CHECK(r.includes == 7);
}

TEST_CASE("layering: a planted upward include is found in every kind of file") {
  for (std::string file : {"support/Diag.h", "support/Diag.cpp", "support/x.def",
                           "support/sub/Deep.h", "ir/IR.h", "ir/lexer.re", "ir/parser.yy"}) {
    CAPTURE(file);
    TempTree t;
    writeGoodTree(t);
    t.write(file, "// ok\n#include \"frontend/Build.h\"\n");
    LayerReport r = checkLayers(t.root, kOrder, {});
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].find(file + ":2:") == 0);
    CHECK(r.errors[0].find("`frontend/Build.h`") != std::string::npos);
  }
  // Into the top folder and with odd spacing.
  TempTree t;
  writeGoodTree(t);
  t.write("frontend/Build.h", "#pragma once\n# include   \"tools/main.h\"\n");
  CHECK(checkLayers(t.root, kOrder, {}).errors.size() == 1);
}

TEST_CASE("layering: a quoted include of a folder outside the chain is an error") {
  TempTree t;
  writeGoodTree(t);
  t.write("ir/Bad.cpp", "#include \"tests/Helper.h\"\n");
  LayerReport r = checkLayers(t.root, kOrder, {});
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find("no folder of the chain") != std::string::npos);
}

TEST_CASE("layering: the back-edge list allows exactly its edges and must stay current") {
  TempTree t;
  writeGoodTree(t);
  t.write("ir/Up.cpp", "#include \"frontend/Build.h\"\n#include \"frontend/Other.h\"\n");
  std::vector<BackEdge> allowed;
  std::string err;
  REQUIRE(parseBackEdges("# comment\n\nir/Up.cpp frontend/Build.h -- reason\n", allowed, err));
  REQUIRE(allowed.size() == 1);
  LayerReport r = checkLayers(t.root, kOrder, allowed);
  REQUIRE(r.errors.size() == 1); // the second header of the same folder is not listed
  CHECK(r.errors[0].find("`frontend/Other.h`") != std::string::npos);

  // A listed edge that no longer occurs is stale.
  allowed.clear();
  REQUIRE(parseBackEdges("ir/Gone.cpp frontend/Build.h -- was needed\n", allowed, err));
  r = checkLayers(t.root, kOrder, allowed);
  CHECK(r.errors.size() == 3);
  CHECK(r.errors.back().find("no longer includes") != std::string::npos);

  // Every line needs a reason.
  std::vector<BackEdge> bad;
  CHECK_FALSE(parseBackEdges("ir/Up.cpp frontend/Build.h\n", bad, err));
  CHECK(err.find("line 1") != std::string::npos);
}

TEST_CASE("layering: a missing or empty folder fails instead of passing on nothing") {
  TempTree t;
  writeGoodTree(t);
  CHECK_FALSE(checkLayers(t.root / "nowhere", kOrder, {}).ok());
  fs::remove_all(t.root / "ir");
  fs::create_directories(t.root / "ir");
  CHECK_FALSE(checkLayers(t.root, kOrder, {}).ok());
}
