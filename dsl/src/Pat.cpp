//===- Pat.cpp - Loading .pat files: imports, rule sets, formatting -------===//
//
// The public entry points of graft_dsl. A Loader reads a file, parses it,
// follows its `import`s depth-first (paths relative to the importing file,
// each file loaded once, a cycle is an error at the import that closes it),
// analyzes every file's rules and collects them, in load order, into a
// RuleSet. Rule names are global across the loaded files.
//
//===----------------------------------------------------------------------===//
#include "graft/dsl/Pat.h"

#include "PatSema.h"
#include "PatSyntax.h"

#include "graft/ops/OpRegistry.h"
#include "graft/rewrite/ConstantTransforms.h"
#include "graft/support/FileIO.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace graft::dsl {
namespace {

namespace fs = std::filesystem;

/// The identity of a file for "load once" and cycle detection.
std::string fileKey(const std::string &path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::path(path), ec);
  return ec ? fs::path(path).lexically_normal().string() : p.string();
}

std::string importPathText(const std::string &lit) {
  // The grammar guarantees a quoted string; imports are plain paths, so only
  // the quotes and \" \\ escapes matter.
  std::string out;
  for (std::size_t i = 1; i + 1 < lit.size(); ++i) {
    if (lit[i] == '\\' && i + 2 < lit.size())
      ++i;
    out += lit[i];
  }
  return out;
}

class Loader {
public:
  Loader(SourceManager *sources, const PatOptions &options)
      : sources_(sources),
        options_(options), ctx_{options.registry ? *options.registry : OpRegistry::builtin(),
                                rewrite::ConstantTransformRegistry::builtin()} {}

  void loadFile(const std::string &path, const SourceRange *importedAt) {
    auto text = readFile(path);
    if (!text) {
      for (const Diagnostic &d : text.diags()) {
        if (importedAt)
          diags_.push_back(Diagnostic::error(*importedAt, "cannot import: " + d.message));
        else
          diags_.push_back(d);
      }
      return;
    }
    loadText(*text, path);
  }

  void loadText(std::string_view text, const std::string &name) {
    std::string key = fileKey(name);
    done_.insert(key);
    stack_.push_back(key);
    stackNames_.push_back(name);
    if (sources_)
      sources_->add(name, std::string(text));
    auto parsed = parseSyntax(text, name);
    if (!parsed) {
      for (const Diagnostic &d : parsed.diags())
        diags_.push_back(d);
      stack_.pop_back();
      stackNames_.pop_back();
      return;
    }
    const ParsedFile &file = *parsed;
    for (const Syn &item : file.root.kids)
      if (item.kind == SK::Import)
        import(file, item);
    std::size_t fileIndex = set_.files.size();
    set_.files.push_back(name);
    for (const Syn &item : file.root.kids) {
      if (item.kind != SK::Rule)
        continue;
      const Syn &n = item.kids.front();
      SourceRange r = rangeOf(file, n);
      auto [it, fresh] = ruleNames_.emplace(n.text, r);
      if (!fresh) {
        Diagnostic d = Diagnostic::error(r, "redefinition of rule '" + n.text + "'");
        d.note(it->second, "previous definition here");
        diags_.push_back(std::move(d));
      }
    }
    std::size_t firstRule = set_.rules.size();
    rewrite::RulePhase phase = filePhase(file);
    analyzeFile(file, ctx_, set_.rules, diags_);
    for (std::size_t i = firstRule; i < set_.rules.size(); ++i)
      set_.rules[i].phase = phase;
    set_.ruleFile.resize(set_.rules.size(), fileIndex);
    stack_.pop_back();
    stackNames_.pop_back();
  }

  RuleSet &ruleSet() { return set_; }
  std::vector<Diagnostic> &diags() { return diags_; }

private:
  /// The file's `phase NAME` (Fuse without one): at most one, before any rule.
  rewrite::RulePhase filePhase(const ParsedFile &file) {
    rewrite::RulePhase phase = rewrite::RulePhase::Fuse;
    const Syn *declared = nullptr;
    const Syn *firstRule = nullptr;
    for (const Syn &item : file.root.kids) {
      if (item.kind == SK::Rule && !firstRule)
        firstRule = &item;
      if (item.kind != SK::Phase)
        continue;
      const Syn &nameSyn = item.kids.front();
      SourceRange at = rangeOf(file, nameSyn);
      if (declared) {
        Diagnostic d = Diagnostic::error(rangeOf(file, item), "a file declares one phase");
        d.note(rangeOf(file, *declared), "the phase is declared here");
        diags_.push_back(std::move(d));
        continue;
      }
      declared = &item;
      if (firstRule) {
        Diagnostic d = Diagnostic::error(
            rangeOf(file, item), "'phase' must come before the file's rules (it applies to all)");
        d.note(rangeOf(file, firstRule->kids.front()), "first rule here");
        diags_.push_back(std::move(d));
      }
      bool known = false;
      for (rewrite::RulePhase p : rewrite::kRulePhases)
        if (nameSyn.text == rewrite::name(p)) {
          phase = p;
          known = true;
        }
      if (!known)
        diags_.push_back(Diagnostic::error(at, "unknown phase '" + nameSyn.text +
                                                   "' (the phases, in the order they run: "
                                                   "legalize, fuse)"));
    }
    return phase;
  }

  void import(const ParsedFile &file, const Syn &item) {
    const Syn &lit = item.kids.front();
    SourceRange at = rangeOf(file, lit);
    std::string rel = importPathText(lit.text);
    if (rel.empty()) {
      diags_.push_back(Diagnostic::error(at, "empty import path"));
      return;
    }
    fs::path p(rel);
    if (p.is_relative())
      p = fs::path(file.name).parent_path() / p;
    std::string path = p.lexically_normal().string();
    std::string key = fileKey(path);
    auto onStack = std::find(stack_.begin(), stack_.end(), key);
    if (onStack != stack_.end()) {
      std::string chain;
      for (auto it = onStack; it != stack_.end(); ++it)
        chain += stackNames_[static_cast<std::size_t>(it - stack_.begin())] + " -> ";
      diags_.push_back(Diagnostic::error(at, "import cycle: " + chain + path));
      return;
    }
    if (done_.count(key))
      return; // each file once
    loadFile(path, &at);
  }

  SourceManager *sources_;
  const PatOptions &options_;
  SemaContext ctx_;
  RuleSet set_;
  std::vector<Diagnostic> diags_;
  std::vector<std::string> stack_, stackNames_;
  std::set<std::string> done_;
  std::map<std::string, SourceRange> ruleNames_;
};

/// Turns a load into the Expected result: failure if any error (or any
/// warning with warningsAsErrors), else the rules plus their warnings.
Expected<RuleSet> finish(Loader &loader, const PatOptions &options) {
  std::vector<Diagnostic> &diags = loader.diags();
  bool failed = false;
  for (Diagnostic &d : diags) {
    if (d.severity == Severity::Warning && options.warningsAsErrors)
      d.severity = Severity::Error;
    failed |= d.severity == Severity::Error;
  }
  if (failed)
    return Failure(std::move(diags));
  RuleSet set = std::move(loader.ruleSet());
  set.warnings = std::move(diags);
  return set;
}

std::vector<Diagnostic> all(Loader &loader, const PatOptions &options) {
  std::vector<Diagnostic> diags = std::move(loader.diags());
  if (options.warningsAsErrors)
    for (Diagnostic &d : diags)
      if (d.severity == Severity::Warning)
        d.severity = Severity::Error;
  return diags;
}

} // namespace

Expected<RuleSet> parsePatFile(const std::string &path, SourceManager *sources,
                               const PatOptions &options) {
  Loader loader(sources, options);
  loader.loadFile(path, nullptr);
  return finish(loader, options);
}

Expected<RuleSet> parsePat(std::string_view text, const std::string &name, SourceManager *sources,
                           const PatOptions &options) {
  Loader loader(sources, options);
  loader.loadText(text, name);
  return finish(loader, options);
}

std::vector<Diagnostic> checkPatFile(const std::string &path, SourceManager *sources,
                                     const PatOptions &options) {
  Loader loader(sources, options);
  loader.loadFile(path, nullptr);
  return all(loader, options);
}

std::vector<Diagnostic> checkPat(std::string_view text, const std::string &name,
                                 SourceManager *sources, const PatOptions &options) {
  Loader loader(sources, options);
  loader.loadText(text, name);
  return all(loader, options);
}

Expected<std::string> formatPat(std::string_view text, const std::string &name) {
  GRAFT_TRY(ParsedFile file, parseSyntax(text, name));
  return formatFile(file);
}

} // namespace graft::dsl
