//===- Lowering.h - Node -> kernel lowerings of the graph executor -*- C++ -*-===//
//
// Internal to the backend: the interface between the graph executor and the
// op families. A Lowering says, for one op target, whether a node can run on
// the device (a static check on prototypes and constant-ness, returning the
// reason when it cannot) and how to run it (reading its arguments through
// NodeArgs, which uploads constants and prepacks weights on first use).
//
// Each family (ops/<family>/<Family>.cpp: its checks, lowerings and
// launchers, next to its shaders) adds its lowerings to the table through
// one add*Lowerings function; Registry.cpp calls them, in a list, the first
// time the table is needed (no static-initialisation order to depend on).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "KernelCommon.h"

#include "graft/ops/BoundArgs.h"
#include "graft/vulkan/GraphExecutor.h"
#include "graft/vulkan/Kernels.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace graft::vk {

/// A value during execution: a tensor on the device and/or the host, or a
/// scalar. A CPU-fallback result stays on the host until a device kernel
/// needs it; a device tensor is downloaded only when the host needs it.
struct Slot {
  DeviceTensor device;
  Tensor host;
  RuntimeValue scalar; ///< for SymInt / SymFloat / SymBool values
  bool isTensor = false;
};

/// A node result as a lowering produces it.
using LoweredValue = std::variant<DeviceTensor, Tensor, int64_t, double, bool>;

struct Lowering;

/// What the executor decided for one node at create() time.
struct NodeInfo {
  std::optional<BoundArgs> bound;
  const Lowering *lowering = nullptr;
  std::vector<const Value *> releaseAfter; ///< values whose last use is this node
};

/// Per-executor state: the plan, the environment and the caches of uploaded
/// constants.
struct GraphExecutor::State {
  std::vector<NodeInfo> nodes;
  Context *ctx = nullptr;
  const Graph *graph = nullptr;
  std::unordered_map<const Value *, Slot> env;
  std::map<const Value *, DeviceTensor> constants;
  std::map<std::pair<const Value *, bool>, PackedQ4Weight> q4;
  std::map<const Value *, PackedQ8Weight> q8;
  std::map<const Value *, RawBytes> raw;
  /// Content hash -> uploaded packing, so byte-identical constants with
  /// different FQNs (a tied embedding / lm_head) share one device copy.
  std::map<std::pair<uint64_t, std::string>, PackedQ4Weight> q4ByHash;
  std::map<uint64_t, RawBytes> rawByHash;
  /// The graph's mutable buffers (Buffer inputs named by a BUFFER_MUTATION
  /// output or mutated by an in-place op), by FQN, found at create().
  std::map<const Value *, std::string> mutableInputs;
  /// A view whose readers are all device views is not materialized: it is
  /// kept here as sizes / strides / offset into `base` (its env slot holds
  /// the base), and its readers compose with it. Cleared every run.
  struct DeferredView {
    DeviceTensor base;
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
  };
  std::unordered_map<const Value *, DeferredView> deferredViews;
  /// Nodes planned as device views (kernel "view"), found at create().
  std::set<const Node *> deviceViews;
  /// Whether `node`'s result may stay a deferred view: it is no graph
  /// output and every reader is a device view.
  bool deferrable(const Node &node) const;
  /// Their current device values: uploaded from the graph's data on first
  /// use, written in place by in-place kernels, replaced by a run's
  /// BUFFER_MUTATION results. Kept across runs under
  /// MutableBuffers::OnDevice, cleared before each run otherwise.
  std::map<const Value *, DeviceTensor> mutableValues;

  /// The device tensor of a value (uploading constants / host tensors).
  Expected<DeviceTensor> deviceTensor(const Value *v);
  /// The host tensor of a value (downloading device tensors).
  Expected<Tensor> hostTensor(const Value *v);
  /// A constant's data, or null when `v` is not a constant graph input.
  const Tensor *constantData(const Value *v) const;
  Expected<PackedQ4Weight> packedQ4(const Value *v, bool lowNibbleFirst);
  Expected<PackedQ8Weight> packedQ8(const Value *v);
  Expected<RawBytes> rawBytes(const Value *v);
  /// Makes `data` the value of a mutable buffer, or of any other value an
  /// in-place op rebinds (a CPU node's result).
  Status rebindMutated(const Value *target, Tensor data);
  /// Makes the result of a run's BUFFER_MUTATION output the buffer's value,
  /// on the device (no copy when the result already is the buffer).
  Status commitBufferMutation(const Value *buffer, const Value *result);
};

/// Argument access for a lowering's run function.
class NodeArgs {
public:
  NodeArgs(GraphExecutor::State &state, const Node &node, const BoundArgs &bound)
      : state_(state), node_(node), bound_(bound) {}

  Context &ctx() { return *state_.ctx; }
  GraphExecutor::State &state() { return state_; }
  const Node &node() const { return node_; }
  const BoundArgs &bound() const { return bound_; }

  /// The Argument for a schema name (None when the matched schema lacks it).
  const Argument &arg(std::string_view name) const;
  /// The Value of a tensor argument, or null (None / not a value).
  const Value *value(std::string_view name) const;
  Expected<DeviceTensor> tensor(std::string_view name);
  /// nullopt for None.
  Expected<std::optional<DeviceTensor>> optionalTensor(std::string_view name);
  Expected<std::vector<DeviceTensor>> tensorList(std::string_view name);
  /// The device tensor an in-place kernel writes for mutable argument
  /// `name` (Tensor(a!)): a mutable buffer's own storage, so the update
  /// stays on the device and reaches every later reader; any other target
  /// (a user input, an intermediate) is first copied and rebound to the
  /// copy, as the interpreter rebinds it, so values sharing its buffer keep
  /// their data. Checked by graft::mutationTarget, as for the interpreter.
  Expected<DeviceTensor> mutableTensor(std::string_view name);
  /// An Int / SymInt (resolved) / Bool argument; nullopt for None or others.
  std::optional<int64_t> integer(std::string_view name) const;
  /// A number (Int, Float, Bool, or a resolved symbolic scalar).
  std::optional<double> number(std::string_view name) const;
  std::optional<std::vector<int64_t>> intList(std::string_view name) const;
  bool isNone(std::string_view name) const;
  DType outDType(unsigned i = 0) const { return node_.output(i)->proto().dtype; }
  /// A user error naming the node.
  Diagnostic error(const std::string &message) const;

private:
  std::optional<RuntimeValue> resolveScalar(const Argument &a) const;
  GraphExecutor::State &state_;
  const Node &node_;
  const BoundArgs &bound_;
};

/// A lowering's results, and the common case of one device tensor.
using Results = Expected<std::vector<LoweredValue>>;
inline Results one(DeviceTensor t) {
  return std::vector<LoweredValue>{std::move(t)};
}
/// The prototype of tensor argument `name`; null when it is absent, None or
/// not a tensor.
const TensorProto *protoOf(const BoundArgs &b, std::string_view name);
/// one() of a launcher's result, passing its failure on: the run functions'
/// common ending `return one(binary(a.ctx(), ...));`.
inline Results one(Expected<DeviceTensor> t) {
  if (!t.ok())
    return t.takeFailure();
  return one(std::move(*t));
}

/// In a check function: returns the reason `expr` gives, when it gives one
/// (checks are chains of such reasons).
#define GRAFT_VK_REASON(expr)                                                                      \
  do {                                                                                             \
    if (std::string graftReason_ = (expr); !graftReason_.empty())                                  \
      return graftReason_;                                                                         \
  } while (0)

// Checks several families share (Registry.cpp).

/// Whether argument `name` is a constant graph input with data.
bool isConstantValue(const Node &node, const BoundArgs &b, std::string_view name);
/// Why argument `arg` is not a constant (weights are prepacked at load time).
std::string requireConstant(const Node &node, const BoundArgs &b, const char *arg);
/// The dq8ca linears' activation scales: quantized with the scale's own
/// dtype (a bf16 scale would round 1 / s to bf16), which the device does for
/// f32 and f16; an f64 scale is defined as taken in f32. Empty when fine.
std::string perTokenScalesReason(const BoundArgs &b);
/// Why an operand or result of `node` has more dims than a kernel's `maxRank`.
std::string rankReason(const Node &node, int64_t maxRank);
/// Why argument `name` is not a literal or symbolic integer (start_pos, seq_len).
std::string intArgReason(const BoundArgs &b, const char *name);
/// loopLimitReason for a kernel whose invocations loop over dim `dim` of
/// tensor argument `name` (negative: from the end), `per` elements an
/// iteration, plus `extra` iterations, when that size is static; a symbolic
/// size is checked at dispatch.
std::string loopDimReason(const BoundArgs &b, const DeviceInfo &dev, std::string_view name,
                          int64_t dim, int64_t extra, int64_t per = 1);
/// Whether tensor argument `name` is f32/f16 of the node's (first) result dtype.
bool isFloatOfResultDType(const Node &node, const BoundArgs &b, std::string_view name);
/// Converts a tensor to the result dtype (torch converts operands to the
/// common dtype before the op).
Expected<DeviceTensor> asDType(Context &ctx, const DeviceTensor &t, DType d);

using CheckFn = std::function<std::string(const Node &, const BoundArgs &, const DeviceInfo &)>;
using RunFn = std::function<Expected<std::vector<LoweredValue>>(NodeArgs &)>;

struct Lowering {
  std::string kernel;
  Placement placement = Placement::Device;
  CheckFn check; ///< empty reason: supported
  RunFn run;
};

/// Op target ("aten.add.Tensor") -> lowering.
using LoweringTable = std::map<std::string, Lowering, std::less<>>;

/// The families, each adding its ops' lowerings (ops/<family>/<Family>.cpp).
void addElementwiseLowerings(LoweringTable &table);
void addReduceLowerings(LoweringTable &table);
void addLinearLowerings(LoweringTable &table);
void addLinearDq8caQ8cswLowerings(LoweringTable &table);
void addEmbeddingLowerings(LoweringTable &table);
void addRotaryLowerings(LoweringTable &table);
void addQuantizeLowerings(LoweringTable &table);
void addCopyLowerings(LoweringTable &table);
void addHostLowerings(LoweringTable &table);
void addAttentionLowerings(LoweringTable &table);
void addMaskLowerings(LoweringTable &table);
void addSwigluLowerings(LoweringTable &table);

/// The lowering of an op target ("aten.add.Tensor"), or null.
const Lowering *findLowering(std::string_view target);
const LoweringTable &allLowerings();

/// Runs a node's reference kernel on resolved runtime values (tensors as
/// given: real data, or data-free metadata tensors for view/shape kernels).
/// An in-place op's new argument values (schema argument name, data) go to
/// `mutated`; without it, a kernel that mutates an argument is an error
/// rather than a lost update.
Expected<std::vector<RuntimeValue>>
runReferenceKernel(const Node &node, const BoundArgs &bound,
                   const std::vector<RuntimeValue> &resolved,
                   std::vector<std::pair<std::string, Tensor>> *mutated = nullptr);
/// A data-free tensor with `sizes` (for running view kernels on shapes only).
Tensor metadataTensor(DType dtype, const std::vector<int64_t> &sizes);
/// The same with explicit strides and offset (a view of a view).
Tensor metadataTensor(DType dtype, const std::vector<int64_t> &sizes, int64_t offset,
                      std::vector<int64_t> strides);

} // namespace graft::vk
