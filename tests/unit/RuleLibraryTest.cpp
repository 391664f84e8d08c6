//===- RuleLibraryTest.cpp - The shipped rule library on golden graphs ----===//
//
// Each directory tests/golden/rules/<case>/ holds
//   input.gir     the graph to fuse
//   expected.gir  the graph after EVERY rule of patterns/*.pat (loaded sorted by
//                 file name) ran on it, printed canonically
//   expected.txt  what fired, per-rule statistics and the FQN registry
//   explain.txt   (optional) `graft explain` over all rules on input.gir:
//                 negative cases use it to pin the predicate that fails
//   options.txt   (optional) fuse flags, one per line: `allow-lossy` also
//                 runs the rules tagged lossy (they are off by default)
// A new case is a new directory. The fused graph must verify; when the input
// carries data for every constant it must compute the same outputs as the
// input within the largest tolerance of the rules that fired. Paths in the
// reports are relative to the repository root (patterns/foo.pat:12:5).
// GRAFT_UPDATE_GOLDEN=1 rewrites the expected files (then review the diff).
//
//===----------------------------------------------------------------------===//
#include "RuleLibrary.h"

#include "graft/Compiler.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include "GoldenCases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

using namespace graft;
namespace fs = std::filesystem;

namespace {

/// Strips `prefix` everywhere in `text` (absolute paths -> repo-relative).
std::string stripPrefix(std::string text, const std::string &prefix) {
  for (std::size_t at; (at = text.find(prefix)) != std::string::npos;)
    text.erase(at, prefix.size());
  return text;
}

class RuleLibraryGolden : public ::testing::TestWithParam<fs::path> {};

} // namespace

TEST_P(RuleLibraryGolden, FusesToTheExpectedGraph) {
  const fs::path dir = GetParam();
  const std::string repoPrefix = test::patternsDir().parent_path().string() + "/";
  SourceManager sources;
  // The library as graft fuse / graft compile load it: phase by phase.
  RuleSet rules;
  Status loaded = rules.addPath(test::patternsDir().string(), &sources);
  ASSERT_TRUE(loaded.ok()) << render(loaded.diags(), &sources);
  ASSERT_GT(rules.size(), 0u) << "no rules in " << test::patternsDir();
  // options.txt, when there is one: the flags graft fuse would be given, one
  // per line (allow-lossy).
  if (fs::exists(dir / "options.txt")) {
    std::stringstream options(test::readOrEmpty(dir / "options.txt"));
    for (std::string option; std::getline(options, option);) {
      if (option == "allow-lossy")
        rules.allowLossy();
      else if (!option.empty())
        FAIL() << dir / "options.txt"
               << ": unknown option '" << option << "'";
    }
  }
  auto graph = parseGraphFile((dir / "input.gir").string(), &sources);
  ASSERT_TRUE(graph.ok()) << render(graph.diags(), &sources);
  auto before = parseGraphFile((dir / "input.gir").string());
  ASSERT_TRUE(before.ok());
  const bool update = std::getenv("GRAFT_UPDATE_GOLDEN") != nullptr;

  // explain runs over every rule, each phase's on the graph that phase sees.
  if (fs::exists(dir / "explain.txt")) {
    auto explained = parseGraphFile((dir / "input.gir").string());
    ASSERT_TRUE(explained.ok());
    auto entries = explainPhases(**explained, rules);
    ASSERT_TRUE(entries.ok()) << render(entries.diags(), &sources);
    std::string text;
    for (const rewrite::ExplainEntry &e : *entries)
      text += rewrite::format(e) + "\n";
    text = stripPrefix(text, repoPrefix);
    if (update) {
      ASSERT_TRUE(writeFileAtomic((dir / "explain.txt").string(), text).ok());
    }
    EXPECT_EQ(text, test::readOrEmpty(dir / "explain.txt")) << dir;
  }

  rewrite::FqnRegistry fqns;
  rewrite::RewriteOptions options;
  options.verifyEach = true;
  auto result = fuse(**graph, rules, fqns, options);
  ASSERT_TRUE(result.ok()) << render(result.diags(), &sources);
  EXPECT_TRUE(result->converged());
  EXPECT_TRUE(verify(**graph).empty()) << render(verify(**graph));

  PrintOptions po;
  po.maxInlineElements = 4096;
  auto text = printGraph(**graph, po);
  ASSERT_TRUE(text.ok()) << render(text.diags());
  std::string report = formatFuseResult(*result, rules);
  if (fqns.size())
    report += "constants made:\n" + fqns.str();
  report = stripPrefix(report, repoPrefix);

  if (update) {
    ASSERT_TRUE(writeFileAtomic((dir / "expected.gir").string(), *text).ok());
    ASSERT_TRUE(writeFileAtomic((dir / "expected.txt").string(), report).ok());
  }
  EXPECT_EQ(*text, test::readOrEmpty(dir / "expected.gir")) << dir;
  EXPECT_EQ(report, test::readOrEmpty(dir / "expected.txt")) << dir;

  // A bf16 checkpoint in an f32 model (dtype_legalize.pat) ends like an f32 one:
  // no node produces bf16; the bf16 scales remain only as unused parameters.
  if (dir.filename().string().rfind("bf16_checkpoint", 0) == 0) {
    for (const Node &n : (*graph)->nodes())
      for (const Value *v : n.outputs())
        EXPECT_FALSE(v->isTensor() && v->proto().dtype == DType::BF16)
            << dir << ": %" << v->name() << " is still bf16";
    for (const GraphInput &in : (*graph)->inputs()) {
      if (in.value->isTensor() && in.value->proto().dtype == DType::BF16) {
        EXPECT_FALSE(in.value->hasUses()) << dir << ": %" << in.value->name() << " is still used";
      }
    }
  }
  // An f16 model from an f32 or bf16 checkpoint ends like an f16 checkpoint:
  // every float value a node produces is f16 (the casts were folded away).
  if (dir.filename().string().rfind("f16_compute", 0) == 0) {
    for (const Node &n : (*graph)->nodes())
      for (const Value *v : n.outputs())
        EXPECT_FALSE(v->isTensor() && isFloatingPoint(v->proto().dtype) &&
                     v->proto().dtype != DType::F16)
            << dir << ": %" << v->name() << " is " << name(v->proto().dtype);
  }

  auto again = parseGraph(*text, "expected.gir");
  ASSERT_TRUE(again.ok()) << render(again.diags());

  // The tolerance is the largest of the rules that fired (exact when none did).
  double atol = 0, rtol = 0;
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    if (rules.rules(phase).empty())
      continue;
    const rewrite::CompiledRules &compiled = **rules.compiled(phase);
    for (const rewrite::RuleStats &s : result->pass(phase).stats) {
      if (!s.applied)
        continue;
      for (std::size_t i : compiled.find(s.rule)) {
        auto [a, r] = rewrite::widestTolerance(compiled.rule(i));
        atol = std::max(atol, a);
        rtol = std::max(rtol, r);
      }
    }
  }
  if (test::allConstantsHaveData(**before))
    test::expectSameOutputs(**before, **graph, atol, rtol, dir);
}

INSTANTIATE_TEST_SUITE_P(Cases, RuleLibraryGolden,
                         ::testing::ValuesIn(test::goldenCaseDirs("rules")),
                         [](const ::testing::TestParamInfo<fs::path> &info) {
                           return info.param.filename().string();
                         });
