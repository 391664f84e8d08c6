//===- VulkanCore.h - The runtime's Vulkan objects, shared by its files -*- C++ -*-===//
//
// Private to backends/vulkan/runtime: the instance/device core every buffer
// holds, a buffer's handles, a compute pipeline and Context::Impl, which the
// runtime's files (Device.cpp, Memory.cpp, Pipelines.cpp, Commands.cpp)
// implement between them. Nothing here knows about tensors, graphs or ops.
//
// Every vk* call that can fail goes through GRAFT_VK_CHECK, which turns a
// VkResult into an internal Diagnostic naming the call, the result and the
// source file and line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/vulkan/Context.h"

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

namespace graft::vk {

/// An internal error for a failed Vulkan call at file:line.
Diagnostic vkError(const char *call, VkResult r, const char *file, int line);

#define GRAFT_VK_CHECK(call)                                                                       \
  do {                                                                                             \
    VkResult graftVkResult_ = (call);                                                              \
    if (graftVkResult_ != VK_SUCCESS)                                                              \
      return ::graft::vk::vkError(#call, graftVkResult_, __FILE_NAME__, __LINE__);                 \
  } while (0)

/// Instance + logical device; shared by the Context and every buffer so
/// that destruction order never matters to callers.
struct DeviceCore {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  std::mutex messagesMutex;
  std::vector<std::string> validationErrors;

  /// A buffer and its memory, released by their last owner and kept for the
  /// next request of the same memory type, mapping and size.
  struct PooledBuffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void *mapped = nullptr;
  };
  struct PoolKey {
    uint32_t memoryType;
    bool mapped;
    std::size_t size;
    bool operator<(const PoolKey &o) const {
      return std::tie(memoryType, mapped, size) < std::tie(o.memoryType, o.mapped, o.size);
    }
  };
  /// Why a pool: every kernel launch allocates its output, so a model run
  /// creates and frees a buffer and its memory per intermediate per call.
  /// On NVIDIA those driver calls were most of a decode step's wall time
  /// (docs/benchmarks.md, "Vulkan kernels on a GPU"). A buffer is released
  /// here only once no recorded work uses it (the context holds in-flight
  /// buffers until the submission completes), so reuse is race-free.
  std::mutex poolMutex;
  std::multimap<PoolKey, PooledBuffer> pool;
  std::size_t pooledBytes = 0;
  /// Beyond this many pooled bytes, released buffers are freed; so are
  /// buffers larger than kMaxPooledBuffer (a weight's upload staging, a
  /// prepack's source), which are one-off and would only hold memory.
  /// 64 MiB keeps prefill-sized activations (4096 tokens x 2048 f32 is 32
  /// MiB): on lavapipe a fresh allocation is a new mapping whose pages fault
  /// in while the kernel first writes them, 60 % of a 4096 x 2048 embedding
  /// gather's CPU time when the cap was 16 MiB (docs/benchmarks.md).
  static constexpr std::size_t kMaxPooledBytes = std::size_t(256) << 20;
  static constexpr std::size_t kMaxPooledBuffer = std::size_t(64) << 20;

  void destroy(const PooledBuffer &b);
  /// Keeps a released buffer for reuse, or frees it when the pool is full.
  void release(const PoolKey &key, const PooledBuffer &b);
  /// A pooled buffer for `key`, if one was released.
  std::optional<PooledBuffer> reuse(const PoolKey &key);

  ~DeviceCore();
};

/// The Vulkan objects of one buffer; shared between the Buffer and the
/// in-flight list of the Context so a buffer dropped while a dispatch that
/// uses it is pending lives until the flush.
struct BufferHandles {
  std::shared_ptr<DeviceCore> core;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void *mapped = nullptr; ///< non-null when host-visible
  std::size_t size = 0;
  uint32_t memoryType = 0;
  /// The buffer's whole-buffer R32G32B32A32_UINT view, made the first time a
  /// dispatch binds it as a storage texel buffer (Commands.cpp texelView) and
  /// kept while the buffer lives: a weight is bound at every decode step.
  VkBufferView texelView = VK_NULL_HANDLE;
  /// Back to the device's pool (DeviceCore::release) rather than freed; the
  /// view goes (handles outlive the submissions that use them).
  ~BufferHandles() {
    if (texelView)
      vkDestroyBufferView(core->device, texelView, nullptr);
    if (buffer || memory)
      core->release({memoryType, mapped != nullptr, size}, {buffer, memory, mapped});
  }
};

struct Buffer::Impl {
  std::shared_ptr<BufferHandles> handles;
  uint64_t recordedEpoch = 0; ///< epoch of the last recording that used it (0: none)
};

struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t numBindings = 0;
  /// Per binding: VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, or
  /// VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER where the module declares a
  /// `rgba32ui` uimageBuffer (read from the SPIR-V: bindingTypes()).
  std::vector<VkDescriptorType> bindingTypes;
  /// Per binding: whether the shader may write it (not GLSL `readonly`);
  /// what the barrier tracking of Commands.cpp counts as a write.
  std::vector<bool> bindingWritable;
  std::array<uint32_t, 3> localSize{1, 1, 1};
};

constexpr uint32_t kPushConstantBytes = 128;
/// Timestamp queries per profiling pool: two per dispatch.
constexpr uint32_t kProfileQueriesPerPool = 1024;
constexpr uint32_t kSetsPerPool = 512;
constexpr uint32_t kDescriptorsPerPool = kSetsPerPool * 8;

struct Context::Impl {
  std::shared_ptr<DeviceCore> core;
  DeviceInfo info;
  bool validation = false;
  bool synchronizationValidation = false;
  bool exactKernels = false;
  std::unique_ptr<ShaderLibrary> shaders;
  uint32_t queueFamily = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer commandBuffer = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queryPool = VK_NULL_HANDLE;
  bool recording = false;
  bool pending = false;
  uint64_t epoch = 1;
  std::vector<VkDescriptorPool> pools;
  std::size_t activePool = 0;
  std::map<std::string, Pipeline, std::less<>> pipelines;
  std::vector<std::shared_ptr<BufferHandles>> inFlight;
  uint32_t deviceLocalType = UINT32_MAX; ///< memory type for buffers
  bool deviceLocalIsHostVisible = false;
  uint32_t stagingType = UINT32_MAX;  ///< host-visible coherent type, for uploads
  uint32_t readbackType = UINT32_MAX; ///< host-visible coherent, cached if any: downloads
  double lastDeviceNs = 0;
  uint32_t timestampValidBits = 0;
  /// The timestamp bits that count: differences wrap within them.
  uint64_t timestampMask() const {
    return timestampValidBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << timestampValidBits) - 1;
  }
  // Profiling (setProfiling): pools of kProfileQueriesPerPool queries, used
  // in order within a recording; the variant and label of each timed
  // dispatch of the recording; what completed submissions measured.
  bool profiling = false;
  std::vector<VkQueryPool> profilePools;
  uint32_t profileQueries = 0; ///< queries written in the current recording
  struct Profiled {
    std::string variant, label;
    uint32_t before = 0; ///< its first query; the second follows
  };
  std::vector<Profiled> profiled;
  std::vector<DispatchTiming> timings;
  std::string dispatchLabel;
  ContextStats stats;
  std::vector<std::pair<std::shared_ptr<BufferHandles>, std::string>> statusChecks;

  ~Impl();

  // Barrier tracking (Commands.cpp): the buffers the commands recorded since
  // the last barrier wrote and read. A command whose accesses conflict with
  // them (it reads or writes a buffer written since, or writes one read
  // since) gets a barrier first; independent commands (a layer's q, k and v
  // projections) run without one between them. serialCommands (profiling,
  // Context::setSerialCommands) puts one between every two commands.
  std::unordered_set<VkBuffer> writtenSinceBarrier, readSinceBarrier;
  bool serialCommands = false;

  // Commands.cpp
  Status beginRecording();
  /// A full memory and execution barrier between compute and transfer work.
  void barrier();
  struct Access {
    VkBuffer buffer;
    bool write;
  };
  /// Called before recording a command making `accesses`: records a barrier
  /// first where one conflicts with the commands since the last barrier (or
  /// always, when commands are serial), then notes them.
  void beforeCommand(const std::vector<Access> &accesses);
  /// Marks `b` used by the recording (kept alive until the flush).
  void use(Buffer &b);
  /// Writes the next profiling timestamp (a pool is reset in the command
  /// buffer before its first query of a recording).
  Status profileTimestamp();
  /// Reads the profiling queries of the submission that just completed.
  Status collectProfile();

  // Memory.cpp
  Expected<std::shared_ptr<BufferHandles>> makeBuffer(std::size_t bytes, uint32_t memoryType,
                                                      bool map);

  /// `b`'s storage texel view (BufferHandles::texelView), made on first use.
  Expected<VkBufferView> texelView(Buffer &b, std::string_view variant);

  // Pipelines.cpp
  Expected<VkDescriptorSet> allocateSet(VkDescriptorSetLayout layout);
  Expected<const Pipeline *> pipeline(std::string_view variant);
};

} // namespace graft::vk
