//===- Commands.cpp - Recording, dispatch, flush, profiling -----------------===//
//
// Dispatches are recorded into one command buffer; a memory barrier goes
// before a command only where it depends on one recorded since the last
// barrier (beforeCommand: read or write after a write, write after a read,
// tracked per VkBuffer with each binding's readonly-ness from the SPIR-V),
// so independent dispatches may overlap on the device. flush() submits the
// buffer, waits, reads the timestamps and the status buffers kernels set on
// bad input.
//
//===----------------------------------------------------------------------===//
#include "VulkanCore.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace graft::vk {

Status Context::Impl::beginRecording() {
  if (recording)
    return okStatus();
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  GRAFT_VK_CHECK(vkBeginCommandBuffer(commandBuffer, &bi));
  if (queryPool) {
    vkCmdResetQueryPool(commandBuffer, queryPool, 0, 2);
    vkCmdWriteTimestamp(commandBuffer, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queryPool, 0);
  }
  recording = true;
  writtenSinceBarrier.clear();
  readSinceBarrier.clear();
  return okStatus();
}

void Context::Impl::beforeCommand(const std::vector<Access> &accesses) {
  bool conflict = serialCommands || profiling;
  for (const Access &a : accesses)
    conflict = conflict || writtenSinceBarrier.count(a.buffer) ||
               (a.write && readSinceBarrier.count(a.buffer));
  // Nothing recorded since the last barrier (or the recording's start): none needed.
  if (conflict && !(writtenSinceBarrier.empty() && readSinceBarrier.empty()))
    barrier();
  for (const Access &a : accesses)
    (a.write ? writtenSinceBarrier : readSinceBarrier).insert(a.buffer);
}

void Context::Impl::barrier() {
  writtenSinceBarrier.clear();
  readSinceBarrier.clear();
  ++stats.barriers;
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(commandBuffer,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
}

void Context::Impl::use(Buffer &b) {
  b.impl_->recordedEpoch = epoch;
  inFlight.push_back(b.impl_->handles);
}

Expected<VkBufferView> Context::Impl::texelView(Buffer &b, std::string_view variant) {
  BufferHandles &h = *b.impl_->handles;
  if (h.texelView)
    return h.texelView;
  // Whole 16-byte texels: allocate() rounds every buffer up to them.
  const uint64_t texels = h.size / 16;
  if (texels > info.maxTexelBufferElements)
    return Diagnostic::internal("shader '" + std::string(variant) + "' binds a buffer of " +
                                std::to_string(texels) +
                                " texels as a texel buffer; the device's maxTexelBufferElements "
                                "is " +
                                std::to_string(info.maxTexelBufferElements) +
                                " (the launcher must take its storage-buffer kernel)");
  VkBufferViewCreateInfo vci{};
  vci.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO;
  vci.buffer = h.buffer;
  vci.format = VK_FORMAT_R32G32B32A32_UINT;
  vci.offset = 0;
  vci.range = texels * 16;
  GRAFT_VK_CHECK(vkCreateBufferView(core->device, &vci, nullptr, &h.texelView));
  return h.texelView;
}

Status Context::Impl::profileTimestamp() {
  uint32_t pool = profileQueries / kProfileQueriesPerPool;
  uint32_t query = profileQueries % kProfileQueriesPerPool;
  if (pool == profilePools.size()) {
    VkQueryPoolCreateInfo qpci{};
    qpci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = kProfileQueriesPerPool;
    VkQueryPool created = VK_NULL_HANDLE;
    GRAFT_VK_CHECK(vkCreateQueryPool(core->device, &qpci, nullptr, &created));
    profilePools.push_back(created);
  }
  if (query == 0)
    vkCmdResetQueryPool(commandBuffer, profilePools[pool], 0, kProfileQueriesPerPool);
  // BOTTOM_OF_PIPE: written once every command before it has completed.
  vkCmdWriteTimestamp(commandBuffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, profilePools[pool],
                      query);
  ++profileQueries;
  return okStatus();
}

Status Context::Impl::collectProfile() {
  if (profileQueries == 0)
    return okStatus();
  std::vector<uint64_t> ts(profileQueries);
  for (uint32_t first = 0; first < profileQueries; first += kProfileQueriesPerPool) {
    uint32_t n = std::min(kProfileQueriesPerPool, profileQueries - first);
    GRAFT_VK_CHECK(vkGetQueryPoolResults(
        core->device, profilePools[first / kProfileQueriesPerPool], 0, n, n * sizeof(uint64_t),
        ts.data() + first, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  }
  const uint64_t mask = timestampMask();
  for (Profiled &p : profiled) {
    uint64_t ticks = (ts[p.before + 1] - ts[p.before]) & mask;
    timings.push_back(
        {std::move(p.variant), std::move(p.label), double(ticks) * info.timestampPeriodNs});
  }
  profiled.clear();
  profileQueries = 0;
  return okStatus();
}

bool Context::hasPendingWork() const {
  return impl_->pending;
}
double Context::lastSubmitDeviceNs() const {
  return impl_->lastDeviceNs;
}

Status Context::setProfiling(bool on) {
  Impl &m = *impl_;
  if (on && m.timestampValidBits == 0)
    return Diagnostic::error("Vulkan device '" + m.info.name +
                             "' has no timestamps on its compute queue (timestampValidBits or "
                             "timestampPeriod is 0): per-dispatch device time is unavailable");
  if (!on && m.pending)
    GRAFT_CHECK_OK(flush()); // the queries already recorded are read with their submission
  m.profiling = on;
  return okStatus();
}
bool Context::profiling() const {
  return impl_->profiling;
}
void Context::setSerialCommands(bool on) {
  impl_->serialCommands = on;
}
void Context::setDispatchLabel(std::string label) {
  impl_->dispatchLabel = std::move(label);
}
std::vector<DispatchTiming> Context::takeDispatchTimings() {
  return std::exchange(impl_->timings, {});
}

Status Context::dispatch(std::string_view variant, const std::vector<Buffer *> &bindings,
                         const void *push, std::size_t pushBytes, std::array<uint32_t, 3> groups) {
  Impl &m = *impl_;
  GRAFT_TRY(const Pipeline *p, m.pipeline(variant));
  if (bindings.size() != p->numBindings)
    return Diagnostic::internal("shader variant '" + std::string(variant) + "' has " +
                                std::to_string(p->numBindings) + " bindings but " +
                                std::to_string(bindings.size()) + " buffers were given");
  if (pushBytes > kPushConstantBytes || pushBytes > m.info.maxPushConstantsSize)
    return Diagnostic::internal("push constants of " + std::to_string(pushBytes) +
                                " bytes exceed the limit for shader '" + std::string(variant) +
                                "'");
  for (int i = 0; i < 3; ++i)
    if (groups[static_cast<std::size_t>(i)] > m.info.maxComputeWorkGroupCount[i])
      return Diagnostic::error("dispatch of '" + std::string(variant) + "' needs " +
                               std::to_string(groups[static_cast<std::size_t>(i)]) +
                               " workgroups along axis " + std::to_string(i) +
                               ", more than the device allows (" +
                               std::to_string(m.info.maxComputeWorkGroupCount[i]) + ")");
  if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0)
    return okStatus(); // nothing to compute (an empty tensor)
  GRAFT_CHECK_OK(m.beginRecording());
  GRAFT_TRY(VkDescriptorSet set, m.allocateSet(p->setLayout));
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkBufferView> views(bindings.size(), VK_NULL_HANDLE);
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  std::vector<Impl::Access> accesses(bindings.size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    if (!bindings[i])
      return Diagnostic::internal("null buffer bound to shader '" + std::string(variant) + "'");
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = p->bindingTypes[i];
    if (p->bindingTypes[i] == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER) {
      GRAFT_TRY(views[i], m.texelView(*bindings[i], variant));
      writes[i].pTexelBufferView = &views[i];
    } else {
      infos[i] = {bindings[i]->impl_->handles->buffer, 0, VK_WHOLE_SIZE};
      writes[i].pBufferInfo = &infos[i];
    }
    m.use(*bindings[i]);
    accesses[i] = {bindings[i]->impl_->handles->buffer, p->bindingWritable[i]};
  }
  m.beforeCommand(accesses);
  vkUpdateDescriptorSets(m.core->device, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);
  uint32_t beforeQuery = m.profileQueries;
  if (m.profiling)
    GRAFT_CHECK_OK(m.profileTimestamp());
  vkCmdBindPipeline(m.commandBuffer, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
  vkCmdBindDescriptorSets(m.commandBuffer, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0,
                          nullptr);
  if (pushBytes) {
    // Always push the full range the layout declares, zero-padded.
    uint8_t bytes[kPushConstantBytes] = {};
    std::memcpy(bytes, push, pushBytes);
    vkCmdPushConstants(m.commandBuffer, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       std::min(kPushConstantBytes, m.info.maxPushConstantsSize), bytes);
  }
  vkCmdDispatch(m.commandBuffer, groups[0], groups[1], groups[2]);
  if (m.profiling) {
    GRAFT_CHECK_OK(m.profileTimestamp());
    m.profiled.push_back({std::string(variant), m.dispatchLabel, beforeQuery});
  }
  m.pending = true;
  ++m.stats.dispatches;
  return okStatus();
}

Status Context::dispatch1D(std::string_view variant, const std::vector<Buffer *> &bindings,
                           const void *push, std::size_t pushBytes, uint64_t invocations) {
  GRAFT_TRY(const Pipeline *p, impl_->pipeline(variant));
  uint64_t local = uint64_t(p->localSize[0]) * p->localSize[1] * p->localSize[2];
  uint64_t groups = (invocations + local - 1) / local;
  uint64_t maxX = std::min<uint64_t>(impl_->info.maxComputeWorkGroupCount[0], 65535);
  uint64_t gx = std::min(groups, maxX);
  uint64_t gy = gx ? (groups + gx - 1) / gx : 0;
  if (gy > impl_->info.maxComputeWorkGroupCount[1])
    return Diagnostic::error("dispatch of '" + std::string(variant) + "' over " +
                             std::to_string(invocations) +
                             " invocations exceeds the device's workgroup-count limits");
  return dispatch(variant, bindings, push, pushBytes,
                  {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1});
}

Status Context::flush() {
  Impl &m = *impl_;
  if (!m.recording) {
    m.inFlight.clear();
    return okStatus();
  }
  struct FlushTimer { // counts every way out, errors included
    double &ns;
    std::chrono::steady_clock::time_point t0;
    ~FlushTimer() {
      ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
  } timer{m.stats.flushNs, std::chrono::steady_clock::now()};
  if (m.queryPool)
    vkCmdWriteTimestamp(m.commandBuffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m.queryPool, 1);
  // The device's writes, made available to the host's reads of mapped
  // memory (downloads, status flags) once the fence signals.
  VkMemoryBarrier toHost{};
  toHost.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  toHost.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(m.commandBuffer,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &toHost, 0, nullptr, 0, nullptr);
  GRAFT_VK_CHECK(vkEndCommandBuffer(m.commandBuffer));
  m.recording = false;
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &m.commandBuffer;
  GRAFT_VK_CHECK(vkQueueSubmit(m.queue, 1, &si, m.fence));
  GRAFT_VK_CHECK(vkWaitForFences(m.core->device, 1, &m.fence, VK_TRUE, UINT64_MAX));
  GRAFT_VK_CHECK(vkResetFences(m.core->device, 1, &m.fence));
  GRAFT_VK_CHECK(vkResetCommandBuffer(m.commandBuffer, 0));
  if (m.queryPool) {
    uint64_t ts[2] = {0, 0};
    if (vkGetQueryPoolResults(m.core->device, m.queryPool, 0, 2, sizeof(ts), ts, sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
      m.lastDeviceNs = double((ts[1] - ts[0]) & m.timestampMask()) * m.info.timestampPeriodNs;
      m.stats.submittedDeviceNs += m.lastDeviceNs;
    }
  }
  GRAFT_CHECK_OK(m.collectProfile());
  for (VkDescriptorPool pool : m.pools)
    GRAFT_VK_CHECK(vkResetDescriptorPool(m.core->device, pool, 0));
  m.activePool = 0;
  m.inFlight.clear();
  m.pending = false;
  ++m.epoch;
  ++m.stats.flushes;
  std::vector<std::string> failed;
  for (const auto &[handles, message] : m.statusChecks) {
    uint32_t flag = 0;
    std::memcpy(&flag, handles->mapped, sizeof(flag));
    if (flag != 0)
      failed.push_back(message);
  }
  m.statusChecks.clear();
  if (!failed.empty()) {
    std::vector<Diagnostic> diags;
    for (const std::string &f : failed)
      diags.push_back(Diagnostic::error(f));
    return Failure(std::move(diags));
  }
  std::lock_guard<std::mutex> lock(m.core->messagesMutex);
  if (!m.core->validationErrors.empty()) {
    Diagnostic d = Diagnostic::internal("Vulkan validation reported " +
                                        std::to_string(m.core->validationErrors.size()) +
                                        " error(s); first: " + m.core->validationErrors.front());
    m.core->validationErrors.clear();
    return d;
  }
  return okStatus();
}

} // namespace graft::vk
