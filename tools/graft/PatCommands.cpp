//===- PatCommands.cpp - graft check / graft fmt (the .pat language) ------===//
//
// `graft check FILES...` loads each rule file with its imports and prints
// every diagnostic (errors, warnings, notes) clang-style; exit status 1 when
// any error was found. `graft fmt FILES...` prints files canonically, checks
// that they are (--check) or rewrites them in place (-i). Both are thin
// layers over graft_dsl (dsl/include/graft/dsl/Pat.h); docs/cli.md documents
// them.
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/Compiler.h"
#include "graft/dsl/Pat.h"
#include "graft/support/FileIO.h"

#include <iostream>
#include <set>
#include <tuple>

namespace graft::cli {

Command makeCheckCommand() {
  Command c;
  c.name = "check";
  c.usage = "graft check [FILE|DIR...] [--werror]";
  c.summary = "Check .pat rule files; print every error and warning.";
  c.details =
      "Each FILE is loaded with its imports, and every rule is checked against the op\n"
      "registry: ops and overloads, arity, keywords and argument kinds, bindings,\n"
      "connectivity of the match, the rewrite and the prototypes it produces. The\n"
      "diagnostics are catalogued in docs/dsl-errors.md. Without FILEs, checks the shipped\n"
      "rules compiled into graft. Exit status 1 if any file has an error (or, with\n"
      "--werror, a warning).";
  c.flags = {{"werror", false, "treat warnings as errors"}};
  c.run = [](const Args &args) {
    if (args.positional.empty()) {
      // The shipped rules, as every command loads them (RuleSet::shipped
      // runs the same checks; a shipped file with an error is a graft bug).
      SourceManager sources;
      auto shipped = RuleSet::shipped(&sources);
      if (!shipped)
        return reportFailure(shipped.diags(), &sources);
      for (const Diagnostic &w : shipped->warnings)
        std::cerr << render(w, &sources);
      for (const std::string &f : RuleSet::shippedFiles())
        std::cout << "patterns/" << f << ": ok\n";
      if (!shipped->warnings.empty())
        std::cerr << shipped->warnings.size() << " warning"
                  << (shipped->warnings.size() == 1 ? "" : "s") << " generated.\n";
      return args.has("werror") && !shipped->warnings.empty() ? int(kUserError) : int(kOk);
    }
    dsl::PatOptions options;
    options.warningsAsErrors = args.has("werror");
    SourceManager sources;
    // A file imported by several FILEs is checked once per importer; print
    // each diagnostic once.
    std::set<std::tuple<std::string, uint32_t, uint32_t, std::string>> printed;
    std::size_t errors = 0, warnings = 0;
    bool internal = false;
    auto paths = expandRulePaths(splitList(args.positional));
    if (!paths) {
      std::cerr << "graft check: ";
      return reportFailure(paths.diags());
    }
    for (const std::string &path : *paths) {
      std::vector<Diagnostic> diags = dsl::checkPatFile(path, &sources, options);
      std::size_t fileErrors = 0;
      for (const Diagnostic &d : diags) {
        SourceLoc at = d.range ? d.range->begin : SourceLoc{};
        if (!printed.emplace(at.file, at.line, at.column, d.message).second)
          continue;
        std::cerr << render(d, &sources);
        internal |= d.kind == DiagKind::Internal;
        if (d.severity == Severity::Error) {
          ++errors;
          ++fileErrors;
        } else if (d.severity == Severity::Warning) {
          ++warnings;
        }
      }
      if (fileErrors == 0)
        std::cout << path << ": ok\n";
    }
    if (errors || warnings)
      std::cerr << errors << " error" << (errors == 1 ? "" : "s") << " and " << warnings
                << " warning" << (warnings == 1 ? "" : "s") << " generated.\n";
    if (internal)
      return int(kInternalError);
    return errors ? int(kUserError) : int(kOk);
  };
  return c;
}

Command makeFmtCommand() {
  Command c;
  c.name = "fmt";
  c.usage = "graft fmt FILE... [--check] [-i]";
  c.summary = "Format .pat rule files canonically.";
  c.details = "Without options, prints the canonical form of one FILE. --check lists the files\n"
              "that are not canonical and exits with status 1 if any is not; -i rewrites them\n"
              "in place (atomically). Formatting keeps comments and single blank lines and is\n"
              "idempotent; only syntax errors stop it (docs/dsl.md, \"Formatting\").";
  c.flags = {{"check", false, "report files that are not canonically formatted"},
             {"i", false, "rewrite the files in place"}};
  c.run = [](const Args &args) {
    if (args.positional.empty()) {
      std::cerr << "graft fmt: error: expected at least one FILE\n";
      return int(kUserError);
    }
    bool check = args.has("check"), inPlace = args.has("i");
    if (!check && !inPlace && args.positional.size() > 1) {
      std::cerr << "graft fmt: error: several FILEs need --check or -i\n";
      return int(kUserError);
    }
    int status = kOk;
    for (const std::string &path : args.positional) {
      SourceManager sources;
      auto text = readFile(path);
      if (!text) {
        status = std::max(status, reportFailure(text.diags()));
        continue;
      }
      sources.add(path, *text);
      auto formatted = dsl::formatPat(*text, path);
      if (!formatted) {
        status = std::max(status, reportFailure(formatted.diags(), &sources));
        continue;
      }
      bool same = *formatted == *text;
      if (check && !same) {
        // Point at the first line that differs.
        std::size_t line = 1;
        for (std::size_t i = 0; i < text->size() && i < formatted->size(); ++i) {
          if ((*text)[i] != (*formatted)[i])
            break;
          if ((*text)[i] == '\n')
            ++line;
        }
        std::cerr << path << ":" << line << ": not canonically formatted (run 'graft fmt -i "
                  << path << "')\n";
        status = std::max(status, int(kUserError));
      }
      if (inPlace && !same) {
        Status s = writeFileAtomic(path, *formatted);
        if (!s)
          status = std::max(status, reportFailure(s.diags()));
      }
      if (!check && !inPlace)
        std::cout << *formatted;
    }
    return status;
  };
  return c;
}

} // namespace graft::cli
