//===- Explain.cpp - Why a rule does (not) match at a node ----------------===//
//
// Runs the matcher in explain mode on every candidate (rule, root node) of a
// graph without rewriting anything, and reports for each unmatched candidate
// the deepest failing check: the .pat location of the pattern element or
// predicate, and the actual value found in the graph.
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/Rewriter.h"

#include "Matcher.h"
#include "RewriteUtil.h"
#include "RootIndex.h"

namespace graft::rewrite {

std::vector<ExplainEntry> explain(const Graph &graph, const CompiledRules &rules,
                                  const ExplainOptions &options) {
  std::vector<bool> enabled(rules.size(), true);
  for (std::size_t i = 0; i < rules.size(); ++i)
    enabled[i] = options.rule.empty() || rules.rule(i).name == options.rule;
  detail::RootIndex index(rules, enabled);
  detail::Matcher matcher(graph);
  matcher.explain = true;
  std::string nodeName = options.node;
  if (!nodeName.empty() && nodeName[0] == '%')
    nodeName = nodeName.substr(1);

  std::vector<ExplainEntry> out;
  std::vector<uint32_t> scratch;
  bool sawNode = false;
  for (const Node &cn : graph.nodes()) {
    Node &n = const_cast<Node &>(cn); // the matcher only reads the graph
    if (!nodeName.empty()) {
      bool named = false;
      for (const Value *v : n.outputs())
        named = named || v->name() == nodeName;
      if (!named)
        continue;
      sawNode = true;
    }
    const std::vector<uint32_t> *cands = index.lookup(n, scratch);
    if (!cands) {
      if (!nodeName.empty()) {
        // The user asked about this node: say why no rule even starts here.
        for (std::size_t i = 0; i < rules.size(); ++i) {
          if (!enabled[i])
            continue;
          const detail::CompiledRule &cr = rules.compiled(i);
          const detail::CNode &root = cr.nodes[static_cast<std::size_t>(cr.root)];
          ExplainEntry e;
          e.rule = cr.rule().name;
          e.variant = cr.rule().variant;
          e.ruleLoc = cr.rule().loc;
          e.root = n.name();
          e.loc = root.src->loc;
          e.check = "root op";
          e.message =
              "root op: expected " + root.targetsText + ", node %" + n.name() + " is " + n.target();
          out.push_back(std::move(e));
        }
      }
      continue;
    }
    for (uint32_t ri : *cands) {
      const detail::CompiledRule &cr = rules.compiled(ri);
      bool ok = matcher.match(cr, &n);
      if (ok && !options.includeMatches)
        continue;
      ExplainEntry e;
      e.rule = cr.rule().name;
      e.variant = cr.rule().variant;
      e.ruleLoc = cr.rule().loc;
      e.root = n.name();
      e.matched = ok;
      if (!ok) {
        const detail::MatchFailure &f = matcher.failure();
        if (f.site >= 0) {
          e.loc = cr.sites[static_cast<std::size_t>(f.site)].loc;
          e.check = cr.sites[static_cast<std::size_t>(f.site)].what;
        }
        e.message = f.message.empty() ? "no match" : f.message;
      }
      out.push_back(std::move(e));
    }
  }
  if (!nodeName.empty() && !sawNode) {
    ExplainEntry e;
    e.root = nodeName;
    e.message = "no node defines %" + nodeName;
    out.push_back(std::move(e));
  }
  return out;
}

std::string format(const ExplainEntry &e) {
  if (e.rule.empty())
    return e.message;
  std::string name = e.rule + (e.variant ? "#" + std::to_string(e.variant) : "");
  if (e.matched)
    return "rule " + name + " (" + detail::formatLoc(e.ruleLoc) + "): matches at %" + e.root;
  return "rule " + name + " (" + detail::formatLoc(e.loc.begin.valid() ? e.loc : e.ruleLoc) +
         "): " + e.message + " [root %" + e.root + "]";
}

} // namespace graft::rewrite
