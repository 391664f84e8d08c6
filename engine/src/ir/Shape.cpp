//===- Shape.cpp - Linear symbolic dimensions -----------------------------===//
#include "graft/ir/Shape.h"

#include <algorithm>
#include <sstream>

namespace graft {

Dim Dim::symbol(std::string name) {
  Dim d;
  d.terms_.emplace_back(std::move(name), 1);
  return d;
}

Dim Dim::opaque(std::string expr) {
  Dim d;
  d.opaque_ = std::move(expr);
  return d;
}

bool Dim::isSymbol() const {
  return opaque_.empty() && constant_ == 0 && terms_.size() == 1 && terms_[0].second == 1;
}

namespace {
void addTerms(std::vector<std::pair<std::string, int64_t>> &into,
              const std::vector<std::pair<std::string, int64_t>> &from, int64_t k) {
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
  Dim r = *this;
  r.constant_ += other.constant_;
  addTerms(r.terms_, other.terms_, 1);
  return r;
}

Dim Dim::operator-(const Dim &other) const {
  if (isOpaque() || other.isOpaque())
    return opaque(str() + "-" + parenthesize(other));
  Dim r = *this;
  r.constant_ -= other.constant_;
  addTerms(r.terms_, other.terms_, -1);
  return r;
}

Dim Dim::operator*(int64_t k) const {
  if (isOpaque())
    return k == 1 ? *this : opaque(std::to_string(k) + "*" + parenthesize(*this));
  Dim r;
  r.constant_ = constant_ * k;
  if (k != 0)
    for (const auto &[n, c] : terms_)
      r.terms_.emplace_back(n, c * k);
  return r;
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
  if (!isOpaque() && k != 0 && constant_ % k == 0 &&
      std::all_of(terms_.begin(), terms_.end(), [&](const auto &t) { return t.second % k == 0; })) {
    Dim r;
    r.constant_ = constant_ / k;
    for (const auto &[n, c] : terms_)
      r.terms_.emplace_back(n, c / k);
    return r;
  }
  return opaque(parenthesize(*this) + "//" + std::to_string(k));
}

bool Dim::operator==(const Dim &other) const {
  return constant_ == other.constant_ && terms_ == other.terms_ && opaque_ == other.opaque_;
}

std::string Dim::str() const {
  if (isOpaque())
    return opaque_;
  if (terms_.empty())
    return std::to_string(constant_);
  std::ostringstream os;
  bool first = true;
  for (const auto &[n, c] : terms_) {
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

bool SymbolTable::declare(const std::string &name, SymbolRange range) {
  return symbols_.emplace(name, range).second;
}

const SymbolRange *SymbolTable::find(const std::string &name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : &it->second;
}

std::optional<int64_t> SymbolTable::upperBound(const Dim &dim) const {
  if (dim.isOpaque())
    return std::nullopt;
  int64_t total = dim.constant();
  for (const auto &[n, c] : dim.terms()) {
    const SymbolRange *r = find(n);
    if (!r)
      return std::nullopt;
    if (c > 0) {
      if (!r->max)
        return std::nullopt;
      total += c * *r->max;
    } else {
      total += c * r->min;
    }
  }
  return total;
}

std::optional<int64_t> SymbolTable::lowerBound(const Dim &dim) const {
  if (dim.isOpaque())
    return std::nullopt;
  int64_t total = dim.constant();
  for (const auto &[n, c] : dim.terms()) {
    const SymbolRange *r = find(n);
    if (!r)
      return std::nullopt;
    if (c > 0) {
      total += c * r->min;
    } else {
      if (!r->max)
        return std::nullopt;
      total += c * *r->max;
    }
  }
  return total;
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
