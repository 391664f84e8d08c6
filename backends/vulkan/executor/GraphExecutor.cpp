//===- GraphExecutor.cpp - Planning and running a graph on the device -----===//
//
// create() binds every node's arguments and follows the plan: a node planned
// for the device gets its lowering (ops/Registry.cpp) when it can run on this
// device, and is an error otherwise (a CPU fallback only when the caller
// opted in); a node planned for the CPU runs the reference interpreter's
// kernel. run() walks the nodes in order, keeping values in Slots (device
// and/or host) and releasing each value after its last use.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include "graft/serialize/ProgramFile.h"

#include <cmath>
#include <limits>
#include <set>

namespace graft::vk {

std::string_view name(Placement placement) {
  switch (placement) {
  case Placement::Device:
    return "device";
  case Placement::Host:
    return "host";
  case Placement::Cpu:
    return "cpu";
  case Placement::CpuFallback:
    return "cpu-fallback";
  }
  return "?";
}

namespace {

std::string nodeLabel(const Node &node) {
  return "%" + (node.numOutputs() ? node.name() : std::string("?")) + " (" + node.target() + ")";
}

Diagnostic prefixed(const Node &node, Diagnostic d) {
  d.message = "node " + nodeLabel(node) + ": " + d.message;
  return d;
}

Failure prefixed(const Node &node, Failure f) {
  for (Diagnostic &d : f.diags)
    d = prefixed(node, std::move(d));
  return f;
}

} // namespace

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

const Tensor *GraphExecutor::State::constantData(const Value *v) const {
  const GraphInput *in = graph->inputFor(v);
  if (!in || !in->isConstant() || !in->hasData())
    return nullptr;
  const Tensor &t = in->data();
  return t.defined() ? &t : nullptr;
}

Expected<DeviceTensor> GraphExecutor::State::deviceTensor(const Value *v) {
  // A mutable buffer has its own device copy, never shared with the
  // constant caches, so writing it in place leaves every other value alone.
  if (mutableInputs.count(v)) {
    if (auto it = mutableValues.find(v); it != mutableValues.end())
      return it->second;
    const Tensor *c = constantData(v);
    if (!c)
      return Diagnostic::error("mutable buffer %" + v->name() + " has no data");
    GRAFT_TRY(DeviceTensor t, uploadTensor(*ctx, *c));
    mutableValues[v] = t;
    return t;
  }
  if (auto it = constants.find(v); it != constants.end())
    return it->second;
  if (const Tensor *c = constantData(v)) {
    GRAFT_TRY(DeviceTensor t, uploadTensor(*ctx, *c));
    constants[v] = t;
    return t;
  }
  auto it = env.find(v);
  if (it == env.end() || !it->second.isTensor)
    return Diagnostic::internal("value %" + v->name() + " is not a defined tensor");
  Slot &s = it->second;
  if (!s.device.defined()) {
    GRAFT_TRY(s.device, uploadTensor(*ctx, s.host));
  }
  return s.device;
}

Expected<Tensor> GraphExecutor::State::hostTensor(const Value *v) {
  if (mutableInputs.count(v)) {
    // Downloaded on every read: kernels may have written it since.
    if (auto m = mutableValues.find(v); m != mutableValues.end())
      return downloadTensor(*ctx, m->second);
    if (const Tensor *c = constantData(v))
      return *c;
    return Diagnostic::error("mutable buffer %" + v->name() + " has no data");
  }
  auto it = env.find(v);
  if (const Tensor *c = constantData(v); c && it == env.end())
    return *c;
  if (it == env.end() || !it->second.isTensor)
    return Diagnostic::internal("value %" + v->name() + " is not a defined tensor");
  Slot &s = it->second;
  if (!s.host.defined()) {
    GRAFT_TRY(s.host, downloadTensor(*ctx, s.device));
  }
  return s.host;
}

namespace {
uint64_t tensorHash(const Tensor &t) {
  Tensor c = t.contiguous();
  std::string key = std::string(name(c.dtype())) + "[";
  for (int64_t s : c.sizes())
    key += std::to_string(s) + ",";
  uint64_t h = contentHash(key);
  return contentHash(std::string_view(reinterpret_cast<const char *>(c.rawData()), c.nbytes()), h);
}
} // namespace

Expected<PackedQ4Weight> GraphExecutor::State::packedQ4(const Value *v, bool lowNibbleFirst) {
  if (auto it = q4.find({v, lowNibbleFirst}); it != q4.end())
    return it->second;
  const Tensor *c = constantData(v);
  if (!c)
    return Diagnostic::internal("packed weight %" + v->name() + " is not a constant");
  uint64_t h = tensorHash(*c);
  std::pair<uint64_t, std::string> key{h, lowNibbleFirst ? "q4-low" : "q4-high"};
  if (auto it = q4ByHash.find(key); it != q4ByHash.end()) {
    q4[{v, lowNibbleFirst}] = it->second;
    return it->second;
  }
  GRAFT_TRY(PackedQ4Weight w, prepackQ4(*ctx, *c, lowNibbleFirst));
  q4[{v, lowNibbleFirst}] = w;
  q4ByHash[key] = w;
  return w;
}

Expected<PackedQ8Weight> GraphExecutor::State::packedQ8(const Value *v) {
  if (auto it = q8.find(v); it != q8.end())
    return it->second;
  const Tensor *c = constantData(v);
  if (!c)
    return Diagnostic::internal("int8 weight %" + v->name() + " is not a constant");
  GRAFT_TRY(PackedQ8Weight w, prepackQ8(*ctx, *c));
  q8[v] = w;
  return w;
}

Expected<RawBytes> GraphExecutor::State::rawBytes(const Value *v) {
  if (auto it = raw.find(v); it != raw.end())
    return it->second;
  const Tensor *c = constantData(v);
  if (!c)
    return Diagnostic::internal("packed table %" + v->name() + " is not a constant");
  uint64_t h = tensorHash(*c);
  if (auto it = rawByHash.find(h); it != rawByHash.end()) {
    raw[v] = it->second;
    return it->second;
  }
  GRAFT_TRY(RawBytes r, uploadRawBytes(*ctx, *c));
  raw[v] = r;
  rawByHash[h] = r;
  return r;
}

Status GraphExecutor::State::rebindMutated(const Value *target, Tensor data) {
  if (mutableInputs.count(target)) {
    GRAFT_TRY(DeviceTensor t, uploadTensor(*ctx, data));
    mutableValues[target] = std::move(t);
    return okStatus();
  }
  Slot slot;
  slot.isTensor = true;
  slot.host = std::move(data);
  env[target] = std::move(slot);
  return okStatus();
}

Status GraphExecutor::State::commitBufferMutation(const Value *buffer, const Value *result) {
  if (buffer == result)
    return okStatus(); // mutated in place (llama.update_cache): nothing to do
  GRAFT_TRY(DeviceTensor cur, deviceTensor(buffer));
  GRAFT_TRY(DeviceTensor t, deviceTensor(result));
  if (t.buffer == cur.buffer)
    return okStatus(); // an in-place op's result (index_copy_) is the buffer itself
  if (t.dtype != cur.dtype || t.numel() != cur.numel())
    return Diagnostic::error("the BUFFER_MUTATION value %" + result->name() +
                             " does not fit buffer %" + buffer->name());
  // A functional update (index_put, slice_scatter) made a new tensor: it
  // becomes the buffer, unless its storage is shared with something that
  // outlives the run (a constant, another buffer), which a later in-place
  // write must not reach.
  bool shared = false;
  for (const auto &[v, c] : constants)
    shared = shared || c.buffer == t.buffer;
  for (const auto &[v, m] : mutableValues)
    shared = shared || (v != buffer && m.buffer == t.buffer);
  if (shared) {
    GRAFT_TRY(t, gather(*ctx, t, t.sizes, contiguousStrides(t.sizes), 0));
  }
  t.sizes = cur.sizes;
  mutableValues[buffer] = std::move(t);
  return okStatus();
}

//===----------------------------------------------------------------------===//
// NodeArgs
//===----------------------------------------------------------------------===//

const Argument &NodeArgs::arg(std::string_view name) const {
  static const Argument none;
  const Argument *a = bound_.find(name);
  return a ? *a : none;
}

const Value *NodeArgs::value(std::string_view name) const {
  const Argument &a = arg(name);
  return a.isValue() ? a.value() : nullptr;
}

Diagnostic NodeArgs::error(const std::string &message) const {
  return Diagnostic::error("vulkan: " + message);
}

Expected<DeviceTensor> NodeArgs::tensor(std::string_view name) {
  const Value *v = value(name);
  if (!v || !v->isTensor())
    return error("argument '" + std::string(name) + "' is not a tensor");
  return state_.deviceTensor(v);
}

Expected<DeviceTensor> NodeArgs::mutableTensor(std::string_view name) {
  GRAFT_TRY(const Value *target, mutationTarget(*state_.graph, node_, bound_, std::string(name)));
  GRAFT_TRY(DeviceTensor current, state_.deviceTensor(target));
  if (state_.mutableInputs.count(target))
    return current;
  GRAFT_TRY(DeviceTensor copy,
            gather(ctx(), current, current.sizes, contiguousStrides(current.sizes), 0));
  Slot slot;
  slot.isTensor = true;
  slot.device = copy;
  state_.env[target] = std::move(slot);
  return copy;
}

Expected<std::optional<DeviceTensor>> NodeArgs::optionalTensor(std::string_view name) {
  if (arg(name).isNone())
    return std::optional<DeviceTensor>();
  GRAFT_TRY(DeviceTensor t, tensor(name));
  return std::optional<DeviceTensor>(std::move(t));
}

Expected<std::vector<DeviceTensor>> NodeArgs::tensorList(std::string_view name) {
  const Argument &a = arg(name);
  if (!a.isList())
    return error("argument '" + std::string(name) + "' is not a tensor list");
  std::vector<DeviceTensor> out;
  for (const Argument &e : a.list()) {
    if (!e.isValue() || !e.value()->isTensor())
      return error("argument '" + std::string(name) + "' holds a non-tensor");
    GRAFT_TRY(DeviceTensor t, state_.deviceTensor(e.value()));
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<RuntimeValue> NodeArgs::resolveScalar(const Argument &a) const {
  if (a.isInt())
    return RuntimeValue(a.integer());
  if (a.isFloat())
    return RuntimeValue(a.floating());
  if (a.isBool())
    return RuntimeValue(a.boolean());
  if (a.isValue() && !a.value()->isTensor()) {
    auto it = state_.env.find(a.value());
    if (it != state_.env.end())
      return it->second.scalar;
  }
  return std::nullopt;
}

std::optional<int64_t> NodeArgs::integer(std::string_view name) const {
  auto v = resolveScalar(arg(name));
  if (!v)
    return std::nullopt;
  if (const int64_t *i = std::get_if<int64_t>(&*v))
    return *i;
  if (const bool *b = std::get_if<bool>(&*v))
    return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> NodeArgs::number(std::string_view name) const {
  auto v = resolveScalar(arg(name));
  if (!v)
    return std::nullopt;
  if (const int64_t *i = std::get_if<int64_t>(&*v))
    return static_cast<double>(*i);
  if (const double *d = std::get_if<double>(&*v))
    return *d;
  if (const bool *b = std::get_if<bool>(&*v))
    return *b ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> NodeArgs::intList(std::string_view name) const {
  const Argument &a = arg(name);
  if (a.isInt())
    return std::vector<int64_t>{a.integer()};
  if (!a.isList())
    return std::nullopt;
  std::vector<int64_t> out;
  for (const Argument &e : a.list()) {
    auto v = resolveScalar(e);
    if (!v || !std::holds_alternative<int64_t>(*v))
      return std::nullopt;
    out.push_back(std::get<int64_t>(*v));
  }
  return out;
}

bool NodeArgs::isNone(std::string_view name) const {
  return arg(name).isNone();
}

//===----------------------------------------------------------------------===//
// Reference kernels (CPU fallback, host steps, view shapes)
//===----------------------------------------------------------------------===//

namespace {
const std::shared_ptr<Storage> &metadataStorage() {
  static const std::shared_ptr<Storage> dummy = Storage::zeros(16);
  return dummy;
}
} // namespace

Tensor metadataTensor(DType dtype, const std::vector<int64_t> &sizes) {
  return Tensor(dtype, sizes, metadataStorage(), 0, {});
}

Tensor metadataTensor(DType dtype, const std::vector<int64_t> &sizes, int64_t offset,
                      std::vector<int64_t> strides) {
  return Tensor(dtype, sizes, metadataStorage(), offset, std::move(strides));
}

bool GraphExecutor::State::deferrable(const Node &node) const {
  if (node.numOutputs() != 1)
    return false;
  const Value *out = node.output();
  if (out->users().empty())
    return false;
  for (const GraphOutput &o : graph->outputs())
    if (o.value == out)
      return false;
  for (const Node *user : out->users())
    if (!deviceViews.count(user))
      return false;
  return true;
}

Expected<std::vector<RuntimeValue>>
runReferenceKernel(const Node &node, const BoundArgs &bound,
                   const std::vector<RuntimeValue> &resolved,
                   std::vector<std::pair<std::string, Tensor>> *mutated) {
  const KernelRegistry &kernels = KernelRegistry::builtin();
  const OpSchema *schema = node.schema();
  const Kernel *kernel = nullptr;
  if (schema && !schema->kernel.empty())
    kernel = kernels.find(schema->kernel);
  if (!kernel && schema)
    kernel = kernels.find(schema->qualifiedName());
  if (!kernel)
    kernel = kernels.find(node.target());
  if (!kernel)
    return Diagnostic::error("no reference kernel for op '" + node.target() + "'");
  // Both as views: `cond ? name() : target()` would be a temporary
  // std::string, and KernelArgs keeps a view of the name (ASan found it).
  std::string_view kernelNode =
      node.numOutputs() ? std::string_view(node.name()) : std::string_view(node.target());
  KernelArgs kargs(bound, resolved, kernelNode);
  try {
    Expected<std::vector<RuntimeValue>> out = (*kernel)(kargs);
    if (!kargs.mutated().empty()) {
      if (!mutated)
        return Diagnostic::internal("the reference kernel of " + node.target() +
                                    " mutates its argument '" + kargs.mutated().front().first +
                                    "', which this caller cannot apply");
      *mutated = kargs.mutated();
    }
    return out;
  } catch (const std::exception &e) {
    return Diagnostic::internal("reference kernel of " + node.target() + " failed: " + e.what());
  }
}

//===----------------------------------------------------------------------===//
// GraphExecutor
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<GraphExecutor>> GraphExecutor::create(Context &ctx, const Graph &graph,
                                                               ExecutorOptions options) {
  std::unique_ptr<GraphExecutor> exec(new GraphExecutor());
  exec->ctx_ = &ctx;
  exec->graph_ = &graph;
  exec->state_ = std::make_unique<State>();
  exec->state_->ctx = &ctx;
  exec->state_->graph = &graph;
  exec->mutableMode_ = options.mutableBuffers;
  // The mutable buffers: those the signature's BUFFER_MUTATION outputs name,
  // and those an in-place op's mutable argument reaches.
  {
    std::map<std::string, const Value *, std::less<>> buffers;
    for (const GraphInput &in : graph.inputs())
      if (in.kind == InputKind::Buffer)
        buffers.emplace(std::string(in.fqn), in.value);
    for (const GraphOutput &o : graph.outputs()) {
      if (o.kind != OutputKind::BufferMutation)
        continue;
      auto it = buffers.find(o.target);
      if (it == buffers.end())
        return Diagnostic::error("graph @" + graph.name() + " mutates buffer '" + o.target +
                                 "', which is not one of its inputs");
      exec->state_->mutableInputs[it->second] = o.target;
    }
    for (const Node &node : graph.nodes()) {
      if (!node.schema())
        continue;
      auto bound = BoundArgs::bind(node);
      if (!bound.ok())
        continue; // reported below
      for (Value *v : bound->mutatedValues()) {
        const GraphInput *in = graph.inputFor(v);
        if (in && in->kind == InputKind::Buffer)
          exec->state_->mutableInputs[v] = std::string(in->fqn);
      }
    }
  }
  std::vector<NodeInfo> &infos = exec->state_->nodes;
  std::map<const Value *, std::size_t> lastUse;
  std::size_t index = 0;
  std::vector<Diagnostic> errors;
  if (!options.plan.empty() && options.plan.size() != graph.numNodes())
    return Diagnostic::error("the plan has " + std::to_string(options.plan.size()) +
                             " entries for the " + std::to_string(graph.numNodes()) +
                             " nodes of graph @" + graph.name());
  for (const Node &node : graph.nodes()) {
    NodeInfo info;
    NodePlan p;
    p.node = &node;
    const PlannedPlacement *planned = options.plan.empty() ? nullptr : &options.plan[index];
    if (planned && !planned->target.empty() && planned->target != node.target())
      return Diagnostic::error("the plan's entry " + std::to_string(index) + " is for op " +
                               planned->target + " but the node is " + nodeLabel(node));
    if (!node.schema()) {
      errors.push_back(Diagnostic::error("node " + nodeLabel(node) + ": op '" + node.target() +
                                         "' is not registered"));
      infos.push_back(std::move(info));
      exec->plan_.push_back(p);
      ++index;
      continue;
    }
    auto bound = BoundArgs::bind(node);
    if (!bound.ok()) {
      for (Diagnostic &d : bound.takeFailure().diags)
        errors.push_back(prefixed(node, std::move(d)));
      infos.push_back(std::move(info));
      exec->plan_.push_back(p);
      ++index;
      continue;
    }
    info.bound = std::move(*bound);
    if (planned && planned->placement == Placement::Cpu) {
      // The plan put this node on the CPU (the partitioner's decision, with
      // its reason): follow it even where this device could run the node.
      p.placement = Placement::Cpu;
      p.kernel = "interpreter";
      p.reason = planned->reason;
    } else if (std::string why = vulkanUnsupportedReason(node, ctx.info()); why.empty()) {
      info.lowering = findLowering(node.target());
      p.placement = info.lowering->placement;
      p.kernel = info.lowering->kernel;
    } else if (options.allowCpuFallback) {
      p.placement = Placement::CpuFallback;
      p.kernel = "interpreter";
      p.reason = why;
    } else {
      errors.push_back(Diagnostic::error(
          "node " + nodeLabel(node) + " is planned for the Vulkan device but cannot run on " +
          ctx.info().name + ": " + why + " (--allow-cpu-fallback runs it on the CPU instead)"));
    }
    node.forEachOperand([&](Value *v) { lastUse[v] = index; });
    infos.push_back(std::move(info));
    exec->plan_.push_back(p);
    ++index;
  }
  if (!errors.empty())
    return Failure(std::move(errors));
  for (const NodePlan &p : exec->plan_)
    if (p.placement == Placement::Device && p.kernel == "view")
      exec->state_->deviceViews.insert(p.node);
  std::set<const Value *> outputs;
  for (const GraphOutput &o : graph.outputs())
    outputs.insert(o.value);
  for (const auto &[v, i] : lastUse)
    if (!outputs.count(v) && !graph.inputFor(v))
      infos[i].releaseAfter.push_back(v);
  return exec;
}

NodePlan planNode(const Node &node, const DeviceInfo &device) {
  NodePlan p;
  p.node = &node;
  std::string why = node.schema() ? vulkanUnsupportedReason(node, device)
                                  : "op '" + node.target() + "' is not registered";
  if (why.empty()) {
    const Lowering *l = findLowering(node.target());
    p.placement = l->placement;
    p.kernel = l->kernel;
  } else {
    p.placement = Placement::Cpu;
    p.kernel = "interpreter";
    p.reason = why;
  }
  return p;
}

Expected<std::vector<PlannedPlacement>> compiledPlan(const Program &program) {
  if (!program.graph)
    return Diagnostic::error("the program has no graph");
  const Graph &g = *program.graph;
  if (program.plan.size() != g.numNodes())
    return Diagnostic::error("the program's plan has " + std::to_string(program.plan.size()) +
                             " entries for " + std::to_string(g.numNodes()) + " nodes");
  std::vector<PlannedPlacement> out;
  out.reserve(program.plan.size());
  std::size_t i = 0;
  for (const Node &node : g.nodes()) {
    const ProgramNodePlan &e = program.plan[i++];
    PlannedPlacement pp;
    if (e.placement == "device")
      pp.placement = Placement::Device;
    else if (e.placement == "host")
      pp.placement = Placement::Host;
    else if (e.placement == "cpu")
      pp.placement = Placement::Cpu;
    else
      return Diagnostic::error("the program plans node " + nodeLabel(node) +
                               " with unknown placement '" + e.placement + "'");
    if (e.target != node.target())
      return Diagnostic::error("the program's plan entry for " + nodeLabel(node) + " names op " +
                               e.target);
    pp.reason = e.reason;
    pp.target = e.target;
    out.push_back(std::move(pp));
  }
  return out;
}

GraphExecutor::~GraphExecutor() = default;

std::vector<std::string> GraphExecutor::mutableBufferNames() const {
  std::vector<std::string> out;
  for (const GraphInput &in : graph_->inputs())
    if (auto it = state_->mutableInputs.find(in.value); it != state_->mutableInputs.end())
      out.push_back(it->second);
  return out;
}

Expected<Tensor> GraphExecutor::mutableBuffer(std::string_view fqn) {
  for (const auto &[v, name] : state_->mutableInputs)
    if (name == fqn)
      return state_->hostTensor(v);
  return Diagnostic::error("graph @" + graph_->name() + " has no mutable buffer '" +
                           std::string(fqn) + "'");
}

Expected<MutableState> GraphExecutor::mutableState() {
  MutableState out;
  for (const auto &[v, fqn] : state_->mutableInputs) {
    if (!state_->mutableValues.count(v))
      continue; // still the graph's data, as for the interpreter's state
    GRAFT_TRY(Tensor t, state_->hostTensor(v));
    out.buffers[fqn] = std::move(t);
  }
  return out;
}

void GraphExecutor::resetMutableBuffers() {
  state_->mutableValues.clear();
}

std::size_t GraphExecutor::numCpuNodes() const {
  std::size_t n = 0;
  for (const NodePlan &p : plan_)
    n += p.placement == Placement::Cpu;
  return n;
}

std::size_t GraphExecutor::numCpuFallbackNodes() const {
  std::size_t n = 0;
  for (const NodePlan &p : plan_)
    n += p.placement == Placement::CpuFallback;
  return n;
}

Expected<std::vector<RuntimeValue>>
GraphExecutor::run(const std::vector<RuntimeValue> &userInputs) {
  State &st = *state_;
  Context &ctx = *ctx_;
  ContextStats before = ctx.stats();
  stats_ = ExecutorStats{};
  st.env.clear();
  st.deferredViews.clear();
  if (mutableMode_ == ExecutorOptions::MutableBuffers::PerRun)
    st.mutableValues.clear();

  // User inputs: dtype and shape checked against the prototypes.
  std::size_t numUser = 0;
  for (const GraphInput &in : graph_->inputs())
    numUser += !in.isConstant();
  if (numUser != userInputs.size())
    return Diagnostic::error("graph @" + graph_->name() + " has " + std::to_string(numUser) +
                             " user inputs but " + std::to_string(userInputs.size()) +
                             " were given");
  std::map<std::string, int64_t> symbols;
  std::size_t ui = 0;
  for (const GraphInput &in : graph_->inputs()) {
    if (in.isConstant())
      continue;
    const Value *v = in.value;
    const RuntimeValue &rv = userInputs[ui++];
    Slot slot;
    if (v->isTensor()) {
      const Tensor *t = std::get_if<Tensor>(&rv);
      if (!t || !t->defined())
        return Diagnostic::error("input %" + v->name() + " expects a tensor");
      if (t->dtype() != v->proto().dtype || t->rank() != v->proto().rank())
        return Diagnostic::error("input %" + v->name() + " expects " + v->proto().str() + ", got " +
                                 t->proto().str());
      for (int64_t d = 0; d < t->rank(); ++d) {
        const Dim &dim = v->proto().shape[static_cast<std::size_t>(d)];
        int64_t got = t->size(d);
        bool ok = true;
        if (dim.isConstant())
          ok = dim.constant() == got;
        else if (dim.isSymbol()) {
          const std::string &sym = dim.terms()[0].first;
          auto [it, fresh] = symbols.emplace(sym, got);
          ok = fresh || it->second == got;
        }
        if (!ok)
          return Diagnostic::error("input %" + v->name() + " expects " + v->proto().str() +
                                   ", got " + t->proto().str());
      }
      slot.isTensor = true;
      slot.host = *t;
    } else {
      slot.scalar = rv;
    }
    st.env[v] = std::move(slot);
  }

  std::size_t index = 0;
  for (const Node &node : graph_->nodes()) {
    const NodePlan &p = plan_[index];
    const NodeInfo &info = st.nodes[index];
    ++index;
    const BoundArgs &bound = *info.bound;
    std::vector<LoweredValue> results;
    bool onCpu = p.placement == Placement::Cpu || p.placement == Placement::CpuFallback;
    if (!onCpu) {
      NodeArgs args(st, node, bound);
      ctx.setDispatchLabel(p.kernel); // groups a profile's dispatches by the node's kernel
      auto r = info.lowering->run(args);
      if (!r.ok())
        return prefixed(node, r.takeFailure());
      results = std::move(*r);
    } else {
      // The reference kernel on host copies of the operands.
      std::vector<RuntimeValue> resolved;
      Status status;
      for (std::size_t i = 0; i < bound.size() && status.ok(); ++i)
        bound.at(i).forEachValue([&](Value *v) {
          if (!status.ok())
            return;
          if (v->isTensor()) {
            auto t = st.hostTensor(v);
            if (!t.ok()) {
              status = t.takeFailure();
              return;
            }
            resolved.emplace_back(*t);
          } else {
            auto it = st.env.find(v);
            if (it == st.env.end()) {
              status = Diagnostic::internal("operand %" + v->name() + " is undefined");
              return;
            }
            resolved.push_back(it->second.scalar);
          }
        });
      if (!status.ok())
        return prefixed(node, status.takeFailure());
      std::vector<std::pair<std::string, Tensor>> mutated;
      auto r = runReferenceKernel(node, bound, resolved, &mutated);
      if (!r.ok())
        return prefixed(node, r.takeFailure());
      // In-place ops (llama.update_cache, index_copy_, copy_ ...): later
      // readers of the mutated value see the new data, as the interpreter
      // does. The graph's own buffer data is never written: a mutable
      // buffer's new value goes to its device copy.
      for (auto &[argName, data] : mutated) {
        auto target = mutationTarget(*st.graph, node, bound, argName);
        if (!target.ok())
          return prefixed(node, target.takeFailure());
        if (Status s = st.rebindMutated(*target, std::move(data)); !s.ok())
          return prefixed(node, s.takeFailure());
      }
      for (RuntimeValue &v : *r) {
        if (Tensor *t = std::get_if<Tensor>(&v))
          results.emplace_back(*t);
        else if (int64_t *i = std::get_if<int64_t>(&v))
          results.emplace_back(*i);
        else if (double *d = std::get_if<double>(&v))
          results.emplace_back(*d);
        else
          results.emplace_back(std::get<bool>(v));
      }
      ++(p.placement == Placement::Cpu ? stats_.cpuNodes : stats_.cpuFallbackNodes);
    }
    if (results.size() != node.numOutputs())
      return prefixed(node, Diagnostic::internal("lowering produced " +
                                                 std::to_string(results.size()) + " results for " +
                                                 std::to_string(node.numOutputs()) + " outputs"));
    for (unsigned i = 0; i < node.numOutputs(); ++i) {
      Slot slot;
      LoweredValue &lv = results[i];
      const Value *ov = node.output(i);
      if (DeviceTensor *d = std::get_if<DeviceTensor>(&lv)) {
        slot.isTensor = true;
        slot.device = std::move(*d);
      } else if (Tensor *t = std::get_if<Tensor>(&lv)) {
        slot.isTensor = true;
        slot.host = std::move(*t);
      } else if (int64_t *iv = std::get_if<int64_t>(&lv)) {
        slot.scalar =
            ov->kind() == ValueKind::SymFloat ? RuntimeValue(double(*iv)) : RuntimeValue(*iv);
      } else if (double *dv = std::get_if<double>(&lv)) {
        slot.scalar = *dv;
      } else {
        bool b = std::get<bool>(lv);
        slot.scalar = ov->kind() == ValueKind::SymInt ? RuntimeValue(int64_t(b)) : RuntimeValue(b);
      }
      if (slot.isTensor != ov->isTensor())
        return prefixed(
            node, Diagnostic::internal("result " + std::to_string(i) + " has the wrong kind"));
      st.env[ov] = std::move(slot);
    }
    for (const Value *v : info.releaseAfter)
      st.env.erase(v);
  }

  // The signature's buffer mutations become the buffers' device values.
  for (const GraphOutput &o : graph_->outputs()) {
    if (o.kind != OutputKind::BufferMutation)
      continue;
    for (const auto &[buffer, fqn] : st.mutableInputs)
      if (fqn == o.target)
        GRAFT_CHECK_OK(st.commitBufferMutation(buffer, o.value));
  }
  bool onDevice = mutableMode_ == ExecutorOptions::MutableBuffers::OnDevice;
  std::vector<RuntimeValue> outs;
  for (const GraphOutput &o : graph_->outputs()) {
    if (onDevice && o.kind != OutputKind::UserOutput)
      continue;
    if (o.value->isTensor()) {
      GRAFT_TRY(Tensor t, st.hostTensor(o.value));
      outs.emplace_back(std::move(t));
    } else {
      auto it = st.env.find(o.value);
      if (it == st.env.end())
        return Diagnostic::internal("output %" + o.value->name() + " is undefined");
      outs.push_back(it->second.scalar);
    }
  }
  GRAFT_CHECK_OK(ctx.flush()); // surfaces deferred status errors (bad indices)
  st.env.clear();
  st.deferredViews.clear();
  ContextStats after = ctx.stats();
  stats_.dispatches = after.dispatches - before.dispatches;
  stats_.flushes = after.flushes - before.flushes;
  stats_.bytesUploaded = after.bytesUploaded - before.bytesUploaded;
  stats_.bytesDownloaded = after.bytesDownloaded - before.bytesDownloaded;
  stats_.buffersCreated = (after.buffersAllocated - after.buffersReused) -
                          (before.buffersAllocated - before.buffersReused);
  stats_.flushMs = (after.flushNs - before.flushNs) / 1e6;
  stats_.submittedDeviceMs = (after.submittedDeviceNs - before.submittedDeviceNs) / 1e6;
  return outs;
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

Comparison compareValues(const std::vector<RuntimeValue> &actual,
                         const std::vector<RuntimeValue> &expected) {
  Comparison c;
  if (actual.size() != expected.size()) {
    c.firstProblem = std::to_string(actual.size()) + " values vs " +
                     std::to_string(expected.size()) + " expected";
    return c;
  }
  auto note = [&](const std::string &s) {
    if (c.firstProblem.empty())
      c.firstProblem = s;
  };
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const Tensor *a = std::get_if<Tensor>(&actual[i]);
    const Tensor *e = std::get_if<Tensor>(&expected[i]);
    if (!a || !e) {
      auto num = [](const RuntimeValue &v) -> std::optional<double> {
        if (auto *x = std::get_if<int64_t>(&v))
          return double(*x);
        if (auto *x = std::get_if<double>(&v))
          return *x;
        if (auto *x = std::get_if<bool>(&v))
          return *x ? 1.0 : 0.0;
        return std::nullopt;
      };
      auto x = num(actual[i]), y = num(expected[i]);
      if (!x || !y) {
        note("output " + std::to_string(i) + ": tensor vs scalar");
        continue;
      }
      double d = std::abs(*x - *y);
      c.maxAbsError = std::max(c.maxAbsError, d);
      c.maxRelError = std::max(c.maxRelError, d / std::max(std::abs(*y), 1e-6));
      continue;
    }
    if (a->dtype() != e->dtype() || a->sizes() != e->sizes()) {
      note("output " + std::to_string(i) + ": " + a->proto().str() + " vs expected " +
           e->proto().str());
      continue;
    }
    // Relative errors are taken against max(|reference|, 1e-3 * the
    // output's largest |reference|), so values near zero do not dominate.
    double scale = 0;
    for (int64_t k = 0, n = e->numel(); k < n; ++k)
      if (std::isfinite(e->getDouble(k)))
        scale = std::max(scale, std::abs(e->getDouble(k)));
    double floor = std::max(1e-3 * scale, 1e-30);
    for (int64_t k = 0, n = a->numel(); k < n; ++k) {
      double x = a->getDouble(k), y = e->getDouble(k);
      if (!std::isfinite(x) || !std::isfinite(y)) {
        bool same = (std::isnan(x) && std::isnan(y)) || x == y;
        c.mismatchedNonFinite += !same;
        continue;
      }
      double d = std::abs(x - y);
      c.maxAbsError = std::max(c.maxAbsError, d);
      c.maxRelError = std::max(c.maxRelError, d / std::max(std::abs(y), floor));
    }
  }
  return c;
}

} // namespace graft::vk
