//===- GraphExecutor.h - Run a whole graph on a Vulkan device -*- C++ -*-===//
//
// Runs a graph the way its plan says: every node is a Vulkan kernel, a
// host-side scalar step that is part of the device program (sym_size,
// _local_scalar_dense / select_as_symint reading a small buffer, the
// assertion ops), or a node the plan put on the CPU, which runs the
// reference interpreter's kernel (downloading its tensor operands and
// uploading its results).
//
//   auto ctx = vk::Context::create();
//   auto exec = vk::GraphExecutor::create(**ctx, graph);
//   auto outputs = (*exec)->run(inputs);          // same order as Interpreter::run
//
// The plan is a compiled program's (ExecutorOptions::plan, from
// compiledPlan()), or, without one, "every node on the device". The executor
// never re-decides it: a node planned for the device that cannot run on this
// device is an error at create() naming the node and why, unless the caller
// opts in to a CPU fallback (ExecutorOptions::allowCpuFallback, `graft run
// --allow-cpu-fallback`); fallback nodes are reported as such.
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
#include "graft/vulkan/OpSupport.h"

#include <memory>
#include <string>
#include <vector>

namespace graft {
struct Program;
} // namespace graft

namespace graft::vk {

/// Where one node runs.
enum class Placement {
  Device, ///< a Vulkan kernel (one or more dispatches), or a pure view (no dispatch)
  Host,   ///< a host-side scalar step of the device program (no tensor compute)
  Cpu,    ///< planned for the CPU: the reference interpreter's kernel on downloaded operands
  /// Planned for the device (or host) but unable to run on this device, run
  /// on the CPU as Cpu is; only with ExecutorOptions::allowCpuFallback.
  CpuFallback,
};
/// "device", "host", "cpu" (the program file's spellings) or "cpu-fallback".
std::string_view name(Placement placement);

struct NodePlan {
  const Node *node = nullptr;
  Placement placement = Placement::Device;
  std::string kernel; ///< what runs it: "linear_q4gsw", "view", "host", "interpreter"
  std::string reason; ///< why the node runs on the CPU (empty otherwise)
};

/// One node's placement in a compiled plan (a program file's PLAN entry).
struct PlannedPlacement {
  Placement placement = Placement::Device; ///< Device, Host or Cpu
  std::string reason;                      ///< why the plan put the node on the CPU
  std::string target; ///< the op it was planned for; checked against the graph when set
};

struct ExecutorOptions {
  /// The plan to follow, one entry per graph node in order (compiledPlan()
  /// of a program file). Empty: every node is planned for the device (or,
  /// for scalar steps, the host), as `graft run-vk` runs a graph.
  std::vector<PlannedPlacement> plan;
  /// A node planned for the device that cannot run there makes create()
  /// fail, naming the node and why. When true it runs on the CPU through the
  /// reference interpreter instead (Placement::CpuFallback, with the reason).
  bool allowCpuFallback = false;
  /// What happens to the graph's mutable buffers (a KV cache: the buffers of
  /// BUFFER_MUTATION outputs and of in-place ops) between run() calls.
  enum class MutableBuffers {
    /// Every run starts from the graph's data, as Interpreter::run without a
    /// state does; run() returns every graph output, the buffer mutations
    /// downloaded (for comparing whole runs).
    PerRun,
    /// The buffers live on the device across runs and mutations are applied
    /// there in place, as Interpreter::run with a MutableState does: decode
    /// steps continue the cache. run() returns only the user outputs, in
    /// graph-output order; a buffer is downloaded only when mutableBuffer()
    /// or mutableState() asks for it.
    OnDevice,
  };
  MutableBuffers mutableBuffers = MutableBuffers::PerRun;
};

/// The plan a program file records for its graph, validated against it (one
/// entry per node, matching ops, known placements).
Expected<std::vector<PlannedPlacement>> compiledPlan(const Program &program);

struct ExecutorStats {
  uint64_t dispatches = 0;
  uint64_t flushes = 0;
  uint64_t cpuNodes = 0;         ///< planned CPU nodes executed in the last run
  uint64_t cpuFallbackNodes = 0; ///< CPU-fallback nodes executed in the last run
  uint64_t bytesUploaded = 0;
  uint64_t bytesDownloaded = 0;
  uint64_t buffersCreated = 0; ///< device buffers the pool could not supply
  double flushMs = 0;          ///< host time in Context::flush (ContextStats::flushNs)
  /// Device time of the run's submissions, first command to last
  /// (ContextStats::submittedDeviceNs): dispatches plus idle gaps between them.
  double submittedDeviceMs = 0;
};

class GraphExecutor {
public:
  /// Binds every node to what runs it under `options.plan` (verifying every
  /// node has a schema and valid arguments). Fails, naming each node, when a
  /// node planned for the device cannot run on `ctx`'s device and
  /// `options.allowCpuFallback` is false.
  static Expected<std::unique_ptr<GraphExecutor>> create(Context &ctx, const Graph &graph,
                                                         ExecutorOptions options = {});
  ~GraphExecutor();

  const std::vector<NodePlan> &plan() const { return plan_; }
  /// Nodes the plan put on the CPU (Placement::Cpu).
  std::size_t numCpuNodes() const;
  /// Nodes planned for the device that run on the CPU by the opt-in fallback.
  std::size_t numCpuFallbackNodes() const;

  /// Runs the graph. `userInputs` are in graph user-input order, as for
  /// Interpreter::run; results are in graph-output order (only the user
  /// outputs under MutableBuffers::OnDevice).
  Expected<std::vector<RuntimeValue>> run(const std::vector<RuntimeValue> &userInputs);
  /// Counters of the last run.
  const ExecutorStats &stats() const { return stats_; }

  /// The FQNs of the graph's mutable buffers, in graph-input order.
  std::vector<std::string> mutableBufferNames() const;
  /// The current value of a mutable buffer, downloaded: the graph's data
  /// before the first OnDevice run (or after resetMutableBuffers()).
  Expected<Tensor> mutableBuffer(std::string_view fqn);
  /// Every mutable buffer, downloaded, in the interpreter's form (to go on
  /// with Interpreter::run, or to compare with its state).
  Expected<MutableState> mutableState();
  /// Drops the device values: the next run starts from the graph's data.
  void resetMutableBuffers();

  struct State;

private:
  GraphExecutor() = default;
  Context *ctx_ = nullptr;
  const Graph *graph_ = nullptr;
  std::vector<NodePlan> plan_;
  ExecutorOptions::MutableBuffers mutableMode_ = ExecutorOptions::MutableBuffers::PerRun;
  std::unique_ptr<State> state_;
  ExecutorStats stats_;
};

/// Where `node` can run on a device with these properties, without a Context
/// (for compiling ahead of time): its lowering's placement and kernel, or
/// Placement::Cpu with the reason it cannot run on the device.
NodePlan planNode(const Node &node, const DeviceInfo &device);

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
