//===- Rewriter.cpp - The worklist driver and transactional rewrites ------===//
//
// A rewrite happens in three phases:
//  1. stage: evaluate the rewrite statements without touching the graph.
//     Constant transforms are planned data-free and named through the FQN
//     registry (a request seen before resolves to the existing constant);
//     new nodes are bound and shape-inferred against scratch values that
//     stand for not-yet-created constants and results;
//  2. check: replacement prototypes equal the replaced ones; every used
//     result of the root is replaced (no escape); no new node consumes a
//     value of the node it replaces, and no redefined interior value has a
//     user before the insertion point (no cycle); constant data computes;
//  3. commit: add constants (as parameters with their registry FQN and
//     data), create nodes before the root, redirect uses, erase the root and
//     whatever became dead.
// Only phase 3 mutates the graph, and it cannot fail, so a refused rewrite
// leaves the graph exactly as it was.
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/Rewriter.h"

#include "FqnNaming.h"
#include "Matcher.h"
#include "RewriteUtil.h"
#include "RootIndex.h"

#include "graft/ir/Verifier.h"
#include "graft/ops/BoundArgs.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <deque>
#include <span>
#include <unordered_map>
#include <unordered_set>

namespace graft::rewrite {

using detail::CExpr;
using detail::CompiledRule;
using detail::CStmt;
using detail::EvalValue;
using detail::Matcher;
using detail::NodeBinding;
using detail::RootIndex;

//===----------------------------------------------------------------------===//
// CompiledRules
//===----------------------------------------------------------------------===//

CompiledRules::CompiledRules(CompiledRules &&) noexcept = default;
CompiledRules &CompiledRules::operator=(CompiledRules &&) noexcept = default;
CompiledRules::~CompiledRules() = default;

const Rule &CompiledRules::rule(std::size_t i) const {
  return rules_[i]->rule();
}

std::vector<std::size_t> CompiledRules::find(std::string_view name) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rules_.size(); ++i)
    if (rules_[i]->rule().name == name)
      out.push_back(i);
  return out;
}

Expected<CompiledRules> CompiledRules::compile(std::vector<Rule> rules, const OpRegistry *registry,
                                               const ConstantTransformRegistry *transforms) {
  CompiledRules out;
  out.registry_ = registry ? registry : &OpRegistry::builtin();
  out.transforms_ = transforms ? transforms : &ConstantTransformRegistry::builtin();
  std::vector<Diagnostic> errors;
  for (Rule &r : rules) {
    auto cr = detail::compileRule(r, *out.registry_, *out.transforms_);
    if (!cr.ok()) {
      for (const Diagnostic &d : cr.diags())
        errors.push_back(d);
      continue;
    }
    (*cr)->index = out.rules_.size();
    out.rules_.push_back(std::move(*cr));
  }
  if (!errors.empty())
    return Failure(std::move(errors));
  out.byBenefit_.resize(out.rules_.size());
  for (std::size_t i = 0; i < out.rules_.size(); ++i)
    out.byBenefit_[i] = i;
  std::stable_sort(out.byBenefit_.begin(), out.byBenefit_.end(), [&](std::size_t a, std::size_t b) {
    return out.rules_[a]->rule().benefit > out.rules_[b]->rule().benefit;
  });
  return out;
}

namespace {

/// A node's schema: the one bound to it, else the builtin registry's for its
/// target (graphs parsed without binding, as tests do). In-place checks need
/// it: an op whose schema is unknown here cannot be seen to mutate.
const OpSchema *schemaOf(const Node &n) {
  return n.schema() ? n.schema() : OpRegistry::builtin().lookup(n.target());
}

/// The values node `n` updates in place (none when its schema is unknown or
/// mutates nothing, the common case, which needs no binding).
std::vector<Value *> mutatedBy(const Node &n) {
  const OpSchema *s = schemaOf(n);
  if (!s || !s->mutatesAnArgument())
    return {};
  auto b = BoundArgs::bind(*s, n.args(), n.kwargs(), n.name());
  return b.ok() ? b->mutatedValues() : std::vector<Value *>{};
}

/// e = EvalValue::value(x), in place: a staged constant's result is
/// written into its slot directly (no temporary built, moved and destroyed
/// per statement; the slot keeps its string's and list's buffers).
void setValue(EvalValue &e, const Value *x) {
  e.kind = x ? EvalValue::Kind::Value : EvalValue::Kind::None;
  e.v = x;
  e.b = false;
  e.i = 0;
  e.f = 0;
  e.dt = DType::F32;
  e.s.clear();
  if (!e.dim.isConstant() || e.dim.constant() != 0)
    e.dim = Dim();
  e.list.clear();
}

/// Whether `c` may stay in a value name ([A-Za-z0-9_]).
constexpr bool keepInName(unsigned char c) {
  return static_cast<unsigned char>(c - 'a') < 26 || static_cast<unsigned char>(c - 'A') < 26 ||
         static_cast<unsigned char>(c - '0') < 10 || c == '_';
}

/// Writes `fqn` as a value name (every character outside [A-Za-z0-9_]
/// becomes '_') to out[0, fqn.size()).
void sanitizeInto(std::string_view fqn, char *out) {
  // Sixteen characters per step (GCC/Clang vector extensions: SSE2 on x86,
  // NEON on ARM): every new constant's FQN, tens of characters, goes
  // through here, and a byte loop was 2.5 % of fusing's instructions.
  using Bytes = unsigned char __attribute__((vector_size(16)));
  std::size_t i = 0;
  for (; i + 16 <= fqn.size(); i += 16) {
    Bytes c;
    std::memcpy(&c, fqn.data() + i, 16);
    Bytes keep = (Bytes)((Bytes)(c - 'a') < 26) | (Bytes)((Bytes)(c - 'A') < 26) |
                 (Bytes)((Bytes)(c - '0') < 10) | (Bytes)(c == '_');
    Bytes underscores = (Bytes){} + static_cast<unsigned char>('_');
    Bytes named = (c & keep) | (underscores & ~keep);
    std::memcpy(out + i, &named, 16);
  }
  for (; i < fqn.size(); ++i)
    out[i] = keepInName(static_cast<unsigned char>(fqn[i])) ? fqn[i] : '_';
}

std::string sanitizeName(std::string_view fqn) {
  if (fqn.empty())
    return "c";
  std::string out(fqn.size(), '\0');
  sanitizeInto(fqn, out.data());
  return out;
}

template <class Vec> void bump(Vec &v, const std::string &key) {
  for (auto &kv : v)
    if (kv.first == key) {
      ++kv.second;
      return;
    }
  v.emplace_back(key, 1);
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

class Driver {
public:
  Driver(Graph &graph, const CompiledRules &rules, FqnRegistry &registry,
         const RewriteOptions &options)
      : graph_(graph), rules_(rules), registry_(registry), options_(options), matcher_(graph),
        enabled_(rules.size(), true), index_(rules, enabledFor(rules, options)) {
    enabled_ = enabledFor(rules, options);
    failures_.resize(rules.size());
    result_.stats.resize(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i) {
      result_.stats[i].rule = rules.rule(i).name;
      result_.stats[i].variant = rules.rule(i).variant;
      failures_[i].assign(rules.compiled(i).sites.size() + 1, 0);
    }
    // Room for what a run typically adds: about one registry entry per
    // constant (a packed weight, transposed scales), so the registry's
    // indexes do not rehash into fresh memory as the run goes. The tables are
    // zeroed mappings: slots never filled are never touched. (Graph
    // constants are found through the graph's own index by FQN.)
    registry_.reserve(graph_.numConstants());
    scratch_ = std::make_unique<Graph>("scratch");
  }

  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;
  /// Nodes still queued (a run stopped by a limit or an error) get their
  /// passScratch() back to 0.
  ~Driver() { clearWorklist(); }

  Expected<RewriteResult> run();

private:
  enum class Outcome { Applied, Rejected };
  struct StagedConst {
    const ConstantTransform *transform = nullptr;
    /// The normalized arguments and planned prototype: a plan memo's (it
    /// outlives the transaction) or this constant's own.
    const TransformArgs *memoArgs = nullptr;
    const TensorProto *memoProto = nullptr;
    const std::string *fqnTail = nullptr; ///< the plan memo's, see ensureFqn
    TransformArgs ownArgs;
    TensorProto ownProto;
    const TransformArgs &args() const { return memoArgs ? *memoArgs : ownArgs; }
    const TensorProto &proto() const { return memoProto ? *memoProto : ownProto; }
    /// The request, by reference: source FQNs and argument text are copied
    /// into the transaction's arena (a graph input's FQN may move when the
    /// commit adds inputs), the transform name is the registry's.
    std::array<std::string_view, 4> sourceArray{};
    std::string_view argsText;
    TransformRequestRef request() const {
      return {std::span<const std::string_view>(sourceArray.data(), numInputs), transform->name,
              argsText};
    }
    std::string_view key; ///< request().key(), computed once (in the arena)
    uint64_t keyHash = 0; ///< its StringViewMap hash, computed once
    uint64_t fqnHash = 0; ///< the hash of `fqn` when ensureFqn computed it, else 0
    /// deriveFqn(request()) in the arena and its hash, once computed (by
    /// prefetchCommit or ensureFqn); empty before.
    std::string_view fqnBase;
    uint64_t fqnBaseHash = 0;
    /// sanitizeName(fqnBase) in the arena and its hash, when prefetchCommit
    /// computed them.
    std::string_view valueName;
    uint64_t valueNameHash = 0;
    /// Real or scratch values (at most 4: stageConst refuses more); no
    /// vector allocated per staged constant.
    std::array<const Value *, 4> inputArray{};
    std::size_t numInputs = 0;
    std::span<const Value *const> inputs() const { return {inputArray.data(), numInputs}; }
    /// Empty until ensureFqn names it; then the arena's or a registry
    /// entry's (both outlive the transaction's use of it).
    std::string_view fqn;
    bool reuse = false;        ///< registry entry exists (maybe not in this graph)
    Value *existing = nullptr; ///< the graph constant for a reused entry
    Value *scratch = nullptr;  ///< stands for the constant while staging
    Tensor data;
    bool hasData = false;
    /// Deferred mode: computes the data when it is needed.
    std::shared_ptr<const DeferredData> deferred;
    /// The rewrite statement or call asking for it (the compiled rule's, which
    /// outlives the run: not copied per staged constant).
    const SourceRange *loc = nullptr;
  };
  struct NodeMemo;
  struct StagedNode {
    const CStmt *stmt = nullptr;
    std::vector<Argument> args;
    std::vector<std::pair<std::string, Argument>> kwargs;
    /// Results and their scratch values (one per result): a node memo's
    /// (it outlives the transaction) or this node's own.
    const NodeMemo *memo = nullptr;
    std::vector<InferredResult> ownResults;
    std::vector<Value *> ownScratch;
    const std::vector<InferredResult> &results() const;
    const std::vector<Value *> &scratch() const;
    /// Calls f for every value argument, positional then keyword (as
    /// Node::forEachOperand); f may take Value *& to rewrite them.
    template <class F> void forEachValue(F &&f) {
      for (Argument &a : args)
        a.forEachValue(f);
      for (auto &kv : kwargs)
        kv.second.forEachValue(f);
    }
    template <class F> void forEachValue(F &&f) const {
      for (const Argument &a : args)
        a.forEachValue(f);
      for (const auto &kv : kwargs)
        kv.second.forEachValue(f);
    }
  };
  struct Txn {
    std::vector<EvalValue> slots;
    std::vector<EvalValue> values;
    std::vector<int> setSlots, setValues;
    std::vector<StagedConst> consts;
    std::vector<StagedNode> nodes;
    /// Forward statements and the existing (or scratch) value each forwards.
    std::vector<std::pair<const CStmt *, Value *>> forwards;
    std::string reject;
  };

  static std::vector<bool> enabledFor(const CompiledRules &rules, const RewriteOptions &o) {
    std::vector<bool> e(rules.size(), o.onlyRules.empty());
    for (std::size_t i = 0; i < rules.size() && !o.onlyRules.empty(); ++i)
      e[i] = std::find(o.onlyRules.begin(), o.onlyRules.end(), rules.rule(i).name) !=
             o.onlyRules.end();
    return e;
  }

  bool processNode(Node *n, Status &error);
  Outcome apply(const CompiledRule &rule, Node *root, Status &error);
  /// Multi-root rules: where the fused nodes go (before the first or the
  /// last root in graph order), or null with `reason` set when neither
  /// keeps the graph in order.
  Node *multiRootInsertionPoint(std::string &reason);
  bool stage(const CompiledRule &rule, Txn &t);
  bool stageConst(const CompiledRule &rule, const CStmt *stmt, const ConstantTransform &tf,
                  const std::vector<CExpr> &args,
                  const std::vector<std::pair<std::string, CExpr>> &kwargs, Txn &t, EvalValue &out);
  Expected<Argument> toArgument(const EvalValue &v) const;
  /// Appends a new node's argument that needs no evaluation (a literal, a
  /// captured argument, a matched or staged value of a scalar kind) without
  /// the EvalValue round trip; false: `e` takes the general path.
  bool directArgument(const CExpr &e, const Txn &t, std::vector<Argument> &out) const;
  /// A literal-argument transform statement planned for these input
  /// prototypes: its normalized arguments, their canonical text, the plan.
  struct PlanMemo {
    uint64_t print = 0; ///< protoHash of the inputs, combined
    /// The prototypes it was planned for: interned (the graph's or the
    /// scratch graph's, both outliving the run), so the same pointers are
    /// the same prototypes (see findPlan).
    std::vector<const TensorProto *> inputs;
    TransformArgs args;
    std::string argsText;
    TransformPlan plan;
    /// The FQN after the source names: ".transform_args" (see
    /// FqnRegistry::deriveFqn).
    std::string fqnTail;
    /// Stands for this statement's constant while staging. The statement is
    /// staged at most once per transaction, and the prototype never changes:
    /// no pooled value re-prototyped per rewrite.
    mutable Value *scratch = nullptr;
  };
  const PlanMemo *findPlan(const CStmt *stmt, const TensorProto *const *protos,
                           std::size_t n) const;
  const PlanMemo *rememberPlan(const CStmt *stmt, std::string_view transform,
                               const TensorProto *const *protos, std::size_t n,
                               const TransformArgs &args, const TransformPlan &plan);
  /// A new-node statement bound and shape-inferred for arguments of this
  /// shape: binding and inference are pure functions of the arguments'
  /// literals and the kinds and prototypes of their tensor values (a memo
  /// is only kept when every value argument is a tensor: symbolic scalars
  /// infer from their producer and name).
  struct NodeMemo {
    uint64_t print = 0;         ///< protoHash of the tensor arguments, combined
    std::vector<Argument> args; ///< value pointers are not compared
    std::vector<std::pair<std::string, Argument>> kwargs;
    /// Of the value arguments, in forEachValue order: interned (see
    /// PlanMemo::inputs).
    std::vector<const TensorProto *> protos;
    std::vector<InferredResult> results;
    std::vector<Value *> scratch; ///< one per result (as PlanMemo::scratch)
  };
  const NodeMemo *findNodeMemo(const CStmt *stmt, const StagedNode &sn) const;
  /// Moves `results` into a new memo, or leaves them (null) when none is kept.
  const NodeMemo *rememberNode(const CStmt *stmt, const StagedNode &sn,
                               std::vector<InferredResult> &results);
  /// A scratch value owned by a memo (not from the per-transaction pool).
  Value *memoScratch(ValueKind kind, const TensorProto &proto);
  /// The FQN a new staged constant will get (named on first need: when a
  /// chained transform keys on it, or at commit).
  std::string_view ensureFqn(StagedConst &sc, const Txn &t);
  /// Derives a staged constant's FQN (sc.fqnBase) and starts loading the
  /// table slots its commit will probe: the FQN in the registry and among
  /// the graph's constants, its value name in the graph. At 10^6 nodes each
  /// is a cache miss; prefetched while the registry lookup of the request
  /// misses, they overlap instead of following one another at commit.
  void prefetchCommit(StagedConst &sc);
  /// Sets sc.fqnBase (FqnRegistry::deriveFqn of its request, in the arena)
  /// and its hash, unless already set.
  void deriveFqnBase(StagedConst &sc);
  /// Deferred mode: gives every new staged constant the computation of its
  /// data (chained transforms feed on the staged constant before them).
  void deferConstants(Txn &t);
  /// `base`, else `base_N` for the next N not taken (a counter per base, so
  /// probing does not restart at 1). `permanent`: the name goes to a value
  /// this run never removes (a graph input).
  /// `*hash` (if given) receives the name's StringViewMap hash, for the
  /// graph's insert.
  /// `baseHash`: StringViewMap<>::hash(base) when the caller has it, else 0.
  /// The name is `base` itself or a view of nameBuf_: valid until the next
  /// call (the graph copies it). No string is allocated per name.
  std::string_view freshName(std::string_view base, bool permanent = false,
                             uint64_t *hash = nullptr, uint64_t baseHash = 0);
  Value *scratchValue(ValueKind kind, const TensorProto &proto);
  //===-- The worklist --------------------------------------------------===//
  // A stack of nodes to visit, each node at most once: a node's
  // passScratch() holds its slot (index + 1, 0: not queued), so enqueueing a
  // queued node moves it to the top (the slot it had is nulled) and erasing
  // a node nulls its slot. Pops skip nulls. (A set of erased nodes, asked at
  // every pop, was a cache miss per pop at 10^6 nodes, and a node queued
  // twice was matched twice.)
  static constexpr uint32_t kPending = 1u << 31;      ///< in eraseDead's candidates
  static constexpr uint32_t kSlotMask = kPending - 1; ///< worklist index + 1
  void enqueue(Node *n) {
    if (!n)
      return;
    uint32_t s = n->passScratch();
    if (s & kSlotMask)
      worklist_[(s & kSlotMask) - 1] = nullptr;
    if (worklist_.size() >= kSlotMask)
      compactWorklist();
    worklist_.push_back(n);
    n->setPassScratch((s & ~kSlotMask) | static_cast<uint32_t>(worklist_.size()));
  }
  /// The next node to visit, or null when the worklist is empty.
  Node *popWork() {
    while (!worklist_.empty()) {
      Node *n = worklist_.back();
      worklist_.pop_back();
      if (n) {
        n->setPassScratch(n->passScratch() & ~kSlotMask);
        return n;
      }
    }
    return nullptr;
  }
  /// Drops `n` (about to be erased) from the worklist.
  void forget(const Node *n) {
    if (uint32_t s = n->passScratch() & kSlotMask)
      worklist_[s - 1] = nullptr;
  }
  /// Removes the nulls and renumbers the slots (only when the slot field
  /// would overflow: 2^31 pushes without a pop).
  void compactWorklist() {
    std::size_t k = 0;
    for (Node *n : worklist_)
      if (n) {
        worklist_[k++] = n;
        n->setPassScratch((n->passScratch() & ~kSlotMask) | static_cast<uint32_t>(k));
      }
    worklist_.resize(k);
  }
  /// Empties the worklist, leaving every node's passScratch() 0.
  void clearWorklist() {
    for (Node *n : worklist_)
      if (n)
        n->setPassScratch(0);
    worklist_.clear();
  }
  void eraseDead(Node *root, std::vector<Node *> &candidates, std::vector<std::string> *removed);
  /// Whether eraseDead's last call erased `n` (its erasedNow_ list, sorted
  /// when long).
  bool erasedNow(const Node *n) const {
    if (erasedNow_.size() <= 16)
      return std::find(erasedNow_.begin(), erasedNow_.end(), n) != erasedNow_.end();
    return std::binary_search(erasedNow_.begin(), erasedNow_.end(), n);
  }

  Graph &graph_;
  const CompiledRules &rules_;
  FqnRegistry &registry_;
  const RewriteOptions &options_;
  Matcher matcher_;
  std::vector<bool> enabled_;
  RootIndex index_;
  RewriteResult result_;
  std::vector<std::vector<uint64_t>> failures_;
  std::vector<Node *> worklist_;
  /// The nodes eraseDead's last call erased (their slots are free: compared
  /// as pointers, never read).
  std::vector<const Node *> erasedNow_;
  /// The next suffix to try per base name (keys in counterNames_).
  StringViewMap<uint64_t> nameCounters_;
  StringArena counterNames_;
  /// freshName's candidate names ("linear_q4gsw_17"), one buffer reused.
  std::string nameBuf_;
  std::unique_ptr<Graph> scratch_;
  std::vector<Value *> scratchPool_[4];
  std::size_t scratchUsed_[4] = {0, 0, 0, 0};
  /// Per statement, a few plans (distinct weight shapes; bounded).
  /// (A deque: staged constants point at their memo's arguments and prototype.)
  std::unordered_map<const CStmt *, std::deque<PlanMemo>> plans_;
  /// Per new-node statement, a few inferred results (distinct shapes; bounded).
  std::unordered_map<const CStmt *, std::deque<NodeMemo>> nodeMemos_;
  std::size_t memoScratchCount_ = 0;
  Txn txn_; ///< reused by every apply (its vectors keep their capacity)
  std::vector<std::pair<const Value *, Value *>> realScratch_;
  std::vector<uint32_t> opaqueScratch_;
  std::vector<std::pair<Value *, Value *>> replace_;
  std::vector<const Node *> matched_;
  std::vector<Node *> roots_; ///< the matched roots (several for a multi-root rule)
  std::vector<Node *> created_, touched_, candidates_, producers_;
  std::vector<std::pair<Value *, std::string>> symbolNames_;
  std::vector<const Tensor *> dataInputs_; ///< a staged constant's input data
  /// The staged constants' strings (source FQNs, argument text, keys,
  /// FQNs): reset per transaction, so no heap string per staged constant.
  StringArena txnStrings_;
  /// A new node's results (names and prototypes move into the graph).
  std::vector<Graph::ResultSpec> resultSpecs_;
  bool stop_ = false;
};

std::string_view Driver::freshName(std::string_view base, bool permanent, uint64_t *hash,
                                   uint64_t baseHash) {
  uint64_t h = baseHash ? baseHash : StringViewMap<Value *>::hash(base);
  uint64_t *counter = nameCounters_.find(base, h);
  if (!counter) {
    // First request for this base. A permanent name keeps `base` taken for
    // good, so a later request probing from `base` again reaches the same
    // `base_1`, ... a stored counter would: no counter needed (constants'
    // bases are unique, and would otherwise grow this map per rewrite).
    if (!graph_.findValue(base, h)) {
      if (!permanent)
        nameCounters_.insert(counterNames_.copy(base), 1, h);
      if (hash)
        *hash = h;
      return base;
    }
    std::string_view key = counterNames_.copy(base);
    nameCounters_.insert(key, 0, h);
    counter = nameCounters_.find(key, h);
  }
  uint64_t &n = *counter;
  // One buffer for every candidate: `base` then "_N" rewritten in place.
  std::string &cand = nameBuf_;
  cand.assign(base);
  const std::size_t stem = cand.size();
  char digits[24];
  for (;; ++n) {
    cand.resize(stem);
    if (n != 0) {
      digits[0] = '_';
      char *end = std::to_chars(digits + 1, digits + sizeof digits, n).ptr;
      cand.append(digits, static_cast<std::size_t>(end - digits));
    }
    uint64_t ch = StringViewMap<Value *>::hash(cand);
    if (!graph_.findValue(cand, ch)) {
      ++n;
      if (hash)
        *hash = ch;
      return cand;
    }
  }
}

namespace {

uint64_t combinePrint(uint64_t h, uint64_t x) {
  return (h ^ x) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
}

} // namespace

const Driver::PlanMemo *Driver::findPlan(const CStmt *stmt, const TensorProto *const *protos,
                                         std::size_t n) const {
  auto it = plans_.find(stmt);
  if (it == plans_.end())
    return nullptr;
  // Values' prototypes are interned (the graph's, or the scratch graph's),
  // and both tables outlive the run: the same pointers are the same
  // prototypes, without hashing or comparing them.
  for (const PlanMemo &m : it->second)
    if (m.inputs.size() == n && std::equal(protos, protos + n, m.inputs.begin()))
      return &m;
  uint64_t print = 0;
  for (std::size_t i = 0; i < n; ++i)
    print = combinePrint(print, protoHash(*protos[i]));
  for (const PlanMemo &m : it->second) {
    bool same = m.print == print && m.inputs.size() == n;
    for (std::size_t i = 0; i < n && same; ++i)
      same = protoEqual(*m.inputs[i], *protos[i]);
    if (same)
      return &m;
  }
  return nullptr;
}

const Driver::PlanMemo *Driver::rememberPlan(const CStmt *stmt, std::string_view transform,
                                             const TensorProto *const *protos, std::size_t n,
                                             const TransformArgs &args, const TransformPlan &plan) {
  std::deque<PlanMemo> &memos = plans_[stmt];
  if (memos.size() >= 16) // a graph of many weight shapes: plan those afresh
    return nullptr;
  PlanMemo &m = memos.emplace_back();
  m.inputs.assign(protos, protos + n);
  for (std::size_t i = 0; i < n; ++i)
    m.print = combinePrint(m.print, protoHash(*protos[i]));
  m.args = args;
  m.argsText = args.canonicalText();
  m.fqnTail = detail::deriveFqnTail(transform, m.argsText);
  m.plan = plan;
  return &m;
}

namespace {

/// Whether `a` (staged) has the shape of `m` (memoized): equal literals,
/// lists of the same length, tensor values with equal prototypes (taken in
/// order from `protos`; `ptrs` true: the same interned prototypes). A
/// non-tensor value never matches.
bool sameShape(const Argument &a, const Argument &m, const std::vector<const TensorProto *> &protos,
               bool ptrs, std::size_t &k) {
  if (a.kind() != m.kind())
    return false;
  if (a.isValue()) {
    if (!a.value()->isTensor() || k >= protos.size())
      return false;
    const TensorProto &p = a.value()->proto();
    std::size_t i = k++;
    return ptrs ? &p == protos[i] : protoEqual(p, *protos[i]);
  }
  if (a.isList()) {
    if (a.list().size() != m.list().size())
      return false;
    for (std::size_t i = 0; i < a.list().size(); ++i)
      if (!sameShape(a.list()[i], m.list()[i], protos, ptrs, k))
        return false;
    return true;
  }
  return a == m;
}

} // namespace

const Driver::NodeMemo *Driver::findNodeMemo(const CStmt *stmt, const StagedNode &sn) const {
  auto it = nodeMemos_.find(stmt);
  if (it == nodeMemos_.end())
    return nullptr;
  bool tensorsOnly = true;
  sn.forEachValue([&](const Value *v) { tensorsOnly = tensorsOnly && v->isTensor(); });
  if (!tensorsOnly)
    return nullptr; // never memoized (see NodeMemo)
  auto matches = [&](const NodeMemo &m, bool ptrs) {
    if (m.args.size() != sn.args.size() || m.kwargs.size() != sn.kwargs.size())
      return false;
    std::size_t k = 0;
    bool same = true;
    for (std::size_t i = 0; i < sn.args.size() && same; ++i)
      same = sameShape(sn.args[i], m.args[i], m.protos, ptrs, k);
    for (std::size_t i = 0; i < sn.kwargs.size() && same; ++i)
      same = sn.kwargs[i].first == m.kwargs[i].first &&
             sameShape(sn.kwargs[i].second, m.kwargs[i].second, m.protos, ptrs, k);
    return same && k == m.protos.size();
  };
  // The same interned prototypes first (see findPlan): no hashing.
  for (const NodeMemo &m : it->second)
    if (matches(m, true))
      return &m;
  uint64_t print = 0;
  sn.forEachValue([&](const Value *v) { print = combinePrint(print, protoHash(v->proto())); });
  for (const NodeMemo &m : it->second)
    if (m.print == print && matches(m, false))
      return &m;
  return nullptr;
}

const Driver::NodeMemo *Driver::rememberNode(const CStmt *stmt, const StagedNode &sn,
                                             std::vector<InferredResult> &results) {
  std::deque<NodeMemo> &memos = nodeMemos_[stmt];
  if (memos.size() >= 16) // a graph of many shapes: infer those afresh
    return nullptr;
  NodeMemo m;
  bool tensorsOnly = true;
  auto collect = [&](const Value *v) {
    if (v->isTensor()) {
      m.protos.push_back(&v->proto());
      m.print = combinePrint(m.print, protoHash(v->proto()));
    } else {
      tensorsOnly = false;
    }
  };
  sn.forEachValue(collect);
  if (!tensorsOnly)
    return nullptr;
  m.args = sn.args;
  m.kwargs = sn.kwargs;
  m.results = std::move(results);
  for (const InferredResult &r : m.results)
    m.scratch.push_back(memoScratch(r.kind, r.proto));
  return &memos.emplace_back(std::move(m));
}

Value *Driver::memoScratch(ValueKind kind, const TensorProto &proto) {
  std::string name = "m" + std::to_string(memoScratchCount_++);
  return kind == ValueKind::Tensor ? scratch_->addInput(InputKind::UserInput, name, proto)
                                   : scratch_->addScalarInput(kind, name);
}

const std::vector<InferredResult> &Driver::StagedNode::results() const {
  return memo ? memo->results : ownResults;
}

const std::vector<Value *> &Driver::StagedNode::scratch() const {
  return memo ? memo->scratch : ownScratch;
}

Value *Driver::scratchValue(ValueKind kind, const TensorProto &proto) {
  // Scratch values are reused from one transaction to the next (a pool per
  // kind): staging allocates no graph values.
  std::size_t k = static_cast<std::size_t>(kind);
  auto &pool = scratchPool_[k];
  if (scratchUsed_[k] < pool.size()) {
    Value *v = pool[scratchUsed_[k]++];
    scratch_->setProto(v, proto);
    return v;
  }
  std::string name = "t" + std::to_string(pool.size()) + "_" + std::to_string(k);
  Value *v = kind == ValueKind::Tensor ? scratch_->addInput(InputKind::UserInput, name, proto)
                                       : scratch_->addScalarInput(kind, name);
  pool.push_back(v);
  ++scratchUsed_[k];
  return v;
}

std::string_view Driver::ensureFqn(StagedConst &sc, const Txn &t) {
  if (!sc.fqn.empty())
    return sc.fqn;
  auto stagedHas = [&](std::string_view n) {
    for (const StagedConst &o : t.consts)
      if (o.fqn == n)
        return true;
    return false;
  };
  deriveFqnBase(sc);
  std::string_view base = sc.fqnBase;
  // The common case, a name nobody has: hashed once for the registry's and
  // the graph's tables here and for the inserts at commit.
  uint64_t h = sc.fqnBaseHash;
  if (!registry_.findByFqn(base, h) && !graph_.findConstant(base, h) && !stagedHas(base)) {
    sc.fqn = base;
    sc.fqnHash = h;
    return sc.fqn;
  }
  auto taken = [&](const std::string &n) { return graph_.findConstant(n) || stagedHas(n); };
  sc.fqn = txnStrings_.copy(detail::proposeFqnFrom(registry_, std::string(base), taken));
  return sc.fqn;
}

void Driver::deriveFqnBase(StagedConst &sc) {
  if (!sc.fqnBase.empty())
    return;
  // deriveFqn from its parts, written once into the arena: the memoized
  // tail spares re-reading the argument text per rewrite.
  sc.fqnBase = sc.fqnTail ? detail::fqnInArena(txnStrings_, sc.request().sources, *sc.fqnTail)
                          : txnStrings_.copy(FqnRegistry::deriveFqn(sc.request()));
  sc.fqnBaseHash = StringViewMap<Value *>::hash(sc.fqnBase);
}

void Driver::prefetchCommit(StagedConst &sc) {
  deriveFqnBase(sc);
  registry_.prefetchFqn(sc.fqnBaseHash);
  graph_.prefetchConstant(sc.fqnBaseHash);
  // The value name freshName tries first (commit names the constant's value
  // sanitizeName(fqn)), kept for the commit.
  if (!sc.fqnBase.empty()) {
    char *name = static_cast<char *>(txnStrings_.allocate(sc.fqnBase.size()));
    sanitizeInto(sc.fqnBase, name);
    sc.valueName = {name, sc.fqnBase.size()};
    sc.valueNameHash = StringViewMap<Value *>::hash(sc.valueName);
    graph_.prefetchValueName(sc.valueNameHash);
  }
}

void Driver::deferConstants(Txn &t) {
  for (StagedConst &sc : t.consts) {
    if (sc.existing)
      continue;
    std::vector<std::shared_ptr<const DeferredData>> inputs;
    inputs.reserve(sc.numInputs);
    for (const Value *in : sc.inputs()) {
      std::shared_ptr<const DeferredData> src;
      if (const GraphInput *gi = graph_.inputFor(in))
        src = gi->dataSource();
      for (const StagedConst &o : t.consts)
        if (o.scratch == in)
          src = o.deferred;
      if (!src)
        break; // a data-free graph: the constant is described, not computed
      inputs.push_back(std::move(src));
    }
    if (inputs.size() != sc.numInputs)
      continue;
    sc.deferred = deferTransform(*sc.transform, sc.args(), sc.proto(), std::move(inputs),
                                 std::string(sc.fqn), sc.request().str());
  }
}

Expected<Argument> Driver::toArgument(const EvalValue &v) const {
  using K = EvalValue::Kind;
  switch (v.kind) {
  case K::None:
    return Argument();
  case K::Bool:
    return Argument(v.b);
  case K::Int:
    return Argument(v.i);
  case K::Float:
    return Argument(v.f);
  case K::String:
    return Argument(v.s);
  case K::DType:
    return Argument(v.dt);
  case K::Value:
    return Argument(const_cast<Value *>(v.v));
  case K::List: {
    Argument::List l;
    for (const EvalValue &e : v.list) {
      GRAFT_TRY(Argument a, toArgument(e));
      l.push_back(std::move(a));
    }
    return Argument(std::move(l));
  }
  case K::Dim:
    return Diagnostic::error("the symbolic size " + v.dim.str() +
                             " cannot be passed as a constant argument");
  case K::Unknown:
    return Diagnostic::error(v.s);
  }
  return Diagnostic::error("unsupported value");
}

bool Driver::directArgument(const CExpr &e, const Txn &t, std::vector<Argument> &out) const {
  // Kinds whose EvalValue round trip (fromArgument, then toArgument) is the
  // identity; lists and the rest take the general path.
  auto scalar = [](Argument::Kind k) {
    using K = Argument::Kind;
    return k == K::None || k == K::Value || k == K::Bool || k == K::Int || k == K::Float ||
           k == K::DType || k == K::String;
  };
  // A slot's or staged value's EvalValue, converted in place (eval() would
  // copy it first); lists and unconvertible kinds take the general path.
  auto fromEval = [&](const EvalValue &v) {
    using K = EvalValue::Kind;
    if (v.kind == K::List || v.kind == K::Dim || v.kind == K::Unknown)
      return false;
    Expected<Argument> a = toArgument(v);
    if (!a.ok())
      return false;
    out.push_back(std::move(*a));
    return true;
  };
  switch (e.kind) {
  case Expr::Kind::Literal:
    if (!scalar(e.literal.kind()))
      return false;
    out.push_back(e.literal);
    return true;
  case Expr::Kind::Var: {
    // Resolved as Matcher::eval does: a capture of the match, else a slot
    // bound by an earlier rewrite statement.
    if (e.slot < 0)
      return false;
    auto slot = static_cast<std::size_t>(e.slot);
    const std::vector<detail::Capture> &caps = matcher_.captures();
    if (slot < caps.size() && caps[slot].kind == detail::Capture::Kind::Arg) {
      if (!scalar(caps[slot].arg->kind()))
        return false;
      out.push_back(*caps[slot].arg);
      return true;
    }
    if (slot < caps.size() && caps[slot].kind == detail::Capture::Kind::Unbound &&
        slot < t.slots.size())
      return fromEval(t.slots[slot]);
    return false;
  }
  case Expr::Kind::PatResult:
    if (e.rewriteValue >= 0) {
      auto rv = static_cast<std::size_t>(e.rewriteValue);
      return rv < t.values.size() && fromEval(t.values[rv]);
    }
    if (const Value *v = matcher_.patternValue(e.patNode, e.result)) {
      out.emplace_back(const_cast<Value *>(v));
      return true;
    }
    return false;
  default:
    return false;
  }
}

bool Driver::stageConst(const CompiledRule &rule, const CStmt *stmt, const ConstantTransform &tf,
                        const std::vector<CExpr> &args,
                        const std::vector<std::pair<std::string, CExpr>> &kwargs, Txn &t,
                        EvalValue &out) {
  std::size_t nin = tf.inputs.size();
  if (args.size() < nin) {
    t.reject = tf.name + ": expects " + std::to_string(nin) + " constant input(s)";
    return false;
  }
  // Inputs: constants with an FQN (graph constants, or constants staged by
  // an earlier statement of this rewrite).
  const Value *inputs[4] = {nullptr, nullptr, nullptr, nullptr};
  const TensorProto *protoPtrs[4] = {nullptr, nullptr, nullptr, nullptr};
  if (nin > 4) {
    t.reject = tf.name + ": more than 4 constant inputs";
    return false;
  }
  for (std::size_t i = 0; i < nin; ++i) {
    const Value *in = matcher_.valueOf(args[i], &t.slots, &t.values);
    if (!in || !in->isTensor()) {
      EvalValue v = matcher_.eval(args[i], &t.slots, &t.values);
      t.reject =
          tf.name + ": input '" + tf.inputs[i] + "' must be a constant tensor, got " + v.str();
      return false;
    }
    inputs[i] = in;
    protoPtrs[i] = &in->proto();
  }
  // A statement with literal arguments planned before for the same input
  // prototypes plans the same again (planTransform is a pure function of
  // them): reuse the normalized arguments, their canonical text and the
  // result prototype instead of re-running the transform's planner.
  const PlanMemo *memo = stmt && stmt->literalArgs ? findPlan(stmt, protoPtrs, nin) : nullptr;
  // Without a memo: the bound arguments and the plan, this constant's own
  // (built only here: the memo path, nearly every rewrite, constructs no
  // TransformArgs or prototype).
  std::optional<TransformArgs> ownArgs;
  std::optional<TransformPlan> ownPlan;
  if (memo) {
    if (memo->plan.identity) {
      setValue(out, inputs[0]);
      return true;
    }
  } else {
    Expected<TransformArgs> bound = TransformArgs();
    if (stmt && stmt->literalArgs) {
      bound = *stmt->literalArgs;
    } else {
      std::vector<Argument> pos;
      pos.reserve(args.size() - nin);
      for (std::size_t i = nin; i < args.size(); ++i) {
        auto a = toArgument(matcher_.eval(args[i], &t.slots, &t.values));
        if (!a.ok()) {
          t.reject = tf.name + ": " + a.diags()[0].message;
          return false;
        }
        pos.push_back(std::move(*a));
      }
      std::vector<std::pair<std::string, Argument>> kw;
      kw.reserve(kwargs.size());
      for (const auto &[k, e] : kwargs) {
        auto a = toArgument(matcher_.eval(e, &t.slots, &t.values));
        if (!a.ok()) {
          t.reject = tf.name + ": " + a.diags()[0].message;
          return false;
        }
        kw.emplace_back(k, std::move(*a));
      }
      bound = bindTransformArgs(tf, pos, kw);
      if (!bound.ok()) {
        t.reject = bound.diags()[0].message;
        return false;
      }
    }
    std::vector<const TensorProto *> protos(protoPtrs, protoPtrs + nin);
    Expected<TransformPlan> plan = planTransform(tf, protos, *bound);
    if (!plan.ok()) {
      t.reject = plan.diags()[0].message;
      return false;
    }
    if (stmt && stmt->literalArgs)
      memo = rememberPlan(stmt, tf.name, protoPtrs, nin, *bound, *plan);
    if (plan->identity) {
      setValue(out, inputs[0]);
      return true;
    }
    if (!memo) {
      ownArgs.emplace(std::move(*bound));
      ownPlan.emplace(std::move(*plan));
    }
  }
  // Name the request: source FQNs, transform, canonical arguments, all
  // views into the transaction's arena (no heap string per constant).
  std::array<std::string_view, 4> sources{};
  for (std::size_t i = 0; i < nin; ++i) {
    std::string_view fqn;
    bool found = false;
    if (const GraphInput *in = graph_.inputFor(inputs[i]);
        in && in->isConstant() && in->value == inputs[i] && !in->fqn.empty()) {
      fqn = in->fqn; // the graph's copy: stays put while inputs are added
      found = true;
    }
    for (StagedConst &o : t.consts)
      if (o.scratch == inputs[i]) {
        fqn = ensureFqn(o, t);
        found = true;
      }
    if (!found) {
      t.reject = tf.name + ": input '" + tf.inputs[i] + "' (%" + inputs[i]->name() +
                 ") is not a constant with an FQN";
      return false;
    }
    sources[i] = fqn;
  }
  std::string_view argsText =
      memo ? std::string_view(memo->argsText) : txnStrings_.copy(ownArgs->canonicalText());
  std::string_view key = detail::keyInArena(
      txnStrings_, {std::span<const std::string_view>(sources.data(), nin), tf.name, argsText});
  // The same request earlier in this transaction.
  for (const StagedConst &o : t.consts)
    if (o.key == key) {
      setValue(out, o.existing ? o.existing : o.scratch);
      return true;
    }
  StagedConst &sc = t.consts.emplace_back();
  sc.transform = &tf;
  sc.loc = stmt ? &stmt->src->loc : (args.empty() ? &rule.rule().loc : &args[0].src->loc);
  std::copy(inputs, inputs + nin, sc.inputArray.begin());
  sc.numInputs = nin;
  if (memo) {
    sc.memoArgs = &memo->args;
    sc.memoProto = &memo->plan.proto;
    sc.fqnTail = &memo->fqnTail;
  } else {
    sc.ownArgs = std::move(*ownArgs);
    sc.ownProto = std::move(ownPlan->proto);
  }
  sc.sourceArray = sources;
  sc.argsText = argsText;
  sc.key = key;
  sc.keyHash = StringViewMap<std::size_t>::hash(sc.key);
  if (sc.fqnTail)
    prefetchCommit(sc);
  if (const ProvenanceEntry *e = registry_.findByKey(sc.key, sc.keyHash)) {
    sc.reuse = true;
    sc.fqn = e->fqn;
    if (const GraphInput *c = graph_.findConstant(e->fqn)) {
      // The graph has the registry's constant (made by an earlier rewrite
      // or an earlier run). A graph constant of that name with another
      // prototype is not it: reusing the name would give the graph two
      // constants with one FQN.
      if (!c->value->proto().sameShapeAndDType(sc.proto())) {
        t.reject = "the registry names " + e->request.str() + " '" + std::string(e->fqn) +
                   "', but the graph's constant of that name is " + c->value->proto().str() +
                   ", not " + sc.proto().str();
        return false;
      }
      sc.existing = c->value;
      setValue(out, sc.existing);
      return true;
    }
  }
  if (memo) {
    if (!memo->scratch)
      memo->scratch = memoScratch(ValueKind::Tensor, memo->plan.proto);
    sc.scratch = memo->scratch;
  } else {
    sc.scratch = scratchValue(ValueKind::Tensor, sc.proto());
  }
  setValue(out, sc.scratch);
  return true;
}

bool Driver::stage(const CompiledRule &rule, Txn &t) {
  // Reset what the previous transaction set (EvalValues are not cheap to
  // rebuild wholesale on every rewrite), in place: no temporary EvalValue
  // built, moved and destroyed per slot.
  auto reset = [](EvalValue &e, std::string_view why) {
    e.kind = EvalValue::Kind::Unknown;
    e.v = nullptr;
    e.s.assign(why);
    e.list.clear();
  };
  for (int s : t.setSlots)
    reset(t.slots[static_cast<std::size_t>(s)], "not bound");
  for (int v : t.setValues)
    reset(t.values[static_cast<std::size_t>(v)], "not built");
  t.setSlots.clear();
  t.setValues.clear();
  if (t.slots.size() < rule.slotNames.size())
    t.slots.resize(rule.slotNames.size(), EvalValue::unknown("not bound"));
  if (t.values.size() < static_cast<std::size_t>(rule.numRewriteValues))
    t.values.resize(static_cast<std::size_t>(rule.numRewriteValues),
                    EvalValue::unknown("not built"));
  auto evalArg = [&](const CExpr &e, EvalValue &out) -> bool {
    if (e.kind == Expr::Kind::Call && e.transform)
      return stageConst(rule, nullptr, *e.transform, e.operands, e.kwargs, t, out);
    out = matcher_.eval(e, &t.slots, &t.values);
    return true;
  };
  for (const CStmt &st : rule.rewrite) {
    switch (st.kind) {
    case RewriteStmt::Kind::Let: {
      EvalValue v;
      if (!evalArg(st.value, v))
        return false;
      if (v.kind == EvalValue::Kind::Unknown) {
        t.reject = "computed attribute $" +
                   rule.slotNames[static_cast<std::size_t>(st.resultSlots[0])] + ": " + v.s;
        return false;
      }
      t.slots[static_cast<std::size_t>(st.resultSlots[0])] = std::move(v);
      t.setSlots.push_back(st.resultSlots[0]);
      break;
    }
    case RewriteStmt::Kind::Forward: {
      EvalValue v;
      if (!evalArg(st.value, v))
        return false;
      auto a = toArgument(v);
      if (!a.ok() || !a->isValue()) {
        t.reject = "forwarded value: " +
                   (a.ok() ? std::string("not a graph value") : a.diags()[0].message);
        return false;
      }
      // Only values already in the graph: a value this rewrite creates would
      // be named by the statement that creates it.
      bool created = false;
      for (const StagedConst &sc : t.consts)
        created = created || sc.scratch == a->value();
      for (const StagedNode &sn : t.nodes)
        created = created || std::find(sn.scratch().begin(), sn.scratch().end(), a->value()) !=
                                 sn.scratch().end();
      if (created) {
        t.reject = "a forwarded value must already exist in the graph";
        return false;
      }
      t.values[static_cast<std::size_t>(st.resultValues[0])] = EvalValue::value(a->value());
      t.setValues.push_back(st.resultValues[0]);
      t.forwards.emplace_back(&st, a->value());
      break;
    }
    case RewriteStmt::Kind::ConstTransform: {
      // Into the slot itself: stageConst writes its result last, after
      // it has read every argument, and leaves it as it was on failure.
      if (!stageConst(rule, &st, *st.transform, st.args, st.kwargs, t,
                      t.slots[static_cast<std::size_t>(st.resultSlots[0])]))
        return false;
      t.setSlots.push_back(st.resultSlots[0]);
      break;
    }
    case RewriteStmt::Kind::NewNode: {
      StagedNode sn;
      sn.stmt = &st;
      sn.args.reserve(st.args.size());
      sn.kwargs.reserve(st.kwargs.size());
      for (const CExpr &e : st.args) {
        if (directArgument(e, t, sn.args))
          continue;
        EvalValue v;
        if (!evalArg(e, v))
          return false;
        auto a = toArgument(v);
        if (!a.ok()) {
          t.reject = st.target + ": " + a.diags()[0].message;
          return false;
        }
        sn.args.push_back(std::move(*a));
      }
      for (const auto &[k, e] : st.kwargs) {
        EvalValue v;
        if (!evalArg(e, v))
          return false;
        auto a = toArgument(v);
        if (!a.ok()) {
          t.reject = st.target + ": argument '" + k + "': " + a.diags()[0].message;
          return false;
        }
        sn.kwargs.emplace_back(k, std::move(*a));
      }
      if (const NodeMemo *memo = findNodeMemo(&st, sn)) {
        sn.memo = memo;
      } else {
        const OpSchema &schema = *st.schema;
        const InferFn *fn = static_cast<const InferFn *>(st.inferFn);
        auto bound = BoundArgs::bind(schema, sn.args, sn.kwargs, st.baseName);
        if (!bound.ok()) {
          t.reject = bound.diags()[0].message;
          return false;
        }
        InferContext ctx{*bound, graph_.symbols(), st.baseName};
        auto inferred = (*fn)(ctx);
        if (!inferred.ok()) {
          t.reject = inferred.diags()[0].message;
          return false;
        }
        sn.memo = rememberNode(&st, sn, *inferred);
        if (!sn.memo) {
          sn.ownResults = std::move(*inferred);
          for (const InferredResult &r : sn.ownResults)
            sn.ownScratch.push_back(scratchValue(r.kind, r.proto));
        }
      }
      if (sn.results().size() < st.resultValues.size()) {
        t.reject = st.target + " yields " + std::to_string(sn.results().size()) + " result(s)";
        return false;
      }
      for (std::size_t i = 0; i < st.resultValues.size(); ++i) {
        setValue(t.values[static_cast<std::size_t>(st.resultValues[i])], sn.scratch()[i]);
        t.setValues.push_back(st.resultValues[i]);
      }
      t.nodes.push_back(std::move(sn));
      break;
    }
    }
  }
  return true;
}

Driver::Outcome Driver::apply(const CompiledRule &rule, Node *root, Status &error) {
  Txn &t = txn_;
  t.consts.clear();
  txnStrings_.reset();
  t.nodes.clear();
  t.forwards.clear();
  t.reject.clear();
  for (std::size_t &u : scratchUsed_)
    u = 0;
  // The matched nodes' results are erased at commit, their name entries
  // with them (a cache miss each at 10^6 values): start loading them now.
  for (const NodeBinding &b : matcher_.nodes())
    if (b.kind == NodeBinding::Kind::Node)
      for (const Value *o : b.node->outputs())
        graph_.prefetchNameEntry(o);
  //===-- 1. stage ----------------------------------------------------------===//
  if (!stage(rule, t)) {
    result_.stats[rule.index].rejected++;
    bump(result_.stats[rule.index].rejections, t.reject);
    return Outcome::Rejected;
  }

  //===-- 2. check ----------------------------------------------------------===//
  // The first node outside the match that mutates `v` in place (a schema
  // argument annotated `Tensor(a!)` bound to it), or null.
  auto inPlaceUpdater = [&](const Value *v) -> const Node * {
    for (const Node *u : v->users()) {
      if (std::find(matched_.begin(), matched_.end(), u) != matched_.end())
        continue;
      std::vector<Value *> mutated = mutatedBy(*u);
      if (std::find(mutated.begin(), mutated.end(), v) != mutated.end())
        return u;
    }
    return nullptr;
  };
  // Per-rewrite lists live in the driver (cleared, capacity kept).
  auto &replace = replace_; // original -> scratch
  auto &matched = matched_;
  replace.clear();
  matched.clear();
  for (const NodeBinding &b : matcher_.nodes())
    if (b.kind == NodeBinding::Kind::Node)
      matched.push_back(b.node);
  std::string reason;
  auto &roots = roots_;
  roots.assign(1, root);
  for (const RootSearch &rs : rule.rootSearches)
    roots.push_back(matcher_.nodes()[rs.root].node);
  auto isRoot = [&](const Node *n) {
    return n && std::find(roots.begin(), roots.end(), n) != roots.end();
  };
  // New nodes go just before the root, or for several roots before the
  // first or the last of them.
  Node *at = root;
  if (roots.size() > 1)
    at = multiRootInsertionPoint(reason);
  for (const StagedNode &sn : t.nodes) {
    for (std::size_t i = 0; i < sn.stmt->replaces.size() && reason.empty(); ++i) {
      auto [pn, pr] = sn.stmt->replaces[i];
      if (pn < 0)
        continue;
      const NodeBinding &b = matcher_.nodes()[static_cast<std::size_t>(pn)];
      if (b.kind != NodeBinding::Kind::Node) {
        reason = "the rewrite redefines a result of the absent optional node " +
                 rule.rule().nodes[static_cast<std::size_t>(pn)].targets[0];
        break;
      }
      Value *orig = b.node->output(static_cast<unsigned>(pr));
      const Value *nv = sn.scratch()[i];
      if (orig->kind() != nv->kind() ||
          (orig->isTensor() && !orig->proto().sameShapeAndDType(nv->proto()))) {
        reason = "replacement for %" + orig->name() + " is " +
                 (nv->isTensor() ? nv->proto().str() : std::string(name(nv->kind()))) +
                 " but the matched value is " +
                 (orig->isTensor() ? orig->proto().str() : std::string(name(orig->kind())));
        break;
      }
      replace.emplace_back(orig, sn.scratch()[i]);
    }
  }
  for (const auto &[st, fv] : t.forwards) {
    if (!reason.empty())
      break;
    auto [pn, pr] = st->replaces[0];
    const NodeBinding &b = matcher_.nodes()[static_cast<std::size_t>(pn)];
    if (b.kind != NodeBinding::Kind::Node) {
      reason = "the rewrite redefines a result of the absent optional node " +
               rule.rule().nodes[static_cast<std::size_t>(pn)].targets[0];
      break;
    }
    Value *orig = b.node->output(static_cast<unsigned>(pr));
    if (fv == orig || isRoot(fv->producer())) {
      reason = "would create a cycle: %" + orig->name() + " is forwarded to a result of the node " +
               "it replaces";
      break;
    }
    // A value a node outside the match updates in place (index_put_ on a
    // clone) cannot be forwarded: the update would land on the value it is
    // forwarded to (the clone's source) instead of a private copy.
    if (const Node *m = inPlaceUpdater(orig)) {
      reason = "%" + m->name() + " updates %" + orig->name() + " in place, so forwarding it to %" +
               fv->name() + " would move that update onto %" + fv->name();
      break;
    }
    if (orig->kind() != fv->kind() ||
        (orig->isTensor() && !orig->proto().sameShapeAndDType(fv->proto()))) {
      reason = "replacement for %" + orig->name() + " is " +
               (fv->isTensor() ? fv->proto().str() : std::string(name(fv->kind()))) +
               " but the matched value is " +
               (orig->isTensor() ? orig->proto().str() : std::string(name(orig->kind())));
      break;
    }
    replace.emplace_back(orig, fv);
  }
  // Escapes: every used result of every root must be replaced.
  for (const Node *r : roots)
    for (Value *out : r->outputs()) {
      if (!reason.empty())
        break;
      bool used = out->hasUses() || out->isGraphOutput();
      bool replaced = std::any_of(replace.begin(), replace.end(),
                                  [&](const auto &rp) { return rp.first == out; });
      if (used && !replaced)
        reason = "the rewrite drops %" + out->name() + ", which is still used";
    }
  // Cycles: new nodes are inserted just before `at`.
  if (reason.empty())
    for (const StagedNode &sn : t.nodes) {
      auto check = [&](Value *v) {
        if (v && isRoot(v->producer()) && reason.empty())
          reason = "would create a cycle: a new node consumes %" + v->name() +
                   ", a result of the node it replaces";
      };
      sn.forEachValue(check);
    }
  if (reason.empty()) {
    bool needOrder = false;
    // Roots' results are handled by the choice of `at`.
    for (const auto &[orig, nv] : replace)
      if (!isRoot(orig->producer()))
        needOrder = true;
    if (needOrder) {
      // A redefined interior value: users outside the match must come after
      // the insertion point (rare; renumbering is linear, so only done here).
      graph_.renumber();
      for (const auto &[orig, nv] : replace) {
        if (isRoot(orig->producer()))
          continue;
        for (const Node *u : orig->users())
          if (std::find(matched.begin(), matched.end(), u) == matched.end() &&
              u->order() < at->order() && reason.empty())
            reason = "would create a cycle: %" + orig->name() + " is used by %" + u->name() +
                     " before the fused node";
      }
    }
  }
  // In-place roots (side-effecting ops such as llama.update_cache) are
  // erased with the match, so their updates must be taken over by a new
  // node that mutates the same value, and each update moves to the
  // insertion point: a node outside the match that reads the value between
  // the root and `at` would see the other contents.
  if (reason.empty())
    for (const Node *r : roots) {
      for (const Value *x : mutatedBy(*r)) {
        if (!reason.empty())
          break;
        bool takenOver = false;
        for (const StagedNode &sn : t.nodes) {
          if (takenOver || !sn.stmt->schema || !sn.stmt->schema->mutatesAnArgument())
            continue;
          auto sb = BoundArgs::bind(*sn.stmt->schema, sn.args, sn.kwargs, "");
          if (!sb.ok())
            continue;
          std::vector<Value *> m = sb->mutatedValues();
          takenOver = std::find(m.begin(), m.end(), x) != m.end();
        }
        if (!takenOver) {
          reason = "the rewrite drops the in-place update of %" + x->name() + " by %" + r->name() +
                   " (no new node mutates it)";
          break;
        }
        // The nodes between the root and the insertion point, either way.
        const Node *from = r, *to = at;
        bool forward = false;
        for (const Node *n = graph_.nextNode(r); n; n = graph_.nextNode(n))
          if (n == at) {
            forward = true;
            break;
          }
        if (!forward)
          std::swap(from, to);
        for (const Node *n = forward ? graph_.nextNode(from) : from; n && n != to && reason.empty();
             n = graph_.nextNode(n)) {
          if (std::find(matched.begin(), matched.end(), n) != matched.end())
            continue;
          n->forEachOperand([&](Value *v) {
            if (v == x && reason.empty())
              reason = "%" + n->name() + " reads %" + x->name() +
                       " between its in-place update by %" + r->name() + " and the fused node";
          });
        }
      }
    }
  // Constant data (the only part that reads weights); deferred mode computes
  // it when the bytes are needed instead (see commit).
  if (reason.empty() && !options_.deferConstantData)
    for (StagedConst &sc : t.consts) {
      if (sc.existing)
        continue;
      std::vector<const Tensor *> &inputs = dataInputs_;
      inputs.clear();
      bool haveData = true;
      for (const Value *in : sc.inputs()) {
        const Tensor *d = nullptr;
        if (const GraphInput *gi = graph_.inputFor(in); gi && gi->value == in && gi->hasData())
          d = &gi->data();
        for (const StagedConst &o : t.consts)
          if (o.scratch == in)
            d = o.hasData ? &o.data : nullptr;
        if (!d || !d->defined())
          haveData = false;
        inputs.push_back(d);
      }
      if (!haveData)
        continue; // data-free graph: the constant is described, not computed
      auto data = computeTransform(*sc.transform, inputs, sc.args(), sc.proto());
      if (!data.ok()) {
        reason = data.diags()[0].message;
        break;
      }
      sc.data = std::move(*data);
      sc.hasData = true;
    }
  if (!reason.empty()) {
    result_.stats[rule.index].rejected++;
    bump(result_.stats[rule.index].rejections, reason);
    return Outcome::Rejected;
  }

  //===-- 3. commit ---------------------------------------------------------===//
  AppliedRewrite log;
  std::string rootName = options_.verifyEach ? root->name() : std::string();
  if (options_.recordLog) {
    log.rule = rule.rule().name;
    log.root = root->name();
  }
  // scratch -> graph (a handful of entries: a vector beats a hash map)
  std::vector<std::pair<const Value *, Value *>> &real = realScratch_;
  real.clear();
  auto realOf = [&](const Value *v) -> Value * {
    for (const auto &[from, to] : real)
      if (from == v)
        return to;
    return nullptr;
  };
  for (StagedConst &sc : t.consts)
    if (!sc.existing)
      ensureFqn(sc, t);
  if (options_.deferConstantData)
    deferConstants(t);
  for (StagedConst &sc : t.consts) {
    if (sc.existing) {
      registry_.noteReuse(*registry_.findByKey(sc.key, sc.keyHash), rule.rule().name);
      if (options_.recordLog)
        log.reused.emplace_back(sc.fqn);
      continue;
    }
    // The FQN the constant gets: a registry entry's (entries never move).
    std::string_view fqn;
    uint64_t fqnHash = sc.fqnHash;
    if (sc.reuse) {
      const ProvenanceEntry *e = registry_.findByKey(sc.key, sc.keyHash);
      registry_.noteReuse(*e, rule.rule().name);
      fqn = e->fqn;
    } else {
      // The registry copies the strings into its arena; the staged views
      // die with the transaction.
      fqn = registry_
                .recordAs(sc.request(), sc.fqn, sc.proto(), rule.rule().name, *sc.loc, sc.key,
                          sc.keyHash, fqnHash)
                .fqn;
    }
    // An intermediate of a chain (transpose, then pad) is recorded (its FQN
    // names the chain) but only becomes a graph constant if a new node uses it.
    bool used = false;
    for (const StagedNode &sn : t.nodes)
      sn.forEachValue([&](Value *v) { used = used || v == sc.scratch; });
    if (!used)
      continue;
    // Last use of the staged prototype: moved into the graph.
    uint64_t nameHash = 0;
    // prefetchCommit made (and hashed) the value name of the derived FQN.
    bool derived = !sc.valueName.empty() && fqn == sc.fqnBase;
    std::string sanitized;
    if (!derived)
      sanitized = sanitizeName(fqn);
    std::string_view name =
        freshName(derived ? sc.valueName : std::string_view(sanitized),
                  /*permanent=*/true, &nameHash, derived ? sc.valueNameHash : 0);
    Value *v = graph_.addInput(InputKind::Parameter, name, sc.proto(), fqn, nameHash, fqnHash);
    GraphInput &input = graph_.inputs()[static_cast<std::size_t>(v->inputIndex())];
    if (sc.hasData)
      input.setData(sc.data, ExternalData{});
    else if (sc.deferred)
      input.init = DeferredInit{sc.deferred};
    real.emplace_back(sc.scratch, v);
    if (options_.recordLog)
      (sc.reuse ? log.reused : log.constants).emplace_back(fqn);
  }
  // Staged nodes are not looked at after commit: their arguments move into
  // the graph instead of being copied (result prototypes are copied from the
  // node memo).
  std::vector<Node *> &created = created_;
  created.clear();
  for (StagedNode &sn : t.nodes) {
    sn.forEachValue([&](Value *&v) {
      if (Value *r = realOf(v))
        v = r;
    });
    std::vector<Graph::ResultSpec> &results = resultSpecs_;
    results.resize(sn.results().size());
    for (std::size_t i = 0; i < results.size(); ++i) {
      const InferredResult &r = sn.results()[i];
      // Into the spec's own buffer (reused rewrite after rewrite).
      results[i].name.assign(freshName(sn.stmt->baseName, false, &results[i].nameHash));
      results[i].kind = r.kind;
      results[i].protoRef = &r.proto; // interned by the graph, not copied
    }
    Node *n = graph_.createNodeWithSpecs(sn.stmt->target, std::move(sn.args), std::move(sn.kwargs),
                                         std::span<Graph::ResultSpec>(results), at);
    n->setSchema(sn.stmt->schema);
    n->metadata() = root->metadata();
    for (std::size_t i = 0; i < sn.scratch().size(); ++i)
      real.emplace_back(sn.scratch()[i], n->output(static_cast<unsigned>(i)));
    created.push_back(n);
    if (options_.recordLog)
      log.created.push_back(n->name());
  }
  std::vector<Node *> &touched = touched_;
  touched.clear();
  // A replaced symbolic scalar that a declared symbol is bound to (`sym u0`
  // names the value %u0) hands its name to the new value once it is gone,
  // so shapes and ranges that mention the symbol still find it.
  std::vector<std::pair<Value *, std::string>> &symbolNames = symbolNames_;
  symbolNames.clear();
  for (const auto &[orig, sv] : replace) {
    // A forwarded value that already exists maps to itself.
    Value *nv = realOf(sv);
    if (!nv)
      nv = sv;
    if (!orig->isTensor() && graph_.symbols().find(std::string(orig->name())) &&
        std::find(created.begin(), created.end(), nv->producer()) != created.end())
      symbolNames.emplace_back(nv, std::string(orig->name()));
    for (Node *u : orig->users())
      touched.push_back(u);
    graph_.replaceAllUsesWith(orig, nv);
  }
  std::vector<Node *> &candidates = candidates_;
  candidates.assign(1, root);
  for (const NodeBinding &b : matcher_.nodes())
    if (b.kind == NodeBinding::Kind::Node && b.node != root)
      candidates.push_back(b.node);
  eraseDead(root, candidates, options_.recordLog ? &log.removed : nullptr);
  for (auto &[nv, symbol] : symbolNames) {
    std::string made(nv->name());
    if (!graph_.renameValue(nv, symbol))
      continue; // still held by a node the rewrite left (not the root)
    if (options_.recordLog)
      std::replace(log.created.begin(), log.created.end(), made, symbol);
  }
  // Re-examine what the rewrite may have enabled: the new nodes (roots of
  // other rules), their users (their patterns may now include a new node).
  for (Node *n : touched)
    if (!erasedNow(n))
      enqueue(n);
  for (Node *n : created)
    enqueue(n);
  ++result_.rewrites;
  result_.stats[rule.index].applied++;
  if (options_.recordLog)
    result_.log.push_back(std::move(log));
  if (options_.verifyEach) {
    auto diags = verify(graph_);
    if (!diags.empty()) {
      for (Diagnostic &d : diags)
        d.note("after rule '" + rule.rule().name + "' rewrote %" + rootName);
      error = Failure(std::move(diags));
    }
  }
  return Outcome::Applied;
}

Node *Driver::multiRootInsertionPoint(std::string &reason) {
  auto &roots = roots_;
  // Graph order among the roots by walking from one towards the other in
  // both directions at once: as many steps as they are apart, where
  // renumbering the graph would cost a pass over it per rewrite.
  auto precedes = [&](const Node *a, const Node *b) {
    const Node *fwd = a, *back = a;
    while (fwd || back) {
      if (fwd && (fwd = graph_.nextNode(fwd)) == b)
        return true;
      if (back && (back = graph_.prevNode(back)) == b)
        return false;
    }
    return false;
  };
  std::vector<Node *> sorted(roots.begin(), roots.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    for (std::size_t j = i; j > 0 && precedes(sorted[j], sorted[j - 1]); --j)
      std::swap(sorted[j], sorted[j - 1]);
  Node *first = sorted.front(), *last = sorted.back();
  const auto &matched = matched_;
  auto inMatch = [&](const Node *n) {
    return std::find(matched.begin(), matched.end(), n) != matched.end();
  };
  // Before the last root: every outside user of another root must follow it.
  const Node *lateUser = nullptr;
  const Value *lateValue = nullptr;
  for (const Node *n = graph_.nextNode(first); n && n != last && !lateUser;
       n = graph_.nextNode(n)) {
    if (inMatch(n))
      continue;
    n->forEachOperand([&](Value *v) {
      if (!lateUser && v->producer() != last &&
          std::find(roots.begin(), roots.end(), v->producer()) != roots.end()) {
        lateUser = n;
        lateValue = v;
      }
    });
  }
  if (!lateUser)
    return last;
  // Before the first root: nothing the fused nodes read may be computed
  // after it. The staged nodes read captures and match results; those are
  // produced by matched nodes or outside nodes, so check every value the
  // rewrite statements name.
  bool early = true;
  for (const StagedNode &sn : txn_.nodes)
    sn.forEachValue([&](Value *v) {
      for (const Node *n = graph_.nextNode(first); early && n && n != last; n = graph_.nextNode(n))
        if (v && v->producer() == n)
          early = false;
    });
  if (early)
    return first;
  reason = "the roots cannot be fused into one node in order: %" + lateValue->name() +
           " (a root result) is used by %" + lateUser->name() + " before root %" + last->name() +
           ", and the fused node reads values computed after %" + first->name();
  return nullptr;
}

void Driver::eraseDead(Node *root, std::vector<Node *> &candidates,
                       std::vector<std::string> *removed) {
  // The root goes unconditionally (its results were all replaced); the rest
  // only when nothing uses them any more and they have no side effects. A
  // node is among the candidates at most once at a time (kPending), so none
  // is looked at after it is erased.
  erasedNow_.clear();
  std::size_t k = 0;
  for (Node *c : candidates)
    if (!(c->passScratch() & kPending)) {
      c->setPassScratch(c->passScratch() | kPending);
      candidates[k++] = c;
    }
  candidates.resize(k);
  while (!candidates.empty()) {
    Node *n = candidates.back();
    candidates.pop_back();
    n->setPassScratch(n->passScratch() & ~kPending);
    // Every root of a multi-root match goes too: its results were replaced
    // or unused, and an in-place root's update was taken over by a new node
    // (checked in apply).
    bool erasable = n == root || std::find(roots_.begin(), roots_.end(), n) != roots_.end() ||
                    (n->schema() && !n->schema()->properties.sideEffects);
    for (const Value *o : n->outputs())
      if (o->hasUses() || o->isGraphOutput())
        erasable = false;
    if (!erasable)
      continue;
    std::vector<Node *> &producers = producers_;
    producers.clear();
    n->forEachOperand([&](Value *v) {
      if (Node *p = v->producer())
        producers.push_back(p);
      // Users of an operand may now pass a use constraint.
      for (Node *u : v->users())
        if (u != n)
          enqueue(u);
    });
    if (removed)
      removed->push_back(n->name());
    forget(n);
    erasedNow_.push_back(n);
    graph_.eraseNode(n, Graph::ErasedResults::Reuse);
    for (Node *p : producers) {
      if (!(p->passScratch() & kPending)) {
        p->setPassScratch(p->passScratch() | kPending);
        candidates.push_back(p);
      }
      enqueue(p);
    }
  }
  if (erasedNow_.size() > 16)
    std::sort(erasedNow_.begin(), erasedNow_.end());
}

bool Driver::processNode(Node *n, Status &error) {
  const std::vector<uint32_t> *cands = index_.lookup(*n, opaqueScratch_);
  if (!cands)
    return false;
  for (uint32_t ri : *cands) {
    const CompiledRule &cr = rules_.compiled(ri);
    RuleStats &st = result_.stats[ri];
    ++st.tried;
    if (!matcher_.match(cr, n)) {
      int site = matcher_.failure().site;
      ++failures_[ri][site < 0 ? cr.sites.size() : static_cast<std::size_t>(site)];
      continue;
    }
    ++st.matched;
    if (apply(cr, n, error) == Outcome::Applied)
      return true;
  }
  return false;
}

Expected<RewriteResult> Driver::run() {
  result_.nodesBefore = graph_.numNodes();
  uint64_t limit = options_.maxRewrites ? options_.maxRewrites
                                        : 8 * static_cast<uint64_t>(graph_.numNodes()) + 1024;
  result_.stopReason = "iteration limit";
  Status error;
  for (unsigned iter = 1; iter <= std::max(1u, options_.maxIterations) && !stop_; ++iter) {
    result_.iterations = iter;
    uint64_t before = result_.rewrites;
    clearWorklist();
    // The worklist is a stack: push in the opposite of the visiting order.
    // Only nodes some rule is rooted at (processNode does nothing at the
    // others): walking the node list is a cache miss per node on a large
    // graph, and this way it is the only one.
    auto push = [&](Node &n) {
      if (index_.lookup(n, opaqueScratch_))
        enqueue(&n);
    };
    if (options_.topDown) {
      for (auto it = graph_.nodes().rbegin(); it != graph_.nodes().rend(); ++it)
        push(*it);
    } else {
      for (Node &n : graph_.nodes())
        push(n);
    }
    while (Node *n = popWork()) {
      processNode(n, error);
      if (!error.ok())
        return error.takeFailure();
      if (result_.rewrites >= limit) {
        stop_ = true;
        result_.stopReason = "rewrite limit";
        break;
      }
    }
    if (!stop_ && result_.rewrites == before) {
      result_.converged = true;
      result_.stopReason = "fixpoint";
      break;
    }
  }
  result_.nodesAfter = graph_.numNodes();
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const CompiledRule &cr = rules_.compiled(i);
    for (std::size_t s = 0; s < failures_[i].size(); ++s) {
      if (!failures_[i][s])
        continue;
      std::string label = s < cr.sites.size()
                              ? detail::formatLoc(cr.sites[s].loc) + " " + cr.sites[s].what
                              : std::string("injectivity");
      result_.stats[i].failures.emplace_back(label, failures_[i][s]);
    }
  }
  return std::move(result_);
}

} // namespace

Expected<RewriteResult> applyRules(Graph &graph, const CompiledRules &rules, FqnRegistry &registry,
                                   const RewriteOptions &options) {
  Driver d(graph, rules, registry, options);
  return d.run();
}

std::string formatResult(const RewriteResult &r, const CompiledRules &rules) {
  std::string out;
  for (const AppliedRewrite &a : r.log) {
    out += "fired " + a.rule + " at %" + a.root;
    if (!a.created.empty()) {
      out += " -> ";
      for (std::size_t i = 0; i < a.created.size(); ++i)
        out += (i ? ", %" : "%") + a.created[i];
    }
    if (!a.constants.empty()) {
      out += "; new constants ";
      for (std::size_t i = 0; i < a.constants.size(); ++i)
        out += (i ? ", " : "") + a.constants[i];
    }
    if (!a.reused.empty()) {
      out += "; reused ";
      for (std::size_t i = 0; i < a.reused.size(); ++i)
        out += (i ? ", " : "") + a.reused[i];
    }
    out += "\n";
  }
  out += std::to_string(r.rewrites) + " rewrite(s) in " + std::to_string(r.iterations) +
         " iteration(s), " + (r.converged ? "converged" : "NOT converged (" + r.stopReason + ")") +
         "; nodes " + std::to_string(r.nodesBefore) + " -> " + std::to_string(r.nodesAfter) + "\n";
  for (std::size_t i = 0; i < r.stats.size(); ++i) {
    const RuleStats &s = r.stats[i];
    out += "  " + s.rule;
    if (s.variant)
      out += "#" + std::to_string(s.variant);
    out += ": tried " + std::to_string(s.tried) + ", matched " + std::to_string(s.matched) +
           ", applied " + std::to_string(s.applied) + ", rejected " + std::to_string(s.rejected) +
           "\n";
    for (const auto &[why, n] : s.failures)
      out += "    no match x" + std::to_string(n) + ": " + why + "\n";
    for (const auto &[why, n] : s.rejections)
      out += "    refused x" + std::to_string(n) + ": " + why + "\n";
  }
  (void)rules;
  return out;
}

} // namespace graft::rewrite
