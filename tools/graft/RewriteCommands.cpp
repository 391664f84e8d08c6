//===- RewriteCommands.cpp - graft fuse / explain / verify-rules ----------===//
//
// The rewrite engine on the command line (docs/rewrite-engine.md):
//   graft fuse IN -o OUT [--rules FILES] [--json] [--verify-each]
//   graft explain GRAPH [--rules FILES] [--rule NAME] [--node NAME]
//   graft verify-rules [FILES] [--instances N]
// Rules are one graft::RuleSet (the shipped library without FILES), run
// phase by phase as graft compile runs them; graphs are text IR or .pt2
// (serialize/Load.h).
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/Compiler.h"
#include "graft/dsl/Pat.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/rewrite/VerifyRules.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

namespace graft::cli {

namespace {

using rewrite::CompiledRules;

std::optional<uint64_t> parseCount(const Args &args, const std::string &flag, uint64_t def,
                                   const std::string &cmd, int &status) {
  auto v = args.get(flag);
  if (!v)
    return def;
  try {
    std::size_t used = 0;
    long long n = std::stoll(*v, &used);
    if (used == v->size() && n >= 0)
      return static_cast<uint64_t>(n);
  } catch (...) {
  }
  std::cerr << "graft " << cmd << ": error: --" << flag << " expects a non-negative integer, got '"
            << *v << "'\n";
  status = kUserError;
  return std::nullopt;
}

std::string locText(const SourceRange &r) {
  if (!r.begin.valid())
    return "";
  return r.begin.file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

nlohmann::ordered_json statsJson(const rewrite::RuleStats &s) {
  nlohmann::ordered_json j;
  j["rule"] = s.rule;
  j["variant"] = s.variant;
  j["tried"] = s.tried;
  j["matched"] = s.matched;
  j["applied"] = s.applied;
  j["rejected"] = s.rejected;
  j["failures"] = nlohmann::ordered_json::array();
  for (const auto &[why, n] : s.failures)
    j["failures"].push_back({{"check", why}, {"count", n}});
  j["rejections"] = nlohmann::ordered_json::array();
  for (const auto &[why, n] : s.rejections)
    j["rejections"].push_back({{"reason", why}, {"count", n}});
  return j;
}

} // namespace

Command makeFuseCommand() {
  Command c;
  c.name = "fuse";
  c.usage = "graft fuse IN [--rules FILES] [-o OUT] [--json] [--verify-each] [--rule NAME]... "
            "[--max-iterations N] [--max-rewrites N] [--top-down] [--data-file BIN] "
            "[--provenance FILE]";
  c.summary = "Apply .pat fusion rules to a graph and print what fired.";
  c.details =
      "Runs the rules phase by phase (`phase legalize` files first, then the fusions),\n"
      "each to a fixpoint (highest benefit first at each node, users before producers),\n"
      "exactly as `graft compile` does; without --rules, the shipped library. Writes the\n"
      "rewritten graph to OUT (text IR, or a .pt2 archive when OUT\n"
      "ends in .pt2; stdout without -o). Prints each rewrite, per-rule statistics (tried,\n"
      "matched, applied, refused, and the deepest failing check of unmatched candidates)\n"
      "and whether the run converged; --json prints the same as one object, with the FQN\n"
      "registry's provenance of every constant the rules made. New constants with data are\n"
      "written to --data-file (default: OUT with extension .bin) when too large to inline.\n"
      "--verify-each re-verifies the graph after every rewrite. Exit status 1 if the graph\n"
      "or rules are invalid, or --verify-each finds a broken graph.";
  c.flags = {{"rules", true,
              "rule files or directories (*.pat), repeatable or comma-separated (default: the "
              "shipped rules)",
              "FILES"},
             allowLossyFlag(),
             {"o", true, "write the rewritten graph to OUT", "OUT"},
             {"json", false, "print the report as JSON"},
             {"verify-each", false, "verify the graph after every rewrite"},
             {"rule", true, "only run rules with this name (repeatable)", "NAME"},
             {"max-iterations", true, "sweeps of the graph (default 10)", "N"},
             {"max-rewrites", true, "stop after N rewrites (default: automatic)", "N"},
             {"top-down", false, "visit producers before users"},
             {"data-file", true, "sidecar file for large new constants", "BIN"},
             {"provenance", true, "also write the provenance JSON to FILE", "FILE"}};
  c.run = [](const Args &args) {
    if (args.positional.size() != 1) {
      std::cerr << "graft fuse: error: expected exactly one input graph\n";
      return int(kUserError);
    }
    int status = kOk;
    rewrite::RewriteOptions options;
    auto iters = parseCount(args, "max-iterations", 10, "fuse", status);
    auto limit = parseCount(args, "max-rewrites", 0, "fuse", status);
    if (!iters || !limit)
      return status;
    options.maxIterations = static_cast<unsigned>(*iters);
    options.maxRewrites = *limit;
    options.verifyEach = args.has("verify-each");
    options.topDown = args.has("top-down");
    options.onlyRules = args.all("rule");
    SourceManager sources;
    auto rules = loadRuleSet(args.all("rules"), "fuse", sources, status, args.has("allow-lossy"));
    if (!rules)
      return status;
    const std::string &path = args.positional[0];
    auto loaded = loadGraph(path, &sources);
    if (!loaded)
      return reportFailure(loaded.diags(), &sources);
    Graph &graph = *loaded->graph;
    // A .pt2 written back as a .pt2: repacked weights are computed while the
    // archive is written, one at a time, instead of all held in memory.
    auto outPath = args.get("o");
    options.deferConstantData = loaded->pt2 && outPath && outPath->size() > 4 &&
                                outPath->compare(outPath->size() - 4, 4, ".pt2") == 0;
    rewrite::FqnRegistry fqns;
    auto result = fuse(graph, *rules, fqns, options);
    if (!result)
      return reportFailure(result.diags(), &sources);
    for (const Diagnostic &w : fuseWarnings(*result, *rules))
      std::cerr << render(w, &sources);

    // The rewritten graph.
    auto out = args.get("o");
    if (out && out->size() > 4 && out->compare(out->size() - 4, 4, ".pt2") == 0) {
      Pt2WriteOptions w;
      if (loaded->pt2)
        w.provenance = &*loaded->pt2;
      Status s = writePt2(graph, *out, w);
      if (!s)
        return reportFailure(s.diags());
    } else {
      if (loaded->pt2) {
        std::string ref = path;
        if (out) {
          std::error_code ec;
          auto dir = std::filesystem::absolute(*out, ec).parent_path();
          auto rel = std::filesystem::relative(std::filesystem::absolute(path, ec), dir, ec);
          if (!ec && !rel.empty())
            ref = rel.string();
        }
        referenceArchiveWeights(graph, *loaded->pt2, ref);
      }
      PrintOptions po;
      if (auto df = args.get("data-file"))
        po.dataFile = *df;
      else if (out)
        po.dataFile = std::filesystem::path(*out).replace_extension(".bin").string();
      if (out)
        po.outputDir = outputDirOf(*out);
      else
        po.maxInlineElements = INT64_MAX; // stdout: no sidecar, print values inline
      auto text = printGraph(graph, po);
      if (!text)
        return reportFailure(text.diags());
      if (out) {
        Status s = writeFileAtomic(*out, *text);
        if (!s)
          return reportFailure(s.diags());
      } else {
        std::cout << *text;
      }
    }
    if (auto prov = args.get("provenance")) {
      Status s = writeFileAtomic(*prov, fqns.toJson() + "\n");
      if (!s)
        return reportFailure(s.diags());
    }

    // The report: on stdout with -o, else on stderr (stdout has the graph).
    std::ostream &report = out ? std::cout : std::cerr;
    if (args.has("json")) {
      // Totals over the phases, then each phase with its own timing.
      nlohmann::ordered_json j;
      j["graph"] = path;
      j["converged"] = result->converged();
      j["stop_reason"] =
          result->fuse.converged ? result->legalize.stopReason : result->fuse.stopReason;
      j["iterations"] = result->legalize.iterations + result->fuse.iterations;
      j["rewrites"] = result->legalize.rewrites + result->fuse.rewrites;
      j["nodes_before"] = result->nodesBefore;
      j["nodes_after"] = result->nodesAfter;
      j["seconds"] = result->legalizeSeconds + result->fuseSeconds;
      j["phases"] = nlohmann::ordered_json::array();
      j["fired"] = nlohmann::ordered_json::array();
      j["stats"] = nlohmann::ordered_json::array();
      for (rewrite::RulePhase phase : rewrite::kRulePhases) {
        const rewrite::RewriteResult &r = result->pass(phase);
        const char *phaseName = rewrite::name(phase);
        j["phases"].push_back(
            {{"phase", phaseName},
             {"rules", rules->rules(phase).size()},
             {"converged", r.converged},
             {"stop_reason", r.stopReason},
             {"iterations", r.iterations},
             {"rewrites", r.rewrites},
             {"nodes_before", r.nodesBefore},
             {"nodes_after", r.nodesAfter},
             {"seconds", phase == rewrite::RulePhase::Legalize ? result->legalizeSeconds
                                                               : result->fuseSeconds}});
        for (const rewrite::AppliedRewrite &a : r.log)
          j["fired"].push_back({{"rule", a.rule},
                                {"phase", phaseName},
                                {"root", a.root},
                                {"created", a.created},
                                {"removed", a.removed},
                                {"constants", a.constants},
                                {"reused", a.reused}});
        for (const rewrite::RuleStats &s : r.stats) {
          nlohmann::ordered_json sj = statsJson(s);
          sj["phase"] = phaseName;
          j["stats"].push_back(std::move(sj));
        }
      }
      j["provenance"] = nlohmann::ordered_json::parse(fqns.toJson());
      report << j.dump(2) << "\n";
    } else {
      report << formatFuseResult(*result, *rules);
      if (fqns.size())
        report << "constants made:\n" << fqns.str();
    }
    return int(kOk);
  };
  return c;
}

Command makeExplainCommand() {
  Command c;
  c.name = "explain";
  c.usage = "graft explain GRAPH [--rules FILES] [--rule NAME] [--node NAME] [--failures-only] "
            "[--json]";
  c.summary = "Say why each rule does or does not match at each candidate node.";
  c.details =
      "Tries every rule at every node whose op is the rule's root op (nothing is\n"
      "rewritten) and prints, per candidate, the deepest failing check with its .pat\n"
      "location and the value found in the graph:\n"
      "  rule torchao_embedding_q4gsw (patterns/embedding.pat:5:45): quant_min: expected -8,\n"
      "  node %dequantize_affine_3 has -128 [root %embedding_3]\n"
      "--rule and --node restrict the candidates (--node names the root node's value; for\n"
      "a node no rule is rooted at, each rule says which op it expects). A rule is explained\n"
      "on the graph as its phase sees it: fusion rules after the legalize phase has run, as\n"
      "in `graft compile`. Without --rules, the shipped rules.";
  c.flags = {{"rules", true,
              "rule files or directories (*.pat), repeatable or comma-separated (default: the "
              "shipped rules)",
              "FILES"},
             allowLossyFlag(),
             {"rule", true, "only this rule", "NAME"},
             {"node", true, "only this root node (value name, with or without %)", "NAME"},
             {"failures-only", false, "omit candidates that match"},
             {"json", false, "print a JSON array"}};
  c.run = [](const Args &args) {
    if (args.positional.size() != 1) {
      std::cerr << "graft explain: error: expected exactly one GRAPH\n";
      return int(kUserError);
    }
    int status = kOk;
    SourceManager sources;
    auto rules =
        loadRuleSet(args.all("rules"), "explain", sources, status, args.has("allow-lossy"));
    if (!rules)
      return status;
    rewrite::ExplainOptions eo;
    if (auto r = args.get("rule")) {
      eo.rule = *r;
      bool known = false;
      for (rewrite::RulePhase phase : rewrite::kRulePhases)
        known = known || !(*rules->compiled(phase))->find(*r).empty();
      if (!known) {
        std::cerr << "graft explain: error: no rule named '" << *r << "'\n";
        return int(kUserError);
      }
    }
    if (auto n = args.get("node"))
      eo.node = *n;
    eo.includeMatches = !args.has("failures-only");
    auto loaded = loadGraph(args.positional[0], &sources);
    if (!loaded)
      return reportFailure(loaded.diags(), &sources);
    auto entries = explainPhases(*loaded->graph, *rules, eo);
    if (!entries)
      return reportFailure(entries.diags(), &sources);
    if (args.has("json")) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const rewrite::ExplainEntry &e : *entries)
        j.push_back({{"rule", e.rule},
                     {"variant", e.variant},
                     {"root", e.root},
                     {"matched", e.matched},
                     {"loc", locText(e.loc)},
                     {"check", e.check},
                     {"message", e.message}});
      std::cout << j.dump(2) << "\n";
      return int(kOk);
    }
    std::size_t matched = 0;
    for (const rewrite::ExplainEntry &e : *entries) {
      std::cout << rewrite::format(e) << "\n";
      matched += e.matched;
    }
    std::cout << entries->size() << " candidate(s), " << matched << " match\n";
    return int(kOk);
  };
  return c;
}

Command makeVerifyRulesCommand() {
  Command c;
  c.name = "verify-rules";
  c.usage = "graft verify-rules [FILE|DIR...] [--instances N] [--rule NAME]... [--seed N]";
  c.summary = "Test each rule numerically on instances built from its example domain.";
  c.details =
      "For every rule (of the FILEs, or the shipped rules without any; every phase),\n"
      "builds instances of its match pattern from its `example` block (constants filled\n"
      "with random data satisfying the where clause), runs the reference interpreter\n"
      "before and after the rewrite and compares the outputs within the rule's\n"
      "tolerance. Instances run smallest first; the first failure is printed as a minimal\n"
      "counterexample (its parameters, what differed, and the instance graph). Exit status\n"
      "1 if any rule fails or cannot be instantiated.";
  c.flags = {{"instances", true, "instances per rule (default 8)", "N"},
             {"rule", true, "only rules with this name (repeatable)", "NAME"},
             {"seed", true, "seed of the random data (default 1)", "N"}};
  c.run = [](const Args &args) {
    int status = kOk;
    auto instances = parseCount(args, "instances", 8, "verify-rules", status);
    auto seed = parseCount(args, "seed", 1, "verify-rules", status);
    if (!instances || !seed)
      return status;
    SourceManager sources;
    auto rules = loadRuleSet(args.positional, "verify-rules", sources, status, /*allowLossy=*/true);
    if (!rules)
      return status;
    rewrite::RuleVerifyOptions vo;
    vo.instances = static_cast<unsigned>(std::max<uint64_t>(1, *instances));
    vo.seed = *seed;
    vo.onlyRules = args.all("rule");
    std::vector<rewrite::RuleVerification> results;
    for (rewrite::RulePhase phase : rewrite::kRulePhases) {
      if (rules->rules(phase).empty())
        continue;
      auto compiled = rules->compiled(phase);
      if (!compiled)
        return reportFailure(compiled.diags(), &sources);
      std::vector<rewrite::RuleVerification> r = rewrite::verifyRules(**compiled, vo);
      results.insert(results.end(), std::make_move_iterator(r.begin()),
                     std::make_move_iterator(r.end()));
    }
    std::size_t failed = 0;
    for (const rewrite::RuleVerification &v : results) {
      std::cout << rewrite::format(v);
      if (v.ok())
        continue;
      ++failed;
      if (v.counterexample && v.counterexample->before) {
        PrintOptions po;
        po.printMetadata = false;
        auto text = printGraph(*v.counterexample->before, po);
        if (text) {
          std::cout << "  counterexample:\n";
          std::stringstream ss(*text);
          std::string line;
          while (std::getline(ss, line))
            std::cout << "    " << line << "\n";
        }
      }
    }
    std::cout << results.size() << " rule(s), " << failed << " failed\n";
    return failed ? int(kUserError) : int(kOk);
  };
  return c;
}

} // namespace graft::cli
