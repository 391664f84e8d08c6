//===- Argument.cpp - Argument helpers and enum names ---------------------===//
#include "graft/ir/Argument.h"

#include <array>

namespace graft {
namespace {
constexpr std::array<std::pair<Layout, std::string_view>, 8> kLayouts = {{
    {Layout::Strided, "strided"},
    {Layout::SparseCoo, "sparse_coo"},
    {Layout::SparseCsr, "sparse_csr"},
    {Layout::SparseCsc, "sparse_csc"},
    {Layout::SparseBsr, "sparse_bsr"},
    {Layout::SparseBsc, "sparse_bsc"},
    {Layout::Mkldnn, "_mkldnn"},
    {Layout::Jagged, "jagged"},
}};
constexpr std::array<std::pair<MemoryFormat, std::string_view>, 4> kFormats = {{
    {MemoryFormat::Contiguous, "contiguous_format"},
    {MemoryFormat::Preserve, "preserve_format"},
    {MemoryFormat::ChannelsLast, "channels_last"},
    {MemoryFormat::ChannelsLast3d, "channels_last_3d"},
}};
} // namespace

std::string_view name(Layout layout) {
  for (const auto &[l, n] : kLayouts)
    if (l == layout)
      return n;
  return "strided";
}

std::string_view name(MemoryFormat memoryFormat) {
  for (const auto &[m, n] : kFormats)
    if (m == memoryFormat)
      return n;
  return "contiguous_format";
}

std::optional<Layout> parseLayout(std::string_view text) {
  if (text.substr(0, 6) == "torch.")
    text.remove_prefix(6);
  for (const auto &[l, n] : kLayouts)
    if (n == text)
      return l;
  return std::nullopt;
}

std::optional<MemoryFormat> parseMemoryFormat(std::string_view text) {
  if (text.substr(0, 6) == "torch.")
    text.remove_prefix(6);
  for (const auto &[m, n] : kFormats)
    if (n == text)
      return m;
  return std::nullopt;
}

Argument Argument::ints(const std::vector<int64_t> &values) {
  List l;
  l.reserve(values.size());
  for (int64_t v : values)
    l.emplace_back(v);
  return Argument(std::move(l));
}

std::optional<std::vector<int64_t>> Argument::intList() const {
  if (isInt())
    return std::vector<int64_t>{integer()};
  if (!isList())
    return std::nullopt;
  std::vector<int64_t> out;
  for (const Argument &a : list()) {
    if (!a.isInt())
      return std::nullopt;
    out.push_back(a.integer());
  }
  return out;
}

std::optional<double> Argument::number() const {
  switch (kind()) {
  case Kind::Int:
    return static_cast<double>(integer());
  case Kind::Float:
    return floating();
  case Kind::Bool:
    return boolean() ? 1.0 : 0.0;
  default:
    return std::nullopt;
  }
}

std::string_view name(Argument::Kind kind) {
  switch (kind) {
  case Argument::Kind::None:
    return "none";
  case Argument::Kind::Value:
    return "value";
  case Argument::Kind::Bool:
    return "bool";
  case Argument::Kind::Int:
    return "int";
  case Argument::Kind::Float:
    return "float";
  case Argument::Kind::String:
    return "string";
  case Argument::Kind::DType:
    return "dtype";
  case Argument::Kind::Device:
    return "device";
  case Argument::Kind::Layout:
    return "layout";
  case Argument::Kind::MemoryFormat:
    return "memory format";
  case Argument::Kind::List:
    return "list";
  }
  return "?";
}

} // namespace graft
