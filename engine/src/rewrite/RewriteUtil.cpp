//===- RewriteUtil.cpp - Formatting helpers of the rewrite engine ---------===//
#include "RewriteUtil.h"

#include "graft/ir/Graph.h"

#include <charconv>
#include <cmath>

namespace graft::rewrite::detail {

std::string formatDouble(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string formatArgument(const Argument &arg) {
  switch (arg.kind()) {
  case Argument::Kind::None:
    return "none";
  case Argument::Kind::Value:
    return arg.value() ? "%" + arg.value()->name() : "%<null>";
  case Argument::Kind::Bool:
    return arg.boolean() ? "true" : "false";
  case Argument::Kind::Int:
    return std::to_string(arg.integer());
  case Argument::Kind::Float:
    return formatDouble(arg.floating());
  case Argument::Kind::String: {
    std::string out = "\"";
    for (char c : arg.string()) {
      if (c == '"' || c == '\\')
        out += '\\';
      out += c;
    }
    return out + "\"";
  }
  case Argument::Kind::DType:
    return std::string(name(arg.dtype()));
  case Argument::Kind::Device:
    return arg.device().str();
  case Argument::Kind::Layout:
    return std::string(name(arg.layout()));
  case Argument::Kind::MemoryFormat:
    return std::string(name(arg.memoryFormat()));
  case Argument::Kind::List: {
    std::string out = "[";
    bool first = true;
    for (const Argument &e : arg.list()) {
      if (!first)
        out += ", ";
      first = false;
      out += formatArgument(e);
    }
    return out + "]";
  }
  }
  return "?";
}

std::string formatLoc(const SourceRange &range) {
  if (!range.begin.valid())
    return "<unknown>";
  return range.begin.file + ":" + std::to_string(range.begin.line) + ":" +
         std::to_string(range.begin.column);
}

std::string formatIndex(const std::vector<int64_t> &sizes, int64_t linear) {
  std::vector<int64_t> idx(sizes.size());
  for (std::size_t i = sizes.size(); i-- > 0;) {
    int64_t s = sizes[i] == 0 ? 1 : sizes[i];
    idx[i] = linear % s;
    linear /= s;
  }
  std::string out = "[";
  for (std::size_t i = 0; i < idx.size(); ++i)
    out += (i ? ", " : "") + std::to_string(idx[i]);
  return out + "]";
}

} // namespace graft::rewrite::detail
