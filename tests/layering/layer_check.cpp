// This file implements the ctest `layering`: the folder chain of
// cmake/Layers.cmake holds for every #include of the tree (LayerCheck.h).
//   dt_layer_check --root <source tree> --allow <back-edges.txt> <folder>...
// The folders are given bottom first. Exit 0 when it holds, 1 with one line per
// offending include otherwise, 2 on bad arguments.
#include "tests/layering/LayerCheck.h"

#include <cstdio>
#include <sstream>

int main(int argc, char **argv) {
  std::string root, allowPath;
  std::vector<std::string> order;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--root" && i + 1 < argc)
      root = argv[++i];
    else if (a == "--allow" && i + 1 < argc)
      allowPath = argv[++i];
    else if (!a.empty() && a[0] != '-')
      order.push_back(a);
    else {
      std::fprintf(stderr, "usage: dt_layer_check --root DIR --allow FILE FOLDER...\n");
      return 2;
    }
  }
  if (root.empty() || allowPath.empty() || order.size() < 2) {
    std::fprintf(stderr, "usage: dt_layer_check --root DIR --allow FILE FOLDER...\n");
    return 2;
  }
  std::ifstream in(allowPath);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read\n", allowPath.c_str());
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<dtlayers::BackEdge> allowed;
  std::string err;
  if (!dtlayers::parseBackEdges(text.str(), allowed, err)) {
    std::fprintf(stderr, "%s: %s\n", allowPath.c_str(), err.c_str());
    return 2;
  }
  dtlayers::LayerReport r = dtlayers::checkLayers(root, order, allowed);
  for (const std::string &e : r.errors)
    std::printf("%s\n", e.c_str());
  std::printf("%d files, %d includes of the chain's folders, %zu listed back edges: %s\n", r.files,
              r.includes, allowed.size(), r.ok() ? "the chain holds" : "FAILED");
  return r.ok() ? 0 : 1;
}
