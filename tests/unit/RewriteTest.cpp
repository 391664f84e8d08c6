//===- RewriteTest.cpp - Matcher, driver, transactions, explain -----------===//
//
// Rules are built in C++ (tests/support/RuleBuilder.h) so the engine is
// tested independently of the .pat front end. Each construct of the rule
// model has a test: overload-insensitive targets, bindings (equal when bound
// twice), literals and lists, type patterns with symbolic dims, `param`,
// alternatives with binding rollback, optional nodes, commutative ops,
// multi-output nodes, use constraints and `shared`, where predicates and
// their explanations; the driver's fixpoint, limits, determinism,
// transactional refusals (prototype mismatch, escapes, cycles) and
// numerics preserved through the reference interpreter.
//
//===----------------------------------------------------------------------===//
#include "RuleBuilder.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace graft;
using namespace graft::rewrite;
using namespace graft::testing;

namespace {

std::unique_ptr<Graph> parse(const std::string &text) {
  auto g = parseGraph(text, "test.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  return g.ok() ? std::move(*g) : std::make_unique<Graph>();
}

CompiledRules compile(std::vector<Rule> rules) {
  auto c = CompiledRules::compile(std::move(rules));
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : render(c.diags()));
  if (!c.ok())
    std::abort();
  return std::move(*c);
}

RewriteResult fuse(Graph &g, const CompiledRules &rules, FqnRegistry &fqns,
                   RewriteOptions options = {}) {
  options.verifyEach = true;
  auto r = applyRules(g, rules, fqns, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
  return r.ok() ? std::move(*r) : RewriteResult();
}

std::string print(const Graph &g) {
  PrintOptions po;
  po.maxInlineElements = 1 << 20;
  auto t = printGraph(g, po);
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : "";
}

/// Max |a - b| over the graphs' outputs on the same random inputs.
double maxDiff(const Graph &before, const Graph &after, uint64_t seed = 7) {
  auto in = makeRandomInputs(before, seed);
  EXPECT_TRUE(in.ok());
  auto a = Interpreter().run(before, *in);
  auto b = Interpreter().run(after, *in);
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : render(a.diags()));
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : render(b.diags()));
  if (!a.ok() || !b.ok())
    return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const Tensor &x = std::get<Tensor>((*a)[i]);
    const Tensor &y = std::get<Tensor>((*b)[i]);
    EXPECT_EQ(x.sizes(), y.sizes());
    for (int64_t k = 0; k < x.numel(); ++k)
      m = std::max(m, std::abs(x.getDouble(k) - y.getDouble(k)));
  }
  return m;
}

std::string detailLoc(const ExplainEntry &e) {
  return e.loc.begin.file + ":" + std::to_string(e.loc.begin.line) + ":" +
         std::to_string(e.loc.begin.column);
}

const char *kEmbedding = R"(graph @emb {
  param %w : i8[64, 128] fqn="tok_embeddings.weight" = random(seed=1, min=-8, max=7)
  param %s : f32[64, 4] fqn="tok_embeddings.scales" = random(seed=2, min=0.01, max=0.1)
  input %tokens : i64[1, 8]
  %dq : f32[64, 128] = torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7, output_dtype=f32)
  %out : f32[1, 8, 128] = aten.embedding.default(%dq, %tokens)
  output %out
}
)";

} // namespace

TEST(Rewrite, EmbeddingFusesAndKeepsNumerics) {
  auto g = parse(kEmbedding);
  auto before = parse(kEmbedding);
  auto rules = compile({embeddingRule()});
  FqnRegistry fqns;
  RewriteResult r = fuse(*g, rules, fqns);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.rewrites, 1u);
  ASSERT_EQ(r.log.size(), 1u);
  EXPECT_EQ(r.log[0].rule, "torchao_embedding_q4gsw");
  EXPECT_EQ(r.log[0].root, "out");
  EXPECT_EQ(g->numNodes(), 1u);
  const Node &n = g->nodes().front();
  EXPECT_EQ(n.target(), "et_vk.embedding_q4gsw.default");
  ASSERT_EQ(fqns.size(), 1u);
  EXPECT_EQ(fqns.entries()[0].fqn, "tok_embeddings.weight.pack_int4_low_first");
  EXPECT_EQ(fqns.entries()[0].proto->str(), "u8[64, 64]");
  EXPECT_TRUE(verify(*g).empty());
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
  EXPECT_EQ(r.stats[0].tried, 1u);
  EXPECT_EQ(r.stats[0].matched, 1u);
  EXPECT_EQ(r.stats[0].applied, 1u);
}

TEST(Rewrite, ARegistryOutlivesARunAndNeverDuplicatesAGraphFqn) {
  auto rules = compile({embeddingRule()});
  FqnRegistry fqns;
  auto first = parse(kEmbedding);
  EXPECT_EQ(fuse(*first, rules, fqns).rewrites, 1u);
  ASSERT_EQ(fqns.size(), 1u);
  const std::string packed = "tok_embeddings.weight.pack_int4_low_first";

  // Another graph with the same weight, fused with the same registry: the
  // request is known, the graph lacks the constant, so it gets it under the
  // registry's name.
  auto second = parse(kEmbedding);
  RewriteResult r2 = fuse(*second, rules, fqns);
  EXPECT_EQ(r2.rewrites, 1u);
  EXPECT_EQ(fqns.size(), 1u);
  EXPECT_EQ(fqns.entries()[0].requests, 2u);
  ASSERT_NE(second->findConstant(packed), nullptr);
  EXPECT_EQ(second->findConstant(packed)->value->proto().str(), "u8[64, 64]");
  EXPECT_TRUE(verify(*second).empty());

  // A graph that already has a constant of that name with another prototype:
  // reusing the name would make two constants with one FQN. The rewrite is
  // refused, and says why.
  std::string text = kEmbedding;
  text.insert(text.find("  input %tokens"),
              "  param %other : u8[32, 32] fqn=\"" + packed + "\" = random(seed=3)\n");
  auto third = parse(text);
  RewriteResult r3 = fuse(*third, rules, fqns);
  EXPECT_EQ(r3.rewrites, 0u);
  ASSERT_EQ(r3.stats[0].rejections.size(), 1u);
  EXPECT_NE(r3.stats[0].rejections[0].first.find("the graph's constant of that name is u8[32, 32]"),
            std::string::npos)
      << r3.stats[0].rejections[0].first;
  EXPECT_TRUE(verify(*third).empty());
  EXPECT_EQ(third->findConstant(packed)->value->name(), "other");
}

TEST(Rewrite, ExplainNamesTheDeepestFailingCheck) {
  std::string text = kEmbedding;
  text.replace(text.find("i8, -8, 7"), 9, "i8, -128, 127");
  auto g = parse(text);
  auto rules = compile({embeddingRule()});
  auto entries = explain(*g, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].matched);
  EXPECT_EQ(format(entries[0]),
            "rule torchao_embedding_q4gsw (rules.pat:3:78): quant_min: expected -8, node %dq has "
            "-128 [root %out]");
}

TEST(Rewrite, FusedGraphPrintsWithTheNewConstant) {
  auto g = parse(kEmbedding);
  auto rules = compile({embeddingRule()});
  FqnRegistry fqns;
  fuse(*g, rules, fqns);
  std::string text = print(*g);
  EXPECT_NE(text.find("param %tok_embeddings_weight_pack_int4_low_first : u8[64, 64] "
                      "fqn=\"tok_embeddings.weight.pack_int4_low_first\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("= et_vk.embedding_q4gsw.default(%tok_embeddings_weight_pack_int4_low_first, "
                      "%s, 32, %tokens, is_linear_weight=true)"),
            std::string::npos)
      << text;
  // The printed graph parses back and verifies.
  auto again = parse(text);
  EXPECT_TRUE(verify(*again).empty());
}

//===----------------------------------------------------------------------===//
// Pattern constructs
//===----------------------------------------------------------------------===//

namespace {

const char *kMuls = R"(graph @muls {
  input %x : f32[4]
  input %y : f32[4]
  %a : f32[4] = aten.mul.Tensor(%x, %x)
  %b : f32[4] = aten.mul.Tensor(%x, %y)
  %c : f32[4] = aten.mul.Scalar(%x, 2.0)
  output %a
  output %b
  output %c
}
)";

Rule squareRule(const std::string &target) {
  Rule r;
  r.name = "square";
  r.loc = at(1);
  r.nodes.push_back(
      pnode({"out"}, {target}, {var("x", at(2, 20)), var("x", at(2, 24))}, {}, at(2, 3)));
  r.rewrite = {newNode({"out"}, "aten.pow.Tensor_Scalar", {evar("x"), eint(2)}, {}, at(4, 3))};
  return r;
}

std::size_t countTarget(const Graph &g, const std::string &target) {
  std::size_t n = 0;
  for (const Node &node : g.nodes())
    n += node.target() == target;
  return n;
}

} // namespace

TEST(Rewrite, OverloadInsensitiveTargetsMatchEveryOverload) {
  auto g = parse(kMuls);
  Rule any;
  any.name = "any_mul";
  any.nodes.push_back(pnode({"out"}, {"aten.mul"}, {var("a"), wild()}));
  any.rewrite = {newNode({"out"}, "aten.clone", {eres("out")})};
  Rule exact = any;
  exact.name = "mul_scalar";
  exact.nodes[0].targets = {"aten.mul.Scalar"};
  auto rules = compile({any, exact});
  auto entries = explain(*g, rules);
  std::size_t anyCandidates = 0, exactCandidates = 0;
  for (const ExplainEntry &e : entries) {
    EXPECT_TRUE(e.matched) << format(e);
    anyCandidates += e.rule == "any_mul";
    exactCandidates += e.rule == "mul_scalar";
  }
  EXPECT_EQ(anyCandidates, 3u);
  EXPECT_EQ(exactCandidates, 1u);
}

TEST(Rewrite, ACaptureBoundTwiceMustBeEqual) {
  auto g = parse(kMuls);
  auto before = parse(kMuls);
  auto rules = compile({squareRule("aten.mul.Tensor")});
  FqnRegistry fqns;
  RewriteResult r = fuse(*g, rules, fqns);
  EXPECT_EQ(r.rewrites, 1u);
  EXPECT_EQ(countTarget(*g, "aten.pow.Tensor_Scalar"), 1u);
  EXPECT_EQ(countTarget(*g, "aten.mul.Tensor"), 1u);
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
  auto entries = explain(*before, rules);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_TRUE(entries[0].matched);
  EXPECT_EQ(format(entries[1]), "rule square (rules.pat:2:24): other: $x is already bound to %x, "
                                "node %b has %y [root %b]");
}

TEST(Rewrite, AlternativesRollBackTheirBindings) {
  // sub($p | $q, $p) on sub(%a, %b): the first alternative binds $p = %a and
  // fails at the second argument; the second must see $p unbound again.
  auto g = parse(R"(graph @g {
  input %a : f32[4]
  input %b : f32[4]
  %r : f32[4] = aten.sub.Tensor(%a, %b)
  output %r
}
)");
  Rule r;
  r.name = "swap_names";
  r.nodes.push_back(pnode({"out"}, {"aten.sub.Tensor"}, {alt({var("p"), var("q")}), var("p")}));
  r.rewrite = {newNode({"out"}, "aten.sub.Tensor", {evar("q"), evar("p")})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteOptions o;
  o.maxRewrites = 1;
  RewriteResult res = fuse(*g, rules, fqns, o);
  EXPECT_EQ(res.rewrites, 1u);
  EXPECT_FALSE(res.converged);
  EXPECT_EQ(res.stopReason, "rewrite limit");
  const Node &n = g->nodes().front();
  ASSERT_EQ(n.args().size(), 2u);
  EXPECT_EQ(n.args()[0].value()->name(), "a");
  EXPECT_EQ(n.args()[1].value()->name(), "b");
}

TEST(Rewrite, OptionalNodesMatchPresentAndAbsent) {
  auto g = parse(R"(graph @g {
  input %x : f32[4]
  input %y : f32[4]
  %c : f32[4] = aten.clone.default(%x)
  %n1 : f32[4] = aten.neg.default(%c)
  %n2 : f32[4] = aten.neg.default(%y)
  output %n1
  output %n2
}
)");
  auto before = parse(print(*g));
  Rule r;
  r.name = "neg_to_mul";
  r.nodes.push_back(pnode({"c"}, {"aten.clone"}, {var("x")}));
  r.nodes.back().optional = true;
  r.nodes.push_back(pnode({"out"}, {"aten.neg"}, {res("c")}));
  r.root = 1;
  r.rewrite = {newNode({"out"}, "aten.mul.Scalar", {evar("x"), elit(Argument(-1.0))})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules, fqns);
  EXPECT_EQ(res.rewrites, 2u);
  EXPECT_TRUE(res.converged);
  EXPECT_EQ(countTarget(*g, "aten.mul.Scalar"), 2u);
  EXPECT_EQ(countTarget(*g, "aten.clone.default"), 0u) << "the clone is dead and removed";
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
}

TEST(Rewrite, CommutativeOperandsMatchInEitherOrder) {
  // add(%m, $c) with add declared commutative matches add(%z, mul(...)).
  auto g = parse(R"(graph @g {
  input %x : f32[4]
  input %y : f32[4]
  input %z : f32[4]
  %m : f32[4] = aten.mul.Tensor(%x, %y)
  %r : f32[4] = aten.add.Tensor(%z, %m)
  output %r
}
)");
  auto before = parse(print(*g));
  Rule r;
  r.name = "add_of_mul";
  r.nodes.push_back(pnode({"m"}, {"aten.mul.Tensor"}, {var("a"), var("b")}));
  r.nodes.push_back(pnode({"out"}, {"aten.add.Tensor"}, {res("m"), var("c")}));
  r.root = 1;
  r.rewrite = {newNode({"n"}, "aten.neg", {eres("m")}),
               newNode({"out"}, "aten.sub.Tensor", {evar("c"), eres("n")})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules, fqns);
  EXPECT_EQ(res.rewrites, 1u);
  EXPECT_EQ(countTarget(*g, "aten.sub.Tensor"), 1u);
  EXPECT_EQ(countTarget(*g, "aten.mul.Tensor"), 1u) << "%m is still used by the new neg";
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
}

TEST(Rewrite, TypePatternsBindSymbolicDims) {
  auto g = parse(R"(graph @g {
  sym s0 : [1, 2048]
  input %x : f32[1, s0, 64]
  %r : f32[1, s0, 64] = aten.relu.default(%x)
  output %r
}
)");
  Rule r;
  r.name = "relu_typed";
  r.nodes.push_back(
      pnode({"out"}, {"aten.relu"},
            {typed(var("x", at(2, 18)), type(DType::F32, {dlit(1), dvar("S"), dvar("K")}))}, {},
            at(2, 3)));
  r.where = {ebin(">=", evar("S"), eint(1), at(3, 11)), ebin("==", evar("K"), eint(64), at(3, 22))};
  r.rewrite = {newNode({"out"}, "aten.clone", {eres("out")})};
  auto rules = compile({r});
  auto entries = explain(*g, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].matched) << format(entries[0]);

  // `$S % 2 == 0` cannot be decided for a symbolic S: the candidate fails and
  // explain says why.
  r.where = {ebin("==", ebin("%", evar("S"), eint(2)), eint(0), at(3, 11))};
  auto rules2 = compile({r});
  entries = explain(*g, rules2);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].matched);
  EXPECT_NE(entries[0].message.find("cannot decide"), std::string::npos) << entries[0].message;
  EXPECT_NE(entries[0].message.find("s0"), std::string::npos) << entries[0].message;

  // A trailing-dims pattern [..., $K] binds the last dim of any rank.
  r.nodes[0].args[0] = typed(var("x"), type(std::nullopt, {dvar("K")}, "", true));
  r.where = {ebin("==", evar("K"), eint(64))};
  auto rules3 = compile({r});
  entries = explain(*g, rules3);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].matched) << format(entries[0]);
}

TEST(Rewrite, IntegerWherePredicatesFollowPythonFloorSemantics) {
  // Integer predicates are decided without building values (Matcher::
  // intPredicate); they must agree with the general evaluator: floor
  // division and modulo round toward negative infinity, as in Python.
  auto g = parse(R"(graph @g {
  input %x : f32[1, 6, 64]
  %r : f32[1, 6, 64] = aten.relu.default(%x)
  output %r
}
)");
  Rule r;
  r.name = "relu_typed";
  r.nodes.push_back(pnode({"out"}, {"aten.relu"},
                          {typed(var("x"), type(DType::F32, {dlit(1), dvar("S"), dvar("K")}))}, {},
                          at(2, 3)));
  r.rewrite = {newNode({"out"}, "aten.clone", {eres("out")})};
  auto decide = [&](std::vector<ExprPtr> where) {
    r.where = std::move(where);
    auto rules = compile({r});
    auto entries = explain(*g, rules);
    EXPECT_EQ(entries.size(), 1u);
    return entries.empty()      ? std::string("no candidate")
           : entries[0].matched ? std::string("matched")
                                : entries[0].message;
  };
  EXPECT_EQ(decide({ebin("==", ebin("//", ebin("-", evar("S"), eint(10)), eint(4)), eint(-1))}),
            "matched"); // -4 // 4
  EXPECT_EQ(decide({ebin("==", ebin("%", ebin("-", evar("S"), eint(11)), eint(4)), eint(3))}),
            "matched"); // -5 % 4
  EXPECT_EQ(decide({ebin("==", ebin("//", ebin("-", evar("S"), eint(11)), eint(4)), eint(-2))}),
            "matched"); // -5 // 4
  EXPECT_EQ(decide({ebin(">", ebin("-", ebin("*", evar("K"), eint(2)), evar("S")), eint(100)),
                    ebin("!=", evar("K"), evar("S")), ebin("<=", evar("S"), eint(6))}),
            "matched");
  // Failing predicates are explained by the general evaluator.
  std::string why = decide({ebin("==", ebin("%", evar("S"), eint(4)), eint(0), at(3, 11))});
  EXPECT_NE(why.find("got"), std::string::npos) << why;
  EXPECT_NE(why.find("2"), std::string::npos) << why;
  why = decide({ebin("==", ebin("//", evar("K"), eint(0)), eint(1), at(3, 11))});
  EXPECT_NE(why.find("division by zero"), std::string::npos) << why;
}

TEST(Rewrite, ParamRequiresAConstantWithFqn) {
  std::string text = kEmbedding;
  text.replace(text.find("param %w : i8[64, 128] fqn=\"tok_embeddings.weight\" = random(seed=1, "
                         "min=-8, max=7)"),
               std::string("param %w : i8[64, 128] fqn=\"tok_embeddings.weight\" = random(seed=1, "
                           "min=-8, max=7)")
                   .size(),
               "input %w : i8[64, 128]");
  auto g = parse(text);
  auto rules = compile({embeddingRule()});
  auto entries = explain(*g, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].message, "input: expected a constant parameter, %w is a graph input");
}

TEST(Rewrite, WherePredicatesReadConstantDataAndExplainFailures) {
  std::string text = kEmbedding;
  text.replace(text.find("min=-8, max=7"), 13, "min=-8, max=9");
  auto g = parse(text);
  auto rules = compile({embeddingRule()});
  auto entries = explain(*g, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].check, "where values_in($w, -8, 7)");
  EXPECT_NE(entries[0].message.find("where values_in($w, -8, 7): %w has "), std::string::npos)
      << entries[0].message;
  EXPECT_NE(entries[0].message.find("(range [-8.0, 9.0])"), std::string::npos)
      << entries[0].message;
  EXPECT_EQ(detailLoc(entries[0]), "rules.pat:7:60");
}

TEST(Rewrite, LegacyTorchaoSignaturesMatchOnlyWithTheirDefaultDomain) {
  std::string text = kEmbedding;
  std::string call = "i8, -8, 7, output_dtype=f32)";
  text.replace(text.find(call), call.size(), "i8, -8, 7, \"INT\", f32)");
  auto g = parse(text);
  auto rules = compile({embeddingRule()});
  auto entries = explain(*g, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].matched) << format(entries[0]);

  // zero_point_domain="FLOAT" is tinygemm's different formula: no match.
  text.replace(text.find("\"INT\""), 5, "\"FLOAT\"");
  auto g2 = parse(text);
  entries = explain(*g2, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].matched);
  EXPECT_EQ(entries[0].message, "zero_point_domain: expected \"INT\", node %dq has \"FLOAT\"");
}

//===----------------------------------------------------------------------===//
// Use constraints, tied weights
//===----------------------------------------------------------------------===//

namespace {

std::unique_ptr<Graph> llamaBlock() {
  auto g = parseGraphFile(std::string(GRAFT_TEST_DATA_DIR) + "/../examples/llama_block_8da4w.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  return g.ok() ? std::move(*g) : std::make_unique<Graph>();
}

} // namespace

TEST(Rewrite, InteriorNodeUsedOutsideTheMatchBlocksItUnlessShared) {
  // The example's lm_head reuses the embedding's dequantize node.
  auto g = llamaBlock();
  auto rules = compile({embeddingRule()});
  ExplainOptions eo;
  eo.node = "%h";
  auto entries = explain(*g, rules, eo);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].message, "%emb_w is also used by %logits (aten.linear.default) outside the "
                                "match (mark the node `shared` to allow this)");

  auto before = llamaBlock();
  auto shared = compile({embeddingRule("low_first", /*sharedDq=*/true), linearRule()});
  FqnRegistry fqns;
  RewriteResult r = fuse(*g, shared, fqns);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(countTarget(*g, "et_vk.embedding_q4gsw.default"), 1u);
  // The lm_head and the three FFN linears; the dq of the tied weight died
  // once both its users were fused.
  EXPECT_EQ(countTarget(*g, "et_vk.linear_q4gsw.default"), 4u);
  EXPECT_EQ(countTarget(*g, "aten.linear.default"), 0u);
  // The tied weight is packed once (both rules asked for the same bytes).
  const ProvenanceEntry *packed = fqns.findByFqn("tok_embeddings.weight.pack_int4_low_first");
  ASSERT_NE(packed, nullptr) << fqns.str();
  EXPECT_EQ(packed->requests, 2u);
  EXPECT_EQ(packed->requestedBy(),
            (std::vector<std::string>{"torchao_embedding_q4gsw", "torchao_linear_q4gsw"}));
  EXPECT_LT(maxDiff(*before, *g), 1e-5);
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

TEST(Rewrite, ARuleMatchingItsOwnOutputStopsAtTheRewriteLimit) {
  auto g = parse(kMuls);
  Rule r;
  r.name = "loop";
  r.nodes.push_back(pnode({"out"}, {"aten.mul.Scalar"}, {var("x"), var("k")}));
  r.rewrite = {newNode({"out"}, "aten.mul.Scalar", {evar("x"), evar("k")})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteOptions o;
  o.maxRewrites = 50;
  RewriteResult res = fuse(*g, rules, fqns, o);
  EXPECT_FALSE(res.converged);
  EXPECT_EQ(res.stopReason, "rewrite limit");
  EXPECT_EQ(res.rewrites, 50u);
  EXPECT_TRUE(verify(*g).empty());
  // The run stopped with nodes still queued: the driver's worklist slots
  // (Node::passScratch) are handed back clean all the same.
  for (const Node &n : g->nodes())
    EXPECT_EQ(n.passScratch(), 0u) << n.name();

  // The automatic limit applies when none is given.
  auto g2 = parse(kMuls);
  RewriteResult res2 = fuse(*g2, rules, fqns, RewriteOptions{});
  EXPECT_FALSE(res2.converged);
  EXPECT_EQ(res2.rewrites, 8u * 3u + 1024u);
}

TEST(Rewrite, FusionIsDeterministic) {
  auto run = [] {
    auto g = llamaBlock();
    auto rules = compile({embeddingRule("low_first", true), linearRule()});
    FqnRegistry fqns;
    RewriteResult r = fuse(*g, rules, fqns);
    return print(*g) + fqns.toJson() + formatResult(r, rules);
  };
  std::string a = run(), b = run();
  EXPECT_EQ(a, b);
}

TEST(Rewrite, MaxIterationsBoundsSweeps) {
  auto g = llamaBlock();
  auto rules = compile({embeddingRule("low_first", true), linearRule()});
  FqnRegistry fqns;
  RewriteOptions o;
  o.maxIterations = 1;
  RewriteResult r = fuse(*g, rules, fqns, o);
  // All fusions happen in the first sweep (the worklist revisits what each
  // rewrite unblocks), but proving the fixpoint needs a second sweep.
  EXPECT_EQ(r.rewrites, 5u);
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.stopReason, "iteration limit");
  RewriteResult again = fuse(*g, rules, fqns);
  EXPECT_TRUE(again.converged);
  EXPECT_EQ(again.rewrites, 0u);
  EXPECT_EQ(again.iterations, 1u);
}

//===----------------------------------------------------------------------===//
// Transactions
//===----------------------------------------------------------------------===//

TEST(Rewrite, APrototypeMismatchRefusesTheRewriteAndLeavesTheGraphAlone) {
  auto g = parse(kMuls);
  std::string before = print(*g);
  Rule r;
  r.name = "to_half";
  r.nodes.push_back(pnode({"out"}, {"aten.mul.Scalar"}, {var("x"), wild()}));
  r.rewrite = {
      newNode({"out"}, "aten._to_copy", {evar("x")}, {{"dtype", elit(Argument(DType::F16))}})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules, fqns);
  EXPECT_EQ(res.rewrites, 0u);
  EXPECT_EQ(res.stats[0].matched, 1u);
  EXPECT_EQ(res.stats[0].rejected, 1u);
  ASSERT_EQ(res.stats[0].rejections.size(), 1u);
  EXPECT_EQ(res.stats[0].rejections[0].first,
            "replacement for %c is f16[4] but the matched value is f32[4]");
  EXPECT_EQ(print(*g), before);
}

TEST(Rewrite, ARewriteThatDropsAUsedResultIsRefused) {
  auto g = llamaBlock();
  std::string before = print(*g);
  // Replace only the scale of a multi-output choose_qparams; its zero point
  // is still used, so the node cannot go.
  Rule r;
  r.name = "scale_only";
  r.nodes.push_back(
      pnode({"s", ""}, {"torchao.choose_qparams_affine"},
            {var("x"), wild(), wild(), wild(), wild(), wild(), wild(), wild(), wild()}));
  r.rewrite = {newNode({"s"}, "aten.amax", {evar("x"), elist({eint(-1)})})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules, fqns);
  EXPECT_EQ(res.rewrites, 0u);
  EXPECT_EQ(res.stats[0].rejected, 2u);
  ASSERT_FALSE(res.stats[0].rejections.empty());
  EXPECT_EQ(res.stats[0].rejections[0].first.rfind("the rewrite drops %", 0), 0u)
      << res.stats[0].rejections[0].first;
  EXPECT_EQ(print(*g), before);
}

TEST(Rewrite, ARewriteConsumingTheValueItReplacesIsACycle) {
  auto g = parse(kMuls);
  std::string before = print(*g);
  Rule r;
  r.name = "self_use";
  r.nodes.push_back(pnode({"out"}, {"aten.mul.Scalar"}, {var("x"), wild()}));
  r.rewrite = {newNode({"out"}, "aten.neg", {eres("out")})};
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules, fqns);
  EXPECT_EQ(res.rewrites, 0u);
  ASSERT_EQ(res.stats[0].rejections.size(), 1u);
  EXPECT_EQ(res.stats[0].rejections[0].first,
            "would create a cycle: a new node consumes %c, a result of the node it replaces");
  EXPECT_EQ(print(*g), before);
}

TEST(Rewrite, AConstantTransformFailureRefusesTheRewrite) {
  std::string text = kEmbedding;
  text.replace(text.find("min=-8, max=7"), 13, "min=-8, max=9");
  auto g = parse(text);
  std::string before = print(*g);
  Rule r = embeddingRule();
  r.where.pop_back(); // no values_in: the packing itself finds the bad value
  auto rules = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules, fqns);
  EXPECT_EQ(res.rewrites, 0u);
  ASSERT_EQ(res.stats[0].rejections.size(), 1u);
  EXPECT_EQ(res.stats[0].rejections[0].first.rfind("pack_int4: value ", 0), 0u)
      << res.stats[0].rejections[0].first;
  EXPECT_EQ(fqns.size(), 0u) << "nothing is recorded for a refused rewrite";
  EXPECT_EQ(print(*g), before);
}

// Deferred constant data (what graft compile uses): fusing computes nothing,
// the data is computed on first use and equals the eager result; a transform
// that fails on the data is then reported naming the constant.
TEST(Rewrite, DeferredConstantsAreComputedWhenNeeded) {
  auto eager = parse(kEmbedding);
  auto lazy = parse(kEmbedding);
  auto rules = compile({embeddingRule()});
  FqnRegistry f1, f2;
  RewriteOptions deferred;
  deferred.deferConstantData = true;
  EXPECT_EQ(fuse(*eager, rules, f1).rewrites, 1u);
  EXPECT_EQ(fuse(*lazy, rules, f2, deferred).rewrites, 1u);
  const GraphInput *a = eager->findConstant("tok_embeddings.weight.pack_int4_low_first");
  const GraphInput *b = lazy->findConstant("tok_embeddings.weight.pack_int4_low_first");
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(a->isDeferred());
  EXPECT_TRUE(b->isDeferred());
  EXPECT_EQ(b->resident(), nullptr);
  auto loaded = b->load(); // computed, not cached
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(b->isDeferred());
  ASSERT_EQ(loaded->nbytes(), a->data().nbytes());
  EXPECT_EQ(std::memcmp(loaded->rawData(), a->data().rawData(), a->data().nbytes()), 0);
  EXPECT_EQ(maxDiff(*eager, *lazy), 0.0);
  EXPECT_EQ(print(*eager), print(*lazy)); // same graph, names and (computed) data

  // No values_in: the bad value is found only when the data is computed.
  std::string text = kEmbedding;
  text.replace(text.find("min=-8, max=7"), 13, "min=-8, max=9");
  auto bad = parse(text);
  Rule r = embeddingRule();
  r.where.pop_back();
  FqnRegistry f3;
  EXPECT_EQ(fuse(*bad, compile({r}), f3, deferred).rewrites, 1u);
  const GraphInput *c = bad->findConstant("tok_embeddings.weight.pack_int4_low_first");
  ASSERT_NE(c, nullptr);
  auto failed = c->load();
  ASSERT_FALSE(failed.ok());
  const std::string &msg = failed.diags().front().message;
  EXPECT_EQ(msg.rfind("constant 'tok_embeddings.weight.pack_int4_low_first' = "
                      "pack_int4(tok_embeddings.weight, nibbles=low_first): pack_int4: value ",
                      0),
            0u)
      << msg;
  auto inputs = makeRandomInputs(*bad, 1);
  ASSERT_TRUE(inputs.ok());
  auto run = Interpreter().run(*bad, *inputs);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.diags().front().message.find("pack_int4: value "), std::string::npos)
      << run.diags().front().message;
}

TEST(Rewrite, DataFreeGraphsGetDataFreeConstants) {
  std::string text = kEmbedding;
  text.replace(text.find(" = random(seed=1, min=-8, max=7)"), 32, "");
  auto g = parse(text);
  auto rules = compile({embeddingRule()});
  // values_in cannot be checked without data, and explain says so.
  auto entries = explain(*g, rules);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_NE(entries[0].message.find("has no data to check"), std::string::npos)
      << entries[0].message;
  Rule r = embeddingRule();
  r.where.pop_back();
  auto rules2 = compile({r});
  FqnRegistry fqns;
  RewriteResult res = fuse(*g, rules2, fqns);
  EXPECT_EQ(res.rewrites, 1u);
  const GraphInput *packed = g->findConstant("tok_embeddings.weight.pack_int4_low_first");
  ASSERT_NE(packed, nullptr);
  EXPECT_FALSE(packed->hasData());
  EXPECT_EQ(packed->value->proto().str(), "u8[64, 64]");
}

TEST(Rewrite, StatsCountTriedMatchedAppliedAndFailuresBySite) {
  std::string text = kEmbedding;
  text.replace(text.find("i8, -8, 7"), 9, "i8, -128, 127");
  auto g = parse(text);
  auto rules = compile({embeddingRule()});
  FqnRegistry fqns;
  RewriteResult r = fuse(*g, rules, fqns);
  EXPECT_EQ(r.stats[0].tried, 1u);
  EXPECT_EQ(r.stats[0].matched, 0u);
  ASSERT_EQ(r.stats[0].failures.size(), 1u);
  EXPECT_EQ(r.stats[0].failures[0].first, "rules.pat:3:78 quant_min");
  EXPECT_EQ(r.stats[0].failures[0].second, 1u);
  std::string summary = formatResult(r, rules);
  EXPECT_NE(summary.find("torchao_embedding_q4gsw: tried 1, matched 0, applied 0, rejected 0"),
            std::string::npos)
      << summary;
}

//===----------------------------------------------------------------------===//
// Compile errors
//===----------------------------------------------------------------------===//

namespace {

std::string compileError(std::vector<Rule> rules) {
  auto c = CompiledRules::compile(std::move(rules));
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : render(c.diags());
}

} // namespace

TEST(Rewrite, CompileErrorsAreLocated) {
  Rule r = squareRule("aten.mul");
  r.nodes[0].kwargs.push_back({"alpah", wild()});
  EXPECT_NE(compileError({r}).find("rules.pat:2:3: error: rule 'square': no overload of aten.mul "
                                   "accepts the pattern's arguments"),
            std::string::npos)
      << compileError({r});
  EXPECT_NE(compileError({r}).find("note: aten.mul.Tensor has no argument 'alpah'"),
            std::string::npos)
      << compileError({r});

  Rule unbound = squareRule("aten.mul.Tensor");
  unbound.where = {ebin("==", evar("nope", at(3, 9)), eint(1))};
  EXPECT_NE(compileError({unbound}).find("rules.pat:3:9: error: rule 'square': $nope is not bound"),
            std::string::npos)
      << compileError({unbound});

  Rule disconnected = squareRule("aten.mul.Tensor");
  disconnected.nodes.insert(disconnected.nodes.begin(),
                            pnode({"lonely"}, {"aten.relu"}, {wild()}, {}, at(5, 3)));
  disconnected.root = 1;
  EXPECT_NE(compileError({disconnected})
                .find("rules.pat:5:3: error: rule 'square': pattern node %lonely is not "
                      "connected to the root of the match"),
            std::string::npos)
      << compileError({disconnected});

  Rule badTransform = embeddingRule();
  badTransform.rewrite[0].target = "pack_int3";
  EXPECT_NE(compileError({badTransform}).find("unknown constant transform 'pack_int3'"),
            std::string::npos);

  Rule tooMany = squareRule("aten.mul.Tensor");
  tooMany.nodes[0].args.push_back(wild());
  EXPECT_NE(compileError({tooMany}).find("aten.mul.Tensor takes 2 positional arguments"),
            std::string::npos)
      << compileError({tooMany});

  Rule optionalRoot = squareRule("aten.mul.Tensor");
  optionalRoot.nodes[0].optional = true;
  EXPECT_NE(compileError({optionalRoot}).find("the root of a match cannot be optional"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// A Llama-shaped graph end to end
//===----------------------------------------------------------------------===//

#include "../../bench/BenchLlama.h"

TEST(Rewrite, LlamaFusesEveryQuantizedOpWithExactNumerics) {
  // The benchmarks' int4 Llama (graft synth's) with weights and their zero
  // points, which the rules read (all_zero); a static sequence length, as
  // maxDiff's random inputs set no symbols.
  LlamaSynthOptions o = bench::benchLlama(2, /*withData=*/true);
  o.weightZeroPoints = true;
  o.dynamicSeq = false;
  auto synth = [&] {
    auto g = synthesizeLlama(o);
    EXPECT_TRUE(g.ok()) << render(g.diags());
    return std::move(*g);
  };
  auto g = synth();
  auto before = synth();
  auto rules = compile({embeddingRule(), linearRule()});
  FqnRegistry fqns;
  RewriteResult r = fuse(*g, rules, fqns);
  EXPECT_TRUE(r.converged);
  // The embedding, 7 linears per layer and the output projection.
  EXPECT_EQ(r.rewrites, 1u + 7u * 2u + 1u);
  EXPECT_EQ(countTarget(*g, "torchao.dequantize_affine.default"), 0u);
  EXPECT_EQ(countTarget(*g, "aten.linear.default"), 0u);
  // Per linear: the packed weight and the transposed scales (both pads are
  // the identity here: K and N are multiples of 8, so they make no
  // constant); plus the embedding's packed weight.
  EXPECT_EQ(fqns.size(), 1u + (7u * 2u + 1u) * 2u);
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
  for (const Node &n : g->nodes())
    EXPECT_EQ(n.passScratch(), 0u) << n.name();
  // Each candidate is tried once per sweep (a node queued again moves up
  // the worklist instead of being queued twice): two sweeps, the second
  // finding nothing, over the roots and what the rewrites queue.
  EXPECT_EQ(r.iterations, 2u);
}
