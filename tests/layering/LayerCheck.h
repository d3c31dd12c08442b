// This file implements the check that the source folders form a chain: a
// folder includes headers only of itself and of the folders below it
// (cmake/Layers.cmake). It reads every `#include` of every source file of
// every folder of the chain and reports each include of a folder above, unless
// the edge is listed in cmake/back-edges.txt; a listed edge that no longer
// occurs is reported too, so the list only shrinks. Shared by the ctest
// `layering` (tests/layering/layer_check.cpp) and its unit test, which plants
// bad includes in a temporary tree.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace dtlayers {

namespace fs = std::filesystem;

struct BackEdge {
  std::string from, to; ///< `frontend/BuildCall.cpp`, `passes/Autodiff.h`
  int line = 0;         ///< in the list
};

struct LayerReport {
  std::vector<std::string> errors; ///< one line each, `file:line: ...`
  int files = 0, includes = 0;     ///< scanned, in the chain's folders
  bool ok() const { return errors.empty(); }
};

/// Parses the back-edge list: `<file> <header> -- <reason>` a line, `#` comments.
inline bool parseBackEdges(const std::string &text, std::vector<BackEdge> &out, std::string &err) {
  static const std::regex kLine(R"(^(\S+)\s+(\S+)\s+--\s+\S.*$)");
  size_t pos = 0;
  for (int n = 1; pos <= text.size(); ++n) {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() + 1 : end + 1;
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#')
      continue;
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) {
      err = "line " + std::to_string(n) + ": `" + line + "` is not `<file> <header> -- <reason>`";
      return false;
    }
    out.push_back({m[1], m[2], n});
  }
  return true;
}

inline bool isSourceFile(const fs::path &p) {
  static const std::set<std::string> kExt = {".h",   ".hpp", ".cpp", ".cc",
                                             ".def", ".inc", ".yy",  ".re"};
  return kExt.count(p.extension().string()) > 0;
}

/// Checks the tree at `root`. `order` lists the folders bottom first; the
/// folder `include` holds the public headers, included as `dtensor/...`.
/// Every folder of `order` must exist and hold a source file, so a wrong root
/// or a renamed folder fails instead of passing on nothing.
inline LayerReport checkLayers(const fs::path &root, const std::vector<std::string> &order,
                               const std::vector<BackEdge> &allowed) {
  LayerReport r;
  std::map<std::string, int> rank;
  for (size_t i = 0; i < order.size(); ++i)
    rank[order[i]] = (int)i;
  // The folder of the chain a path (relative to root) lies in; "" if none.
  auto layerOf = [&](const std::string &rel) -> std::string {
    std::string first = rel.substr(0, rel.find('/'));
    if (first == "dtensor" && rank.count("include"))
      return "include";
    return rank.count(first) ? first : "";
  };
  std::vector<bool> used(allowed.size(), false);
  static const std::regex kInclude(R"(^\s*#\s*include\s*([<"])([^">]+)[">])");
  for (const std::string &layer : order) {
    fs::path dir = root / layer;
    if (!fs::is_directory(dir)) {
      r.errors.push_back(dir.string() + ": folder of the chain is missing");
      continue;
    }
    std::vector<fs::path> files;
    for (const auto &e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && isSourceFile(e.path()))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty())
      r.errors.push_back(dir.string() + ": no source files in a folder of the chain");
    for (const fs::path &file : files) {
      ++r.files;
      std::string rel = fs::relative(file, root).generic_string();
      std::ifstream in(file);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, kInclude))
          continue;
        std::string inc = m[2];
        bool quoted = m[1] == "\"";
        std::string target;
        if (quoted && fs::exists(file.parent_path() / inc))
          target = layerOf(fs::relative(file.parent_path() / inc, root).generic_string());
        else
          target = layerOf(inc);
        if (target.empty()) {
          if (quoted)
            r.errors.push_back(rel + ":" + std::to_string(n) + ": includes `" + inc +
                               "`, which lies in no folder of the chain");
          continue; // a system header
        }
        if (target == "include")
          inc = "include/" + inc;
        ++r.includes;
        if (rank[target] <= rank[layer])
          continue;
        bool ok = false;
        for (size_t i = 0; i < allowed.size(); ++i)
          if (allowed[i].from == rel && allowed[i].to == inc)
            ok = used[i] = true;
        if (!ok)
          r.errors.push_back(rel + ":" + std::to_string(n) + ": `" + layer + "/` includes `" + inc +
                             "` of `" + target + "/`, which lies above it");
      }
    }
  }
  for (size_t i = 0; i < allowed.size(); ++i)
    if (!used[i])
      r.errors.push_back("back-edge list line " + std::to_string(allowed[i].line) + ": `" +
                         allowed[i].from + "` no longer includes `" + allowed[i].to +
                         "`; remove the line");
  return r;
}

} // namespace dtlayers
