//===- RuleFamilySupportTest.cpp - DSL support for the Q/DQ rule families -===//
//
// Two small language features the PT2E / QAT / Q-DQ rule families need:
//  * forwarding: a rewrite statement `%r = $x` (or `%r = %m`) replaces the
//    match result %r by a value that already exists, creating no node: how a
//    fold removes a pair of ops (patterns/qdq_fold.pat: quantize(dequantize(q))
//    -> q). The checks are those of a new node: the value must have %r's
//    prototype, may not be a result of the replaced node, and the replaced
//    result must be a match result;
//  * integer example values for float captures (a scale `s = 1`), which
//    verify-rules passes as floats.
//
//===----------------------------------------------------------------------===//
#include "graft/dsl/Pat.h"
#include "graft/ir/Verifier.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

using namespace graft;

namespace {

rewrite::CompiledRules compileText(const std::string &text) {
  auto set = dsl::parsePat(text, "fwd.pat");
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : render(set.diags()));
  if (!set.ok())
    std::abort();
  auto c = rewrite::CompiledRules::compile(std::move(set->rules));
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : render(c.diags()));
  if (!c.ok())
    std::abort();
  return std::move(*c);
}

std::string errorsOf(const std::string &text) {
  std::string out;
  for (const Diagnostic &d : dsl::checkPat(text, "fwd.pat"))
    if (d.severity == Severity::Error)
      out += d.message + "\n";
  return out;
}

const char *kNegNeg = R"(
rule neg_neg {
  match {
    %a = aten.neg($x)
    %b = aten.neg(%a)
  }
  rewrite {
    %b = $x
  }
}
)";

} // namespace

TEST(ForwardRewrite, ReplacesTheRootByAnExistingValue) {
  auto rules = compileText(kNegNeg);
  auto g = parseGraph(R"(
graph @g {
  input %x : f32[4]
  %n1 : f32[4] = aten.neg.default(%x)
  %n2 : f32[4] = aten.neg.default(%n1)
  %r : f32[4] = aten.relu.default(%n2)
  output %r
  output %n2
}
)",
                      "g.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  rewrite::FqnRegistry fqns;
  rewrite::RewriteOptions o;
  o.verifyEach = true;
  auto r = rewrite::applyRules(**g, rules, fqns, o);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(r->rewrites, 1u);
  EXPECT_TRUE(verify(**g).empty());
  auto text = printGraph(**g);
  ASSERT_TRUE(text.ok());
  // Both negations are gone; the relu and the graph output read %x.
  EXPECT_EQ(*text, "graph @g {\n"
                   "  input %x : f32[4]\n"
                   "  %r : f32[4] = aten.relu.default(%x)\n"
                   "  output %r\n"
                   "  output %x\n"
                   "}\n");
}

TEST(ForwardRewrite, AnInteriorResultStaysWhenForwardedTo) {
  auto rules = compileText(R"(
rule relu_relu {
  match {
    %a = aten.relu($x)
    %b = aten.relu(%a)
  }
  rewrite {
    %b = %a
  }
}
)");
  auto g = parseGraph(R"(
graph @g {
  input %x : f32[4]
  %r1 : f32[4] = aten.relu.default(%x)
  %r2 : f32[4] = aten.relu.default(%r1)
  output %r2
}
)",
                      "g.gir");
  ASSERT_TRUE(g.ok());
  rewrite::FqnRegistry fqns;
  auto r = rewrite::applyRules(**g, rules, fqns);
  ASSERT_TRUE(r.ok());
  auto text = printGraph(**g);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "graph @g {\n"
                   "  input %x : f32[4]\n"
                   "  %r1 : f32[4] = aten.relu.default(%x)\n"
                   "  output %r1\n"
                   "}\n");
}

TEST(ForwardRewrite, APrototypeMismatchIsRefusedAndLeavesTheGraph) {
  // A cast is not a no-op: forwarding its input changes the dtype.
  auto rules = compileText(R"(
rule drop_cast {
  match {
    %y = aten._to_copy($x, dtype = $dt)
  }
  rewrite {
    %y = $x
  }
}
)");
  const std::string input = R"(graph @g {
  input %x : f32[4]
  %y : f16[4] = aten._to_copy.default(%x, dtype=f16)
  output %y
}
)";
  auto g = parseGraph(input, "g.gir");
  ASSERT_TRUE(g.ok());
  rewrite::FqnRegistry fqns;
  auto r = rewrite::applyRules(**g, rules, fqns);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rewrites, 0u);
  ASSERT_EQ(r->stats.size(), 1u);
  EXPECT_EQ(r->stats[0].rejected, 1u);
  ASSERT_EQ(r->stats[0].rejections.size(), 1u);
  EXPECT_NE(r->stats[0].rejections[0].first.find("replacement for %y is f32[4]"), std::string::npos)
      << r->stats[0].rejections[0].first;
  auto text = printGraph(**g);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, input);
}

TEST(ForwardRewrite, SemaErrors) {
  // Forwarding must replace a match result...
  EXPECT_NE(errorsOf(R"(
rule r {
  match {
    %b = aten.neg($x)
  }
  rewrite {
    %c = $x
    %b = aten.neg($x)
  }
}
)")
                .find("forwards a value, so it must replace a result of the match"),
            std::string::npos);
  // ... once ...
  EXPECT_NE(errorsOf(R"(
rule r {
  match {
    %b = aten.neg($x)
  }
  rewrite {
    %b = $x
    %b = aten.neg($x)
  }
}
)")
                .find("%b is replaced twice"),
            std::string::npos);
  // ... with a tensor for a tensor.
  EXPECT_NE(errorsOf(R"(
rule r {
  match {
    %b = aten.mul.Scalar($x, $k)
  }
  rewrite {
    %b = $k
  }
}
)")
                .find("the rewrite replaces %b (a tensor) with"),
            std::string::npos);
  // A well-formed forward checks clean and formats canonically.
  EXPECT_EQ(errorsOf(kNegNeg), "");
  auto f = dsl::formatPat(kNegNeg, "fwd.pat");
  ASSERT_TRUE(f.ok());
  EXPECT_NE(f->find("    %b = $x\n"), std::string::npos) << *f;
}

TEST(FloatExamples, IntegersAreValidValuesOfAFloatCapture) {
  const std::string floatRule = R"(
rule dq_q {
  match {
    %f = quantized_decomposed.dequantize_per_tensor($q : i8[$N], $s, 0, -128, 127, i8)
    %r = quantized_decomposed.quantize_per_tensor(%f, $s, 0, -128, 127, i8)
  }
  rewrite {
    %r = $q
  }
  example { N = 4, s = [1, 3] }
}
)";
  EXPECT_EQ(errorsOf(floatRule), "");
  auto set = dsl::parsePat(floatRule, "fwd.pat");
  ASSERT_TRUE(set.ok()) << render(set.diags());
  ASSERT_EQ(set->rules.size(), 1u);
  EXPECT_EQ(set->rules[0].example.ints.at("s"), (std::vector<int64_t>{1, 3}));
  // A dtype is still not a float.
  std::string bad = floatRule;
  bad.replace(bad.find("s = [1, 3]"), 10, "s = f32");
  EXPECT_NE(errorsOf(bad).find("$s is a float, but the example gives dtypes"), std::string::npos)
      << errorsOf(bad);
}
