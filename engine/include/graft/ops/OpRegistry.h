//===- OpRegistry.h - The table of known ops ---*- C++ -*-===//
//
// Ops are data: YAML files in engine/ops/ (compiled into the library) declare
// each op's torch schema, properties, inference rule and doc string:
//
//   - schema: "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor"
//     infer: linear
//     doc: "input @ weight.T + bias"
//
// An op the registry does not know is not an error until someone executes it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ops/OpSchema.h"
#include "graft/support/Expected.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graft {

class Graph;
class Node;

class OpRegistry {
public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry &) = delete;
  OpRegistry &operator=(const OpRegistry &) = delete;

  /// The process-wide registry with graft's built-in op declarations.
  static const OpRegistry &builtin();

  /// Adds the ops declared in a YAML document. `sourceName` is used in
  /// diagnostics (file:line:col of the offending entry).
  Status loadYaml(std::string_view yamlText, const std::string &sourceName);
  Status loadYamlFile(const std::string &path);
  /// Registers one schema; an op registered twice is an error.
  Status add(OpSchema schema);

  /// Lookup by "ns.name.overload" (e.g. "aten.linear.default").
  const OpSchema *lookup(std::string_view qualifiedName) const;
  /// Every overload of "ns.name".
  std::vector<const OpSchema *> overloads(std::string_view nsAndName) const;
  std::vector<const OpSchema *> all() const;
  std::size_t size() const { return ops_.size(); }

  /// Resolves each node's schema pointer (null for unknown ops).
  void bind(Graph &graph) const;

private:
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> ops_;
};

/// Normalizes an op target spelling to "ns.name.overload": accepts
/// "torch.ops.aten.linear.default", "aten::linear.default", "aten.linear".
std::string canonicalTarget(std::string_view target);

} // namespace graft
