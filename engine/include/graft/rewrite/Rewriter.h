//===- Rewriter.h - Applying fusion rules to a graph ---*- C++ -*-===//
//
// CompiledRules turns rewrite::Rules (from the .pat front end or built in
// C++) into matchers indexed by root op. applyRules runs them to a fixpoint:
//
//   auto rules = CompiledRules::compile(std::move(parsed.rules));
//   FqnRegistry fqns;
//   auto result = applyRules(graph, *rules, fqns, {.verifyEach = true});
//
// Driver: a worklist over the graph's nodes, bottom-up (users before
// producers, so a larger pattern rooted further down gets the first chance);
// at each node the rules indexed under its op are tried in order of benefit
// (ties: rule order). Every rewrite is transactional: the replacement is
// built and checked (inference, prototypes, cycles, escapes, constant
// transforms) before the graph is touched. New and affected nodes go back on
// the worklist; the run ends at a fixpoint (`converged`) or at the iteration
// or rewrite limit. Deterministic: the same graph and rules give the same
// result. See docs/rewrite-engine.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/rewrite/ConstantTransforms.h"
#include "graft/rewrite/FqnRegistry.h"
#include "graft/rewrite/Rule.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graft {
class OpRegistry;
}

namespace graft::rewrite {

namespace detail {
class CompiledRule;
}

/// Rules compiled against an op registry, indexed by root op.
class CompiledRules {
public:
  /// Compiles every rule; errors (unknown ops, unbound captures, a pattern
  /// disconnected from its root, ...) are located at the rule's .pat text.
  /// `registry` and `transforms` must outlive the result (null: built-ins).
  static Expected<CompiledRules> compile(std::vector<Rule> rules,
                                         const OpRegistry *registry = nullptr,
                                         const ConstantTransformRegistry *transforms = nullptr);

  CompiledRules(CompiledRules &&) noexcept;
  CompiledRules &operator=(CompiledRules &&) noexcept;
  ~CompiledRules();

  std::size_t size() const { return rules_.size(); }
  const Rule &rule(std::size_t i) const;
  const detail::CompiledRule &compiled(std::size_t i) const { return *rules_[i]; }
  /// Indices of the rules (all variants) called `name`.
  std::vector<std::size_t> find(std::string_view name) const;
  const OpRegistry &registry() const { return *registry_; }
  const ConstantTransformRegistry &transforms() const { return *transforms_; }
  /// Rules by descending benefit, ties in rule order: the order they are tried.
  const std::vector<std::size_t> &byBenefit() const { return byBenefit_; }

private:
  CompiledRules() = default;
  std::vector<std::unique_ptr<detail::CompiledRule>> rules_;
  std::vector<std::size_t> byBenefit_;
  const OpRegistry *registry_ = nullptr;
  const ConstantTransformRegistry *transforms_ = nullptr;
};

struct RuleStats {
  std::string rule;
  unsigned variant = 0;
  uint64_t tried = 0;    ///< candidate roots examined (root op matched)
  uint64_t matched = 0;  ///< full matches (structure, uses, where)
  uint64_t applied = 0;  ///< rewrites committed
  uint64_t rejected = 0; ///< matches whose rewrite was refused (see `rejections`)
  /// Unmatched candidates by their deepest failing check ("file:l:c what"),
  /// in first-seen order.
  std::vector<std::pair<std::string, uint64_t>> failures;
  /// Refused rewrites by reason ("would create a cycle", ...).
  std::vector<std::pair<std::string, uint64_t>> rejections;
};

/// One committed rewrite.
struct AppliedRewrite {
  std::string rule;
  std::string root;                   ///< the root node's name (first result)
  std::vector<std::string> removed;   ///< names of the nodes erased
  std::vector<std::string> created;   ///< names of the new nodes
  std::vector<std::string> constants; ///< FQNs of constants made for this rewrite
  std::vector<std::string> reused;    ///< FQNs of registry constants reused
};

struct RewriteOptions {
  /// Full sweeps of the graph; the driver stops early at a fixpoint.
  unsigned maxIterations = 10;
  /// Stop after this many rewrites; `converged` is then false. 0: automatic,
  /// 8 x the initial node count + 1024, which a terminating rule set cannot
  /// reach (each rewrite removes at least its root) but stops a rule that
  /// matches its own output.
  uint64_t maxRewrites = 0;
  /// Re-run graft::verify after every rewrite and stop at the first
  /// violation (naming the rule and root).
  bool verifyEach = false;
  /// Visit producers before users (default: users first, bottom-up).
  bool topDown = false;
  /// Keep an AppliedRewrite per rewrite (costs a few strings per rewrite).
  bool recordLog = true;
  /// Only these rule names run (empty: all).
  std::vector<std::string> onlyRules;
  /// Record each new constant's transform instead of computing its data
  /// (GraphInput::init = DeferredInit): fusing reads no weights and holds no
  /// repacked copy; the data is computed when first needed (interpreter,
  /// writers, which stream it). The cost: a transform that fails on the data
  /// (pack_int4 of a value outside [-8, 7] where the rule has no values_in
  /// check) is reported then, naming the constant, instead of refusing the
  /// rewrite. Eager (false) keeps rewrites all-or-nothing on data too.
  bool deferConstantData = false;
};

struct RewriteResult {
  bool converged = false;
  /// "fixpoint", "iteration limit" or "rewrite limit".
  std::string stopReason;
  unsigned iterations = 0;
  uint64_t rewrites = 0;
  std::size_t nodesBefore = 0, nodesAfter = 0;
  std::vector<RuleStats> stats; ///< one per rule, in rule order
  std::vector<AppliedRewrite> log;
};

/// Applies the rules to a fixpoint. Fails only on a graft bug or when
/// verifyEach finds the graph broken after a rewrite; refused rewrites are
/// counted in the stats, not errors.
Expected<RewriteResult> applyRules(Graph &graph, const CompiledRules &rules, FqnRegistry &registry,
                                   const RewriteOptions &options = {});

/// `graft fuse`-style summary: what fired, per-rule stats, convergence.
std::string formatResult(const RewriteResult &result, const CompiledRules &rules);

//===----------------------------------------------------------------------===//
// Explain
//===----------------------------------------------------------------------===//

struct ExplainOptions {
  std::string rule; ///< only rules with this name (empty: all)
  std::string node; ///< only this root node, by value name with or without '%' (empty: all)
  /// Also report candidates that match (as "matches").
  bool includeMatches = true;
};

/// One candidate (rule, root node) and why it does or does not match.
struct ExplainEntry {
  std::string rule;
  unsigned variant = 0;
  SourceRange ruleLoc;
  std::string root;
  bool matched = false;
  SourceRange loc;     ///< the failing check's .pat location
  std::string check;   ///< what was checked ("quant_min", "where $D % 32 == 0")
  std::string message; ///< "quant_min: expected -8, node %dequantize_affine_3 has -128"
};

/// Tries every candidate on the graph as it is (nothing is rewritten).
std::vector<ExplainEntry> explain(const Graph &graph, const CompiledRules &rules,
                                  const ExplainOptions &options = {});
/// "rule torchao_embedding_q4gsw (patterns/embedding.pat:5:45): quant_min: expected -8,
///  node %dequantize_affine_3 has -128 [root %embedding_3]"
std::string format(const ExplainEntry &entry);

} // namespace graft::rewrite
