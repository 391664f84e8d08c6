//===- Pipelines.cpp - Compute pipelines and descriptor sets ----------------===//
//
// A shader variant becomes a pipeline on first dispatch (its SPIR-V from
// the ShaderLibrary: compiled by glslang, or a program's precompiled
// module); descriptor sets come from pools reset at every flush.
//
//===----------------------------------------------------------------------===//
#include "VulkanCore.h"

#include <algorithm>
#include <map>
#include <set>

namespace graft::vk {

Expected<VkDescriptorSet> Context::Impl::allocateSet(VkDescriptorSetLayout layout) {
  for (;;) {
    if (activePool == pools.size()) {
      // Up to 8 bindings a set of either kind (the texel GEMV binds 3 texel
      // buffers a dispatch; a full pool moves on to the next one).
      VkDescriptorPoolSize sizes[] = {
          {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool},
          {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, kDescriptorsPerPool}};
      VkDescriptorPoolCreateInfo pci{};
      pci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      pci.maxSets = kSetsPerPool;
      pci.poolSizeCount = info.storageTexelBuffers ? 2 : 1;
      pci.pPoolSizes = sizes;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      GRAFT_VK_CHECK(vkCreateDescriptorPool(core->device, &pci, nullptr, &pool));
      pools.push_back(pool);
    }
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = pools[activePool];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkResult r = vkAllocateDescriptorSets(core->device, &ai, &set);
    if (r == VK_SUCCESS)
      return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      return vkError("vkAllocateDescriptorSets", r, __FILE_NAME__, __LINE__);
    ++activePool; // this pool is full; the next (or a new) one
  }
}

namespace {

/// What a module's `n` set-0 bindings are, from its SPIR-V (the declarations
/// glslang emitted, so every shader, compiled here or stored in a program, is
/// read alike).
struct BindingInfo {
  /// An image of dimension Buffer, read without a sampler, format Rgba32ui
  /// (GLSL `layout(rgba32ui) uniform uimageBuffer`), is a storage texel
  /// buffer; every other binding a storage buffer. Any other image or
  /// sampler is refused.
  std::vector<VkDescriptorType> types;
  /// Whether the shader may write the binding: some variable bound to it is
  /// not NonWritable (GLSL `readonly`: on a buffer block every member carries
  /// the decoration; on an image the variable does). Several declarations may
  /// share a binding (views of one buffer as vec4s, 64-bit words, texels).
  std::vector<bool> writable;
};

Expected<BindingInfo> bindingInfo(const std::vector<uint32_t> &spirv, uint32_t n,
                                  std::string_view variant) {
  // Opcodes, decorations and enumerants of the SPIR-V specification.
  constexpr uint32_t kOpTypeImage = 25, kOpTypeSampler = 26, kOpTypeSampledImage = 27,
                     kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71,
                     kOpMemberDecorate = 72;
  constexpr uint32_t kDecorationNonWritable = 24, kDecorationBinding = 33, kDimBuffer = 5,
                     kFormatRgba32ui = 30;
  std::map<uint32_t, uint32_t> binding, pointee, variableType, structMembers;
  std::map<uint32_t, std::vector<uint32_t>> types; // id -> the declaring instruction's operands
  std::set<uint32_t> nonWritableIds;               // variables decorated NonWritable
  std::map<uint32_t, std::set<uint32_t>> nonWritableMembers; // struct id -> members
  for (std::size_t i = 5; i < spirv.size();) {
    const uint32_t words = spirv[i] >> 16, op = spirv[i] & 0xFFFFu;
    if (words == 0 || i + words > spirv.size())
      return Diagnostic::internal("shader '" + std::string(variant) + "': malformed SPIR-V");
    const uint32_t *a = &spirv[i + 1];
    if (op == kOpDecorate && words >= 4 && a[1] == kDecorationBinding)
      binding[a[0]] = a[2];
    else if (op == kOpDecorate && words >= 3 && a[1] == kDecorationNonWritable)
      nonWritableIds.insert(a[0]);
    else if (op == kOpMemberDecorate && words >= 4 && a[2] == kDecorationNonWritable)
      nonWritableMembers[a[0]].insert(a[1]);
    else if (op == kOpTypeStruct && words >= 2)
      structMembers[a[0]] = words - 2;
    else if (op == kOpTypePointer && words >= 4)
      pointee[a[0]] = a[2];
    else if (op == kOpVariable && words >= 4)
      variableType[a[1]] = a[0];
    else if ((op == kOpTypeImage || op == kOpTypeSampler || op == kOpTypeSampledImage) &&
             words >= 2) {
      std::vector<uint32_t> &t = types[a[0]];
      t.push_back(op);
      t.insert(t.end(), a + 1, a + words - 1);
    }
    i += words;
  }
  BindingInfo out;
  out.types.assign(n, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  out.writable.assign(n, false);
  for (const auto &[id, b] : binding) {
    auto var = variableType.find(id);
    if (var == variableType.end() || b >= n)
      continue;
    auto p = pointee.find(var->second);
    const uint32_t pointeeId = p == pointee.end() ? 0 : p->second;
    auto t = types.find(pointeeId);
    if (t == types.end()) { // a buffer block
      auto members = structMembers.find(pointeeId);
      auto readonly = nonWritableMembers.find(pointeeId);
      const bool allReadonly = members != structMembers.end() &&
                               readonly != nonWritableMembers.end() &&
                               readonly->second.size() == members->second;
      if (!allReadonly && !nonWritableIds.count(id))
        out.writable[b] = true;
      continue;
    }
    // OpTypeImage operands after its id: sampled type, Dim, Depth, Arrayed,
    // MS, Sampled (2: read and written without a sampler), Image Format.
    const std::vector<uint32_t> &img = t->second;
    if (img[0] != kOpTypeImage || img.size() < 8 || img[2] != kDimBuffer || img[6] != 2 ||
        img[7] != kFormatRgba32ui)
      return Diagnostic::internal("shader '" + std::string(variant) + "' binding " +
                                  std::to_string(b) +
                                  ": only storage buffers and rgba32ui uimageBuffer texel "
                                  "buffers are supported");
    out.types[b] = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
    if (!nonWritableIds.count(id))
      out.writable[b] = true;
  }
  return out;
}

} // namespace

Expected<const Pipeline *> Context::Impl::pipeline(std::string_view variant) {
  if (auto it = pipelines.find(variant); it != pipelines.end())
    return &it->second;
  GRAFT_TRY(const CompiledShader *shader, shaders->get(variant));
  Pipeline p;
  p.numBindings = shader->numBindings;
  p.localSize = shader->localSize;
  GRAFT_TRY(BindingInfo bi, bindingInfo(shader->spirv, p.numBindings, variant));
  p.bindingTypes = std::move(bi.types);
  p.bindingWritable = std::move(bi.writable);
  for (VkDescriptorType t : p.bindingTypes)
    if (t == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER && !info.storageTexelBuffers)
      return Diagnostic::error("shader '" + std::string(variant) +
                               "' reads a storage texel buffer, which Vulkan device '" + info.name +
                               "' does not support for R32G32B32A32_UINT");
  VkShaderModuleCreateInfo smci{};
  smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  smci.codeSize = shader->spirv.size() * sizeof(uint32_t);
  smci.pCode = shader->spirv.data();
  GRAFT_VK_CHECK(vkCreateShaderModule(core->device, &smci, nullptr, &p.module));
  std::vector<VkDescriptorSetLayoutBinding> bindings(p.numBindings);
  for (uint32_t i = 0; i < p.numBindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = p.bindingTypes[i];
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{};
  dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dl.bindingCount = p.numBindings;
  dl.pBindings = bindings.data();
  GRAFT_VK_CHECK(vkCreateDescriptorSetLayout(core->device, &dl, nullptr, &p.setLayout));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          std::min(kPushConstantBytes, info.maxPushConstantsSize)};
  VkPipelineLayoutCreateInfo plci{};
  plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &p.setLayout;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &pcr;
  GRAFT_VK_CHECK(vkCreatePipelineLayout(core->device, &plci, nullptr, &p.layout));
  VkComputePipelineCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = p.module;
  cpci.stage.pName = "main";
  cpci.layout = p.layout;
  GRAFT_VK_CHECK(
      vkCreateComputePipelines(core->device, VK_NULL_HANDLE, 1, &cpci, nullptr, &p.pipeline));
  auto it = pipelines.emplace(std::string(variant), p).first;
  return &it->second;
}

ShaderLibrary &Context::shaders() {
  return *impl_->shaders;
}

} // namespace graft::vk
