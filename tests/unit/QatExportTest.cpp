//===- QatExportTest.cpp - QAT-prepared models as torch.export writes them -===//
//
// Issue 20, case 5: torchao keeps fake quantization a Python function
// (quant_primitives.py _fake_quantize_affine), so a QAT-prepared model
// (QATConfig(step="prepare"), pytorch/ao 36027d82) exports as aten math with
// its qparams computed in the graph by torchao.choose_qparams_affine. The
// fixture tests/golden/pt2/qat_8da4w_llama_torchao.pt2 is that spelling
// (`graft synth llama --layers 1 --dim 32 --heads 2 --vocab 64 --hidden 64
// --group-size 16 --quant qat-8da4w --dynamic-seq --seq-len 8
// --max-seq-len 64`). patterns/qat_decomposed_legalize.pat must rewrite every
// fake quantizer to torchao.fake_quantize_affine (folding the weights' qparams
// ahead of time), qat.pat convert them, and the 8da4w / 4w rules fuse every
// linear: one partition, no CPU node, and the program must match the
// reference interpreter on the original graph.
//
//===----------------------------------------------------------------------===//
#include "graft/Compiler.h"

#include "graft/interp/Interpreter.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/Synth.h"
#include "graft/vulkan/GraphExecutor.h"

#include "CompileTestUtil.h"
#include "VulkanTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

namespace graft {
namespace {

namespace fs = std::filesystem;

const std::string kFixture =
    std::string(GRAFT_TEST_DATA_DIR) + "/golden/pt2/qat_8da4w_llama_torchao.pt2";

/// The ops only torchao's decomposed fake quantization brings into a Llama.
bool isFakeQuantMath(const std::string &target) {
  return target == "aten.round.default" || target == "aten.reciprocal.default" ||
         target == "aten.clamp.default" || target == "torchao.fake_quantize_affine.default";
}

class QatExport : public graft::testing::ScratchDirTest {
protected:
  /// Writes a one-layer QAT Llama with the given options to `name`.
  std::string synth(SynthQuant quant, SynthQatSpelling spelling, const std::string &name) {
    LlamaSynthOptions o;
    o.layers = 1;
    o.dim = 32;
    o.heads = 2;
    o.vocab = 64;
    o.hidden = 64;
    o.groupSize = 16;
    o.quant = quant;
    o.qatSpelling = spelling;
    auto g = synthesizeLlama(o);
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
    if (!g.ok())
      return {};
    Status s = writePt2(**g, path(name), synthWriteOptions(o));
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : render(s.diags()));
    return path(name);
  }

  fs::path dir_;
};

uint64_t fired(const CompileSummary &s, const std::string &rule) {
  auto it = s.rulesFired.find(rule);
  return it == s.rulesFired.end() ? 0 : it->second;
}

std::map<std::string, int> opCounts(const Graph &g) {
  std::map<std::string, int> n;
  for (const Node &node : g.nodes())
    ++n[node.target()];
  return n;
}

/// Max abs difference against the interpreter on `reference`, on the same
/// random inputs (the dynamic sequence length 5).
double maxAbsError(const Graph &program, const Graph &reference, vktest::GraphRunner run) {
  return vktest::maxAbsErrorVsReference(program, reference, run, {{"s0", 5}}, 7);
}

// The fixture is spelled the way torch.export records torchao's QAT prepare:
// no graft-declared fake_quantize_affine, every fake quantizer as aten math
// (8 weights, 8 per-linear activation quantizers), qparams in the graph.
TEST_F(QatExport, FixtureHasUpstreamSpelling) {
  auto m = load(kFixture);
  ASSERT_TRUE(m.ok()) << render(m.diags());
  const Graph &g = *m->graph;
  auto n = opCounts(g);
  EXPECT_EQ(n["torchao.fake_quantize_affine.default"], 0);
  EXPECT_EQ(n["aten.round.default"], 16);
  EXPECT_EQ(n["aten.reciprocal.default"], 16);
  EXPECT_EQ(n["aten.clamp.default"], 16);
  int weightQParams = 0, tokenQParams = 0;
  for (const Node &node : g.nodes()) {
    if (node.target() != "torchao.choose_qparams_affine.default")
      continue;
    const Value *in = node.args()[0].value();
    const std::string mapping = node.args()[1].string();
    if (g.inputFor(in) && g.inputFor(in)->kind == InputKind::Parameter) {
      EXPECT_EQ(mapping, "SYMMETRIC");
      ++weightQParams;
    } else {
      EXPECT_EQ(mapping, "ASYMMETRIC");
      ++tokenQParams;
    }
  }
  EXPECT_EQ(weightQParams, 8);
  EXPECT_EQ(tokenQParams, 8);
}

TEST_F(QatExport, Qat8da4wFusesToOnePartition) {
  CompileOptions opts;
  opts.output = path("m.vkprog");
  CompileResult r;
  auto back = graft::testing::compileToOnePartition(kFixture, opts, &r);
  ASSERT_TRUE(back);
  const CompileSummary &s = r.summary;
  if (RuleSet::shippedFiles().empty())
    GTEST_SKIP() << "patterns were not embedded";
  // Every fake quantizer is legalized: 8 weights (group-wise), the 7 rank-3
  // projections' activations and the last-token lm_head's 2-D one.
  EXPECT_EQ(fired(s, "qat_fake_quant_decomposed_group"), 8u) << s.text();
  EXPECT_EQ(fired(s, "qat_fake_quant_decomposed_per_token_3d"), 7u) << s.text();
  EXPECT_EQ(fired(s, "qat_fake_quant_decomposed_per_token"), 1u) << s.text();
  EXPECT_EQ(fired(s, "qat_weight_qparams_fold_zp_cast"), 8u) << s.text();
  EXPECT_EQ(fired(s, "torchao_linear_dq8ca_q4gsw_3d") + fired(s, "torchao_linear_dq8ca_q4gsw"), 8u)
      << s.text();
  auto n = opCounts(*back->graph);
  EXPECT_EQ(n["et_vk.linear_dq8ca_q4gsw.default"], 8);
  EXPECT_EQ(n["aten.linear.default"], 0);
  for (const auto &[target, count] : n)
    EXPECT_FALSE(isFakeQuantMath(target)) << target << " x" << count << " left in the program";

  auto original = load(kFixture);
  ASSERT_TRUE(original.ok()) << render(original.diags());
  // The legalize and convert rewrites are bit-exact (verify-rules, tolerance
  // 0); linear_dq8ca_q4gsw quantizes the activation with the very qparams the
  // fake quantizer used and accumulates the integer products in another
  // order, so through one layer (|y| < 1) the outputs differ by float
  // rounding, about 1e-7 on the interpreter and the device alike.
  // The in-memory program (the file drops the data of constants nothing reads
  // any more, such as the float QAT weights, which the interpreter insists on).
  EXPECT_LT(maxAbsError(*r.program.graph, *original->graph, vktest::runOnInterpreter), 1e-5);
  GRAFT_REQUIRE_VULKAN();
  EXPECT_LT(maxAbsError(*back->graph, *original->graph, vktest::runOnDevice), 1e-4);
}

TEST_F(QatExport, Qat4wFusesToLinearQ4gsw) {
  std::string model = synth(SynthQuant::QatW4, SynthQatSpelling::Upstream, "q4.pt2");
  ASSERT_FALSE(model.empty());
  CompileOptions opts;
  opts.output = path("q4.vkprog");
  CompileResult r;
  auto back = graft::testing::compileToOnePartition(model, opts, &r);
  ASSERT_TRUE(back);
  const CompileSummary &s = r.summary;
  if (RuleSet::shippedFiles().empty())
    GTEST_SKIP() << "patterns were not embedded";
  EXPECT_EQ(fired(s, "qat_fake_quant_decomposed_group"), 8u) << s.text();
  EXPECT_EQ(fired(s, "qat_weight_qparams_fold_zp_cast"), 8u) << s.text();
  EXPECT_EQ(fired(s, "qat_weight_fake_quant"), 8u) << s.text();
  EXPECT_EQ(fired(s, "torchao_linear_q4gsw"), 8u) << s.text();
  auto n = opCounts(*back->graph);
  EXPECT_EQ(n["et_vk.linear_q4gsw.default"], 8);
  for (const auto &[target, count] : n)
    EXPECT_FALSE(isFakeQuantMath(target)) << target << " x" << count << " left in the program";

  auto original = load(model);
  ASSERT_TRUE(original.ok()) << render(original.diags());
  // Weight-only: the folded int4 weight dequantizes to the fake-quantized
  // weight bit for bit; only the summation order of the fused linear differs.
  // The in-memory program (the file drops the data of constants nothing reads
  // any more, such as the float QAT weights, which the interpreter insists on).
  EXPECT_LT(maxAbsError(*r.program.graph, *original->graph, vktest::runOnInterpreter), 1e-5);
  GRAFT_REQUIRE_VULKAN();
  EXPECT_LT(maxAbsError(*back->graph, *original->graph, vktest::runOnDevice), 1e-4);
}

// graft's own one-node spelling (--qat-spelling graft) still takes qat.pat's
// direct path, with the in-graph weight qparams folded by the legalize family.
TEST_F(QatExport, GraftSpellingFusesWithoutTheDecomposedRules) {
  std::string model = synth(SynthQuant::QatW8A8W4, SynthQatSpelling::Graft, "g8.pt2");
  ASSERT_FALSE(model.empty());
  auto m = load(model);
  ASSERT_TRUE(m.ok()) << render(m.diags());
  auto before = opCounts(*m->graph);
  EXPECT_EQ(before["torchao.fake_quantize_affine.default"], 16);
  EXPECT_EQ(before["aten.round.default"], 0);
  CompileOptions opts;
  auto r = compile(model, opts);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  const CompileSummary &s = r->summary;
  EXPECT_EQ(s.partitions, 1u) << s.text();
  EXPECT_EQ(s.cpuNodes, 0u) << s.text();
  if (RuleSet::shippedFiles().empty())
    GTEST_SKIP() << "patterns were not embedded";
  EXPECT_EQ(fired(s, "qat_fake_quant_decomposed_group"), 0u) << s.text();
  EXPECT_EQ(fired(s, "qat_weight_qparams_fold"), 8u) << s.text();
  EXPECT_EQ(fired(s, "torchao_linear_dq8ca_q4gsw_3d") + fired(s, "torchao_linear_dq8ca_q4gsw"), 8u)
      << s.text();
}

} // namespace
} // namespace graft
