//===- RewriteGoldenTest.cpp - Graph + rules -> expected graph ------------===//
//
// Each directory tests/golden/rewrite/<case>/ holds
//   rules.pat     the rules (loaded through the .pat front end, with imports)
//   input.gir     the graph to fuse
//   expected.gir  the fused graph, printed canonically
//   expected.txt  what fired, per-rule statistics and the FQN registry
// A new case is a new directory. The fused graph must verify, and when the
// input carries data for every constant it must compute the same outputs as
// the input within the rules' largest tolerance. Set GRAFT_UPDATE_GOLDEN=1
// to rewrite the expected files (then review the diff).
//
//===----------------------------------------------------------------------===//
#include "graft/dsl/Pat.h"
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

using namespace graft;
namespace fs = std::filesystem;

namespace {

class RewriteGolden : public ::testing::TestWithParam<fs::path> {};

} // namespace

TEST_P(RewriteGolden, FusesToTheExpectedGraph) {
  const fs::path dir = GetParam();
  SourceManager sources;
  auto rules = dsl::parsePatFile((dir / "rules.pat").string(), &sources);
  ASSERT_TRUE(rules.ok()) << render(rules.diags(), &sources);
  double atol = 0, rtol = 0;
  for (const rewrite::Rule &r : rules->rules) {
    auto [a, rel] = rewrite::widestTolerance(r);
    atol = std::max(atol, a);
    rtol = std::max(rtol, rel);
  }
  auto compiled = rewrite::CompiledRules::compile(std::move(rules->rules));
  ASSERT_TRUE(compiled.ok()) << render(compiled.diags(), &sources);
  auto graph = parseGraphFile((dir / "input.gir").string(), &sources);
  ASSERT_TRUE(graph.ok()) << render(graph.diags(), &sources);
  auto before = parseGraphFile((dir / "input.gir").string());
  ASSERT_TRUE(before.ok());

  rewrite::FqnRegistry fqns;
  rewrite::RewriteOptions options;
  options.verifyEach = true;
  auto result = rewrite::applyRules(**graph, *compiled, fqns, options);
  ASSERT_TRUE(result.ok()) << render(result.diags(), &sources);
  EXPECT_TRUE(result->converged);
  EXPECT_TRUE(verify(**graph).empty()) << render(verify(**graph));

  PrintOptions po;
  po.maxInlineElements = 4096;
  auto text = printGraph(**graph, po);
  ASSERT_TRUE(text.ok()) << render(text.diags());
  std::string report = rewrite::formatResult(*result, *compiled);
  if (fqns.size())
    report += "constants made:\n" + fqns.str();
  // Paths in the report are relative to the case directory.
  std::string prefix = dir.string() + "/";
  for (std::size_t at; (at = report.find(prefix)) != std::string::npos;)
    report.erase(at, prefix.size());

  if (std::getenv("GRAFT_UPDATE_GOLDEN")) {
    ASSERT_TRUE(writeFileAtomic((dir / "expected.gir").string(), *text).ok());
    ASSERT_TRUE(writeFileAtomic((dir / "expected.txt").string(), report).ok());
  }
  EXPECT_EQ(*text, test::readOrEmpty(dir / "expected.gir")) << dir;
  EXPECT_EQ(report, test::readOrEmpty(dir / "expected.txt")) << dir;

  // The expected graph reads back as written.
  auto again = parseGraph(*text, "expected.gir");
  ASSERT_TRUE(again.ok()) << render(again.diags());

  if (test::allConstantsHaveData(**before))
    test::expectSameOutputs(**before, **graph, atol, rtol, dir);
}

INSTANTIATE_TEST_SUITE_P(Cases, RewriteGolden, ::testing::ValuesIn(test::goldenCaseDirs("rewrite")),
                         [](const ::testing::TestParamInfo<fs::path> &info) {
                           return info.param.filename().string();
                         });
