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

#include "graft/support/SmallVector.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace graft {

class Dim {
public:
  using Terms = std::vector<std::pair<std::string, int64_t>>;

  Dim() = default;
  Dim(int64_t value) : constant_(value) {} // NOLINT: implicit on purpose
  Dim(const Dim &other) : constant_(other.constant_), sym_(other.sym_) {
    if (sym_)
      sym_->retain();
  }
  Dim(Dim &&other) noexcept : constant_(other.constant_), sym_(other.sym_) { other.sym_ = nullptr; }
  Dim &operator=(const Dim &other) {
    if (other.sym_)
      other.sym_->retain();
    if (sym_)
      sym_->release();
    constant_ = other.constant_;
    sym_ = other.sym_;
    return *this;
  }
  Dim &operator=(Dim &&other) noexcept {
    if (this != &other) {
      if (sym_)
        sym_->release();
      constant_ = other.constant_;
      sym_ = other.sym_;
      other.sym_ = nullptr;
    }
    return *this;
  }
  ~Dim() {
    if (sym_)
      sym_->release();
  }

  static Dim symbol(std::string name);
  /// A non-linear expression kept as text (e.g. "s0*s1").
  static Dim opaque(std::string expr);

  bool isConstant() const { return sym_ == nullptr; }
  bool isOpaque() const { return sym_ && !sym_->opaque.empty(); }
  /// A single symbol with coefficient 1 and no offset.
  bool isSymbol() const;
  int64_t constant() const { return constant_; } ///< value when isConstant()
  const Terms &terms() const;
  const std::string &opaqueExpr() const;
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
  bool operator==(const Dim &other) const {
    return constant_ == other.constant_ && (sym_ == other.sym_ || symbolicEqual(other));
  }
  bool operator!=(const Dim &other) const { return !(*this == other); }

  /// Canonical text: "4", "s0", "2*s0+1", "s0+s1", or the opaque expression.
  std::string str() const;

private:
  /// The symbolic part, immutable once built and shared by copies. Most dims
  /// of a real graph are constants, which carry none: a Dim is 16 bytes and
  /// copying a shape of constants copies integers (shapes are copied into
  /// every new value and provenance entry the rewrite driver makes).
  struct Symbolic {
    Terms terms;        ///< sorted by name, nonzero coefficients
    std::string opaque; ///< non-empty: an opaque expression (terms empty)
    mutable std::atomic<uint32_t> refs{1};
    void retain() const { refs.fetch_add(1, std::memory_order_relaxed); }
    void release() const {
      if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
        delete this;
    }
  };
  /// A constant when `terms` is empty, else a linear expression.
  static Dim linear(int64_t constant, Terms terms);
  bool symbolicEqual(const Dim &other) const;

  int64_t constant_ = 0;
  const Symbolic *sym_ = nullptr; ///< null: a constant
};

/// Up to four dims in place (no heap allocation for the shapes of nearly
/// every tensor); a Shape in every other respect.
using Shape = SmallVector<Dim, 4>;

/// A Shape that is one pointer when empty, for TensorProto::strides (empty,
/// i.e. contiguous, in nearly every prototype: an inline Shape there was 80
/// of a prototype's bytes). Reads as a const Shape&; the few edits a
/// strides list needs (assign, push_back, clear) are here too.
class CompactShape {
public:
  CompactShape() noexcept = default;
  CompactShape(Shape s) { *this = std::move(s); }
  CompactShape(std::initializer_list<Dim> dims) { *this = Shape(dims); }
  CompactShape(const CompactShape &o) : p_(o.p_ ? std::make_unique<Shape>(*o.p_) : nullptr) {}
  CompactShape(CompactShape &&) noexcept = default;
  CompactShape &operator=(const CompactShape &o) {
    if (this != &o)
      *this = o.shape();
    return *this;
  }
  CompactShape &operator=(CompactShape &&) noexcept = default;
  CompactShape &operator=(std::initializer_list<Dim> dims) { return *this = Shape(dims); }
  CompactShape &operator=(Shape s) {
    if (s.empty())
      p_.reset();
    else if (p_)
      *p_ = std::move(s);
    else
      p_ = std::make_unique<Shape>(std::move(s));
    return *this;
  }

  const Shape &shape() const { return p_ ? *p_ : emptyShape(); }
  operator const Shape &() const { return shape(); }
  bool empty() const { return !p_; }
  std::size_t size() const { return p_ ? p_->size() : 0; }
  const Dim &operator[](std::size_t i) const { return (*p_)[i]; }
  Shape::const_iterator begin() const { return shape().begin(); }
  Shape::const_iterator end() const { return shape().end(); }
  void push_back(Dim d) {
    if (!p_)
      p_ = std::make_unique<Shape>();
    p_->push_back(std::move(d));
  }
  void clear() { p_.reset(); }

  friend bool operator==(const CompactShape &a, const CompactShape &b) {
    return a.shape() == b.shape();
  }
  friend bool operator==(const CompactShape &a, const Shape &b) { return a.shape() == b; }

private:
  static const Shape &emptyShape();
  std::unique_ptr<Shape> p_; ///< null: empty (never an empty Shape)
};

std::string str(const Shape &shape); ///< "[1, s0, 128]"
/// Product of dims (a Dim, symbolic when any factor is).
Dim numel(const Shape &shape);
/// Concrete sizes if every dim is constant.
std::optional<std::vector<int64_t>> concreteSizes(const Shape &shape);
/// Row-major contiguous strides for a shape.
Shape contiguousStrides(const Shape &shape);
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &sizes);
/// ATen's computeStride: the strides that view a tensor of `sizes` /
/// `strides` as `newSizes` (same element count) without copying, or nullopt
/// when the elements are not laid out so that a view can express it (then
/// reshape copies).
std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t> &sizes,
                                                const std::vector<int64_t> &strides,
                                                const std::vector<int64_t> &newSizes);

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
