//===- CoverageTest.cpp - Rule coverage reports ---------------------------===//
//
// The coverage model (rewrite::addCoverage) on the rewrite golden cases, the
// four formats (JSON read back field by field; Markdown, JUnit and HTML
// against golden files under tests/golden/coverage/<case>/, whose
// inputs.txt names the rules and graphs, relative to tests/golden), escaping
// of hostile names and messages, HTML with and without Graphviz, and the
// `graft coverage` command (exit codes, atomic -o). Set
// GRAFT_UPDATE_GOLDEN=1 to rewrite the golden files.
//
//===----------------------------------------------------------------------===//
#include "CliTestUtil.h"

#include "graft/dsl/Pat.h"
#include "graft/rewrite/Coverage.h"
#include "graft/serialize/CoverageReport.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace graft;
namespace fs = std::filesystem;
using graft::testing::CliRun;
using graft::testing::runGraft;
using graft::testing::slurp;

namespace {

const fs::path kGolden = fs::path(GRAFT_TEST_DATA_DIR) / "golden";

/// Rules and graphs named relative to tests/golden, so that locations in
/// the reports do not depend on where the checkout is.
struct Inputs {
  std::string rules;
  std::vector<std::string> graphs;
};

rewrite::CompiledRules compileRules(const std::string &rel) {
  auto set = dsl::parsePat(slurp(kGolden / rel), rel);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : render(set.diags()));
  auto compiled = rewrite::CompiledRules::compile(std::move(set->rules));
  EXPECT_TRUE(compiled.ok()) << (compiled.ok() ? "" : render(compiled.diags()));
  return std::move(*compiled);
}

rewrite::CoverageReport coverage(const Inputs &in) {
  rewrite::CompiledRules rules = compileRules(in.rules);
  rewrite::CoverageReport report = rewrite::emptyCoverage(rules);
  for (const std::string &g : in.graphs) {
    auto graph = parseGraph(slurp(kGolden / g), g);
    EXPECT_TRUE(graph.ok()) << (graph.ok() ? "" : render(graph.diags()));
    Status s = rewrite::addCoverage(report, g, **graph, rules);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : render(s.diags()));
  }
  return report;
}

const rewrite::NodeCoverage &node(const rewrite::CoverageReport &r, const std::string &name) {
  auto it = std::find_if(r.nodes.begin(), r.nodes.end(),
                         [&](const rewrite::NodeCoverage &n) { return n.node == name; });
  if (it == r.nodes.end())
    throw std::runtime_error("no node " + name);
  return *it;
}

const rewrite::OpCoverage &op(const rewrite::CoverageReport &r, const std::string &target) {
  auto it = std::find_if(r.ops.begin(), r.ops.end(),
                         [&](const rewrite::OpCoverage &o) { return o.target == target; });
  if (it == r.ops.end())
    throw std::runtime_error("no op " + target);
  return *it;
}

/// A strict well-formedness check of the XML subset the reports use:
/// one prolog, balanced tags, quoted attributes, only the five predefined
/// entities and character references, no raw '<' or '&' in text. Returns
/// the first problem, or "" when well-formed.
std::string xmlProblem(const std::string &x) {
  std::vector<std::string> open;
  std::size_t i = 0, roots = 0;
  auto checkEntities = [](std::string_view text) -> std::string {
    for (std::size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '<')
        return "raw '<' in text";
      if (text[k] != '&')
        continue;
      std::size_t semi = text.find(';', k);
      if (semi == std::string::npos)
        return "unterminated reference";
      std::string_view ent = text.substr(k + 1, semi - k - 1);
      bool ok = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos";
      if (!ok && ent.size() > 1 && ent[0] == '#')
        ok = std::all_of(ent.begin() + 1, ent.end(), [](char c) { return std::isdigit(c); });
      if (!ok)
        return "bad reference &" + std::string(ent) + ";";
    }
    return "";
  };
  if (x.rfind("<?xml ", 0) == 0)
    i = x.find("?>") + 2;
  while (i < x.size()) {
    std::size_t lt = x.find('<', i);
    std::string text = x.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (auto p = checkEntities(text); !p.empty())
      return p;
    if (open.empty() && text.find_first_not_of(" \n\t") != std::string::npos)
      return "text outside the root element";
    if (lt == std::string::npos)
      break;
    std::size_t gt = lt, quote = 0;
    for (gt = lt + 1; gt < x.size(); ++gt) {
      if (quote) {
        if (x[gt] == char(quote))
          quote = 0;
        else if (x[gt] == '<')
          return "raw '<' in an attribute";
      } else if (x[gt] == '"' || x[gt] == '\'') {
        quote = static_cast<unsigned char>(x[gt]);
      } else if (x[gt] == '>') {
        break;
      }
    }
    if (gt >= x.size())
      return "unterminated tag";
    std::string tag = x.substr(lt + 1, gt - lt - 1);
    if (tag.empty())
      return "empty tag";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return "mismatched </" + tag.substr(1) + ">";
      open.pop_back();
    } else {
      std::string name = tag.substr(0, tag.find_first_of(" \n/"));
      // Attributes: name="value" pairs, values entity-checked.
      std::size_t a = name.size();
      while (a < tag.size()) {
        a = tag.find_first_not_of(" \n", a);
        if (a == std::string::npos || tag[a] == '/')
          break;
        std::size_t eq = tag.find('=', a);
        if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
          return "unquoted attribute in <" + name + ">";
        std::size_t end = tag.find('"', eq + 2);
        if (end == std::string::npos)
          return "unterminated attribute";
        if (auto p = checkEntities(tag.substr(eq + 2, end - eq - 2)); !p.empty())
          return p;
        a = end + 1;
      }
      if (open.empty() && ++roots > 1)
        return "more than one root element";
      if (tag.back() != '/')
        open.push_back(name);
    }
    i = gt + 1;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

std::size_t count(const std::string &hay, const std::string &needle) {
  std::size_t n = 0;
  for (std::size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1))
    ++n;
  return n;
}

const Inputs kBlockedAndFused = {
    "rewrite/use_outside_blocks/rules.pat",
    {"rewrite/embedding_q4gsw/input.gir", "rewrite/use_outside_blocks/input.gir"}};

} // namespace

//===-- The model ---------------------------------------------------------===//

TEST(CoverageModel, FusedMatchAndItsPicture) {
  auto r = coverage({"rewrite/embedding_q4gsw/rules.pat", {"rewrite/embedding_q4gsw/input.gir"}});
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(r.rules[0].name, "torchao_embedding_q4gsw");
  EXPECT_EQ(r.rules[0].candidates, 1u);
  EXPECT_EQ(r.rules[0].fired, 1u);
  EXPECT_TRUE(r.rules[0].nearMisses.empty());
  EXPECT_EQ(r.totalNodes(), 2u);
  EXPECT_EQ(r.fusedNodes(), 2u);
  EXPECT_DOUBLE_EQ(r.fusedFraction(), 1.0);
  EXPECT_EQ(node(r, "dq").fate, rewrite::NodeFate::Fused);
  EXPECT_EQ(node(r, "out").rule, "torchao_embedding_q4gsw");
  ASSERT_EQ(r.matches.size(), 1u);
  const rewrite::FusedMatch &m = r.matches[0];
  EXPECT_EQ(m.root, "out");
  EXPECT_EQ(m.created, std::vector<std::string>{"embedding_q4gsw"});
  // The picture: both erased nodes with their ops, the new node, the shared
  // graph input drawn once, and an edge from it into each side.
  EXPECT_NE(m.dot.find("\"m:dq\" [shape=box, label=\"%dq\\ntorchao.dequantize_affine.default\"]"),
            std::string::npos)
      << m.dot;
  EXPECT_NE(m.dot.find("\"m:dq\" -> \"m:out\""), std::string::npos) << m.dot;
  EXPECT_NE(m.dot.find("et_vk.embedding_q4gsw.default"), std::string::npos) << m.dot;
  EXPECT_EQ(count(m.dot, "\"v:tokens\" [shape=ellipse"), 1u) << m.dot;
  EXPECT_NE(m.dot.find("\"v:tokens\" -> \"m:out\""), std::string::npos) << m.dot;
  EXPECT_NE(m.dot.find("\"v:tokens\" -> \"r:embedding_q4gsw\""), std::string::npos) << m.dot;
}

TEST(CoverageModel, NearMissesAndReasonsPerNode) {
  auto r =
      coverage({"rewrite/use_outside_blocks/rules.pat", {"rewrite/use_outside_blocks/input.gir"}});
  ASSERT_EQ(r.rules.size(), 1u);
  const rewrite::RuleCoverage &rule = r.rules[0];
  EXPECT_EQ(rule.fired, 0u);
  EXPECT_EQ(rule.candidates, 1u);
  ASSERT_EQ(rule.nearMisses.size(), 1u);
  const rewrite::CoverageNearMiss &m = rule.nearMisses[0];
  EXPECT_EQ(m.root, "out");
  EXPECT_EQ(m.check, "uses of %dq");
  EXPECT_EQ(m.loc.begin.line, 6u);
  EXPECT_EQ(m.loc.begin.column, 12u);
  // As graft explain prints it.
  EXPECT_EQ(
      m.text.rfind("rule torchao_embedding_q4gsw (rewrite/use_outside_blocks/rules.pat:6:12): ", 0),
      0u)
      << m.text;
  EXPECT_NE(m.text.find("[root %out]"), std::string::npos) << m.text;

  EXPECT_EQ(r.fusedNodes(), 0u);
  const std::string why = "rule torchao_embedding_q4gsw failed `uses of %dq` "
                          "(rewrite/use_outside_blocks/rules.pat:6:12)";
  EXPECT_EQ(node(r, "out").fate, rewrite::NodeFate::NearMiss);
  EXPECT_EQ(node(r, "out").reasons, std::vector<std::string>{why});
  // The dequantize is interior: the rule rooted at its user failed.
  EXPECT_EQ(node(r, "dq").fate, rewrite::NodeFate::NearMiss);
  EXPECT_EQ(node(r, "dq").reasons, std::vector<std::string>{"via a user: " + why});
  EXPECT_EQ(node(r, "sum").fate, rewrite::NodeFate::NoRule);
  const rewrite::OpCoverage &sum = op(r, "aten.sum.dim_IntList");
  EXPECT_EQ(sum.nodes, 1u);
  EXPECT_EQ(sum.leftAlone(), 1u);
  ASSERT_EQ(sum.reasons.size(), 1u);
  EXPECT_EQ(sum.reasons[0].first, "no rule");
}

TEST(CoverageModel, VariantsAndSeveralGraphsAccumulate) {
  auto r = coverage({"rewrite/mm_alternatives/rules.pat",
                     {"rewrite/mm_alternatives/input.gir", "rewrite/mm_alternatives/input.gir"}});
  ASSERT_EQ(r.rules.size(), 2u);
  EXPECT_EQ(r.rules[0].displayName(), "torchao_mm_q4gsw#1");
  EXPECT_EQ(r.rules[1].displayName(), "torchao_mm_q4gsw#2");
  EXPECT_EQ(r.rules[0].fired + r.rules[1].fired, 4u);
  EXPECT_EQ(r.graphs.size(), 2u);
  EXPECT_EQ(r.totalNodes(), 12u);
  EXPECT_EQ(r.fusedNodes(), 12u);
  EXPECT_EQ(op(r, "aten.mm.default").nodes, 4u);
  EXPECT_EQ(op(r, "aten.mm.default").fused, 4u);
  EXPECT_EQ(r.matches.size(), 4u);
}

//===-- Formats -----------------------------------------------------------===//

TEST(CoverageFormat, JsonReadsBackFieldByField) {
  auto r = coverage(kBlockedAndFused);
  auto j = nlohmann::json::parse(formatCoverage(r, CoverageFormat::Json));
  EXPECT_EQ(j["format"], "graft-coverage");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["summary"]["graphs"], 2);
  EXPECT_EQ(j["summary"]["rules"], 1);
  EXPECT_EQ(j["summary"]["nodes"], 5);
  EXPECT_EQ(j["summary"]["fused"], 2);
  EXPECT_DOUBLE_EQ(j["summary"]["fused_fraction"].get<double>(), 0.4);
  EXPECT_TRUE(j["summary"]["rules_never_fired"].empty());

  ASSERT_EQ(j["graphs"].size(), 2u);
  EXPECT_EQ(j["graphs"][0]["name"], "rewrite/embedding_q4gsw/input.gir");
  EXPECT_EQ(j["graphs"][0]["nodes_before"], 2);
  EXPECT_EQ(j["graphs"][0]["nodes_after"], 1);
  EXPECT_EQ(j["graphs"][0]["fused"], 2);
  EXPECT_EQ(j["graphs"][0]["rewrites"], 1);
  EXPECT_EQ(j["graphs"][0]["converged"], true);
  EXPECT_EQ(j["graphs"][0]["stop_reason"], "fixpoint");
  EXPECT_EQ(j["graphs"][1]["fused"], 0);

  ASSERT_EQ(j["rules"].size(), 1u);
  const auto &rule = j["rules"][0];
  EXPECT_EQ(rule["name"], "torchao_embedding_q4gsw");
  EXPECT_EQ(rule["variant"], 0);
  EXPECT_EQ(rule["loc"], "rewrite/use_outside_blocks/rules.pat:4:6");
  EXPECT_EQ(rule["candidates"], 2);
  EXPECT_EQ(rule["tried"], 2);
  EXPECT_EQ(rule["matched"], 1);
  EXPECT_EQ(rule["fired"], 1);
  EXPECT_EQ(rule["rejected"], 0);
  EXPECT_TRUE(rule["rejections"].empty());
  ASSERT_EQ(rule["near_misses"].size(), 1u);
  const auto &miss = rule["near_misses"][0];
  EXPECT_EQ(miss["graph"], "rewrite/use_outside_blocks/input.gir");
  EXPECT_EQ(miss["root"], "out");
  EXPECT_EQ(miss["loc"], "rewrite/use_outside_blocks/rules.pat:6:12");
  EXPECT_EQ(miss["check"], "uses of %dq");
  EXPECT_EQ(miss["text"], r.rules[0].nearMisses[0].text);
  EXPECT_EQ(miss["message"], r.rules[0].nearMisses[0].message);

  // ops sorted by target; sum left alone for want of a rule.
  ASSERT_EQ(j["ops"].size(), 3u);
  EXPECT_EQ(j["ops"][0]["target"], "aten.embedding.default");
  EXPECT_EQ(j["ops"][0]["nodes"], 2);
  EXPECT_EQ(j["ops"][0]["fused"], 1);
  EXPECT_EQ(j["ops"][0]["left_alone"], 1);
  EXPECT_EQ(j["ops"][0]["reasons"][0]["count"], 1);
  EXPECT_EQ(j["ops"][1]["target"], "aten.sum.dim_IntList");
  EXPECT_EQ(j["ops"][1]["reasons"][0]["reason"], "no rule");
  EXPECT_EQ(j["ops"][2]["target"], "torchao.dequantize_affine.default");

  ASSERT_EQ(j["nodes"].size(), 5u);
  EXPECT_EQ(j["nodes"][0]["node"], "dq");
  EXPECT_EQ(j["nodes"][0]["fate"], "fused");
  EXPECT_EQ(j["nodes"][0]["rule"], "torchao_embedding_q4gsw");
  EXPECT_EQ(j["nodes"][4]["node"], "sum");
  EXPECT_EQ(j["nodes"][4]["fate"], "no-rule");
  EXPECT_EQ(j["nodes"][3]["fate"], "near-miss");
  EXPECT_EQ(j["nodes"][3]["details"][0], r.rules[0].nearMisses[0].text);

  ASSERT_EQ(j["matches"].size(), 1u);
  EXPECT_EQ(j["matches"][0]["rule"], "torchao_embedding_q4gsw");
  EXPECT_EQ(j["matches"][0]["root"], "out");
  EXPECT_EQ(j["matches"][0]["removed"].size(), 2u);
  EXPECT_EQ(j["matches"][0]["dot"], r.matches[0].dot);
}

TEST(CoverageFormat, TheXmlCheckerRejectsMalformedXml) {
  EXPECT_EQ(xmlProblem("<a x=\"1\"><b/>t &amp; &#10;</a>"), "");
  EXPECT_EQ(xmlProblem("<a>&</a>"), "unterminated reference");
  EXPECT_EQ(xmlProblem("<a>&nbsp;</a>"), "bad reference &nbsp;");
  EXPECT_EQ(xmlProblem("<a><b></a>"), "mismatched </a>");
  EXPECT_EQ(xmlProblem("<a x=1></a>"), "unquoted attribute in <a>");
  EXPECT_EQ(xmlProblem("<a x=\"<\"></a>"), "raw '<' in an attribute");
  EXPECT_EQ(xmlProblem("<a></a><b></b>"), "more than one root element");
  EXPECT_EQ(xmlProblem("<a>"), "unclosed <a>");
}

TEST(CoverageFormat, JUnitFailsANeverFiringRule) {
  auto r =
      coverage({"rewrite/use_outside_blocks/rules.pat", {"rewrite/use_outside_blocks/input.gir"}});
  std::string x = formatCoverage(r, CoverageFormat::JUnit);
  EXPECT_EQ(xmlProblem(x), "") << x;
  EXPECT_NE(x.find("tests=\"1\" failures=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testcase name=\"torchao_embedding_q4gsw\""), std::string::npos) << x;
  EXPECT_NE(x.find("<failure type=\"NeverFired\" message=\"never fired on 1 candidate(s); uses of "
                   "%dq at rewrite/use_outside_blocks/rules.pat:6:12 (x1)\">"),
            std::string::npos)
      << x;

  auto fired = coverage(kBlockedAndFused);
  std::string ok = formatCoverage(fired, CoverageFormat::JUnit);
  EXPECT_EQ(xmlProblem(ok), "") << ok;
  EXPECT_NE(ok.find("tests=\"1\" failures=\"0\""), std::string::npos) << ok;
  EXPECT_EQ(ok.find("<failure"), std::string::npos) << ok;
}

TEST(CoverageFormat, EscapesHostileNamesAndMessages) {
  rewrite::CoverageReport r;
  rewrite::RuleCoverage rule;
  rule.name = "r<&\">'";
  rule.candidates = 1;
  rule.nearMisses.push_back({"g<&\">.gir",
                             "n<&\">",
                             {},
                             "check <&\">",
                             "expected <&\">, has \x01",
                             "rule r<&\">: expected <&\"> [root %n]"});
  r.rules.push_back(rule);
  r.graphs.push_back({"g<&\">.gir", 1, 1, 0, 0, true, "fixpoint"});
  r.nodes.push_back({"g<&\">.gir",
                     "n<&\">",
                     "ns.op<&\">",
                     rewrite::NodeFate::NearMiss,
                     "",
                     {"rule r<&\"> failed `check <&\">`"},
                     {"x"}});
  r.ops.push_back({"ns.op<&\">", 1, 0, {{"rule r<&\"> failed `check <&\">`", 1}}});
  r.matches.push_back({"g<&\">.gir", "r<&\">", "n<&\">", {"n<&\">"}, {"m"}, "digraph \"<&>\" {}"});

  std::string x = formatCoverage(r, CoverageFormat::JUnit);
  EXPECT_EQ(xmlProblem(x), "") << x;
  EXPECT_NE(x.find("name=\"r&lt;&amp;&quot;&gt;&apos;\""), std::string::npos) << x;
  EXPECT_NE(x.find("value=\"g&lt;&amp;&quot;&gt;.gir\""), std::string::npos) << x;
  EXPECT_EQ(x.find('\x01'), std::string::npos) << "control characters cannot appear in XML";

  CoverageFormatOptions noDot;
  noDot.renderDot = false;
  std::string h = formatCoverage(r, CoverageFormat::Html, noDot);
  EXPECT_EQ(h.find("r<&"), std::string::npos) << h;
  EXPECT_NE(h.find("<td>r&lt;&amp;&quot;&gt;&apos;</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("<pre class=\"dot\">digraph &quot;&lt;&amp;&gt;&quot; {}</pre>"),
            std::string::npos)
      << h;

  std::string m = formatCoverage(r, CoverageFormat::Markdown);
  EXPECT_EQ(m.find("r<&"), std::string::npos) << m;
  EXPECT_NE(m.find("| r&lt;&amp;\"&gt;' (never fired) |"), std::string::npos) << m;
  EXPECT_NE(m.find("ns.op&lt;&amp;\"&gt;"), std::string::npos) << m;

  auto j = nlohmann::json::parse(formatCoverage(r, CoverageFormat::Json));
  EXPECT_EQ(j["rules"][0]["name"], "r<&\">'");
  EXPECT_EQ(j["rules"][0]["near_misses"][0]["message"], "expected <&\">, has \x01");
}

TEST(CoverageFormat, MarkdownEscapesTablePipes) {
  rewrite::CoverageReport r;
  r.ops.push_back({"a|b", 1, 0, {{"x|y*z_", 1}}});
  std::string m = formatCoverage(r, CoverageFormat::Markdown);
  EXPECT_NE(m.find("| a\\|b | 1 | 0 | 1 | x\\|y\\*z\\_ (x1) |"), std::string::npos) << m;
}

TEST(CoverageFormat, HtmlWithoutDotShowsTheSource) {
  auto r = coverage(kBlockedAndFused);
  // The option...
  CoverageFormatOptions off;
  off.renderDot = false;
  std::string h = formatCoverage(r, CoverageFormat::Html, off);
  EXPECT_EQ(count(h, "<pre class=\"dot\">digraph"), 1u) << h;
  EXPECT_EQ(h.find("<svg"), std::string::npos);
  // ...and the environment variable both skip the lookup.
  ::setenv("GRAFT_NO_DOT", "1", 1);
  std::string h2 = formatCoverage(r, CoverageFormat::Html);
  ::unsetenv("GRAFT_NO_DOT");
  EXPECT_EQ(h2, h);
}

TEST(CoverageFormat, HtmlWithDotInlinesSvg) {
  bool found = false;
  std::stringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');)
    found = found || (!dir.empty() && ::access((dir + "/dot").c_str(), X_OK) == 0);
  if (!found)
    GTEST_SKIP() << "Graphviz dot is not on PATH";
  // Sanitizer test runs preload the ASan runtime (tests/CMakeLists.txt). dot,
  // a third-party program this test starts, would inherit it, and
  // LeakSanitizer would fail dot for graphviz's own leaks (fontconfig's
  // caches): the report would then fall back to the DOT text.
  ::unsetenv("LD_PRELOAD");
  auto r = coverage({"rewrite/mm_alternatives/rules.pat", {"rewrite/mm_alternatives/input.gir"}});
  std::string h = formatCoverage(r, CoverageFormat::Html);
  EXPECT_EQ(count(h, "<svg"), 2u) << h;
  EXPECT_EQ(count(h, "</svg>"), 2u);
  EXPECT_EQ(h.find("<pre class=\"dot\">"), std::string::npos);
  EXPECT_EQ(h.find("<?xml"), std::string::npos) << "the SVG's prolog must not be inlined";
  EXPECT_NE(h.find("torchao_mm_q4gsw"), std::string::npos);
}

TEST(CoverageFormat, FormatNamesAndExtensions) {
  EXPECT_EQ(*parseCoverageFormat("junit"), CoverageFormat::JUnit);
  EXPECT_EQ(*parseCoverageFormat("md"), CoverageFormat::Markdown);
  EXPECT_FALSE(parseCoverageFormat("yaml").ok());
  EXPECT_EQ(*coverageFormatFromPath("out/r.json"), CoverageFormat::Json);
  EXPECT_EQ(*coverageFormatFromPath("r.md"), CoverageFormat::Markdown);
  EXPECT_EQ(*coverageFormatFromPath("r.xml"), CoverageFormat::JUnit);
  EXPECT_EQ(*coverageFormatFromPath("r.html"), CoverageFormat::Html);
  auto bad = coverageFormatFromPath("r.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.diags()[0].message.find("r.txt"), std::string::npos);
}

//===-- Golden files ------------------------------------------------------===//

namespace {

std::vector<fs::path> goldenCases() {
  std::vector<fs::path> out;
  for (const auto &e : fs::directory_iterator(kGolden / "coverage"))
    if (e.is_directory())
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class CoverageGolden : public ::testing::TestWithParam<fs::path> {};

} // namespace

TEST_P(CoverageGolden, MatchesTheGoldenReports) {
  const fs::path dir = GetParam();
  Inputs in;
  std::stringstream spec(slurp(dir / "inputs.txt"));
  for (std::string kind, path; spec >> kind >> path;)
    (kind == "rules" ? in.rules : in.graphs.emplace_back()) = path;
  ASSERT_FALSE(in.rules.empty()) << dir / "inputs.txt";
  auto r = coverage(in);
  CoverageFormatOptions off;
  off.renderDot = false;
  const std::pair<CoverageFormat, const char *> formats[] = {
      {CoverageFormat::Markdown, "report.md"},
      {CoverageFormat::JUnit, "report.xml"},
      {CoverageFormat::Html, "report.html"}};
  for (const auto &[format, file] : formats) {
    std::string text = formatCoverage(r, format, off);
    if (std::getenv("GRAFT_UPDATE_GOLDEN")) {
      ASSERT_TRUE(writeFileAtomic((dir / file).string(), text).ok());
    }
    EXPECT_EQ(text, slurp(dir / file)) << dir / file;
  }
  EXPECT_EQ(xmlProblem(formatCoverage(r, CoverageFormat::JUnit)), "");
}

INSTANTIATE_TEST_SUITE_P(Cases, CoverageGolden, ::testing::ValuesIn(goldenCases()),
                         [](const auto &info) { return info.param.filename().string(); });

//===-- The command -------------------------------------------------------===//

namespace {

std::string temp(const std::string &name) {
  return ::testing::TempDir() + "covcli_" + std::to_string(::getpid()) + "_" + name;
}

const std::string kRules = (kGolden / "rewrite/use_outside_blocks/rules.pat").string();
const std::string kGraphA = (kGolden / "rewrite/embedding_q4gsw/input.gir").string();
const std::string kGraphB = (kGolden / "rewrite/use_outside_blocks/input.gir").string();

} // namespace

TEST(CoverageCli, JsonOnStdout) {
  CliRun r =
      runGraft("coverage " + kGraphA + " " + kGraphB + " --rules " + kRules + " --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["graphs"], 2);
  EXPECT_EQ(j["summary"]["fused"], 2);
  EXPECT_EQ(j["graphs"][0]["name"], kGraphA);
  EXPECT_EQ(j["rules"][0]["near_misses"][0]["loc"], kRules + ":6:12");
}

TEST(CoverageCli, ReadsPt2Graphs) {
  std::string pt2 = (kGolden / "pt2/tinynet_torch2_9.pt2").string();
  CliRun r = runGraft("coverage " + pt2 + " --rules " + kRules + " --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["graphs"][0]["name"], pt2);
  EXPECT_GT(j["summary"]["nodes"].get<int>(), 0);
  EXPECT_EQ(j["nodes"].size(), j["summary"]["nodes"].get<std::size_t>());
}

TEST(CoverageCli, WritesAtomicallyAndPicksTheFormatFromTheExtension) {
  std::string dir = temp("outdir");
  fs::create_directories(dir);
  std::string out = dir + "/report.xml";
  std::ofstream(out) << "stale contents that are much longer than nothing at all";
  CliRun r = runGraft("coverage " + kGraphB + " --rules " + kRules + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::string x = slurp(out);
  EXPECT_EQ(x.rfind("<?xml", 0), 0u) << x;
  EXPECT_EQ(xmlProblem(x), "") << x;
  EXPECT_NE(x.find("failures=\"1\""), std::string::npos);
  // Nothing else (no temporary) is left in the directory.
  std::size_t entries = std::distance(fs::directory_iterator(dir), fs::directory_iterator());
  EXPECT_EQ(entries, 1u);

  // A failed write leaves the old file alone and says where.
  std::string md = dir + "/report.md";
  std::ofstream(md) << "old";
  CliRun bad = runGraft("coverage " + dir + "/missing.gir --rules " + kRules + " -o " + md);
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(slurp(md), "old");
  CliRun noDir =
      runGraft("coverage " + kGraphB + " --rules " + kRules + " -o " + dir + "/no/such/dir/r.md");
  EXPECT_EQ(noDir.code, 1);
  EXPECT_FALSE(noDir.err.empty());
  fs::remove_all(dir);
}

// Without --rules, coverage runs the shipped library phase by phase, as
// graft compile does: the report lists the legalization rules too, and an
// export that needs legalization (f64 qparams, upstream's older torchao
// spelling) is fused exactly as compile fuses it.
TEST(CoverageCli, DefaultsToTheShippedRulesPhaseByPhase) {
  std::string pt2 = (kGolden / "exports/torchao_8da4w_f64_untied_bf16/model.pt2").string();
  CliRun r = runGraft("coverage " + pt2 + " --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, uint64_t> firedByPhase;
  for (const auto &rule : j["rules"])
    firedByPhase[rule["phase"].get<std::string>()] += rule["fired"].get<uint64_t>();
  EXPECT_GT(firedByPhase["legalize"], 0u) << r.out;
  EXPECT_GT(firedByPhase["fuse"], 0u) << r.out;
  // Legalize rules come first in the report, as they run first.
  ASSERT_FALSE(j["rules"].empty());
  EXPECT_EQ(j["rules"][0]["phase"], "legalize");

  // The same fusions as graft compile, which reports the rules it fired.
  std::string prog = temp("coverage_default.vkprog");
  CliRun c = runGraft("compile " + pt2 + " -o " + prog + " --json");
  ASSERT_EQ(c.code, 0) << c.err;
  auto cj = nlohmann::json::parse(c.out);
  std::map<std::string, uint64_t> compiled, covered;
  for (const auto &[rule, n] : cj["rules_fired"].items())
    compiled[rule] = n.get<uint64_t>();
  for (const auto &rule : j["rules"])
    if (rule["fired"].get<uint64_t>())
      covered[rule["name"].get<std::string>()] += rule["fired"].get<uint64_t>();
  EXPECT_EQ(covered, compiled);
  std::remove(prog.c_str());
}

TEST(CoverageCli, UserErrorsExitOne) {
  CliRun noGraph = runGraft("coverage --rules " + kRules);
  EXPECT_EQ(noGraph.code, 1);

  CliRun badFormat = runGraft("coverage " + kGraphB + " --rules " + kRules + " --format yaml");
  EXPECT_EQ(badFormat.code, 1);
  EXPECT_NE(badFormat.err.find("unknown coverage report format 'yaml'"), std::string::npos)
      << badFormat.err;

  CliRun badExt =
      runGraft("coverage " + kGraphB + " --rules " + kRules + " -o " + temp("report.txt"));
  EXPECT_EQ(badExt.code, 1);
  EXPECT_NE(badExt.err.find("extension"), std::string::npos) << badExt.err;

  CliRun missing = runGraft("coverage /nonexistent/g.gir --rules " + kRules);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/g.gir"), std::string::npos) << missing.err;

  // A rule file with an error: located at the .pat text.
  std::string pat = temp("bad.pat");
  std::ofstream(pat)
      << "rule broken {\n  match { %y = aten.nosuchop($x) }\n  rewrite { %y = $x }\n}\n";
  CliRun badRules = runGraft("coverage " + kGraphB + " --rules " + pat);
  EXPECT_EQ(badRules.code, 1);
  EXPECT_NE(badRules.err.find(pat + ":2:"), std::string::npos) << badRules.err;
  std::remove(pat.c_str());

  // A graph with a syntax error: located in the .gir.
  std::string gir = temp("bad.gir");
  std::ofstream(gir) << "graph @g {\n  input %x : f32[2\n}\n";
  CliRun badGraph = runGraft("coverage " + gir + " --rules " + kRules);
  EXPECT_EQ(badGraph.code, 1);
  EXPECT_NE(badGraph.err.find(gir + ":"), std::string::npos) << badGraph.err;
  std::remove(gir.c_str());
}

//===-- Fates the golden cases do not reach -------------------------------===//

TEST(CoverageModel, MatchLeftByTheRewriteLimitIsRefused) {
  rewrite::CompiledRules rules = compileRules("rewrite/mm_alternatives/rules.pat");
  auto graph = parseGraph(slurp(kGolden / "rewrite/mm_alternatives/input.gir"), "mm.gir");
  ASSERT_TRUE(graph.ok());
  rewrite::CoverageReport r = rewrite::emptyCoverage(rules);
  rewrite::RewriteOptions options;
  options.maxRewrites = 1;
  ASSERT_TRUE(rewrite::addCoverage(r, "mm.gir", **graph, rules, options).ok());
  EXPECT_EQ(r.graphs[0].stopReason, "rewrite limit");
  EXPECT_EQ(r.matches.size(), 1u);
  // The mm that did not get its turn matches, but was not rewritten.
  EXPECT_EQ(node(r, "y1").fate, rewrite::NodeFate::Refused);
  ASSERT_FALSE(node(r, "y1").reasons.empty());
  EXPECT_NE(
      node(r, "y1").reasons[0].find("matched but was not applied (run stopped: rewrite limit)"),
      std::string::npos)
      << node(r, "y1").reasons[0];
  EXPECT_EQ(node(r, "y2").fate, rewrite::NodeFate::Fused);
}

TEST(CoverageModel, PatternOpWithoutCandidateRootIsNotReached) {
  rewrite::CompiledRules rules = compileRules("rewrite/use_outside_blocks/rules.pat");
  auto graph = parseGraph(R"(graph @g {
  param %w : i8[8, 64] fqn="w" = random(seed=1, min=-8, max=7)
  param %s : f32[8, 2] fqn="s" = random(seed=2, min=0.01, max=0.1)
  %dq : f32[8, 64] = torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7, output_dtype=f32)
  %sum : f32[64] = aten.sum.dim_IntList(%dq, [0])
  output %sum
}
)",
                          "g.gir");
  ASSERT_TRUE(graph.ok()) << render(graph.diags());
  rewrite::CoverageReport r = rewrite::emptyCoverage(rules);
  ASSERT_TRUE(rewrite::addCoverage(r, "g.gir", **graph, rules).ok());
  EXPECT_EQ(r.rules[0].candidates, 0u);
  EXPECT_EQ(node(r, "dq").fate, rewrite::NodeFate::NotReached);
  EXPECT_EQ(node(r, "sum").fate, rewrite::NodeFate::NoRule);
  // JUnit: a rule without a single candidate fails too, and says so.
  std::string x = formatCoverage(r, CoverageFormat::JUnit);
  EXPECT_NE(x.find("message=\"never fired: no candidate root in 1 graph(s)\""), std::string::npos)
      << x;
}
