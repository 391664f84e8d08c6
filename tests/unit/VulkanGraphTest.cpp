//===- VulkanGraphTest.cpp - Whole graphs on the device vs the interpreter ===//
//
// Llama-style blocks run end to end on the Vulkan device with no CPU
// fallback and match the reference interpreter: the et_vk-fused 8da4w and
// 4w decoder blocks (tests/golden/vulkan/, tied embedding / lm_head), and
// the unfused torch.export form of examples/llama_block_8da4w.gir, and a
// compiled PT2E static-int8 chain (one partition, bit-exact). Also:
// the executor follows the plan it is given (planned CPU nodes run on the
// interpreter; a device node the device cannot run is an error naming it,
// and a CPU fallback with its reason only when opted in, in the library and
// in `graft run PROGRAM`), a dynamic position read from a tensor stays on
// the device, and bad inputs are diagnostics.
//
//===----------------------------------------------------------------------===//
#include "CliTestUtil.h"
#include "VulkanTestUtil.h"

#include "graft/serialize/ProgramFile.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

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

  // By default (no opt-in) the same graph is rejected, naming each node
  // that cannot run on the device and why.
  auto g = parseGraph(gir, "t.gir");
  ASSERT_TRUE(g.ok());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_FALSE(exec.ok());
  ASSERT_EQ(exec.diags().size(), 3u) << render(exec.diags()); // %c, %d, %e
  EXPECT_NE(exec.diags()[0].message.find("%c (aten.amax.default)"), std::string::npos)
      << exec.diags()[0].message;
  EXPECT_NE(exec.diags()[0].message.find("innermost"), std::string::npos)
      << exec.diags()[0].message;
  EXPECT_NE(exec.diags()[1].message.find("%d (aten._to_copy.default)"), std::string::npos)
      << exec.diags()[1].message;
}

// A device node (%b), a node no device kernel covers (%c: amax over a
// non-innermost dim) and a node the device could run (%f).
const char *kPlanGraph = R"(graph @t {
  input %a : f32[5, 67]
  %b : f32[5, 67] = aten.mul.Tensor(%a, %a)
  %c : f32[67] = aten.amax.default(%b, [0])
  %f : f32[5, 67] = aten.add.Tensor(%b, %c)
  output %f
})";

vk::PlannedPlacement planned(vk::Placement p, std::string reason = {}) {
  vk::PlannedPlacement pp;
  pp.placement = p;
  pp.reason = std::move(reason);
  return pp;
}

/// Runs `exec` and the interpreter on the same random inputs; bit-exact.
void expectMatchesReference(vk::GraphExecutor &exec, const Graph &g) {
  auto inputs = makeRandomInputs(g, 7);
  ASSERT_TRUE(inputs.ok()) << render(inputs.diags());
  auto out = exec.run(*inputs);
  ASSERT_TRUE(out.ok()) << render(out.diags());
  auto ref = Interpreter().run(g, *inputs);
  ASSERT_TRUE(ref.ok()) << render(ref.diags());
  EXPECT_EQ(allClose(std::get<Tensor>((*out)[0]), std::get<Tensor>((*ref)[0]), {0, 0}), "");
}

TEST(VulkanGraph, PlannedCpuNodesRunOnTheCpuEvenWhereTheDeviceCould) {
  GRAFT_REQUIRE_VULKAN();
  auto g = parseGraph(kPlanGraph, "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  vk::ExecutorOptions opts;
  opts.plan = {planned(vk::Placement::Device), planned(vk::Placement::Cpu, "reduction over dim 0"),
               planned(vk::Placement::Cpu, "constraint group split")};
  auto exec = vk::GraphExecutor::create(*context(), **g, opts);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  const auto &plan = (*exec)->plan();
  EXPECT_EQ(plan[0].placement, vk::Placement::Device);
  EXPECT_EQ(plan[1].placement, vk::Placement::Cpu);
  EXPECT_EQ(plan[1].reason, "reduction over dim 0");
  // The device could run the add; the plan says CPU, so it runs there.
  EXPECT_EQ(plan[2].placement, vk::Placement::Cpu);
  EXPECT_EQ(plan[2].reason, "constraint group split");
  EXPECT_EQ((*exec)->numCpuNodes(), 2u);
  EXPECT_EQ((*exec)->numCpuFallbackNodes(), 0u);
  expectMatchesReference(**exec, **g);
  EXPECT_EQ((*exec)->stats().cpuNodes, 2u);
  EXPECT_EQ((*exec)->stats().cpuFallbackNodes, 0u);
}

TEST(VulkanGraph, PlannedDeviceNodeThatCannotRunIsAnErrorUnlessFallbackIsAllowed) {
  GRAFT_REQUIRE_VULKAN();
  auto g = parseGraph(kPlanGraph, "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  vk::ExecutorOptions opts;
  opts.plan = {planned(vk::Placement::Device), planned(vk::Placement::Device),
               planned(vk::Placement::Device)};
  auto strict = vk::GraphExecutor::create(*context(), **g, opts);
  ASSERT_FALSE(strict.ok());
  ASSERT_EQ(strict.diags().size(), 1u) << render(strict.diags());
  const std::string &msg = strict.diags()[0].message;
  EXPECT_NE(msg.find("node %c (aten.amax.default) is planned for the Vulkan device"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("innermost"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--allow-cpu-fallback"), std::string::npos) << msg;

  opts.allowCpuFallback = true;
  auto exec = vk::GraphExecutor::create(*context(), **g, opts);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  EXPECT_EQ((*exec)->plan()[1].placement, vk::Placement::CpuFallback);
  EXPECT_NE((*exec)->plan()[1].reason.find("innermost"), std::string::npos);
  EXPECT_EQ((*exec)->plan()[2].placement, vk::Placement::Device);
  EXPECT_EQ((*exec)->numCpuFallbackNodes(), 1u);
  EXPECT_EQ((*exec)->numCpuNodes(), 0u);
  expectMatchesReference(**exec, **g);
  EXPECT_EQ((*exec)->stats().cpuFallbackNodes, 1u);
}

TEST(VulkanGraph, PlanMustDescribeTheGraph) {
  GRAFT_REQUIRE_VULKAN();
  auto g = parseGraph(kPlanGraph, "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  vk::ExecutorOptions opts;
  opts.plan = {planned(vk::Placement::Device)};
  auto shortPlan = vk::GraphExecutor::create(*context(), **g, opts);
  ASSERT_FALSE(shortPlan.ok());
  EXPECT_NE(shortPlan.diags()[0].message.find("1 entries for the 3 nodes"), std::string::npos)
      << shortPlan.diags()[0].message;
  opts.plan = {planned(vk::Placement::Device), planned(vk::Placement::Cpu),
               planned(vk::Placement::Device)};
  opts.plan[2].target = "aten.sub.Tensor";
  auto wrongOp = vk::GraphExecutor::create(*context(), **g, opts);
  ASSERT_FALSE(wrongOp.ok());
  EXPECT_NE(wrongOp.diags()[0].message.find("%f (aten.add.Tensor)"), std::string::npos)
      << wrongOp.diags()[0].message;
}

Program planProgram(const std::vector<std::string> &placements) {
  Program p;
  auto g = parseGraph(kPlanGraph, "t.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  p.graph = std::move(*g);
  p.target = "lavapipe";
  std::size_t i = 0;
  for (const Node &n : p.graph->nodes()) {
    ProgramNodePlan np;
    np.node = n.output(0)->name();
    np.target = n.target();
    np.placement = placements.at(i++);
    np.kernel = np.placement == "cpu" ? "interpreter" : "binary";
    if (np.placement == "cpu")
      np.reason = "planned for the CPU";
    else
      np.partition = 0;
    p.plan.push_back(std::move(np));
  }
  return p;
}

TEST(VulkanGraph, CompiledPlanReadsTheProgramsPlacements) {
  Program p = planProgram({"device", "cpu", "host"});
  auto plan = vk::compiledPlan(p);
  ASSERT_TRUE(plan.ok()) << render(plan.diags());
  ASSERT_EQ(plan->size(), 3u);
  EXPECT_EQ((*plan)[0].placement, vk::Placement::Device);
  EXPECT_EQ((*plan)[1].placement, vk::Placement::Cpu);
  EXPECT_EQ((*plan)[1].reason, "planned for the CPU");
  EXPECT_EQ((*plan)[2].placement, vk::Placement::Host);
  EXPECT_EQ((*plan)[2].target, "aten.add.Tensor");
  Program bad = planProgram({"device", "gpu", "device"});
  auto badPlan = vk::compiledPlan(bad);
  ASSERT_FALSE(badPlan.ok());
  EXPECT_NE(badPlan.diags()[0].message.find("%c (aten.amax.default)"), std::string::npos)
      << badPlan.diags()[0].message;
  EXPECT_NE(badPlan.diags()[0].message.find("'gpu'"), std::string::npos);
}

using graft::testing::runCli;

TEST(VulkanGraph, CliRunFollowsTheProgramsPlan) {
  GRAFT_REQUIRE_VULKAN();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("graft_plan_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string gir = (dir / "t.gir").string();
  ASSERT_TRUE(writeFileAtomic(gir, kPlanGraph).ok());
  int status = 0;

  // %c planned for the device, which cannot run it: an error by default.
  std::string strictProg = (dir / "strict.vkprog").string();
  ASSERT_TRUE(writeProgram(planProgram({"device", "device", "device"}), strictProg).ok());
  std::string strict = runCli("run " + strictProg, status);
  EXPECT_EQ(status, 1) << strict;
  EXPECT_NE(strict.find("%c (aten.amax.default)"), std::string::npos) << strict;
  EXPECT_NE(strict.find("innermost"), std::string::npos) << strict;
  // The opt-in runs it on the CPU, reports it, and matches the interpreter.
  std::string fallback = runCli("run " + strictProg + " --allow-cpu-fallback --check --reference " +
                                    gir + " --atol 0 --json",
                                status);
  ASSERT_EQ(status, 0) << fallback;
  auto j = nlohmann::json::parse(fallback, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << fallback;
  EXPECT_EQ(j["cpu_fallback_nodes"], 1);
  EXPECT_EQ(j["cpu_nodes"], 0);
  EXPECT_TRUE(j["check"]["ok"].get<bool>());
  std::string text = runCli("run " + strictProg + " --allow-cpu-fallback", status);
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("cpu-fallback  %c (aten.amax.default): "), std::string::npos) << text;

  // %c planned for the CPU (as the partitioner does): part of the plan, no opt-in needed.
  std::string plannedProg = (dir / "planned.vkprog").string();
  ASSERT_TRUE(writeProgram(planProgram({"device", "cpu", "device"}), plannedProg).ok());
  std::string planned = runCli("run " + plannedProg + " --json", status);
  ASSERT_EQ(status, 0) << planned;
  auto pj = nlohmann::json::parse(planned, nullptr, false);
  ASSERT_FALSE(pj.is_discarded()) << planned;
  EXPECT_EQ(pj["cpu_nodes"], 1);
  EXPECT_EQ(pj["cpu_fallback_nodes"], 0);

  // The flag is for program files; a graph goes through run-vk, also strict by default.
  std::string graphRun = runCli("run " + gir + " --allow-cpu-fallback", status);
  EXPECT_EQ(status, 1) << graphRun;
  std::string runVk = runCli("run-vk " + gir, status);
  EXPECT_EQ(status, 1) << runVk;
  EXPECT_NE(runVk.find("%c (aten.amax.default)"), std::string::npos) << runVk;
  std::string runVkFallback =
      runCli("run-vk " + gir + " --allow-cpu-fallback --check --json", status);
  ASSERT_EQ(status, 0) << runVkFallback;
  auto rj = nlohmann::json::parse(runVkFallback, nullptr, false);
  ASSERT_FALSE(rj.is_discarded()) << runVkFallback;
  EXPECT_EQ(rj["nodes"]["cpu_fallback"], 1);
  EXPECT_EQ(rj["plan"][1]["placement"], "cpu-fallback");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A PT2E static-quantized chain (tests/golden/vulkan/pt2e_q8ta_qdq_chain.gir):
// graft compile fuses both linears into et_vk.q8ta_linear, and the
// per-tensor quantize / dequantize between them (around the float x*x + x)
// run on the device as well: one partition, no CPU node, and the program's
// output equals the interpreter's on the original graph, bit for bit.
TEST(VulkanGraph, Pt2eQ8taChainIsOneExactPartition) {
  GRAFT_REQUIRE_VULKAN();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("graft_pt2e_chain_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string gir = std::string(GRAFT_TEST_DATA_DIR) + "/golden/vulkan/pt2e_q8ta_qdq_chain.gir";
  std::string prog = (dir / "chain.vkprog").string();
  int status = 0;
  std::string compiled = runCli("compile " + gir + " -o " + prog + " --json", status);
  ASSERT_EQ(status, 0) << compiled;
  auto cj = nlohmann::json::parse(compiled, nullptr, false);
  ASSERT_FALSE(cj.is_discarded()) << compiled;
  EXPECT_EQ(cj["partitions"], 1) << compiled;
  EXPECT_EQ(cj["cpu_nodes"], 0) << compiled;
  EXPECT_EQ(cj["rules_fired"]["pt2e_q8ta_linear"], 2) << compiled;
  for (int seed : {1, 2, 3}) {
    std::string run =
        runCli("run " + prog + " --check --atol 0 --json --seed " + std::to_string(seed), status);
    ASSERT_EQ(status, 0) << run;
    auto rj = nlohmann::json::parse(run, nullptr, false);
    ASSERT_FALSE(rj.is_discarded()) << run;
    EXPECT_EQ(rj["cpu_nodes"], 0);
    EXPECT_EQ(rj["cpu_fallback_nodes"], 0);
    EXPECT_EQ(rj["check"]["max_abs_error"], 0.0) << run;
    EXPECT_TRUE(rj["check"]["ok"].get<bool>()) << run;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
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
  auto exec = vk::GraphExecutor::create(*context(), **g);
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
