//===- BoxedOptional.h - An optional whose value lives on the heap -*- C++ -*-===//
//
// std::optional<T> keeps room for a T in place, set or not. For fields that
// are nearly always empty in objects the IR makes by the million (a value's
// quantization layout, a node's source location), that room is most of the
// object: a 10^6-node graph's Values were ~440 bytes, of which 120 were two
// unset optionals. BoxedOptional<T> is one pointer; a set value is a heap T.
// It has optional's interface (has_value, *, ->, value, reset, emplace,
// value_or, comparison with nullopt) and copies deeply.
//
//   BoxedOptional<QuantLayout> quant;       // 8 bytes
//   if (quant) use(*quant);
//   quant = AffineQuant{...};
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace graft {

template <class T> class BoxedOptional {
  template <class U>
  static constexpr bool IsValueLike = !std::is_same_v<std::remove_cvref_t<U>, BoxedOptional> &&
                                      !std::is_same_v<std::remove_cvref_t<U>, std::nullopt_t> &&
                                      !std::is_same_v<std::remove_cvref_t<U>, std::optional<T>>;

public:
  using value_type = T;

  BoxedOptional() noexcept = default;
  BoxedOptional(std::nullopt_t) noexcept {}
  /// From anything a T is made from (a T, or an alternative of a variant T).
  template <class U = T>
  requires(IsValueLike<U> &&std::is_constructible_v<T, U>) BoxedOptional(U &&v)
      : p_(std::make_unique<T>(std::forward<U>(v))) {}
  BoxedOptional(const std::optional<T> &o) : p_(o ? std::make_unique<T>(*o) : nullptr) {}
  BoxedOptional(std::optional<T> &&o) : p_(o ? std::make_unique<T>(std::move(*o)) : nullptr) {}
  BoxedOptional(const BoxedOptional &o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  BoxedOptional(BoxedOptional &&o) noexcept = default;

  BoxedOptional &operator=(const BoxedOptional &o) {
    if (this != &o) {
      if (o.p_)
        *this = static_cast<const T &>(*o.p_);
      else
        p_.reset();
    }
    return *this;
  }
  BoxedOptional &operator=(BoxedOptional &&o) noexcept = default;
  BoxedOptional &operator=(std::nullopt_t) noexcept {
    p_.reset();
    return *this;
  }
  /// Reuses the heap T when one is set.
  template <class U = T>
  requires(IsValueLike<U> &&std::is_constructible_v<T, U> &&std::is_assignable_v<T &, U>)
      BoxedOptional &
      operator=(U &&v) {
    if (p_)
      *p_ = std::forward<U>(v);
    else
      p_ = std::make_unique<T>(std::forward<U>(v));
    return *this;
  }
  BoxedOptional &operator=(const std::optional<T> &o) {
    if (o)
      *this = static_cast<const T &>(*o);
    else
      p_.reset();
    return *this;
  }

  bool has_value() const noexcept { return p_ != nullptr; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  T &operator*() noexcept { return *p_; }
  const T &operator*() const noexcept { return *p_; }
  T *operator->() noexcept { return p_.get(); }
  const T *operator->() const noexcept { return p_.get(); }
  T &value() {
    if (!p_)
      throw std::bad_optional_access();
    return *p_;
  }
  const T &value() const {
    if (!p_)
      throw std::bad_optional_access();
    return *p_;
  }
  template <class U> T value_or(U &&fallback) const {
    return p_ ? *p_ : static_cast<T>(std::forward<U>(fallback));
  }
  void reset() noexcept { p_.reset(); }
  template <class... Args> T &emplace(Args &&...args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  /// An std::optional copy (for APIs that take one).
  std::optional<T> optional() const { return p_ ? std::optional<T>(*p_) : std::nullopt; }

  friend bool operator==(const BoxedOptional &a, const BoxedOptional &b) {
    return a.p_ ? (b.p_ && *a.p_ == *b.p_) : !b.p_;
  }
  friend bool operator==(const BoxedOptional &a, std::nullopt_t) { return !a.p_; }
  friend bool operator==(const BoxedOptional &a, const T &b) { return a.p_ && *a.p_ == b; }

private:
  std::unique_ptr<T> p_;
};

} // namespace graft
