//===- OpSupport.h - What the Vulkan ops can run, for the partitioner -*- C++ -*-===//
//
// The small interface between the ops (backends/vulkan/ops, one family per
// folder) and whoever decides placement without running anything: the
// partitioner (partitioner/Partitioner.cpp) and the compiler's planner. It
// answers "can this node run on a device with these properties, and if not,
// why" and "how is a dtype stored on the device", and nothing about how a
// node runs (GraphExecutor.h, Kernels.h). scripts/layering.txt keeps the
// partitioner on this side: it may include this header, not those.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/DType.h"
#include "graft/vulkan/Context.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace graft {
class Node;
} // namespace graft

namespace graft::vk {

/// How a logical dtype is stored on the device.
enum class DeviceElem { F32, F16, I32 };
/// nullopt when the dtype has no device representation (bf16, f64, ...).
std::optional<DeviceElem> deviceElem(DType dtype);
std::size_t deviceElemSize(DeviceElem elem);
/// Why `dtype` cannot live on the device, or empty when it can.
std::string unsupportedDTypeReason(const DeviceInfo &device, DType dtype);

/// Why `node` cannot run as a Vulkan kernel on a device with these
/// properties (empty when it can): its op family's support check, after
/// every tensor operand and result has a device representation. The same
/// check GraphExecutor::create uses.
std::string vulkanUnsupportedReason(const Node &node, const DeviceInfo &device);
/// Every op target the ops have a device or host lowering for, sorted.
std::vector<std::string> vulkanLoweredOps();

} // namespace graft::vk
