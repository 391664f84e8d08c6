//===- Pat.h - The .pat fusion-rule language ---*- C++ -*-===//
//
// Front end of graft's pattern DSL (docs/dsl.md): parses `.pat` files,
// resolves `import`s, checks every rule against the op registry (ops,
// overloads, arities, argument kinds, bindings, connectivity, rewrite
// prototypes; docs/dsl-errors.md) and lowers the rules to
// graft::rewrite::Rule, the model the matcher and rewrite driver execute.
// `formatPat` prints a file canonically (what `graft fmt` does).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/rewrite/Rule.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <string>
#include <string_view>
#include <vector>

namespace graft {
class OpRegistry;
}

namespace graft::dsl {

/// Every rule of a .pat file and of the files it imports.
struct RuleSet {
  /// In load order: an imported file's rules come before the importer's, each
  /// file's rules in source order. Statement-level alternatives expand into
  /// several Rules with the same name (Rule::variant).
  std::vector<rewrite::Rule> rules;
  /// files[ruleFile[i]] is the file rules[i] was written in.
  std::vector<std::size_t> ruleFile;
  /// Every file loaded, each once, as its path was spelled (imports joined to
  /// the importing file's directory), in load order.
  std::vector<std::string> files;
  /// Warnings of a successful load (unused captures, ...).
  std::vector<Diagnostic> warnings;
};

struct PatOptions {
  /// Ops rules may use; null means OpRegistry::builtin().
  const OpRegistry *registry = nullptr;
  /// Report warnings as errors (parse* then fail on a warning).
  bool warningsAsErrors = false;
};

/// Loads `path` and its imports. `sources` (optional) receives the text of
/// every file read, so diagnostics render with source lines and carets.
Expected<RuleSet> parsePatFile(const std::string &path, SourceManager *sources = nullptr,
                               const PatOptions &options = {});
/// The same for text held in memory; `name` is used in diagnostics and its
/// directory resolves relative imports.
Expected<RuleSet> parsePat(std::string_view text, const std::string &name,
                           SourceManager *sources = nullptr, const PatOptions &options = {});

/// Every diagnostic (errors, warnings, their notes) of `path` and its
/// imports, in file order; empty when the file is clean. Never fails.
std::vector<Diagnostic> checkPatFile(const std::string &path, SourceManager *sources = nullptr,
                                     const PatOptions &options = {});
std::vector<Diagnostic> checkPat(std::string_view text, const std::string &name,
                                 SourceManager *sources = nullptr, const PatOptions &options = {});

/// The canonical form of a .pat file (docs/dsl.md, "Formatting"): layout,
/// indentation, spacing and line breaks are normalized; comments and single
/// blank lines are kept. Idempotent: formatPat(formatPat(x)) == formatPat(x).
/// Fails only on syntax errors (semantic errors do not stop formatting).
Expected<std::string> formatPat(std::string_view text, const std::string &name = "<input>");

} // namespace graft::dsl
