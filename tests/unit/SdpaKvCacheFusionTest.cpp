//===- SdpaKvCacheFusionTest.cpp - custom_sdpa + update_cache fusion ------===//
//
// patterns/sdpa_kv_cache.pat on the model `graft synth llama --kv-cache
// custom` writes (ExecuTorch's export with --use_sdpa_with_kv_cache): every
// layer's two llama.update_cache and llama.custom_sdpa become one
// llama.sdpa_with_kv_cache, and the fused graph decodes exactly like the
// original through the reference interpreter. The update_cache nodes mutate
// the cache buffers in place and have no data edge to custom_sdpa, so this
// checks what the rule cannot show on one call: after a prefill and several
// decode steps (each carrying the caches in a MutableState) the logits and
// the caches are bit-identical, i.e. the fused node updates the same
// buffers at the same positions before attending. The compiled program
// keeps one Vulkan partition with no CPU node. A graph where another node
// reads a cache between its update and the attention must not fuse (the
// moved update would change what it reads).
//
//===----------------------------------------------------------------------===//
#include "CompileTestUtil.h"
#include "RewriteTestUtil.h"
#include "SynthTestUtil.h"
#include "VulkanTestUtil.h"

#include "graft/Compiler.h"
#include "graft/dsl/Pat.h"
#include "graft/interp/Interpreter.h"
#include "graft/ops/OpRegistry.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace graft;
using namespace graft::rewrite;

namespace {

using graft::testing::countNodes;
using graft::testing::fuseVerified;

CompiledRules sdpaRules() {
  SourceManager sm;
  auto set =
      dsl::parsePatFile(std::string(GRAFT_TEST_DATA_DIR) + "/../patterns/sdpa_kv_cache.pat", &sm);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : render(set.diags(), &sm));
  if (!set.ok())
    std::abort();
  auto c = CompiledRules::compile(set->rules);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : render(c.diags()));
  if (!c.ok())
    std::abort();
  return std::move(*c);
}

std::unique_ptr<Graph> read(const std::string &path) {
  auto p = readPt2(path);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : render(p.diags()));
  return p.ok() ? std::move(p->graph) : nullptr;
}

class SdpaKvCacheFusion : public graft::testing::ScratchDirTest,
                          public ::testing::WithParamInterface<bool> {};

TEST_P(SdpaKvCacheFusion, EveryLayerFusesAndDecodesBitIdentically) {
  // Param: a symbolic sequence length (prefill of 4, then one-token steps)
  // or a static one-token sequence (--dynamic-pos --seq-len 1).
  const bool dynamicSeq = GetParam();
  LlamaSynthOptions o = graft::testing::tinyLlama(SynthQuant::None);
  o.kvCache = SynthKvCache::Custom;
  o.dynamicSeq = dynamicSeq;
  o.dynamicPos = !dynamicSeq;
  o.seqLen = dynamicSeq ? 4 : 1;
  // Through a .pt2, so the BUFFER_MUTATION outputs of the signature are
  // what the interpreter follows.
  std::string model = graft::testing::writeSynthesizedPt2(o, path("kv.pt2"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto original = read(model), fused = read(model);
  ASSERT_TRUE(original && fused);

  CompiledRules rules = sdpaRules();
  RewriteResult res = fuseVerified(*fused, rules);
  const auto layers = static_cast<std::size_t>(o.layers);
  EXPECT_EQ(res.rewrites, layers);
  EXPECT_EQ(countNodes(*fused, "llama.sdpa_with_kv_cache.default"), layers);
  EXPECT_EQ(countNodes(*fused, "llama.update_cache.default"), 0u) << "erased with the match";
  EXPECT_EQ(countNodes(*fused, "llama.custom_sdpa.default"), 0u);
  EXPECT_EQ(countNodes(*original, "aten.transpose.int") - countNodes(*fused, "aten.transpose.int"),
            4 * layers)
      << "the two transposes of each cache on its way to custom_sdpa";
  // The fused node mutates the cache buffers themselves.
  for (const Node &n : fused->nodes()) {
    if (n.target() != "llama.sdpa_with_kv_cache.default")
      continue;
    for (std::size_t i : {3u, 4u}) {
      const Value *cache = n.args()[i].value();
      const GraphInput *in = fused->inputFor(cache);
      ASSERT_NE(in, nullptr) << n.name();
      EXPECT_EQ(in->kind, InputKind::Buffer);
      EXPECT_NE(std::string(in->fqn).find(".attention.kv_cache."), std::string::npos) << in->fqn;
    }
  }

  const std::vector<int64_t> ids = {5, 17, 3, 88, 42, 42, 9, 60, 1, 95};
  const std::size_t prefill = dynamicSeq ? 4 : 1;
  Interpreter interp;
  MutableState before, after;
  std::size_t steps = 0;
  for (const graft::testing::DecodeStep &s : graft::testing::decodeSteps(ids, prefill)) {
    SCOPED_TRACE(s.trace());
    ++steps;
    auto want = interp.run(*original, s.inputs, before);
    ASSERT_TRUE(want.ok()) << render(want.diags());
    auto got = interp.run(*fused, s.inputs, after);
    ASSERT_TRUE(got.ok()) << render(got.diags());
    EXPECT_TRUE(std::get<Tensor>(got->back()).equal(std::get<Tensor>(want->back())))
        << "fused logits differ";
  }
  EXPECT_EQ(steps, ids.size() - prefill + 1);
  ASSERT_EQ(after.buffers.size(), 2 * layers) << "k and v caches of every layer";
  for (const auto &[fqn, t] : before.buffers) {
    const Tensor *f = after.find(fqn);
    ASSERT_NE(f, nullptr) << fqn;
    EXPECT_TRUE(f->equal(t)) << fqn << " differs after the fused decode";
  }
}

INSTANTIATE_TEST_SUITE_P(Seq, SdpaKvCacheFusion, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &i) {
                           return std::string(i.param ? "dynamic_seq" : "one_token");
                         });

TEST_F(SdpaKvCacheFusion, CompilesToOnePartitionWithTheFusedOp) {
  LlamaSynthOptions o = graft::testing::tinyLlama(SynthQuant::W4);
  o.kvCache = SynthKvCache::Custom;
  std::string model = graft::testing::writeSynthesizedPt2(o, path("kv.pt2"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  CompileOptions opts;
  opts.output = path("kv.vkprog");
  auto program = graft::testing::compileToOnePartition(model, opts);
  ASSERT_TRUE(program);
  EXPECT_EQ(countNodes(*program->graph, "llama.sdpa_with_kv_cache.default"),
            static_cast<std::size_t>(o.layers));
  EXPECT_EQ(countNodes(*program->graph, "llama.update_cache.default"), 0u);
}

// A node outside the match reading the k cache between update_cache and
// custom_sdpa sees the updated cache; fused, the update would happen after
// it, so the rewrite is refused and says why.
TEST(SdpaKvCacheFusionRefusal, AReaderBetweenTheUpdateAndTheAttentionKeepsTheGraph) {
  LlamaSynthOptions o = graft::testing::tinyLlama(SynthQuant::None);
  o.layers = 1;
  o.kvCache = SynthKvCache::Custom;
  auto g = synthesizeLlama(o);
  ASSERT_TRUE(g.ok()) << render(g.diags());
  Graph &graph = **g;
  Node *update = nullptr;
  for (Node &n : graph.nodes())
    if (n.target() == "llama.update_cache.default" && !update)
      update = &n;
  ASSERT_NE(update, nullptr);
  Value *cache = update->args()[1].value();
  // cache.clone() right after the k cache's update, returned as an output.
  Node *after = graph.nextNode(update);
  ASSERT_NE(after, nullptr);
  Node *snapshot =
      graph.createNode("aten.clone.default", {Argument(cache)}, {},
                       {Graph::ResultSpec{"snapshot", ValueKind::Tensor, cache->proto()}}, after);
  snapshot->setSchema(OpRegistry::builtin().lookup("aten.clone.default"));
  graph.addOutput(snapshot->output(0));
  CompiledRules rules = sdpaRules();
  RewriteResult res = fuseVerified(graph, rules);
  EXPECT_EQ(res.rewrites, 0u);
  ASSERT_FALSE(res.stats[0].rejections.empty());
  EXPECT_NE(res.stats[0].rejections[0].first.find("between its in-place update"), std::string::npos)
      << res.stats[0].rejections[0].first;
}

// A rule that erases an in-place root without a new node mutating the same
// value would lose the cache update: the rewriter refuses it. (The rule
// attends over the updated caches as custom_sdpa does, but nothing writes
// them any more.)
constexpr const char *kDropsUpdate = R"(
rule drops_update {
  match {
    root _    = llama.update_cache($k : f32[1, $S, 2, 16], $kc : f32[1, $M, 2, 16], $pos)
    root %out = llama.custom_sdpa($q : f32[1, $S, 4, 16], $kc, $kc, $pos, none, 0.0, true)
  }
  rewrite {
    %out = llama.custom_sdpa($q, $kc, $kc, $pos, none, 0.0, true)
  }
}
)";

TEST(SdpaKvCacheFusionRefusal, ErasingAnInPlaceRootWithoutTakingOverItsUpdateIsRefused) {
  const char *text = R"(graph @g {
  sym pos : [0, 4]
  buffer %k_cache : f32[1, 8, 2, 16] fqn="k_cache" = random(seed=1, min=-1, max=1)
  input %q : f32[1, 3, 4, 16]
  input %k : f32[1, 3, 2, 16]
  input %input_pos : i64[1]
  %select : i64[] = aten.select.int(%input_pos, 0, 0)
  %pos : symint = aten._local_scalar_dense.default(%select)
  %u : f32[1] = llama.update_cache.default(%k, %k_cache, %pos)
  %out : f32[1, 3, 4, 16] = llama.custom_sdpa.default(%q, %k_cache, %k_cache, %pos, none, 0.0, true)
  mutate buffer "k_cache" = %k_cache
  output %out
})";
  auto g = parseGraph(text, "drops_update.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  SourceManager sm;
  auto set = dsl::parsePat(kDropsUpdate, "drops_update.pat", &sm);
  ASSERT_TRUE(set.ok()) << render(set.diags(), &sm);
  auto rules = CompiledRules::compile(set->rules);
  ASSERT_TRUE(rules.ok()) << render(rules.diags());
  RewriteResult res = fuseVerified(**g, *rules);
  EXPECT_EQ(res.rewrites, 0u);
  ASSERT_FALSE(res.stats[0].rejections.empty());
  EXPECT_NE(res.stats[0].rejections[0].first.find(
                "drops the in-place update of %k_cache by %u (no new node mutates it)"),
            std::string::npos)
      << res.stats[0].rejections[0].first;
  EXPECT_EQ(countNodes(**g, "llama.update_cache.default"), 1u);
}

} // namespace
