//===- Compiler.cpp - load / rules / fuse / partition / compile -----------===//
//
// The end-to-end pipeline behind `graft compile` (docs/api.md). Each phase
// is a function an export pipeline can also call on its own; compile() only
// sequences them, times them, and turns their results into a Program
// (serialize/ProgramFile.h) and a CompileSummary.
//
//===----------------------------------------------------------------------===//
#include "graft/Compiler.h"
#include "graft/support/JsonQuote.h"

#include "graft/dsl/Pat.h"
#include "graft/ir/Verifier.h"
#include "graft/ops/BoundArgs.h"
#include "graft/serialize/Load.h"
#include "graft/support/EmbeddedFile.h"
#include "graft/support/FileIO.h"
#include "graft/support/HumanBytes.h"
#include "graft/vulkan/GraphExecutor.h"
#include "graft/vulkan/ProgramShaders.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

namespace graft {

// patterns/*.pat, compiled in by graft_embed_files (compiler/CMakeLists.txt).
extern const EmbeddedFile kShippedRuleFiles[];
extern const std::size_t kShippedRuleFilesCount;

namespace fs = std::filesystem;

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A private directory removed on destruction: the shipped rules are written
/// there so their `import`s resolve exactly as in the source tree.
class TempDir {
public:
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  Status create() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec)
      base = "/tmp";
    std::string tmpl = (base / "graft-rules-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      return Diagnostic::error("cannot create a temporary directory for the shipped rules in " +
                               base.string());
    path_ = buf.data();
    return okStatus();
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// A statistic: counts and byte sizes print as integers, the rest as %.6g.
std::string jsonStat(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string jsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

template <class M> std::string jsonCounts(const M &m) {
  std::string out = "{";
  bool first = true;
  for (const auto &[k, v] : m) {
    out += (first ? "" : ", ") + jsonQuote(k) + ": " + std::to_string(v);
    first = false;
  }
  return out + "}";
}

/// Connected groups of CPU nodes (edges between two CPU nodes), by node index.
std::vector<ProgramSubgraph> cpuSubgraphs(const Graph &graph, const std::vector<bool> &onCpu) {
  std::unordered_map<const Value *, std::size_t> producer;
  std::vector<std::size_t> parent(onCpu.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](std::size_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  };
  std::size_t i = 0;
  for (const Node &n : graph.nodes()) {
    if (onCpu[i]) {
      n.forEachOperand([&](Value *v) {
        auto it = producer.find(v);
        if (it != producer.end() && onCpu[it->second])
          parent[find(i)] = find(it->second);
      });
    }
    for (Value *o : n.outputs())
      producer[o] = i;
    ++i;
  }
  std::map<std::size_t, std::size_t> groupOf;
  std::vector<ProgramSubgraph> out;
  for (std::size_t k = 0; k < onCpu.size(); ++k) {
    if (!onCpu[k])
      continue;
    auto [it, fresh] = groupOf.emplace(find(k), out.size());
    if (fresh)
      out.push_back(ProgramSubgraph{static_cast<int>(out.size()), {}});
    out[it->second].nodes.push_back(k);
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Expected<Model> load(const std::string &path, SourceManager *sources) {
  GRAFT_TRY(LoadedGraph g, loadGraph(path, sources));
  Model m;
  m.graph = std::move(g.graph);
  m.pt2 = std::move(g.pt2);
  m.path = path;
  return m;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

std::vector<std::string> RuleSet::shippedFiles() {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kShippedRuleFilesCount; ++i)
    if (endsWith(kShippedRuleFiles[i].name, ".pat"))
      out.push_back(kShippedRuleFiles[i].name);
  return out;
}

Expected<RuleSet> RuleSet::shipped(SourceManager *sources) {
  RuleSet set;
  if (shippedFiles().empty())
    return set;
  // Without imports, each file is parsed from memory under the name
  // "patterns/NAME.pat", so diagnostics and reports name it as the source tree
  // does. An `import` is resolved by the DSL through the file system, so then
  // every file is written to a private directory and loaded from there.
  bool imports = false;
  for (std::size_t i = 0; i < kShippedRuleFilesCount; ++i) {
    const EmbeddedFile &f = kShippedRuleFiles[i];
    std::string_view text(f.data, f.size);
    for (std::size_t at = text.find("import"); at != std::string_view::npos && !imports;
         at = text.find("import", at + 1)) {
      std::size_t bol = text.rfind('\n', at);
      std::string_view before = text.substr(bol == std::string_view::npos ? 0 : bol + 1,
                                            at - (bol == std::string_view::npos ? 0 : bol + 1));
      imports =
          endsWith(f.name, ".pat") && before.find_first_not_of(" \t") == std::string_view::npos;
    }
  }
  if (!imports) {
    for (std::size_t i = 0; i < kShippedRuleFilesCount; ++i) {
      const EmbeddedFile &f = kShippedRuleFiles[i];
      if (endsWith(f.name, ".pat"))
        GRAFT_CHECK_OK(set.addText(std::string_view(f.data, f.size),
                                   std::string("patterns/") + f.name, sources));
    }
    return set;
  }
  TempDir dir;
  GRAFT_CHECK_OK(dir.create());
  fs::path root = fs::path(dir.path()) / "patterns";
  std::error_code ec;
  fs::create_directories(root, ec);
  for (std::size_t i = 0; i < kShippedRuleFilesCount; ++i) {
    const EmbeddedFile &f = kShippedRuleFiles[i];
    if (!endsWith(f.name, ".pat"))
      continue;
    GRAFT_CHECK_OK(writeFileAtomic((root / f.name).string(), std::string_view(f.data, f.size)));
  }
  GRAFT_CHECK_OK(set.addPath(root.string(), sources));
  return set;
}

Expected<const rewrite::CompiledRules *> RuleSet::compiled(rewrite::RulePhase phase) const {
  auto &slot = compiled_[phase == rewrite::RulePhase::Legalize ? 0 : 1];
  if (!slot) {
    GRAFT_TRY(auto c, rewrite::CompiledRules::compile(rules(phase)));
    slot = std::make_shared<const rewrite::CompiledRules>(std::move(c));
  }
  return slot.get();
}

namespace {
bool isLossy(const rewrite::Rule &r) {
  return std::find(r.tags.begin(), r.tags.end(), "lossy") != r.tags.end();
}
} // namespace

void RuleSet::take(std::vector<rewrite::Rule> rules, const std::vector<std::string> &files) {
  compiled_[0].reset();
  compiled_[1].reset();
  for (std::size_t i = 0; i < rules.size(); ++i) {
    rewrite::Rule &r = rules[i];
    // A file imported by several loaded files contributes its rules once.
    std::string id = r.loc.begin.file + ":" + std::to_string(r.loc.begin.line) + ":" +
                     std::to_string(r.loc.begin.column) + "/" + std::to_string(r.variant);
    if (std::find(seen_.begin(), seen_.end(), id) != seen_.end())
      continue;
    seen_.push_back(id);
    if (allowLossy_ || !isLossy(r))
      (r.phase == rewrite::RulePhase::Legalize ? legalize_ : fuse_).push_back(r);
    all_.push_back(std::move(r));
  }
  for (const std::string &f : files)
    if (std::find(files_.begin(), files_.end(), f) == files_.end())
      files_.push_back(f);
}

void RuleSet::select() {
  compiled_[0].reset();
  compiled_[1].reset();
  legalize_.clear();
  fuse_.clear();
  for (const rewrite::Rule &r : all_)
    if (allowLossy_ || !isLossy(r))
      (r.phase == rewrite::RulePhase::Legalize ? legalize_ : fuse_).push_back(r);
}

void RuleSet::allowLossy(bool allow) {
  if (allow == allowLossy_)
    return;
  allowLossy_ = allow;
  select();
}

std::vector<const rewrite::Rule *> RuleSet::heldBack() const {
  std::vector<const rewrite::Rule *> out;
  if (!allowLossy_)
    for (const rewrite::Rule &r : all_)
      if (isLossy(r))
        out.push_back(&r);
  return out;
}

Expected<std::vector<std::string>> expandRulePaths(const std::vector<std::string> &paths) {
  std::vector<std::string> out;
  for (const std::string &path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const fs::directory_entry &e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".pat")
        found.push_back(e.path().string());
    if (ec)
      return Diagnostic::error("cannot list rule directory '" + path + "': " + ec.message());
    if (found.empty())
      return Diagnostic::error("rule directory '" + path + "' has no .pat files");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Status RuleSet::addPath(const std::string &path, SourceManager *sources) {
  GRAFT_TRY(std::vector<std::string> files, expandRulePaths({path}));
  for (const std::string &file : files) {
    GRAFT_TRY(dsl::RuleSet set, dsl::parsePatFile(file, sources));
    warnings.insert(warnings.end(), set.warnings.begin(), set.warnings.end());
    take(std::move(set.rules), set.files);
  }
  return okStatus();
}

Status RuleSet::addText(std::string_view text, const std::string &name, SourceManager *sources) {
  GRAFT_TRY(dsl::RuleSet set, dsl::parsePat(text, name, sources));
  warnings.insert(warnings.end(), set.warnings.begin(), set.warnings.end());
  take(std::move(set.rules), set.files);
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Fusion and partitioning
//===----------------------------------------------------------------------===//

namespace {

/// One phase of the rule set to its fixpoint (nothing to do without rules).
Expected<rewrite::RewriteResult> runPass(Graph &graph, const RuleSet &rules,
                                         rewrite::RulePhase phase, rewrite::FqnRegistry &fqns,
                                         const rewrite::RewriteOptions &options) {
  if (rules.rules(phase).empty()) {
    rewrite::RewriteResult r;
    r.converged = true;
    r.stopReason = "fixpoint";
    r.nodesBefore = r.nodesAfter = graph.numNodes();
    return r;
  }
  GRAFT_TRY(const rewrite::CompiledRules *compiled, rules.compiled(phase));
  return rewrite::applyRules(graph, *compiled, fqns, options);
}

void countFired(const rewrite::RewriteResult &r, std::map<std::string, uint64_t> &out) {
  for (const rewrite::RuleStats &s : r.stats)
    if (s.applied)
      out[s.rule] += s.applied;
}

} // namespace

Expected<FuseResult> fuse(Graph &graph, const RuleSet &rules, rewrite::FqnRegistry &fqns,
                          const rewrite::RewriteOptions &options) {
  FuseResult out;
  out.nodesBefore = graph.numNodes();
  auto t0 = std::chrono::steady_clock::now();
  GRAFT_TRY(out.legalize, runPass(graph, rules, rewrite::RulePhase::Legalize, fqns, options));
  out.legalizeSeconds = secondsSince(t0);
  t0 = std::chrono::steady_clock::now();
  GRAFT_TRY(out.fuse, runPass(graph, rules, rewrite::RulePhase::Fuse, fqns, options));
  out.fuseSeconds = secondsSince(t0);
  countFired(out.legalize, out.rulesFired);
  countFired(out.fuse, out.rulesFired);
  out.nodesAfter = graph.numNodes();
  return out;
}

std::vector<Diagnostic> fuseWarnings(const FuseResult &result, const RuleSet &rules) {
  std::vector<Diagnostic> out;
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    const rewrite::RewriteResult &r = result.pass(phase);
    if (r.converged)
      continue;
    // r.stats[i] is the phase's compiled rule i (rewrite::applyRules).
    std::optional<std::size_t> top;
    for (std::size_t i = 0; i < r.stats.size(); ++i)
      if (r.stats[i].applied && (!top || r.stats[i].applied > r.stats[*top].applied))
        top = i;
    std::string message = std::string("the ") + rewrite::name(phase) + " pass stopped at its " +
                          r.stopReason + " after " + std::to_string(r.rewrites) +
                          " rewrites without reaching a fixpoint";
    if (!top) {
      out.push_back(Diagnostic::warning(message));
      continue;
    }
    const rewrite::RuleStats &s = r.stats[*top];
    message += "; rule '" + s.rule + (s.variant ? "#" + std::to_string(s.variant) : "") +
               "' fired " + std::to_string(s.applied) +
               " times, the most: if its replacement matches its own pattern, it fires again on "
               "its own output until the limit";
    auto compiled = rules.compiled(phase); // compiled already: the phase ran
    const rewrite::Rule *rule = compiled ? &(*compiled)->rule(*top) : nullptr;
    out.push_back(rule && rule->loc.begin.line ? Diagnostic::warning(rule->loc, message)
                                               : Diagnostic::warning(message));
  }
  return out;
}

Expected<std::vector<rewrite::ExplainEntry>> explainPhases(Graph &graph, const RuleSet &rules,
                                                           const rewrite::ExplainOptions &options) {
  std::vector<rewrite::ExplainEntry> out;
  rewrite::FqnRegistry fqns;
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    if (rules.rules(phase).empty())
      continue;
    GRAFT_TRY(const rewrite::CompiledRules *compiled, rules.compiled(phase));
    std::vector<rewrite::ExplainEntry> entries = rewrite::explain(graph, *compiled, options);
    out.insert(out.end(), std::make_move_iterator(entries.begin()),
               std::make_move_iterator(entries.end()));
    if (phase != rewrite::kRulePhases[std::size(rewrite::kRulePhases) - 1]) {
      GRAFT_TRY(auto r, rewrite::applyRules(graph, *compiled, fqns, {}));
      (void)r;
    }
  }
  return out;
}

std::string formatFuseResult(const FuseResult &result, const RuleSet &rules) {
  std::string out;
  for (rewrite::RulePhase phase : rewrite::kRulePhases) {
    if (rules.rules(phase).empty())
      continue;
    auto compiled = rules.compiled(phase);
    if (!compiled)
      continue; // fuse() compiled them already; nothing ran otherwise
    out += std::string("phase ") + rewrite::name(phase) + ":\n";
    out += rewrite::formatResult(result.pass(phase), **compiled);
  }
  std::vector<const rewrite::Rule *> held = rules.heldBack();
  if (!held.empty()) {
    out += "not run (lossy; --allow-lossy runs them):";
    for (const rewrite::Rule *r : held)
      out += " " + r->name + (r->variant ? "#" + std::to_string(r->variant) : "");
    out += "\n";
  }
  return out;
}

Expected<std::vector<const rewrite::CompiledRules *>> phasePasses(const RuleSet &rules) {
  std::vector<const rewrite::CompiledRules *> out;
  for (rewrite::RulePhase phase : rewrite::kRulePhases)
    if (!rules.rules(phase).empty()) {
      GRAFT_TRY(const rewrite::CompiledRules *compiled, rules.compiled(phase));
      out.push_back(compiled);
    }
  return out;
}

Expected<rewrite::CoverageReport> emptyCoverage(const RuleSet &rules) {
  GRAFT_TRY(auto passes, phasePasses(rules));
  return rewrite::emptyCoverage(passes);
}

Status addCoverage(rewrite::CoverageReport &report, const std::string &graphName, Graph &graph,
                   const RuleSet &rules, const rewrite::RewriteOptions &options) {
  GRAFT_TRY(auto passes, phasePasses(rules));
  rewrite::CoverageSnapshot before = rewrite::snapshotForCoverage(graph, passes);
  rewrite::RewriteOptions withLog = options;
  withLog.recordLog = true;
  rewrite::FqnRegistry fqns;
  // Reserved up front: each CoveragePass points at its result.
  std::vector<rewrite::RewriteResult> results;
  results.reserve(passes.size());
  std::vector<rewrite::CoveragePass> ran;
  for (const rewrite::CompiledRules *compiled : passes) {
    GRAFT_TRY(rewrite::RewriteResult r, rewrite::applyRules(graph, *compiled, fqns, withLog));
    results.push_back(std::move(r));
    ran.push_back({compiled, &results.back()});
  }
  rewrite::addCoverage(report, graphName, before, graph, ran);
  return okStatus();
}

Expected<vk::PartitionReport> partition(const Graph &graph, const std::string &target,
                                        int deviceIndex) {
  GRAFT_TRY(vk::TargetProfile profile, vk::findTarget(target, deviceIndex));
  return vk::partitionGraph(graph, profile);
}

//===----------------------------------------------------------------------===//
// Constant bytes
//===----------------------------------------------------------------------===//

namespace {

/// How the minimum counts an int8 constant.
enum class Int4Role {
  None,      ///< counted as it is
  Data,      ///< int4 values in int8: 4 bits per element once packed
  ZeroPoint, ///< an int4 quantization's zero point: 4 bits, or nothing if all zero
};

/// Decided from the graph, not by scanning GBs of weights: every use of `v`
/// is a quantize/dequantize op whose quant range lies within [-8, 7] and reads
/// `v` as its quantized input (torchao's unpacked int4 qdata in int8) or as
/// its zero point.
Int4Role int4Role(const Value *v) {
  if (v->proto().dtype != DType::I8 || !v->hasUses())
    return Int4Role::None;
  bool data = false, zeroPoint = false;
  for (const Node *u : v->users()) {
    if (!u->schema())
      return Int4Role::None;
    auto bound = BoundArgs::bind(*u);
    if (!bound.ok())
      return Int4Role::None;
    const Argument *lo = bound->find("quant_min");
    const Argument *hi = bound->find("quant_max");
    if (!lo || !hi || !lo->isInt() || !hi->isInt() || lo->integer() < -8 || hi->integer() > 7)
      return Int4Role::None;
    auto is = [&](const Argument *a) { return a && a->isValue() && a->value() == v; };
    if (is(&bound->at(0)))
      data = true;
    else if (is(bound->find("zero_point")) || is(bound->find("zero_points")))
      zeroPoint = true;
    else
      return Int4Role::None; // e.g. read as a scale
  }
  return data ? Int4Role::Data : zeroPoint ? Int4Role::ZeroPoint : Int4Role::None;
}

/// Whether a constant's data is all zero (a symmetric quantization's zero
/// point, which a kernel without zero points does not need). Zero points are
/// 1/group_size of the weights, so reading them is cheap; mapped pages are
/// released afterwards.
bool allZero(const GraphInput &in) {
  auto t = in.load();
  if (!t.ok() || !t->defined())
    return false;
  Tensor c = t->contiguous();
  const uint8_t *p = c.rawData();
  bool zero = std::all_of(p, p + c.nbytes(), [](uint8_t b) { return b == 0; });
  t->releasePages();
  return zero;
}

/// Identifies a constant's data without reading it: constants that view the
/// same bytes of the same storage (a tied embedding / lm_head read from a
/// .pt2), share one generator or deferred computation, or come from equal
/// random()/full() initializers (a synthesized tied weight) hold the same
/// data and are counted once.
std::string dataIdentity(const GraphInput &in) {
  const TensorProto &p = in.value->proto();
  if (const Tensor *t = in.resident())
    return "storage:" + std::to_string(reinterpret_cast<uintptr_t>(t->storage().get())) + ":" +
           std::to_string(t->offset()) + ":" + t->proto().str();
  if (const auto *r = std::get_if<RandomInit>(&*in.init))
    return "random:" + std::to_string(r->seed) + ":" + std::to_string(r->min) + ":" +
           std::to_string(r->max) + ":" + p.str();
  if (const auto *d = std::get_if<DeferredInit>(&*in.init))
    return "deferred:" + std::to_string(reinterpret_cast<uintptr_t>(d->source.get()));
  return "input:" + std::to_string(reinterpret_cast<uintptr_t>(&in)); // full(), file(): its own
}

} // namespace

ConstantBytes countConstantBytes(const Graph &graph) {
  ConstantBytes out;
  std::set<std::string> seen;
  for (const GraphInput &in : graph.inputs()) {
    if (!in.isConstant() || !in.hasData())
      continue;
    // As the program file does: a constant nothing reads costs nothing.
    bool read = in.value->hasUses() || in.value->isGraphOutput();
    if (!read)
      continue;
    Dim numel = in.value->proto().numel();
    if (!numel.isConstant() || !seen.insert(dataIdentity(in)).second)
      continue;
    uint64_t n = static_cast<uint64_t>(numel.constant());
    uint64_t size = n * elementSize(in.value->proto().dtype);
    out.distinct += size;
    switch (int4Role(in.value)) {
    case Int4Role::Data:
      out.minimum += (n + 1) / 2;
      break;
    case Int4Role::ZeroPoint:
      out.minimum += allZero(in) ? 0 : (n + 1) / 2;
      break;
    case Int4Role::None:
      out.minimum += size;
      break;
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Summary
//===----------------------------------------------------------------------===//

std::string CompileSummary::json() const {
  std::string phases = "{";
  double total = 0;
  for (std::size_t i = 0; i < phaseSeconds.size(); ++i) {
    phases += (i ? ", " : "") + jsonQuote(phaseSeconds[i].first) + ": " +
              jsonNumber(phaseSeconds[i].second);
    total += phaseSeconds[i].second;
  }
  phases += "}";
  std::string stats = "{";
  for (std::size_t i = 0; i < passStats.size(); ++i) {
    stats += (i ? ", " : "") + jsonQuote(passStats[i].first) + ": {";
    for (std::size_t k = 0; k < passStats[i].second.size(); ++k)
      stats += (k ? ", " : "") + jsonQuote(passStats[i].second[k].first) + ": " +
               jsonStat(passStats[i].second[k].second);
    stats += "}";
  }
  stats += "}";
  uint64_t fired = 0;
  for (const auto &[rule, n] : rulesFired)
    fired += n;
  return "{\"model\": " + jsonQuote(model) + ", \"output\": " + jsonQuote(output) +
         ", \"target\": " + jsonQuote(target) + ", \"nodes_in\": " + std::to_string(nodesIn) +
         ", \"nodes_out\": " + std::to_string(nodesOut) +
         ", \"rewrites\": " + std::to_string(fired) +
         ", \"rules_fired\": " + jsonCounts(rulesFired) +
         ", \"partitions\": " + std::to_string(partitions) +
         ", \"gpu_nodes\": " + std::to_string(gpuNodes) +
         ", \"cpu_nodes\": " + std::to_string(cpuNodes) +
         ", \"cpu_reasons\": " + jsonCounts(cpuReasons) +
         ", \"constant_bytes_in\": " + std::to_string(constantBytesIn) +
         ", \"constant_bytes_out\": " + std::to_string(constantBytesOut) +
         ", \"constant_bytes_min\": " + std::to_string(constantBytesMin) +
         ", \"program_bytes\": " + std::to_string(programBytes) + ", \"phase_seconds\": " + phases +
         ", \"total_seconds\": " + jsonNumber(total) + ", \"pass_stats\": " + stats + "}";
}

std::string CompileSummary::text() const {
  std::string s =
      "compiled " + model + (output.empty() ? "" : " -> " + output) + " for " + target + "\n";
  s += "  nodes:      " + std::to_string(nodesIn) + " in, " + std::to_string(nodesOut) + " out\n";
  uint64_t fired = 0;
  for (const auto &[rule, n] : rulesFired)
    fired += n;
  s += "  rewrites:   " + std::to_string(fired);
  if (!rulesFired.empty()) {
    s += " (";
    bool first = true;
    for (const auto &[rule, n] : rulesFired) {
      s += (first ? "" : ", ") + rule + " x" + std::to_string(n);
      first = false;
    }
    s += ")";
  }
  s += "\n  partitions: " + std::to_string(partitions) + "; nodes on the GPU " +
       std::to_string(gpuNodes) + ", on the CPU " + std::to_string(cpuNodes) + "\n";
  for (const auto &[reason, n] : cpuReasons)
    s += "    cpu x" + std::to_string(n) + ": " + reason + "\n";
  char ratio[32] = "";
  if (constantBytesMin)
    std::snprintf(ratio, sizeof(ratio), " (%.2fx the minimum)",
                  double(constantBytesOut) / double(constantBytesMin));
  s += "  constants:  " + humanBytes(constantBytesIn, 2) + " in, " +
       humanBytes(constantBytesOut, 2) + " out, minimum " + humanBytes(constantBytesMin, 2) +
       ratio + "\n";
  if (programBytes)
    s += "  program:    " + humanBytes(programBytes, 2) + "\n";
  s += "  time:      ";
  double total = 0;
  for (const auto &[phase, t] : phaseSeconds) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %s %.3fs", phase.c_str(), t);
    s += buf;
    total += t;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "; total %.3fs\n", total);
  return s + buf;
}

//===----------------------------------------------------------------------===//
// compile
//===----------------------------------------------------------------------===//

namespace {

/// What the passes share: the inputs, what earlier passes produced, and the
/// statistics the running pass reports.
struct CompileState {
  const std::string &modelPath;
  const CompileOptions &options;
  CompileResult &result;
  RuleSet rules;
  vk::TargetProfile profile;
  Model model;
  rewrite::RewriteOptions ropts;
  vk::PartitionReport report;
  /// With CompileOptions::coverage: the graph before legalization.
  std::optional<rewrite::CoverageSnapshot> coverageBefore;
  std::vector<std::pair<std::string, double>> stats; ///< of the running pass

  CompileSummary &sum() { return result.summary; }
  Graph &graph() { return *model.graph; }
  void stat(std::string name, double value) { stats.emplace_back(std::move(name), value); }
};

/// A named unit of the pipeline: its name (the phase_seconds key), a one-line
/// description, and what it runs.
struct CompilePass {
  const char *name;
  const char *description;
  Status (*run)(CompileState &);
};

// Rules first: a bad rule file fails before any model is read.
Status rulesPass(CompileState &st) {
  if (st.options.defaultRules) {
    GRAFT_TRY(st.rules, RuleSet::shipped(st.options.sources));
  }
  for (const std::string &path : st.options.rules)
    GRAFT_CHECK_OK(st.rules.addPath(path, st.options.sources));
  st.rules.allowLossy(st.options.allowLossy);
  for (rewrite::RulePhase phase : rewrite::kRulePhases)
    if (!st.rules.rules(phase).empty()) {
      GRAFT_TRY(auto compiled, st.rules.compiled(phase));
      (void)compiled;
    }
  st.stat("legalize_rules", double(st.rules.legalizeRules().size()));
  st.stat("fuse_rules", double(st.rules.fuseRules().size()));
  return okStatus();
}

// The target too: an unknown profile is a user error before the work.
Status targetPass(CompileState &st) {
  GRAFT_TRY(st.profile, vk::findTarget(st.options.target, st.options.deviceIndex));
  return okStatus();
}

Status loadPass(CompileState &st) {
  GRAFT_TRY(st.model, load(st.modelPath, st.options.sources));
  // Verifying and counting the constant bytes (which reads the int4 zero
  // points) only read the graph: the count runs on a second thread meanwhile.
  const Graph &graph = *st.model.graph;
  std::future<ConstantBytes> counted =
      std::async(std::launch::async, [&graph] { return countConstantBytes(graph); });
  if (auto diags = verify(graph); !diags.empty())
    return Failure(std::move(diags));
  if (st.options.embedReference) {
    GRAFT_TRY(Model ref, load(st.modelPath, st.options.sources));
    st.result.program.reference = std::move(ref.graph);
  }
  std::error_code ec;
  st.result.program.sourceBytes = fs::file_size(st.modelPath, ec);
  ConstantBytes in = counted.get();
  st.sum().constantBytesIn = in.distinct;
  st.sum().constantBytesMin = in.minimum;
  st.sum().nodesIn = st.model.graph->numNodes();
  st.result.pt2 = std::move(st.model.pt2);
  st.stat("nodes", double(st.sum().nodesIn));
  st.stat("inputs", double(st.model.graph->inputs().size()));
  // Repacked weights are computed when the program is written, one at a
  // time (see writeProgram): fusing reads no weight data.
  st.ropts = st.options.rewrite;
  st.ropts.deferConstantData = true;
  return okStatus();
}

Status legalizePass(CompileState &st) {
  FuseResult &f = st.result.fuse;
  rewrite::RewriteOptions ropts = st.ropts;
  if (st.options.coverage) {
    // The coverage report covers both phases: it needs the graph before the
    // first and the log of each.
    GRAFT_TRY(auto passes, phasePasses(st.rules));
    st.coverageBefore = rewrite::snapshotForCoverage(st.graph(), passes);
    ropts.recordLog = true;
  }
  GRAFT_TRY(f.legalize,
            runPass(st.graph(), st.rules, rewrite::RulePhase::Legalize, st.result.fqns, ropts));
  countFired(f.legalize, f.rulesFired);
  st.stat("rewrites", double(f.legalize.rewrites));
  return okStatus();
}

Status fusePass(CompileState &st) {
  FuseResult &f = st.result.fuse;
  Graph &graph = st.graph();
  f.nodesBefore = st.sum().nodesIn;
  rewrite::RewriteOptions ropts = st.ropts;
  ropts.recordLog = ropts.recordLog || st.options.coverage;
  GRAFT_TRY(f.fuse, runPass(graph, st.rules, rewrite::RulePhase::Fuse, st.result.fqns, ropts));
  if (st.coverageBefore) {
    std::vector<rewrite::CoveragePass> ran;
    for (rewrite::RulePhase phase : rewrite::kRulePhases)
      if (!st.rules.rules(phase).empty()) {
        GRAFT_TRY(const rewrite::CompiledRules *compiled, st.rules.compiled(phase));
        ran.push_back({compiled, &f.pass(phase)});
      }
    GRAFT_TRY(st.result.coverage, emptyCoverage(st.rules));
    rewrite::addCoverage(*st.result.coverage, st.modelPath, *st.coverageBefore, graph, ran);
  }
  countFired(f.fuse, f.rulesFired);
  f.nodesAfter = graph.numNodes();
  if (auto diags = verify(graph); !diags.empty()) {
    std::vector<Diagnostic> out;
    for (Diagnostic &d : diags)
      out.push_back(Diagnostic::internal("the fused graph does not verify: " + d.message));
    return Failure(std::move(out));
  }
  st.result.warnings = st.rules.warnings;
  for (Diagnostic &w : fuseWarnings(f, st.rules))
    st.result.warnings.push_back(std::move(w));
  st.sum().rulesFired = f.rulesFired;
  st.sum().nodesOut = graph.numNodes();
  st.stat("rewrites", double(f.fuse.rewrites));
  st.stat("nodes", double(graph.numNodes()));
  return okStatus();
}

Status partitionPass(CompileState &st) {
  GRAFT_TRY(st.report, vk::partitionGraph(st.graph(), st.profile));
  st.stat("partitions", double(st.report.partitions.size()));
  st.stat("cpu_nodes", double(st.report.cpuNodes.size()));
  return okStatus();
}

/// The shader library codegen compiles with: one per process, so every
/// variant is compiled once however many models the process compiles.
Expected<vk::ShaderLibrary *> sharedShaderLibrary() {
  static std::mutex mutex;
  static std::unique_ptr<vk::ShaderLibrary> library;
  std::lock_guard<std::mutex> lock(mutex);
  if (!library) {
    GRAFT_TRY(library, vk::ShaderLibrary::builtin());
  }
  return library.get();
}

/// The plan per node (device kernel, host step or CPU), the partitions'
/// node lists, the CPU subgraphs and the constants' provenance; then the
/// SPIR-V of every shader variant the device nodes may dispatch.
Status codegenPass(CompileState &st) {
  Graph &graph = st.graph();
  CompileSummary &sum = st.sum();
  Program &prog = st.result.program;
  std::unordered_map<const Node *, std::pair<int, bool>> inPartition;
  for (const vk::Partition &p : st.report.partitions)
    for (const vk::PartitionNode &pn : p.nodes)
      inPartition[pn.node] = {p.id, pn.host};
  std::unordered_map<const Node *, std::string> cpuReason;
  for (const vk::CpuNode &c : st.report.cpuNodes) {
    cpuReason[c.node] = c.reason;
    ++sum.cpuReasons[c.reason];
  }
  std::unordered_map<const Node *, std::size_t> index;
  std::vector<bool> onCpu;
  for (const Node &n : graph.nodes()) {
    index[&n] = onCpu.size();
    ProgramNodePlan np;
    np.node = n.numOutputs() ? n.output(0)->name() : std::string();
    np.target = n.target();
    vk::NodePlan kernelPlan = vk::planNode(n, st.profile.device);
    auto it = inPartition.find(&n);
    if (it != inPartition.end()) {
      np.partition = it->second.first;
      np.placement = it->second.second ? "host" : "device";
      np.kernel = kernelPlan.kernel;
    } else {
      np.placement = "cpu";
      np.kernel = "interpreter";
      auto r = cpuReason.find(&n);
      np.reason = r != cpuReason.end() ? r->second : kernelPlan.reason;
    }
    onCpu.push_back(np.placement == "cpu");
    prog.plan.push_back(std::move(np));
  }
  for (const vk::Partition &p : st.report.partitions) {
    ProgramSubgraph sub{p.id, {}};
    for (const vk::PartitionNode &pn : p.nodes)
      sub.nodes.push_back(index.at(pn.node));
    prog.partitions.push_back(std::move(sub));
  }
  prog.cpuSubgraphs = cpuSubgraphs(graph, onCpu);
  for (const rewrite::ProvenanceEntry &e : st.result.fqns.entries()) {
    const GraphInput *in = graph.findConstant(e.fqn);
    if (!in || !in->value->hasUses())
      continue; // made by a rewrite that a later rewrite superseded
    ProgramProvenance pp;
    pp.fqn = e.fqn;
    pp.transform = e.request.transform;
    pp.sources.assign(e.request.sources.begin(), e.request.sources.end());
    pp.args = e.request.args;
    pp.rule = e.rule();
    pp.requests = e.requests;
    pp.origins = st.result.fqns.originsOf(e.fqn);
    prog.provenance.push_back(std::move(pp));
  }
  sum.partitions = st.report.partitions.size();
  sum.cpuNodes = st.report.cpuNodes.size();
  sum.gpuNodes = graph.numNodes() - sum.cpuNodes;
  // With a program to write, the writer reports what its pool stores.
  if (st.options.output.empty())
    sum.constantBytesOut = countConstantBytes(graph).distinct;
  prog.graph = std::move(st.model.graph);
  prog.target = st.profile.name;
  prog.sourcePath = st.modelPath;
  st.stat("planned_nodes", double(prog.plan.size()));
  st.stat("provenance_entries", double(prog.provenance.size()));

  GRAFT_TRY(vk::ShaderLibrary * shaders, sharedShaderLibrary());
  if (!st.options.shaderCache.empty())
    shaders->setDiskCache(st.options.shaderCache);
  else
    shaders->setDiskCache(std::nullopt);
  GRAFT_TRY(vk::ShaderCodegenStats sh, vk::compileProgramShaders(prog, *shaders));
  st.stat("shader_templates", double(sh.templates));
  st.stat("shader_variants", double(sh.variants));
  st.stat("shaders_compiled", double(sh.compiled));
  st.stat("shader_cache_hits", double(sh.cacheHits));
  st.stat("spirv_bytes", double(sh.spirvBytes));
  return okStatus();
}

Status writePass(CompileState &st) {
  ProgramWriteOptions w;
  if (st.options.progress)
    w.progress = [&](double f) { st.options.progress("write", f); };
  w.summaryJson = [&](const ProgramStats &stats) {
    st.sum().constantBytesOut = stats.graphBlobBytes; // what the pool really stores
    return st.sum().json();
  };
  GRAFT_TRY(ProgramStats stats, writeProgram(st.result.program, st.options.output, w));
  st.sum().programBytes = stats.fileBytes;
  st.stat("bytes", double(stats.fileBytes));
  return okStatus();
}

/// The pipeline: the one list compile() runs and --print-pipeline prints.
std::vector<CompilePass> passesFor(const CompileOptions &options) {
  std::vector<CompilePass> passes = {
      {"rules", "load the rule set (the shipped rules and --rules files), compile it per phase",
       rulesPass},
      {"target", "resolve the target profile (device limits and op support)", targetPass},
      {"load", "read the model (.pt2 or .gir), verify it, count its constants", loadPass},
      {"legalize", "run the `phase legalize` rules to their fixpoint", legalizePass},
      {"fuse", "run the fusion rules to their fixpoint, verify the fused graph", fusePass},
      {"partition", "place nodes: convex Vulkan partitions, host steps, CPU nodes with reasons",
       partitionPass},
      {"codegen",
       "plan every node (kernel, host step or CPU), record provenance, compile the SPIR-V of "
       "every shader variant the device nodes may dispatch",
       codegenPass},
  };
  if (!options.output.empty())
    passes.push_back({"write",
                      "write the program file (repacked constants computed one at a time), "
                      "atomically",
                      writePass});
  return passes;
}

} // namespace

std::vector<CompilePassInfo> compilePipeline(const CompileOptions &options) {
  std::vector<CompilePassInfo> out;
  for (const CompilePass &p : passesFor(options))
    out.push_back({p.name, p.description});
  return out;
}

Expected<CompileResult> compile(const std::string &modelPath, const CompileOptions &options) {
  CompileResult result;
  CompileSummary &sum = result.summary;
  sum.model = modelPath;
  sum.output = options.output;
  sum.target = options.target;
  CompileState st{modelPath, options, result, {}, {}, {}, {}, {}, {}, {}};
  for (const CompilePass &pass : passesFor(options)) {
    if (options.progress)
      options.progress(pass.name, 0.0);
    st.stats.clear();
    auto t0 = std::chrono::steady_clock::now();
    Status s = pass.run(st);
    sum.phaseSeconds.emplace_back(pass.name, secondsSince(t0));
    if (!s)
      return s.takeFailure();
    sum.passStats.emplace_back(pass.name, std::move(st.stats));
    if (options.progress)
      options.progress(pass.name, 1.0);
  }
  if (!result.program.graph) {
    return Diagnostic::internal("the compile pipeline ended without a program graph");
  }
  result.program.summaryJson = sum.json();
  return result;
}

} // namespace graft
