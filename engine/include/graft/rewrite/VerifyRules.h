//===- VerifyRules.h - Differential testing of fusion rules ---*- C++ -*-===//
//
// `graft verify-rules`: for each rule, build concrete instances of its match
// pattern from the rule's `example` domain, run the reference interpreter on
// each instance before and after applying the rule, and compare the outputs
// within the rule's tolerance (atol + rtol * |before|).
//
// An instance is a small graph holding exactly the pattern's nodes:
//  * captures take the example's values (`V = 64`, `G = [32, 64]`); captures
//    the example leaves out are solved from `where` equalities
//    (`$NG == $D / $G`), else default to 8;
//  * tensors take their type patterns; untyped (or partly typed, `_`) tensors
//    are found by search: small candidate shapes from the example's values
//    and their quotients, checked by shape inference and by running the node;
//  * constants get random data that satisfies the where clause: integers
//    within `values_in` bounds (else the dtype's range), zeros for
//    `all_zero`, None for a capture the where clause allows to be none;
//  * optional nodes are tried present and absent, `|` alternatives each.
// Instances are tested smallest first, so the first failure is a minimal
// counterexample; its graph is kept for printing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/rewrite/Rewriter.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graft::rewrite {

struct RuleVerifyOptions {
  /// Instances per rule: domain points x pattern variants, smallest first
  /// (spread over the domain when there are more; repeated with new random
  /// data when there are fewer).
  unsigned instances = 8;
  uint64_t seed = 1;
  /// Only these rule names (empty: all).
  std::vector<std::string> onlyRules;
};

struct Counterexample {
  std::string instance;          ///< "V=64, D=64, G=32; %c absent; seed 1"
  std::string message;           ///< what differed, or why the rewrite failed
  std::shared_ptr<Graph> before; ///< the instance graph (print with printGraph)
  std::shared_ptr<Graph> after;  ///< after the rewrite, when it applied
  double maxAbsDiff = 0;
};

struct RuleVerification {
  std::string rule;
  unsigned variant = 0;
  SourceRange loc;
  unsigned tested = 0; ///< instances run before and after
  unsigned passed = 0;
  unsigned skipped = 0; ///< instances outside the where clause
  double worstDiff = 0; ///< largest |before - after| among passing instances
  /// Instances could not be built or run (the rule is not verifiable as written).
  std::vector<std::string> errors;
  std::optional<Counterexample> counterexample;
  bool ok() const { return errors.empty() && !counterexample && tested > 0; }
};

/// Verifies every (selected) rule.
std::vector<RuleVerification> verifyRules(const CompiledRules &rules,
                                          const RuleVerifyOptions &options = {});
RuleVerification verifyRule(const CompiledRules &rules, std::size_t index,
                            const RuleVerifyOptions &options = {});

/// "rule x (file:l:c): ok, 8 instances, max |diff| 0" or the failure with
/// the counterexample's parameters and message (not its graph).
std::string format(const RuleVerification &v);

} // namespace graft::rewrite
