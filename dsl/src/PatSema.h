//===- PatSema.h - Semantic analysis of .pat files (internal) ---*- C++ -*-===//
//
// Checks a parsed .pat file against the op registry and the constant
// transform registry and lowers each clean rule to rewrite::Rule. Every
// problem becomes a located diagnostic (docs/dsl-errors.md); analysis goes on
// after an error so one run reports as many as it can.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "PatSyntax.h"

#include "graft/rewrite/Rule.h"

#include <string>
#include <string_view>
#include <vector>

namespace graft {
class OpRegistry;
namespace rewrite {
class ConstantTransformRegistry;
}
} // namespace graft

namespace graft::dsl {

struct SemaContext {
  const OpRegistry &ops;
  const rewrite::ConstantTransformRegistry &transforms;
};

/// Analyzes every rule of `file`; appends the rules without errors to
/// `rules` and every diagnostic (errors and warnings) to `diags`.
void analyzeFile(const ParsedFile &file, const SemaContext &ctx, std::vector<rewrite::Rule> &rules,
                 std::vector<Diagnostic> &diags);

/// The prototype check of a lowered rule (see PatProtoCheck.cpp): a rewrite
/// may not replace a matched result by a value of another kind, dtype or
/// shape, where the pattern's types and example pin them down.
std::vector<Diagnostic> checkRewritePrototypes(const rewrite::Rule &rule, const SemaContext &ctx);

/// The candidate closest to `name` by edit distance, or "" when none is
/// plausibly a misspelling of it.
std::string closestName(std::string_view name, const std::vector<std::string> &candidates);

} // namespace graft::dsl
