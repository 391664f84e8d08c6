//===- Graph.h - graft's graph IR ---*- C++ -*-===//
//
// A Graph is an ordered (topological) list of Nodes over SSA Values, with
// typed graph inputs (user inputs, parameters, buffers, tensor constants, each
// constant carrying its state-dict FQN) and graph outputs (user outputs,
// buffer mutations). Values are described by TensorProtos, never by data;
// constant inputs may carry data (owned, mmapped, or generated on demand from
// a seeded initializer).
//
//   graph @tiny {
//     param %w : i8[64, 128] fqn="tok_embeddings.weight" = random(seed=1, min=-8, max=7)
//     input %tokens : i64[1, 8]
//     %out : f32[1, 8, 128] = aten.embedding.default(%dq, %tokens)
//     output %out
//   }
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/ir/ProtoTable.h"
#include "graft/ir/Shape.h"
#include "graft/ir/Tensor.h"
#include "graft/ir/TensorProto.h"
#include "graft/support/BoxedOptional.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"
#include "graft/support/NameRef.h"
#include "graft/support/SlabArena.h"
#include "graft/support/SmallVector.h"
#include "graft/support/StableVector.h"
#include "graft/support/StringArena.h"
#include "graft/support/StringViewMap.h"

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace graft {

class Graph;
class Node;
struct OpSchema;

/// A graph's nodes, in order. The list's nodes come from the graph's slab
/// arena (SlabArena.h): contiguous in creation order.
using NodeList = std::list<Node, SlabAllocator<Node>>;

/// What a Value holds. Symbolic scalars come from ops such as
/// aten.sym_size.int or aten._local_scalar_dense.default.
enum class ValueKind : uint8_t { Tensor, SymInt, SymFloat, SymBool };
std::string_view name(ValueKind kind);

/// A value's users, one entry per use (a node using it twice is listed
/// twice). Nearly every value has one or two: they live inline, so making a
/// value and wiring its first uses allocates nothing.
using UseList = SmallVector<Node *, 2>;
/// A node's results: nearly every node has one, kept inline (no
/// allocation per node for a one-element vector).
using OutputList = SmallVector<Value *, 1>;

/// An SSA value: a node result or a graph input.
class Value {
public:
  /// Valid as long as the graph (its characters are the graph's).
  NameRef name() const { return name_; }
  ValueKind kind() const { return kind_; }
  bool isTensor() const { return kind_ == ValueKind::Tensor; }
  /// The graph's interned copy (ProtoTable.h): valid and unchanged for the
  /// graph's lifetime, even after Graph::setProto gives the value another.
  const TensorProto &proto() const { return *proto_; }

  /// The producing node, or null for a graph input.
  Node *producer() const { return producer_; }
  /// Index among the producer's results.
  unsigned resultIndex() const { return resultIndex_; }
  /// The graph input this value is, or -1.
  int inputIndex() const { return inputIndex_; }
  /// One entry per use (a node using a value twice appears twice).
  const UseList &users() const { return users_; }
  bool hasUses() const { return !users_.empty(); }
  /// How many of the graph's outputs are this value (kept by the graph, so
  /// asking costs nothing however many outputs a graph has: an exported
  /// model with a KV cache has two buffer mutations per layer).
  unsigned numOutputUses() const { return outputUses_; }
  bool isGraphOutput() const { return outputUses_ != 0; }
  /// Where the value was defined in text IR, when parsed from text.
  const BoxedOptional<SourceRange> &location() const { return location_; }
  void setLocation(SourceRange r) { location_ = std::move(r); }

private:
  friend class Graph;
  friend class Node;
  // Hot fields first: what matching and use-list updates read (producer,
  // users, the prototype, kind, input index) is the first cache line of
  // this ~104-byte object; the name and location come last.
  Node *producer_ = nullptr;
  UseList users_;
  const TensorProto *proto_ = ProtoTable::empty(); ///< the graph's interned copy
  ValueKind kind_ = ValueKind::Tensor;
  unsigned resultIndex_ = 0;
  int inputIndex_ = -1;
  uint32_t outputUses_ = 0;
  /// Bytes at name_.data() this value may overwrite with a new name when
  /// the graph reuses its slot (Graph::setValueName).
  uint32_t nameCapacity_ = 0;
  /// StringViewMap<>::hash(name_), kept so the name entry can be erased
  /// without reading the name (a cold cache line at the end of the Value).
  uint64_t nameHash_ = 0;
  NameRef name_; ///< in the graph's string storage
  BoxedOptional<SourceRange> location_;
};

/// A call of `target` ("namespace.op.overload", e.g. "aten.linear.default").
class Node {
public:
  const std::string &target() const { return *target_; }
  /// The registered schema, or null for an op the registry does not know
  /// (kept opaque: it round-trips and verifies structurally, but cannot run).
  const OpSchema *schema() const { return schema_; }
  void setSchema(const OpSchema *schema) {
    schema_ = schema;
    signatureHint_ = kSignatureUnknown;
  }

  /// A cache for the rewrite matcher: which of the schema's signatures the
  /// arguments follow (-1: current, k: legacy k), as it last computed it.
  /// kSignatureUnknown until then, and again whenever the arguments or the
  /// schema change. Working it out reads every argument (and the Value of
  /// every tensor argument), and the matcher asks at every candidate node.
  static constexpr int kSignatureUnknown = -2;
  int signatureHint() const { return signatureHint_; }
  void setSignatureHint(int k) const { signatureHint_ = k; }

  /// A word of scratch state for the one pass working on the graph at a
  /// time. The rewrite driver keeps the node's worklist slot here, so erasing
  /// a node clears its worklist entry in place instead of the driver asking a
  /// set of erased nodes at every pop (at 10^6 nodes each probe of that set
  /// was a cache miss). 0 on a new node; a pass puts back 0 before it returns.
  uint32_t passScratch() const { return passScratch_; }
  void setPassScratch(uint32_t v) const { passScratch_ = v; }

  const std::vector<Argument> &args() const { return args_; }
  const std::vector<std::pair<std::string, Argument>> &kwargs() const { return kwargs_; }
  /// Keyword argument by name, or null.
  const Argument *kwarg(std::string_view name) const;
  /// Replaces the arguments, keeping use lists consistent.
  void setArgs(std::vector<Argument> args, std::vector<std::pair<std::string, Argument>> kwargs);
  /// Replaces every use of `from` among this node's arguments by `to`.
  void replaceUsesOf(Value *from, Value *to);

  const OutputList &outputs() const { return outputs_; }
  Value *output(unsigned i = 0) const { return outputs_.at(i); }
  unsigned numOutputs() const { return static_cast<unsigned>(outputs_.size()); }
  /// A name for diagnostics: the first result's name.
  NameRef name() const;

  /// Metadata kept verbatim (stack_trace, nn_module_stack, ...), in order.
  const std::vector<std::pair<std::string, std::string>> &metadata() const { return metadata_; }
  std::vector<std::pair<std::string, std::string>> &metadata() { return metadata_; }
  const std::string *meta(std::string_view key) const;

  const BoxedOptional<SourceRange> &location() const { return location_; }
  void setLocation(SourceRange r) { location_ = std::move(r); }

  /// Position in the graph after Graph::renumber().
  uint64_t order() const { return order_; }
  Graph *graph() const { return graph_; }

  /// Calls f(Value*) for every value argument (positional then keyword).
  template <class F> void forEachOperand(F &&f) const {
    for (const Argument &a : args_)
      a.forEachValue(f);
    for (const auto &kv : kwargs_)
      kv.second.forEachValue(f);
  }

private:
  friend class Graph;
  /// Interned in the graph (Graph::internTarget): a graph has a few dozen
  /// distinct targets, and a string per node was an allocation per node for
  /// every name past the small-string size ("torchao.dequantize_affine").
  const std::string *target_ = &kNoTarget;
  const OpSchema *schema_ = nullptr;
  mutable int signatureHint_ = kSignatureUnknown;
  mutable uint32_t passScratch_ = 0; ///< fills signatureHint_'s padding
  static inline const std::string kNoTarget{};
  std::vector<Argument> args_;
  std::vector<std::pair<std::string, Argument>> kwargs_;
  OutputList outputs_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  BoxedOptional<SourceRange> location_;
  Graph *graph_ = nullptr;
  uint64_t order_ = 0;
  NodeList::iterator self_;
};

enum class InputKind { UserInput, Parameter, Buffer, ConstantTensor };
std::string_view name(InputKind kind); ///< "input", "param", "buffer", "const"

enum class OutputKind { UserOutput, BufferMutation, UserInputMutation };
std::string_view name(OutputKind kind);

/// How a constant's data is produced; kept so text IR round-trips.
struct RandomInit {
  uint64_t seed = 0;
  double min = 0;
  double max = 1;
  bool operator==(const RandomInit &) const = default;
};
struct FullInit {
  double value = 0;
  bool operator==(const FullInit &) const = default;
};
struct InlineInit {}; ///< values are the constant's data, printed inline
struct FileInit {
  std::string path; ///< as written (relative paths resolve against the IR file)
  uint64_t offset = 0;
  uint64_t bytes = 0;
  /// The absolute file `path` named when it was read (empty when not read
  /// from a file): a printer writing the graph into another directory names
  /// the file relative to that directory instead (PrintOptions::outputDir).
  std::string resolved;
  bool operator==(const FileInit &o) const {
    return path == o.path && offset == o.offset && bytes == o.bytes;
  }
};
/// Data with no textual source (e.g. read from a .pt2); printed inline when
/// small, otherwise the printer needs a sidecar data file.
struct ExternalData {};

/// Data computed on demand from other constants: a rule's constant transform
/// (pack_int4 of a mapped weight), recorded when the rewrite commits and run
/// when the bytes are first needed (the interpreter, a writer). Deferring
/// keeps fusion data-free (no weight is read or repacked while matching) and
/// lets writers stream: compute one constant, write it, drop it, so compiling
/// an 8B model never holds its repacked weights in memory at once.
class DeferredData {
public:
  virtual ~DeferredData();
  /// Computes the data: a fresh tensor per call (callers decide what to keep).
  /// Errors name the constant and the transform.
  virtual Expected<Tensor> compute() const = 0;
  /// What computes it: "pack_int4(layers.0.wq.weight, nibbles=low_first)".
  virtual std::string describe() const = 0;

  /// How a transform of other constants is computed: enough for a program
  /// writer to store this recipe instead of the bytes when its inputs are
  /// stored anyway (docs/program-format.md, "Recipes").
  struct Recipe {
    std::string transform;                                   ///< "group_sums"
    std::vector<std::pair<std::string, Argument>> args;      ///< canonical, every parameter
    std::vector<std::shared_ptr<const DeferredData>> inputs; ///< constant inputs, in order
  };
  /// The recipe of a transform; null for data that is not one.
  virtual const Recipe *recipe() const { return nullptr; }
  /// The tensor a leaf already holds (an owned or mapped constant's data),
  /// so writers can recognise it as another constant of the graph; else null.
  virtual const Tensor *held() const { return nullptr; }
};
struct DeferredInit {
  std::shared_ptr<const DeferredData> source;
};

using ConstantInit =
    std::variant<RandomInit, FullInit, InlineInit, FileInit, ExternalData, DeferredInit>;

/// Deterministic, platform-independent generation of RandomInit data
/// (splitmix64; integers uniform in [min, max], floats uniform in [min, max)
/// rounded to the dtype).
Tensor generateRandom(const TensorProto &proto, const RandomInit &init);
Tensor generateFull(const TensorProto &proto, const FullInit &init);

struct GraphInput {
  InputKind kind = InputKind::UserInput;
  bool persistent = true; ///< buffers only (next to kind: one word for both)
  Value *value = nullptr;
  /// State-dict name for parameters, buffers, constants; in the graph's
  /// string storage, set by Graph::addInput.
  NameRef fqn;
  /// How the data is produced; unset for a data-free input. Boxed (one
  /// pointer when unset) like the cached data below: a graph has an input
  /// per parameter, and a rewrite run adds one per new constant.
  BoxedOptional<ConstantInit> init;

  bool isConstant() const { return kind != InputKind::UserInput; }
  bool hasData() const { return init.has_value(); }
  /// Data computed on demand (DeferredInit) and not computed yet.
  bool isDeferred() const;
  /// The data when it is held now (owned, mapped, or already generated or
  /// computed), else null; never generates or computes anything.
  const Tensor *resident() const { return data_ && data_->defined() ? &*data_ : nullptr; }
  /// The constant's data, cached: generated on first use for random/full
  /// initializers, computed on first use for deferred ones. Undefined when
  /// there is none or computing it failed (dataError() then says why).
  const Tensor &data() const;
  /// Why data() is undefined for a constant that has an initializer, or null.
  const Diagnostic *dataError() const { return dataError_.get(); }
  /// The data without caching it here: what data() holds when it holds
  /// something, else freshly generated or computed (a writer streaming
  /// constants keeps one at a time). Undefined tensor when there is no data.
  Expected<Tensor> load() const;
  /// A handle that produces this constant's data later, for building a
  /// deferred transform on it: shares the tensor (a mapped weight stays
  /// mapped, not copied), the generator, or the deferred computation. Null
  /// when the constant has no data.
  std::shared_ptr<const DeferredData> dataSource() const;
  void setData(Tensor data, ConstantInit init);

private:
  friend class Graph;
  /// The data once held (owned, mapped, generated or computed); unset
  /// before. Boxed: an unset Tensor was 80 of a data-free input's bytes.
  mutable BoxedOptional<Tensor> data_;
  /// Out of line (shared, immutable once set): a Diagnostic is 120 bytes,
  /// and nearly every input never has one. Inlined it was a third of a
  /// GraphInput, whose memory a rewrite run touches once per new constant
  /// and which every inputFor reads.
  mutable std::shared_ptr<const Diagnostic> dataError_;
};

struct GraphOutput {
  OutputKind kind = OutputKind::UserOutput;
  Value *value = nullptr;
  std::string target; ///< buffer FQN / user input name for mutations
};

/// The key of Graph's name table: a value's name, read through the value.
struct ValueName {
  std::string_view operator()(const Value *v) const { return v->name(); }
};

class Graph {
public:
  explicit Graph(std::string name = "main");
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  SymbolTable &symbols() { return symbols_; }
  const SymbolTable &symbols() const { return symbols_; }

  //===-- Inputs and outputs --------------------------------------------===//
  /// `nameHash` is StringViewMap<>::hash(name) when the caller has it (a
  /// caller that probed findValue(name, hash) first), else 0.
  /// `fqnHash`, likewise, is StringViewMap<>::hash(fqn) or 0.
  /// The graph keeps its own copy of `name` and `fqn`.
  Value *addInput(InputKind kind, std::string_view name, const TensorProto &proto,
                  std::string_view fqn = {}, uint64_t nameHash = 0, uint64_t fqnHash = 0);
  /// A non-tensor user input (symint etc.).
  Value *addScalarInput(ValueKind kind, std::string_view name);
  /// In order (Value::inputIndex()). Inputs never move: a GraphInput& (and
  /// inputFor's pointer) stays valid as inputs are added.
  using InputList = StableVector<GraphInput, 32>;
  const InputList &inputs() const { return inputs_; }
  InputList &inputs() { return inputs_; }
  GraphInput *inputFor(const Value *value);
  const GraphInput *inputFor(const Value *value) const;
  /// Constant input by FQN (parameters, buffers, tensor constants), or null;
  /// the first one added when two share an FQN (the verifier rejects that).
  /// Indexed: a graph keeps its constants in a table by FQN, filled as
  /// addInput adds them (a GraphInput's kind and fqn are fixed from then on).
  const GraphInput *findConstant(std::string_view fqn) const;
  /// With `hash` = StringViewMap<>::hash(fqn), for a caller that has it.
  const GraphInput *findConstant(std::string_view fqn, uint64_t hash) const;
  /// Cache hints for a caller about to look up or insert the constant of
  /// FQN hash `fqnHash`, or the value name of hash `nameHash`, or to erase
  /// `value`'s name entry (StringViewMap::prefetch).
  void prefetchConstant(uint64_t fqnHash) const { constantsByFqn_.prefetch(fqnHash); }
  void prefetchValueName(uint64_t nameHash) const { valuesByName_.prefetch(nameHash); }
  void prefetchNameEntry(const Value *value) const { valuesByName_.prefetch(value->nameHash_); }
  /// How many constants have an FQN.
  std::size_t numConstants() const { return constantsByFqn_.size(); }
  /// Makes room for `n` constants with FQNs in the index without rehashing.
  void reserveConstants(std::size_t n) { constantsByFqn_.reserve(n); }

  void addOutput(Value *value, OutputKind kind = OutputKind::UserOutput, std::string target = {});
  const std::vector<GraphOutput> &outputs() const { return outputs_; }
  void setOutputValue(std::size_t index, Value *value);

  /// Gives `value` (of this graph) another prototype. References from its
  /// proto() taken before stay valid: they read the old, interned one.
  void setProto(Value *value, const TensorProto &proto) { value->proto_ = protos_.intern(proto); }
  /// The distinct prototypes the graph's values share (ProtoTable.h).
  const ProtoTable &protos() const { return protos_; }

  //===-- Nodes ---------------------------------------------------------===//
  struct ResultSpec {
    std::string name; ///< empty: a fresh name is generated
    ValueKind kind = ValueKind::Tensor;
    TensorProto proto;
    uint64_t nameHash = 0; ///< StringViewMap<>::hash(name) if known, else 0
    /// When set, the prototype instead of `proto` (the caller's, read once
    /// to intern it: a caller with the prototype at hand copies nothing).
    const TensorProto *protoRef = nullptr;
  };
  /// Creates a node before `before` (null: at the end).
  Node *createNode(std::string_view target, std::vector<Argument> args,
                   std::vector<std::pair<std::string, Argument>> kwargs,
                   std::vector<ResultSpec> results, Node *before = nullptr);
  /// The same, moving names and prototypes out of `results` (a caller's
  /// reused buffer: no vector allocated per node).
  Node *createNodeWithSpecs(std::string_view target, std::vector<Argument> args,
                            std::vector<std::pair<std::string, Argument>> kwargs,
                            std::span<ResultSpec> results, Node *before = nullptr);
  /// What becomes of an erased node's result Values.
  enum class ErasedResults {
    /// They stay allocated until the graph goes: dead (no producer, not
    /// found by name), but a Value* a caller still holds can be read.
    Keep,
    /// Their slots (and name entries) are reused by the next values the graph
    /// makes, so a Value* to them is invalid after the erase. For callers that
    /// hold none: the rewrite driver erases this way, and a long run then
    /// makes one new Value per rewrite instead of three (fresh memory, which
    /// the kernel zeroes page by page, was most of fusing a 10^6-node graph).
    Reuse,
  };
  /// Erases a node whose results have no uses.
  void eraseNode(Node *node, ErasedResults results = ErasedResults::Keep);
  /// Redirects every use of `from` (including graph outputs) to `to`.
  void replaceAllUsesWith(Value *from, Value *to);
  /// Removes nodes without side effects whose results are unused.
  std::size_t removeDeadNodes();

  NodeList &nodes() { return nodes_; }
  const NodeList &nodes() const { return nodes_; }
  std::size_t numNodes() const { return nodes_.size(); }
  /// Assigns Node::order() 0..n-1 in list order.
  void renumber();
  /// The node after / before `node` in list order, or null at the end. For
  /// a local walk (how far apart two nodes are) where renumbering the whole
  /// graph per question would make a pass quadratic.
  Node *nextNode(const Node *node) const;
  Node *prevNode(const Node *node) const;

  //===-- Values --------------------------------------------------------===//
  Value *findValue(std::string_view name) const;
  /// With `hash` = StringViewMap<>::hash(name), computed once by a caller
  /// that also passes it to addInput/createNode.
  Value *findValue(std::string_view name, uint64_t hash) const;
  /// A name not used by any value: `base`, else `base_1`, `base_2`, ...
  std::string uniqueName(std::string_view base) const;
  /// Every value: inputs first, then node results in order.
  std::vector<Value *> allValues() const;
  /// Gives `v` the name `name`, which no live value may have (false, and
  /// nothing changes, if one does). A symbolic scalar's name is its
  /// symbol's (`sym u0 : [0, 56]` is bound by the value %u0), so a rewrite
  /// that replaces such a value renames its replacement to keep the symbol.
  bool renameValue(Value *v, std::string_view name);

private:
  Value *newValue(std::string_view name, ValueKind kind, const TensorProto &proto,
                  uint64_t nameHash = 0);
  /// Gives `v` a copy of `name`: in v's own bytes when it fits (a reused
  /// slot), else in strings_.
  void setValueName(Value *v, std::string_view name);
  /// A NUL-terminated copy of `s` in strings_.
  NameRef keep(std::string_view s);
  const std::string *internTarget(std::string_view target);
  /// A graph input or the result of a node still in the graph (an erased
  /// node's results keep their Value, and their name entry, but are dead).
  static bool isLive(const Value *v) { return v->producer_ || v->inputIndex_ >= 0; }
  void dropUses(Node *node);

  std::string name_;
  SymbolTable symbols_;
  /// Value names and input FQNs (NameRef): a bump copy each, freed with the
  /// graph, instead of a heap std::string per value and per constant.
  StringArena strings_;
  /// Slots for nodes and values; declared before them, so it outlives them.
  SlabArena nodeArena_;
  SlabArena valueArena_;
  NodeList nodes_;
  /// Every value slot ever made (erased nodes' results too); each lives in a
  /// valueArena_ slot, destroyed with the graph.
  std::vector<Value *> values_;
  /// Results of nodes erased with ErasedResults::Reuse, for newValue to take.
  std::vector<Value *> reusableValues_;
  /// Chunked, not one array: a rewrite run adds an input per new constant,
  /// and a doubling array copied every input into fresh memory as it grew
  /// (at 10^6 nodes, from 240 k to 450 k inputs, then 216 bytes each: 100 MiB of
  /// pages the kernel zeroed, a third of the memory fusing touched).
  InputList inputs_;
  std::vector<GraphOutput> outputs_;
  /// Keyed by Value::name_, read through the slot's Value (ValueName): Values
  /// are never freed before the graph (erased nodes' results stay allocated)
  /// and never renamed, so a slot is a hash and a pointer (16 bytes) and
  /// inserting a value allocates no key string. Entries of dead values
  /// (isLive) are not erased, only skipped and overwritten. A flat table: the
  /// rewrite driver looks names up per rewrite, and at 10^6 values a
  /// node-based map's cache misses dominated fusing.
  StringViewMap<Value *, ValueName> valuesByName_;
  /// Constants by FQN, read through the input (which never moves). The
  /// rewrite driver asks it per new constant (is the derived FQN taken?), and
  /// before it a driver rebuilt a table of its own per run: at 10^6 nodes a
  /// tenth of fusing went into hashing every constant again.
  struct InputFqn {
    std::string_view operator()(const GraphInput *in) const { return in->fqn; }
  };
  StringViewMap<const GraphInput *, InputFqn> constantsByFqn_;
  /// Node targets, one copy each (StableVector: never move, nodes point at
  /// them).
  StableVector<std::string, 32> targets_;
  StringViewMap<const std::string *> targetsByName_;
  /// Every value's prototype, interned (Value::proto_ points here).
  ProtoTable protos_;
};

} // namespace graft
