//===- Device.cpp - Instance, physical devices, the logical device ----------===//
//
// Device discovery (listDevices), the instance and its validation layer,
// and Context::create: the device, its compute queue, the memory types
// buffers use and the command objects. See VulkanCore.h.
//
//===----------------------------------------------------------------------===//
#include "VulkanCore.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

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

} // namespace

Diagnostic vkError(const char *call, VkResult r, const char *file, int line) {
  return Diagnostic::internal(std::string(call) + " failed with " + resultName(r) +
                              " (backends/vulkan/runtime/src/" + file + ":" + std::to_string(line) +
                              ")");
}

namespace {

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

/// Whether the loader (or, with `layer`, that layer) offers an instance extension.
bool instanceExtensionAvailable(const char *name, const char *layer = nullptr) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(layer, &n, exts.data()) != VK_SUCCESS)
    return false;
  return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties &e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

} // namespace

namespace {
/// Whether environment variable `name` is set to `value`.
bool envIs(const char *name, std::string_view value) {
  const char *env = std::getenv(name);
  return env && env == value;
}
} // namespace

bool validationRequestedByDefault() {
#ifdef GRAFT_VK_DEBUG
  return true;
#else
  return envIs("GRAFT_VK_VALIDATION", "1") || envIs("GRAFT_VK_VALIDATION", "sync");
#endif
}

bool synchronizationValidationRequestedByDefault() {
  return envIs("GRAFT_VK_VALIDATION", "sync");
}

bool stagedTransfersRequestedByDefault() {
  return envIs("GRAFT_VK_STAGED_TRANSFERS", "1");
}

DeviceCore::~DeviceCore() {
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

/// Creates an instance; `validation` and `sync` (the layer's synchronization
/// validation) are updated to whether they got enabled.
Expected<VkInstance> createInstance(bool &validation, bool &sync, bool &debugUtils) {
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
  sync = sync && validation &&
         instanceExtensionAvailable(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME, kValidationLayer);
  const VkValidationFeatureEnableEXT syncFeature =
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{};
  features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &syncFeature;
  if (sync)
    exts.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  if (sync)
    ci.pNext = &features;
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
    return vkError("vkCreateInstance", r, __FILE_NAME__, __LINE__);
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
  VkFormatProperties texel{};
  vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_UINT, &texel);
  info.storageTexelBuffers =
      (texel.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) != 0;
  info.maxTexelBufferElements = p.limits.maxTexelBufferElements;

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
    const bool compute = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    info.subgroupArithmetic =
        compute && (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
    info.subgroupClusteredAdd = info.subgroupArithmetic &&
                                (sg.supportedOperations & VK_SUBGROUP_FEATURE_CLUSTERED_BIT) != 0;
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
  // The driver ID where the device reports it (Vulkan 1.2), else the name
  // llvmpipe gives every lavapipe device ("llvmpipe (LLVM 15.0.6, 256 bits)").
  if (drv.driverID == VK_DRIVER_ID_MESA_LLVMPIPE || info.name.rfind("llvmpipe", 0) == 0)
    info.maxLoopIterations = 65535;
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.deviceLocalBytes = std::max<uint64_t>(info.deviceLocalBytes, mem.memoryHeaps[i].size);
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    const VkMemoryType &t = mem.memoryTypes[i];
    DeviceInfo::MemoryType m;
    m.deviceLocal = (t.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
    m.hostVisible = (t.propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0;
    m.hostCoherent = (t.propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    m.hostCached = (t.propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
    m.heap = t.heapIndex;
    m.heapBytes = t.heapIndex < mem.memoryHeapCount ? mem.memoryHeaps[t.heapIndex].size : 0;
    info.memoryTypes.push_back(m);
  }
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
  bool validation = false, sync = false, debugUtils = false;
  auto instance = createInstance(validation, sync, debugUtils);
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

Context::Impl::~Impl() {
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

Expected<std::unique_ptr<Context>> Context::create(const ContextOptions &options) {
  std::unique_ptr<Context> ctx(new Context());
  ctx->impl_ = std::make_unique<Impl>();
  Impl &m = *ctx->impl_;
  m.core = std::make_shared<DeviceCore>();
  bool validation =
      options.validation || options.synchronizationValidation || validationRequestedByDefault();
  bool sync = options.synchronizationValidation || synchronizationValidationRequestedByDefault();
  bool debugUtils = false;
  GRAFT_TRY(m.core->instance, createInstance(validation, sync, debugUtils));
  m.validation = validation;
  m.synchronizationValidation = sync;
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
  if (options.maxTexelBufferElements)
    m.info.maxTexelBufferElements =
        std::min(m.info.maxTexelBufferElements, options.maxTexelBufferElements);

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
  // The f16 variants keep float16_t values outside storage (store4's
  // f16vec4, the vectorized loads): their SPIR-V declares Float16, which
  // needs shaderFloat16 enabled (unsupportedDTypeReason keeps f16 off devices
  // without it).
  VkPhysicalDeviceShaderFloat16Int8Features f16{};
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16.shaderFloat16 = m.info.shaderFloat16;
  if (m.info.shaderFloat16)
    s16.pNext = &f16;
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
  // has such memory, as lavapipe and integrated GPUs do), and otherwise a
  // host-visible coherent type for upload staging (the first: on discrete
  // GPUs write-combined, fast to write) and one for read-back (cached where
  // the device has it: reading write-combined memory from the CPU is
  // uncached, a bus transaction per load).
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
    if ((f & hostFlags) == hostFlags && (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
        m.readbackType == UINT32_MAX)
      m.readbackType = i;
  }
  if (m.readbackType == UINT32_MAX)
    m.readbackType = m.stagingType;
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
  if (options.stagedTransfers || stagedTransfersRequestedByDefault())
    m.deviceLocalIsHostVisible = false;

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
bool Context::synchronizationValidationEnabled() const {
  return impl_->synchronizationValidation;
}
bool Context::exactKernels() const {
  return impl_->exactKernels;
}
void Context::setExactKernels(bool exact) {
  impl_->exactKernels = exact;
}
bool Context::hostMappedBuffers() const {
  return impl_->deviceLocalIsHostVisible;
}
ContextStats Context::stats() const {
  return impl_->stats;
}

} // namespace graft::vk
