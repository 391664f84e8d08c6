//===- GoldenCases.h - Helpers shared by the golden-directory tests -------===//
//
// RewriteGoldenTest (tests/golden/rewrite) and RuleLibraryTest
// (tests/golden/rules) both run one test per case directory and compare
// against expected files that may not exist yet (GRAFT_UPDATE_GOLDEN=1).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/support/FileIO.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace graft::test {

/// The case directories under tests/golden/<area>, sorted.
inline std::vector<std::filesystem::path> goldenCaseDirs(const std::string &area) {
  std::vector<std::filesystem::path> out;
  std::filesystem::path root = std::filesystem::path(GRAFT_TEST_DATA_DIR) / "golden" / area;
  for (const auto &e : std::filesystem::directory_iterator(root))
    if (e.is_directory())
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// The file's text, or "" when it does not exist (a case not generated yet).
inline std::string readOrEmpty(const std::filesystem::path &p) {
  auto t = readFile(p.string());
  return t ? *t : std::string();
}

/// Whether every constant input carries data (then the graph can be run).
inline bool allConstantsHaveData(const Graph &g) {
  for (const GraphInput &in : g.inputs())
    if (in.isConstant() && !in.hasData())
      return false;
  return true;
}

} // namespace graft::test
