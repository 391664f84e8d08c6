//===- RewriteTestUtil.h - Counting and fusing in rewrite tests -*- C++ -*-===//
//
// What the rule tests that fuse whole graphs share: how many nodes of an op
// a graph holds, and a fusion run that checks the graph after every rewrite.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/rewrite/Rewriter.h"

#include <gtest/gtest.h>

#include <string>

namespace graft::testing {

/// The nodes of `g` whose target is `target`.
inline std::size_t countNodes(const Graph &g, const std::string &target) {
  std::size_t n = 0;
  for (const Node &node : g.nodes())
    n += node.target() == target;
  return n;
}

/// Applies `rules` to `g` with the verifier after each rewrite (each leaves a
/// valid graph); fails the test on an error.
inline rewrite::RewriteResult fuseVerified(Graph &g, const rewrite::CompiledRules &rules) {
  rewrite::FqnRegistry fqns;
  rewrite::RewriteOptions options;
  options.verifyEach = true;
  auto r = rewrite::applyRules(g, rules, fqns, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
  return r.ok() ? std::move(*r) : rewrite::RewriteResult();
}

} // namespace graft::testing
