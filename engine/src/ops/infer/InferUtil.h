//===- InferUtil.h - Shared helpers for shape/dtype inference rules ---*- C++ -*-===//
//
// Private to engine/src/ops: the rule families (elementwise, shape, reduction,
// linear algebra, quantization) share result construction, dim arithmetic
// and torch's type-promotion machinery through these helpers. Each family
// registers its rules with an explicit function (never a static initializer:
// a static library would drop an object file nothing references).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ops/ShapeInference.h"

#include <optional>
#include <string>
#include <vector>

namespace graft::infer {

using Results = Expected<std::vector<InferredResult>>;

void registerElementwiseRules(InferenceRules &rules);
void registerShapeRules(InferenceRules &rules);
void registerReductionRules(InferenceRules &rules);
void registerLinalgRules(InferenceRules &rules);
void registerQuantRules(InferenceRules &rules);
void registerSymRules(InferenceRules &rules);
void registerKvCacheRules(InferenceRules &rules);

/// A tensor result with contiguous strides, on `like`'s device when given.
InferredResult tensorResult(DType dtype, Shape shape, const TensorProto *like = nullptr);
/// A one-result success.
Results one(InferredResult r);

/// "[1, s0, 4]" for messages.
std::string shapeStr(const Shape &shape);
/// False only when a and b are provably different (a - b is a nonzero constant).
bool mayBeEqual(const Dim &a, const Dim &b);
/// Whether a dim can be proven to equal 1 / to differ from 1 under the symbol ranges.
bool provablyOne(const Dim &d);
bool provablyNotOne(const Dim &d, const SymbolTable &symbols);

/// torch's result_type over tensor operands and wrapped Python scalars.
/// Tensors with rank > 0 outrank zero-dim tensors, which outrank scalars; a
/// lower class only matters when it is of a higher category (bool < integer
/// < floating), and a wrapped float scalar counts as the default dtype f32.
class TypePromotion {
public:
  void addTensor(const TensorProto &t);
  /// An Int/Float/Bool argument or a symbolic scalar Value.
  void addScalar(const Argument &a);
  std::optional<DType> result() const;

private:
  std::optional<DType> dimResult_, zeroResult_, wrappedResult_;
};

/// The dtype torch uses for float results of integer inputs (torch.get_default_dtype()).
inline constexpr DType kDefaultFloat = DType::F32;

/// A concrete int / bool argument. `int` and `bool` parameters also accept
/// symbolic values, which rules that need the value reject with a diagnostic.
Expected<int64_t> intArg(const InferContext &ctx, const char *name);
Expected<bool> boolArg(const InferContext &ctx, const char *name);
/// The normalized dim given by int argument `name`, checked against `rank`.
Expected<int64_t> dimArg(const InferContext &ctx, const char *name, int64_t rank);

/// Normalizes a dim argument against `rank`, or returns an error diagnostic.
Expected<int64_t> checkedDim(const InferContext &ctx, int64_t dim, int64_t rank,
                             const char *what = "dim");

} // namespace graft::infer
