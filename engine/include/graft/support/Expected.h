//===- Expected.h - Value-or-diagnostics return type ---*- C++ -*-===//
//
// graft's library paths do not throw on user errors: they return
// Expected<T>, holding either a T or one or more Diagnostics. (GCC 12 has no
// std::expected.) Expected<void> is the status-only form.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Diagnostic.h"

#include <cassert>
#include <utility>
#include <variant>
#include <vector>

namespace graft {

/// The failure half of an Expected: one or more diagnostics, at least one of
/// them an error.
struct Failure {
  std::vector<Diagnostic> diags;
  Failure(Diagnostic d) { diags.push_back(std::move(d)); }
  Failure(std::vector<Diagnostic> ds) : diags(std::move(ds)) {}
};

template <class T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  Expected(Failure failure) : storage_(std::in_place_index<1>, std::move(failure.diags)) {}
  Expected(Diagnostic diag) : Expected(Failure(std::move(diag))) {}

  explicit operator bool() const { return storage_.index() == 0; }
  bool ok() const { return storage_.index() == 0; }

  T &value() & {
    assert(ok());
    return std::get<0>(storage_);
  }
  const T &value() const & {
    assert(ok());
    return std::get<0>(storage_);
  }
  T &&value() && {
    assert(ok());
    return std::get<0>(std::move(storage_));
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const std::vector<Diagnostic> &diags() const {
    assert(!ok());
    return std::get<1>(storage_);
  }
  /// Moves the diagnostics out, to propagate a failure to a caller.
  Failure takeFailure() {
    assert(!ok());
    return Failure(std::move(std::get<1>(storage_)));
  }

private:
  std::variant<T, std::vector<Diagnostic>> storage_;
};

template <> class [[nodiscard]] Expected<void> {
public:
  Expected() = default;
  Expected(Failure failure) : diags_(std::move(failure.diags)), failed_(true) {}
  Expected(Diagnostic diag) : Expected(Failure(std::move(diag))) {}

  explicit operator bool() const { return !failed_; }
  bool ok() const { return !failed_; }
  const std::vector<Diagnostic> &diags() const { return diags_; }
  Failure takeFailure() {
    assert(failed_);
    return Failure(std::move(diags_));
  }

private:
  std::vector<Diagnostic> diags_;
  bool failed_ = false;
};

using Status = Expected<void>;

inline Status okStatus() {
  return Status();
}

} // namespace graft

/// Evaluates an Expected<T> expression; on failure returns its diagnostics
/// from the enclosing function, otherwise binds the value to `decl`.
///   GRAFT_TRY(auto graph, parseGraph(text));
#define GRAFT_CONCAT_INNER(a, b) a##b
#define GRAFT_CONCAT(a, b) GRAFT_CONCAT_INNER(a, b)
#define GRAFT_TRY(decl, expr) GRAFT_TRY_IMPL(GRAFT_CONCAT(graftTry_, __LINE__), decl, expr)
#define GRAFT_TRY_IMPL(tmp, decl, expr)                                                            \
  auto tmp = (expr);                                                                               \
  if (!tmp.ok())                                                                                   \
    return tmp.takeFailure();                                                                      \
  decl = std::move(tmp).value()
/// Propagates the failure of a Status expression.
#define GRAFT_CHECK_OK(expr)                                                                       \
  do {                                                                                             \
    auto graftStatus_ = (expr);                                                                    \
    if (!graftStatus_.ok())                                                                        \
      return graftStatus_.takeFailure();                                                           \
  } while (0)
