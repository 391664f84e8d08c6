//===- Shape.h - Concrete and symbolic dimensions ---*- C++ -*-===//
//
// A Dim is an integer-linear expression over named symbols:
//   c + k1*s1 + k2*s2 ...
// which covers what torch.export emits for sizes (s0, 2*s0, s0 + 1, s0 + s1).
// Anything non-linear (s0*s1, s0//2) is kept verbatim as an opaque expression
// so it round-trips, but arithmetic on it yields another opaque expression.
// Symbol ranges live in the Graph's SymbolTable (torch.export's
// range_constraints are program-level too).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace graft {

class Dim {
public:
  Dim() = default;
  Dim(int64_t value) : constant_(value) {} // NOLINT: implicit on purpose
  static Dim symbol(std::string name);
  /// A non-linear expression kept as text (e.g. "s0*s1").
  static Dim opaque(std::string expr);

  bool isConstant() const { return terms_.empty() && opaque_.empty(); }
  bool isOpaque() const { return !opaque_.empty(); }
  /// A single symbol with coefficient 1 and no offset.
  bool isSymbol() const;
  int64_t constant() const { return constant_; } ///< value when isConstant()
  const std::vector<std::pair<std::string, int64_t>> &terms() const { return terms_; }
  const std::string &opaqueExpr() const { return opaque_; }
  /// Concrete value if known.
  std::optional<int64_t> value() const {
    if (isConstant())
      return constant_;
    return std::nullopt;
  }

  Dim operator+(const Dim &other) const;
  Dim operator-(const Dim &other) const;
  Dim operator*(int64_t k) const;
  /// Product; linear when one side is constant, otherwise opaque.
  Dim operator*(const Dim &other) const;
  /// Exact division by a constant when every coefficient divides; opaque otherwise.
  Dim floorDiv(int64_t k) const;
  bool operator==(const Dim &other) const;
  bool operator!=(const Dim &other) const { return !(*this == other); }

  /// Canonical text: "4", "s0", "2*s0+1", "s0+s1", or the opaque expression.
  std::string str() const;

private:
  int64_t constant_ = 0;
  std::vector<std::pair<std::string, int64_t>> terms_; // sorted by name, nonzero coeffs
  std::string opaque_;
};

using Shape = std::vector<Dim>;

std::string str(const Shape &shape); ///< "[1, s0, 128]"
/// Product of dims (a Dim, symbolic when any factor is).
Dim numel(const Shape &shape);
/// Concrete sizes if every dim is constant.
std::optional<std::vector<int64_t>> concreteSizes(const Shape &shape);
/// Row-major contiguous strides for a shape.
Shape contiguousStrides(const Shape &shape);
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &sizes);

/// Inclusive value range of a symbol; max absent means unbounded.
struct SymbolRange {
  int64_t min = 0;
  std::optional<int64_t> max;
  bool operator==(const SymbolRange &) const = default;
};

/// Program-level symbol declarations (torch.export range_constraints).
class SymbolTable {
public:
  /// Declares a symbol; returns false if it was already declared.
  bool declare(const std::string &name, SymbolRange range);
  const SymbolRange *find(const std::string &name) const;
  const std::map<std::string, SymbolRange> &all() const { return symbols_; }
  /// Largest value a dim can take under the declared ranges (nullopt if unbounded/opaque).
  std::optional<int64_t> upperBound(const Dim &dim) const;
  /// Smallest value a dim can take under the declared ranges.
  std::optional<int64_t> lowerBound(const Dim &dim) const;
  /// Evaluates a dim given concrete symbol values.
  std::optional<int64_t> evaluate(const Dim &dim,
                                  const std::map<std::string, int64_t> &values) const;

private:
  std::map<std::string, SymbolRange> symbols_;
};

} // namespace graft
