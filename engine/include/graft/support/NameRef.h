//===- NameRef.h - A name whose characters its graph owns --------*- C++ -*-===//
//
// Value names and constant FQNs live in their graph's string storage, not in
// a std::string per value: a rewrite run makes a new constant (a value name
// and an FQN) per packed weight, and at 10^6 nodes the heap allocation and
// free of those strings was a tenth of fusing. A NameRef is a
// std::string_view of such a name (every string_view operation applies, and
// it compares, hashes and streams as one) that also converts to std::string
// where a caller wants a copy, and concatenates with `+` like a std::string.
//
// It is valid as long as the graph that owns the characters (as a reference
// to a Value's std::string name was valid as long as the Value). The
// characters are followed by a NUL, so c_str() is valid.
//
//   NameRef n = value->name();
//   std::string msg = "%" + n + " is unused"; // a std::string
//   std::string copy = n;                      // a copy
//   if (n == "x") ...
//
//===----------------------------------------------------------------------===//
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace graft {

class NameRef : public std::string_view {
public:
  constexpr NameRef() : std::string_view("", 0) {}
  /// Views `chars`, which must be NUL-terminated (chars.data()[size] == 0)
  /// and outlive the NameRef: for the owner of the storage (Graph).
  constexpr explicit NameRef(std::string_view chars) : std::string_view(chars) {}

  /// A copy, for callers that keep or build on the name.
  operator std::string() const { return std::string(data(), size()); }
  std::string str() const { return std::string(data(), size()); }
  const char *c_str() const { return data(); }
};

inline std::string operator+(std::string_view a, const NameRef &b) {
  std::string s;
  s.reserve(a.size() + b.size());
  return s.append(a).append(b);
}
inline std::string operator+(const NameRef &a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + b.size());
  return s.append(a).append(b);
}
inline std::string operator+(const NameRef &a, const NameRef &b) {
  return a + static_cast<std::string_view>(b);
}
inline std::string operator+(const std::string &a, const NameRef &b) {
  return std::string_view(a) + b;
}
inline std::string operator+(const NameRef &a, const std::string &b) {
  return a + std::string_view(b);
}
inline std::string operator+(const char *a, const NameRef &b) {
  return std::string_view(a) + b;
}
inline std::string operator+(const NameRef &a, const char *b) {
  return a + std::string_view(b);
}
inline std::string operator+(std::string &&a, const NameRef &b) {
  return std::move(a.append(b));
}
inline std::string operator+(char a, const NameRef &b) {
  return std::string_view(&a, 1) + b;
}
inline std::string operator+(const NameRef &a, char b) {
  return a + std::string_view(&b, 1);
}

/// GoogleTest prints a NameRef as a string (not as a range of chars).
void PrintTo(const NameRef &name, std::ostream *os);

} // namespace graft
