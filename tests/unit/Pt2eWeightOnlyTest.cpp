//===- Pt2eWeightOnlyTest.cpp - PT2E weight-only int8 linears, end to end -===//
//
// Issue 20, case 4: a PT2E weight-only int8 Llama as convert_pt2e + export
// write it (tests/golden/pt2/pt2e_8w_rank3_llama.pt2, made by
// `graft synth llama --quant pt2e-8w --layers 1 --dim 32 --heads 2 --vocab 64
// --max-seq-len 16 --seq-len 4`): buffers _frozen_param<i> (i8), _scale_<i>
// (f32), _zero_point_<i> (i64), and
// quantized_decomposed.dequantize_per_channel(w, s, zp, 0, -127, 127, int8)
// -> aten.linear on [1, S, K] activations. The shipped rules must fuse every
// linear (pt2e_linear_int8pack_3d for the rank-3 projections,
// pt2e_linear_int8pack for the 2-D last-token lm_head), the program must be
// one partition with no CPU node and match the interpreter on the original
// graph. Without rules, the standalone dequantize_per_channel runs on the
// device too.
//
//===----------------------------------------------------------------------===//
#include "graft/Compiler.h"

#include "graft/interp/Interpreter.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/vulkan/GraphExecutor.h"

#include "CompileTestUtil.h"
#include "VulkanTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace graft {
namespace {

namespace fs = std::filesystem;
using vktest::deviceVsReference;

const std::string kFixture =
    std::string(GRAFT_TEST_DATA_DIR) + "/golden/pt2/pt2e_8w_rank3_llama.pt2";

class Pt2eWeightOnly : public graft::testing::ScratchDirTest {};

// The fixture is spelled as upstream writes it (the placeholders' kind, names
// and dtypes, the dequantize's arguments), so the rules are tested on that.
TEST_F(Pt2eWeightOnly, FixtureHasUpstreamSpelling) {
  auto m = load(kFixture);
  ASSERT_TRUE(m.ok()) << render(m.diags());
  const Graph &g = *m->graph;
  std::map<std::string, const GraphInput *> byFqn;
  for (const GraphInput &in : g.inputs())
    byFqn[std::string(in.fqn)] = &in;
  for (const auto &[fqn, dtype] :
       std::vector<std::pair<std::string, DType>>{{"_frozen_param0", DType::I8},
                                                  {"_scale_0", DType::F32},
                                                  {"_zero_point_0", DType::I64}}) {
    ASSERT_TRUE(byFqn.count(fqn)) << fqn;
    const GraphInput &in = *byFqn[fqn];
    EXPECT_EQ(in.kind, InputKind::Buffer) << fqn;
    EXPECT_TRUE(in.persistent) << fqn;
    EXPECT_EQ(in.value->proto().dtype, dtype) << fqn;
  }
  int rank3 = 0;
  for (const Node &n : g.nodes()) {
    if (n.target() != "aten.linear.default")
      continue;
    const Node *dq = n.args()[1].value()->producer();
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->target(), "quantized_decomposed.dequantize_per_channel.default");
    EXPECT_EQ(dq->args()[3].integer(), 0);    // axis
    EXPECT_EQ(dq->args()[4].integer(), -127); // quant_min
    EXPECT_EQ(dq->args()[5].integer(), 127);  // quant_max
    rank3 += n.args()[0].value()->proto().rank() == 3;
  }
  EXPECT_EQ(rank3, 7); // wq, wk, wv, wo, w1, w2, w3 of the one layer
}

TEST_F(Pt2eWeightOnly, Rank3LinearsFuseToOnePartition) {
  CompileOptions opts;
  opts.output = path("m.vkprog");
  CompileResult r;
  auto back = graft::testing::compileToOnePartition(kFixture, opts, &r);
  ASSERT_TRUE(back);
  const CompileSummary &s = r.summary;
  if (RuleSet::shippedFiles().empty())
    GTEST_SKIP() << "patterns were not embedded";
  EXPECT_EQ(s.rulesFired.count("pt2e_linear_int8pack_3d")
                ? s.rulesFired.at("pt2e_linear_int8pack_3d")
                : 0u,
            7u)
      << s.text();
  EXPECT_EQ(
      s.rulesFired.count("pt2e_linear_int8pack") ? s.rulesFired.at("pt2e_linear_int8pack") : 0u, 1u)
      << s.text();
  for (const Node &n : back->graph->nodes())
    EXPECT_NE(n.target(), "quantized_decomposed.dequantize_per_channel.default") << n.name();

  GRAFT_REQUIRE_VULKAN();
  auto original = load(kFixture);
  ASSERT_TRUE(original.ok());
  // _weight_int8pack_mm scales the finished dot product instead of each
  // weight (the rules' tolerance, atol 1e-3 + rtol 1e-5); through one layer
  // of this model the outputs (|y| < 10) differ by about 1e-6.
  EXPECT_LT(deviceVsReference(*back->graph, *original->graph), 1e-4);
}

TEST_F(Pt2eWeightOnly, StandaloneDequantizeRunsOnTheDevice) {
  CompileOptions opts;
  opts.defaultRules = false;
  opts.output = path("raw.vkprog");
  auto back = graft::testing::compileToOnePartition(kFixture, opts);
  ASSERT_TRUE(back);
  std::size_t dq = 0;
  for (const Node &n : back->graph->nodes())
    dq += n.target() == "quantized_decomposed.dequantize_per_channel.default";
  EXPECT_EQ(dq, 8u);

  GRAFT_REQUIRE_VULKAN();
  auto original = load(kFixture);
  ASSERT_TRUE(original.ok());
  // The same graph on both sides: the dequantize kernel is bit-exact and the
  // f32 linears follow the interpreter's order; only the driver's exp/rsqrt
  // in silu, softmax and RMSNorm differ (docs/vulkan-backend.md).
  EXPECT_LT(deviceVsReference(*back->graph, *original->graph), 1e-4);
}

} // namespace
} // namespace graft
