//===- RewriteCliTest.cpp - graft fuse / explain / verify-rules -----------===//
//
// End to end through the binary: rules from .pat files (the DSL front end),
// graphs from text IR; exit codes, the report, the JSON, the written graph
// and its data file, explain lines, verify-rules catching a planted bug.
//
//===----------------------------------------------------------------------===//
#include "CliTestUtil.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using graft::testing::CliRun;
using graft::testing::runGraft;
using graft::testing::slurp;

namespace {

std::string temp(const std::string &name) {
  return ::testing::TempDir() + "rwcli_" + std::to_string(::getpid()) + "_" + name;
}

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = temp(name);
  std::ofstream(path) << text;
  return path;
}

const std::string kGolden = std::string(GRAFT_TEST_DATA_DIR) + "/golden/rewrite/";
const std::string kExamples = std::string(GRAFT_TEST_DATA_DIR) + "/../examples/";

} // namespace

TEST(RewriteCli, FuseWritesTheGraphAndReportsWhatFired) {
  std::string out = temp("fused.gir");
  CliRun r = runGraft("fuse " + kExamples + "tiny_embedding.gir --rules " + kGolden +
                      "embedding_q4gsw/rules.pat -o " + out + " --verify-each");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fired torchao_embedding_q4gsw at %out -> %embedding_q4gsw; new constants "
                       "tok_embeddings.weight.pack_int4_low_first"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 rewrite(s) in 2 iteration(s), converged; nodes 2 -> 1"),
            std::string::npos)
      << r.out;
  std::string text = slurp(out);
  EXPECT_NE(text.find("et_vk.embedding_q4gsw.default("), std::string::npos) << text;
  // The packed weight (4096 bytes) went to the data file next to OUT.
  std::string bin = out.substr(0, out.size() - 4) + ".bin";
  EXPECT_NE(text.find("file(\"" + bin.substr(bin.rfind('/') + 1) + "\""), std::string::npos)
      << text;
  // The written graph verifies and runs.
  CliRun v = runGraft("verify " + out);
  EXPECT_EQ(v.code, 0) << v.err;
  CliRun run = runGraft("run " + out);
  EXPECT_EQ(run.code, 0) << run.err;
  std::remove(out.c_str());
  std::remove(bin.c_str());
}

TEST(RewriteCli, FuseJsonHasStatsAndProvenance) {
  CliRun r = runGraft("fuse " + kGolden + "tied_embedding_lm_head/input.gir --rules " + kGolden +
                      "tied_embedding_lm_head/rules.pat --json -o " + temp("tied.gir"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["converged"], true);
  EXPECT_EQ(j["rewrites"], 2);
  EXPECT_EQ(j["fired"].size(), 2u);
  EXPECT_EQ(j["stats"][0]["rule"], "torchao_embedding_q4gsw");
  bool packedTwice = false;
  for (const auto &e : j["provenance"])
    if (e["fqn"] == "tok_embeddings.weight.pack_int4_low_first")
      packedTwice = e["requests"] == 2;
  EXPECT_TRUE(packedTwice) << r.out;
}

TEST(RewriteCli, ExplainPrintsTheFailingCheck) {
  std::string bad = slurp(kExamples + "tiny_embedding.gir");
  bad.replace(bad.find("i8, -8, 7"), 9, "i8, -128, 127");
  std::string path = writeTemp("bad.gir", bad);
  CliRun r = runGraft("explain " + path + " --rules " + kGolden + "embedding_q4gsw/rules.pat");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("rule torchao_embedding_q4gsw (" + kGolden +
                       "embedding_q4gsw/rules.pat:8:42): quant_min: expected -8, node %dq has "
                       "-128 [root %out]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 candidate(s), 0 match"), std::string::npos) << r.out;
  CliRun none =
      runGraft("explain " + path + " --rules " + kGolden + "embedding_q4gsw/rules.pat --rule nope");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no rule named 'nope'"), std::string::npos) << none.err;
  std::remove(path.c_str());
}

TEST(RewriteCli, VerifyRulesPassesGoodRulesAndCatchesAPlantedBug) {
  CliRun ok = runGraft("verify-rules " + kGolden + "embedding_q4gsw/rules.pat --instances 2");
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("ok, 2 instance(s), max |diff| 0.0"), std::string::npos) << ok.out;

  std::string rules = slurp(kGolden + "embedding_q4gsw/rules.pat");
  rules.replace(rules.find("nibbles = low_first"), 19, "nibbles = high_first");
  std::string path = writeTemp("bug.pat", rules);
  CliRun bug = runGraft("verify-rules " + path + " --instances 2");
  EXPECT_EQ(bug.code, 1);
  EXPECT_NE(bug.out.find("FAILED on D=64, G=32, NG=2, V=8, odt=f32; seed 1"), std::string::npos)
      << bug.out;
  EXPECT_NE(bug.out.find("counterexample:"), std::string::npos) << bug.out;
  EXPECT_NE(bug.out.find("graph @instance_torchao_embedding_q4gsw"), std::string::npos) << bug.out;
  std::remove(path.c_str());
}

TEST(RewriteCli, BadInvocationsAreUserErrors) {
  EXPECT_EQ(runGraft("fuse").code, 1);
  EXPECT_EQ(runGraft("fuse --rules x.pat").code, 1);
  CliRun missing = runGraft("fuse " + kExamples + "tiny_embedding.gir --rules /nonexistent.pat");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(runGraft("verify-rules " + kGolden + "embedding_q4gsw/rules.pat --instances x").code,
            1);
  for (const char *cmd : {"fuse", "explain", "verify-rules"})
    EXPECT_EQ(runGraft(std::string(cmd) + " --help").code, 0) << cmd;
}

// Lossy rules (tag `lossy`) are opt-in: fuse leaves the Q -> DQ pair and says
// which rule it did not run; --allow-lossy folds it.
TEST(RewriteCli, LossyRulesRunOnlyWithAllowLossy) {
  const std::string input =
      std::string(GRAFT_TEST_DATA_DIR) + "/golden/rules/qdq_q_dq_fold/input.gir";
  CliRun kept = runGraft("fuse " + input + " -o " + temp("lossy_default.gir"));
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_EQ((kept.out + kept.err).find("fired qdq_fold_q_dq"), std::string::npos) << kept.out;
  EXPECT_NE((kept.out + kept.err).find("not run (lossy; --allow-lossy runs them): qdq_fold_q_dq"),
            std::string::npos)
      << kept.out << kept.err;
  CliRun folded = runGraft("fuse " + input + " --allow-lossy -o " + temp("lossy_allowed.gir"));
  ASSERT_EQ(folded.code, 0) << folded.err;
  EXPECT_NE((folded.out + folded.err).find("fired qdq_fold_q_dq"), std::string::npos)
      << folded.out << folded.err;
}

// Without FILEs, check checks the shipped rules compiled into graft.
TEST(RewriteCli, CheckDefaultsToTheShippedRules) {
  CliRun r = runGraft("check");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("patterns/embedding.pat: ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("patterns/select_as_symint.pat: ok"), std::string::npos) << r.out;
}

// Without FILEs, verify-rules checks the shipped rules of every phase.
TEST(RewriteCli, VerifyRulesDefaultsToTheShippedRules) {
  CliRun r = runGraft("verify-rules --instances 1 --rule dequantize_affine_f64_scale "
                      "--rule torchao_embedding_q4gsw");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("dequantize_affine_f64_scale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torchao_embedding_q4gsw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 0 failed"), std::string::npos) << r.out;
}

// Without --rules, fuse and explain use the shipped library, phase by phase
// as graft compile does; --json reports each phase with its timing.
TEST(RewriteCli, FuseDefaultsToTheShippedRulesPhaseByPhase) {
  CliRun fuse =
      runGraft("fuse " + kExamples + "tiny_embedding.gir --json -o " + temp("default_rules.gir"));
  ASSERT_EQ(fuse.code, 0) << fuse.err;
  auto j = nlohmann::json::parse(fuse.out);
  EXPECT_TRUE(j["converged"].get<bool>());
  ASSERT_EQ(j["phases"].size(), 2u) << fuse.out;
  EXPECT_EQ(j["phases"][0]["phase"], "legalize");
  EXPECT_EQ(j["phases"][1]["phase"], "fuse");
  EXPECT_GT(j["phases"][0]["rules"].get<int>(), 0);
  double total = 0;
  for (const auto &p : j["phases"]) {
    EXPECT_GE(p["seconds"].get<double>(), 0.0);
    total += p["seconds"].get<double>();
  }
  EXPECT_NEAR(j["seconds"].get<double>(), total, 1e-9);
  bool embedding = false;
  for (const auto &f : j["fired"])
    embedding = embedding || (f["rule"] == "torchao_embedding_q4gsw" && f["phase"] == "fuse");
  EXPECT_TRUE(embedding) << fuse.out;
  CliRun text = runGraft("fuse " + kExamples + "tiny_embedding.gir -o " + temp("text_rules.gir"));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("phase legalize:\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("phase fuse:\nfired torchao_embedding_q4gsw"), std::string::npos)
      << text.out;
  CliRun explain = runGraft("explain " + kExamples +
                            "tiny_embedding.gir --rule "
                            "torchao_embedding_q4gsw");
  ASSERT_EQ(explain.code, 0) << explain.err;
  EXPECT_NE(explain.out.find("matches at"), std::string::npos) << explain.out;
}

TEST(RewriteCli, RuleDirectoriesExpandToTheirPatFiles) {
  // `--rules DIR` means DIR/*.pat in name order — the shipped library is
  // `--rules patterns/` — for fuse, explain, coverage, check and verify-rules.
  const std::string patterns = std::string(GRAFT_TEST_DATA_DIR) + "/../patterns";
  CliRun fuse = runGraft("fuse " + kExamples + "tiny_embedding.gir --rules " + patterns);
  ASSERT_EQ(fuse.code, 0) << fuse.err;
  EXPECT_NE((fuse.out + fuse.err).find("fired torchao_embedding_q4gsw"), std::string::npos)
      << fuse.err;
  CliRun check = runGraft("check " + patterns);
  EXPECT_EQ(check.code, 0) << check.err;
  EXPECT_NE((check.out + check.err).find("embedding.pat: ok"), std::string::npos) << check.err;
  CliRun coverage =
      runGraft("coverage " + kExamples + "tiny_embedding.gir --format json --rules " + patterns);
  EXPECT_EQ(coverage.code, 0) << coverage.err;
  EXPECT_NE(coverage.out.find("\"torchao_embedding_q4gsw\""), std::string::npos);

  // A directory without rules is an error, never a silent empty rule set;
  // so is a directory where a file is expected.
  std::string empty = temp("no_rules_dir");
  std::filesystem::create_directories(empty);
  for (const char *cmd : {"fuse", "explain", "coverage"}) {
    CliRun r = runGraft(std::string(cmd) + " " + kExamples + "tiny_embedding.gir --rules " + empty);
    EXPECT_EQ(r.code, 1) << cmd << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("has no .pat files"), std::string::npos) << cmd << ": " << r.err;
  }
  CliRun verify = runGraft("verify-rules " + empty);
  EXPECT_EQ(verify.code, 1) << verify.err;
  CliRun print = runGraft("print " + empty);
  EXPECT_EQ(print.code, 1) << print.err;
  EXPECT_NE(print.err.find("is a directory"), std::string::npos) << print.err;
  std::filesystem::remove_all(empty);
}

// A rule whose replacement its own pattern matches (neg(x) -> neg(neg(neg(x))),
// meaning-preserving) fires on its own output until the rewrite limit: fuse
// and compile still succeed (every rewrite kept the meaning) and warn at the
// rule, naming it; verify-rules fails it.
TEST(RewriteCli, SelfMatchingRuleWarnsAtTheRewriteLimit) {
  std::string rules = writeTemp("self.pat", R"(rule neg_triple {
  match {
    %out = aten.neg.default($x)
  }
  rewrite {
    %a = aten.neg($x)
    %b = aten.neg(%a)
    %out = aten.neg(%b)
  }
}
)");
  std::string graph = writeTemp("self.gir", R"(graph @g {
  input %x : f32[4]
  %n : f32[4] = aten.neg.default(%x)
  output %n
}
)");
  const std::string warning = "self.pat:1:6: warning: the fuse pass stopped at its rewrite limit "
                              "after 1032 rewrites without reaching a fixpoint; rule 'neg_triple' "
                              "fired 1032 times, the most: if its replacement matches its own "
                              "pattern, it fires again on its own output until the limit";
  CliRun f = runGraft("fuse " + graph + " --rules " + rules + " -o " + temp("self_out.gir"));
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.err.find(warning), std::string::npos) << f.err;
  EXPECT_NE(f.out.find("NOT converged (rewrite limit)"), std::string::npos) << f.out;
  CliRun c = runGraft("compile " + graph + " --rules " + rules + " --no-default-rules --quiet -o " +
                      temp("self.vkprog"));
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find(warning), std::string::npos) << c.err;
  // verify-rules catches it statically, on the rule's own instance.
  CliRun v = runGraft("verify-rules " + rules);
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("FAILED on seed 1\n  the rule fires again on its own output: 64 rewrites "
                       "of one instance without reaching a fixpoint (its replacement matches its "
                       "own pattern)"),
            std::string::npos)
      << v.out;
  // A rule set that reaches its fixpoint warns about nothing.
  CliRun quiet = runGraft("fuse " + kGolden + "commutative_add/input.gir --rules " + kGolden +
                          "commutative_add/rules.pat -o " + temp("comm.gir"));
  EXPECT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("warning"), std::string::npos) << quiet.err;
  for (const char *name : {"self.pat", "self.gir", "self_out.gir", "self.vkprog", "comm.gir"})
    std::remove(temp(name).c_str());
}
