//===- Coverage.h - Which rules fire, which nodes stay unfused ---*- C++ -*-===//
//
// A rule-coverage report answers two questions over one or more graphs:
//   * per rule: how many candidate roots it had, how often it fired, and for
//     every candidate it did not fuse the deepest failing check (the same
//     text `graft explain` prints: .pat location and actual value);
//   * per op target: how many of the graph's original nodes were fused and
//     why the others were left alone (no rule; a rule rooted there or at a
//     user failed a check; a match whose rewrite was refused).
//
//   CoverageReport report = emptyCoverage(rules);
//   GRAFT_CHECK_OK(addCoverage(report, "model.pt2", graph, rules)); // fuses `graph`
//
// Rules that run in several passes (graft::RuleSet's phases: legalize, then
// fuse) are one report: the snapshot is taken before the first pass, every
// pass's result is handed over in order, and the report lists the rules of
// all passes in pass order (graft::addCoverage in graft/Compiler.h does
// this). A caller that runs applyRules itself (graft compile) takes the
// snapshot first and hands both ends to the CoveragePass overload. Formatting
// (json, md, junit, html) lives in graft/serialize/CoverageReport.h.
// docs/coverage.md describes the model.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/rewrite/Rewriter.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graft::rewrite {

/// What the report needs of a graph before fusion (names and edges, no data).
struct CoverageSnapshot {
  struct NodeInfo {
    std::string name; ///< the node's name (its first result)
    std::string target;
    std::vector<std::string> outputs; ///< result value names
    std::vector<std::string> inputs;  ///< operand value names, in operand order
    uint32_t candidateOf = 0;         ///< number of rules rooted at this node's op
  };
  std::vector<NodeInfo> nodes; ///< in graph order
  /// Per rule (rule order): how many nodes are candidate roots.
  std::vector<uint64_t> candidates;
};

/// One rewrite pass as the report sees it: the rules it ran and what
/// applyRules (with recordLog on) did.
struct CoveragePass {
  const CompiledRules *rules = nullptr;
  const RewriteResult *result = nullptr;
};

/// `passes` are the rule sets of the passes that will run, in order; the
/// candidates are counted per rule over all of them.
CoverageSnapshot snapshotForCoverage(const Graph &graph,
                                     const std::vector<const CompiledRules *> &passes);
CoverageSnapshot snapshotForCoverage(const Graph &graph, const CompiledRules &rules);

/// A candidate root left unfused: why the rule does not match there.
struct CoverageNearMiss {
  std::string graph;
  std::string root;    ///< the candidate root node's name
  SourceRange loc;     ///< the failing check's .pat location (or the rule's)
  std::string check;   ///< "quant_min", "uses of %dq", ...
  std::string message; ///< "quant_min: expected -8, node %dq has -128"
  std::string text;    ///< as `graft explain` prints it (rewrite::format)
};

struct RuleCoverage {
  std::string name;
  unsigned variant = 0;
  RulePhase phase = RulePhase::Fuse;
  SourceRange loc;
  uint64_t candidates = 0; ///< original nodes whose op is the rule's root op
  uint64_t tried = 0, matched = 0, fired = 0, rejected = 0; ///< RuleStats, summed
  /// Refused rewrites by reason, summed over graphs in first-seen order.
  std::vector<std::pair<std::string, uint64_t>> rejections;
  /// Candidates still unmatched after fusion (explain on the fused graph).
  std::vector<CoverageNearMiss> nearMisses;
  /// "name" or "name#variant".
  std::string displayName() const;
};

enum class NodeFate {
  Fused,      ///< erased by a rewrite (`rule` says which)
  NoRule,     ///< no rule's pattern mentions the op
  NotReached, ///< the op is in a pattern, but no candidate root uses the node
  NearMiss,   ///< a rule rooted at the node, or at a user, failed a check
  Refused,    ///< a rule matched, but its rewrite was refused (or the limit hit)
};
std::string_view name(NodeFate fate); ///< "fused", "no-rule", ...

/// One node of the graph before fusion.
struct NodeCoverage {
  std::string graph;
  std::string node;
  std::string target;
  NodeFate fate = NodeFate::NoRule;
  std::string rule; ///< Fused: the rule that erased the node
  /// Short, aggregatable reasons ("rule R failed `uses of %dq` at f.pat:6:12");
  /// one per failing (rule, root) for NearMiss.
  std::vector<std::string> reasons;
  /// The explain lines behind `reasons`, with the values found in the graph.
  std::vector<std::string> details;
};

/// All original nodes of one op target.
struct OpCoverage {
  std::string target;
  uint64_t nodes = 0;
  uint64_t fused = 0;
  /// Why nodes were left alone (NodeCoverage::reasons, counted), first-seen order.
  std::vector<std::pair<std::string, uint64_t>> reasons;
  uint64_t leftAlone() const { return nodes - fused; }
};

/// One committed rewrite, with a Graphviz picture of the match and its
/// replacement.
struct FusedMatch {
  std::string graph;
  std::string rule;
  std::string root;
  std::vector<std::string> removed;
  std::vector<std::string> created;
  std::string dot; ///< a `digraph` (DOT source)
};

struct GraphCoverage {
  std::string name;
  uint64_t nodesBefore = 0, nodesAfter = 0;
  uint64_t fused = 0; ///< original nodes erased by rewrites
  uint64_t rewrites = 0;
  bool converged = false;
  std::string stopReason;
};

struct CoverageReport {
  std::vector<GraphCoverage> graphs;
  std::vector<RuleCoverage> rules; ///< one per compiled rule, in rule order
  std::vector<OpCoverage> ops;     ///< sorted by target
  std::vector<NodeCoverage> nodes; ///< original nodes, by graph, in graph order
  std::vector<FusedMatch> matches; ///< every rewrite, by graph, in firing order

  uint64_t totalNodes() const;
  uint64_t fusedNodes() const;
  /// fusedNodes / totalNodes (0 for no nodes).
  double fusedFraction() const;
};

/// A report with one zeroed RuleCoverage per rule (of every pass, in pass
/// order) and nothing else.
CoverageReport emptyCoverage(const std::vector<const CompiledRules *> &passes);
CoverageReport emptyCoverage(const CompiledRules &rules);

/// Adds one graph: `before` was taken of it before the passes ran, in
/// order, and turned it into `after`. A node erased by any pass is fused by
/// that pass's rule; the near misses are those of every pass's rules on
/// `after`.
void addCoverage(CoverageReport &report, const std::string &graphName,
                 const CoverageSnapshot &before, const Graph &after,
                 const std::vector<CoveragePass> &passes);
/// One pass: `result` is what applyRules did with `rules`.
void addCoverage(CoverageReport &report, const std::string &graphName,
                 const CoverageSnapshot &before, const Graph &after, const RewriteResult &result,
                 const CompiledRules &rules);

/// Snapshots `graph`, fuses it in place with `options` (recordLog forced on)
/// and adds it. Fails only where applyRules does.
Status addCoverage(CoverageReport &report, const std::string &graphName, Graph &graph,
                   const CompiledRules &rules, RewriteOptions options = {});

} // namespace graft::rewrite
