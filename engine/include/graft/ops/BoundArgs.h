//===- BoundArgs.h - A node's arguments matched to its schema ---*- C++ -*-===//
//
// Binds positional and keyword arguments to schema parameters, fills
// defaults the exporter omitted, and type-checks each argument. The verifier,
// shape inference and the interpreter all read arguments through this.
//
// Legacy signatures: an op may declare older schemas (OpSchema::legacySchemas,
// e.g. torchao's affine quant ops with the removed `str? zero_point_domain`).
// bind() tries the current schema first and then each legacy one in order;
// the first that binds wins. schema() is the schema that matched, so get()
// and has() use its argument names; legacyIndex() says which one it was. When
// none binds, the diagnostics are those of the current schema (the one users
// should write), with a note per legacy schema tried.
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
  /// Whether the matched schema has an argument `name` (e.g. a parameter that
  /// exists only in a legacy signature).
  bool has(std::string_view name) const { return schema_ && schema_->argIndex(name) >= 0; }
  /// Argument by name, or null when the matched schema has no such argument.
  const Argument *find(std::string_view name) const;
  /// -1 when the current schema matched, else the index into the op's
  /// OpSchema::legacySchemas of the legacy signature that matched.
  int legacyIndex() const { return legacyIndex_; }
  bool isLegacy() const { return legacyIndex_ >= 0; }
  /// Whether argument i was written by the caller (not defaulted).
  bool provided(std::size_t i) const { return provided_[i]; }
  /// The values the call passes to arguments it mutates in place
  /// (`Tensor(a!)`), in schema order.
  std::vector<Value *> mutatedValues() const;

private:
  const OpSchema *schema_ = nullptr;
  std::vector<Argument> values_;
  std::vector<bool> provided_;
  int legacyIndex_ = -1;
};

/// Whether an argument is acceptable for a schema type (structural check;
/// tensor arguments must reference Tensor values, SymInt accepts ints or
/// SymInt values, ...). On mismatch, `why` explains.
bool argumentMatchesType(const Argument &arg, const SchemaType &type, std::string *why = nullptr);

} // namespace graft
