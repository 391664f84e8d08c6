//===- RealExportsTest.cpp - Archives spelled as upstream writes them ------===//
//
// Every case of tests/golden/exports/<case>/ (README.md there): an archive
// spelled the way torch.export + torchao / PT2E write it, with the upstream
// source of each spelling in its case.txt. Compiled with the shipped rules it
// must be one partition with no CPU node, with the listed fused ops and rule
// counts and no dequantize left, and the program must match the reference
// interpreter on the ORIGINAL archive on the Vulkan device.
//
//===----------------------------------------------------------------------===//
#include "graft/Compiler.h"

#include "graft/interp/Interpreter.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/support/FileIO.h"
#include "graft/vulkan/GraphExecutor.h"

#include "VulkanTestUtil.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

namespace graft {
namespace {

namespace fs = std::filesystem;

struct ExportCase {
  std::string name;
  fs::path dir;
  fs::path model;
  std::map<std::string, uint64_t> ops, rules;
  /// Dequantizing ops the case expects left unfused on purpose, with their
  /// counts (`unfused: OP COUNT`): exempt from the all-fused check.
  std::map<std::string, uint64_t> unfused;
  double atol = 1e-4;
  std::vector<std::map<std::string, int64_t>> symbolRuns;
  std::vector<std::string> sources;
};

/// gtest prints a case by its name, not its bytes.
void PrintTo(const ExportCase &c, std::ostream *os) {
  *os << c.name;
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// `NAME COUNT`
std::pair<std::string, uint64_t> nameCount(const std::string &value) {
  std::istringstream in(value);
  std::string name;
  uint64_t count = 0;
  in >> name >> count;
  return {name, count};
}

ExportCase parseCase(const fs::path &dir) {
  ExportCase c;
  c.name = dir.filename().string();
  c.dir = dir;
  c.model = dir / "model.pt2";
  auto text = readFile((dir / "case.txt").string());
  EXPECT_TRUE(text.ok()) << dir;
  std::istringstream lines(text.ok() ? *text : std::string());
  for (std::string line; std::getline(lines, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#')
      continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) {
      ADD_FAILURE() << dir / "case.txt"
                    << ": not `key: value`: " << line;
      continue;
    }
    std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "source")
      c.sources.push_back(value);
    else if (key == "synth")
      continue; // regenerate.sh
    else if (key == "model")
      c.model = dir / value;
    else if (key == "op")
      c.ops.insert(nameCount(value));
    else if (key == "rule")
      c.rules.insert(nameCount(value));
    else if (key == "unfused")
      c.unfused.insert(nameCount(value));
    else if (key == "atol")
      c.atol = std::stod(value);
    else if (key == "sym") {
      std::map<std::string, int64_t> run;
      std::istringstream items(value);
      for (std::string item; std::getline(items, item, ',');) {
        auto eq = item.find('=');
        if (eq == std::string::npos) {
          ADD_FAILURE() << dir / "case.txt"
                        << ": sym wants NAME=VALUE: " << item;
          continue;
        }
        run[trim(item.substr(0, eq))] = std::stoll(item.substr(eq + 1));
      }
      c.symbolRuns.push_back(std::move(run));
    } else {
      ADD_FAILURE() << dir / "case.txt"
                    << ": unknown key '" << key << "'";
    }
  }
  if (c.symbolRuns.empty())
    c.symbolRuns.emplace_back();
  return c;
}

std::vector<ExportCase> allCases() {
  std::vector<ExportCase> out;
  fs::path root = fs::path(GRAFT_TEST_DATA_DIR) / "golden" / "exports";
  std::vector<fs::path> dirs;
  for (const auto &e : fs::directory_iterator(root))
    if (e.is_directory())
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path &d : dirs)
    out.push_back(parseCase(d));
  return out;
}

class RealExportsTest : public ::testing::TestWithParam<ExportCase> {};

TEST_P(RealExportsTest, OnePartitionFusedAndMatchesTheReference) {
  const ExportCase &c = GetParam();
  EXPECT_FALSE(c.sources.empty()) << c.name << ": cite the upstream source of the spelling";
  fs::path out = fs::temp_directory_path() /
                 ("graft-realexports-" + std::to_string(::getpid()) + "-" + c.name + ".vkprog");
  CompileOptions opts;
  opts.output = out.string();
  auto r = compile(c.model.string(), opts);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(r->summary.partitions, 1u) << r->summary.text();
  EXPECT_EQ(r->summary.cpuNodes, 0u) << r->summary.text();
  for (const auto &[rule, count] : c.rules) {
    auto it = r->summary.rulesFired.find(rule);
    EXPECT_EQ(it == r->summary.rulesFired.end() ? 0u : it->second, count) << "rule " << rule << "\n"
                                                                          << r->summary.text();
  }
  auto program = readProgram(opts.output);
  std::error_code ec;
  fs::remove(out, ec);
  ASSERT_TRUE(program.ok()) << render(program.diags());
  std::map<std::string, uint64_t> ops;
  for (const Node &n : program->graph->nodes()) {
    ++ops[n.target()];
    // Every quantization chain was fused: nothing dequantizes at run time
    // (but what the case names as unfused).
    if (!c.unfused.count(n.target())) {
      EXPECT_EQ(n.target().find("dequantize"), std::string::npos)
          << c.name << ": %" << n.name() << " (" << n.target() << ") was left unfused";
    }
  }
  for (const auto &[op, count] : c.ops)
    EXPECT_EQ(ops[op], count) << c.name << ": op " << op;
  for (const auto &[op, count] : c.unfused)
    EXPECT_EQ(ops[op], count) << c.name << ": unfused op " << op;

  GRAFT_REQUIRE_VULKAN();
  auto original = load(c.model.string());
  ASSERT_TRUE(original.ok()) << render(original.diags());
  for (const auto &symbols : c.symbolRuns) {
    std::string at;
    for (const auto &[k, v] : symbols)
      at += " " + k + "=" + std::to_string(v);
    // The plan as compiled: a node that cannot run on the device is an error.
    EXPECT_LE(vktest::deviceVsReference(*program->graph, *original->graph, symbols, 11), c.atol)
        << c.name << " at" << at;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, RealExportsTest, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<ExportCase> &info) {
                           return info.param.name;
                         });

} // namespace
} // namespace graft
