//===- Verifier.cpp - Graph invariants, one diagnostic per violation ------===//
//
// The verifier is the contract every pass and every parser output must meet.
// Each violation becomes one Diagnostic naming the node (or input/output)
// and a reason tagged with a stable check name in brackets, e.g.
//   node %y (aten.linear.default): operand %w is defined after its use [use-before-def]
// so tests and users can grep for the kind of breakage.
//
//===----------------------------------------------------------------------===//
#include "graft/ir/Verifier.h"

#include "graft/ops/BoundArgs.h"
#include "graft/ops/OpSchema.h"
#include "graft/ops/ShapeInference.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace graft {
namespace {

/// Pointers known up front, as one sorted array: building and probing it
/// allocates once, where a node-based hash set allocated per element (its
/// tables were a third of verifying a 9,000-node graph).
template <class T, class Payload = char> class SortedPtrMap {
public:
  void add(const T *p, Payload v = {}) { entries_.emplace_back(p, v); }
  /// Sorts by address; for a pointer added twice, find() gives the first.
  void freeze() {
    std::stable_sort(entries_.begin(), entries_.end(), [](const auto &a, const auto &b) {
      return std::less<const T *>()(a.first, b.first);
    });
  }
  const Payload *find(const T *p) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), p, [](const auto &e, const T *q) {
      return std::less<const T *>()(e.first, q);
    });
    return it != entries_.end() && it->first == p ? &it->second : nullptr;
  }
  bool contains(const T *p) const { return find(p) != nullptr; }
  bool empty() const { return entries_.empty(); }
  void reserve(std::size_t n) { entries_.reserve(n); }

private:
  std::vector<std::pair<const T *, Payload>> entries_;
};

class GraphVerifier {
public:
  GraphVerifier(const Graph &graph, const VerifyOptions &options)
      : graph_(graph), options_(options) {}

  std::vector<Diagnostic> run() {
    checkValues();
    checkInputs();
    checkNodes();
    checkOutputs();
    checkOutputCounts();
    return std::move(diags_);
  }

private:
  void report(const BoxedOptional<SourceRange> &where, std::string subject, std::string reason,
              const char *check) {
    Diagnostic d =
        Diagnostic::error(std::move(subject) + ": " + std::move(reason) + " [" + check + "]");
    d.range = where.optional();
    diags_.push_back(std::move(d));
  }
  void reportNode(const Node &n, std::string reason, const char *check) {
    report(n.location(), "node %" + n.name() + " (" + n.target() + ")", std::move(reason), check);
  }

  void checkDims(const Shape &shape, const std::function<void(const std::string &)> &onMissing) {
    for (const Dim &d : shape)
      for (const auto &[sym, coeff] : d.terms())
        if (!graph_.symbols().find(sym))
          onMissing(sym);
  }

  void checkValues() {
    // Keyed by views of the names the graph holds: a copy of every name was
    // an allocation per value of every verified graph.
    const std::vector<Value *> values = graph_.allValues();
    std::unordered_map<std::string_view, const Value *> byName;
    byName.reserve(values.size());
    defined_.reserve(values.size());
    for (const Value *v : values)
      defined_.add(v);
    defined_.freeze();
    for (const Value *v : values) {
      auto [it, inserted] = byName.emplace(v->name(), v);
      if (!inserted)
        report(v->location(), "value %" + v->name(), "name is defined more than once",
               "duplicate-name");
      if (v->isTensor()) {
        checkDims(v->proto().shape, [&](const std::string &sym) {
          report(v->location(), "value %" + v->name(),
                 "shape " + v->proto().str() + " uses undeclared symbol '" + sym + "'",
                 "undeclared-symbol");
        });
        if (v->proto().quant) {
          Status s = validateQuantLayout(v->proto());
          if (!s)
            report(v->location(), "value %" + v->name(), s.diags()[0].message,
                   "invalid-quant-layout");
        }
      }
    }
  }

  void checkInputs() {
    std::unordered_map<std::string_view, const GraphInput *> byFqn;
    byFqn.reserve(graph_.inputs().size());
    for (std::size_t i = 0; i < graph_.inputs().size(); ++i) {
      const GraphInput &in = graph_.inputs()[i];
      const Value *v = in.value;
      std::string subject = std::string(name(in.kind)) + " %" + (v ? v->name().str() : "?");
      if (!v) {
        report(std::nullopt, subject, "graph input has no value", "dangling-reference");
        continue;
      }
      if (v->inputIndex() != static_cast<int>(i) || v->producer())
        report(v->location(), subject,
               "value does not record itself as graph input " + std::to_string(i), "def-mismatch");
      if (!in.isConstant()) {
        if (in.init)
          report(v->location(), subject, "a user input cannot carry data", "input-with-data");
        continue;
      }
      if (in.fqn.empty()) {
        report(v->location(), subject, "constant input has no FQN", "missing-fqn");
      } else {
        auto [it, inserted] = byFqn.emplace(in.fqn, &in);
        if (!inserted) {
          report(v->location(), subject,
                 "FQN \"" + in.fqn + "\" is already used by %" + it->second->value->name(),
                 "duplicate-fqn");
        }
      }
      if (!v->isTensor()) {
        report(v->location(), subject, "constant inputs must be tensors", "constant-kind");
        continue;
      }
      auto sizes = concreteSizes(v->proto().shape);
      if (!sizes) {
        report(v->location(), subject, "constant has symbolic shape " + v->proto().str(),
               "symbolic-constant");
        continue;
      }
      // Data held now (a deferred transform is checked against its plan when
      // computed; verifying must not compute GBs of repacked weights).
      if (const Tensor *held = in.resident(); held && !v->proto().quant) {
        const Tensor &t = *held;
        if (t.dtype() != v->proto().dtype || t.sizes() != *sizes)
          report(v->location(), subject,
                 "data is " + t.proto().str() + " but the value is declared " + v->proto().str(),
                 "constant-data-mismatch");
      }
    }
  }

  void checkNodes() {
    // A value is available to the node at `index` when a graph input holds
    // it (-1) or an earlier node produced it (that node's index).
    SortedPtrMap<Value, long> available;
    available.reserve(graph_.inputs().size() + graph_.numNodes());
    for (const GraphInput &in : graph_.inputs())
      if (in.value)
        available.add(in.value, -1);
    long index = 0;
    for (const Node &n : graph_.nodes()) {
      for (const Value *out : n.outputs())
        available.add(out, index);
      ++index;
    }
    available.freeze();
    // Per node: each distinct operand and how often it appears (a handful,
    // so a linear scan; a map per node was a tenth of verifying).
    std::vector<std::pair<const Value *, int>> operandCounts;
    index = 0;
    for (const Node &n : graph_.nodes()) {
      // Operands: defined, defined earlier, use lists consistent.
      operandCounts.clear();
      n.forEachOperand([&](Value *v) {
        if (!v) {
          reportNode(n, "has a null operand", "dangling-reference");
          return;
        }
        auto c = std::find_if(operandCounts.begin(), operandCounts.end(),
                              [&](const auto &e) { return e.first == v; });
        if (c == operandCounts.end())
          operandCounts.emplace_back(v, 1);
        else
          ++c->second;
        const long *definedAt = available.find(v);
        if (!defined_.contains(v) || (v->producer() == nullptr && v->inputIndex() < 0)) {
          reportNode(n, "operand %" + v->name() + " is not defined in the graph",
                     "dangling-reference");
        } else if (!definedAt || *definedAt >= index) {
          reportNode(n, "operand %" + v->name() + " is defined after its use", "use-before-def");
        }
      });
      // The order messages come in: by value address, as the map gave it.
      std::sort(operandCounts.begin(), operandCounts.end(), [](const auto &a, const auto &b) {
        return std::less<const Value *>()(a.first, b.first);
      });
      for (const auto &[v, count] : operandCounts) {
        auto uses = recordedUses(v, &n);
        if (uses != count)
          reportNode(n,
                     "operand %" + v->name() + " is used " + std::to_string(count) +
                         " times but its use list records " + std::to_string(uses),
                     "use-list-mismatch");
      }
      for (unsigned i = 0; i < n.numOutputs(); ++i) {
        const Value *out = n.output(i);
        if (out->producer() != &n || out->resultIndex() != i)
          reportNode(n,
                     "result " + std::to_string(i) + " (%" + out->name() +
                         ") does not name this node as its producer",
                     "def-mismatch");
        for (const Node *user : out->users())
          if (!user || user->graph() != &graph_ || !nodeInGraph(user))
            reportNode(n, "result %" + out->name() + " lists a user that is not in the graph",
                       "use-list-mismatch");
      }
      checkSchema(n);
      ++index;
    }
  }

  /// How often `v`'s use list names `user`: counted in place for a short
  /// list (most values have a few users), from a table built once per value
  /// for a long one, so values with thousands of users (a shared sym_size)
  /// stay linear.
  long recordedUses(const Value *v, const Node *user) {
    constexpr std::size_t kScanUsers = 16;
    if (v->users().size() <= kScanUsers)
      return static_cast<long>(std::count(v->users().begin(), v->users().end(), user));
    auto it = useCounts_.find(v);
    if (it == useCounts_.end()) {
      std::unordered_map<const Node *, long> counts;
      for (const Node *u : v->users())
        ++counts[u];
      it = useCounts_.emplace(v, std::move(counts)).first;
    }
    auto c = it->second.find(user);
    return c == it->second.end() ? 0 : c->second;
  }

  bool nodeInGraph(const Node *node) {
    if (nodeSet_.empty()) {
      nodeSet_.reserve(graph_.numNodes());
      for (const Node &n : graph_.nodes())
        nodeSet_.add(&n);
      nodeSet_.freeze();
    }
    return nodeSet_.contains(node);
  }

  void checkSchema(const Node &n) {
    const OpSchema *schema = n.schema();
    if (!schema)
      return; // opaque op: kept as is, checked only structurally
    auto bound = BoundArgs::bind(n);
    if (!bound) {
      for (const Diagnostic &d : bound.diags())
        reportNode(n, stripNodePrefix(d.message), "bad-arguments");
      return;
    }
    // Results must match the schema's returns.
    bool listReturn = schema->returns.size() == 1 && schema->returns[0].type.isList;
    if (!listReturn && n.numOutputs() != schema->returns.size()) {
      reportNode(n,
                 "has " + std::to_string(n.numOutputs()) + " results but " +
                     schema->qualifiedName() + " returns " + std::to_string(schema->returns.size()),
                 "result-count");
      return;
    }
    bool kindsOk = true;
    for (unsigned i = 0; i < n.numOutputs() && !listReturn; ++i) {
      const SchemaType &t = schema->returns[i].type;
      ValueKind expected = expectedKind(t);
      ValueKind actual = n.output(i)->kind();
      // A Scalar return is whichever symbolic scalar the value holds.
      bool ok =
          t.base == SchemaType::Base::Scalar ? actual != ValueKind::Tensor : actual == expected;
      kindsOk &= ok;
      if (!ok)
        reportNode(n,
                   "result %" + n.output(i)->name() + " is a " +
                       std::string(name(n.output(i)->kind())) + " but the schema returns " +
                       t.str(),
                   "result-kind");
    }
    if (!kindsOk || !options_.checkInference || schema->inferRule.empty())
      return; // a kind mismatch is already reported; inference would repeat it
    auto inferred = inferResults(n, graph_.symbols());
    if (!inferred) {
      for (const Diagnostic &d : inferred.diags())
        reportNode(n, stripNodePrefix(d.message), "inference-failed");
      return;
    }
    if (inferred->size() != n.numOutputs()) {
      reportNode(n,
                 "shape inference yields " + std::to_string(inferred->size()) +
                     " results, the node declares " + std::to_string(n.numOutputs()),
                 "result-count");
      return;
    }
    for (unsigned i = 0; i < n.numOutputs(); ++i) {
      const Value *out = n.output(i);
      const InferredResult &r = (*inferred)[i];
      if (r.kind != out->kind()) {
        reportNode(n,
                   "result %" + out->name() + " is declared " + std::string(name(out->kind())) +
                       " but inferred " + std::string(name(r.kind)),
                   "result-kind");
        continue;
      }
      if (!out->isTensor())
        continue;
      const TensorProto &declared = out->proto();
      if (!declared.sameShapeAndDType(r.proto))
        reportNode(n,
                   "result %" + out->name() + " is declared " + declared.str() + " but inferred " +
                       r.proto.str(),
                   "proto-mismatch");
    }
  }

  static ValueKind expectedKind(const SchemaType &t) {
    switch (t.base) {
    case SchemaType::Base::SymInt:
    case SchemaType::Base::Int:
      return ValueKind::SymInt;
    case SchemaType::Base::Float:
      return ValueKind::SymFloat;
    case SchemaType::Base::Bool:
      return ValueKind::SymBool;
    case SchemaType::Base::Scalar:
      return ValueKind::SymInt;
    default:
      return ValueKind::Tensor;
    }
  }

  /// BoundArgs/inference diagnostics already start with "node %x (op): ";
  /// the verifier adds its own prefix, so drop theirs.
  static std::string stripNodePrefix(const std::string &message) {
    if (message.rfind("node %", 0) == 0) {
      auto pos = message.find("): ");
      if (pos != std::string::npos)
        return message.substr(pos + 3);
    }
    return message;
  }

  void checkOutputs() {
    if (graph_.outputs().empty())
      report(std::nullopt, "graph @" + graph_.name(), "has no outputs", "no-outputs");
    std::set<std::string> buffers;
    std::set<std::string> userInputs;
    for (const GraphInput &in : graph_.inputs()) {
      if (in.kind == InputKind::Buffer)
        buffers.insert(in.fqn);
      if (in.kind == InputKind::UserInput && in.value)
        userInputs.insert(in.value->name());
    }
    for (std::size_t i = 0; i < graph_.outputs().size(); ++i) {
      const GraphOutput &o = graph_.outputs()[i];
      std::string subject = "output " + std::to_string(i);
      if (!o.value || !defined_.contains(o.value) ||
          (o.value->producer() == nullptr && o.value->inputIndex() < 0)) {
        report(std::nullopt, subject,
               "refers to " + (o.value ? "%" + o.value->name() : std::string("nothing")) +
                   ", which is not defined in the graph",
               "dangling-reference");
        continue;
      }
      if (o.kind == OutputKind::BufferMutation && !buffers.count(o.target))
        report(o.value->location(), subject,
               "mutates buffer \"" + o.target + "\", which is not a buffer input of the graph",
               "bad-mutation-target");
      if (o.kind == OutputKind::UserInputMutation && !userInputs.count(o.target))
        report(o.value->location(), subject,
               "mutates input \"" + o.target + "\", which is not a user input of the graph",
               "bad-mutation-target");
    }
  }

  /// Every value's numOutputUses() is how often the outputs name it (the
  /// graph keeps that count so asking is O(1); a stale count would let a
  /// rewrite erase an output or keep a dead node).
  void checkOutputCounts() {
    std::unordered_map<const Value *, unsigned> counts;
    for (const GraphOutput &o : graph_.outputs())
      if (o.value)
        ++counts[o.value];
    auto check = [&](const Value *v) {
      auto it = counts.find(v);
      unsigned want = it == counts.end() ? 0 : it->second;
      if (v->numOutputUses() != want)
        report(v->location(), "%" + v->name(),
               "is recorded as " + std::to_string(v->numOutputUses()) +
                   " graph output(s), but the outputs name it " + std::to_string(want) + " time(s)",
               "output-count-mismatch");
    };
    for (const GraphInput &in : graph_.inputs())
      if (in.value)
        check(in.value);
    for (const Node &n : graph_.nodes())
      for (const Value *out : n.outputs())
        check(out);
  }

  const Graph &graph_;
  const VerifyOptions &options_;
  std::vector<Diagnostic> diags_;
  SortedPtrMap<Value> defined_;
  SortedPtrMap<Node> nodeSet_; ///< built on first use
  std::unordered_map<const Value *, std::unordered_map<const Node *, long>> useCounts_;
};

} // namespace

std::vector<Diagnostic> verify(const Graph &graph, const VerifyOptions &options) {
  return GraphVerifier(graph, options).run();
}

} // namespace graft
