//===- Argument.h - Node arguments as the op schema types them ---*- C++ -*-===//
#pragma once

#include "graft/ir/DType.h"
#include "graft/ir/TensorProto.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace graft {

class Value;

enum class Layout {
  Strided,
  SparseCoo,
  SparseCsr,
  SparseCsc,
  SparseBsr,
  SparseBsc,
  Mkldnn,
  Jagged
};
enum class MemoryFormat { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

std::string_view name(Layout layout);             ///< "strided", "sparse_coo", ...
std::string_view name(MemoryFormat memoryFormat); ///< "contiguous_format", ...
std::optional<Layout> parseLayout(std::string_view text);
std::optional<MemoryFormat> parseMemoryFormat(std::string_view text);

/// One argument of a node. A tensor or symbolic-int argument refers to a Value
/// (the Value's kind says which); lists hold Arguments (an optional-tensor
/// list mixes Values and None).
class Argument {
public:
  enum class Kind {
    None,
    Value,
    Bool,
    Int,
    Float,
    String,
    DType,
    Device,
    Layout,
    MemoryFormat,
    List
  };
  using List = std::vector<Argument>;

  Argument() = default; // None
  static Argument none() { return Argument(); }
  Argument(Value *value) : data_(value) {}
  Argument(bool b) : data_(b) {}
  Argument(int64_t i) : data_(i) {}
  Argument(int i) : data_(int64_t(i)) {}
  Argument(double f) : data_(f) {}
  Argument(std::string s) : data_(std::move(s)) {}
  Argument(const char *s) : data_(std::string(s)) {}
  Argument(graft::DType d) : data_(d) {}
  Argument(graft::Device d) : data_(std::move(d)) {}
  Argument(graft::Layout l) : data_(l) {}
  Argument(graft::MemoryFormat m) : data_(m) {}
  Argument(List list) : data_(std::move(list)) {}
  static Argument ints(const std::vector<int64_t> &values);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool isNone() const { return kind() == Kind::None; }
  bool isValue() const { return kind() == Kind::Value; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isInt() const { return kind() == Kind::Int; }
  bool isFloat() const { return kind() == Kind::Float; }
  bool isString() const { return kind() == Kind::String; }
  bool isDType() const { return kind() == Kind::DType; }
  bool isList() const { return kind() == Kind::List; }

  Value *value() const { return std::get<Value *>(data_); }
  bool boolean() const { return std::get<bool>(data_); }
  int64_t integer() const { return std::get<int64_t>(data_); }
  double floating() const { return std::get<double>(data_); }
  const std::string &string() const { return std::get<std::string>(data_); }
  graft::DType dtype() const { return std::get<graft::DType>(data_); }
  const graft::Device &device() const { return std::get<graft::Device>(data_); }
  graft::Layout layout() const { return std::get<graft::Layout>(data_); }
  graft::MemoryFormat memoryFormat() const { return std::get<graft::MemoryFormat>(data_); }
  const List &list() const { return std::get<List>(data_); }
  List &list() { return std::get<List>(data_); }

  /// Int or a list of ints, as concrete values (nullopt otherwise).
  std::optional<std::vector<int64_t>> intList() const;
  /// Numeric value of an Int, Float or Bool argument.
  std::optional<double> number() const;

  /// Calls f(Value*&) for every value referenced, recursively through lists.
  template <class F> void forEachValue(F &&f) {
    if (isValue())
      f(std::get<Value *>(data_));
    else if (isList())
      for (Argument &a : list())
        a.forEachValue(f);
  }
  template <class F> void forEachValue(F &&f) const {
    if (isValue())
      f(std::get<Value *>(data_));
    else if (isList())
      for (const Argument &a : list())
        a.forEachValue(f);
  }

  bool operator==(const Argument &other) const { return data_ == other.data_; }

private:
  std::variant<std::monostate, Value *, bool, int64_t, double, std::string, graft::DType,
               graft::Device, graft::Layout, graft::MemoryFormat, List>
      data_;
};

std::string_view name(Argument::Kind kind);

} // namespace graft
