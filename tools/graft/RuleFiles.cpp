//===- RuleFiles.cpp - --rules FILES|DIRS for the rule commands ------------===//
//
// Every command that takes rules (fuse, explain, coverage, verify-rules,
// check) accepts files and directories, repeated or comma-separated. A
// directory stands for its *.pat files in name order, so `--rules patterns/`
// means the shipped library; a directory without any is an error rather
// than a silent empty rule set. Without any, a command runs the shipped
// rules (embedded in the binary), loaded as one graft::RuleSet with its
// phases, exactly as `graft compile` loads them.
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/Compiler.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <system_error>

namespace graft::cli {

namespace fs = std::filesystem;

std::vector<std::string> splitList(const std::vector<std::string> &values) {
  std::vector<std::string> out;
  for (const std::string &v : values) {
    std::stringstream ss(v);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty())
        out.push_back(part);
  }
  return out;
}

FlagSpec allowLossyFlag() {
  return {"allow-lossy", false,
          "also run rules tagged `lossy` (e.g. qdq_fold_q_dq, which drops a simulated "
          "quantization)"};
}

std::optional<RuleSet> loadRuleSet(const std::vector<std::string> &values, const char *cmd,
                                   SourceManager &sources, int &status, bool allowLossy) {
  auto files = expandRulePaths(splitList(values));
  if (!files) {
    std::cerr << "graft " << cmd << ": ";
    status = reportFailure(files.diags());
    return std::nullopt;
  }
  RuleSet rules;
  if (files->empty()) {
    auto shipped = RuleSet::shipped(&sources);
    if (!shipped) {
      status = reportFailure(shipped.diags(), &sources);
      return std::nullopt;
    }
    rules = std::move(*shipped);
  }
  for (const std::string &f : *files) {
    Status s = rules.addPath(f, &sources);
    if (!s) {
      status = reportFailure(s.diags(), &sources);
      return std::nullopt;
    }
  }
  for (const Diagnostic &w : rules.warnings)
    std::cerr << render(w, &sources);
  rules.allowLossy(allowLossy);
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    auto compiled = rules.compiled(phase);
    if (!compiled) {
      status = reportFailure(compiled.diags(), &sources);
      return std::nullopt;
    }
  }
  return rules;
}

} // namespace graft::cli
