//===- VulkanRuntimeTest.cpp - Shader library, glslang, device runtime ----===//
//
// The shader library expands YAML variants as ExecuTorch's generator does,
// every built-in variant compiles with glslang, a glslang error names the
// shader, the variant and the template line, compiled modules are cached by
// content hash (in memory and on disk), and the runtime moves bytes to and
// from the device and reports bad requests as diagnostics.
//
//===----------------------------------------------------------------------===//
#include "VulkanTestUtil.h"

#include "graft/support/FileIO.h"
#include "graft/vulkan/Kernels.h"
#include "graft/vulkan/ShaderLibrary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <unistd.h>

using namespace graft;
using namespace graft::vktest;

namespace {

const char *kTinyTemplate = R"(// tiny.glsl
#include "common.glslh"
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
#if defined(OP_twice)
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
#endif
layout(push_constant) uniform PushConstants { int n; } pc;
void main() {
  uint id = linearId();
  if (id >= uint(pc.n))
    return;
#if defined(OP_twice)
  t_out[id] = TO_DTYPE(2.0 * float(t_in[id]) + ${BIAS});
#else
  t_out[id] = TO_DTYPE(float(id));
#endif
}
)";

const char *kTinyYaml = R"(tiny:
  parameter_names_with_default_values:
    OP: iota
    DTYPE: float
    BIAS: 0.0
    LOCAL_SIZE_X: 32
    LOCAL_SIZE_Y: 1
    LOCAL_SIZE_Z: 1
  generate_variant_forall:
    DTYPE:
      - VALUE: float
      - VALUE: half
        SUFFIX: f16
  shader_variants:
    - NAME: tiny_iota
    - NAME: tiny_twice
      OP: twice
      BIAS: 1.5
    - NAME: tiny_twice_only_float
      OP: twice
      DTYPE: float
)";

TEST(VulkanShaderLibrary, ExpandsVariantsLikeGenVulkanSpv) {
  auto lib = vk::ShaderLibrary::builtin();
  ASSERT_TRUE(lib.ok()) << render(lib.diags());
  std::vector<std::string> names = (*lib)->variantNames();
  for (const char *want :
       {"binary_add_float", "binary_add_half", "binary_add_int", "unary_gelu_tanh_float",
        "embedding_q4gsw_linear_weight_half", "embedding_q4gsw_float", "linear_q4gsw_float_half",
        "linear_dq8ca_q4gsw_half_float", "copy_int_half", "linear_q8ta_q8csw_intx_float",
        "softmax_half_float", "quantize_affine_float_float"})
    EXPECT_TRUE(std::find(names.begin(), names.end(), want) != names.end()) << want;
  const vk::ShaderVariantSpec *spec = (*lib)->findVariant("linear_dq8ca_q4gsw_half_float");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->templateName, "linear_q4gsw");
  EXPECT_EQ(spec->param("MODE"), "dq8ca");
  EXPECT_EQ(spec->param("DTYPE"), "half");
  EXPECT_EQ(spec->param("SCALES_DTYPE"), "float");
  // A dtype parameter becomes a GLSL storage type plus the f16 extension.
  auto glsl = (*lib)->generate("linear_q4gsw_half_float");
  ASSERT_TRUE(glsl.ok());
  EXPECT_NE(glsl->find("#define DTYPE float16_t"), std::string::npos);
  EXPECT_NE(glsl->find("GL_EXT_shader_16bit_storage"), std::string::npos);
  EXPECT_NE(glsl->find("#define MODE_weight_only 1"), std::string::npos);
}

// Every variant, compiled the way `graft compile` does it: from several
// threads at once (get() runs glslang outside its lock). Three threads walk
// the list from different starting points, so most variants are asked for
// by two threads at nearly the same time; each name must come back as one
// module, and a sample compiled alone in a fresh library must give the same
// SPIR-V.
TEST(VulkanShaderLibrary, EveryBuiltinVariantCompilesFromSeveralThreads) {
  auto lib = vk::ShaderLibrary::builtin();
  ASSERT_TRUE(lib.ok());
  const std::vector<std::string> names = (*lib)->variantNames();
  ASSERT_GT(names.size(), 100u);
  constexpr std::size_t kThreads = 3;
  std::vector<std::vector<const vk::CompiledShader *>> got(
      kThreads, std::vector<const vk::CompiledShader *>(names.size()));
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t k = 0; k < names.size(); ++k) {
        std::size_t i = (k + t * names.size() / kThreads) % names.size();
        auto shader = (*lib)->get(names[i]);
        if (!shader.ok()) {
          errors[t] = render(shader.diags());
          return;
        }
        got[t][i] = *shader;
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    ASSERT_TRUE(e.empty()) << e;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const vk::CompiledShader *shader = got[0][i];
    EXPECT_EQ(got[1][i], shader) << names[i];
    EXPECT_EQ(got[2][i], shader) << names[i];
    EXPECT_EQ(shader->spec.name, names[i]);
    EXPECT_GT(shader->spirv.size(), 5u) << names[i];
    EXPECT_EQ(shader->spirv[0], 0x07230203u) << names[i]; // the SPIR-V magic number
    EXPECT_GE(shader->numBindings, 1u) << names[i];
  }
  vk::ShaderLibrary::Stats st = (*lib)->stats();
  EXPECT_GE(st.compiled + st.memoryHits, names.size());

  auto alone = vk::ShaderLibrary::builtin();
  ASSERT_TRUE(alone.ok());
  for (std::size_t i = 0; i < names.size(); i += 16) {
    auto shader = (*alone)->get(names[i]);
    ASSERT_TRUE(shader.ok()) << render(shader.diags());
    EXPECT_EQ((*shader)->spirv, got[0][i]->spirv) << names[i];
    EXPECT_EQ((*shader)->hash, got[0][i]->hash) << names[i];
    EXPECT_EQ((*shader)->localSize, got[0][i]->localSize) << names[i];
  }
}

TEST(VulkanShaderLibrary, MissingHeaderIsReported) {
  // Without common.glslh the template cannot include it: an error naming
  // the template and the header, at generation time.
  auto lib =
      vk::ShaderLibrary::fromSources({{"tiny.glsl", kTinyTemplate}, {"tiny.yaml", kTinyYaml}});
  ASSERT_TRUE(lib.ok()) << render(lib.diags());
  auto g = (*lib)->generate("tiny_iota_float");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diags()[0].message.find("tiny.glsl"), std::string::npos) << g.diags()[0].message;
  EXPECT_NE(g.diags()[0].message.find("common.glslh"), std::string::npos);
}

/// A library of the tiny template plus the real common.glslh.
Expected<std::unique_ptr<vk::ShaderLibrary>> tinyLibrary(const std::string &tmpl,
                                                         const std::string &yaml = kTinyYaml) {
  auto header = readFile(std::string(GRAFT_TEST_DATA_DIR) +
                         "/../backends/vulkan/runtime/shaders/common.glslh");
  if (!header.ok())
    return header.takeFailure();
  return vk::ShaderLibrary::fromSources(
      {{"tiny.glsl", tmpl}, {"tiny.yaml", yaml}, {"common.glslh", *header}});
}

TEST(VulkanShaderLibrary, VariantNamesAndSubstitution) {
  auto lib = tinyLibrary(kTinyTemplate);
  ASSERT_TRUE(lib.ok()) << render(lib.diags());
  EXPECT_EQ((*lib)->variantNames(),
            (std::vector<std::string>{"tiny_iota_f16", "tiny_iota_float", "tiny_twice_f16",
                                      "tiny_twice_float", "tiny_twice_only_float"}));
  auto glsl = (*lib)->generate("tiny_twice_f16");
  ASSERT_TRUE(glsl.ok());
  EXPECT_NE(glsl->find("2.0 * float(t_in[id]) + 1.5"), std::string::npos);
  auto shader = (*lib)->get("tiny_twice_f16");
  ASSERT_TRUE(shader.ok()) << render(shader.diags());
  EXPECT_EQ((*shader)->numBindings, 2u);
  EXPECT_EQ((*shader)->localSize[0], 32u);
  auto iota = (*lib)->get("tiny_iota_float");
  ASSERT_TRUE(iota.ok());
  EXPECT_EQ((*iota)->numBindings, 1u); // the #if'd-out binding does not count
}

TEST(VulkanShaderLibrary, GlslangErrorNamesShaderVariantAndLine) {
  std::string broken = kTinyTemplate;
  broken.replace(broken.find("t_out[id] = TO_DTYPE(float(id));"), 32,
                 "t_out[id] = TO_DTYPE(undefined_thing);");
  auto lib = tinyLibrary(broken);
  ASSERT_TRUE(lib.ok());
  auto shader = (*lib)->get("tiny_iota_f16");
  ASSERT_FALSE(shader.ok());
  const Diagnostic &d = shader.diags()[0];
  EXPECT_EQ(d.kind, DiagKind::Internal);
  EXPECT_NE(d.message.find("shader 'tiny'"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("variant 'tiny_iota_f16'"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("tiny.glsl:15"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("undefined_thing"), std::string::npos) << d.message;
}

TEST(VulkanShaderLibrary, BadVariantFilesAreReported) {
  std::string unknownParam = std::string(kTinyYaml) + "    - NAME: tiny_bad\n      NOPE: 1\n";
  auto a = tinyLibrary(kTinyTemplate, unknownParam);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.diags()[0].message.find("unknown parameter NOPE"), std::string::npos);
  std::string wrongName = kTinyYaml;
  wrongName.replace(0, 4, "tinx");
  auto b = tinyLibrary(kTinyTemplate, wrongName);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.diags()[0].message.find("must equal the file's basename"), std::string::npos);
  std::string duplicate = std::string(kTinyYaml) + "    - NAME: tiny_iota\n";
  auto c = tinyLibrary(kTinyTemplate, duplicate);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.diags()[0].message.find("defined twice"), std::string::npos);
  std::string unknownSubst = kTinyTemplate;
  unknownSubst.replace(unknownSubst.find("${BIAS}"), 7, "${NOPE}");
  auto d = tinyLibrary(unknownSubst);
  ASSERT_TRUE(d.ok());
  auto g = (*d)->generate("tiny_twice_float");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diags()[0].message.find("unknown parameter ${NOPE}"), std::string::npos);
}

TEST(VulkanShaderLibrary, CachesByContentHash) {
  auto dir =
      std::filesystem::temp_directory_path() / ("graft-vk-cache-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("GRAFT_VK_SHADER_CACHE", dir.c_str(), 1);
  {
    auto lib = tinyLibrary(kTinyTemplate);
    ASSERT_TRUE(lib.ok());
    ASSERT_TRUE((*lib)->get("tiny_iota_float").ok());
    ASSERT_TRUE((*lib)->get("tiny_iota_float").ok());
    EXPECT_EQ((*lib)->stats().compiled, 1u);
    EXPECT_EQ((*lib)->stats().memoryHits, 1u);
  }
  {
    // A fresh library finds the module on disk: no glslang run.
    auto lib = tinyLibrary(kTinyTemplate);
    ASSERT_TRUE(lib.ok());
    auto s = (*lib)->get("tiny_iota_float");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*lib)->stats().compiled, 0u);
    EXPECT_EQ((*lib)->stats().diskHits, 1u);
    EXPECT_EQ((*s)->spirv[0], 0x07230203u);
  }
  ::unsetenv("GRAFT_VK_SHADER_CACHE");
  std::filesystem::remove_all(dir);
}

//===-- Runtime -------------------------------------------------------------===//

TEST(VulkanRuntime, ListsDevicesAndRejectsBadIndex) {
  auto devices = vk::listDevices();
  ASSERT_TRUE(devices.ok()) << render(devices.diags());
  if (devices->empty())
    GTEST_SKIP() << "no Vulkan device";
  for (const vk::DeviceInfo &d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.maxStorageBufferRange, 0u);
  }
  vk::ContextOptions o;
  o.deviceIndex = static_cast<int>(devices->size()) + 3;
  auto ctx = vk::Context::create(o);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.diags()[0].kind, DiagKind::User);
  EXPECT_NE(ctx.diags()[0].message.find("does not exist"), std::string::npos);
}

TEST(VulkanRuntime, UploadDownloadRoundTrips) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  for (DType d : {DType::F32, DType::I64, DType::I8, DType::U8, DType::Bool, DType::I32}) {
    Tensor t = Tensor::empty(d, {3, 37});
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setInt(i, d == DType::Bool ? i % 2 : (i * 7) % 100 - (d == DType::U8 ? 0 : 50));
    auto up = vk::uploadTensor(ctx, t);
    ASSERT_TRUE(up.ok()) << name(d);
    auto down = vk::downloadTensor(ctx, *up);
    ASSERT_TRUE(down.ok());
    EXPECT_TRUE(down->equal(t)) << name(d);
  }
  if (ctx.info().storageBuffer16BitAccess) {
    Tensor h = Tensor::fromDoubles(DType::F16, {5}, {0.1, -2.5, 65504, 1e-7, 3});
    auto up = vk::uploadTensor(ctx, h);
    ASSERT_TRUE(up.ok());
    auto down = vk::downloadTensor(ctx, *up);
    ASSERT_TRUE(down.ok());
    EXPECT_TRUE(down->equal(h));
  }
  // A non-contiguous host view uploads as its logical (row-major) order.
  Tensor base = Tensor::fromDoubles(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor transposed(DType::F32, {3, 2}, base.storage(), 0, {1, 3});
  auto up = vk::uploadTensor(ctx, transposed);
  ASSERT_TRUE(up.ok());
  auto down = vk::downloadTensor(ctx, *up);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->getDouble(1), 4.0);
  // Empty tensors work end to end.
  auto empty = vk::uploadTensor(ctx, Tensor::empty(DType::F32, {0, 4}));
  ASSERT_TRUE(empty.ok());
  auto neg = vk::unary(ctx, vk::UnaryKind::Neg, *empty);
  ASSERT_TRUE(neg.ok());
  auto back = vk::downloadTensor(ctx, *neg);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->numel(), 0);
}

// The discrete-GPU data path, on any device: with stagedTransfers no buffer
// is mapped, so every upload and download is a staging copy recorded in
// order with the dispatches. An upload into a buffer a pending dispatch reads
// must land after that dispatch (the mapped path flushes first; the staged
// one relies on the copy's place in the command buffer).
TEST(VulkanRuntime, StagedTransfersKeepTheirPlaceAmongDispatches) {
  GRAFT_REQUIRE_VULKAN();
  vk::ContextOptions o;
  o.stagedTransfers = true;
  auto created = vk::Context::create(o);
  ASSERT_TRUE(created.ok()) << render(created.diags());
  vk::Context &ctx = **created;
  EXPECT_FALSE(ctx.hostMappedBuffers());
  for (DType d : {DType::F32, DType::I64, DType::I8, DType::Bool}) {
    Tensor t = Tensor::empty(d, {5, 13});
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setInt(i, d == DType::Bool ? i % 3 == 0 : (i * 5) % 90 - 45);
    auto up = vk::uploadTensor(ctx, t);
    ASSERT_TRUE(up.ok()) << render(up.diags());
    auto down = vk::downloadTensor(ctx, *up);
    ASSERT_TRUE(down.ok()) << render(down.diags());
    EXPECT_TRUE(down->equal(t)) << name(d);
  }
  auto a = vk::uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {4}, {1, 2, 3, 4}));
  ASSERT_TRUE(a.ok()) << render(a.diags());
  ASSERT_TRUE(ctx.flush().ok());
  const uint64_t flushes = ctx.stats().flushes;
  auto neg = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  ASSERT_TRUE(neg.ok()) << render(neg.diags());
  const float later[4] = {10, 20, 30, 40};
  ASSERT_TRUE(ctx.upload(*a->buffer, later, sizeof(later)).ok());
  EXPECT_EQ(ctx.stats().flushes, flushes) << "a staged upload is recorded, not flushed";
  auto negDown = vk::downloadTensor(ctx, *neg);
  ASSERT_TRUE(negDown.ok()) << render(negDown.diags());
  EXPECT_EQ(negDown->getDouble(0), -1.0);
  EXPECT_EQ(negDown->getDouble(3), -4.0);
  auto aDown = vk::downloadTensor(ctx, *a);
  ASSERT_TRUE(aDown.ok()) << render(aDown.diags());
  EXPECT_EQ(aDown->getDouble(3), 40.0);
  // A fill and a partial download at an offset take the same path.
  auto f = vk::allocateTensor(ctx, DType::F32, {8});
  ASSERT_TRUE(f.ok()) << render(f.diags());
  ASSERT_TRUE(ctx.fill(*f->buffer, 0x40400000u).ok()); // 3.0f
  float tail[2] = {0, 0};
  ASSERT_TRUE(ctx.download(*f->buffer, tail, sizeof(tail), 6 * sizeof(float)).ok());
  EXPECT_EQ(tail[0], 3.0f);
  EXPECT_EQ(tail[1], 3.0f);
}

// Commands get a barrier only where they depend on a command recorded since
// the last one: a read or write of a buffer written since, or a write of one
// read since (bindings declared `readonly` are reads, from the SPIR-V). So a
// layer's independent projections may overlap on the device. Under
// setSerialCommands every command follows a barrier, as graft_bench's
// batches of one kernel want.
TEST(VulkanRuntime, BarriersOnlyWhereACommandDependsOnAnother) {
  GRAFT_REQUIRE_VULKAN();
  auto created = vk::Context::create();
  ASSERT_TRUE(created.ok()) << render(created.diags());
  vk::Context &ctx = **created;
  ctx.setSerialCommands(false);
  auto a = vk::uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {4}, {1, 2, 3, 4}));
  ASSERT_TRUE(a.ok()) << render(a.diags());
  ASSERT_TRUE(ctx.flush().ok());
  const uint64_t b0 = ctx.stats().barriers;
  auto n1 = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  auto n2 = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  ASSERT_TRUE(n1.ok() && n2.ok());
  EXPECT_EQ(ctx.stats().barriers, b0) << "two readers of one buffer are independent";
  auto sum = vk::binary(ctx, vk::BinaryKind::Add, *n1, *n2);
  ASSERT_TRUE(sum.ok()) << render(sum.diags());
  EXPECT_EQ(ctx.stats().barriers, b0 + 1) << "a read after a write waits for it";
  auto n3 = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  ASSERT_TRUE(n3.ok());
  EXPECT_EQ(ctx.stats().barriers, b0 + 1) << "a is only read";
  ASSERT_TRUE(ctx.fill(*n1->buffer, 0x40400000u).ok()); // 3.0f over what `sum` read
  EXPECT_EQ(ctx.stats().barriers, b0 + 2) << "a write after a read waits for the read";
  auto sumDown = vk::downloadTensor(ctx, *sum);
  ASSERT_TRUE(sumDown.ok()) << render(sumDown.diags());
  EXPECT_EQ(sumDown->getDouble(3), -8.0);
  auto n1Down = vk::downloadTensor(ctx, *n1);
  ASSERT_TRUE(n1Down.ok()) << render(n1Down.diags());
  EXPECT_EQ(n1Down->getDouble(0), 3.0);

  ctx.setSerialCommands(true);
  const uint64_t b1 = ctx.stats().barriers;
  auto s1 = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  auto s2 = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(ctx.stats().barriers, b1 + 1) << "serial: a barrier between any two commands";
  ASSERT_TRUE(ctx.flush().ok());
}

TEST(VulkanRuntime, LimitsAreUserErrors) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  auto big = ctx.allocate(static_cast<std::size_t>(ctx.info().maxStorageBufferRange) + 1);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.diags()[0].kind, DiagKind::User);
  EXPECT_NE(big.diags()[0].message.find("maxStorageBufferRange"), std::string::npos);
  auto bf16 = vk::uploadTensor(ctx, Tensor::empty(DType::BF16, {4}));
  ASSERT_FALSE(bf16.ok());
  EXPECT_NE(bf16.diags()[0].message.find("bf16"), std::string::npos);
  auto buf = ctx.allocate(64);
  ASSERT_TRUE(buf.ok());
  auto noSuchShader = ctx.dispatch("no_such_variant", {buf->get()}, nullptr, 0, {1, 1, 1});
  ASSERT_FALSE(noSuchShader.ok());
  EXPECT_EQ(noSuchShader.diags()[0].kind, DiagKind::Internal);
}

TEST(VulkanRuntime, BuffersOutliveTheirUsers) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  // A buffer dropped right after a dispatch that uses it stays alive until
  // the flush; the result is still correct.
  auto a = vk::uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {4}, {1, 2, 3, 4}));
  ASSERT_TRUE(a.ok());
  auto r = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  ASSERT_TRUE(r.ok());
  a = Diagnostic::error("dropped");
  EXPECT_TRUE(ctx.hasPendingWork());
  auto down = vk::downloadTensor(ctx, *r);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->getDouble(3), -4.0);
  EXPECT_FALSE(ctx.hasPendingWork());
}

// Released buffers go back to the device's pool and serve the next request
// of the same size, but only once no recorded work uses them: a buffer
// dropped while a dispatch that reads it is pending is not handed out to a
// later dispatch in the same submission.
TEST(VulkanRuntime, ReleasedBuffersAreReusedOnceIdle) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  ASSERT_TRUE(ctx.flush().ok());
  const std::size_t bytes = 4 * 1000 + 16 * 7; // a size no other test allocates
  {
    auto first = ctx.allocate(bytes);
    ASSERT_TRUE(first.ok());
  }
  uint64_t reused = ctx.stats().buffersReused;
  auto second = ctx.allocate(bytes);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(ctx.stats().buffersReused, reused + 1);
  auto other = ctx.allocate(bytes + 16);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(ctx.stats().buffersReused, reused + 1); // another size: a new buffer

  // In flight: `a` is read by the pending neg, then dropped; the next
  // allocation of its size must not alias it before the flush.
  Tensor t = Tensor::fromDoubles(DType::F32, {1028}, std::vector<double>(1028, 2.0));
  auto a = vk::uploadTensor(ctx, t);
  ASSERT_TRUE(a.ok());
  auto neg = vk::unary(ctx, vk::UnaryKind::Neg, *a);
  ASSERT_TRUE(neg.ok());
  a = Diagnostic::error("dropped");
  reused = ctx.stats().buffersReused;
  auto fill = vk::allocateTensor(ctx, DType::F32, {1028});
  ASSERT_TRUE(fill.ok());
  ASSERT_TRUE(ctx.fill(*fill->buffer, 0x3f800000u).ok()); // 1.0f, recorded after the neg
  auto down = vk::downloadTensor(ctx, *neg);
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->getDouble(1027), -2.0);
  EXPECT_EQ(ctx.stats().buffersReused, reused); // nothing idle of that size yet
}

// Prefill-sized outputs are pooled too (up to 64 MiB a buffer): on lavapipe
// a fresh 32 MiB output cost a 4096 x 2048 embedding gather its page faults
// on every call (docs/benchmarks.md). Larger one-off buffers are freed.
TEST(VulkanRuntime, PrefillSizedBuffersAreReused) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  ASSERT_TRUE(ctx.flush().ok());
  const std::size_t mib = std::size_t(1) << 20;
  // Sizes no other test allocates: 32 MiB and just under 64 are kept, just
  // over 64 is not.
  for (auto [bytes, kept] : std::vector<std::pair<std::size_t, bool>>{
           {32 * mib + 80, true}, {64 * mib - 80, true}, {64 * mib + 80, false}}) {
    if (bytes > ctx.info().maxStorageBufferRange)
      continue;
    {
      auto first = ctx.allocate(bytes);
      ASSERT_TRUE(first.ok());
    }
    uint64_t reused = ctx.stats().buffersReused;
    auto again = ctx.allocate(bytes);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(ctx.stats().buffersReused, reused + (kept ? 1 : 0)) << bytes << " bytes";
  }
}

} // namespace
