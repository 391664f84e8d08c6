//===- GoldenCases.h - Helpers shared by the golden-directory tests -------===//
//
// RewriteGoldenTest (tests/golden/rewrite) and RuleLibraryTest
// (tests/golden/rules) both run one test per case directory, compare
// against expected files that may not exist yet (GRAFT_UPDATE_GOLDEN=1),
// and run the graph before and after the rules on the same inputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace graft::test {

/// The case directories under tests/golden/<area>, sorted.
inline std::vector<std::filesystem::path> goldenCaseDirs(const std::string &area) {
  std::vector<std::filesystem::path> out;
  std::filesystem::path root = std::filesystem::path(GRAFT_TEST_DATA_DIR) / "golden" / area;
  for (const auto &e : std::filesystem::directory_iterator(root))
    if (e.is_directory())
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// The file's text, or "" when it does not exist (a case not generated yet).
inline std::string readOrEmpty(const std::filesystem::path &p) {
  auto t = readFile(p.string());
  return t ? *t : std::string();
}

/// Whether every constant input carries data (then the graph can be run).
inline bool allConstantsHaveData(const Graph &g) {
  for (const GraphInput &in : g.inputs())
    if (in.isConstant() && !in.hasData())
      return false;
  return true;
}

/// Runs `before` and `after` (its rewrite) on the same random inputs and
/// expects each output to agree: the same sizes and dtype, every element
/// within atol + rtol * |before's| (NaN in both agrees: a clamp with a NaN
/// bound). Both graphs' constants must carry data (allConstantsHaveData).
/// `where` names the case in failures.
inline void expectSameOutputs(const Graph &before, const Graph &after, double atol, double rtol,
                              const std::filesystem::path &where) {
  auto in = makeRandomInputs(before, 11);
  ASSERT_TRUE(in.ok()) << render(in.diags());
  auto a = Interpreter().run(before, *in);
  auto b = Interpreter().run(after, *in);
  ASSERT_TRUE(a.ok()) << render(a.diags());
  ASSERT_TRUE(b.ok()) << render(b.diags());
  ASSERT_EQ(a->size(), b->size());
  for (std::size_t o = 0; o < a->size(); ++o) {
    const Tensor &x = std::get<Tensor>((*a)[o]);
    const Tensor &y = std::get<Tensor>((*b)[o]);
    ASSERT_EQ(x.sizes(), y.sizes());
    ASSERT_EQ(x.dtype(), y.dtype()) << where << " output " << o;
    for (int64_t k = 0; k < x.numel(); ++k) {
      double p = x.getDouble(k), q = y.getDouble(k);
      if (std::isnan(p) && std::isnan(q))
        continue;
      ASSERT_LE(std::abs(p - q), atol + rtol * std::abs(p))
          << where << " output " << o << " element " << k;
    }
  }
}

} // namespace graft::test
