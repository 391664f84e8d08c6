//===- RuleLibrary.h - Load the shipped rule library in tests -------------===//
//
// The shipped rules live in <repo>/patterns/*.pat (docs/rules.md). Tests load
// every file, sorted by name, the way `graft fuse --rules patterns/*.pat`
// does: each file with its imports, a rule reached through several files kept
// once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/dsl/Pat.h"
#include "graft/rewrite/Rewriter.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace graft::test {

/// <repo>/patterns, derived from GRAFT_TEST_DATA_DIR (<repo>/tests).
/// GRAFT_PATTERNS_DIR overrides it (a directory named `patterns`, so reports
/// still read patterns/foo.pat), to try a subset or a work-in-progress copy.
inline std::filesystem::path patternsDir() {
  if (const char *dir = std::getenv("GRAFT_PATTERNS_DIR"))
    return std::filesystem::path(dir);
  return std::filesystem::path(GRAFT_TEST_DATA_DIR).parent_path() / "patterns";
}

/// patterns/*.pat, sorted.
inline std::vector<std::filesystem::path> ruleLibraryFiles() {
  std::vector<std::filesystem::path> out;
  for (const auto &e : std::filesystem::directory_iterator(patternsDir()))
    if (e.is_regular_file() && e.path().extension() == ".pat")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// Every rule of the library, in file order; `error` gets the rendered
/// diagnostics of the first file that fails to load.
inline std::vector<rewrite::Rule> loadRuleLibrary(SourceManager &sources, std::string &error) {
  std::vector<rewrite::Rule> rules;
  std::set<std::tuple<std::string, uint32_t, uint32_t, unsigned>> seen;
  for (const auto &f : ruleLibraryFiles()) {
    auto set = dsl::parsePatFile(f.string(), &sources);
    if (!set) {
      error = render(set.diags(), &sources);
      return {};
    }
    for (rewrite::Rule &r : set->rules)
      if (seen.emplace(r.loc.begin.file, r.loc.begin.line, r.loc.begin.column, r.variant).second)
        rules.push_back(std::move(r));
  }
  return rules;
}

} // namespace graft::test
