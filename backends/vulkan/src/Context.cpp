//===- Context.cpp - Instance, device, memory, pipelines, dispatch --------===//
//
// The only file that talks to the Vulkan API. Every vk* call that can fail
// goes through GRAFT_VK_CHECK, which turns a VkResult into an internal
// Diagnostic naming the call, the result and the source line.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Context.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

namespace graft::vk {

namespace {

const char *resultName(VkResult r) {
  switch (r) {
#define GRAFT_VK_RESULT(x)                                                                         \
  case x:                                                                                          \
    return #x;
    GRAFT_VK_RESULT(VK_SUCCESS)
    GRAFT_VK_RESULT(VK_NOT_READY)
    GRAFT_VK_RESULT(VK_TIMEOUT)
    GRAFT_VK_RESULT(VK_INCOMPLETE)
    GRAFT_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    GRAFT_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    GRAFT_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    GRAFT_VK_RESULT(VK_ERROR_DEVICE_LOST)
    GRAFT_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    GRAFT_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    GRAFT_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    GRAFT_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    GRAFT_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    GRAFT_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    GRAFT_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    GRAFT_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    GRAFT_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    GRAFT_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef GRAFT_VK_RESULT
  default:
    return "VK_ERROR_(unknown)";
  }
}

Diagnostic vkError(const char *call, VkResult r, int line) {
  return Diagnostic::internal(std::string(call) + " failed with " + resultName(r) +
                              " (backends/vulkan/src/Context.cpp:" + std::to_string(line) + ")");
}

#define GRAFT_VK_CHECK(call)                                                                       \
  do {                                                                                             \
    VkResult graftVkResult_ = (call);                                                              \
    if (graftVkResult_ != VK_SUCCESS)                                                              \
      return vkError(#call, graftVkResult_, __LINE__);                                             \
  } while (0)

std::string versionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::string typeName(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return "discrete-gpu";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return "integrated-gpu";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return "virtual-gpu";
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return "cpu";
  default:
    return "other";
  }
}

constexpr const char *kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool layerAvailable(const char *name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS)
    return false;
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties &l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

bool instanceExtensionAvailable(const char *name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data()) != VK_SUCCESS)
    return false;
  return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties &e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

} // namespace

bool validationRequestedByDefault() {
#ifdef GRAFT_VK_DEBUG
  return true;
#else
  const char *env = std::getenv("GRAFT_VK_VALIDATION");
  return env && std::string(env) == "1";
#endif
}

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
  static constexpr std::size_t kMaxPooledBytes = std::size_t(256) << 20;
  static constexpr std::size_t kMaxPooledBuffer = std::size_t(16) << 20;

  void destroy(const PooledBuffer &b) {
    if (b.mapped)
      vkUnmapMemory(device, b.memory);
    if (b.buffer)
      vkDestroyBuffer(device, b.buffer, nullptr);
    if (b.memory)
      vkFreeMemory(device, b.memory, nullptr);
  }
  /// Keeps a released buffer for reuse, or frees it when the pool is full.
  void release(const PoolKey &key, const PooledBuffer &b) {
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
  /// A pooled buffer for `key`, if one was released.
  std::optional<PooledBuffer> reuse(const PoolKey &key) {
    std::lock_guard<std::mutex> lock(poolMutex);
    auto it = pool.find(key);
    if (it == pool.end())
      return std::nullopt;
    PooledBuffer b = it->second;
    pool.erase(it);
    pooledBytes -= key.size;
    return b;
  }

  ~DeviceCore() {
    for (const auto &[key, b] : pool)
      destroy(b);
    if (device)
      vkDestroyDevice(device, nullptr);
    if (messenger) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy)
        destroy(instance, messenger, nullptr);
    }
    if (instance)
      vkDestroyInstance(instance, nullptr);
  }
};

namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL debugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT *data,
                                             void *user) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT && data && data->pMessage) {
    auto *core = static_cast<DeviceCore *>(user);
    std::lock_guard<std::mutex> lock(core->messagesMutex);
    core->validationErrors.push_back(data->pMessage);
  }
  return VK_FALSE;
}

/// Creates an instance; `validation` is updated to whether it got enabled.
Expected<VkInstance> createInstance(bool &validation, bool &debugUtils) {
  uint32_t loaderVersion = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion(&loaderVersion) != VK_SUCCESS)
    loaderVersion = VK_API_VERSION_1_0;
  if (loaderVersion < VK_API_VERSION_1_1)
    return Diagnostic::error("the Vulkan loader supports only API " + versionString(loaderVersion) +
                             "; graft needs 1.1 or newer");
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "graft";
  app.pEngineName = "graft";
  app.apiVersion = VK_API_VERSION_1_2;
  std::vector<const char *> layers, exts;
  if (validation && layerAvailable(kValidationLayer))
    layers.push_back(kValidationLayer);
  else
    validation = false;
  debugUtils = validation && instanceExtensionAvailable(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (debugUtils)
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return Diagnostic::error("no Vulkan driver is installed (vkCreateInstance: "
                             "VK_ERROR_INCOMPATIBLE_DRIVER); install mesa-vulkan-drivers for "
                             "lavapipe or set VK_ICD_FILENAMES");
  if (r != VK_SUCCESS)
    return vkError("vkCreateInstance", r, __LINE__);
  return instance;
}

DeviceInfo describe(VkPhysicalDevice pd, uint32_t index) {
  DeviceInfo info;
  info.index = index;
  VkPhysicalDeviceProperties p{};
  vkGetPhysicalDeviceProperties(pd, &p);
  info.name = p.deviceName;
  info.type = typeName(p.deviceType);
  info.apiVersion = versionString(p.apiVersion);
  info.vendorId = p.vendorID;
  info.deviceId = p.deviceID;
  info.maxStorageBufferRange = p.limits.maxStorageBufferRange;
  for (int i = 0; i < 3; ++i)
    info.maxComputeWorkGroupCount[i] = p.limits.maxComputeWorkGroupCount[i];
  info.maxComputeWorkGroupInvocations = p.limits.maxComputeWorkGroupInvocations;
  info.maxComputeSharedMemorySize = p.limits.maxComputeSharedMemorySize;
  info.maxPushConstantsSize = p.limits.maxPushConstantsSize;
  info.maxImageDimension2D = p.limits.maxImageDimension2D;
  info.maxImageDimension3D = p.limits.maxImageDimension3D;
  info.timestampPeriodNs = p.limits.timestampComputeAndGraphics ? p.limits.timestampPeriod : 0.f;

  bool v12 = p.apiVersion >= VK_API_VERSION_1_2;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDevice8BitStorageFeatures s8{};
  s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features f16{};
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &s16;
  if (v12) {
    s16.pNext = &s8;
    s8.pNext = &f16;
  }
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  info.storageBuffer16BitAccess = s16.storageBuffer16BitAccess;
  info.storageBuffer8BitAccess = v12 && s8.storageBuffer8BitAccess;
  info.shaderFloat16 = v12 && f16.shaderFloat16;
  info.shaderInt64 = f2.features.shaderInt64;

  if (p.apiVersion >= VK_API_VERSION_1_1) {
    VkPhysicalDeviceSubgroupProperties sg{};
    sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &sg;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    info.subgroupSize = sg.subgroupSize;
    const VkSubgroupFeatureFlags needed =
        VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT;
    info.subgroupClusteredAdd = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                                (sg.supportedOperations & needed) == needed;
  }

  VkPhysicalDeviceDriverProperties drv{};
  if (v12) {
    drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &drv;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    info.driver = std::string(drv.driverName) + (drv.driverInfo[0] ? " " : "") + drv.driverInfo;
  }
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.deviceLocalBytes = std::max<uint64_t>(info.deviceLocalBytes, mem.memoryHeaps[i].size);
  return info;
}

Expected<std::vector<VkPhysicalDevice>> physicalDevices(VkInstance instance) {
  uint32_t n = 0;
  GRAFT_VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  std::vector<VkPhysicalDevice> devices(n);
  if (n)
    GRAFT_VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, devices.data()));
  devices.resize(n);
  return devices;
}

} // namespace

Expected<std::vector<DeviceInfo>> listDevices() {
  bool validation = false, debugUtils = false;
  auto instance = createInstance(validation, debugUtils);
  if (!instance.ok()) {
    // No driver at all is "no devices", not a failure.
    if (instance.diags()[0].kind == DiagKind::User)
      return std::vector<DeviceInfo>{};
    return instance.takeFailure();
  }
  auto devices = physicalDevices(*instance);
  std::vector<DeviceInfo> out;
  if (devices.ok())
    for (uint32_t i = 0; i < devices->size(); ++i)
      out.push_back(describe((*devices)[i], i));
  vkDestroyInstance(*instance, nullptr);
  if (!devices.ok())
    return devices.takeFailure();
  return out;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

namespace {

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
  /// Back to the device's pool (DeviceCore::release) rather than freed.
  ~BufferHandles() {
    if (buffer || memory)
      core->release({memoryType, mapped != nullptr, size}, {buffer, memory, mapped});
  }
};

} // namespace

struct Buffer::Impl {
  std::shared_ptr<BufferHandles> handles;
  uint64_t recordedEpoch = 0; ///< epoch of the last recording that used it (0: none)
};

Buffer::~Buffer() = default;

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

namespace {

struct Pipeline {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t numBindings = 0;
  std::array<uint32_t, 3> localSize{1, 1, 1};
};

constexpr uint32_t kPushConstantBytes = 128;
/// Timestamp queries per profiling pool: two per dispatch.
constexpr uint32_t kProfileQueriesPerPool = 1024;
constexpr uint32_t kSetsPerPool = 512;
constexpr uint32_t kDescriptorsPerPool = kSetsPerPool * 8;

} // namespace

struct Context::Impl {
  std::shared_ptr<DeviceCore> core;
  DeviceInfo info;
  bool validation = false;
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
  uint32_t stagingType = UINT32_MAX; ///< host-visible coherent type
  double lastDeviceNs = 0;
  uint32_t timestampValidBits = 0;
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

  ~Impl() {
    if (!core || !core->device)
      return;
    vkDeviceWaitIdle(core->device);
    inFlight.clear();
    for (auto &kv : pipelines) {
      Pipeline &p = kv.second;
      vkDestroyPipeline(core->device, p.pipeline, nullptr);
      vkDestroyPipelineLayout(core->device, p.layout, nullptr);
      vkDestroyDescriptorSetLayout(core->device, p.setLayout, nullptr);
      vkDestroyShaderModule(core->device, p.module, nullptr);
    }
    for (VkDescriptorPool pool : pools)
      vkDestroyDescriptorPool(core->device, pool, nullptr);
    if (queryPool)
      vkDestroyQueryPool(core->device, queryPool, nullptr);
    for (VkQueryPool pool : profilePools)
      vkDestroyQueryPool(core->device, pool, nullptr);
    if (fence)
      vkDestroyFence(core->device, fence, nullptr);
    if (commandPool)
      vkDestroyCommandPool(core->device, commandPool, nullptr);
  }

  Status beginRecording() {
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
    return okStatus();
  }

  void barrier() {
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(commandBuffer,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &mb, 0, nullptr, 0, nullptr);
  }

  void use(Buffer &b) {
    b.impl_->recordedEpoch = epoch;
    inFlight.push_back(b.impl_->handles);
  }

  Expected<std::shared_ptr<BufferHandles>> makeBuffer(std::size_t bytes, uint32_t memoryType,
                                                      bool map) {
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
      return vkError("vkAllocateMemory", r, __LINE__);
    GRAFT_VK_CHECK(vkBindBufferMemory(core->device, h->buffer, h->memory, 0));
    if (map)
      GRAFT_VK_CHECK(vkMapMemory(core->device, h->memory, 0, VK_WHOLE_SIZE, 0, &h->mapped));
    ++stats.buffersAllocated;
    stats.bytesAllocated += bytes;
    return h;
  }

  Expected<VkDescriptorSet> allocateSet(VkDescriptorSetLayout layout) {
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
        return vkError("vkAllocateDescriptorSets", r, __LINE__);
      ++activePool; // this pool is full; the next (or a new) one
    }
  }

  /// Writes the next profiling timestamp (a pool is reset in the command
  /// buffer before its first query of a recording).
  Status profileTimestamp() {
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

  /// Reads the profiling queries of the submission that just completed.
  Status collectProfile() {
    if (profileQueries == 0)
      return okStatus();
    std::vector<uint64_t> ts(profileQueries);
    for (uint32_t first = 0; first < profileQueries; first += kProfileQueriesPerPool) {
      uint32_t n = std::min(kProfileQueriesPerPool, profileQueries - first);
      GRAFT_VK_CHECK(vkGetQueryPoolResults(
          core->device, profilePools[first / kProfileQueriesPerPool], 0, n, n * sizeof(uint64_t),
          ts.data() + first, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    }
    // Only timestampValidBits low bits count; the difference wraps within them.
    uint64_t mask =
        timestampValidBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << timestampValidBits) - 1;
    for (Profiled &p : profiled) {
      uint64_t ticks = (ts[p.before + 1] - ts[p.before]) & mask;
      timings.push_back(
          {std::move(p.variant), std::move(p.label), double(ticks) * info.timestampPeriodNs});
    }
    profiled.clear();
    profileQueries = 0;
    return okStatus();
  }

  Expected<const Pipeline *> pipeline(std::string_view variant) {
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
};

Expected<std::unique_ptr<Context>> Context::create(const ContextOptions &options) {
  std::unique_ptr<Context> ctx(new Context());
  ctx->impl_ = std::make_unique<Impl>();
  Impl &m = *ctx->impl_;
  m.core = std::make_shared<DeviceCore>();
  bool validation = options.validation || validationRequestedByDefault();
  bool debugUtils = false;
  GRAFT_TRY(m.core->instance, createInstance(validation, debugUtils));
  m.validation = validation;
  m.exactKernels = options.exactKernels;
  if (debugUtils) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(m.core->instance, "vkCreateDebugUtilsMessengerEXT"));
    if (create) {
      VkDebugUtilsMessengerCreateInfoEXT mci{};
      mci.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
      mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
      mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
      mci.pfnUserCallback = debugCallback;
      mci.pUserData = m.core.get();
      GRAFT_VK_CHECK(create(m.core->instance, &mci, nullptr, &m.core->messenger));
    }
  }
  GRAFT_TRY(std::vector<VkPhysicalDevice> devices, physicalDevices(m.core->instance));
  if (devices.empty())
    return Diagnostic::error("no Vulkan device found (install mesa-vulkan-drivers for lavapipe, "
                             "or set VK_ICD_FILENAMES)");
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < devices.size(); ++i)
    infos.push_back(describe(devices[i], i));
  int index = options.deviceIndex;
  if (index >= static_cast<int>(devices.size()))
    return Diagnostic::error(
        "--device " + std::to_string(index) + " does not exist: " + std::to_string(devices.size()) +
        " Vulkan device" + (devices.size() == 1 ? "" : "s") + " found (see `graft devices`)");
  if (index < 0) {
    for (const char *want : {"discrete-gpu", "integrated-gpu"})
      for (const DeviceInfo &d : infos)
        if (index < 0 && d.type == want)
          index = static_cast<int>(d.index);
    if (index < 0)
      index = 0;
  }
  m.core->physical = devices[static_cast<std::size_t>(index)];
  m.info = infos[static_cast<std::size_t>(index)];

  // A queue family with compute.
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(m.core->physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(m.core->physical, &nq, families.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      m.queueFamily = i;
      found = true;
    }
  if (!found)
    return Diagnostic::error("Vulkan device '" + m.info.name + "' has no compute queue");
  bool timestamps = m.info.timestampPeriodNs > 0 && families[m.queueFamily].timestampValidBits > 0;
  if (!timestamps)
    m.info.timestampPeriodNs = 0;
  m.timestampValidBits = timestamps ? families[m.queueFamily].timestampValidBits : 0;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = m.queueFamily;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDevice16BitStorageFeatures s16{};
  s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  s16.storageBuffer16BitAccess = m.info.storageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &s16;
  f2.features.shaderInt64 = m.info.shaderInt64;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = &f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  GRAFT_VK_CHECK(vkCreateDevice(m.core->physical, &dci, nullptr, &m.core->device));
  vkGetDeviceQueue(m.core->device, m.queueFamily, 0, &m.queue);

  // Memory types: device-local for buffers (host-visible too when the device
  // has such memory, as lavapipe and integrated GPUs do), and a
  // host-visible coherent type for staging otherwise.
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(m.core->physical, &mem);
  const VkMemoryPropertyFlags hostFlags =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & hostFlags) == hostFlags &&
        m.deviceLocalType == UINT32_MAX &&
        (m.info.type == "cpu" || m.info.type == "integrated-gpu")) {
      m.deviceLocalType = i;
      m.deviceLocalIsHostVisible = true;
    }
    if ((f & hostFlags) == hostFlags && m.stagingType == UINT32_MAX)
      m.stagingType = i;
  }
  if (m.deviceLocalType == UINT32_MAX)
    for (uint32_t i = 0; i < mem.memoryTypeCount; ++i)
      if ((mem.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
          m.deviceLocalType == UINT32_MAX)
        m.deviceLocalType = i;
  if (m.deviceLocalType == UINT32_MAX)
    m.deviceLocalType = m.stagingType;
  if (m.stagingType == UINT32_MAX)
    return Diagnostic::error("Vulkan device '" + m.info.name + "' has no host-visible memory");
  if (m.deviceLocalType == m.stagingType)
    m.deviceLocalIsHostVisible = true;

  VkCommandPoolCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpci.queueFamilyIndex = m.queueFamily;
  GRAFT_VK_CHECK(vkCreateCommandPool(m.core->device, &cpci, nullptr, &m.commandPool));
  VkCommandBufferAllocateInfo cbai{};
  cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cbai.commandPool = m.commandPool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  GRAFT_VK_CHECK(vkAllocateCommandBuffers(m.core->device, &cbai, &m.commandBuffer));
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  GRAFT_VK_CHECK(vkCreateFence(m.core->device, &fci, nullptr, &m.fence));
  if (timestamps) {
    VkQueryPoolCreateInfo qpci{};
    qpci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = 2;
    GRAFT_VK_CHECK(vkCreateQueryPool(m.core->device, &qpci, nullptr, &m.queryPool));
  }
  GRAFT_TRY(m.shaders, ShaderLibrary::builtin());
  return ctx;
}

Context::~Context() = default;

const DeviceInfo &Context::info() const {
  return impl_->info;
}
bool Context::validationEnabled() const {
  return impl_->validation;
}
ShaderLibrary &Context::shaders() {
  return *impl_->shaders;
}
bool Context::exactKernels() const {
  return impl_->exactKernels;
}
void Context::setExactKernels(bool exact) {
  impl_->exactKernels = exact;
}
bool Context::hasPendingWork() const {
  return impl_->pending;
}
double Context::lastSubmitDeviceNs() const {
  return impl_->lastDeviceNs;
}
ContextStats Context::stats() const {
  return impl_->stats;
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
void Context::setDispatchLabel(std::string label) {
  impl_->dispatchLabel = std::move(label);
}
std::vector<DispatchTiming> Context::takeDispatchTimings() {
  return std::exchange(impl_->timings, {});
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
  VkBufferCopy region{0, offset, bytes};
  vkCmdCopyBuffer(m.commandBuffer, staging->buffer, h.buffer, 1, &region);
  m.barrier();
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
  GRAFT_TRY(auto staging, m.makeBuffer(std::max<std::size_t>(bytes, 16), m.stagingType, true));
  GRAFT_CHECK_OK(m.beginRecording());
  VkBufferCopy region{offset, 0, bytes};
  vkCmdCopyBuffer(m.commandBuffer, h.buffer, staging->buffer, 1, &region);
  m.barrier();
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
  vkCmdFillBuffer(m.commandBuffer, buffer.impl_->handles->buffer, 0, VK_WHOLE_SIZE, pattern);
  m.barrier();
  m.use(buffer);
  m.pending = true;
  return okStatus();
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
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    if (!bindings[i])
      return Diagnostic::internal("null buffer bound to shader '" + std::string(variant) + "'");
    infos[i] = {bindings[i]->impl_->handles->buffer, 0, VK_WHOLE_SIZE};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    m.use(*bindings[i]);
  }
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
  m.barrier();
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
  if (m.queryPool)
    vkCmdWriteTimestamp(m.commandBuffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m.queryPool, 1);
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
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS)
      m.lastDeviceNs = double(ts[1] - ts[0]) * m.info.timestampPeriodNs;
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
