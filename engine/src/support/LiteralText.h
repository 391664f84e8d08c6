//===- LiteralText.h - Decoding the literals of graft's grammars -*- C++ -*-===//
//
// The values of the number and string literals that PegtlSupport.h's lexical
// rules (Digits, DecimalFloat, QuotedString) match, for the .pat and text IR
// parsers and the passes that read their trees. Separate from PegtlSupport.h
// so those passes need not see PEGTL (whose <iomanip> brings std::quoted
// into their overload sets). Private to graft, like PegtlSupport.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace graft::grammar {

using Int128 = __int128;

/// An integer literal's value (decimal digits, optionally after '-'); nullopt
/// for any other text or when its magnitude exceeds 2^64, so callers can
/// still tell "too large for int64" from "not a number".
inline std::optional<Int128> parseInteger(std::string_view s) {
  bool neg = !s.empty() && s[0] == '-';
  if (neg)
    s.remove_prefix(1);
  if (s.empty())
    return std::nullopt;
  Int128 v = 0;
  const Int128 limit = Int128(1) << 64;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > limit)
      return std::nullopt;
  }
  return neg ? -v : v;
}

inline bool fitsInt64(Int128 v) {
  return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
}

/// An integer literal that fits int64_t, else nullopt.
inline std::optional<int64_t> parseInt64(std::string_view s) {
  auto v = parseInteger(s);
  if (!v || !fitsInt64(*v))
    return std::nullopt;
  return static_cast<int64_t>(*v);
}

/// A float literal's value: DecimalFloat's text, optionally after '-', inf
/// and nan included.
inline std::optional<double> parseDouble(std::string_view s) {
  bool neg = !s.empty() && s[0] == '-';
  std::string_view body = neg ? s.substr(1) : s;
  if (body == "inf")
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (body == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    return std::nullopt;
  return v;
}

/// Decodes a QuotedString's text (quotes included); the grammar guarantees
/// the escapes are well formed.
inline std::string unescape(std::string_view lit) {
  std::string out;
  for (std::size_t i = 1; i + 1 < lit.size(); ++i) {
    char c = lit[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = lit[++i];
    switch (e) {
    case 'n':
      out += '\n';
      break;
    case 't':
      out += '\t';
      break;
    case 'r':
      out += '\r';
      break;
    case 'x': {
      auto hex = [](char h) { return h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10; };
      out += static_cast<char>(hex(lit[i + 1]) * 16 + hex(lit[i + 2]));
      i += 2;
      break;
    }
    default:
      out += e; // '"' or '\\'
    }
  }
  return out;
}

} // namespace graft::grammar
