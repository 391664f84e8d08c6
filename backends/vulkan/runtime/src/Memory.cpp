//===- Memory.cpp - Storage buffers, their pool, upload and download --------===//
//
// Buffers come from DeviceCore's pool when a released one of the same
// memory type, mapping and size is there; uploads and downloads go through
// a mapped pointer or, for device-only memory, a staging copy recorded in
// order with the dispatches.
//
//===----------------------------------------------------------------------===//
#include "VulkanCore.h"

#include <algorithm>
#include <cstring>

namespace graft::vk {

void DeviceCore::destroy(const PooledBuffer &b) {
  if (b.mapped)
    vkUnmapMemory(device, b.memory);
  if (b.buffer)
    vkDestroyBuffer(device, b.buffer, nullptr);
  if (b.memory)
    vkFreeMemory(device, b.memory, nullptr);
}

void DeviceCore::release(const PoolKey &key, const PooledBuffer &b) {
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    if (b.buffer && b.memory && key.size <= kMaxPooledBuffer &&
        pooledBytes + key.size <= kMaxPooledBytes) {
      pool.emplace(key, b);
      pooledBytes += key.size;
      return;
    }
  }
  destroy(b);
}

std::optional<DeviceCore::PooledBuffer> DeviceCore::reuse(const PoolKey &key) {
  std::lock_guard<std::mutex> lock(poolMutex);
  auto it = pool.find(key);
  if (it == pool.end())
    return std::nullopt;
  PooledBuffer b = it->second;
  pool.erase(it);
  pooledBytes -= key.size;
  return b;
}

Buffer::~Buffer() = default;

Expected<std::shared_ptr<BufferHandles>> Context::Impl::makeBuffer(std::size_t bytes,
                                                                   uint32_t memoryType, bool map) {
  auto h = std::make_shared<BufferHandles>();
  h->core = core;
  h->size = bytes;
  h->memoryType = memoryType;
  if (auto pooled = core->reuse({memoryType, map, bytes})) {
    h->buffer = pooled->buffer;
    h->memory = pooled->memory;
    h->mapped = pooled->mapped;
    ++stats.buffersAllocated;
    ++stats.buffersReused;
    stats.bytesAllocated += bytes;
    return h;
  }
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  // Any buffer may be bound as a texel buffer (Commands.cpp texelView).
  if (info.storageTexelBuffers)
    bci.usage |= VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  GRAFT_VK_CHECK(vkCreateBuffer(core->device, &bci, nullptr, &h->buffer));
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(core->device, h->buffer, &req);
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(core->physical, &mem);
  if (!(req.memoryTypeBits & (1u << memoryType)))
    return Diagnostic::internal("the chosen memory type cannot back storage buffers");
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memoryType;
  VkResult r = vkAllocateMemory(core->device, &ai, nullptr, &h->memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return Diagnostic::error("the Vulkan device is out of memory allocating " +
                             std::to_string(bytes) + " bytes");
  if (r != VK_SUCCESS)
    return vkError("vkAllocateMemory", r, __FILE_NAME__, __LINE__);
  GRAFT_VK_CHECK(vkBindBufferMemory(core->device, h->buffer, h->memory, 0));
  if (map)
    GRAFT_VK_CHECK(vkMapMemory(core->device, h->memory, 0, VK_WHOLE_SIZE, 0, &h->mapped));
  ++stats.buffersAllocated;
  stats.bytesAllocated += bytes;
  return h;
}

Expected<std::shared_ptr<Buffer>> Context::allocate(std::size_t bytes) {
  Impl &m = *impl_;
  if (bytes > m.info.maxStorageBufferRange)
    return Diagnostic::error("a buffer of " + std::to_string(bytes) +
                             " bytes exceeds the device's maxStorageBufferRange of " +
                             std::to_string(m.info.maxStorageBufferRange) + " bytes");
  // Round up to 16 bytes: kernels read packed data as whole 32-bit words
  // and vec4s, and Vulkan buffers cannot be empty.
  std::size_t rounded = std::max<std::size_t>(16, (bytes + 15) / 16 * 16);
  GRAFT_TRY(auto handles, m.makeBuffer(rounded, m.deviceLocalType, m.deviceLocalIsHostVisible));
  std::shared_ptr<Buffer> b(new Buffer());
  b->impl_ = std::make_unique<Buffer::Impl>();
  b->impl_->handles = std::move(handles);
  b->size_ = bytes;
  return b;
}

Status Context::upload(Buffer &buffer, const void *data, std::size_t bytes, std::size_t offset) {
  Impl &m = *impl_;
  if (offset + bytes > buffer.impl_->handles->size)
    return Diagnostic::internal("upload of " + std::to_string(bytes) + " bytes at offset " +
                                std::to_string(offset) + " overflows a buffer of " +
                                std::to_string(buffer.size()));
  m.stats.bytesUploaded += bytes;
  if (bytes == 0)
    return okStatus(); // nothing to copy (and `data` may be null)
  BufferHandles &h = *buffer.impl_->handles;
  if (h.mapped) {
    if (m.pending && buffer.impl_->recordedEpoch == m.epoch)
      GRAFT_CHECK_OK(flush());
    std::memcpy(static_cast<uint8_t *>(h.mapped) + offset, data, bytes);
    return okStatus();
  }
  // Device-only memory: copy through a staging buffer, recorded in order
  // with the dispatches.
  GRAFT_TRY(auto staging, m.makeBuffer(std::max<std::size_t>(bytes, 16), m.stagingType, true));
  std::memcpy(staging->mapped, data, bytes);
  GRAFT_CHECK_OK(m.beginRecording());
  m.beforeCommand({{staging->buffer, false}, {h.buffer, true}});
  VkBufferCopy region{0, offset, bytes};
  vkCmdCopyBuffer(m.commandBuffer, staging->buffer, h.buffer, 1, &region);
  m.inFlight.push_back(staging);
  m.use(buffer);
  m.pending = true;
  return okStatus();
}

Status Context::download(const Buffer &buffer, void *data, std::size_t bytes, std::size_t offset) {
  Impl &m = *impl_;
  if (offset + bytes > buffer.impl_->handles->size)
    return Diagnostic::internal("download of " + std::to_string(bytes) + " bytes at offset " +
                                std::to_string(offset) + " overflows a buffer of " +
                                std::to_string(buffer.size()));
  m.stats.bytesDownloaded += bytes;
  if (bytes == 0) { // nothing to copy (a zero-size vkCmdCopyBuffer is invalid; `data` may be null)
    if (m.pending)
      GRAFT_CHECK_OK(flush());
    return okStatus();
  }
  BufferHandles &h = *buffer.impl_->handles;
  if (h.mapped) {
    if (m.pending)
      GRAFT_CHECK_OK(flush());
    std::memcpy(data, static_cast<const uint8_t *>(h.mapped) + offset, bytes);
    return okStatus();
  }
  GRAFT_TRY(auto staging, m.makeBuffer(std::max<std::size_t>(bytes, 16), m.readbackType, true));
  GRAFT_CHECK_OK(m.beginRecording());
  m.beforeCommand({{h.buffer, false}, {staging->buffer, true}});
  VkBufferCopy region{offset, 0, bytes};
  vkCmdCopyBuffer(m.commandBuffer, h.buffer, staging->buffer, 1, &region);
  m.inFlight.push_back(staging);
  m.pending = true;
  GRAFT_CHECK_OK(flush());
  std::memcpy(data, staging->mapped, bytes);
  return okStatus();
}

Expected<std::shared_ptr<Buffer>> Context::statusBuffer(std::string message) {
  Impl &m = *impl_;
  GRAFT_TRY(auto handles, m.makeBuffer(16, m.stagingType, true));
  std::memset(handles->mapped, 0, 16);
  m.statusChecks.emplace_back(handles, std::move(message));
  std::shared_ptr<Buffer> b(new Buffer());
  b->impl_ = std::make_unique<Buffer::Impl>();
  b->impl_->handles = std::move(handles);
  b->size_ = 16;
  return b;
}

Status Context::fill(Buffer &buffer, uint32_t pattern) {
  Impl &m = *impl_;
  GRAFT_CHECK_OK(m.beginRecording());
  m.beforeCommand({{buffer.impl_->handles->buffer, true}});
  vkCmdFillBuffer(m.commandBuffer, buffer.impl_->handles->buffer, 0, VK_WHOLE_SIZE, pattern);
  m.use(buffer);
  m.pending = true;
  return okStatus();
}

} // namespace graft::vk
