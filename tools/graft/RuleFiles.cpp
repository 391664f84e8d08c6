//===- RuleFiles.cpp - --rules FILES|DIRS for the rule commands ------------===//
//
// Every command that takes rules (fuse, explain, coverage, verify-rules,
// check, fmt) accepts files and directories, repeated or comma-separated. A
// directory stands for its *.pat files in name order, so `--rules patterns/`
// means the shipped library; a directory without any is an error rather
// than a silent empty rule set.
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/dsl/Pat.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

namespace graft::cli {

namespace fs = std::filesystem;

Expected<std::vector<std::string>> expandRulePaths(const std::vector<std::string> &values) {
  std::vector<std::string> out;
  for (const std::string &v : values) {
    std::stringstream ss(v);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (part.empty())
        continue;
      std::error_code ec;
      if (!fs::is_directory(part, ec)) {
        out.push_back(part);
        continue;
      }
      std::vector<std::string> found;
      for (const fs::directory_entry &e : fs::directory_iterator(part, ec))
        if (e.is_regular_file() && e.path().extension() == ".pat")
          found.push_back(e.path().string());
      if (ec)
        return Diagnostic::error("cannot list rule directory '" + part + "': " + ec.message());
      if (found.empty())
        return Diagnostic::error("rule directory '" + part + "' has no .pat files");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    }
  }
  return out;
}

std::optional<rewrite::CompiledRules> loadRuleFiles(const std::vector<std::string> &files,
                                                    SourceManager &sources, int &status) {
  std::vector<rewrite::Rule> rules;
  // A rule reached through several files (imports) is kept once.
  std::set<std::tuple<std::string, uint32_t, uint32_t, unsigned>> seen;
  for (const std::string &f : files) {
    auto set = dsl::parsePatFile(f, &sources);
    if (!set) {
      status = reportFailure(set.diags(), &sources);
      return std::nullopt;
    }
    for (const Diagnostic &w : set->warnings)
      std::cerr << render(w, &sources);
    for (rewrite::Rule &r : set->rules)
      if (seen.emplace(r.loc.begin.file, r.loc.begin.line, r.loc.begin.column, r.variant).second)
        rules.push_back(std::move(r));
  }
  auto compiled = rewrite::CompiledRules::compile(std::move(rules));
  if (!compiled) {
    status = reportFailure(compiled.diags(), &sources);
    return std::nullopt;
  }
  return std::move(*compiled);
}

} // namespace graft::cli
