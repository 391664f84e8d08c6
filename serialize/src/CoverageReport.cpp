//===- CoverageReport.cpp - json / md / junit / html coverage reports -----===//
//
// Four views of one CoverageReport. Everything user-controlled (rule and
// node names, op targets, explain messages with values from the graph,
// paths) is escaped for the format it lands in: XML attributes and text for
// JUnit and HTML, table cells for Markdown, string quoting for DOT (done by
// the engine). The output is deterministic (no dates, no paths of the
// machine) so reports can be diffed and kept as golden files.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/CoverageReport.h"

#include "graft/support/FileIO.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <unistd.h>

namespace graft {

using rewrite::CoverageReport;
using rewrite::NodeCoverage;
using rewrite::NodeFate;
using rewrite::RuleCoverage;

namespace {

std::string locText(const SourceRange &r) {
  if (!r.begin.valid())
    return "";
  return r.begin.file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

/// Near misses of one rule with the same failing check, counted.
struct MissGroup {
  std::string loc, check, example;
  uint64_t count = 0;
};

std::vector<MissGroup> groupMisses(const RuleCoverage &r) {
  std::vector<MissGroup> out;
  for (const rewrite::CoverageNearMiss &m : r.nearMisses) {
    std::string loc = locText(m.loc);
    std::string check = m.check.empty() ? m.message : m.check;
    bool found = false;
    for (MissGroup &g : out)
      if (g.loc == loc && g.check == check) {
        ++g.count;
        found = true;
        break;
      }
    if (!found)
      out.push_back({loc, check, m.text, 1});
  }
  return out;
}

/// Rules by name (variants together), in first-seen order: JUnit's test cases.
struct RuleGroup {
  std::string name;
  std::vector<const RuleCoverage *> variants;
  uint64_t fired() const {
    uint64_t n = 0;
    for (const RuleCoverage *r : variants)
      n += r->fired;
    return n;
  }
  uint64_t candidates() const {
    uint64_t n = 0;
    for (const RuleCoverage *r : variants)
      n += r->candidates;
    return n;
  }
};

std::vector<RuleGroup> groupRules(const CoverageReport &report) {
  std::vector<RuleGroup> out;
  for (const RuleCoverage &r : report.rules) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const RuleGroup &g) { return g.name == r.name; });
    if (it == out.end())
      it = out.insert(out.end(), RuleGroup{r.name, {}});
    it->variants.push_back(&r);
  }
  return out;
}

//===-- JSON --------------------------------------------------------------===//

using Json = nlohmann::ordered_json;

Json countsJson(const std::vector<std::pair<std::string, uint64_t>> &counts, const char *key) {
  Json a = Json::array();
  for (const auto &[k, n] : counts)
    a.push_back({{key, k}, {"count", n}});
  return a;
}

std::string toJson(const CoverageReport &report) {
  Json j;
  j["format"] = "graft-coverage";
  j["version"] = 1;
  Json never = Json::array();
  for (const RuleGroup &g : groupRules(report))
    if (g.fired() == 0)
      never.push_back(g.name);
  j["summary"] = {{"graphs", report.graphs.size()},
                  {"rules", report.rules.size()},
                  {"nodes", report.totalNodes()},
                  {"fused", report.fusedNodes()},
                  {"fused_fraction", report.fusedFraction()},
                  {"rules_never_fired", never}};
  j["graphs"] = Json::array();
  for (const rewrite::GraphCoverage &g : report.graphs)
    j["graphs"].push_back({{"name", g.name},
                           {"nodes_before", g.nodesBefore},
                           {"nodes_after", g.nodesAfter},
                           {"fused", g.fused},
                           {"rewrites", g.rewrites},
                           {"converged", g.converged},
                           {"stop_reason", g.stopReason}});
  j["rules"] = Json::array();
  for (const RuleCoverage &r : report.rules) {
    Json misses = Json::array();
    for (const rewrite::CoverageNearMiss &m : r.nearMisses)
      misses.push_back({{"graph", m.graph},
                        {"root", m.root},
                        {"loc", locText(m.loc)},
                        {"check", m.check},
                        {"message", m.message},
                        {"text", m.text}});
    j["rules"].push_back({{"name", r.name},
                          {"variant", r.variant},
                          {"phase", rewrite::name(r.phase)},
                          {"loc", locText(r.loc)},
                          {"candidates", r.candidates},
                          {"tried", r.tried},
                          {"matched", r.matched},
                          {"fired", r.fired},
                          {"rejected", r.rejected},
                          {"rejections", countsJson(r.rejections, "reason")},
                          {"near_misses", misses}});
  }
  j["ops"] = Json::array();
  for (const rewrite::OpCoverage &o : report.ops)
    j["ops"].push_back({{"target", o.target},
                        {"nodes", o.nodes},
                        {"fused", o.fused},
                        {"left_alone", o.leftAlone()},
                        {"reasons", countsJson(o.reasons, "reason")}});
  j["nodes"] = Json::array();
  for (const NodeCoverage &n : report.nodes)
    j["nodes"].push_back({{"graph", n.graph},
                          {"node", n.node},
                          {"target", n.target},
                          {"fate", std::string(rewrite::name(n.fate))},
                          {"rule", n.rule},
                          {"reasons", n.reasons},
                          {"details", n.details}});
  j["matches"] = Json::array();
  for (const rewrite::FusedMatch &m : report.matches)
    j["matches"].push_back({{"graph", m.graph},
                            {"rule", m.rule},
                            {"root", m.root},
                            {"removed", m.removed},
                            {"created", m.created},
                            {"dot", m.dot}});
  return j.dump(2) + "\n";
}

//===-- Markdown ----------------------------------------------------------===//

/// Plain text in Markdown (a table cell or a list item): Markdown's
/// punctuation is backslash-escaped, HTML's special characters become
/// entities, a newline a space.
std::string md(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '\\':
    case '`':
    case '*':
    case '_':
    case '[':
    case ']':
    case '|':
    case '#':
      out += '\\';
      out += c;
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '\n':
      out += ' ';
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string toMarkdown(const CoverageReport &report) {
  std::ostringstream os;
  os << "# graft rule coverage\n\n";
  os << "**" << report.fusedNodes() << " of " << report.totalNodes() << " nodes fused ("
     << percent(report.fusedFraction()) << ")** over " << report.graphs.size() << " graph(s) with "
     << report.rules.size() << " rule(s).\n\n";

  os << "## Graphs\n\n"
     << "| graph | nodes before | nodes after | fused | rewrites | stop |\n"
     << "|---|---:|---:|---:|---:|---|\n";
  for (const rewrite::GraphCoverage &g : report.graphs)
    os << "| " << md(g.name) << " | " << g.nodesBefore << " | " << g.nodesAfter << " | " << g.fused
       << " | " << g.rewrites << " | " << md(g.stopReason) << " |\n";

  os << "\n## Rules\n\n"
     << "| rule | defined at | candidates | matched | fired | refused | near misses |\n"
     << "|---|---|---:|---:|---:|---:|---:|\n";
  for (const RuleCoverage &r : report.rules)
    os << "| " << md(r.displayName()) << (r.fired ? "" : " (never fired)") << " | "
       << md(locText(r.loc)) << " | " << r.candidates << " | " << r.matched << " | " << r.fired
       << " | " << r.rejected << " | " << r.nearMisses.size() << " |\n";
  for (const RuleCoverage &r : report.rules) {
    if (r.nearMisses.empty() && r.rejections.empty())
      continue;
    os << "\n### " << md(r.displayName()) << "\n\n";
    for (const MissGroup &g : groupMisses(r))
      os << "- near miss x" << g.count << ": " << md(g.check) << " at " << md(g.loc) << ", e.g. "
         << md(g.example) << "\n";
    for (const auto &[why, n] : r.rejections)
      os << "- refused x" << n << ": " << md(why) << "\n";
  }

  os << "\n## Op targets\n\n"
     << "| op | nodes | fused | left alone | why left alone |\n"
     << "|---|---:|---:|---:|---|\n";
  for (const rewrite::OpCoverage &o : report.ops) {
    std::string why;
    for (const auto &[r, n] : o.reasons)
      why += (why.empty() ? "" : "; ") + md(r) + " (x" + std::to_string(n) + ")";
    os << "| " << md(o.target) << " | " << o.nodes << " | " << o.fused << " | " << o.leftAlone()
       << " | " << why << " |\n";
  }

  os << "\n## Fused matches\n\n";
  if (report.matches.empty())
    os << "None.\n";
  for (const rewrite::FusedMatch &m : report.matches) {
    std::string removed, created;
    for (const std::string &n : m.removed)
      removed += (removed.empty() ? "%" : ", %") + n;
    for (const std::string &n : m.created)
      created += (created.empty() ? "%" : ", %") + n;
    os << "- " << md(m.graph) << ": " << md(m.rule) << " at " << md("%" + m.root) << ": "
       << md(removed) << " -> " << md(created) << "\n";
  }
  return os.str();
}

//===-- XML / HTML escaping -----------------------------------------------===//

/// Text or a double-quoted attribute value in XML 1.0 / HTML. Control
/// characters XML cannot carry at all (not even as references) become U+FFFD;
/// in attributes newlines and tabs are kept as references so that parsers do
/// not normalise them to spaces.
std::string xml(std::string_view s, bool attribute = false) {
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    case '\n':
      out += attribute ? "&#10;" : "\n";
      break;
    case '\t':
      out += attribute ? "&#9;" : "\t";
      break;
    case '\r':
      out += "&#13;";
      break;
    default:
      if (c < 0x20)
        out += "\xEF\xBF\xBD";
      else
        out += ch;
    }
  }
  return out;
}

//===-- JUnit -------------------------------------------------------------===//

std::string toJUnit(const CoverageReport &report) {
  std::vector<RuleGroup> groups = groupRules(report);
  std::size_t failures = 0;
  for (const RuleGroup &g : groups)
    failures += g.fired() == 0;
  std::ostringstream os;
  std::string counts = " tests=\"" + std::to_string(groups.size()) + "\" failures=\"" +
                       std::to_string(failures) + "\" errors=\"0\"";
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"graft coverage\"" << counts << ">\n";
  os << "  <testsuite name=\"graft.coverage\"" << counts << " skipped=\"0\">\n";
  os << "    <properties>\n";
  for (const rewrite::GraphCoverage &g : report.graphs)
    os << "      <property name=\"graph\" value=\"" << xml(g.name, true) << "\"/>\n";
  os << "      <property name=\"nodes\" value=\"" << report.totalNodes() << "\"/>\n";
  os << "      <property name=\"fused\" value=\"" << report.fusedNodes() << "\"/>\n";
  os << "      <property name=\"fused_fraction\" value=\"" << percent(report.fusedFraction())
     << "\"/>\n";
  os << "    </properties>\n";
  for (const RuleGroup &g : groups) {
    const RuleCoverage &first = *g.variants.front();
    os << "    <testcase name=\"" << xml(g.name, true) << "\" classname=\"graft.coverage\"";
    if (first.loc.begin.valid())
      os << " file=\"" << xml(first.loc.begin.file, true) << "\" line=\"" << first.loc.begin.line
         << "\"";
    os << ">\n";
    std::string summary;
    for (const RuleCoverage *r : g.variants)
      summary += r->displayName() + ": " + std::to_string(r->candidates) + " candidate(s), " +
                 std::to_string(r->matched) + " matched, " + std::to_string(r->fired) + " fired, " +
                 std::to_string(r->rejected) + " refused, " + std::to_string(r->nearMisses.size()) +
                 " near miss(es)\n";
    if (g.fired() == 0) {
      std::string message;
      std::string body;
      if (g.candidates() == 0) {
        message = "never fired: no candidate root in " + std::to_string(report.graphs.size()) +
                  " graph(s)";
      } else {
        message = "never fired on " + std::to_string(g.candidates()) + " candidate(s)";
        for (const RuleCoverage *r : g.variants)
          for (const MissGroup &m : groupMisses(*r)) {
            message += "; " + m.check + (m.loc.empty() ? "" : " at " + m.loc) + " (x" +
                       std::to_string(m.count) + ")";
          }
      }
      for (const RuleCoverage *r : g.variants) {
        for (const rewrite::CoverageNearMiss &m : r->nearMisses)
          body += m.graph + ": " + m.text + "\n";
        for (const auto &[why, n] : r->rejections)
          body += r->displayName() + " refused x" + std::to_string(n) + ": " + why + "\n";
      }
      os << "      <failure type=\"NeverFired\" message=\"" << xml(message, true) << "\">"
         << xml(body) << "</failure>\n";
    }
    os << "      <system-out>" << xml(summary) << "</system-out>\n";
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
  return os.str();
}

//===-- HTML --------------------------------------------------------------===//

/// `dot` on PATH, unless the lookup is disabled; empty when not found.
std::string findDot(const CoverageFormatOptions &options) {
  if (!options.renderDot)
    return "";
  if (const char *off = std::getenv("GRAFT_NO_DOT"); off && *off)
    return "";
  const char *path = std::getenv("PATH");
  if (!path)
    return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty())
      continue;
    std::string candidate = dir + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

std::string shellQuote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The SVG element `dot -Tsvg` makes of `source` (its XML prolog and
/// DOCTYPE dropped so it can sit inline), or empty if dot fails.
std::string renderSvg(const std::string &dot, const std::string &source) {
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / "graft-coverage-XXXXXX").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0)
    return "";
  std::string file(name.data());
  bool wrote = ::write(fd, source.data(), source.size()) == static_cast<ssize_t>(source.size());
  ::close(fd);
  std::string svg;
  if (wrote) {
    std::string cmd = shellQuote(dot) + " -Tsvg " + shellQuote(file) + " 2>/dev/null";
    if (FILE *p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        svg.append(buf, n);
      if (::pclose(p) != 0)
        svg.clear();
    }
  }
  std::remove(file.c_str());
  std::size_t start = svg.find("<svg");
  return start == std::string::npos ? "" : svg.substr(start);
}

const char *kCss = R"(body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.n { text-align: right; }
tr.never td:first-child { color: #b00; font-weight: bold; }
.bar { width: 20em; height: 1em; background: #eee; border: 1px solid #ccc; }
.bar div { height: 100%; background: #4a4; }
figure { border: 1px solid #ddd; padding: 0.5em; margin: 0 0 1em; display: inline-block; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; }
)";

std::string toHtml(const CoverageReport &report, const CoverageFormatOptions &options) {
  std::string dot = report.matches.empty() ? "" : findDot(options);
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<title>graft rule coverage</title>\n<style>\n"
     << kCss << "</style>\n</head>\n<body>\n";
  os << "<h1>graft rule coverage</h1>\n";
  char width[32];
  std::snprintf(width, sizeof width, "%.1f", report.fusedFraction() * 100.0);
  os << "<p><strong>" << report.fusedNodes() << " of " << report.totalNodes() << " nodes fused ("
     << percent(report.fusedFraction()) << ")</strong> over " << report.graphs.size()
     << " graph(s) with " << report.rules.size() << " rule(s).</p>\n"
     << "<div class=\"bar\"><div style=\"width: " << width << "%\"></div></div>\n";

  os << "<h2>Graphs</h2>\n<table>\n<tr><th>graph</th><th>nodes before</th><th>nodes "
        "after</th><th>fused</th><th>rewrites</th><th>stop</th></tr>\n";
  for (const rewrite::GraphCoverage &g : report.graphs)
    os << "<tr><td>" << xml(g.name) << "</td><td class=\"n\">" << g.nodesBefore
       << "</td><td class=\"n\">" << g.nodesAfter << "</td><td class=\"n\">" << g.fused
       << "</td><td class=\"n\">" << g.rewrites << "</td><td>" << xml(g.stopReason)
       << "</td></tr>\n";
  os << "</table>\n";

  os << "<h2>Rules</h2>\n<table>\n<tr><th>rule</th><th>defined at</th><th>candidates</th>"
        "<th>matched</th><th>fired</th><th>refused</th><th>near misses</th></tr>\n";
  for (const RuleCoverage &r : report.rules)
    os << "<tr" << (r.fired ? "" : " class=\"never\"") << "><td>" << xml(r.displayName())
       << "</td><td>" << xml(locText(r.loc)) << "</td><td class=\"n\">" << r.candidates
       << "</td><td class=\"n\">" << r.matched << "</td><td class=\"n\">" << r.fired
       << "</td><td class=\"n\">" << r.rejected << "</td><td class=\"n\">" << r.nearMisses.size()
       << "</td></tr>\n";
  os << "</table>\n";
  for (const RuleCoverage &r : report.rules) {
    if (r.nearMisses.empty() && r.rejections.empty())
      continue;
    os << "<h3>" << xml(r.displayName()) << "</h3>\n<ul>\n";
    for (const MissGroup &g : groupMisses(r))
      os << "<li>near miss x" << g.count << ": <code>" << xml(g.check) << "</code> at "
         << xml(g.loc) << ", e.g. <code>" << xml(g.example) << "</code></li>\n";
    for (const auto &[why, n] : r.rejections)
      os << "<li>refused x" << n << ": " << xml(why) << "</li>\n";
    os << "</ul>\n";
  }

  os << "<h2>Op targets</h2>\n<table>\n<tr><th>op</th><th>nodes</th><th>fused</th>"
        "<th>left alone</th><th>why left alone</th></tr>\n";
  for (const rewrite::OpCoverage &o : report.ops) {
    os << "<tr><td>" << xml(o.target) << "</td><td class=\"n\">" << o.nodes
       << "</td><td class=\"n\">" << o.fused << "</td><td class=\"n\">" << o.leftAlone()
       << "</td><td>";
    for (std::size_t i = 0; i < o.reasons.size(); ++i)
      os << (i ? "<br>" : "") << xml(o.reasons[i].first) << " (x" << o.reasons[i].second << ")";
    os << "</td></tr>\n";
  }
  os << "</table>\n";

  os << "<h2>Fused matches</h2>\n";
  if (report.matches.empty())
    os << "<p>None.</p>\n";
  for (const rewrite::FusedMatch &m : report.matches) {
    os << "<figure>\n<figcaption>" << xml(m.graph) << ": " << xml(m.rule) << " at %" << xml(m.root)
       << "</figcaption>\n";
    std::string svg = dot.empty() ? "" : renderSvg(dot, m.dot);
    if (!svg.empty())
      os << svg << (svg.back() == '\n' ? "" : "\n");
    else
      os << "<pre class=\"dot\">" << xml(m.dot) << "</pre>\n";
    os << "</figure>\n";
  }
  os << "</body>\n</html>\n";
  return os.str();
}

} // namespace

std::string_view name(CoverageFormat format) {
  switch (format) {
  case CoverageFormat::Json:
    return "json";
  case CoverageFormat::Markdown:
    return "md";
  case CoverageFormat::JUnit:
    return "junit";
  case CoverageFormat::Html:
    return "html";
  }
  return "unknown";
}

Expected<CoverageFormat> parseCoverageFormat(std::string_view text) {
  if (text == "json")
    return CoverageFormat::Json;
  if (text == "md" || text == "markdown")
    return CoverageFormat::Markdown;
  if (text == "junit" || text == "xml")
    return CoverageFormat::JUnit;
  if (text == "html")
    return CoverageFormat::Html;
  return Diagnostic::error("unknown coverage report format '" + std::string(text) +
                           "' (expected json, md, junit or html)");
}

Expected<CoverageFormat> coverageFormatFromPath(const std::string &path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".json")
    return CoverageFormat::Json;
  if (ext == ".md")
    return CoverageFormat::Markdown;
  if (ext == ".xml")
    return CoverageFormat::JUnit;
  if (ext == ".html" || ext == ".htm")
    return CoverageFormat::Html;
  return Diagnostic::error("cannot tell the coverage report format of '" + path +
                           "' from its extension (expected .json, .md, .xml or .html)");
}

std::string formatCoverage(const CoverageReport &report, CoverageFormat format,
                           const CoverageFormatOptions &options) {
  switch (format) {
  case CoverageFormat::Json:
    return toJson(report);
  case CoverageFormat::Markdown:
    return toMarkdown(report);
  case CoverageFormat::JUnit:
    return toJUnit(report);
  case CoverageFormat::Html:
    return toHtml(report, options);
  }
  return toJson(report);
}

Status writeCoverageReport(const CoverageReport &report, CoverageFormat format,
                           const std::string &path, const CoverageFormatOptions &options) {
  return writeFileAtomic(path, formatCoverage(report, format, options));
}

} // namespace graft
