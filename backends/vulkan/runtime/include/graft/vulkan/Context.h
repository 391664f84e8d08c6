//===- Context.h - A Vulkan device, its buffers and compute dispatches -*- C++ -*-===//
//
// The runtime layer every kernel is written against: pick a physical device
// (`graft devices` lists them, `--device N` selects), allocate storage
// buffers, upload and read back bytes, and record compute dispatches of
// shader-library variants into a command buffer that `flush()` submits.
//
// Ownership: a Context owns the instance/device through a shared core that
// every Buffer also holds, so buffers may outlive the Context object. Buffers
// bound to recorded dispatches stay alive until the next flush completes.
// Vulkan headers stay private to the backend (pimpl).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Expected.h"
#include "graft/vulkan/ShaderLibrary.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graft::vk {

/// A physical device as the loader reports it.
struct DeviceInfo {
  uint32_t index = 0;
  std::string name;
  std::string type;       ///< "discrete-gpu", "integrated-gpu", "virtual-gpu", "cpu", "other"
  std::string apiVersion; ///< "1.3.230"
  std::string driver;     ///< driver name and info when the device reports them
  uint32_t vendorId = 0;
  uint32_t deviceId = 0;
  uint64_t maxStorageBufferRange = 0; ///< bytes
  uint32_t maxComputeWorkGroupCount[3] = {0, 0, 0};
  uint32_t maxComputeWorkGroupInvocations = 0;
  uint32_t maxComputeSharedMemorySize = 0;
  uint32_t maxPushConstantsSize = 0;
  uint32_t maxImageDimension2D = 0;
  uint32_t maxImageDimension3D = 0;
  uint64_t deviceLocalBytes = 0; ///< largest device-local heap
  /// The device's memory types in Vulkan's order: which the runtime can
  /// keep buffers in (device-local), stage uploads through (host-visible
  /// coherent) and read back through (host-cached where there is one).
  struct MemoryType {
    bool deviceLocal = false, hostVisible = false, hostCoherent = false, hostCached = false;
    uint32_t heap = 0;
    uint64_t heapBytes = 0;
  };
  std::vector<MemoryType> memoryTypes;
  bool storageBuffer16BitAccess = false;
  bool storageBuffer8BitAccess = false;
  bool shaderFloat16 = false;
  bool shaderInt64 = false;
  /// Invocations per subgroup (0: unknown, a Vulkan 1.0 device).
  uint32_t subgroupSize = 0;
  /// Compute shaders may use subgroupAdd (arithmetic subgroup operations in
  /// the compute stage).
  bool subgroupArithmetic = false;
  /// Compute shaders may use subgroupClusteredAdd (arithmetic and clustered
  /// subgroup operations in the compute stage).
  bool subgroupClusteredAdd = false;
  float timestampPeriodNs = 0; ///< 0: no timestamps on the compute queue
  /// The most loop iterations one invocation may run, all its loops
  /// together (0: no limit). llvmpipe (lavapipe) ends every loop of an
  /// invocation, silently, once their iterations reach 65535: Mesa gallivm
  /// keeps one counter per shader function, shared by every loop and never
  /// reset (lp_bld_limits.h LP_MAX_TGSI_LOOP_ITERATIONS, decremented in
  /// lp_exec_endloop, lp_bld_ir_common.c). GPUs have no such limit.
  uint32_t maxLoopIterations = 0;
  /// Shaders may read R32G32B32A32_UINT storage texel buffers (a `rgba32ui`
  /// uimageBuffer binding; the runtime creates the buffer views). llvmpipe
  /// reads a texel per lane through its image path, several times cheaper
  /// than its lane-by-lane storage-buffer loads (docs/benchmarks.md).
  bool storageTexelBuffers = false;
  /// The most texels one such view may hold (Vulkan guarantees 65536).
  uint32_t maxTexelBufferElements = 0;
};

/// Lists the Vulkan devices. No loader or no driver gives an empty list;
/// an instance that fails for another reason is an error.
Expected<std::vector<DeviceInfo>> listDevices();

struct ContextOptions {
  /// Index into listDevices(); -1 picks the first discrete GPU, else the
  /// first integrated GPU, else the first device.
  int deviceIndex = -1;
  /// Enable VK_LAYER_KHRONOS_validation when it is installed. Defaults to on
  /// in Debug builds and when GRAFT_VK_VALIDATION=1 (or sync).
  bool validation = false;
  /// Validation plus the layer's synchronization validation: a missing or
  /// insufficient barrier between dispatches, copies and fills is a
  /// validation error. Defaults to on when GRAFT_VK_VALIDATION=sync.
  bool synchronizationValidation = false;
  /// Run the bit-exact kernels (the reference interpreter's accumulation
  /// order, no FMA) instead of the bandwidth-oriented ones, whose reordered
  /// accumulation stays within the bounds docs/numerics.md states. A target
  /// profile's `exactKernels` (graft compile --exact-kernels) sets it.
  bool exactKernels = false;
  /// Lowers DeviceInfo::maxTexelBufferElements to this (0: the device's own):
  /// tests run the storage-buffer fallbacks that kernels take on devices
  /// whose limit a tensor exceeds.
  uint32_t maxTexelBufferElements = 0;
  /// Treats the device's memory as a discrete GPU's even where it is
  /// host-visible (lavapipe, integrated GPUs): buffers are not mapped, and
  /// uploads and downloads go through staging copies recorded with the
  /// dispatches. Tests run the discrete-GPU data path this way; defaults to
  /// on when GRAFT_VK_STAGED_TRANSFERS=1.
  bool stagedTransfers = false;
};

/// Whether GRAFT_VK_STAGED_TRANSFERS=1 asks for ContextOptions::stagedTransfers.
bool stagedTransfersRequestedByDefault();

class Context;
struct DeviceCore;

/// A storage buffer. Move-only; freed when the last owner drops it (after
/// any recorded dispatch that uses it has completed).
class Buffer {
public:
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  std::size_t size() const { return size_; }

private:
  friend class Context;
  struct Impl;
  Buffer() = default;
  std::unique_ptr<Impl> impl_;
  std::size_t size_ = 0;
};

/// The device time of one dispatch (Context::setProfiling).
struct DispatchTiming {
  std::string variant; ///< the shader variant dispatched
  std::string label; ///< Context::setDispatchLabel at record time (the executor: the node's kernel)
  double ns = 0;     ///< device time, timestampPeriod applied
};

/// Counters a Context keeps, for tests and benchmarks.
struct ContextStats {
  uint64_t dispatches = 0;
  uint64_t flushes = 0;
  /// Barriers recorded between commands: one where a command depends on one
  /// recorded since the last barrier (every command with setSerialCommands
  /// or profiling on).
  uint64_t barriers = 0;
  uint64_t buffersAllocated = 0;
  /// Of buffersAllocated, how many reused a released buffer of the same size.
  uint64_t buffersReused = 0;
  uint64_t bytesAllocated = 0;
  uint64_t bytesUploaded = 0;
  uint64_t bytesDownloaded = 0;
  /// Host time inside flush(): submitting, waiting for the device (its work
  /// included) and reading back timestamps and status flags. A run's wall
  /// time minus this is what the host spent recording.
  double flushNs = 0;
  /// Device time of the submissions, each from its first command to its last
  /// (timestamp queries; 0 where the device has none): the dispatches and
  /// the device's idle gaps between them. flushNs minus this is the host's
  /// submit and wake-up latency.
  double submittedDeviceNs = 0;
};

class Context {
public:
  /// Creates an instance and a logical device with one compute queue.
  static Expected<std::unique_ptr<Context>> create(const ContextOptions &options = {});
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  const DeviceInfo &info() const;
  bool validationEnabled() const;
  /// Whether the validation layer also checks synchronization (barriers).
  bool synchronizationValidationEnabled() const;
  ShaderLibrary &shaders();
  /// Whether the launchers pick the bit-exact kernels (ContextOptions).
  bool exactKernels() const;
  void setExactKernels(bool exact);
  /// Whether buffers live in memory the host maps (lavapipe, integrated
  /// GPUs) rather than behind staging copies (discrete GPUs,
  /// ContextOptions::stagedTransfers).
  bool hostMappedBuffers() const;

  /// A buffer of at least `bytes` (a zero-size request gets a small one).
  /// Exceeding the device's maxStorageBufferRange is a user error.
  Expected<std::shared_ptr<Buffer>> allocate(std::size_t bytes);
  /// Writes bytes at `offset`. Pending dispatches that use the buffer are
  /// flushed first, so the write never races them.
  Status upload(Buffer &buffer, const void *data, std::size_t bytes, std::size_t offset = 0);
  /// Reads bytes at `offset`, flushing pending work first.
  Status download(const Buffer &buffer, void *data, std::size_t bytes, std::size_t offset = 0);
  /// A zeroed 16-byte host-visible buffer that a kernel sets to non-zero to
  /// report bad input it cannot report otherwise (an index out of range);
  /// the next flush() checks it and fails with the user error `message`.
  Expected<std::shared_ptr<Buffer>> statusBuffer(std::string message);
  /// Fills the buffer with a repeated 32-bit pattern (recorded, like a dispatch).
  Status fill(Buffer &buffer, uint32_t pattern);

  /// Records a dispatch of `variant` (compiled on first use) with
  /// `bindings` as storage buffers 0..n-1, `push` as push constants, and
  /// `groups` workgroups. A memory barrier follows every dispatch, so
  /// consecutive dispatches see each other's writes.
  Status dispatch(std::string_view variant, const std::vector<Buffer *> &bindings, const void *push,
                  std::size_t pushBytes, std::array<uint32_t, 3> groups);
  /// Dispatches enough workgroups for `invocations` threads along x (split
  /// into a 2-D grid beyond the device's x limit); the shader linearises
  /// gl_GlobalInvocationID with linearId() from common.glslh.
  Status dispatch1D(std::string_view variant, const std::vector<Buffer *> &bindings,
                    const void *push, std::size_t pushBytes, uint64_t invocations);
  /// Submits everything recorded and waits for it.
  Status flush();
  /// Whether dispatches are recorded but not yet submitted.
  bool hasPendingWork() const;

  /// Device time of the dispatches between the last two flushes in
  /// nanoseconds, when the device has timestamps (0 otherwise).
  double lastSubmitDeviceNs() const;

  /// Times every dispatch recorded from now on with a pair of timestamp
  /// queries: the end of everything recorded before it to its own end.
  /// While profiling, every command follows a barrier (as under
  /// setSerialCommands), so the dispatches run one at a time and their times
  /// add up to the submission's. A device without timestamps on its compute
  /// queue (timestampValidBits 0 or timestampPeriod 0) is a user error.
  Status setProfiling(bool on);
  bool profiling() const;
  /// Puts a barrier between every two commands instead of only where one
  /// depends on another (ContextStats::barriers): benchmarks that record
  /// many launches of one kernel into a submission use it so the launches
  /// run one after another, as a model's dependent steps do, rather than
  /// overlapping.
  void setSerialCommands(bool on);
  /// A label stored with every dispatch recorded after it (for grouping).
  void setDispatchLabel(std::string label);
  /// The timings of the dispatches submitted since the last call, in
  /// recording order; clears them.
  std::vector<DispatchTiming> takeDispatchTimings();

  ContextStats stats() const;

private:
  struct Impl;
  Context() = default;
  std::unique_ptr<Impl> impl_;
};

/// Whether GRAFT_VK_VALIDATION=1 or sync (or a Debug build) asks for validation.
bool validationRequestedByDefault();
/// Whether GRAFT_VK_VALIDATION=sync asks for synchronization validation too.
bool synchronizationValidationRequestedByDefault();

} // namespace graft::vk
