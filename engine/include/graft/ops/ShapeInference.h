//===- ShapeInference.h - Result prototypes from argument prototypes ---*- C++ -*-===//
//
// Each op declares (in YAML) the name of an inference rule; rules are C++
// functions registered by name. A rule sees the bound arguments (with the
// prototypes of tensor arguments) and returns the result kinds and protos.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/ops/BoundArgs.h"
#include "graft/support/Expected.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graft {

struct InferredResult {
  ValueKind kind = ValueKind::Tensor;
  TensorProto proto; ///< meaningful for tensors
};

struct InferContext {
  const BoundArgs &args;
  const SymbolTable &symbols;
  std::string_view nodeName;

  /// Prototype of tensor argument `name` (asserts it is a tensor value).
  const TensorProto &tensor(std::string_view name) const;
  /// Prototype of an optional tensor argument, or null when None.
  const TensorProto *optionalTensor(std::string_view name) const;
  /// An error diagnostic "node %x (aten.foo.default): <message>".
  Diagnostic error(const std::string &message) const;

  /// Argument by name (None when the matched schema lacks it, see
  /// BoundArgs::has for legacy signatures).
  const Argument &arg(std::string_view name) const;
  /// An Int or SymInt argument as a Dim (see dimOfSymInt); nullopt otherwise.
  std::optional<Dim> dim(std::string_view name) const;
  /// An int/SymInt list argument (a single Int counts as a one-element list).
  std::optional<Shape> dims(std::string_view name) const;
  /// A ScalarType argument, nullopt when None.
  std::optional<DType> dtype(std::string_view name) const;
};

using InferFn = std::function<Expected<std::vector<InferredResult>>(const InferContext &)>;

/// Named inference rules ("same_as_input", "broadcast", "linear", ...).
class InferenceRules {
public:
  static const InferenceRules &builtin();
  void add(std::string name, InferFn fn);
  const InferFn *find(std::string_view name) const;
  std::vector<std::string> names() const;

private:
  std::vector<std::pair<std::string, InferFn>> rules_;
};

/// Infers the results of `node` from its arguments' prototypes. Opaque
/// (unregistered) ops and ops without a rule fail with a diagnostic.
Expected<std::vector<InferredResult>> inferResults(const Node &node, const SymbolTable &symbols);

/// The Dim a SymInt value stands for: `aten.sym_size.int(x, d)` results are
/// x's size d (resolved through chains of sym_size); the results of Python
/// sym ops (`operator.add/sub/mul/floordiv/mod/neg`, `torch.sym_max/min`)
/// are that expression over their operands' Dims (`_local_scalar_dense + 8`);
/// any other SymInt value (a graph input, an unbacked `_local_scalar_dense`
/// result) is the symbol named after the value itself.
Dim dimOfSymInt(const Value &value);
/// Facts `f <= 0` that runtime assertions establish about a SymInt value:
/// each comparison user (`operator.le/lt/ge/gt` with `value` on either side)
/// whose SymBool result an `aten._assert_scalar` checks. torch.export writes
/// the relations its symbolic shapes could not fold into a single symbol's
/// range this way (e.g. narrow's `u0 + s0 <= 64`); shape inference uses them
/// to bound slices.
std::vector<Dim> assertedNonPositive(const Value &value);
/// An Int argument or a SymInt value argument as a Dim.
std::optional<Dim> argumentDim(const Argument &arg);

/// Index of a possibly negative dim in a tensor of rank `rank`, or -1.
int64_t normalizeDim(int64_t dim, int64_t rank);
/// torch broadcasting of two shapes; nullopt if incompatible.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

} // namespace graft
