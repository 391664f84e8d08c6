//===- Verifier.h - Structural and semantic graph checks ---*- C++ -*-===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/support/Diagnostic.h"

#include <vector>

namespace graft {

struct VerifyOptions {
  /// Re-infer every registered node's results and compare with the declared
  /// prototypes.
  bool checkInference = true;
};

/// Checks use-def consistency, topological order, dangling references,
/// per-schema arity and types, and that inferred prototypes agree with
/// declared ones. Returns one diagnostic per violation, each naming the node
/// (or input/output) and the reason; empty means the graph is valid.
std::vector<Diagnostic> verify(const Graph &graph, const VerifyOptions &options = {});

} // namespace graft
