//===- Shape.cpp - Linear symbolic dimensions -----------------------------===//
#include "graft/ir/Shape.h"

#include <algorithm>
#include <sstream>

namespace graft {

Dim Dim::linear(int64_t constant, Terms terms) {
  Dim d(constant);
  if (!terms.empty()) {
    auto *sym = new Symbolic;
    sym->terms = std::move(terms);
    d.sym_ = sym;
  }
  return d;
}

Dim Dim::symbol(std::string name) {
  Terms t;
  t.emplace_back(std::move(name), 1);
  return linear(0, std::move(t));
}

Dim Dim::opaque(std::string expr) {
  Dim d;
  if (expr.empty())
    return d; // no expression: the constant 0, as before
  auto *sym = new Symbolic;
  sym->opaque = std::move(expr);
  d.sym_ = sym;
  return d;
}

const Dim::Terms &Dim::terms() const {
  static const Terms kNone;
  return sym_ ? sym_->terms : kNone;
}

const std::string &Dim::opaqueExpr() const {
  static const std::string kNone;
  return sym_ ? sym_->opaque : kNone;
}

bool Dim::isSymbol() const {
  return sym_ && sym_->opaque.empty() && constant_ == 0 && sym_->terms.size() == 1 &&
         sym_->terms[0].second == 1;
}

bool Dim::symbolicEqual(const Dim &other) const {
  if (!sym_ || !other.sym_)
    return false; // exactly one is a constant (both null compares equal pointers)
  return sym_->terms == other.sym_->terms && sym_->opaque == other.sym_->opaque;
}

namespace {
void addTerms(Dim::Terms &into, const Dim::Terms &from, int64_t k) {
  for (const auto &[name, coeff] : from) {
    auto it = std::lower_bound(into.begin(), into.end(), name,
                               [](const auto &t, const std::string &n) { return t.first < n; });
    if (it != into.end() && it->first == name) {
      it->second += coeff * k;
      if (it->second == 0)
        into.erase(it);
    } else if (coeff * k != 0) {
      into.insert(it, {name, coeff * k});
    }
  }
}
std::string parenthesize(const Dim &d) {
  std::string s = d.str();
  if (d.isConstant() || d.isSymbol())
    return s;
  return "(" + s + ")";
}
} // namespace

Dim Dim::operator+(const Dim &other) const {
  if (isOpaque() || other.isOpaque())
    return opaque(str() + "+" + other.str());
  if (!other.sym_) { // shares the symbolic part
    Dim r = *this;
    r.constant_ += other.constant_;
    return r;
  }
  Terms t = terms();
  addTerms(t, other.terms(), 1);
  return linear(constant_ + other.constant_, std::move(t));
}

Dim Dim::operator-(const Dim &other) const {
  if (isOpaque() || other.isOpaque())
    return opaque(str() + "-" + parenthesize(other));
  if (!other.sym_) {
    Dim r = *this;
    r.constant_ -= other.constant_;
    return r;
  }
  Terms t = terms();
  addTerms(t, other.terms(), -1);
  return linear(constant_ - other.constant_, std::move(t));
}

Dim Dim::operator*(int64_t k) const {
  if (isOpaque())
    return k == 1 ? *this : opaque(std::to_string(k) + "*" + parenthesize(*this));
  if (!sym_)
    return Dim(constant_ * k);
  if (k == 1)
    return *this;
  Terms t;
  if (k != 0)
    for (const auto &[n, c] : sym_->terms)
      t.emplace_back(n, c * k);
  return linear(constant_ * k, std::move(t));
}

Dim Dim::operator*(const Dim &other) const {
  if (other.isConstant())
    return *this * other.constant_;
  if (isConstant())
    return other * constant_;
  return opaque(parenthesize(*this) + "*" + parenthesize(other));
}

Dim Dim::floorDiv(int64_t k) const {
  if (k == 1)
    return *this;
  if (isConstant() && k != 0) {
    int64_t q = constant_ / k;
    if ((constant_ % k != 0) && ((constant_ < 0) != (k < 0)))
      --q;
    return Dim(q);
  }
  const Terms &ts = terms();
  if (!isOpaque() && k != 0 && constant_ % k == 0 &&
      std::all_of(ts.begin(), ts.end(), [&](const auto &t) { return t.second % k == 0; })) {
    Terms t;
    for (const auto &[n, c] : ts)
      t.emplace_back(n, c / k);
    return linear(constant_ / k, std::move(t));
  }
  return opaque(parenthesize(*this) + "//" + std::to_string(k));
}

std::string Dim::str() const {
  if (isOpaque())
    return sym_->opaque;
  if (!sym_)
    return std::to_string(constant_);
  std::ostringstream os;
  bool first = true;
  for (const auto &[n, c] : sym_->terms) {
    if (c < 0)
      os << '-';
    else if (!first)
      os << '+';
    int64_t a = c < 0 ? -c : c;
    if (a != 1)
      os << a << '*';
    os << n;
    first = false;
  }
  if (constant_ > 0)
    os << '+' << constant_;
  else if (constant_ < 0)
    os << '-' << -constant_;
  return os.str();
}

std::string str(const Shape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += shape[i].str();
  }
  return s + "]";
}

Dim numel(const Shape &shape) {
  Dim n = 1;
  for (const Dim &d : shape)
    n = n * d;
  return n;
}

std::optional<std::vector<int64_t>> concreteSizes(const Shape &shape) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const Dim &d : shape) {
    if (!d.isConstant())
      return std::nullopt;
    out.push_back(d.constant());
  }
  return out;
}

const Shape &CompactShape::emptyShape() {
  static const Shape kEmpty{};
  return kEmpty;
}

Shape contiguousStrides(const Shape &shape) {
  Shape strides(shape.size());
  Dim acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = acc;
    acc = acc * shape[i];
  }
  return strides;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t acc = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= sizes[i];
  }
  return strides;
}

std::optional<std::vector<int64_t>> viewStrides(const std::vector<int64_t> &oldSizes,
                                                const std::vector<int64_t> &oldStrides,
                                                const std::vector<int64_t> &sizes) {
  std::vector<int64_t> newStrides(sizes.size(), 0);
  if (oldSizes.empty()) {
    std::fill(newStrides.begin(), newStrides.end(), 1);
    return newStrides;
  }
  int64_t numel = 1;
  for (int64_t s : oldSizes)
    numel *= s;
  if (numel == 0) {
    if (oldSizes == sizes)
      return oldStrides;
    return contiguousStrides(sizes);
  }
  int64_t viewD = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunkBaseStride = oldStrides.back();
  int64_t tensorNumel = 1, viewNumel = 1;
  for (int64_t tensorD = static_cast<int64_t>(oldSizes.size()) - 1; tensorD >= 0; tensorD--) {
    tensorNumel *= oldSizes[static_cast<std::size_t>(tensorD)];
    if (tensorD == 0 ||
        (oldSizes[static_cast<std::size_t>(tensorD - 1)] != 1 &&
         oldStrides[static_cast<std::size_t>(tensorD - 1)] != tensorNumel * chunkBaseStride)) {
      while (viewD >= 0 &&
             (viewNumel < tensorNumel || sizes[static_cast<std::size_t>(viewD)] == 1)) {
        newStrides[static_cast<std::size_t>(viewD)] = viewNumel * chunkBaseStride;
        viewNumel *= sizes[static_cast<std::size_t>(viewD)];
        viewD--;
      }
      if (viewNumel != tensorNumel)
        return std::nullopt;
      if (tensorD > 0) {
        chunkBaseStride = oldStrides[static_cast<std::size_t>(tensorD - 1)];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD != -1)
    return std::nullopt;
  return newStrides;
}

bool SymbolTable::declare(const std::string &name, SymbolRange range) {
  return symbols_.emplace(name, range).second;
}

const SymbolRange *SymbolTable::find(const std::string &name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : &it->second;
}

namespace {

/// `dim`'s largest value over the symbol ranges when `upper`, else its
/// smallest: each term takes the end of its symbol's range that pushes the
/// sum that way. nullopt for an opaque dim, an unknown symbol, or a term
/// that needs an unbounded maximum.
std::optional<int64_t> boundOf(const SymbolTable &symbols, const Dim &dim, bool upper) {
  if (dim.isOpaque())
    return std::nullopt;
  int64_t total = dim.constant();
  for (const auto &[n, c] : dim.terms()) {
    const SymbolRange *r = symbols.find(n);
    if (!r)
      return std::nullopt;
    if ((c > 0) == upper) {
      if (!r->max)
        return std::nullopt;
      total += c * *r->max;
    } else {
      total += c * r->min;
    }
  }
  return total;
}

} // namespace

std::optional<int64_t> SymbolTable::upperBound(const Dim &dim) const {
  return boundOf(*this, dim, true);
}

std::optional<int64_t> SymbolTable::lowerBound(const Dim &dim) const {
  return boundOf(*this, dim, false);
}

std::optional<int64_t> SymbolTable::evaluate(const Dim &dim,
                                             const std::map<std::string, int64_t> &values) const {
  if (dim.isOpaque())
    return std::nullopt;
  int64_t total = dim.constant();
  for (const auto &[n, c] : dim.terms()) {
    auto it = values.find(n);
    if (it == values.end())
      return std::nullopt;
    total += c * it->second;
  }
  return total;
}

} // namespace graft
