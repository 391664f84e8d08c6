//===- Partitioner.h - Which nodes go to the Vulkan device -*- C++ -*-===//
//
// Decides, for a target device profile, which nodes of a graph run in Vulkan
// programs and groups them into maximal convex partitions:
//
//  * op support is data (backends/vulkan/support/ops.yaml: dtypes per
//    argument, packed arguments, per-op checks such as D % 32 == 0 for
//    embedding_q4gsw or in_channels % 4 for the linears), plus the executor's
//    kernel checks, plus every buffer fitting the target's
//    maxStorageBufferRange (symbolic dims at their upper bound);
//  * target profiles are data too (support/targets.yaml: lavapipe, adreno,
//    mali), or the running device (`host`);
//  * co-location: sym_constrain_range_for_size / _assert_scalar stay with the
//    _local_scalar_dense / select_as_symint (+ the select_copy feeding it)
//    they constrain and the slice_copy / view nodes using that scalar; if any
//    member of such a group cannot run on the device, the whole group stays
//    on the CPU (never split: ExecuTorch PR #18957's crash);
//  * partitions are convex (no path leaves a partition and re-enters it) and
//    maximal under greedy merging along edges (Boost.Graph).
//
// Every node left on the CPU carries a reason.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/support/Expected.h"
#include "graft/vulkan/Context.h"

#include <string>
#include <vector>

namespace graft::vk {

/// A named device profile (limits the partitioner checks).
struct TargetProfile {
  std::string name;
  std::string description;
  DeviceInfo device; ///< the limits and features that matter
  /// Run the bit-exact kernels (ContextOptions::exactKernels): the
  /// reference's accumulation order, for debugging numerics. Set by
  /// `exactKernels: true` in targets.yaml or the `+exact` suffix of a target
  /// name (`graft compile --target lavapipe+exact`, or --exact-kernels).
  bool exactKernels = false;
};

/// A target name split into its profile and its kernel-policy suffix:
/// "lavapipe+exact" is {"lavapipe", true}.
struct TargetName {
  std::string profile;
  bool exactKernels = false;
};
TargetName parseTargetName(const std::string &name);

/// Profiles from support/targets.yaml, by name.
Expected<std::vector<TargetProfile>> builtinTargets();
/// A builtin profile by name, or `host`: the running device (`deviceIndex`
/// as for --device; -1 picks as Context does). A `+exact` suffix selects the
/// bit-exact kernels and stays part of the returned profile's name, so a
/// program compiled for it records it.
Expected<TargetProfile> findTarget(const std::string &name, int deviceIndex = -1);
/// Whether a program compiled for `target` runs the bit-exact kernels (the
/// `+exact` suffix, or a builtin profile with exactKernels); for `graft run`,
/// without opening a device.
bool targetUsesExactKernels(const std::string &target);

struct PartitionNode {
  const Node *node = nullptr;
  bool host = false; ///< a host-side scalar step of the device program
};

struct Partition {
  int id = 0;
  std::vector<PartitionNode> nodes; ///< in graph order
};

struct CpuNode {
  const Node *node = nullptr;
  std::string reason;
};

struct PartitionReport {
  std::string target;
  std::size_t totalNodes = 0;
  std::vector<Partition> partitions;
  std::vector<CpuNode> cpuNodes; ///< in graph order
  /// Fraction of nodes inside partitions.
  double coverage() const;
};

/// The op targets support/ops.yaml declares, sorted.
std::vector<std::string> supportedOps();

/// Why `node` cannot run on `target` by the op-support data and limits
/// alone (ignoring co-location), or empty.
std::string supportReason(const Node &node, const TargetProfile &target);

/// Partitions `graph` for `target`.
Expected<PartitionReport> partitionGraph(const Graph &graph, const TargetProfile &target);

/// Human-readable and JSON renderings of a report.
std::string formatReport(const PartitionReport &report);
std::string reportJson(const PartitionReport &report);

} // namespace graft::vk
