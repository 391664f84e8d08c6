//===- Partitioner.cpp - Op support data, limits, convex partitions -------===//
//
// 1. Each node is classified by ops.yaml (dtypes, packed arguments, checks),
//    the ops' support checks (vulkanUnsupportedReason, OpSupport.h) and the target's
//    buffer limit.
// 2. Co-location groups (an assertion, the scalar read it constrains, the
//    select feeding the read, the sym arithmetic between them and on the
//    scalar, the nodes using the scalar) move to the CPU together when any
//    member must.
// 3. Supported nodes are merged along graph edges, in topological order,
//    whenever the merged set stays convex: merging P and Q is rejected when a
//    node outside P u Q is reachable from P u Q and has an edge back into it.
//    The search starts only from the partitions' boundary nodes (class
//    Partitions), so partitioning stays linear in the graph's size. A second
//    pass merges partitions without a connecting edge under the same test.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Partitioner.h"

#include "graft/ops/BoundArgs.h"
#include "graft/ops/OpSchema.h"
#include "graft/support/EmbeddedFile.h"
#include "graft/vulkan/OpSupport.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

namespace graft {
extern const EmbeddedFile kVulkanSupportFiles[];
extern const std::size_t kVulkanSupportFilesCount;
} // namespace graft

namespace graft::vk {

namespace {

std::string supportFile(const char *name) {
  for (std::size_t i = 0; i < kVulkanSupportFilesCount; ++i)
    if (std::string(kVulkanSupportFiles[i].name) == name)
      return std::string(kVulkanSupportFiles[i].data, kVulkanSupportFiles[i].size);
  return {};
}

struct Check {
  std::string kind; ///< last_dim_multiple, constant
  std::string arg;
  int64_t of = 1;
};

struct OpSupport {
  std::set<DType> dtypes;
  std::map<std::string, std::set<DType>> argDTypes;
  std::set<std::string> packed;
  bool host = false;
  std::vector<Check> checks;
};

struct SupportTable {
  std::map<std::string, OpSupport, std::less<>> ops;
};

Expected<std::set<DType>> parseDTypeList(const YAML::Node &n,
                                         const std::map<std::string, std::set<DType>> &sets) {
  std::set<DType> out;
  for (const YAML::Node &e : n) {
    std::string s = e.as<std::string>();
    if (auto it = sets.find(s); it != sets.end()) {
      out.insert(it->second.begin(), it->second.end());
      continue;
    }
    auto d = parseDType(s);
    if (!d)
      return Diagnostic::internal("ops.yaml: unknown dtype or set '" + s + "'");
    out.insert(*d);
  }
  return out;
}

Expected<SupportTable> loadSupport() {
  SupportTable t;
  try {
    YAML::Node root = YAML::Load(supportFile("ops.yaml"));
    std::map<std::string, std::set<DType>> sets;
    for (auto it = root["dtype_sets"].begin(); it != root["dtype_sets"].end(); ++it) {
      std::set<DType> s;
      const YAML::Node list = it->second; // a copy: it->second is a temporary
      for (const YAML::Node &d : list) {
        auto dt = parseDType(d.as<std::string>());
        if (!dt)
          return Diagnostic::internal("ops.yaml: unknown dtype '" + d.as<std::string>() + "'");
        s.insert(*dt);
      }
      sets[it->first.as<std::string>()] = s;
    }
    for (auto it = root["ops"].begin(); it != root["ops"].end(); ++it) {
      OpSupport op;
      const YAML::Node e = it->second; // a copy: it->second is a temporary
      if (e["dtypes"]) {
        GRAFT_TRY(op.dtypes, parseDTypeList(e["dtypes"], sets));
      } else {
        op.dtypes = sets["FP"];
      }
      if (e["arg_dtypes"])
        for (auto a = e["arg_dtypes"].begin(); a != e["arg_dtypes"].end(); ++a) {
          GRAFT_TRY(op.argDTypes[a->first.as<std::string>()], parseDTypeList(a->second, sets));
        }
      if (e["packed"])
        for (const YAML::Node &p : e["packed"])
          op.packed.insert(p.as<std::string>());
      op.host = e["host"] && e["host"].as<bool>();
      if (e["checks"])
        for (const YAML::Node &c : e["checks"]) {
          Check ch;
          ch.kind = c["check"].as<std::string>();
          ch.arg = c["arg"] ? c["arg"].as<std::string>() : std::string();
          ch.of = c["of"] ? c["of"].as<int64_t>() : 1;
          if (ch.kind != "last_dim_multiple" && ch.kind != "constant")
            return Diagnostic::internal("ops.yaml: unknown check '" + ch.kind + "'");
          op.checks.push_back(ch);
        }
      t.ops[it->first.as<std::string>()] = std::move(op);
    }
  } catch (const YAML::Exception &e) {
    return Diagnostic::internal(std::string("ops.yaml: ") + e.what());
  }
  return t;
}

const SupportTable *supportTable(std::vector<Diagnostic> &errors) {
  static std::once_flag once;
  static std::optional<SupportTable> table;
  static std::vector<Diagnostic> loadErrors;
  std::call_once(once, [] {
    auto t = loadSupport();
    if (t.ok())
      table = std::move(*t);
    else
      loadErrors = t.diags();
  });
  if (!table)
    errors = loadErrors;
  return table ? &*table : nullptr;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2g", v);
  return buf;
}

} // namespace

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

Expected<std::vector<TargetProfile>> builtinTargets() {
  std::vector<TargetProfile> out;
  try {
    YAML::Node root = YAML::Load(supportFile("targets.yaml"));
    for (auto it = root["targets"].begin(); it != root["targets"].end(); ++it) {
      TargetProfile p;
      p.name = it->first.as<std::string>();
      const YAML::Node e = it->second; // a copy: it->second is a temporary
      p.description = e["description"] ? e["description"].as<std::string>() : "";
      DeviceInfo &d = p.device;
      d.name = p.name;
      d.type = "profile";
      d.maxStorageBufferRange = e["maxStorageBufferRange"].as<uint64_t>();
      d.maxImageDimension2D = e["maxImageDimension2D"].as<uint32_t>(0);
      d.maxImageDimension3D = e["maxImageDimension3D"].as<uint32_t>(0);
      if (e["maxComputeWorkGroupCount"])
        for (int i = 0; i < 3; ++i)
          d.maxComputeWorkGroupCount[i] = e["maxComputeWorkGroupCount"][i].as<uint32_t>();
      d.storageBuffer16BitAccess = e["storageBuffer16BitAccess"].as<bool>(false);
      d.storageBuffer8BitAccess = e["storageBuffer8BitAccess"].as<bool>(false);
      d.shaderFloat16 = e["shaderFloat16"].as<bool>(false);
      d.shaderInt64 = e["shaderInt64"].as<bool>(false);
      d.maxLoopIterations = e["maxLoopIterations"].as<uint32_t>(0);
      d.maxPushConstantsSize = 128;
      p.exactKernels = e["exactKernels"].as<bool>(false);
      out.push_back(std::move(p));
    }
  } catch (const YAML::Exception &e) {
    return Diagnostic::internal(std::string("targets.yaml: ") + e.what());
  }
  return out;
}

TargetName parseTargetName(const std::string &name) {
  static const std::string kExact = "+exact";
  TargetName t{name, false};
  if (name.size() > kExact.size() &&
      name.compare(name.size() - kExact.size(), kExact.size(), kExact) == 0) {
    t.profile = name.substr(0, name.size() - kExact.size());
    t.exactKernels = true;
  }
  return t;
}

Expected<TargetProfile> findTarget(const std::string &name, int deviceIndex) {
  TargetName tn = parseTargetName(name);
  if (tn.profile == "host") {
    ContextOptions o;
    o.deviceIndex = deviceIndex;
    GRAFT_TRY(auto ctx, Context::create(o));
    TargetProfile p;
    p.name = name;
    p.device = ctx->info();
    p.description = "the running device: " + p.device.name;
    p.exactKernels = tn.exactKernels;
    return p;
  }
  GRAFT_TRY(auto all, builtinTargets());
  std::string known = "host";
  for (TargetProfile &p : all) {
    if (p.name == tn.profile) {
      p.name = name;
      p.exactKernels = p.exactKernels || tn.exactKernels;
      return std::move(p);
    }
    known += ", " + p.name;
  }
  return Diagnostic::error("unknown target '" + name + "' (known: " + known +
                           "; a +exact suffix selects the bit-exact kernels)");
}

bool targetUsesExactKernels(const std::string &target) {
  TargetName tn = parseTargetName(target);
  if (tn.exactKernels)
    return true;
  auto all = builtinTargets();
  if (all)
    for (const TargetProfile &p : *all)
      if (p.name == tn.profile)
        return p.exactKernels;
  return false;
}

//===----------------------------------------------------------------------===//
// Per-node support
//===----------------------------------------------------------------------===//

namespace {

/// Bytes a tensor argument occupies on the device (nullopt: unbounded).
std::optional<double> deviceBytes(const TensorProto &p, const SymbolTable &symbols, bool packed,
                                  double &elements) {
  double n = 1;
  for (const Dim &d : p.shape) {
    auto ub = symbols.upperBound(d);
    if (!ub)
      return std::nullopt;
    n *= static_cast<double>(*ub);
  }
  elements = n;
  if (packed)
    return n * static_cast<double>(elementSize(p.dtype));
  auto e = deviceElem(p.dtype);
  return n * static_cast<double>(e ? deviceElemSize(*e) : elementSize(p.dtype));
}

std::string checkNode(const Node &node, const TargetProfile &target, const SupportTable &table) {
  auto it = table.ops.find(node.target());
  if (it == table.ops.end())
    return "unsupported op " + node.target();
  const OpSupport &op = it->second;
  if (!node.schema())
    return "op " + node.target() + " is not registered";
  auto bound = BoundArgs::bind(node);
  if (!bound.ok())
    return "arguments do not match the schema";
  const SymbolTable &symbols = node.graph()->symbols();
  const DeviceInfo &dev = target.device;
  // dtypes and buffer sizes of every tensor argument, then the results.
  std::size_t tensorIndex = 0;
  for (std::size_t i = 0; i < bound->size(); ++i) {
    const SchemaArg &sa = bound->schema().args[i];
    std::string why;
    bound->at(i).forEachValue([&](Value *v) {
      if (!why.empty() || !v->isTensor())
        return;
      std::size_t idx = tensorIndex++;
      DType d = v->proto().dtype;
      auto ad = op.argDTypes.find(sa.name);
      const std::set<DType> &allowed = ad != op.argDTypes.end() ? ad->second : op.dtypes;
      if (!allowed.count(d)) {
        why = "dtype " + std::string(name(d)) + " at input " + std::to_string(idx) + " (" +
              sa.name + ")";
        return;
      }
      if (!op.host) {
        double elems = 0;
        auto bytes = deviceBytes(v->proto(), symbols, op.packed.count(sa.name) > 0, elems);
        if (bytes && *bytes > static_cast<double>(dev.maxStorageBufferRange)) {
          double perElem = *bytes / std::max(elems, 1.0);
          why = "buffer of " + sci(elems) + " elements (%" + v->name() + ") exceeds limit " +
                sci(static_cast<double>(dev.maxStorageBufferRange) / perElem) +
                " (maxStorageBufferRange " + sci(static_cast<double>(dev.maxStorageBufferRange)) +
                " bytes)";
        }
      }
    });
    if (!why.empty())
      return why;
  }
  for (unsigned i = 0; i < node.numOutputs(); ++i) {
    const Value *v = node.output(i);
    if (!v->isTensor())
      continue;
    if (!op.dtypes.count(v->proto().dtype))
      return "dtype " + std::string(name(v->proto().dtype)) + " at output " + std::to_string(i);
    double elems = 0;
    auto bytes = deviceBytes(v->proto(), symbols, false, elems);
    if (!op.host && bytes && *bytes > static_cast<double>(dev.maxStorageBufferRange))
      return "buffer of " + sci(elems) + " elements (%" + v->name() + ") exceeds limit " +
             sci(static_cast<double>(dev.maxStorageBufferRange) / (*bytes / elems)) +
             " (maxStorageBufferRange " + sci(static_cast<double>(dev.maxStorageBufferRange)) +
             " bytes)";
  }
  for (const Check &c : op.checks) {
    if (c.kind == "constant") {
      const Argument *a = bound->find(c.arg);
      const GraphInput *in = a && a->isValue() ? node.graph()->inputFor(a->value()) : nullptr;
      if (!in || !in->isConstant())
        return "'" + c.arg + "' is not a constant (weights are prepacked at load time)";
    } else if (c.kind == "last_dim_multiple") {
      const TensorProto *p = nullptr;
      if (c.arg == "output") {
        p = node.numOutputs() ? &node.output()->proto() : nullptr;
      } else if (const Argument *a = bound->find(c.arg); a && a->isValue()) {
        p = &a->value()->proto();
      }
      if (p && !p->shape.empty())
        if (auto v = p->shape.back().value(); v && *v % c.of != 0)
          return (c.arg == "output" ? std::string("the result's") : "'" + c.arg + "''s") +
                 " last dim " + std::to_string(*v) + " is not a multiple of " +
                 std::to_string(c.of);
    }
  }
  // The executor's kernel-level checks (ranks, literal arguments, ...).
  return vulkanUnsupportedReason(node, dev);
}

bool isAssertion(const std::string &t) {
  return t == "aten.sym_constrain_range_for_size.default" ||
         t == "aten.sym_constrain_range.default" || t == "aten._assert_scalar.default";
}

/// Python sym arithmetic and comparisons (engine/ops/sym.yaml): host steps.
bool isSymOp(const std::string &t) {
  return t.rfind("operator.", 0) == 0 || t.rfind("torch.sym_", 0) == 0;
}

bool isScalarRead(const std::string &t) {
  return t == "aten._local_scalar_dense.default" || t == "et_vk.select_as_symint.default";
}

} // namespace

std::vector<std::string> supportedOps() {
  std::vector<Diagnostic> errors;
  std::vector<std::string> out;
  if (const SupportTable *table = supportTable(errors))
    for (const auto &kv : table->ops)
      out.push_back(kv.first);
  return out;
}

std::string supportReason(const Node &node, const TargetProfile &target) {
  std::vector<Diagnostic> errors;
  const SupportTable *table = supportTable(errors);
  if (!table)
    return errors.empty() ? "op support table failed to load" : errors[0].message;
  return checkNode(node, target, *table);
}

//===----------------------------------------------------------------------===//
// Partitioning
//===----------------------------------------------------------------------===//

namespace {

/// The node DAG in compressed adjacency form. Graph order is topological, so
/// every edge goes from a lower to a higher index, and each node's successors
/// are listed in increasing order (edges are added by consumer).
struct NodeDag {
  std::vector<std::size_t> succStart, succ; ///< out-edges of v: succ[succStart[v]..succStart[v+1])
  std::vector<std::size_t> predStart, pred; ///< in-edges of v, in increasing order
};

struct UnionFind {
  std::vector<std::size_t> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::size_t find(std::size_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(std::size_t a, std::size_t b) { parent[find(a)] = find(b); }
};

/// Device partitions as they grow by merging. Each is convex. Besides its
/// extent (first and last member), a partition keeps its *exits*: the members
/// with an edge to a node outside the partition. Only exits can start a path
/// that leaves a union of partitions, so a convexity test costs the size of
/// the boundary and of the region it searches, not of the partitions; that
/// keeps greedy merging linear in practice instead of quadratic (a model's
/// single partition grows to every node).
class Partitions {
public:
  explicit Partitions(const NodeDag &g)
      : g_(g), part_(g.succStart.size() - 1), first_(part_.parent.size()),
        last_(part_.parent.size()), exits_(part_.parent.size()), cursor_(part_.parent.size()),
        seen_(part_.parent.size(), 0) {
    for (std::size_t v = 0; v < first_.size(); ++v) {
      first_[v] = last_[v] = v;
      cursor_[v] = g.succStart[v];
      if (g.succStart[v] != g.succStart[v + 1])
        exits_[v] = {v};
    }
  }

  std::size_t find(std::size_t v) { return part_.find(v); }
  std::size_t first(std::size_t root) const { return first_[root]; }

  /// Whether the union of partitions `a` and `b` (roots) is convex: no node
  /// outside it is reachable from it and has an edge back into it. Nothing
  /// after the union's last node can reach back (edges go forward), so the
  /// search stays at or below it.
  bool convexUnion(std::size_t a, std::size_t b) {
    const std::size_t last = std::max(last_[a], last_[b]);
    auto inside = [&](std::size_t t) {
      std::size_t r = part_.find(t);
      return r == a || r == b;
    };
    if (++stamp_ == 0) { // wrapped: old marks could look current
      std::fill(seen_.begin(), seen_.end(), 0);
      stamp_ = 1;
    }
    std::vector<std::size_t> &work = work_;
    work.clear();
    for (std::size_t root : {a, b})
      for (std::size_t x : exits_[root])
        for (std::size_t e = cursor_[x]; e < g_.succStart[x + 1]; ++e) {
          std::size_t t = g_.succ[e];
          if (t > last)
            break;
          if (seen_[t] != stamp_ && !inside(t)) {
            seen_[t] = stamp_;
            work.push_back(t);
          }
        }
    while (!work.empty()) {
      std::size_t x = work.back();
      work.pop_back();
      for (std::size_t e = g_.succStart[x]; e < g_.succStart[x + 1]; ++e) {
        std::size_t t = g_.succ[e];
        if (t > last)
          break;
        if (seen_[t] == stamp_)
          continue;
        if (inside(t))
          return false;
        seen_[t] = stamp_;
        work.push_back(t);
      }
    }
    return true;
  }

  /// Merges partitions `a` and `b` (roots); returns the new root.
  std::size_t merge(std::size_t a, std::size_t b) {
    part_.unite(a, b);
    std::size_t root = part_.find(a);
    std::size_t other = root == a ? b : a;
    first_[root] = std::min(first_[root], first_[other]);
    last_[root] = std::max(last_[root], last_[other]);
    // Keep the members that still have an edge leaving the merged partition;
    // a node's cursor skips its successors already inside (partitions only
    // grow, so a skipped successor stays inside), which makes the scans
    // amortized linear in the edges.
    std::vector<std::size_t> exits;
    exits.reserve(exits_[root].size() + exits_[other].size());
    for (std::size_t from : {root, other})
      for (std::size_t x : exits_[from]) {
        std::size_t &c = cursor_[x];
        while (c < g_.succStart[x + 1] && part_.find(g_.succ[c]) == root)
          ++c;
        if (c < g_.succStart[x + 1])
          exits.push_back(x);
      }
    exits_[root] = std::move(exits);
    exits_[other] = {};
    return root;
  }

private:
  const NodeDag &g_;
  UnionFind part_;
  std::vector<std::size_t> first_, last_;
  std::vector<std::vector<std::size_t>> exits_;
  std::vector<std::size_t> cursor_; ///< first successor edge not known to be inside
  std::vector<unsigned> seen_;      ///< search marks, valid when equal to stamp_
  unsigned stamp_ = 0;
  std::vector<std::size_t> work_;
};

} // namespace

double PartitionReport::coverage() const {
  if (totalNodes == 0)
    return 1.0;
  return 1.0 - static_cast<double>(cpuNodes.size()) / static_cast<double>(totalNodes);
}

Expected<PartitionReport> partitionGraph(const Graph &graph, const TargetProfile &target) {
  std::vector<Diagnostic> errors;
  const SupportTable *table = supportTable(errors);
  if (!table)
    return Failure(std::move(errors));
  PartitionReport report;
  report.target = target.name;
  std::vector<const Node *> nodes;
  std::unordered_map<const Node *, std::size_t> index;
  index.reserve(graph.numNodes());
  for (const Node &n : graph.nodes()) {
    index[&n] = nodes.size();
    nodes.push_back(&n);
  }
  std::size_t N = nodes.size();
  report.totalNodes = N;
  std::vector<std::string> reason(N);
  std::vector<char> host(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    reason[i] = checkNode(*nodes[i], target, *table);
    auto it = table->ops.find(nodes[i]->target());
    host[i] = it != table->ops.end() && it->second.host;
  }

  // Co-location groups, seeded by each assertion.
  UnionFind groups(N);
  std::vector<char> inGroup(N, 0);
  auto producerOf = [&](const Value *v) -> std::optional<std::size_t> {
    if (!v || !v->producer())
      return std::nullopt;
    return index.at(v->producer());
  };
  for (std::size_t i = 0; i < N; ++i) {
    if (!isAssertion(nodes[i]->target()))
      continue;
    inGroup[i] = 1;
    nodes[i]->forEachOperand([&](Value *v) {
      // The scalar the assertion constrains (through sym ops such as ge).
      std::vector<const Value *> work = {v};
      std::set<const Value *> seen;
      while (!work.empty()) {
        const Value *cur = work.back();
        work.pop_back();
        if (!seen.insert(cur).second || cur->isTensor())
          continue;
        auto p = producerOf(cur);
        if (!p)
          continue;
        const Node *pn = nodes[*p];
        if (isScalarRead(pn->target())) {
          groups.unite(i, *p);
          inGroup[*p] = 1;
          // The select_copy feeding a _local_scalar_dense belongs with it.
          pn->forEachOperand([&](Value *t) {
            auto q = producerOf(t);
            if (q && nodes[*q]->target().rfind("aten.select", 0) == 0) {
              groups.unite(i, *q);
              inGroup[*q] = 1;
            }
          });
          // ... and so do the nodes that use the scalar (slice_copy, views),
          // directly or through host-side sym arithmetic (the end u0 + 8 of
          // a narrow), which joins the group as well.
          std::vector<const Value *> fwd(pn->outputs().begin(), pn->outputs().end());
          std::set<const Value *> fwdSeen;
          while (!fwd.empty()) {
            const Value *s = fwd.back();
            fwd.pop_back();
            if (!fwdSeen.insert(s).second)
              continue;
            for (Node *user : s->users()) {
              std::size_t u = index.at(user);
              if (isAssertion(user->target()) || user->outputs().empty())
                continue;
              bool tensorOut = std::any_of(user->outputs().begin(), user->outputs().end(),
                                           [](Value *o) { return o->isTensor(); });
              if (!tensorOut && !isSymOp(user->target()))
                continue;
              groups.unite(i, u);
              inGroup[u] = 1;
              if (!tensorOut)
                fwd.insert(fwd.end(), user->outputs().begin(), user->outputs().end());
            }
          }
        } else if (!pn->outputs().empty()) {
          // A sym op between the assertion and the scalar (operator.le in
          // _assert_scalar(le(u0 + s0, 64))) is a host step of the group.
          if (isSymOp(pn->target())) {
            groups.unite(i, *p);
            inGroup[*p] = 1;
          }
          pn->forEachOperand([&](Value *w) { work.push_back(w); });
        }
      }
    });
  }
  std::map<std::size_t, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < N; ++i)
    if (inGroup[i])
      members[groups.find(i)].push_back(i);
  for (auto &[root, ms] : members) {
    auto bad =
        std::find_if(ms.begin(), ms.end(), [&](std::size_t m) { return !reason[m].empty(); });
    if (bad == ms.end())
      continue;
    std::string why = "constraint group split: %" +
                      (nodes[*bad]->numOutputs() ? nodes[*bad]->name() : nodes[*bad]->target()) +
                      " (" + nodes[*bad]->target() + ") cannot run on the device (" + reason[*bad] +
                      "), so the group stays on the CPU";
    for (std::size_t m : ms)
      if (reason[m].empty())
        reason[m] = why;
  }

  // The node DAG.
  NodeDag g;
  g.predStart.assign(N + 1, 0);
  std::vector<std::size_t> preds;
  for (std::size_t i = 0; i < N; ++i) {
    preds.clear();
    nodes[i]->forEachOperand([&](Value *v) {
      if (auto p = producerOf(v))
        preds.push_back(*p);
    });
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    g.pred.insert(g.pred.end(), preds.begin(), preds.end());
    g.predStart[i + 1] = g.pred.size();
  }
  g.succStart.assign(N + 1, 0);
  for (std::size_t p : g.pred)
    ++g.succStart[p + 1];
  for (std::size_t i = 0; i < N; ++i)
    g.succStart[i + 1] += g.succStart[i];
  g.succ.resize(g.pred.size());
  {
    // Filling by consumer in order lists each node's successors ascending.
    std::vector<std::size_t> fill(g.succStart.begin(), g.succStart.end() - 1);
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t e = g.predStart[i]; e < g.predStart[i + 1]; ++e)
        g.succ[fill[g.pred[e]]++] = i;
  }

  // Greedy convex merging along edges, in topological (graph) order.
  Partitions part(g);
  for (std::size_t v = 0; v < N; ++v) {
    if (!reason[v].empty())
      continue;
    for (std::size_t e = g.predStart[v]; e < g.predStart[v + 1]; ++e) {
      std::size_t u = g.pred[e];
      if (!reason[u].empty())
        continue;
      std::size_t a = part.find(u), b = part.find(v);
      if (a != b && part.convexUnion(a, b))
        part.merge(a, b);
    }
  }

  // Maximality: also merge partitions that share no edge when the union
  // stays convex (independent subgraphs, e.g. an input_pos read and its
  // assertion, belong in the same device program).
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < N; ++i)
    if (reason[i].empty() && part.find(i) == i)
      roots.push_back(i);
  std::sort(roots.begin(), roots.end(),
            [&](std::size_t a, std::size_t b) { return part.first(a) < part.first(b); });
  std::vector<std::size_t> merged;
  for (std::size_t r : roots) {
    bool done = false;
    for (std::size_t &m : merged) {
      if (!part.convexUnion(m, r))
        continue;
      m = part.merge(r, m);
      done = true;
      break;
    }
    if (!done)
      merged.push_back(r);
  }

  std::map<std::size_t, int> ids;
  for (std::size_t i = 0; i < N; ++i) {
    if (!reason[i].empty()) {
      report.cpuNodes.push_back({nodes[i], reason[i]});
      continue;
    }
    std::size_t root = part.find(i);
    auto [it, fresh] = ids.emplace(root, static_cast<int>(report.partitions.size()));
    if (fresh) {
      Partition p;
      p.id = it->second;
      report.partitions.push_back(p);
    }
    report.partitions[static_cast<std::size_t>(it->second)].nodes.push_back(
        {nodes[i], host[i] != 0});
  }
  return report;
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

namespace {
std::string nodeName(const Node *n) {
  return n->numOutputs() ? "%" + n->name() : std::string("(no result)");
}
} // namespace

std::string formatReport(const PartitionReport &r) {
  std::ostringstream os;
  std::size_t onDevice = r.totalNodes - r.cpuNodes.size();
  char cov[16];
  std::snprintf(cov, sizeof(cov), "%.1f", 100.0 * r.coverage());
  os << "target " << r.target << ": " << r.partitions.size() << " Vulkan partition"
     << (r.partitions.size() == 1 ? "" : "s") << ", " << onDevice << " of " << r.totalNodes
     << " nodes on the device (" << cov << "%), " << r.cpuNodes.size() << " on the CPU\n";
  for (const Partition &p : r.partitions) {
    std::size_t hostN = std::count_if(p.nodes.begin(), p.nodes.end(),
                                      [](const PartitionNode &n) { return n.host; });
    os << "partition " << p.id << ": " << p.nodes.size() << " nodes";
    if (hostN)
      os << " (" << hostN << " host-side scalar steps)";
    os << ", " << nodeName(p.nodes.front().node) << " .. " << nodeName(p.nodes.back().node) << "\n";
  }
  for (const CpuNode &c : r.cpuNodes)
    os << "cpu " << nodeName(c.node) << " (" << c.node->target() << "): " << c.reason << "\n";
  return os.str();
}

std::string reportJson(const PartitionReport &r) {
  nlohmann::json j;
  j["target"] = r.target;
  j["nodes"] = r.totalNodes;
  j["coverage"] = r.coverage();
  nlohmann::json parts = nlohmann::json::array();
  for (const Partition &p : r.partitions) {
    nlohmann::json pj;
    pj["id"] = p.id;
    nlohmann::json ns = nlohmann::json::array();
    for (const PartitionNode &n : p.nodes)
      ns.push_back({{"node", n.node->numOutputs() ? n.node->name() : std::string()},
                    {"target", n.node->target()},
                    {"host", n.host}});
    pj["nodes"] = ns;
    parts.push_back(pj);
  }
  j["partitions"] = parts;
  nlohmann::json cpu = nlohmann::json::array();
  for (const CpuNode &c : r.cpuNodes)
    cpu.push_back({{"node", c.node->numOutputs() ? c.node->name() : std::string()},
                   {"target", c.node->target()},
                   {"reason", c.reason}});
  j["cpu"] = cpu;
  return j.dump(2);
}

} // namespace graft::vk
