//===- Pipelines.cpp - Compute pipelines and descriptor sets ----------------===//
//
// A shader variant becomes a pipeline on first dispatch (its SPIR-V from
// the ShaderLibrary: compiled by glslang, or a program's precompiled
// module); descriptor sets come from pools reset at every flush.
//
//===----------------------------------------------------------------------===//
#include "VulkanCore.h"

#include <algorithm>

namespace graft::vk {

Expected<VkDescriptorSet> Context::Impl::allocateSet(VkDescriptorSetLayout layout) {
  for (;;) {
    if (activePool == pools.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool};
      VkDescriptorPoolCreateInfo pci{};
      pci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      pci.maxSets = kSetsPerPool;
      pci.poolSizeCount = 1;
      pci.pPoolSizes = &size;
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

Expected<const Pipeline *> Context::Impl::pipeline(std::string_view variant) {
  if (auto it = pipelines.find(variant); it != pipelines.end())
    return &it->second;
  GRAFT_TRY(const CompiledShader *shader, shaders->get(variant));
  Pipeline p;
  p.numBindings = shader->numBindings;
  p.localSize = shader->localSize;
  VkShaderModuleCreateInfo smci{};
  smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  smci.codeSize = shader->spirv.size() * sizeof(uint32_t);
  smci.pCode = shader->spirv.data();
  GRAFT_VK_CHECK(vkCreateShaderModule(core->device, &smci, nullptr, &p.module));
  std::vector<VkDescriptorSetLayoutBinding> bindings(p.numBindings);
  for (uint32_t i = 0; i < p.numBindings; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
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
