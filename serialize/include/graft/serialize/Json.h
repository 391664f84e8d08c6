//===- Json.h - Linear-time JSON parsing into a read-only document -*- C++ -*-===//
//
// A torch.export model.json of a 128-layer model is 11 MB and ~10^6 values.
// As an nlohmann document every string, array and object of it is a heap
// block of its own: building the document and freeing it again was a third
// of loading the model. JsonDocument::parse builds a read-only document in
// one pass instead: values are 16 bytes, each container's elements are one
// block of an arena (allocated once, at the final size), strings without
// escapes view the document's text, and freeing it frees a few chunks.
//
// parseOrderedJson builds the nlohmann::ordered_json that
// nlohmann::ordered_json::parse returns for the same text (toOrderedJson of
// the document): ordered_json::parse itself inserts each member into a vector
// of pairs, scanning the members before it for a duplicate (quadratic in the
// object's size, over a second on that model.json).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Expected.h"
#include "graft/support/StringArena.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace graft {

struct JsonMember;

/// A value of a JsonDocument, viewing the document (which must outlive it).
/// Numbers are typed as nlohmann types them: an integer without a sign is
/// Unsigned, with one Integer, and either is Float when it overflows.
class JsonValue {
public:
  enum class Kind : uint8_t { Null, Boolean, Integer, Unsigned, Float, String, Array, Object };

  JsonValue() : u_(0) {}

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBoolean() const { return kind_ == Kind::Boolean; }
  /// Integer or Unsigned (nlohmann's is_number_integer).
  bool isInteger() const { return kind_ == Kind::Integer || kind_ == Kind::Unsigned; }
  bool isNumber() const { return isInteger() || kind_ == Kind::Float; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool boolean() const { return b_; }
  int64_t integer() const { return i_; }          ///< Kind::Integer
  uint64_t unsignedInteger() const { return u_; } ///< Kind::Unsigned
  /// Any number as a double (nlohmann's get<double>); 0 for other kinds.
  double number() const {
    switch (kind_) {
    case Kind::Integer:
      return static_cast<double>(i_);
    case Kind::Unsigned:
      return static_cast<double>(u_);
    case Kind::Float:
      return d_;
    default:
      return 0;
    }
  }
  std::string_view string() const { return isString() ? std::string_view(s_, size_) : ""; }

  /// Elements of an array, members of an object; 0 for anything else.
  std::size_t size() const { return isArray() || isObject() ? size_ : 0; }
  std::span<const JsonValue> elements() const;
  std::span<const JsonMember> members() const;
  /// The member `key` of an object (keys are unique: a repeated key kept its
  /// first position and its last value), or null.
  const JsonValue *find(std::string_view key) const;

private:
  friend class JsonBuilder;
  Kind kind_ = Kind::Null;
  uint32_t size_ = 0; ///< string bytes, elements, members
  union {
    bool b_;
    int64_t i_;
    uint64_t u_;
    double d_;
    const char *s_;
    const JsonValue *elements_;
    const JsonMember *members_;
  };
};

struct JsonMember {
  std::string_view key;
  JsonValue value;
};

inline std::span<const JsonValue> JsonValue::elements() const {
  return isArray() ? std::span<const JsonValue>(elements_, size_) : std::span<const JsonValue>();
}
inline std::span<const JsonMember> JsonValue::members() const {
  return isObject() ? std::span<const JsonMember>(members_, size_) : std::span<const JsonMember>();
}
inline const JsonValue *JsonValue::find(std::string_view key) const {
  for (const JsonMember &m : members())
    if (m.key == key)
      return &m.value;
  return nullptr;
}

/// A parsed JSON text: its root value, the text its strings view, and the
/// arena holding its containers. Move-only; moving keeps every view valid.
class JsonDocument {
public:
  /// Parses `text` (RFC 8259, UTF-8): the texts nlohmann accepts, into the
  /// document nlohmann builds (member order, number types, float bits). On
  /// invalid input the error is nlohmann's message ("parse error at line 1,
  /// column 3: ...").
  static Expected<JsonDocument> parse(std::string text);
  /// The same for text the document does not own: `owner` keeps it alive
  /// (a record mapped in place from an archive, parsed without a copy).
  static Expected<JsonDocument> parse(std::string_view text, std::shared_ptr<const void> owner);

  const JsonValue &root() const { return root_; }

private:
  friend class JsonBuilder;
  JsonDocument() = default;
  /// What keeps text_ alive (held by pointer: a moved std::string may move
  /// its short bytes, and the values view them).
  std::shared_ptr<const void> owner_;
  std::string_view text_;
  StringArena arena_;
  JsonValue root_;
};

/// `v` as an nlohmann::ordered_json (what ordered_json::parse builds for it).
nlohmann::ordered_json toOrderedJson(const JsonValue &v);

/// Parses `text` into the value nlohmann::ordered_json::parse returns for it:
/// the same members in the same order (a repeated key keeps its first
/// position and its last value), the same number types. On invalid input the
/// error is nlohmann's message.
Expected<nlohmann::ordered_json> parseOrderedJson(std::string_view text);

} // namespace graft
