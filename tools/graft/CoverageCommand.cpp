//===- CoverageCommand.cpp - graft coverage -------------------------------===//
//
//   graft coverage GRAPH... [--rules FILES] --format json|md|junit|html [-o FILE]
//
// Fuses each graph with the rules (the shipped library without --rules),
// every phase in order as graft fuse and graft compile do, then reports per
// rule how often it fired and why it missed, and per op target how many
// nodes were fused and why the rest were left alone (docs/coverage.md). The
// JUnit format makes each rule a test case that fails when the rule never
// fired on any of the graphs, so CI shows dead rules.
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/rewrite/Coverage.h"
#include "graft/serialize/CoverageReport.h"
#include "graft/serialize/Load.h"

#include <iostream>

namespace graft::cli {

Command makeCoverageCommand() {
  Command c;
  c.name = "coverage";
  c.usage = "graft coverage GRAPH... [--rules FILES] [--format json|md|junit|html] [-o FILE] "
            "[--no-dot]";
  c.summary = "Report which rules fire on graphs, their near misses, and what stays unfused.";
  c.details = "Fuses each GRAPH (text IR or .pt2) with the rules (without --rules, the shipped\n"
              "library), phase by phase as graft compile does, and reports, per rule, its\n"
              "candidate roots, how often it fired, and every near miss with the failing check's\n"
              ".pat location and the value found (as graft explain prints it); per op target, how\n"
              "many nodes were fused and why the others were left alone; and the fused fraction.\n"
              "Formats: json, md (default; or from -o's extension: .json .md .xml .html), junit\n"
              "(one test case per rule, failing when the rule never fired on any GRAPH) and html\n"
              "(with a picture of each fused match: SVG when Graphviz `dot` is on PATH, else the\n"
              "DOT source; --no-dot or GRAFT_NO_DOT=1 skips the lookup). -o writes atomically.\n"
              "Exit status 1 if a graph or the rules cannot be read.";
  c.flags = {
      {"rules", true,
       "rule files or directories (*.pat), repeatable or comma-separated (default: the shipped "
       "rules)",
       "FILES"},
      allowLossyFlag(),
      {"format", true, "json, md, junit or html", "FMT"},
      {"o", true, "write the report to FILE (default: stdout)", "FILE"},
      {"no-dot", false, "html: do not look for Graphviz dot"}};
  c.run = [](const Args &args) {
    if (args.positional.empty()) {
      std::cerr << "graft coverage: error: expected at least one GRAPH\n";
      return int(kUserError);
    }
    auto out = args.get("o");
    Expected<CoverageFormat> format = CoverageFormat::Markdown;
    if (auto f = args.get("format"))
      format = parseCoverageFormat(*f);
    else if (out)
      format = coverageFormatFromPath(*out);
    if (!format) {
      for (const Diagnostic &d : format.diags())
        std::cerr << "graft coverage: error: " << d.message << "\n";
      return int(kUserError);
    }

    int status = kOk;
    SourceManager sources;
    auto rules =
        loadRuleSet(args.all("rules"), "coverage", sources, status, args.has("allow-lossy"));
    if (!rules)
      return status;
    auto report = emptyCoverage(*rules);
    if (!report)
      return reportFailure(report.diags(), &sources);
    for (const std::string &path : args.positional) {
      auto loaded = loadGraph(path, &sources);
      if (!loaded)
        return reportFailure(loaded.diags(), &sources);
      Status s = addCoverage(*report, path, *loaded->graph, *rules);
      if (!s)
        return reportFailure(s.diags(), &sources);
    }

    CoverageFormatOptions fo;
    fo.renderDot = !args.has("no-dot");
    if (out) {
      Status s = writeCoverageReport(*report, *format, *out, fo);
      if (!s)
        return reportFailure(s.diags());
    } else {
      std::cout << formatCoverage(*report, *format, fo);
    }
    return int(kOk);
  };
  return c;
}

} // namespace graft::cli
