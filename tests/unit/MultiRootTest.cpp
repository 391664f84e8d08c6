//===- MultiRootTest.cpp - Matching and rewriting several roots at once ---===//
//
// A multi-root rule (`root %a = ...` statements, docs/dsl.md "Several
// roots") matches chains that never join but share inputs, and replaces all
// of them in one rewrite. These tests pin down: what such a rule lowers to
// (Rule::extraRoots, the search plan), that both roots fuse together and keep
// the numbers, that roots reading different inputs do not match (and explain
// says why), where the fused node goes when a root's user sits between the
// roots, the refusal when no place keeps the graph in order, and that the
// search for the other roots stays local (many pairs fuse, one rewrite
// each), that coverage counts one rewrite covering both chains, and that
// the synthesized Llama's RoPE fuses layer by layer with the same numbers. ExecuTorch's RoPE rule
// (patterns/rope.pat) is the real user.
//
//===----------------------------------------------------------------------===//
#include "RewriteTestUtil.h"
#include "SynthTestUtil.h"

#include "graft/dsl/Pat.h"
#include "graft/interp/Interpreter.h"
#include "graft/rewrite/Coverage.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace graft;
using namespace graft::rewrite;

namespace {

using graft::testing::countNodes;
using graft::testing::fuseVerified;

/// neg(x) * s and neg(y) * s: two roots sharing $s, rewritten to mul + neg
/// each (bit-exact: a sign flip commutes with the product).
const char *kPairRule = R"(
rule paired_scale {
  match {
    %nx      = aten.neg($x : f32[$N])
    root %px = aten.mul.Tensor(%nx, $s : f32[$N])
    %ny      = aten.neg($y : f32[$N])
    root %py = aten.mul.Tensor(%ny, $s)
  }
  rewrite {
    %mx = aten.mul.Tensor($x, $s)
    %px = aten.neg(%mx)
    %my = aten.mul.Tensor($y, $s)
    %py = aten.neg(%my)
  }
}
)";

std::vector<Rule> loadRules(const std::string &text) {
  SourceManager sm;
  auto set = dsl::parsePat(text, "multi_root.pat", &sm);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : render(set.diags(), &sm));
  return set.ok() ? set->rules : std::vector<Rule>{};
}

CompiledRules compile(std::vector<Rule> rules) {
  auto c = CompiledRules::compile(std::move(rules));
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : render(c.diags()));
  if (!c.ok())
    std::abort();
  return std::move(*c);
}

std::unique_ptr<Graph> parse(const std::string &text) {
  auto g = parseGraph(text, "test.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  return g.ok() ? std::move(*g) : std::make_unique<Graph>();
}

/// Max |a - b| over the outputs of two graphs on the same random inputs.
double maxDiff(const Graph &before, const Graph &after) {
  auto in = makeRandomInputs(before, 11);
  EXPECT_TRUE(in.ok());
  auto a = Interpreter().run(before, *in);
  auto b = Interpreter().run(after, *in);
  EXPECT_TRUE(a.ok() && b.ok()) << (b.ok() ? "" : render(b.diags()));
  if (!a.ok() || !b.ok())
    return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const Tensor &x = std::get<Tensor>((*a)[i]);
    const Tensor &y = std::get<Tensor>((*b)[i]);
    for (int64_t k = 0; k < x.numel(); ++k)
      m = std::max(m, std::abs(x.getDouble(k) - y.getDouble(k)));
  }
  return m;
}

const char *kPair = R"(graph @pair {
  input %x : f32[8]
  input %y : f32[8]
  input %s : f32[8]
  %nx : f32[8] = aten.neg.default(%x)
  %px : f32[8] = aten.mul.Tensor(%nx, %s)
  %ny : f32[8] = aten.neg.default(%y)
  %py : f32[8] = aten.mul.Tensor(%ny, %s)
  output %px
  output %py
}
)";

} // namespace

TEST(MultiRoot, LowersToExtraRootsAndASearchPlan) {
  std::vector<Rule> rules = loadRules(kPairRule);
  ASSERT_EQ(rules.size(), 1u);
  const Rule &r = rules[0];
  EXPECT_EQ(r.root, 3u) << "the last statement is the root the engine finds first";
  ASSERT_EQ(r.extraRoots.size(), 1u);
  EXPECT_EQ(r.extraRoots[0], 1u);
  auto plan = planRootSearch(r, [](const std::string &) { return true; });
  ASSERT_TRUE(plan.ok()) << render(plan.diags());
  ASSERT_EQ(plan->size(), 1u);
  const RootSearch &rs = (*plan)[0];
  EXPECT_EQ(rs.root, 1u);
  EXPECT_EQ(rs.anchorCapture, "s") << "%px reads $s directly: a one-step path";
  ASSERT_EQ(rs.path.size(), 1u);
  EXPECT_EQ(rs.path[0].first, 1u);
}

TEST(MultiRoot, BothRootsFuseInOneRewriteWithTheSameNumbers) {
  auto g = parse(kPair);
  auto before = parse(kPair);
  auto rules = compile(loadRules(kPairRule));
  RewriteResult res = fuseVerified(*g, rules);
  EXPECT_EQ(res.rewrites, 1u);
  EXPECT_EQ(countNodes(*g, "aten.neg.default"), 2u);
  EXPECT_EQ(countNodes(*g, "aten.mul.Tensor"), 2u);
  // The rewritten graph: each neg now follows its mul.
  for (const Node &n : g->nodes()) {
    if (n.target() == "aten.neg.default") {
      EXPECT_EQ(n.args()[0].value()->producer()->target(), "aten.mul.Tensor");
    }
  }
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
}

TEST(MultiRoot, RootsThatDoNotShareTheirInputDoNotMatch) {
  // Same chains, but each multiplies by its own scale: nothing leads from
  // the first root's $s to the second root.
  std::string text = kPair;
  text.replace(text.find("  input %s : f32[8]\n"), 20,
               "  input %s : f32[8]\n  input %t : f32[8]\n");
  text.replace(text.find("aten.mul.Tensor(%ny, %s)"), 24, "aten.mul.Tensor(%ny, %t)");
  auto g = parse(text);
  auto rules = compile(loadRules(kPairRule));
  RewriteResult res = fuseVerified(*g, rules);
  EXPECT_EQ(res.rewrites, 0u);
  EXPECT_EQ(countNodes(*g, "aten.neg.default"), 2u);
  // explain names the root search as the failing check, at each candidate.
  auto entries = explain(*g, rules);
  ASSERT_FALSE(entries.empty());
  for (const ExplainEntry &e : entries) {
    EXPECT_FALSE(e.matched);
    EXPECT_EQ(e.check, "root %px") << format(e);
    EXPECT_NE(e.message.find("no unmatched aten.mul.Tensor is reached from $s"), std::string::npos)
        << format(e);
    EXPECT_NE(e.message.find("the roots of a match must share it"), std::string::npos);
  }
}

TEST(MultiRoot, TheFusedNodesGoBeforeTheFirstRootWhenAUserSitsBetween) {
  // %u uses the first root before the second root is computed: the new
  // nodes cannot go before %py (where %u would read a later value), but all
  // they read (x, y, s) exists before %px, so they go there.
  auto g = parse(R"(graph @g {
  input %x : f32[8]
  input %y : f32[8]
  input %s : f32[8]
  %nx : f32[8] = aten.neg.default(%x)
  %px : f32[8] = aten.mul.Tensor(%nx, %s)
  %u : f32[8] = aten.relu.default(%px)
  %ny : f32[8] = aten.neg.default(%y)
  %py : f32[8] = aten.mul.Tensor(%ny, %s)
  output %u
  output %py
}
)");
  auto before = parse(*printGraph(*g));
  auto rules = compile(loadRules(kPairRule));
  RewriteResult res = fuseVerified(*g, rules);
  EXPECT_EQ(res.rewrites, 1u);
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
}

TEST(MultiRoot, NoPlaceThatKeepsTheGraphInOrderRefusesTheRewrite) {
  // The second root's input is computed from the first root's result: one
  // node producing both would consume its own output.
  auto g = parse(R"(graph @g {
  input %x : f32[8]
  input %s : f32[8]
  %nx : f32[8] = aten.neg.default(%x)
  %px : f32[8] = aten.mul.Tensor(%nx, %s)
  %y : f32[8] = aten.relu.default(%px)
  %ny : f32[8] = aten.neg.default(%y)
  %py : f32[8] = aten.mul.Tensor(%ny, %s)
  output %py
}
)");
  auto rules = compile(loadRules(kPairRule));
  RewriteResult res = fuseVerified(*g, rules);
  EXPECT_EQ(res.rewrites, 0u);
  ASSERT_EQ(res.stats.size(), 1u);
  ASSERT_FALSE(res.stats[0].rejections.empty());
  EXPECT_NE(res.stats[0].rejections[0].first.find("cannot be fused into one node in order"),
            std::string::npos)
      << res.stats[0].rejections[0].first;
}

TEST(MultiRoot, ManyPairsFuseEachWithItsOwnSharedInput) {
  // 400 independent pairs, each pair sharing its own scale: every pair
  // fuses in one rewrite, and the other root is found from the scale's two
  // users (a local walk), never by scanning the graph.
  constexpr int kPairs = 400;
  std::ostringstream os;
  os << "graph @many {\n  input %x : f32[8]\n  input %y : f32[8]\n";
  for (int i = 0; i < kPairs; ++i)
    os << "  input %s" << i << " : f32[8]\n";
  for (int i = 0; i < kPairs; ++i)
    os << "  %nx" << i << " : f32[8] = aten.neg.default(%x)\n  %px" << i
       << " : f32[8] = aten.mul.Tensor(%nx" << i << ", %s" << i << ")\n  %ny" << i
       << " : f32[8] = aten.neg.default(%y)\n  %py" << i << " : f32[8] = aten.mul.Tensor(%ny" << i
       << ", %s" << i << ")\n";
  for (int i = 0; i < kPairs; ++i)
    os << "  output %px" << i << "\n  output %py" << i << "\n";
  os << "}\n";
  auto g = parse(os.str());
  auto before = parse(os.str());
  auto rules = compile(loadRules(kPairRule));
  RewriteResult res = fuseVerified(*g, rules);
  EXPECT_EQ(res.rewrites, static_cast<std::size_t>(kPairs));
  ASSERT_EQ(res.stats.size(), 1u);
  EXPECT_EQ(res.stats[0].applied, static_cast<uint64_t>(kPairs));
  EXPECT_EQ(maxDiff(*before, *g), 0.0);
}

TEST(MultiRoot, CoverageCountsOneRewriteCoveringEveryChain) {
  auto g = parse(kPair);
  auto rules = compile(loadRules(kPairRule));
  CoverageReport report = emptyCoverage(rules);
  ASSERT_TRUE(addCoverage(report, "pair", *g, rules).ok());
  ASSERT_EQ(report.rules.size(), 1u);
  EXPECT_EQ(report.rules[0].fired, 1u);
  EXPECT_EQ(report.graphs[0].rewrites, 1u);
  ASSERT_EQ(report.matches.size(), 1u);
  EXPECT_EQ(report.matches[0].removed.size(), 4u) << "both negs and both muls";
  for (const NodeCoverage &n : report.nodes) {
    EXPECT_EQ(n.fate, NodeFate::Fused) << n.node;
    EXPECT_EQ(n.rule, "paired_scale") << n.node;
  }
  EXPECT_EQ(report.fusedNodes(), 4u);
}

TEST(MultiRoot, TheSynthesizedLlamaFusesItsRopeInEveryLayer) {
  // graft synth writes RoPE as torch.export records ExecuTorch's
  // apply_rotary_emb (one view per frequency table, read by xq and xk): the
  // shipped patterns/rope.pat fuses each layer's pair into one
  // apply_rotary_emb, and the fused graph computes what the original does.
  LlamaSynthOptions o = graft::testing::tinyLlama(SynthQuant::None);
  o.dynamicSeq = false;
  auto g = synthesizeLlama(o);
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto before = synthesizeLlama(o);
  ASSERT_TRUE(before.ok());
  SourceManager sm;
  auto set = dsl::parsePatFile(std::string(GRAFT_TEST_DATA_DIR) + "/../patterns/rope.pat", &sm);
  ASSERT_TRUE(set.ok()) << render(set.diags(), &sm);
  auto rules = compile(set->rules);
  RewriteResult res = fuseVerified(**g, rules);
  EXPECT_EQ(res.rewrites, static_cast<std::size_t>(o.layers));
  EXPECT_EQ(countNodes(**g, "et_vk.apply_rotary_emb.default"), static_cast<std::size_t>(o.layers));
  EXPECT_EQ(countNodes(**before, "aten.select.int") - countNodes(**g, "aten.select.int"),
            static_cast<std::size_t>(4 * o.layers))
      << "the real and imaginary selects of xq and xk, per layer";
  EXPECT_EQ(maxDiff(**before, **g), 0.0) << "the fused RoPE is bit-exact";
}

TEST(MultiRoot, TheSynthesizedHfLlamaFusesItsRopeInEveryLayer) {
  // graft synth --use-hf-rope writes ExecuTorch's hf_apply_rotary_emb
  // (examples/models/llama/rope.py) as torch.export records it; the shipped
  // patterns/rope_hf.pat fuses each layer's pair into one
  // apply_rotary_emb_hf on the whole tables at the position the tables were
  // cut at, with full and partial rotation, and the result is bit-exact.
  // Full rotation records q[..., :R] as alias(q), which redundant_ops.pat's
  // remove_alias forwards.
  SourceManager sm;
  std::vector<Rule> all;
  for (const char *file : {"rope_hf.pat", "redundant_ops.pat"}) {
    auto set = dsl::parsePatFile(std::string(GRAFT_TEST_DATA_DIR) + "/../patterns/" + file, &sm);
    ASSERT_TRUE(set.ok()) << render(set.diags(), &sm);
    all.insert(all.end(), set->rules.begin(), set->rules.end());
  }
  auto rules = compile(all);
  struct Case {
    double factor;
    bool dynamicPos;
  };
  for (Case c : {Case{1.0, false}, Case{0.5, false}, Case{0.5, true}}) {
    SCOPED_TRACE("partial_rotary_factor " + std::to_string(c.factor) +
                 (c.dynamicPos ? ", dynamic position" : ", tables cut [:seqlen]"));
    LlamaSynthOptions o = graft::testing::tinyLlama(SynthQuant::None);
    o.dynamicSeq = false;
    o.dynamicPos = c.dynamicPos;
    o.useHfRope = true;
    o.partialRotaryFactor = c.factor;
    auto g = synthesizeLlama(o);
    ASSERT_TRUE(g.ok()) << render(g.diags());
    auto before = synthesizeLlama(o);
    ASSERT_TRUE(before.ok());
    fuseVerified(**g, rules);
    EXPECT_EQ(countNodes(**g, "aten.alias.default"), 0u);
    EXPECT_EQ(countNodes(**g, "et_vk.apply_rotary_emb_hf.default"),
              static_cast<std::size_t>(o.layers));
    EXPECT_EQ(countNodes(**g, "aten.neg.default"), 0u);
    EXPECT_EQ(countNodes(**g, "aten.slice.Tensor") + countNodes(**g, "aten.slice_copy.Tensor"), 0u)
        << "the table slices are folded into the op's start_pos";
    EXPECT_EQ(maxDiff(**before, **g), 0.0) << "the fused RoPE is bit-exact";
  }
}

TEST(MultiRoot, HfRopeSynthOptionsAreChecked) {
  auto error = [](double factor, bool hf) {
    LlamaSynthOptions o = graft::testing::tinyLlama(SynthQuant::None);
    o.useHfRope = hf;
    o.partialRotaryFactor = factor;
    auto g = synthesizeLlama(o);
    return g.ok() ? std::string() : g.diags()[0].message;
  };
  EXPECT_NE(error(0.5, false).find("needs HuggingFace RoPE"), std::string::npos);
  EXPECT_NE(error(1.5, true).find("must be in (0, 1]"), std::string::npos);
  // int(16 * 0.1) = 1: hf_precompute_freqs_cis would make a table of 2 columns.
  EXPECT_NE(error(0.1, true).find("= 1 must be positive and even"), std::string::npos);
  EXPECT_EQ(error(0.75, true), "");
}
