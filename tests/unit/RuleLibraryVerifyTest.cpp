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

namespace {

/// The shipped rule `name` of patterns/`file` with its line `good` replaced.
std::string plantBug(const char *file, const std::string &name, const std::string &good,
                     const std::string &replacement) {
  auto text = readFile((test::patternsDir() / file).string());
  EXPECT_TRUE(text.ok());
  if (!text.ok())
    return {};
  std::size_t begin = text->find("rule " + name + " ");
  std::size_t end = text->find("\n}\n", begin);
  EXPECT_NE(begin, std::string::npos);
  std::string rule = text->substr(begin, end + 3 - begin);
  std::size_t at = rule.find(good);
  EXPECT_NE(at, std::string::npos) << rule;
  return rule.replace(at, good.size(), replacement);
}

/// `rule` with its example's dtype entry `entry = [f32, f16]` narrowed to f16:
/// the rule's f16 instances only, checked against its guarded f16 tolerance.
std::string onlyF16(std::string rule, const std::string &entry) {
  const std::string both = "    " + entry + " = [f32, f16]\n";
  std::size_t at = rule.find(both);
  EXPECT_NE(at, std::string::npos) << rule;
  if (at == std::string::npos)
    return rule;
  return rule.replace(at, both.size(), "    " + entry + " = f16\n");
}

/// The shipped torchao_linear_dq8ca_q4gsw with its fused op's line replaced.
std::string plant8da4wBug(const std::string &fusedLine) {
  return plantBug("linear_8da4w.pat", "torchao_linear_dq8ca_q4gsw",
                  "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, "
                  "$scales, $G)\n",
                  fusedLine);
}

rewrite::RuleVerification verifyText(const std::string &text) {
  SourceManager sources;
  auto set = dsl::parsePat(text, "planted.pat", &sources);
  EXPECT_TRUE(set.ok()) << render(set.diags(), &sources);
  if (!set.ok())
    return {};
  auto compiled = rewrite::CompiledRules::compile(std::move(set->rules));
  EXPECT_TRUE(compiled.ok()) << render(compiled.diags(), &sources);
  rewrite::RuleVerifyOptions vo;
  vo.instances = 20;
  vo.seed = 7;
  auto results = rewrite::verifyRules(*compiled, vo);
  EXPECT_FALSE(results.empty());
  // Variants: the f64 cast present and absent; the first failure is enough.
  for (const rewrite::RuleVerification &v : results)
    if (!v.ok())
      return v;
  return results.front();
}

} // namespace

// The 8da4w kernel quantizes the activation with the qparams it is given
// (docs/numerics.md), so a rewrite that wires the wrong ones is caught. With
// upstream's Python reference (which ignores them) both would verify.
TEST(RuleLibraryVerify, Catches8da4wWiredWithTheWrongActivationQParams) {
  // The control: the shipped rule verifies through the same path.
  rewrite::RuleVerification shipped = verifyText(plant8da4wBug(
      "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)\n"));
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  // A zero point off by one (e.g. another activation's qparams).
  rewrite::RuleVerification zp = verifyText(plant8da4wBug(
      "    %zp1    = aten.add.Scalar(%zp, 1)\n"
      "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp1, $packed, $sums, $scales, $G)\n"));
  EXPECT_FALSE(zp.ok()) << rewrite::format(zp);
  EXPECT_TRUE(zp.counterexample.has_value()) << rewrite::format(zp);
  // A doubled activation scale.
  rewrite::RuleVerification scale = verifyText(plant8da4wBug(
      "    %s2     = aten.mul.Scalar(%s, 2)\n"
      "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s2, %zp, $packed, $sums, $scales, $G)\n"));
  EXPECT_FALSE(scale.ok()) << rewrite::format(scale);
}

// qd_linear_dq8ca_q4gsw's atol (0.41: one quantization step at a tie of the f64
// chain, s_x * 8 * ws over its example ranges, patterns/linear_8da4w.pat) still
// catches a wrong activation scale, which moves outputs by O(|y|). (A zero
// point off by one is not among them: the kernel subtracts the zero point it
// quantized with, so only the token's clamped extreme moves, by one step, as
// at a tie; the torchao rules' tight tolerance catches it.)
TEST(RuleLibraryVerify, CatchesQd8da4wWiredWithTheWrongActivationScale) {
  const std::string fused =
      "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)\n";
  auto planted = [&](const std::string &line) {
    return verifyText(plantBug("linear_8da4w.pat", "qd_linear_dq8ca_q4gsw", fused, line));
  };
  rewrite::RuleVerification shipped = planted(fused);
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  rewrite::RuleVerification scale = planted(
      "    %s2     = aten.mul.Scalar(%s, 2)\n"
      "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s2, %zp, $packed, $sums, $scales, $G)\n");
  EXPECT_FALSE(scale.ok()) << rewrite::format(scale);
  EXPECT_TRUE(scale.counterexample.has_value()) << rewrite::format(scale);
}

// The 8da8w rule's tolerance (atol 5e-3, patterns/linear_8da8w.pat) still
// catches a rewrite that wires the wrong activation zero point or scale.
TEST(RuleLibraryVerify, Catches8da8wWiredWithTheWrongActivationQParams) {
  const std::string fused =
      "    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp, $qw, $sums, $scales)\n";
  auto planted = [&](const std::string &line) {
    return verifyText(plantBug("linear_8da8w.pat", "torchao_linear_dq8ca_q8csw", fused, line));
  };
  rewrite::RuleVerification shipped = planted(fused);
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  rewrite::RuleVerification zp =
      planted("    %zp1    = aten.add.Scalar(%zp, 1)\n"
              "    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp1, $qw, $sums, $scales)\n");
  EXPECT_FALSE(zp.ok()) << rewrite::format(zp);
  EXPECT_TRUE(zp.counterexample.has_value()) << rewrite::format(zp);
  rewrite::RuleVerification scale =
      planted("    %s2     = aten.mul.Scalar(%s, 2)\n"
              "    %y      = et_vk.linear_dq8ca_q8csw($x, %s2, %zp, $qw, $sums, $scales)\n");
  EXPECT_FALSE(scale.ok()) << rewrite::format(scale);
}

// The 8da4w rules' f16 atol (4.9, the proven bound of the f16 roundings over their example
// domain, patterns/linear_8da4w.pat) still catches the wiring bugs that move outputs by
// O(|y|): a halved activation scale (the kernel clamps half of each token's values) and
// weight scales read in the wrong order (reinterpreted [N, K/G] -> [K/G, N] instead of
// transposed).
TEST(RuleLibraryVerify, Catches8da4wF16WiredWithTheWrongScales) {
  const std::string fused =
      "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)\n";
  const std::string transposed = "    $st     = transpose($sc, 0, 1)\n";
  auto planted = [&](const std::string &good, const std::string &line) {
    return verifyText(
        onlyF16(plantBug("linear_8da4w.pat", "torchao_linear_dq8ca_q4gsw_3d", good, line), "odt"));
  };
  rewrite::RuleVerification shipped = planted(fused, fused);
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  rewrite::RuleVerification scale = planted(
      fused, "    %s2     = aten.mul.Scalar(%s, 0.5)\n"
             "    %y      = et_vk.linear_dq8ca_q4gsw($x, %s2, %zp, $packed, $sums, $scales, $G)\n");
  EXPECT_FALSE(scale.ok()) << rewrite::format(scale);
  EXPECT_TRUE(scale.counterexample.has_value()) << rewrite::format(scale);
  rewrite::RuleVerification weightScales =
      planted(transposed, "    $st     = reshape($sc, [$NG, $N])\n");
  EXPECT_FALSE(weightScales.ok()) << rewrite::format(weightScales);
  EXPECT_TRUE(weightScales.counterexample.has_value()) << rewrite::format(weightScales);
}

// The same for the 8da8w rules' f16 tolerance (atol 7.8, patterns/linear_8da8w.pat): a halved
// activation scale fails them.
TEST(RuleLibraryVerify, Catches8da8wF16WiredWithTheWrongActivationScale) {
  const std::string fused =
      "    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp, $qw, $sums, $scales)\n";
  auto planted = [&](const std::string &line) {
    return verifyText(
        onlyF16(plantBug("linear_8da8w.pat", "torchao_linear_dq8ca_q8csw", fused, line), "odt"));
  };
  rewrite::RuleVerification shipped = planted(fused);
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  rewrite::RuleVerification scale =
      planted("    %s2     = aten.mul.Scalar(%s, 0.5)\n"
              "    %y      = et_vk.linear_dq8ca_q8csw($x, %s2, %zp, $qw, $sums, $scales)\n");
  EXPECT_FALSE(scale.ok()) << rewrite::format(scale);
  EXPECT_TRUE(scale.counterexample.has_value()) << rewrite::format(scale);
}

// Two clamps merge into clamp(x, A, B) with the exact composition
// (patterns/fuse_clamp.pat). Upstream's FuseClampsPass takes the union of
// the two ranges, and the plain intersection is wrong once a range is
// inverted (min > max: torch applies the min first) or the ranges do not
// meet; verify-rules rejects both.
TEST(RuleLibraryVerify, CatchesClampBoundsMergedWrongly) {
  const std::string good = "    %c2 = aten.clamp($x, max(min($a1, $b1), min($a2, $b2)), "
                           "max(min($b1, $b2), min($a2, $b2)))\n";
  auto plant = [&](const std::string &line) {
    return verifyText(plantBug("fuse_clamp.pat", "fuse_clamp_then_clamp", good, line));
  };
  rewrite::RuleVerification shipped = plant(good);
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  rewrite::RuleVerification unionOfRanges =
      plant("    %c2 = aten.clamp($x, min($a1, $a2), max($b1, $b2))\n");
  EXPECT_FALSE(unionOfRanges.ok()) << rewrite::format(unionOfRanges);
  EXPECT_TRUE(unionOfRanges.counterexample.has_value()) << rewrite::format(unionOfRanges);
  rewrite::RuleVerification intersection =
      plant("    %c2 = aten.clamp($x, max($a1, $a2), min($b1, $b2))\n");
  EXPECT_FALSE(intersection.ok()) << rewrite::format(intersection);
}

// The HF RoPE rules' f16 tolerance (atol 2^-5 + rtol 2^-10 for the per-op f16
// roundings the fused op skips, patterns/rope_hf.pat) still catches a wiring
// bug, which moves outputs by O(|x|): the tables swapped in the rewrite, or a
// match whose rotate_half puts the halves the other way round (x1, -x2).
TEST(RuleLibraryVerify, CatchesF16HfRopeWiredWrongly) {
  const std::string fused =
      "    %q_out, %k_out = et_vk.apply_rotary_emb_hf($xq, $xk, $cos, $sin, $pos)\n";
  const std::string half = "    %qh         = aten.cat([%qn, %q1], -1)\n";
  auto planted = [&](const std::string &good, const std::string &line) {
    return verifyText(
        onlyF16(plantBug("rope_hf.pat", "et_apply_rotary_emb_hf_at_pos", good, line), "dt"));
  };
  rewrite::RuleVerification shipped = planted(fused, fused);
  EXPECT_TRUE(shipped.ok()) << rewrite::format(shipped);
  rewrite::RuleVerification swapped = planted(
      fused, "    %q_out, %k_out = et_vk.apply_rotary_emb_hf($xq, $xk, $sin, $cos, $pos)\n");
  EXPECT_FALSE(swapped.ok()) << rewrite::format(swapped);
  EXPECT_TRUE(swapped.counterexample.has_value()) << rewrite::format(swapped);
  rewrite::RuleVerification otherHalf =
      planted(half, "    %qh         = aten.cat([%q1, %qn], -1)\n");
  EXPECT_FALSE(otherHalf.ok()) << rewrite::format(otherHalf);
  EXPECT_TRUE(otherHalf.counterexample.has_value()) << rewrite::format(otherHalf);
}

// `tolerance(...) when <guard>` gives some instances their own bound: (a - b) - c
// rewritten as a - (b + c) rounds differently, by at most 10 units in the last
// place of values below 1 (two roundings a side, each of a sum below 3), which f32
// instances keep under atol 1e-6 (10 * 2^-24) and f16 ones only under their
// guarded 5e-3 (10 * 2^-11). Without the guarded clause the f16 instances fail;
// the first guard that holds wins, so a tight f16 clause before a wide one fails.
TEST(RuleLibraryVerify, UsesTheFirstToleranceWhoseGuardHolds) {
  auto rule = [](const std::string &tolerances) {
    return verifyText("rule reassociate {\n"
                      "  match {\n"
                      "    %d = aten.sub.Tensor($a : $dt[$N], $b : $dt[$N])\n"
                      "    %y = aten.sub.Tensor(%d, $c : $dt[$N])\n"
                      "  }\n"
                      "  rewrite {\n"
                      "    %s = aten.add.Tensor($b, $c)\n"
                      "    %y = aten.sub.Tensor($a, %s)\n"
                      "  }\n"
                      "  example { N = 64, dt = [f32, f16] }\n" +
                      tolerances + "}\n");
  };
  rewrite::RuleVerification guarded = rule("  tolerance(atol = 1e-6)\n"
                                           "  tolerance(atol = 5e-3) when $dt == f16\n");
  EXPECT_TRUE(guarded.ok()) << rewrite::format(guarded);
  EXPECT_GT(guarded.worstDiff, 1e-6) << rewrite::format(guarded);
  rewrite::RuleVerification unguarded = rule("  tolerance(atol = 1e-6)\n");
  EXPECT_FALSE(unguarded.ok()) << rewrite::format(unguarded);
  ASSERT_TRUE(unguarded.counterexample.has_value()) << rewrite::format(unguarded);
  EXPECT_NE(unguarded.counterexample->instance.find("dt=f16"), std::string::npos)
      << unguarded.counterexample->instance;
  rewrite::RuleVerification firstWins = rule("  tolerance(atol = 1e-6) when $dt == f16\n"
                                             "  tolerance(atol = 5e-3) when $dt in [f16, f32]\n");
  EXPECT_FALSE(firstWins.ok()) << rewrite::format(firstWins);
  ASSERT_TRUE(firstWins.counterexample.has_value()) << rewrite::format(firstWins);
  EXPECT_NE(firstWins.counterexample->message.find("> atol 1e-06"), std::string::npos)
      << firstWins.counterexample->message;
}

// A value that overflows on one side only is a difference whatever the
// tolerance: rtol * |before| with an infinite `before` would admit any `after`.
// (The pattern is exp times 1, not exp alone: a replacement holding its own
// pattern would fail first as a rule that re-fires on its output.)
TEST(RuleLibraryVerify, CatchesAnInfinityOnOneSideOnly) {
  rewrite::RuleVerification v = verifyText("rule saturating {\n"
                                           "  match {\n"
                                           "    %e = aten.exp($x : f32[$N])\n"
                                           "    %y = aten.mul.Scalar(%e, 1.0)\n"
                                           "  }\n"
                                           "  rewrite {\n"
                                           "    %f = aten.exp($x)\n"
                                           "    %y = aten.clamp(%f, 0, 3e38)\n"
                                           "  }\n"
                                           "  example { N = 8, x = uniform(89, 100) }\n"
                                           "  tolerance(rtol = 0.001)\n"
                                           "}\n");
  EXPECT_FALSE(v.ok()) << rewrite::format(v);
  ASSERT_TRUE(v.counterexample.has_value()) << rewrite::format(v);
  EXPECT_NE(v.counterexample->message.find("before inf, after 3"), std::string::npos)
      << v.counterexample->message;
}

// Inputs are drawn from [-1, 1) unless the example gives a capture a
// `uniform(lo, hi)` range: a rewrite that is wrong only for |x| >= 1 passes
// with the default and is caught with a wider range; an integer input's range
// must hold values of its dtype.
TEST(RuleLibraryVerify, CatchesABugOutsideTheDefaultRangeOnlyWithAWiderOne) {
  const std::string rule = "rule planted {\n"
                           "  match { %y = aten.clamp($x : f32[$N], -1, 1) }\n"
                           "  rewrite { %y = aten.clamp($x, -2, 2) }\n"
                           "  example { N = 64";
  rewrite::RuleVerification narrow = verifyText(rule + " }\n}\n");
  EXPECT_TRUE(narrow.ok()) << rewrite::format(narrow);
  rewrite::RuleVerification wide = verifyText(rule + ", x = uniform(-4, 4) }\n}\n");
  EXPECT_FALSE(wide.ok()) << rewrite::format(wide);
  ASSERT_TRUE(wide.counterexample.has_value()) << rewrite::format(wide);
  EXPECT_EQ(wide.counterexample->message.rfind("output 0 differs at [", 0), 0u)
      << wide.counterexample->message;

  // A float param bounded by values_in draws from the example's range inside
  // it (a rewrite wrong only for |s| > 1 passes with uniform(0.0005, 0.05)),
  // and from the whole values_in range without one.
  const std::string scaled = "rule scaled {\n"
                             "  match { %y = aten.mul.Tensor($x : f32[$N], param $s : f32[$N]) }\n"
                             "  where { values_in($s, -255, 255) }\n"
                             "  rewrite {\n"
                             "    %c = aten.clamp($s, -1, 1)\n"
                             "    %y = aten.mul.Tensor($x, %c)\n"
                             "  }\n"
                             "  example { N = 64";
  rewrite::RuleVerification inside = verifyText(scaled + ", s = uniform(0.0005, 0.05) }\n}\n");
  EXPECT_TRUE(inside.ok()) << rewrite::format(inside);
  rewrite::RuleVerification whole = verifyText(scaled + " }\n}\n");
  EXPECT_FALSE(whole.ok()) << rewrite::format(whole);
  rewrite::RuleVerification outside = verifyText(scaled + ", s = uniform(300, 400) }\n}\n");
  EXPECT_FALSE(outside.ok());
  EXPECT_NE(rewrite::format(outside).find("lies outside the where clause's values_in range"),
            std::string::npos)
      << rewrite::format(outside);

  rewrite::RuleVerification i8 =
      verifyText("rule int_range {\n  match { %y = aten.neg($x : i8[$N]) }\n"
                 "  rewrite { %y = aten.neg($x) }\n  example { N = 4, x = uniform(0, 1000) }\n}\n");
  EXPECT_FALSE(i8.ok());
  EXPECT_NE(rewrite::format(i8).find("[0, 1000) is outside i8's values [-128, 127]"),
            std::string::npos)
      << rewrite::format(i8);
}
