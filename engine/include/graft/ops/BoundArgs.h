//===- BoundArgs.h - A node's arguments matched to its schema ---*- C++ -*-===//
//
// Binds positional and keyword arguments to schema parameters, fills
// defaults the exporter omitted, and type-checks each argument. The verifier,
// shape inference and the interpreter all read arguments through this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/ops/OpSchema.h"
#include "graft/support/Expected.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graft {

class Node;

class BoundArgs {
public:
  /// Binds; failures name `nodeName` and the offending argument (unknown
  /// keyword, too many positionals, missing required argument, wrong type).
  static Expected<BoundArgs> bind(const OpSchema &schema, const std::vector<Argument> &args,
                                  const std::vector<std::pair<std::string, Argument>> &kwargs,
                                  std::string_view nodeName);
  static Expected<BoundArgs> bind(const Node &node);

  const OpSchema &schema() const { return *schema_; }
  std::size_t size() const { return values_.size(); }
  /// Argument i of the schema (the default when not provided).
  const Argument &at(std::size_t i) const { return values_[i]; }
  /// Argument by schema name; asserts the name exists.
  const Argument &get(std::string_view name) const;
  /// Whether argument i was written by the caller (not defaulted).
  bool provided(std::size_t i) const { return provided_[i]; }

private:
  const OpSchema *schema_ = nullptr;
  std::vector<Argument> values_;
  std::vector<bool> provided_;
};

/// Whether an argument is acceptable for a schema type (structural check;
/// tensor arguments must reference Tensor values, SymInt accepts ints or
/// SymInt values, ...). On mismatch, `why` explains.
bool argumentMatchesType(const Argument &arg, const SchemaType &type, std::string *why = nullptr);

} // namespace graft
