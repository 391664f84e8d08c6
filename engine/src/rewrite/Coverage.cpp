//===- Coverage.cpp - Rule coverage of a fused graph ----------------------===//
//
// Combines three things the engine already knows into a CoverageReport:
//   1. a snapshot of the graph before fusion (names, targets, edges, and
//      which rules are rooted at each node's op);
//   2. the RewriteResult of applyRules (per-rule stats and the log of
//      committed rewrites: which node names each one erased and created);
//   3. explain() on the fused graph, which says for every candidate root
//      still there why each rule does not match (or that it does, when the
//      rewrite was refused).
// Each original node is then fused (its name was erased by a rewrite while
// it still named the original node: names can be reused after an erase, so
// the log is replayed in order) or left alone with a reason.
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/Coverage.h"

#include "Matcher.h"
#include "RewriteUtil.h"
#include "RootIndex.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

namespace graft::rewrite {

namespace {

bool acceptsNode(const detail::Accept &a, const Node &n) {
  if (a.schema)
    return n.schema() == a.schema;
  if (!a.target.empty())
    return n.target() == a.target;
  if (!a.prefix.empty())
    return n.target().compare(0, a.prefix.size(), a.prefix) == 0;
  return false;
}

/// Whether any pass's rule pattern (root or interior) could match `n`'s op.
bool inAnyPattern(const std::vector<const CompiledRules *> &passes, const Node &n) {
  for (const CompiledRules *rules : passes)
    for (std::size_t i = 0; i < rules->size(); ++i)
      for (const detail::CNode &cn : rules->compiled(i).nodes)
        for (const detail::Accept &a : cn.accepts)
          if (acceptsNode(a, n))
            return true;
  return false;
}

void bump(std::vector<std::pair<std::string, uint64_t>> &counts, const std::string &key,
          uint64_t by = 1) {
  for (auto &[k, n] : counts)
    if (k == key) {
      n += by;
      return;
    }
  counts.emplace_back(key, by);
}

std::string ruleLabel(const ExplainEntry &e) {
  return e.rule + (e.variant ? "#" + std::to_string(e.variant) : "");
}

/// "rule R failed `uses of %dq` (rules.pat:6:12)": no node names or values,
/// so that the same failure at many nodes counts as one reason.
std::string failureReason(const ExplainEntry &e) {
  std::string what = e.check.empty() ? e.message : "`" + e.check + "`";
  std::string out = "rule " + ruleLabel(e) + " failed " + what;
  if (e.loc.begin.valid())
    out += " (" + detail::formatLoc(e.loc) + ")";
  return out;
}

std::string dotQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// A node as the picture of a match draws it.
struct DrawnNode {
  std::string name;
  std::string target; ///< empty: unknown (made and erased by other rewrites)
  std::vector<std::string> outputs;
  std::vector<std::string> inputs;
};

/// The match (erased nodes) and the replacement (created nodes still in the
/// fused graph) side by side; operands from outside either set are ellipses.
std::string matchDot(const std::string &rule, const std::string &root,
                     const std::vector<DrawnNode> &before, const std::vector<DrawnNode> &after) {
  std::string out = "digraph " + dotQuote(rule + " at %" + root) + " {\n";
  out += "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=10];\n";
  out += "  node [fontname=\"Helvetica\", fontsize=10];\n";
  std::set<std::string> externals;
  std::string edges;
  auto cluster = [&](const char *id, const std::string &label, const char *prefix,
                     const char *style, const std::vector<DrawnNode> &nodes) {
    out += std::string("  subgraph ") + id + " {\n    label=" + dotQuote(label) + ";\n    " +
           style + "\n";
    std::map<std::string, std::string> producer; // value -> drawn node id
    for (const DrawnNode &d : nodes)
      for (const std::string &o : d.outputs)
        producer[o] = prefix + d.name;
    for (const DrawnNode &d : nodes) {
      std::string label =
          "%" + d.name + "\n" + (d.target.empty() ? "(made by an earlier rewrite)" : d.target);
      out += "    " + dotQuote(prefix + d.name) + " [shape=box, label=" + dotQuote(label) + "];\n";
      for (const std::string &in : d.inputs) {
        auto it = producer.find(in);
        std::string from = it != producer.end() ? it->second : "v:" + in;
        if (it == producer.end())
          externals.insert(in);
        edges += "  " + dotQuote(from) + " -> " + dotQuote(prefix + d.name) + ";\n";
      }
    }
    out += "  }\n";
  };
  cluster("cluster_match", "matched by " + rule, "m:", "style=dashed;", before);
  cluster("cluster_rewrite", "rewritten to", "r:", "style=filled; color=\"#e8f4e8\";", after);
  for (const std::string &v : externals)
    out += "  " + dotQuote("v:" + v) + " [shape=ellipse, label=" + dotQuote("%" + v) + "];\n";
  return out + edges + "}\n";
}

DrawnNode drawn(const Node &n) {
  DrawnNode d;
  d.name = n.name();
  d.target = n.target();
  for (const Value *v : n.outputs())
    d.outputs.push_back(v->name());
  n.forEachOperand([&](const Value *v) { d.inputs.push_back(v->name()); });
  return d;
}

} // namespace

std::string RuleCoverage::displayName() const {
  return variant ? name + "#" + std::to_string(variant) : name;
}

std::string_view name(NodeFate fate) {
  switch (fate) {
  case NodeFate::Fused:
    return "fused";
  case NodeFate::NoRule:
    return "no-rule";
  case NodeFate::NotReached:
    return "not-reached";
  case NodeFate::NearMiss:
    return "near-miss";
  case NodeFate::Refused:
    return "refused";
  }
  return "unknown";
}

uint64_t CoverageReport::totalNodes() const {
  return nodes.size();
}

uint64_t CoverageReport::fusedNodes() const {
  uint64_t n = 0;
  for (const NodeCoverage &c : nodes)
    n += c.fate == NodeFate::Fused;
  return n;
}

double CoverageReport::fusedFraction() const {
  return nodes.empty() ? 0.0 : double(fusedNodes()) / double(totalNodes());
}

CoverageSnapshot snapshotForCoverage(const Graph &graph,
                                     const std::vector<const CompiledRules *> &passes) {
  CoverageSnapshot snap;
  std::vector<detail::RootIndex> indexes;
  std::vector<std::size_t> offsets;
  for (const CompiledRules *rules : passes) {
    offsets.push_back(snap.candidates.size());
    snap.candidates.resize(snap.candidates.size() + rules->size(), 0);
    indexes.emplace_back(*rules, std::vector<bool>(rules->size(), true));
  }
  std::vector<uint32_t> scratch;
  for (const Node &n : graph.nodes()) {
    DrawnNode d = drawn(n);
    CoverageSnapshot::NodeInfo info{std::move(d.name), std::move(d.target), std::move(d.outputs),
                                    std::move(d.inputs), 0};
    for (std::size_t p = 0; p < indexes.size(); ++p)
      if (const std::vector<uint32_t> *cands = indexes[p].lookup(n, scratch)) {
        info.candidateOf += static_cast<uint32_t>(cands->size());
        for (uint32_t ri : *cands)
          ++snap.candidates[offsets[p] + ri];
      }
    snap.nodes.push_back(std::move(info));
  }
  return snap;
}

CoverageSnapshot snapshotForCoverage(const Graph &graph, const CompiledRules &rules) {
  return snapshotForCoverage(graph, std::vector<const CompiledRules *>{&rules});
}

CoverageReport emptyCoverage(const std::vector<const CompiledRules *> &passes) {
  CoverageReport report;
  for (const CompiledRules *rules : passes)
    for (std::size_t i = 0; i < rules->size(); ++i) {
      RuleCoverage rc;
      rc.name = rules->rule(i).name;
      rc.variant = rules->rule(i).variant;
      rc.phase = rules->rule(i).phase;
      rc.loc = rules->rule(i).loc;
      report.rules.push_back(std::move(rc));
    }
  return report;
}

CoverageReport emptyCoverage(const CompiledRules &rules) {
  return emptyCoverage(std::vector<const CompiledRules *>{&rules});
}

void addCoverage(CoverageReport &report, const std::string &graphName,
                 const CoverageSnapshot &before, const Graph &after, const RewriteResult &result,
                 const CompiledRules &rules) {
  addCoverage(report, graphName, before, after, std::vector<CoveragePass>{{&rules, &result}});
}

void addCoverage(CoverageReport &report, const std::string &graphName,
                 const CoverageSnapshot &before, const Graph &after,
                 const std::vector<CoveragePass> &passes) {
  std::vector<const CompiledRules *> passRules;
  for (const CoveragePass &p : passes)
    passRules.push_back(p.rules);
  if (report.rules.empty())
    report = emptyCoverage(passRules);

  // The rules of all passes in pass order, as the report lists them: each
  // report index is a (pass, rule-in-pass) pair.
  struct RuleRef {
    std::size_t pass = 0, rule = 0;
  };
  std::vector<RuleRef> refs;
  for (std::size_t p = 0; p < passes.size(); ++p)
    for (std::size_t i = 0; i < passes[p].rules->size(); ++i)
      refs.push_back({p, i});
  auto statsOf = [&](std::size_t reportIndex) -> const RuleStats * {
    if (reportIndex >= refs.size())
      return nullptr;
    const RewriteResult &r = *passes[refs[reportIndex].pass].result;
    return refs[reportIndex].rule < r.stats.size() ? &r.stats[refs[reportIndex].rule] : nullptr;
  };

  // Rule stats.
  std::map<std::pair<std::string, unsigned>, std::size_t> ruleIndex;
  for (std::size_t i = 0; i < report.rules.size(); ++i) {
    RuleCoverage &rc = report.rules[i];
    ruleIndex[{rc.name, rc.variant}] = i;
    if (i < before.candidates.size())
      rc.candidates += before.candidates[i];
    const RuleStats *s = statsOf(i);
    if (!s)
      continue;
    rc.tried += s->tried;
    rc.matched += s->matched;
    rc.fired += s->applied;
    rc.rejected += s->rejected;
    for (const auto &[why, n] : s->rejections)
      bump(rc.rejections, why, n);
  }

  // The committed rewrites of every pass, in the order they happened.
  std::vector<const AppliedRewrite *> log;
  for (const CoveragePass &p : passes)
    for (const AppliedRewrite &a : p.result->log)
      log.push_back(&a);

  // Replay the log: which original node each erased name still denoted.
  // An entry is an original node (index into before.nodes) or a node made by
  // rewrite `rewrite` (index into its `created`).
  struct Origin {
    bool original = true;
    std::size_t index = 0;
    std::size_t rewrite = 0;
  };
  std::unordered_map<std::string, Origin> live;
  for (std::size_t i = 0; i < before.nodes.size(); ++i)
    live[before.nodes[i].name] = {true, i, 0};
  std::vector<long> fusedBy(before.nodes.size(), -1);
  std::vector<std::vector<DrawnNode>> matchBefore(log.size());
  for (std::size_t k = 0; k < log.size(); ++k) {
    const AppliedRewrite &a = *log[k];
    for (const std::string &r : a.removed) {
      auto it = live.find(r);
      if (it != live.end() && it->second.original) {
        const CoverageSnapshot::NodeInfo &info = before.nodes[it->second.index];
        fusedBy[it->second.index] = static_cast<long>(k);
        matchBefore[k].push_back({info.name, info.target, info.outputs, info.inputs});
      } else {
        matchBefore[k].push_back({r, "", {r}, {}});
      }
      if (it != live.end())
        live.erase(it);
    }
    for (std::size_t c = 0; c < a.created.size(); ++c)
      live[a.created[c]] = {false, c, k};
  }

  // Why each surviving candidate root is still there.
  std::vector<ExplainEntry> entries;
  for (const CoveragePass &p : passes) {
    std::vector<ExplainEntry> es = explain(after, *p.rules);
    entries.insert(entries.end(), std::make_move_iterator(es.begin()),
                   std::make_move_iterator(es.end()));
  }
  std::unordered_map<std::string, std::vector<const ExplainEntry *>> atRoot;
  for (const ExplainEntry &e : entries) {
    if (e.rule.empty())
      continue;
    atRoot[e.root].push_back(&e);
    if (e.matched)
      continue;
    auto ri = ruleIndex.find({e.rule, e.variant});
    if (ri == ruleIndex.end())
      continue;
    report.rules[ri->second].nearMisses.push_back({graphName, e.root,
                                                   e.loc.begin.valid() ? e.loc : e.ruleLoc, e.check,
                                                   e.message, format(e)});
  }
  auto refusedReason = [&](const ExplainEntry &e) {
    std::string out = "rule " + ruleLabel(e) + " matched but was not applied";
    auto ri = ruleIndex.find({e.rule, e.variant});
    std::string whys, stopReason;
    if (ri != ruleIndex.end()) {
      if (const RuleStats *s = statsOf(ri->second))
        for (const auto &[why, n] : s->rejections)
          whys += (whys.empty() ? "" : "; ") + why;
      if (ri->second < refs.size())
        stopReason = passes[refs[ri->second].pass].result->stopReason;
    }
    return out + (whys.empty() ? " (run stopped: " + stopReason + ")" : ": " + whys);
  };

  // Pattern membership per node of the fused graph, memoised; a pattern
  // spans at most `maxPattern` nodes, which bounds the walk from an interior
  // node to the roots that could have covered it.
  std::unordered_map<const Node *, bool> patternOp;
  auto isPatternOp = [&](const Node *n) {
    auto [it, fresh] = patternOp.try_emplace(n, false);
    if (fresh)
      it->second = inAnyPattern(passRules, *n);
    return it->second;
  };
  std::size_t maxPattern = 1;
  for (const CompiledRules *rules : passRules)
    for (std::size_t i = 0; i < rules->size(); ++i)
      maxPattern = std::max(maxPattern, rules->compiled(i).nodes.size());

  GraphCoverage gc;
  gc.name = graphName;
  gc.nodesBefore = before.nodes.size();
  gc.nodesAfter = after.numNodes();
  // Converged when every pass did; the stop reason is the first pass's that
  // did not (else the last pass's, "fixpoint").
  gc.converged = true;
  for (const CoveragePass &p : passes) {
    gc.rewrites += p.result->rewrites;
    if (gc.converged)
      gc.stopReason = p.result->stopReason;
    gc.converged = gc.converged && p.result->converged;
  }

  for (std::size_t i = 0; i < before.nodes.size(); ++i) {
    const CoverageSnapshot::NodeInfo &info = before.nodes[i];
    NodeCoverage nc;
    nc.graph = graphName;
    nc.node = info.name;
    nc.target = info.target;
    const Value *v = after.findValue(info.name);
    const Node *n = v ? v->producer() : nullptr;
    if (fusedBy[i] >= 0 || !n) {
      // Not in the log but gone: erased as dead code around a rewrite.
      nc.fate = NodeFate::Fused;
      if (fusedBy[i] >= 0)
        nc.rule = log[static_cast<std::size_t>(fusedBy[i])]->rule;
      ++gc.fused;
    } else {
      auto addEntries = [&](const std::vector<const ExplainEntry *> &es, const std::string &via) {
        for (const ExplainEntry *e : es) {
          if (e->matched) {
            nc.fate = NodeFate::Refused;
            nc.reasons.push_back(via + refusedReason(*e));
            nc.details.push_back(via + format(*e));
            continue;
          }
          if (nc.fate != NodeFate::Refused)
            nc.fate = NodeFate::NearMiss;
          std::string r = via + failureReason(*e);
          if (std::find(nc.reasons.begin(), nc.reasons.end(), r) == nc.reasons.end())
            nc.reasons.push_back(r);
          nc.details.push_back(format(*e));
        }
      };
      auto here = atRoot.find(info.name);
      if (here != atRoot.end()) {
        addEntries(here->second, "");
      } else if (isPatternOp(n)) {
        // An interior node: the rules rooted further down that failed.
        // Breadth-first through users whose op some pattern mentions.
        std::deque<std::pair<const Node *, std::size_t>> queue{{n, 1}};
        std::set<const Node *> seen{n};
        while (!queue.empty()) {
          auto [cur, depth] = queue.front();
          queue.pop_front();
          for (const Value *out : cur->outputs())
            for (const Node *u : out->users()) {
              if (!seen.insert(u).second || !isPatternOp(u))
                continue;
              auto at = atRoot.find(u->name());
              if (at != atRoot.end())
                addEntries(at->second, "via a user: ");
              else if (depth + 1 < maxPattern)
                queue.push_back({u, depth + 1});
            }
        }
        if (nc.reasons.empty()) {
          nc.fate = NodeFate::NotReached;
          nc.reasons.push_back("in a rule pattern, but no candidate root uses it");
        }
      } else {
        nc.fate = NodeFate::NoRule;
        nc.reasons.push_back("no rule");
      }
    }

    auto op =
        std::lower_bound(report.ops.begin(), report.ops.end(), nc.target,
                         [](const OpCoverage &o, const std::string &t) { return o.target < t; });
    if (op == report.ops.end() || op->target != nc.target)
      op = report.ops.insert(op, OpCoverage{nc.target, 0, 0, {}});
    ++op->nodes;
    if (nc.fate == NodeFate::Fused)
      ++op->fused;
    for (const std::string &r : nc.reasons)
      bump(op->reasons, r);
    report.nodes.push_back(std::move(nc));
  }
  report.graphs.push_back(std::move(gc));

  // Pictures: created nodes are drawn from the fused graph when they are
  // still there (a node made and then fused again is drawn without its op).
  for (std::size_t k = 0; k < log.size(); ++k) {
    const AppliedRewrite &a = *log[k];
    std::vector<DrawnNode> made;
    for (std::size_t c = 0; c < a.created.size(); ++c) {
      auto it = live.find(a.created[c]);
      const Value *cv = after.findValue(a.created[c]);
      if (it != live.end() && !it->second.original && it->second.rewrite == k && cv &&
          cv->producer())
        made.push_back(drawn(*cv->producer()));
      else
        made.push_back({a.created[c], "", {a.created[c]}, {}});
    }
    FusedMatch m;
    m.graph = graphName;
    m.rule = a.rule;
    m.root = a.root;
    m.removed = a.removed;
    m.created = a.created;
    m.dot = matchDot(a.rule, a.root, matchBefore[k], made);
    report.matches.push_back(std::move(m));
  }
}

Status addCoverage(CoverageReport &report, const std::string &graphName, Graph &graph,
                   const CompiledRules &rules, RewriteOptions options) {
  options.recordLog = true;
  CoverageSnapshot snap = snapshotForCoverage(graph, rules);
  FqnRegistry fqns;
  GRAFT_TRY(RewriteResult result, applyRules(graph, rules, fqns, options));
  addCoverage(report, graphName, snap, graph, result, rules);
  return okStatus();
}

} // namespace graft::rewrite
