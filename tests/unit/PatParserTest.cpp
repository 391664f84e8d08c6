//===- PatParserTest.cpp - .pat golden files, formatting, robustness ------===//
//
// Golden tests of the pattern DSL front end (dsl/):
//  * tests/golden/pat/ok/*.pat check clean (no error, no warning), load, and
//    are already canonical (formatPat(x) == x);
//  * tests/golden/pat/errors/*.pat carry `// expect: [L:C: ]SEVERITY: text`
//    lines; each must match a diagnostic (or note) of `graft check`;
//  * tests/golden/pat/fmt/NAME.in.pat formats to NAME.out.pat;
//  * formatting is idempotent and keeps the rules' meaning on every golden
//    file; truncated and mutated inputs never crash and fail with located
//    diagnostics.
//
//===----------------------------------------------------------------------===//
#include "graft/dsl/Pat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace graft::dsl {
namespace {

namespace fs = std::filesystem;

fs::path patDir(const std::string &sub) {
  return fs::path(GRAFT_TEST_DATA_DIR) / "golden" / "pat" / sub;
}

std::vector<fs::path> patFiles(const fs::path &dir, const std::string &suffix = ".pat") {
  std::vector<fs::path> out;
  for (const auto &e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string readText(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Messages of every diagnostic and note, positions dropped: what a file
/// "means" to the checker, for comparing a file with its formatted form.
std::vector<std::string> messages(const std::vector<Diagnostic> &diags) {
  std::vector<std::string> out;
  for (const Diagnostic &d : diags) {
    out.push_back(std::string(toString(d.severity)) + ": " + d.message);
    for (const DiagNote &n : d.notes)
      out.push_back("note: " + n.message);
  }
  return out;
}

TEST(PatGolden, OkFilesCheckCleanAndAreCanonical) {
  auto files = patFiles(patDir("ok"));
  ASSERT_GE(files.size(), 6u);
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.filename().string());
    SourceManager sm;
    std::vector<Diagnostic> diags = checkPatFile(file.string(), &sm);
    EXPECT_TRUE(diags.empty()) << render(diags, &sm);
    auto set = parsePatFile(file.string());
    ASSERT_TRUE(set.ok()) << render(set.diags(), &sm);
    EXPECT_FALSE(set->rules.empty());
    EXPECT_TRUE(set->warnings.empty());
    std::string text = readText(file);
    auto formatted = formatPat(text, file.string());
    ASSERT_TRUE(formatted.ok()) << render(formatted.diags(), &sm);
    EXPECT_EQ(*formatted, text) << "not canonical; graft fmt gives:\n" << *formatted;
  }
}

struct Expect {
  std::optional<uint32_t> line, column;
  std::string severity;
  std::string text;
};

std::vector<Expect> readExpectations(const std::string &text) {
  static const std::regex re(R"(^// expect: (?:(\d+):(\d+): )?(error|warning|note): (.*)$)");
  std::vector<Expect> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, re))
      continue;
    Expect e;
    if (m[1].matched) {
      e.line = static_cast<uint32_t>(std::stoul(m[1]));
      e.column = static_cast<uint32_t>(std::stoul(m[2]));
    }
    e.severity = m[3];
    e.text = m[4];
    out.push_back(e);
  }
  return out;
}

bool matches(const Expect &e, Severity severity, const std::string &message,
             const std::optional<SourceRange> &range) {
  if (e.severity != toString(severity) || message.find(e.text) == std::string::npos)
    return false;
  if (!e.line)
    return true;
  return range && range->begin.line == *e.line && range->begin.column == *e.column;
}

TEST(PatGolden, ErrorFilesReportTheExpectedDiagnostics) {
  auto files = patFiles(patDir("errors"));
  ASSERT_GE(files.size(), 20u);
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.filename().string());
    std::string text = readText(file);
    std::vector<Expect> expects = readExpectations(text);
    ASSERT_FALSE(expects.empty()) << "needs '// expect: L:C: error: message' lines";
    SourceManager sm;
    std::vector<Diagnostic> diags = checkPatFile(file.string(), &sm);
    std::string rendered = render(diags, &sm);
    bool wantsError = std::any_of(expects.begin(), expects.end(),
                                  [](const Expect &e) { return e.severity == "error"; });
    // A file expecting an error must fail to load; one expecting only a
    // warning loads, with the warning attached.
    auto set = parsePatFile(file.string());
    EXPECT_EQ(set.ok(), !wantsError) << rendered;
    for (const Expect &e : expects) {
      bool found = false;
      for (const Diagnostic &d : diags) {
        found |= matches(e, d.severity, d.message, d.range);
        for (const DiagNote &n : d.notes)
          found |= matches(e, Severity::Note, n.message, n.range);
      }
      EXPECT_TRUE(found) << "expected "
                         << (e.line
                                 ? std::to_string(*e.line) + ":" + std::to_string(*e.column) + ": "
                                 : "")
                         << e.severity << ": " << e.text << "\ngot:\n"
                         << rendered;
    }
    // Every located diagnostic renders clang-style with its line and a caret.
    for (const Diagnostic &d : diags) {
      if (d.range && d.range->begin.valid()) {
        EXPECT_NE(render(d, &sm).find("^"), std::string::npos) << render(d, &sm);
      }
    }
  }
}

TEST(PatGolden, FormatterPairs) {
  auto inputs = patFiles(patDir("fmt"), ".in.pat");
  ASSERT_FALSE(inputs.empty());
  for (const fs::path &in : inputs) {
    SCOPED_TRACE(in.filename().string());
    std::string name = in.filename().string();
    fs::path out = in.parent_path() / (name.substr(0, name.size() - 7) + ".out.pat");
    auto formatted = formatPat(readText(in), in.string());
    ASSERT_TRUE(formatted.ok()) << render(formatted.diags());
    EXPECT_EQ(*formatted, readText(out));
  }
}

/// Every golden file that parses: fmt is idempotent, and the formatted file
/// means the same (same diagnostics, same rules).
TEST(PatGolden, FormattingIsIdempotentAndKeepsMeaning) {
  std::vector<fs::path> files;
  for (const char *sub : {"ok", "errors", "fmt", "imports"})
    for (const fs::path &f : patFiles(patDir(sub)))
      files.push_back(f);
  int formattedCount = 0;
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.string());
    std::string text = readText(file);
    auto once = formatPat(text, file.string());
    if (!once.ok())
      continue; // a syntax-error golden file
    ++formattedCount;
    auto twice = formatPat(*once, file.string());
    ASSERT_TRUE(twice.ok()) << render(twice.diags());
    EXPECT_EQ(*twice, *once);
    // The checker sees the same problems in the original and formatted text
    // (imports resolve against the same directory).
    if (file.parent_path().filename() == "imports")
      continue;
    EXPECT_EQ(messages(checkPat(text, file.string())), messages(checkPat(*once, file.string())));
    auto a = parsePat(text, file.string());
    auto b = parsePat(*once, file.string());
    ASSERT_EQ(a.ok(), b.ok());
    if (a.ok()) {
      ASSERT_EQ(a->rules.size(), b->rules.size());
      for (std::size_t i = 0; i < a->rules.size(); ++i) {
        EXPECT_EQ(a->rules[i].name, b->rules[i].name);
        EXPECT_EQ(a->rules[i].nodes.size(), b->rules[i].nodes.size());
        EXPECT_EQ(a->rules[i].where.size(), b->rules[i].where.size());
        EXPECT_EQ(a->rules[i].rewrite.size(), b->rules[i].rewrite.size());
        EXPECT_EQ(a->rules[i].doc, b->rules[i].doc);
      }
    }
  }
  EXPECT_GE(formattedCount, 50);
}

//===----------------------------------------------------------------------===//
// Robustness: never crash, always a located diagnostic
//===----------------------------------------------------------------------===//

void expectNoCrash(const std::string &text) {
  auto set = parsePat(text, "fuzz.pat");
  if (!set.ok()) {
    for (const Diagnostic &d : set.diags()) {
      if (d.severity == Severity::Error) {
        EXPECT_TRUE(d.range && d.range->begin.valid()) << render(d) << "\nin:\n" << text;
      }
    }
  }
  auto formatted = formatPat(text, "fuzz.pat");
  if (formatted.ok()) {
    auto again = formatPat(*formatted, "fuzz.pat");
    ASSERT_TRUE(again.ok()) << "formatted text does not parse:\n" << *formatted;
    EXPECT_EQ(*again, *formatted);
  }
}

TEST(PatRobustness, EveryTruncationOfTheGoldenFiles) {
  for (const char *sub : {"ok", "fmt"}) {
    for (const fs::path &file : patFiles(patDir(sub))) {
      SCOPED_TRACE(file.string());
      std::string text = readText(file);
      // Every byte position in the first 600 bytes, then every 7th.
      for (std::size_t n = 0; n <= text.size(); n += n < 600 ? 1 : 7)
        expectNoCrash(text.substr(0, n));
    }
  }
}

TEST(PatRobustness, MutatedInputs) {
  std::string base = readText(patDir("ok") / "torchao_embedding.pat");
  const std::string junk = "%$_()[]{}|?:;,.=<>!-+*/\"\\\n 0aZ";
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  for (int i = 0; i < 1500; ++i) {
    std::string text = base;
    int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) {
      std::size_t pos = next() % (text.size() + 1);
      switch (next() % 3) {
      case 0:
        text.insert(pos, 1, junk[next() % junk.size()]);
        break;
      case 1:
        if (pos < text.size())
          text.erase(pos, 1);
        break;
      default:
        if (pos < text.size())
          text[pos] = junk[next() % junk.size()];
      }
    }
    expectNoCrash(text);
  }
}

TEST(PatRobustness, HostileInputs) {
  expectNoCrash("");
  expectNoCrash(std::string(100000, '['));
  expectNoCrash("rule r { match { %y = aten.relu(" + std::string(5000, '[') + ") } }");
  expectNoCrash("rule r { where { " + std::string(5000, '(') + " } }");
  expectNoCrash("rule r { where { " + std::string(5000, '-') + "1 } }");
  expectNoCrash("rule r { where { " + std::string(3000, 'n') + std::string(" not ") + " } }");
  expectNoCrash(std::string("rule r {\0}", 10));
  expectNoCrash("rule r { match { %y = aten.relu($x : i8[99999999999999999999999]) } }");
  expectNoCrash("rule r { match { %y = aten.relu($x) } where { 99999999999999999999 > 1 } "
                "rewrite { %y = aten.relu($x) } }");
  expectNoCrash("rule r { match { %y = aten.relu($x) } rewrite { %y = aten.relu($x) } "
                "example { x = 0..99999999999 step 1 } }");
  // Nesting beyond the limit is a located error, not a stack overflow.
  auto deep =
      parsePat("rule r { where { " + std::string(200, '(') + "1" + std::string(200, ')') + " } }",
               "deep.pat");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.diags().front().message.find("nesting"), std::string::npos);
}

} // namespace
} // namespace graft::dsl
