//===- VerifyRulesTest.cpp - verify-rules and the tied-weight hazard ------===//
//
// Differential verification must pass the correct reference rules and catch
// planted bugs (the wrong nibble order for embedding_q4gsw, scales left
// untransposed for linear_q4gsw), reporting the smallest failing instance.
// The tied-weight / shared-scales test is the open hazard from the review of
// pytorch/executorch#20381: an embedding reading scales [V, G] and an
// lm_head reading the same scales transposed [G, N] must both stay correct,
// and the tied weight must be packed exactly once.
//
//===----------------------------------------------------------------------===//
#include "RuleBuilder.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/rewrite/VerifyRules.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace graft;
using namespace graft::rewrite;
using namespace graft::testing;

namespace {

CompiledRules compile(std::vector<Rule> rules) {
  auto c = CompiledRules::compile(std::move(rules));
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : render(c.diags()));
  if (!c.ok())
    std::abort();
  return std::move(*c);
}

RuleVerification verifyOne(Rule r, unsigned instances = 4) {
  auto rules = compile({std::move(r)});
  RuleVerifyOptions o;
  o.instances = instances;
  return verifyRule(rules, 0, o);
}

} // namespace

TEST(VerifyRules, TheReferenceRulesVerify) {
  RuleVerification e = verifyOne(embeddingRule());
  EXPECT_TRUE(e.ok()) << format(e);
  // Two domain points (V=64 x D in {64, 128} x G=32), each with two seeds.
  EXPECT_EQ(e.tested, 4u);
  EXPECT_EQ(e.worstDiff, 0.0);
  RuleVerification l = verifyOne(linearRule());
  EXPECT_TRUE(l.ok()) << format(l);
  EXPECT_EQ(l.tested, 4u);
  EXPECT_EQ(format(l).rfind("rule torchao_linear_q4gsw (rules.pat:20:1): ok, 4 instance(s)", 0), 0u)
      << format(l);
}

TEST(VerifyRules, CatchesTheWrongNibbleOrder) {
  RuleVerification v = verifyOne(embeddingRule("high_first"));
  EXPECT_FALSE(v.ok());
  ASSERT_TRUE(v.counterexample.has_value()) << format(v);
  // Instances run smallest first: the counterexample is the smallest one.
  EXPECT_EQ(v.counterexample->instance, "D=64, G=32, V=64, odt=f32; seed 1");
  EXPECT_EQ(v.counterexample->message.rfind("output 0 differs at [", 0), 0u)
      << v.counterexample->message;
  ASSERT_NE(v.counterexample->before, nullptr);
  EXPECT_TRUE(verify(*v.counterexample->before).empty());
  // The counterexample prints as a standalone graph.
  auto text = printGraph(*v.counterexample->before);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("torchao.dequantize_affine.default"), std::string::npos) << *text;
  EXPECT_NE(text->find("random(seed="), std::string::npos) << *text;
  auto linear = verifyOne(linearRule(true, "high_first"));
  EXPECT_TRUE(linear.counterexample.has_value()) << format(linear);
}

TEST(VerifyRules, CatchesUntransposedScales) {
  RuleVerification v = verifyOne(linearRule(/*transposeScales=*/false));
  EXPECT_FALSE(v.ok());
  ASSERT_TRUE(v.counterexample.has_value()) << format(v);
  EXPECT_EQ(v.counterexample->instance.rfind("G=32, K=64, N=8", 0), 0u)
      << v.counterexample->instance;
  EXPECT_NE(format(v).find("FAILED on G=32, K=64, N=8"), std::string::npos) << format(v);
}

TEST(VerifyRules, UntypedTensorsAreFoundBySearch) {
  // The issue's rule as written: `param $s` and `$idx` carry no type; the
  // scales must come out [V, D / G] and the indices an integer tensor.
  Rule r = embeddingRule();
  r.nodes[0].args[2].type.reset();
  RuleVerification v = verifyOne(r, 2);
  EXPECT_TRUE(v.ok()) << format(v);
  EXPECT_EQ(v.tested, 2u);
}

TEST(VerifyRules, SolvesCapturesFromWhereEqualities) {
  // `param $s : f32[$V, $NG]` with `$NG * $G == $D`: NG is not in the
  // example; the solver derives it per instance.
  Rule r = embeddingRule();
  r.nodes[0].args[2].type = type(DType::F32, {dvar("V"), dvar("NG")});
  r.where.push_back(ebin("==", ebin("*", evar("NG"), evar("G")), evar("D")));
  RuleVerification v = verifyOne(r, 2);
  EXPECT_TRUE(v.ok()) << format(v);
  EXPECT_EQ(v.tested, 2u);
}

TEST(VerifyRules, InstancesOutsideTheWhereClauseAreSkipped) {
  Rule r = embeddingRule();
  r.example.ints["D"] = {48, 64};
  r.example.ints["G"] = {16};
  RuleVerification v = verifyOne(r, 4);
  EXPECT_TRUE(v.ok()) << format(v);
  // Four instances over two points: both D = 48 ones fail `$D % 32 == 0`.
  EXPECT_EQ(v.skipped, 2u);
  EXPECT_EQ(v.tested, 2u);

  r.example.ints["D"] = {48};
  RuleVerification none = verifyOne(r, 4);
  EXPECT_FALSE(none.ok());
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_NE(none.errors[0].find("no instance of the example domain satisfies the where clause"),
            std::string::npos);
}

TEST(VerifyRules, OptionalNodesAreVerifiedPresentAndAbsent) {
  Rule r;
  r.name = "neg_to_mul";
  r.loc = at(1);
  r.nodes.push_back(pnode({"c"}, {"aten.clone"}, {typed(var("x"), type(DType::F32, {dvar("N")}))}));
  r.nodes.back().optional = true;
  r.nodes.push_back(pnode({"out"}, {"aten.neg"}, {res("c")}));
  r.root = 1;
  r.rewrite = {newNode({"out"}, "aten.mul.Scalar", {evar("x"), elit(Argument(-1.0))})};
  r.example.ints = {{"N", {4}}};
  RuleVerification v = verifyOne(r, 2);
  EXPECT_TRUE(v.ok()) << format(v);
  EXPECT_EQ(v.tested, 2u) << "clone present and absent";

  // A wrong rewrite (dropping the negation) is caught in both variants.
  r.rewrite = {newNode({"out"}, "aten.mul.Scalar", {evar("x"), elit(Argument(1.0))})};
  RuleVerification bad = verifyOne(r, 2);
  ASSERT_TRUE(bad.counterexample.has_value());
  EXPECT_EQ(bad.counterexample->instance, "N=4; %c present; seed 1");
}

//===----------------------------------------------------------------------===//
// Tied weight, shared scales
//===----------------------------------------------------------------------===//

namespace {

// Embedding and lm_head share the weight *and* the scales FQN (tied torchao
// quantization): the embedding needs scales [V, G] as they are, the lm_head
// (linear_q4gsw) needs them transposed to [G, V].
const char *kTied = R"(graph @tied {
  sym s0 : [1, 16]
  param %w : i8[96, 64] fqn="tok_embeddings.weight" = random(seed=1, min=-8, max=7)
  param %s : f32[96, 2] fqn="tok_embeddings.scales" = random(seed=2, min=0.005, max=0.02)
  input %tokens : i64[1, s0]
  %emb_w : f32[96, 64] = torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7, output_dtype=f32)
  %h : f32[1, s0, 64] = aten.embedding.default(%emb_w, %tokens)
  %head_w : f32[96, 64] = torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7, output_dtype=f32)
  %logits : f32[1, s0, 96] = aten.linear.default(%h, %head_w)
  output %logits
}
)";

std::unique_ptr<Graph> parseTied() {
  auto g = parseGraph(kTied, "tied.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  return std::move(*g);
}

} // namespace

TEST(VerifyRules, TiedWeightAndSharedScalesStayCorrect) {
  auto g = parseTied();
  auto before = parseTied();
  Tensor scalesBefore = g->findConstant("tok_embeddings.scales")->data().clone();
  auto rules = compile({embeddingRule(), linearRule()});
  FqnRegistry fqns;
  RewriteOptions o;
  o.verifyEach = true;
  auto r = applyRules(*g, rules, fqns, o);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(r->rewrites, 2u);
  EXPECT_TRUE(r->converged);

  // The tied weight is packed exactly once and both fused ops read it.
  const ProvenanceEntry *packed = fqns.findByFqn("tok_embeddings.weight.pack_int4_low_first");
  ASSERT_NE(packed, nullptr) << fqns.str();
  EXPECT_EQ(packed->requests, 2u);
  std::size_t packs = 0;
  for (const ProvenanceEntry &e : fqns.entries())
    packs += e.request.transform == "pack_int4";
  EXPECT_EQ(packs, 1u);

  // The scales: the embedding keeps the original [V, G] constant, the
  // lm_head gets a separate transposed [G, V] constant; the original is
  // never mutated.
  const Node *emb = nullptr, *head = nullptr;
  for (const Node &n : g->nodes()) {
    if (n.target() == "et_vk.embedding_q4gsw.default")
      emb = &n;
    if (n.target() == "et_vk.linear_q4gsw.default")
      head = &n;
  }
  ASSERT_TRUE(emb && head);
  EXPECT_EQ(emb->args()[0].value(), head->args()[1].value()) << "one packed weight";
  const Value *embScales = emb->args()[1].value();
  const Value *headScales = head->args()[2].value();
  EXPECT_EQ(g->inputFor(embScales)->fqn, "tok_embeddings.scales");
  EXPECT_EQ(embScales->proto().str(), "f32[96, 2]");
  EXPECT_EQ(g->inputFor(headScales)->fqn, "tok_embeddings.scales.transpose_0_1");
  EXPECT_EQ(headScales->proto().str(), "f32[2, 96]");
  EXPECT_TRUE(g->findConstant("tok_embeddings.scales")->data().equal(scalesBefore));
  EXPECT_EQ(fqns.originsOf("tok_embeddings.scales.transpose_0_1"),
            std::vector<std::string>{"tok_embeddings.scales"});

  // And both outputs are numerically unchanged.
  auto in = makeRandomInputs(*before, 3, {{"s0", 5}});
  ASSERT_TRUE(in.ok());
  auto a = Interpreter().run(*before, *in);
  auto b = Interpreter().run(*g, *in);
  ASSERT_TRUE(a.ok() && b.ok()) << (b.ok() ? "" : render(b.diags()));
  EXPECT_TRUE(std::get<Tensor>((*a)[0]).equal(std::get<Tensor>((*b)[0])));
}

TEST(VerifyRules, InPlaceTransposeOfSharedScalesWouldBeCaught) {
  // What the hazard looks like when it bites: an lm_head rule that reads
  // the scales untransposed (as if another rule had mutated them in place
  // for the embedding) breaks the logits, and the numerics comparison shows
  // it.
  auto g = parseTied();
  auto before = parseTied();
  auto rules = compile({embeddingRule(), linearRule(/*transposeScales=*/false)});
  FqnRegistry fqns;
  auto r = applyRules(*g, rules, fqns);
  ASSERT_TRUE(r.ok());
  auto in = makeRandomInputs(*before, 3, {{"s0", 5}});
  ASSERT_TRUE(in.ok());
  auto a = Interpreter().run(*before, *in);
  auto b = Interpreter().run(*g, *in);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(!b.ok() || !std::get<Tensor>((*a)[0]).equal(std::get<Tensor>((*b)[0])));
}
