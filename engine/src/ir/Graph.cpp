//===- Graph.cpp - Graph construction and mutation ------------------------===//
#include "graft/ir/Graph.h"

#include "graft/ops/OpSchema.h"
#include "graft/support/FloatBits.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

namespace graft {

std::string_view name(ValueKind kind) {
  switch (kind) {
  case ValueKind::Tensor:
    return "tensor";
  case ValueKind::SymInt:
    return "symint";
  case ValueKind::SymFloat:
    return "symfloat";
  case ValueKind::SymBool:
    return "symbool";
  }
  return "?";
}

std::string_view name(InputKind kind) {
  switch (kind) {
  case InputKind::UserInput:
    return "input";
  case InputKind::Parameter:
    return "param";
  case InputKind::Buffer:
    return "buffer";
  case InputKind::ConstantTensor:
    return "const";
  }
  return "?";
}

std::string_view name(OutputKind kind) {
  switch (kind) {
  case OutputKind::UserOutput:
    return "output";
  case OutputKind::BufferMutation:
    return "mutate_buffer";
  case OutputKind::UserInputMutation:
    return "mutate_input";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Node
//===----------------------------------------------------------------------===//

const Argument *Node::kwarg(std::string_view key) const {
  for (const auto &[k, v] : kwargs_)
    if (k == key)
      return &v;
  return nullptr;
}

NameRef Node::name() const {
  static constexpr std::string_view kAnonymous = "<node without results>";
  return outputs_.empty() ? NameRef(kAnonymous) : outputs_[0]->name();
}

const std::string *Node::meta(std::string_view key) const {
  for (const auto &[k, v] : metadata_)
    if (k == key)
      return &v;
  return nullptr;
}

void Node::setArgs(std::vector<Argument> args,
                   std::vector<std::pair<std::string, Argument>> kwargs) {
  forEachOperand([this](Value *v) {
    auto it = std::find(v->users_.begin(), v->users_.end(), this);
    if (it != v->users_.end())
      v->users_.erase(it);
  });
  args_ = std::move(args);
  kwargs_ = std::move(kwargs);
  signatureHint_ = kSignatureUnknown;
  forEachOperand([this](Value *v) { v->users_.push_back(this); });
}

void Node::replaceUsesOf(Value *from, Value *to) {
  if (from == to)
    return;
  signatureHint_ = kSignatureUnknown; // `to` may be of another kind
  auto swap = [&](Value *&v) {
    if (v == from) {
      v = to;
      auto it = std::find(from->users_.begin(), from->users_.end(), this);
      if (it != from->users_.end())
        from->users_.erase(it);
      to->users_.push_back(this);
    }
  };
  for (Argument &a : args_)
    a.forEachValue(swap);
  for (auto &kv : kwargs_)
    kv.second.forEachValue(swap);
}

//===----------------------------------------------------------------------===//
// Constant initializers
//===----------------------------------------------------------------------===//

namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

std::vector<int64_t> sizesOf(const TensorProto &proto) {
  auto sizes = concreteSizes(proto.shape);
  assert(sizes && "constants have concrete shapes (checked by the parser/verifier)");
  return sizes ? *sizes : std::vector<int64_t>{};
}

} // namespace

Tensor generateRandom(const TensorProto &proto, const RandomInit &init) {
  Tensor t = Tensor::empty(proto.dtype, sizesOf(proto));
  SplitMix64 rng{init.seed};
  int64_t n = t.numel();
  if (isIntegral(proto.dtype, /*includeBool=*/true)) {
    int64_t lo = static_cast<int64_t>(std::ceil(init.min));
    int64_t hi = static_cast<int64_t>(std::floor(init.max));
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    for (int64_t i = 0; i < n; ++i) {
      uint64_t r = span == 0 ? rng.next() : rng.next() % span;
      t.setInt(i, lo + static_cast<int64_t>(r));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
      t.setDouble(i, init.min + (init.max - init.min) * u);
    }
  }
  return t;
}

Tensor generateFull(const TensorProto &proto, const FullInit &init) {
  Tensor t = Tensor::empty(proto.dtype, sizesOf(proto));
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    t.setDouble(i, init.value);
  return t;
}

DeferredData::~DeferredData() = default;

namespace {

/// dataSource() of a constant whose data is already a tensor (owned or mapped).
class TensorData final : public DeferredData {
public:
  TensorData(Tensor t, std::string fqn) : t_(std::move(t)), fqn_(std::move(fqn)) {}
  Expected<Tensor> compute() const override { return t_; }
  std::string describe() const override { return fqn_; }
  const Tensor *held() const override { return &t_; }

private:
  Tensor t_;
  std::string fqn_;
};

/// dataSource() of a random()/full() constant: generated when computed.
class GeneratedData final : public DeferredData {
public:
  GeneratedData(TensorProto proto, ConstantInit init, std::string fqn)
      : proto_(std::move(proto)), init_(std::move(init)), fqn_(std::move(fqn)) {}
  Expected<Tensor> compute() const override {
    if (const auto *r = std::get_if<RandomInit>(&init_))
      return generateRandom(proto_, *r);
    return generateFull(proto_, std::get<FullInit>(init_));
  }
  std::string describe() const override { return fqn_; }

private:
  TensorProto proto_;
  ConstantInit init_;
  std::string fqn_;
};

} // namespace

bool GraphInput::isDeferred() const {
  return !resident() && init && std::holds_alternative<DeferredInit>(*init);
}

namespace {
const Tensor &undefinedTensor() {
  static const Tensor kUndefined;
  return kUndefined;
}
} // namespace

const Tensor &GraphInput::data() const {
  if (!resident() && init && !dataError_) {
    // load() generates or computes it; here it is kept.
    auto t = load();
    if (t.ok())
      data_ = std::move(*t);
    else
      dataError_ = std::make_shared<const Diagnostic>(t.diags().front());
  }
  return data_ ? *data_ : undefinedTensor();
}

Expected<Tensor> GraphInput::load() const {
  if (const Tensor *held = resident())
    return *held;
  if (!init)
    return Tensor();
  if (const auto *r = std::get_if<RandomInit>(&*init))
    return generateRandom(value->proto(), *r);
  if (const auto *f = std::get_if<FullInit>(&*init))
    return generateFull(value->proto(), *f);
  if (const auto *d = std::get_if<DeferredInit>(&*init))
    return d->source->compute();
  return Tensor();
}

std::shared_ptr<const DeferredData> GraphInput::dataSource() const {
  if (!init)
    return nullptr;
  if (const Tensor *held = resident())
    return std::make_shared<TensorData>(*held, fqn);
  if (std::holds_alternative<RandomInit>(*init) || std::holds_alternative<FullInit>(*init))
    return std::make_shared<GeneratedData>(value->proto(), *init, fqn);
  if (const auto *d = std::get_if<DeferredInit>(&*init))
    return d->source;
  return nullptr;
}

void GraphInput::setData(Tensor data, ConstantInit newInit) {
  data_ = std::move(data);
  dataError_.reset();
  init = std::move(newInit);
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Graph::Graph(std::string name) : name_(std::move(name)), nodes_(SlabAllocator<Node>(&nodeArena_)) {}

Graph::~Graph() {
  // Nodes first (their destructors do not look at values), then values.
  nodes_.clear();
  for (Value *v : values_)
    v->~Value();
}

NameRef Graph::keep(std::string_view s) {
  if (s.empty())
    return NameRef();
  char *p = static_cast<char *>(strings_.allocate(s.size() + 1));
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = 0;
  return NameRef(std::string_view(p, s.size()));
}

void Graph::setValueName(Value *v, std::string_view name) {
  if (name.size() < v->nameCapacity_) {
    // A reused slot's own bytes: nothing else views them (its name entry
    // was erased with it, and a Value* to it is invalid since).
    char *p = const_cast<char *>(v->name_.data());
    std::memcpy(p, name.data(), name.size());
    p[name.size()] = 0;
    v->name_ = NameRef(std::string_view(p, name.size()));
    return;
  }
  v->name_ = keep(name);
  // An empty name views the shared empty string, which is not the value's.
  v->nameCapacity_ =
      name.empty() ? 0 : static_cast<uint32_t>(std::min<std::size_t>(name.size() + 1, UINT32_MAX));
}

Value *Graph::newValue(std::string_view name, ValueKind kind, const TensorProto &proto,
                       uint64_t nameHash) {
  std::string generated;
  if (name.empty()) {
    generated = uniqueName("v");
    name = generated;
    nameHash = 0;
  }
  Value *raw;
  if (!reusableValues_.empty()) {
    // A slot of an erased result (eraseNode(..., Reuse) left it with no
    // producer, users, location or name entry): memory touched already.
    raw = reusableValues_.back();
    reusableValues_.pop_back();
    raw->resultIndex_ = 0;
    raw->outputUses_ = 0;
  } else {
    raw = new (valueArena_.allocate(sizeof(Value))) Value;
    values_.push_back(raw);
  }
  setValueName(raw, name);
  raw->kind_ = kind;
  raw->proto_ = protos_.intern(proto); // copied only when new to the graph
  raw->nameHash_ = nameHash ? nameHash : valuesByName_.hash(raw->name_);
  valuesByName_.insertOrAssign(raw->name_, raw, raw->nameHash_);
  return raw;
}

const std::string *Graph::internTarget(std::string_view target) {
  uint64_t h = targetsByName_.hash(target);
  if (const std::string *const *hit = targetsByName_.find(target, h))
    return *hit;
  const std::string &copy = targets_.emplace_back(target);
  targetsByName_.insert(copy, &copy, h);
  return &copy;
}

Value *Graph::addInput(InputKind kind, std::string_view name, const TensorProto &proto,
                       std::string_view fqn, uint64_t nameHash, uint64_t fqnHash) {
  Value *v = newValue(name, ValueKind::Tensor, proto, nameHash);
  v->inputIndex_ = static_cast<int>(inputs_.size());
  GraphInput in;
  in.kind = kind;
  in.value = v;
  in.fqn = keep(fqn);
  const GraphInput &added = inputs_.emplace_back(std::move(in));
  if (added.isConstant() && !added.fqn.empty())
    constantsByFqn_.insert(added.fqn, &added,
                           fqnHash ? fqnHash : constantsByFqn_.hash(added.fqn)); // first wins
  return v;
}

Value *Graph::addScalarInput(ValueKind kind, std::string_view name) {
  Value *v = newValue(name, kind, TensorProto());
  v->inputIndex_ = static_cast<int>(inputs_.size());
  GraphInput in;
  in.kind = InputKind::UserInput;
  in.value = v;
  inputs_.push_back(std::move(in));
  return v;
}

GraphInput *Graph::inputFor(const Value *value) {
  if (!value || value->inputIndex_ < 0)
    return nullptr;
  // A value of another graph (the rewrite driver's scratch values are inputs
  // of a scratch graph) has an index that means nothing here.
  auto i = static_cast<std::size_t>(value->inputIndex_);
  if (i >= inputs_.size() || inputs_[i].value != value)
    return nullptr;
  return &inputs_[i];
}

const GraphInput *Graph::inputFor(const Value *value) const {
  return const_cast<Graph *>(this)->inputFor(value);
}

const GraphInput *Graph::findConstant(std::string_view fqn) const {
  const GraphInput *const *hit = constantsByFqn_.find(fqn);
  return hit ? *hit : nullptr;
}

const GraphInput *Graph::findConstant(std::string_view fqn, uint64_t hash) const {
  const GraphInput *const *hit = constantsByFqn_.find(fqn, hash);
  return hit ? *hit : nullptr;
}

void Graph::addOutput(Value *value, OutputKind kind, std::string target) {
  outputs_.push_back({kind, value, std::move(target)});
  if (value)
    ++value->outputUses_;
}

void Graph::setOutputValue(std::size_t index, Value *value) {
  GraphOutput &o = outputs_.at(index);
  if (o.value)
    --o.value->outputUses_;
  o.value = value;
  if (value)
    ++value->outputUses_;
}

Node *Graph::createNode(std::string_view target, std::vector<Argument> args,
                        std::vector<std::pair<std::string, Argument>> kwargs,
                        std::vector<ResultSpec> results, Node *before) {
  return createNodeWithSpecs(target, std::move(args), std::move(kwargs),
                             std::span<ResultSpec>(results), before);
}

Node *Graph::createNodeWithSpecs(std::string_view target, std::vector<Argument> args,
                                 std::vector<std::pair<std::string, Argument>> kwargs,
                                 std::span<ResultSpec> results, Node *before) {
  auto pos = before ? before->self_ : nodes_.end();
  auto it = nodes_.emplace(pos);
  Node &n = *it;
  n.self_ = it;
  n.graph_ = this;
  n.target_ = internTarget(target);
  n.args_ = std::move(args);
  n.kwargs_ = std::move(kwargs);
  n.forEachOperand([&n](Value *v) { v->users_.push_back(&n); });
  unsigned i = 0;
  n.outputs_.reserve(results.size());
  for (ResultSpec &r : results) {
    Value *v = newValue(r.name, r.kind, r.protoRef ? *r.protoRef : r.proto, r.nameHash);
    v->producer_ = &n;
    v->resultIndex_ = i++;
    n.outputs_.push_back(v);
  }
  return &n;
}

void Graph::dropUses(Node *node) {
  node->forEachOperand([node](Value *v) {
    auto it = std::find(v->users_.begin(), v->users_.end(), node);
    if (it != v->users_.end())
      v->users_.erase(it);
  });
}

void Graph::eraseNode(Node *node, ErasedResults results) {
  for (Value *v : node->outputs_) {
    assert(v->users_.empty() && "erasing a node whose results are still used");
    v->producer_ = nullptr;
    if (results == ErasedResults::Keep) {
      // Its name entry stays (findValue skips results of erased nodes; the
      // next value given the name takes the entry over): no probe and shift
      // of the name table per erased result, which at 10^6 values was a
      // cache miss each. The Value stays allocated and readable.
      continue;
    }
    // The slot is about to carry another name: its entry goes (found by
    // hash and pointer; absent if a later value took the name over, which
    // cannot happen while v was live).
    valuesByName_.eraseEntry(v->nameHash_, v);
    v->location_.reset();
    reusableValues_.push_back(v);
  }
  dropUses(node);
  nodes_.erase(node->self_);
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  if (from->users_.size() == 1) {
    // The common case (a rewrite's replaced result has one user): no copy of
    // the use list to iterate over while replaceUsesOf edits it.
    Node *u = from->users_[0];
    u->replaceUsesOf(from, to);
  } else {
    std::vector<Node *> users(from->users_.begin(), from->users_.end());
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    for (Node *u : users)
      u->replaceUsesOf(from, to);
  }
  // Only a value that is an output walks the outputs (a rewrite replaces
  // one value per match: a scan per call was quadratic in a graph with an
  // output per layer).
  if (from->outputUses_ && from != to) {
    for (GraphOutput &o : outputs_)
      if (o.value == from)
        o.value = to;
    to->outputUses_ += from->outputUses_;
    from->outputUses_ = 0;
  }
}

std::size_t Graph::removeDeadNodes() {
  std::size_t removed = 0;
  // Walk backwards so chains of dead nodes go in one sweep.
  for (auto it = nodes_.end(); it != nodes_.begin();) {
    --it;
    Node &n = *it;
    bool effects = n.schema() && (n.schema()->properties.sideEffects);
    bool used = std::any_of(n.outputs_.begin(), n.outputs_.end(),
                            [](const Value *v) { return v->hasUses() || v->isGraphOutput(); });
    if (!n.schema() || effects || used || n.outputs_.empty())
      continue; // opaque ops are kept: we cannot know they are pure
    auto next = std::next(it);
    eraseNode(&n);
    it = next;
    ++removed;
  }
  return removed;
}

void Graph::renumber() {
  uint64_t i = 0;
  for (Node &n : nodes_)
    n.order_ = i++;
}

Node *Graph::nextNode(const Node *node) const {
  auto it = std::next(node->self_);
  return it == nodes_.end() ? nullptr : &*it;
}

Node *Graph::prevNode(const Node *node) const {
  if (node->self_ == nodes_.begin())
    return nullptr;
  return &*std::prev(node->self_);
}

Value *Graph::findValue(std::string_view name) const {
  Value *const *v = valuesByName_.find(name);
  return v && isLive(*v) ? *v : nullptr;
}

Value *Graph::findValue(std::string_view name, uint64_t hash) const {
  Value *const *v = valuesByName_.find(name, hash);
  return v && isLive(*v) ? *v : nullptr;
}

bool Graph::renameValue(Value *v, std::string_view name) {
  if (v->name_ == name)
    return true;
  if (name.empty() || findValue(name))
    return false;
  // The old entry goes first: setValueName may write the new name over the
  // bytes the entry's key views.
  valuesByName_.eraseEntry(v->nameHash_, v);
  setValueName(v, name);
  v->nameHash_ = valuesByName_.hash(v->name_);
  valuesByName_.insertOrAssign(v->name_, v, v->nameHash_);
  return true;
}

std::string Graph::uniqueName(std::string_view base) const {
  std::string b(base);
  if (!findValue(b))
    return b;
  for (uint64_t i = 1;; ++i) {
    std::string candidate = b + "_" + std::to_string(i);
    if (!findValue(candidate))
      return candidate;
  }
}

std::vector<Value *> Graph::allValues() const {
  std::vector<Value *> out;
  for (const GraphInput &in : inputs_)
    out.push_back(in.value);
  for (const Node &n : nodes_)
    for (Value *v : n.outputs_)
      out.push_back(v);
  return out;
}

} // namespace graft
