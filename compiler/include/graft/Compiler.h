//===- Compiler.h - graft as a library: model -> Vulkan program ---*- C++ -*-===//
//
// The API an export pipeline calls (docs/api.md). The whole pipeline:
//
//   graft::CompileOptions opts;
//   opts.target = "adreno";
//   opts.output = "model.vkprog";                  // written atomically
//   auto result = graft::compile("model.pt2", opts);
//   if (!result) { for (auto &d : result.diags()) std::cerr << render(d); }
//   std::cout << result->summary.text();           // or .json()
//
// or step by step:
//
//   auto model = graft::load("model.pt2");
//   auto rules = graft::RuleSet::shipped();        // patterns/*.pat, embedded
//   rules->addPath("my_rules/");                   // user .pat files
//   rewrite::FqnRegistry fqns;
//   auto fused = graft::fuse(*model->graph, *rules, fqns);
//   auto parts = graft::partition(*model->graph, "lavapipe");
//
// The shipped rule library is compiled into the library, so none of this
// needs a source tree. graft_compiler sits on top of the other libraries
// (docs/architecture.md, "Layering").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/rewrite/Coverage.h"
#include "graft/rewrite/FqnRegistry.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/rewrite/Rule.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/Pt2.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"
#include "graft/vulkan/Partitioner.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graft {

/// A model read from a .pt2 or .gir.
struct Model {
  std::unique_ptr<Graph> graph;
  std::optional<Pt2Provenance> pt2; ///< set for a .pt2 (needed to write one back)
  std::string path;
};

/// Reads a .pt2 or .gir (diagnostics render against `sources` when given).
Expected<Model> load(const std::string &path, SourceManager *sources = nullptr);

/// Rule paths as every command and the Python API take them: a file stands
/// for itself, a directory for its *.pat files in name order (a directory
/// without any is an error, never a silent empty rule set).
Expected<std::vector<std::string>> expandRulePaths(const std::vector<std::string> &paths);

/// Fusion rules: the shipped library and/or user .pat files. Rules of files
/// declaring `phase legalize` form a first pass that runs to a fixpoint
/// before all other rules (rewrite::RulePhase).
class RuleSet {
public:
  RuleSet() = default;
  /// The shipped rules (patterns/*.pat, embedded at build time).
  static Expected<RuleSet> shipped(SourceManager *sources = nullptr);
  /// Names of the embedded rule files.
  static std::vector<std::string> shippedFiles();

  /// Adds a .pat file (with its imports) or every *.pat in a directory (sorted).
  Status addPath(const std::string &path, SourceManager *sources = nullptr);
  /// Adds rules from .pat text held in memory; `name` is used in diagnostics.
  Status addText(std::string_view text, const std::string &name, SourceManager *sources = nullptr);

  /// Rules tagged `lossy` change results by more than rounding (e.g.
  /// qdq_fold_q_dq removes a simulated quantization: up to s/2 per element,
  /// unbounded where it saturated). They are loaded but run only when
  /// allowed: rules(), compiled() and size() leave them out until then.
  /// verify-rules allows them, so they are still checked within their
  /// stated tolerance.
  void allowLossy(bool allow = true);
  bool lossyAllowed() const { return allowLossy_; }
  /// The lossy rules left out (empty once allowed).
  std::vector<const rewrite::Rule *> heldBack() const;

  std::size_t size() const { return legalize_.size() + fuse_.size(); }
  const std::vector<std::string> &files() const { return files_; }
  const std::vector<rewrite::Rule> &legalizeRules() const { return legalize_; }
  const std::vector<rewrite::Rule> &fuseRules() const { return fuse_; }
  const std::vector<rewrite::Rule> &rules(rewrite::RulePhase phase) const {
    return phase == rewrite::RulePhase::Legalize ? legalize_ : fuse_;
  }
  /// The rules of one phase compiled into matchers, compiled once (adding
  /// rules invalidates it).
  Expected<const rewrite::CompiledRules *> compiled(rewrite::RulePhase phase) const;
  std::vector<Diagnostic> warnings; ///< warnings of the files loaded

private:
  void take(std::vector<rewrite::Rule> rules, const std::vector<std::string> &files);
  /// Rebuilds legalize_ and fuse_ from all_ (load order kept) when
  /// allowLossy changes; take() appends to them directly.
  void select();
  std::vector<rewrite::Rule> all_;             ///< every rule loaded, in load order
  std::vector<rewrite::Rule> legalize_, fuse_; ///< the rules that run, per phase
  bool allowLossy_ = false;
  mutable std::shared_ptr<const rewrite::CompiledRules> compiled_[2];
  std::vector<std::string> files_;
  std::vector<std::string> seen_; ///< rule identities (file:line:col/variant) already taken
};

struct FuseResult {
  rewrite::RewriteResult legalize; ///< the legalization pass
  rewrite::RewriteResult fuse;     ///< everything else
  /// Rewrites committed per rule name (both passes), rules that fired only.
  std::map<std::string, uint64_t> rulesFired;
  std::size_t nodesBefore = 0, nodesAfter = 0;
  double legalizeSeconds = 0, fuseSeconds = 0;

  const rewrite::RewriteResult &pass(rewrite::RulePhase phase) const {
    return phase == rewrite::RulePhase::Legalize ? legalize : fuse;
  }
  bool converged() const { return legalize.converged && fuse.converged; }
};

/// Warnings about a fusion run, one per phase that stopped before its
/// fixpoint (the rewrite or iteration limit): it names the rule that fired
/// most in that phase, at its source location. The usual cause is a rule
/// whose replacement its own pattern matches again, so it fires on its own
/// output until the limit; the graph is still correct (every rewrite
/// preserves meaning) but not fully fused, and the rewrites were wasted.
std::vector<Diagnostic> fuseWarnings(const FuseResult &result, const RuleSet &rules);

/// rewrite::explain for every phase's rules, each on the graph as that phase
/// sees it: a phase's rules are explained, then the phase runs on `graph`
/// (which is rewritten), so fusion rules are explained after legalization,
/// as fuse() would try them.
Expected<std::vector<rewrite::ExplainEntry>>
explainPhases(Graph &graph, const RuleSet &rules, const rewrite::ExplainOptions &options = {});

/// What each phase of `fuse` did, as rewrite::formatResult prints a pass: a
/// `phase NAME:` header and the pass's report per phase that has rules.
std::string formatFuseResult(const FuseResult &result, const RuleSet &rules);

/// Legalizes, then fuses, `graph` in place. Constants the rules make are
/// recorded in `fqns` (tied weights packed once).
Expected<FuseResult> fuse(Graph &graph, const RuleSet &rules, rewrite::FqnRegistry &fqns,
                          const rewrite::RewriteOptions &options = {});

/// The compiled rules of every phase that has rules, in phase order (the
/// passes fuse() runs).
Expected<std::vector<const rewrite::CompiledRules *>> phasePasses(const RuleSet &rules);

/// A coverage report listing the rules of every phase, in phase order.
Expected<rewrite::CoverageReport> emptyCoverage(const RuleSet &rules);

/// Fuses `graph` in place as fuse() does (every phase, to its fixpoint) and
/// adds it to `report`: a node erased by legalization or fusion counts as
/// fused by that rule, and the near misses are those of every phase's rules
/// on the fused graph.
Status addCoverage(rewrite::CoverageReport &report, const std::string &graphName, Graph &graph,
                   const RuleSet &rules, const rewrite::RewriteOptions &options = {});

/// Partitions for a target profile name (lavapipe, adreno, mali, host).
Expected<vk::PartitionReport> partition(const Graph &graph, const std::string &target,
                                        int deviceIndex = -1);

/// The numbers `graft compile` prints.
struct CompileSummary {
  std::string model, output, target;
  std::size_t nodesIn = 0, nodesOut = 0;
  std::map<std::string, uint64_t> rulesFired;
  std::size_t partitions = 0;
  std::size_t gpuNodes = 0; ///< in partitions (device kernels and host steps)
  std::size_t cpuNodes = 0;
  std::map<std::string, uint64_t> cpuReasons;
  /// Input model constants, each distinct one once: tied weights (one
  /// storage under two FQNs) count once. Counted from prototypes, no data read.
  uint64_t constantBytesIn = 0;
  /// The fused graph's constant pool: when a program is written, the bytes
  /// its constant pool stores for the fused graph (identical bytes once);
  /// otherwise counted like constantBytesIn.
  uint64_t constantBytesOut = 0;
  /// Theoretical minimum: every distinct input constant, int8 tensors that
  /// every consumer dequantizes from int4 (quant range within [-8, 7]) at 4
  /// bits per element, their zero points at 4 bits or, when all zero
  /// (symmetric), not at all (packed int4 + scales + the rest).
  uint64_t constantBytesMin = 0;
  uint64_t programBytes = 0; ///< size of the written file (0 when not written)
  std::vector<std::pair<std::string, double>> phaseSeconds; ///< in phase order
  /// What each pass of the pipeline reported (CompilePass statistics), in order.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, double>>>> passStats;

  std::string json() const; ///< one JSON object (keys in docs/cli.md)
  std::string text() const; ///< the short human summary
};

struct CompileOptions {
  std::string target = "lavapipe";
  int deviceIndex = -1;           ///< for target "host"
  bool defaultRules = true;       ///< include the shipped rules
  std::vector<std::string> rules; ///< user .pat files or directories
  /// Also run the rules tagged `lossy` (RuleSet::allowLossy).
  bool allowLossy = false;
  /// Where to write the program; empty: compile only.
  std::string output;
  /// A directory caching compiled SPIR-V across runs, keyed by the hash of
  /// each shader variant's generated source and the compiler (created when
  /// missing). Empty: GRAFT_VK_SHADER_CACHE when set, else none. Within one
  /// process every variant is compiled once whatever this says.
  std::string shaderCache;
  /// Also store the original graph (and its constants, deduplicated against
  /// the fused ones) so `graft run --check` needs no source model.
  bool embedReference = false;
  rewrite::RewriteOptions rewrite;
  /// Also build a rule-coverage report of the fusion pass
  /// (CompileResult::coverage; format it with serialize/CoverageReport.h).
  bool coverage = false;
  /// Progress of long phases: (phase, fraction done in [0, 1]).
  std::function<void(const std::string &, double)> progress;
  SourceManager *sources = nullptr; ///< receives the text of rule files / .gir
};

struct CompileResult {
  Program program; ///< fused graph, plan, provenance (constants in memory)
  std::optional<Pt2Provenance> pt2;
  FuseResult fuse;
  rewrite::FqnRegistry fqns;
  CompileSummary summary;
  std::optional<rewrite::CoverageReport> coverage; ///< with CompileOptions::coverage
  /// Warnings of the rule files and of the fusion run (fuseWarnings): the
  /// program is written, but the caller should show them.
  std::vector<Diagnostic> warnings;
};

/// One named pass of the compile pipeline, as `graft compile --print-pipeline`
/// lists it.
struct CompilePassInfo {
  std::string name;        ///< "load", "legalize", ... (the phase_seconds keys)
  std::string description; ///< what it does, one line
};

/// The passes compile() runs for `options`, in order: rules, target, load,
/// legalize, fuse, partition, codegen, and write when there is an output.
std::vector<CompilePassInfo> compilePipeline(const CompileOptions &options = {});

/// Runs compilePipeline(options) on the model: each pass is timed
/// (summary.phaseSeconds) and reports its statistics (summary.passStats).
Expected<CompileResult> compile(const std::string &modelPath, const CompileOptions &options = {});

/// Byte counts of a graph's constants, from prototypes and the graph (only
/// int4 zero points, 1/group_size of the weights, are read): `distinct` counts
/// each distinct constant once (same storage bytes, same initializer or same
/// deferred computation = one constant), `minimum` is the theoretical minimum
/// described at CompileSummary::constantBytesMin.
struct ConstantBytes {
  uint64_t distinct = 0;
  uint64_t minimum = 0;
};
ConstantBytes countConstantBytes(const Graph &graph);

} // namespace graft
