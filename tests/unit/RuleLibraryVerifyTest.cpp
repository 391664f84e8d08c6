//===- RuleLibraryVerifyTest.cpp - Every shipped rule verifies ------------===//
//
// Differential verification (docs/rewrite-engine.md, "Verify-rules") of every
// rule in patterns/*.pat on a small number of instances per rule, so the
// suite stays quick. The full check, 1000+ instances per rule, is
// `make verify-rules` (graft verify-rules patterns/*.pat --instances N).
//
//===----------------------------------------------------------------------===//
#include "RuleLibrary.h"

#include "graft/rewrite/Rewriter.h"
#include "graft/rewrite/VerifyRules.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>

using namespace graft;

TEST(RuleLibraryVerify, EveryRuleVerifies) {
  SourceManager sources;
  std::string error;
  auto rules = test::loadRuleLibrary(sources, error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(rules.empty());
  auto compiled = rewrite::CompiledRules::compile(std::move(rules));
  ASSERT_TRUE(compiled.ok()) << render(compiled.diags(), &sources);
  rewrite::RuleVerifyOptions vo;
  vo.instances = 20;
  vo.seed = 7;
  auto results = rewrite::verifyRules(*compiled, vo);
  // One result per rule variant: nothing is skipped silently.
  EXPECT_EQ(results.size(), compiled->size());
  for (const rewrite::RuleVerification &v : results) {
    EXPECT_TRUE(v.ok()) << rewrite::format(v);
    EXPECT_GT(v.tested, 0u) << rewrite::format(v);
  }
}

TEST(RuleLibraryVerify, EveryFileIsCanonicallyFormattedAndWarningFree) {
  for (const auto &f : test::ruleLibraryFiles()) {
    SourceManager sources;
    auto set = dsl::parsePatFile(f.string(), &sources);
    ASSERT_TRUE(set.ok()) << render(set.diags(), &sources);
    EXPECT_TRUE(set->warnings.empty()) << f << ": " << render(set->warnings, &sources);
    auto text = readFile(f.string());
    ASSERT_TRUE(text.ok());
    auto formatted = dsl::formatPat(*text, f.string());
    ASSERT_TRUE(formatted.ok()) << render(formatted.diags());
    EXPECT_EQ(*formatted, *text) << f << " is not canonically formatted (run graft fmt -i)";
  }
}
