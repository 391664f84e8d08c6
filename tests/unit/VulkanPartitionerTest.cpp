//===- VulkanPartitionerTest.cpp - Op support, limits, convex partitions --===//
//
// A synthesized 2-layer Llama (4w and 8da4w, tied embeddings, dynamic
// sequence) is one Vulkan partition on the lavapipe profile and runs on the
// device matching the interpreter; every CPU node has a reason (unsupported
// op, dtype, buffer limit, split constraint group); partitions are convex;
// the co-location group of an assertion is never split; `graft partition`
// prints the same as text and JSON.
//
//===----------------------------------------------------------------------===//
#include "CliTestUtil.h"
#include "VulkanTestUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ops/OpRegistry.h"
#include "graft/serialize/Synth.h"
#include "graft/vulkan/Partitioner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>

using namespace graft;
using namespace graft::vktest;

namespace {

vk::TargetProfile target(const std::string &name) {
  auto t = vk::findTarget(name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : render(t.diags()));
  return t.ok() ? *t : vk::TargetProfile{};
}

std::unique_ptr<Graph> parse(const std::string &text) {
  auto g = parseGraph(text, "t.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  return g.ok() ? std::move(*g) : nullptr;
}

const vk::CpuNode *cpuNode(const vk::PartitionReport &r, const std::string &name) {
  for (const vk::CpuNode &c : r.cpuNodes)
    if (c.node->numOutputs() && c.node->name() == name)
      return &c;
  return nullptr;
}

TEST(VulkanPartitioner, TargetsAreData) {
  auto all = vk::builtinTargets();
  ASSERT_TRUE(all.ok()) << render(all.diags());
  std::vector<std::string> names;
  for (const vk::TargetProfile &t : *all)
    names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"lavapipe", "adreno", "mali"}));
  EXPECT_EQ(target("mali").device.maxStorageBufferRange, 128u * 1024 * 1024);
  auto bad = vk::findTarget("voodoo2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.diags()[0].message.find("known: host, lavapipe, adreno, mali"), std::string::npos)
      << bad.diags()[0].message;
}

TEST(VulkanPartitioner, SupportTableAndKernelsAgree) {
  // The partitioner's data and the executor's lowerings must list the same
  // ops, and each op must be registered (or the graph could not name it).
  std::vector<std::string> lowered = vk::vulkanLoweredOps();
  std::vector<std::string> declared = vk::supportedOps();
  ASSERT_FALSE(declared.empty());
  for (const std::string &op : declared)
    EXPECT_TRUE(std::find(lowered.begin(), lowered.end(), op) != lowered.end())
        << op << " is in ops.yaml but has no kernel";
  for (const std::string &op : lowered)
    EXPECT_TRUE(std::find(declared.begin(), declared.end(), op) != declared.end())
        << op << " has a kernel but is missing from ops.yaml";
}

TEST(VulkanPartitioner, EveryClaimedOpIsRegisteredAndLowered) {
  // A claim in ops.yaml is only true when a graph can name the op (the op
  // registry declares it, else the node has no schema and the partitioner
  // rejects it as unregistered), the executor has a lowering for it, and
  // the reference interpreter can run it (host steps and view shapes run
  // the reference kernel; --check and the CPU fallback need it too).
  // Lowerings are looked up by the target as graphs spell it (operator.add),
  // the registry by its canonical name (operator.add.default).
  std::vector<std::string> claimed = vk::supportedOps();
  std::vector<std::string> lowered = vk::vulkanLoweredOps();
  ASSERT_GT(claimed.size(), 50u);
  for (const std::string &op : claimed) {
    EXPECT_TRUE(std::find(lowered.begin(), lowered.end(), op) != lowered.end())
        << op << " is claimed by ops.yaml but has no lowering in backends/vulkan/ops";
    const OpSchema *schema = OpRegistry::builtin().lookup(canonicalTarget(op));
    EXPECT_NE(schema, nullptr) << op << " is claimed by ops.yaml but not declared in engine/ops";
    if (!schema)
      continue;
    const std::string &kernel = schema->kernel.empty() ? schema->qualifiedName() : schema->kernel;
    EXPECT_NE(KernelRegistry::builtin().find(kernel), nullptr)
        << op << " is claimed by ops.yaml but has no reference kernel " << kernel;
  }
  for (const std::string &op : lowered)
    EXPECT_NE(OpRegistry::builtin().lookup(canonicalTarget(op)), nullptr)
        << op << " has a lowering but is not declared in engine/ops";
}

class SynthLlama : public ::testing::TestWithParam<SynthQuant> {};

TEST_P(SynthLlama, OnePartitionOnLavapipeAndMatchesInterpreter) {
  LlamaSynthOptions o;
  o.layers = 2;
  o.dim = 64;
  o.heads = 4;
  o.kvHeads = 2;
  o.vocab = 128;
  o.quant = GetParam();
  o.tiedEmbeddings = true;
  o.dynamicSeq = true;
  auto g = synthesizeLlama(o);
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto r = vk::partitionGraph(**g, target("lavapipe"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->partitions.size(), 1u) << vk::formatReport(*r);
  EXPECT_TRUE(r->cpuNodes.empty()) << vk::formatReport(*r);

  GRAFT_REQUIRE_VULKAN();
  auto inputs = makeRandomInputs(**g, 9, {{"s0", 5}});
  ASSERT_TRUE(inputs.ok()) << render(inputs.diags());
  auto ref = Interpreter().run(**g, *inputs);
  ASSERT_TRUE(ref.ok()) << render(ref.diags());
  auto exec = vk::GraphExecutor::create(*context(), **g); // strict: no CPU fallback
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto out = (*exec)->run(*inputs);
  ASSERT_TRUE(out.ok()) << render(out.diags());
  ASSERT_EQ(out->size(), ref->size());
  for (std::size_t i = 0; i < out->size(); ++i)
    EXPECT_EQ(allClose(std::get<Tensor>((*out)[i]), std::get<Tensor>((*ref)[i]), {1e-5, 1e-4}), "");
}

INSTANTIATE_TEST_SUITE_P(Quant, SynthLlama, ::testing::Values(SynthQuant::W4, SynthQuant::W8A8W4),
                         [](const auto &info) {
                           return std::string(name(info.param)) == "4w" ? std::string("W4")
                                                                        : std::string("W8A8W4");
                         });

TEST(VulkanPartitioner, EtVkFusedBlocksAreOnePartition) {
  for (const char *f : {"llama_block_4w_et_vk.gir", "llama_block_8da4w_et_vk.gir"}) {
    auto g = parseGraphFile(std::string(GRAFT_TEST_DATA_DIR) + "/golden/vulkan/" + f);
    ASSERT_TRUE(g.ok());
    for (const char *t : {"lavapipe", "adreno", "mali"}) {
      auto r = vk::partitionGraph(**g, target(t));
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->partitions.size(), 1u) << f << " on " << t << "\n" << vk::formatReport(*r);
      EXPECT_DOUBLE_EQ(r->coverage(), 1.0);
    }
  }
}

TEST(VulkanPartitioner, ReasonsForCpuNodes) {
  auto g = parse(R"(graph @t {
  param %emb : f32[40000, 1024] fqn="emb" = random(seed=1, min=-1, max=1)
  param %w : u8[64, 24] fqn="w" = random(seed=2, min=0, max=255)
  param %s : f32[64, 1] fqn="s" = random(seed=3, min=0.01, max=0.02)
  input %tokens : i64[1, 4]
  input %x : bf16[4, 48]
  %e : f32[1, 4, 1024] = aten.embedding.default(%emb, %tokens)
  %n : bf16[4, 48] = aten.neg.default(%x)
  %q : f32[1, 4, 48] = et_vk.embedding_q4gsw.default(%w, %s, 48, %tokens, true)
  %c : f32[1, 4, 1024] = aten.cumsum.default(%e, 2)
  output %c
  output %n
  output %q
})");
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("mali"));
  ASSERT_TRUE(r.ok());
  const vk::CpuNode *e = cpuNode(*r, "e");
  ASSERT_NE(e, nullptr) << vk::formatReport(*r);
  EXPECT_NE(e->reason.find("buffer of 4.1e+07 elements (%emb) exceeds limit 3.4e+07"),
            std::string::npos)
      << e->reason;
  const vk::CpuNode *n = cpuNode(*r, "n");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->reason, "dtype bf16 at input 0 (self)");
  const vk::CpuNode *q = cpuNode(*r, "q");
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q->reason.find("last dim 48 is not a multiple of 32"), std::string::npos) << q->reason;
  const vk::CpuNode *c = cpuNode(*r, "c");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->reason.find("unsupported op aten.cumsum.default"), std::string::npos) << c->reason;
  // Adreno's 1 GiB range holds the f32 table.
  auto a = vk::partitionGraph(*g, target("adreno"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(cpuNode(*a, "e"), nullptr);
}

// llvmpipe ends an invocation's loops after 65535 iterations in all, silently
// (DeviceInfo::maxLoopIterations): kernels whose loops would run longer stay
// on the CPU with the reason, on the lavapipe profile only. The row kernels
// (reduce, softmax, rms_norm) split long rows over dispatches instead.
TEST(VulkanPartitioner, LoopLimitKeepsLongLoopsOnTheCpu) {
  EXPECT_EQ(target("lavapipe").device.maxLoopIterations, 65535u);
  EXPECT_EQ(target("adreno").device.maxLoopIterations, 0u);
  // A head dim of 70000 (the scores' loop) and 70000 indices (index_copy's
  // scan for repeats) are refused; 70000 keys are split.
  auto g = parse(R"(graph @t {
  input %q : f32[1, 1, 1, 70000]
  input %k : f32[1, 1, 2, 70000]
  input %v : f32[1, 1, 2, 70000]
  input %q2 : f32[1, 1, 1, 65534]
  input %k2 : f32[1, 1, 2, 65534]
  input %v2 : f32[1, 1, 2, 65534]
  input %q3 : f32[1, 1, 1, 8]
  input %k3 : f32[1, 1, 70000, 8]
  input %v3 : f32[1, 1, 70000, 8]
  input %cache : f32[70000, 8]
  input %index : i64[70000]
  input %src : f32[70000, 8]
  input %x : f32[1, 140001]
  %a : f32[1, 1, 1, 70000] = aten.scaled_dot_product_attention.default(%q, %k, %v)
  %a2 : f32[1, 1, 1, 65534] = aten.scaled_dot_product_attention.default(%q2, %k2, %v2)
  %a3 : f32[1, 1, 1, 8] = aten.scaled_dot_product_attention.default(%q3, %k3, %v3)
  %i : f32[70000, 8] = aten.index_copy.default(%cache, 0, %index, %src)
  %s : f32[1, 140001] = aten._softmax.default(%x, -1, false)
  %m : f32[1] = aten.amax.default(%x, [-1])
  output %a
  output %a2
  output %a3
  output %i
  output %s
  output %m
})");
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("lavapipe"));
  ASSERT_TRUE(r.ok()) << render(r.diags());
  const vk::CpuNode *a = cpuNode(*r, "a");
  ASSERT_NE(a, nullptr) << vk::formatReport(*r);
  EXPECT_NE(a->reason.find("key's size 70000: an invocation would run 70001 loop iterations, "
                           "over the device's limit of 65535"),
            std::string::npos)
      << a->reason;
  const vk::CpuNode *i = cpuNode(*r, "i");
  ASSERT_NE(i, nullptr) << vk::formatReport(*r);
  EXPECT_NE(i->reason.find("index's size 70000: an invocation would run 70000 loop iterations"),
            std::string::npos)
      << i->reason;
  // A head dim of 65534 and the exit pass are within the limit; the keys of
  // the attention and the rows of softmax and amax split.
  for (const char *n : {"a2", "a3", "s", "m"})
    EXPECT_EQ(cpuNode(*r, n), nullptr) << n << "\n" << vk::formatReport(*r);
  // A GPU profile has no such limit.
  auto gpu = vk::partitionGraph(*g, target("adreno"));
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(cpuNode(*gpu, "a"), nullptr) << vk::formatReport(*gpu);
  EXPECT_EQ(cpuNode(*gpu, "i"), nullptr) << vk::formatReport(*gpu);
}

// matmul.glsl sums K in one loop per invocation: mm, linear and addmm with K
// past lavapipe's limit stay on the CPU (aten.mm with K = 65536 summed only
// part of K there); K within the limit, and any K on a GPU, run on the device.
TEST(VulkanPartitioner, LoopLimitKeepsLongMatmulReductionsOnTheCpu) {
  auto g = parse(R"(graph @t {
  input %a : f32[2, 70000]
  input %b : f32[70000, 3]
  input %w : f32[3, 70000]
  input %bias : f32[3]
  input %a2 : f32[2, 65520]
  input %b2 : f32[65520, 3]
  %mm : f32[2, 3] = aten.mm.default(%a, %b)
  %lin : f32[2, 3] = aten.linear.default(%a, %w)
  %am : f32[2, 3] = aten.addmm.default(%bias, %a, %b)
  %ok : f32[2, 3] = aten.mm.default(%a2, %b2)
  output %mm
  output %lin
  output %am
  output %ok
})");
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("lavapipe"));
  ASSERT_TRUE(r.ok()) << render(r.diags());
  for (const char *n : {"mm", "lin", "am"}) {
    const vk::CpuNode *c = cpuNode(*r, n);
    ASSERT_NE(c, nullptr) << n << "\n" << vk::formatReport(*r);
    EXPECT_NE(c->reason.find("size 70000: an invocation would run 70006 loop iterations"),
              std::string::npos)
        << c->reason;
  }
  EXPECT_EQ(cpuNode(*r, "ok"), nullptr) << vk::formatReport(*r);
  auto gpu = vk::partitionGraph(*g, target("adreno"));
  ASSERT_TRUE(gpu.ok());
  for (const char *n : {"mm", "lin", "am"})
    EXPECT_EQ(cpuNode(*gpu, n), nullptr) << n << "\n" << vk::formatReport(*gpu);
}

// The packed-weight linears' bit-exact kernels (linear_q4gsw.glsl,
// linear_q8csw.glsl) loop over K one 32-bit word per iteration, 8 int4 or 4
// int8 values, plus the exit pass: past lavapipe's 65535 iterations (K >
// 524272 for int4, K > 262136 for int8) they stay on the CPU; the largest K
// within the limit, and any K on a GPU, run on the device.
TEST(VulkanPartitioner, LoopLimitKeepsLongQuantizedLinearReductionsOnTheCpu) {
  auto g = parse(R"(graph @t {
  param %w4 : u8[2, 262144] fqn="w4" = full(136)
  param %w4ok : u8[2, 262136] fqn="w4ok" = full(136)
  param %s4 : f32[1, 2] fqn="s4" = full(0.5)
  param %w8 : i8[2, 262140] fqn="w8" = full(1)
  param %w8ok : i8[2, 262136] fqn="w8ok" = full(1)
  param %s8 : f32[2] fqn="s8" = full(0.5)
  input %x4 : f32[1, 524288]
  input %x4ok : f32[1, 524272]
  input %x8 : f32[1, 262140]
  input %x8ok : f32[1, 262136]
  %q4 : f32[1, 2] = et_vk.linear_q4gsw.default(%x4, %w4, %s4, 524288)
  %q4ok : f32[1, 2] = et_vk.linear_q4gsw.default(%x4ok, %w4ok, %s4, 524272)
  %q8 : f32[1, 2] = aten._weight_int8pack_mm.default(%x8, %w8, %s8)
  %q8ok : f32[1, 2] = aten._weight_int8pack_mm.default(%x8ok, %w8ok, %s8)
  output %q4
  output %q4ok
  output %q8
  output %q8ok
})");
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("lavapipe"));
  ASSERT_TRUE(r.ok()) << render(r.diags());
  for (auto [n, why] :
       {std::pair{"q4", "self's size 524288: an invocation would run 65537 loop iterations"},
        std::pair{"q8", "self's size 262140: an invocation would run 65536 loop iterations"}}) {
    const vk::CpuNode *c = cpuNode(*r, n);
    ASSERT_NE(c, nullptr) << n << "\n" << vk::formatReport(*r);
    EXPECT_NE(c->reason.find(why), std::string::npos) << c->reason;
  }
  for (const char *n : {"q4ok", "q8ok"})
    EXPECT_EQ(cpuNode(*r, n), nullptr) << n << "\n" << vk::formatReport(*r);
  auto gpu = vk::partitionGraph(*g, target("adreno"));
  ASSERT_TRUE(gpu.ok());
  for (const char *n : {"q4", "q8"})
    EXPECT_EQ(cpuNode(*gpu, n), nullptr) << n << "\n" << vk::formatReport(*gpu);
}

// quantize_per_tensor / dequantize_per_tensor run on the device where they
// are bit-exact; the rest stays on the CPU with the lowering's reason (the
// reference's own errors among them, reported there).
TEST(VulkanPartitioner, PerTensorQdqReasons) {
  auto g = parse(R"(graph @t {
  param %s : f32[2] fqn="s" = full(0.5)
  param %z : i64[] fqn="z" = full(0)
  param %fz : f32[] fqn="fz" = full(0.0)
  param %s1 : f32[] fqn="s1" = full(0.5)
  input %x : f32[4]
  input %q16 : i16[4]
  %ok : i8[4] = quantized_decomposed.quantize_per_tensor.default(%x, 0.5, 0, -128, 127, i8)
  %dq : f16[4] = quantized_decomposed.dequantize_per_tensor.default(%ok, 0.5, 0, -128, 127, i8, out_dtype=f16)
  %range : i8[4] = quantized_decomposed.quantize_per_tensor.default(%x, 0.5, 0, -129, 127, i8)
  %h : f16[4] = quantized_decomposed.dequantize_per_tensor.default(%q16, 0.5, 0, -32768, 32767, i16, out_dtype=f16)
  %t : i8[4] = quantized_decomposed.quantize_per_tensor.tensor(%x, %s, %z, -128, 127, i8)
  %fzp : i8[4] = quantized_decomposed.quantize_per_tensor.tensor(%x, %s1, %fz, -128, 127, i8)
  output %dq
  output %range
  output %h
  output %t
  output %fzp
})");
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("lavapipe"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cpuNode(*r, "ok"), nullptr) << vk::formatReport(*r);
  EXPECT_EQ(cpuNode(*r, "dq"), nullptr) << vk::formatReport(*r);
  std::vector<std::pair<const char *, const char *>> reasons = {
      {"range", "quant_min/quant_max outside i8's range"},
      {"h", "an f16 result where q - zero_point may round in f16"},
      {"t", "scale and zero_point must have one element"},
      {"fzp", "dtype f32 at input 2 (zero_point)"}};
  for (const auto &[node, why] : reasons) {
    const vk::CpuNode *c = cpuNode(*r, node);
    ASSERT_NE(c, nullptr) << node << "\n" << vk::formatReport(*r);
    EXPECT_NE(c->reason.find(why), std::string::npos) << node << ": " << c->reason;
  }
}

TEST(VulkanPartitioner, PartitionsAreConvex) {
  // %a -> %b (CPU: bf16) -> %c, and %a -> %c directly: %a and %c in one
  // partition would need %b's result to leave and re-enter it.
  auto g = parse(R"(graph @t {
  input %x : f32[8]
  %a : f32[8] = aten.neg.default(%x)
  %b : bf16[8] = aten._to_copy.default(%a, dtype=bf16)
  %b2 : bf16[8] = aten.neg.default(%b)
  %b3 : f32[8] = aten._to_copy.default(%b2, dtype=f32)
  %c : f32[8] = aten.add.Tensor(%a, %b3)
  %d : f32[8] = aten.neg.default(%x)
  output %c
  output %d
})");
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("lavapipe"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->cpuNodes.size(), 3u) << vk::formatReport(*r);
  ASSERT_EQ(r->partitions.size(), 2u) << vk::formatReport(*r);
  // %a and %d (independent) share a partition; %c is alone.
  EXPECT_EQ(r->partitions[0].nodes.size(), 2u);
  EXPECT_EQ(r->partitions[0].nodes[0].node->name(), "a");
  EXPECT_EQ(r->partitions[0].nodes[1].node->name(), "d");
  EXPECT_EQ(r->partitions[1].nodes[0].node->name(), "c");
}

TEST(VulkanPartitioner, ConstraintGroupsAreNeverSplit) {
  // The KV-cache read: select_copy -> _local_scalar_dense, constrained by
  // sym_constrain_range_for_size, used by slice_copy. Supported: all on the
  // device, in one partition with the rest.
  const char *ok = R"(graph @t {
  sym u : [0, 15]
  param %cache : f32[1, 16, 8] fqn="cache" = random(seed=3, min=-1, max=1)
  input %pos : i64[2]
  %sel : i64[] = aten.select_copy.int(%pos, 0, 1)
  %u : symint = aten._local_scalar_dense.default(%sel)
  aten.sym_constrain_range_for_size.default(%u, min=0, max=15)
  %w : f32[1, 16-u, 8] = aten.slice_copy.Tensor(%cache, 1, %u)
  %y : f32[1, 16-u, 8] = aten.neg.default(%w)
  output %y
})";
  auto g = parse(ok);
  ASSERT_TRUE(g);
  auto r = vk::partitionGraph(*g, target("lavapipe"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cpuNodes.empty()) << vk::formatReport(*r);
  EXPECT_EQ(r->partitions.size(), 1u) << vk::formatReport(*r);

  // A bf16 cache makes the slice unsupported: the whole group (select,
  // scalar read, assertion, slice) stays on the CPU, each with the reason.
  std::string bf = ok;
  for (std::string from : {"f32[1, 16, 8]", "f32[1, 16-u, 8]"})
    for (std::size_t p; (p = bf.find(from)) != std::string::npos;)
      bf.replace(p, from.size(), "bf16" + from.substr(3));
  auto gb = parse(bf);
  ASSERT_TRUE(gb);
  auto rb = vk::partitionGraph(*gb, target("lavapipe"));
  ASSERT_TRUE(rb.ok());
  ASSERT_EQ(rb->cpuNodes.size(), 5u) << vk::formatReport(*rb);
  EXPECT_NE(cpuNode(*rb, "w")->reason.find("dtype bf16"), std::string::npos);
  for (const char *n : {"sel", "u"})
    EXPECT_NE(cpuNode(*rb, n)->reason.find("constraint group split: %w"), std::string::npos)
        << cpuNode(*rb, n)->reason;
  bool assertionOnCpu = false;
  for (const vk::CpuNode &c : rb->cpuNodes)
    assertionOnCpu |= c.node->target() == "aten.sym_constrain_range_for_size.default";
  EXPECT_TRUE(assertionOnCpu);
  EXPECT_TRUE(rb->partitions.empty());
}

using graft::testing::runCli;

// The kernel policy is part of the target: "+exact" (or --exact-kernels)
// selects the bit-exact kernels, keeps the profile's limits, and is recorded
// as the program's target, which graft run follows.
TEST(VulkanPartitioner, ExactKernelsProfile) {
  auto fast = vk::findTarget("lavapipe");
  auto exact = vk::findTarget("lavapipe+exact");
  ASSERT_TRUE(fast.ok() && exact.ok());
  EXPECT_FALSE(fast->exactKernels);
  EXPECT_TRUE(exact->exactKernels);
  EXPECT_EQ(exact->name, "lavapipe+exact");
  EXPECT_EQ(exact->device.maxStorageBufferRange, fast->device.maxStorageBufferRange);
  EXPECT_TRUE(vk::targetUsesExactKernels("mali+exact"));
  EXPECT_FALSE(vk::targetUsesExactKernels("mali"));
  EXPECT_EQ(vk::parseTargetName("adreno+exact").profile, "adreno");
  auto bad = vk::findTarget("voodoo2+exact");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.diags()[0].message.find("unknown target 'voodoo2+exact'"), std::string::npos)
      << bad.diags()[0].message;
}

TEST(VulkanPartitioner, CliCompileExactKernels) {
  GRAFT_REQUIRE_VULKAN();
  std::string file = std::string(GRAFT_TEST_DATA_DIR) + "/golden/vulkan/llama_block_4w_et_vk.gir";
  std::string prog = (std::filesystem::temp_directory_path() /
                      ("graft-exact-" + std::to_string(::getpid()) + ".vkprog"))
                         .string();
  int status = 0;
  std::string out = runCli("compile " + file + " -o " + prog + " --exact-kernels --quiet", status);
  ASSERT_EQ(status, 0) << out;
  std::string run = runCli("run " + prog + " --json", status);
  std::filesystem::remove(prog);
  ASSERT_EQ(status, 0) << run;
  auto j = nlohmann::json::parse(run, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << run;
  EXPECT_EQ(j["target"], "lavapipe+exact");
}

TEST(VulkanPartitioner, CliTextAndJson) {
  std::string file =
      std::string(GRAFT_TEST_DATA_DIR) + "/golden/vulkan/llama_block_8da4w_et_vk.gir";
  int status = 0;
  std::string text = runCli("partition " + file + " --target lavapipe", status);
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("target lavapipe: 1 Vulkan partition, 31 of 31 nodes on the device"),
            std::string::npos)
      << text;
  std::string json = runCli("partition " + file + " --target mali --json", status);
  EXPECT_EQ(status, 0) << json;
  auto j = nlohmann::json::parse(json, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json;
  EXPECT_EQ(j["target"], "mali");
  EXPECT_EQ(j["partitions"].size(), 1u);
  EXPECT_EQ(j["cpu"].size(), 0u);
  std::string bad = runCli("partition " + file + " --target nope", status);
  EXPECT_EQ(status, 1) << bad;
  EXPECT_NE(bad.find("unknown target 'nope'"), std::string::npos) << bad;
}

TEST(VulkanPartitioner, CliRunVkCheck) {
  GRAFT_REQUIRE_VULKAN();
  std::string file = std::string(GRAFT_TEST_DATA_DIR) + "/golden/vulkan/llama_block_4w_et_vk.gir";
  int status = 0;
  std::string out = runCli("run-vk " + file + " --check --atol 1e-4 --sym s0=3 --json", status);
  EXPECT_EQ(status, 0) << out;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["nodes"]["cpu_fallback"], 0);
  EXPECT_TRUE(j["check"]["ok"].get<bool>());
  EXPECT_LT(j["check"]["max_abs_error"].get<double>(), 1e-4);
  std::string devices = runCli("devices", status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(devices.find("0: "), std::string::npos) << devices;
  EXPECT_NE(devices.find("memory types: 0 "), std::string::npos) << devices;
  // Every device has a device-local and a host-visible coherent memory type
  // (the Vulkan specification requires both), which the runtime keeps
  // buffers in and stages transfers through.
  std::string listed = runCli("devices --json", status);
  EXPECT_EQ(status, 0) << listed;
  auto dj = nlohmann::json::parse(listed, nullptr, false);
  ASSERT_FALSE(dj.is_discarded()) << listed;
  ASSERT_FALSE(dj.empty()) << listed;
  bool deviceLocal = false, hostCoherent = false;
  for (const auto &t : dj[0]["memory_types"]) {
    const std::string flags = t["flags"].get<std::string>();
    deviceLocal = deviceLocal || flags.find("device-local") != std::string::npos;
    hostCoherent = hostCoherent || (flags.find("host-visible") != std::string::npos &&
                                    flags.find("host-coherent") != std::string::npos);
    EXPECT_GT(t["heap_bytes"].get<uint64_t>(), 0u) << listed;
  }
  EXPECT_TRUE(deviceLocal && hostCoherent) << listed;
  std::string badDevice = runCli("run-vk " + file + " --device 99", status);
  EXPECT_EQ(status, 1);
  EXPECT_NE(badDevice.find("--device 99 does not exist"), std::string::npos) << badDevice;
}

} // namespace
