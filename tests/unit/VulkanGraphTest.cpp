//===- VulkanGraphTest.cpp - Whole graphs on the device vs the interpreter ===//
//
// Llama-style blocks run end to end on the Vulkan device with no CPU
// fallback and match the reference interpreter: the et_vk-fused 8da4w and
// 4w decoder blocks (tests/golden/vulkan/, tied embedding / lm_head), and
// the unfused torch.export form of examples/llama_block_8da4w.gir. Also:
// nodes without a kernel fall back to the interpreter with a reason, a
// dynamic position read from a tensor stays on the device, and bad inputs
// are diagnostics.
//
//===----------------------------------------------------------------------===//
#include "VulkanTestUtil.h"

#include "graft/support/FileIO.h"

#include <gtest/gtest.h>

using namespace graft;
using namespace graft::vktest;

namespace {

std::string readGolden(const std::string &rel) {
  auto text = readFile(std::string(GRAFT_TEST_DATA_DIR) + "/" + rel);
  EXPECT_TRUE(text.ok()) << rel;
  return text.ok() ? *text : std::string();
}

void expectAllOnDevice(const GraphRun &r) {
  for (const vk::NodePlan &p : r.plan)
    EXPECT_NE(p.placement, vk::Placement::CpuFallback)
        << "node %" << p.node->name() << " (" << p.node->target() << "): " << p.reason;
}

void expectClose(const GraphRun &r, Tolerance tol, const std::string &what) {
  ASSERT_EQ(r.device.size(), r.reference.size()) << what;
  for (std::size_t i = 0; i < r.device.size(); ++i) {
    std::string why =
        allClose(std::get<Tensor>(r.device[i]), std::get<Tensor>(r.reference[i]), tol);
    EXPECT_TRUE(why.empty()) << what << " output " << i << ": " << why;
  }
}

// The 4w block differs from the reference only through exp (silu, softmax)
// rounding on the device, amplified by the following layers.
TEST(VulkanGraph, LlamaBlock4wEtVk) {
  GRAFT_REQUIRE_VULKAN();
  std::string gir = readGolden("golden/vulkan/llama_block_4w_et_vk.gir");
  for (int64_t s : {1, 5, 17}) {
    GraphRun r = runBoth(gir, 100 + s, {{"s0", s}});
    expectAllOnDevice(r);
    expectClose(r, {1e-5, 1e-5}, "seq " + std::to_string(s));
  }
}

// 8da4w: the device quantizes the feed-forward activations per token (as
// ExecuTorch's shader does) while the op's reference ignores that
// quantization, so the tolerance is the activation-quantization error.
TEST(VulkanGraph, LlamaBlock8da4wEtVk) {
  GRAFT_REQUIRE_VULKAN();
  std::string gir = readGolden("golden/vulkan/llama_block_8da4w_et_vk.gir");
  for (int64_t s : {1, 6, 33}) {
    GraphRun r = runBoth(gir, 200 + s, {{"s0", s}});
    expectAllOnDevice(r);
    expectClose(r, {2e-2, 2e-2}, "seq " + std::to_string(s));
  }
}

// The unfused export form: torchao dequantize/choose_qparams/quantize,
// decomposed RMSNorm, float linears, tied lm_head: all on the device, and
// exact but for silu's exp.
TEST(VulkanGraph, UnfusedExample8da4w) {
  GRAFT_REQUIRE_VULKAN();
  std::string gir = readGolden("../examples/llama_block_8da4w.gir");
  for (int64_t s : {1, 9}) {
    GraphRun r = runBoth(gir, 300 + s, {{"s0", s}});
    expectAllOnDevice(r);
    expectClose(r, {1e-5, 1e-5}, "seq " + std::to_string(s));
  }
}

TEST(VulkanGraph, CpuFallbackHasReasonsAndMatches) {
  GRAFT_REQUIRE_VULKAN();
  // amax over dim 0 has no kernel (only innermost reductions); bf16 has no
  // device representation. Both run on the interpreter between device nodes.
  std::string gir = R"(graph @t {
  input %a : f32[5, 67]
  %b : f32[5, 67] = aten.mul.Tensor(%a, %a)
  %c : f32[67] = aten.amax.default(%b, [0])
  %d : bf16[67] = aten._to_copy.default(%c, dtype=bf16)
  %e : f32[67] = aten._to_copy.default(%d, dtype=f32)
  %f : f32[5, 67] = aten.add.Tensor(%b, %e)
  output %f
})";
  GraphRun r = runBoth(gir, 5, {}, /*allowFallback=*/true);
  ASSERT_EQ(r.plan.size(), 5u);
  EXPECT_EQ(r.plan[0].placement, vk::Placement::Device);
  EXPECT_EQ(r.plan[1].placement, vk::Placement::CpuFallback);
  EXPECT_NE(r.plan[1].reason.find("innermost"), std::string::npos) << r.plan[1].reason;
  EXPECT_EQ(r.plan[2].placement, vk::Placement::CpuFallback);
  EXPECT_NE(r.plan[2].reason.find("bf16"), std::string::npos) << r.plan[2].reason;
  EXPECT_EQ(r.plan[4].placement, vk::Placement::Device);
  expectClose(r, {0, 0}, "fallback graph");

  // Without fallback the same graph is rejected, naming the node.
  auto g = parseGraph(gir, "t.gir");
  ASSERT_TRUE(g.ok());
  vk::ExecutorOptions strict;
  strict.allowCpuFallback = false;
  auto exec = vk::GraphExecutor::create(*context(), **g, strict);
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.diags()[0].message.find("%c (aten.amax.default)"), std::string::npos)
      << exec.diags()[0].message;
}

TEST(VulkanGraph, DynamicSliceFromTensorStaysOnDevice) {
  GRAFT_REQUIRE_VULKAN();
  // A KV-cache style read: the start position comes from a tensor
  // (select_as_symint, as ExecuTorch fuses _local_scalar_dense(select_copy)),
  // is range-checked by sym_constrain_range_for_size, and feeds slice_copy.
  // Everything stays in the device program: the position is a host-side
  // read of one element.
  std::string gir = R"(graph @t {
  sym p : [0, 15]
  sym q : [0, 16]
  param %cache : f32[1, 16, 8] fqn="cache" = random(seed=3, min=-1, max=1)
  input %pos : i64[2]
  input %end : i64[]
  %p : symint = et_vk.select_as_symint.default(%pos, 0, 1)
  aten.sym_constrain_range_for_size.default(%p, min=0, max=15)
  %q : symint = aten._local_scalar_dense.default(%end)
  %w : f32[1, q-p, 8] = aten.slice_copy.Tensor(%cache, 1, %p, %q)
  %x : f32[1, q-p, 8] = aten.mul.Tensor(%w, %w)
  output %x
})";
  auto g = parseGraph(gir, "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  std::vector<RuntimeValue> inputs = {Tensor::fromInts(DType::I64, {2}, {3, 2}),
                                      Tensor::fromInts(DType::I64, {}, {9})};
  auto ref = Interpreter().run(**g, inputs);
  ASSERT_TRUE(ref.ok()) << render(ref.diags());
  vk::ExecutorOptions strict;
  strict.allowCpuFallback = false;
  auto exec = vk::GraphExecutor::create(*context(), **g, strict);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto out = (*exec)->run(inputs);
  ASSERT_TRUE(out.ok()) << render(out.diags());
  const Tensor &t = std::get<Tensor>((*out)[0]);
  EXPECT_EQ(t.sizes(), (std::vector<int64_t>{1, 7, 8}));
  EXPECT_EQ(allClose(t, std::get<Tensor>((*ref)[0]), {0, 0}), "");

  // A position outside the constrained range fails like the reference.
  inputs[0] = Tensor::fromInts(DType::I64, {2}, {0, 40});
  auto bad = (*exec)->run(inputs);
  ASSERT_FALSE(bad.ok());
  auto badRef = Interpreter().run(**g, inputs);
  ASSERT_FALSE(badRef.ok());
  EXPECT_NE(bad.diags()[0].message.find("sym_constrain_range_for_size"), std::string::npos)
      << bad.diags()[0].message;
}

TEST(VulkanGraph, InputErrorsAreDiagnostics) {
  GRAFT_REQUIRE_VULKAN();
  auto g = parseGraph(R"(graph @t {
  input %a : f32[4, 8]
  %b : f32[4, 8] = aten.neg.default(%a)
  output %b
})",
                      "t.gir");
  ASSERT_TRUE(g.ok());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_TRUE(exec.ok());
  auto wrongShape = (*exec)->run({Tensor::empty(DType::F32, {4, 9})});
  ASSERT_FALSE(wrongShape.ok());
  EXPECT_NE(wrongShape.diags()[0].message.find("input %a"), std::string::npos);
  auto wrongCount = (*exec)->run({});
  ASSERT_FALSE(wrongCount.ok());
  EXPECT_NE(wrongCount.diags()[0].message.find("1 user inputs"), std::string::npos);
  // The executor can run again after a failed run.
  auto ok = (*exec)->run({Tensor::fromDoubles(DType::F32, {4, 8}, std::vector<double>(32, 1.5))});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(std::get<Tensor>((*ok)[0]).getDouble(31), -1.5);
}

} // namespace
