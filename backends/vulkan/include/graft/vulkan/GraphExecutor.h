//===- GraphExecutor.h - Run a whole graph on a Vulkan device -*- C++ -*-===//
//
// Maps every node of a graph to a Vulkan kernel (Kernels.h), to a host-side
// scalar step that is part of the device program (sym_size,
// _local_scalar_dense / select_as_symint reading a small buffer, the
// assertion ops), or, for nodes no kernel covers, to a CPU fallback that runs
// the node through the reference interpreter's kernel (downloading its
// tensor operands and uploading its results). The plan says which, and why.
//
//   auto ctx = vk::Context::create();
//   auto exec = vk::GraphExecutor::create(**ctx, graph);
//   auto outputs = (*exec)->run(inputs);          // same order as Interpreter::run
//
// Constants are uploaded once, on first use; packed quantized weights are
// prepacked into the kernels' layouts then (one prepack per constant and
// layout, so a tied embedding / lm_head weight is uploaded once per layout).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/vulkan/Context.h"

#include <memory>
#include <string>
#include <vector>

namespace graft::vk {

/// Where one node runs.
enum class Placement {
  Device,      ///< a Vulkan kernel (one or more dispatches), or a pure view (no dispatch)
  Host,        ///< a host-side scalar step of the device program (no tensor compute)
  CpuFallback, ///< the reference interpreter's kernel on downloaded operands
};
std::string_view name(Placement placement);

struct NodePlan {
  const Node *node = nullptr;
  Placement placement = Placement::Device;
  std::string kernel; ///< what runs it: "linear_q4gsw", "view", "host", "interpreter"
  std::string reason; ///< why a CPU fallback (empty otherwise)
};

struct ExecutorOptions {
  /// When false, a node without a Vulkan kernel makes create() fail.
  bool allowCpuFallback = true;
};

struct ExecutorStats {
  uint64_t dispatches = 0;
  uint64_t flushes = 0;
  uint64_t cpuFallbackNodes = 0; ///< executed in the last run
  uint64_t bytesUploaded = 0;
  uint64_t bytesDownloaded = 0;
};

class GraphExecutor {
public:
  /// Plans the graph (verifying every node has a schema and valid arguments).
  static Expected<std::unique_ptr<GraphExecutor>> create(Context &ctx, const Graph &graph,
                                                         ExecutorOptions options = {});
  ~GraphExecutor();

  const std::vector<NodePlan> &plan() const { return plan_; }
  std::size_t numCpuFallbackNodes() const;

  /// Runs the graph. `userInputs` are in graph user-input order, as for
  /// Interpreter::run; results are in graph-output order.
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue> &userInputs);
  /// Counters of the last run.
  const ExecutorStats &stats() const { return stats_; }

  struct State;

private:
  GraphExecutor() = default;
  Context *ctx_ = nullptr;
  const Graph *graph_ = nullptr;
  std::vector<NodePlan> plan_;
  std::unique_ptr<State> state_;
  ExecutorStats stats_;
};

/// Why `node` cannot run as a Vulkan kernel on a device with these
/// properties (empty when it can). The same check GraphExecutor::create uses.
std::string vulkanUnsupportedReason(const Node &node, const DeviceInfo &device);
/// The plan GraphExecutor::create would give `node` on a device with these
/// properties, without a Context (for compiling ahead of time): placement,
/// kernel, and the CPU-fallback reason.
NodePlan planNode(const Node &node, const DeviceInfo &device);
/// Every op target the executor has a device or host lowering for.
std::vector<std::string> vulkanLoweredOps();

/// Max abs / rel error between two sets of runtime values (tensors compared
/// elementwise in f64; non-finite values must match exactly).
struct Comparison {
  double maxAbsError = 0;
  /// |a - b| / max(|b|, 1e-3 * max|b| of that output), over elements.
  double maxRelError = 0;
  int64_t mismatchedNonFinite = 0;
  std::string firstProblem; ///< a shape/dtype/kind mismatch, when any
};
Comparison compareValues(const std::vector<RuntimeValue> &actual,
                         const std::vector<RuntimeValue> &expected);

} // namespace graft::vk
