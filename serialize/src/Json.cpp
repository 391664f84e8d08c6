//===- Json.cpp - Linear-time JSON parsing into a read-only document ------===//
//
// An iterative recursive-descent parser (no recursion: nesting depth is
// bounded only by memory, as with nlohmann's parser). Open containers keep
// their members on two scratch stacks (values, and keys for objects); closing
// one copies its members into one arena block of their exact count. The
// grammar, string validation (escapes, surrogate pairs, UTF-8 byte ranges)
// and number typing follow nlohmann's lexer, so both accept the same texts
// and build equal documents; tests/unit/JsonTest.cpp checks that on a corpus.
// On an error the text is handed to nlohmann for its message (nlohmann's
// parse throws it; a number too large for a double is an error as well).
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/Json.h"
#include "graft/support/StringViewMap.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace graft {

static_assert(std::endian::native == std::endian::little,
              "JsonBuilder::skipPlain reads the text a word at a time, first byte lowest");

using OJson = nlohmann::ordered_json;

/// The parser (a friend of JsonValue and JsonDocument: it fills them in).
class JsonBuilder {
public:
  explicit JsonBuilder(JsonDocument &doc)
      : p_(doc.text_.data()), end_(doc.text_.data() + doc.text_.size()), arena_(doc.arena_) {}

  /// The document's root, or false on any syntax error.
  bool parse(JsonValue &out) {
    // A UTF-8 byte order mark is skipped, as nlohmann's lexer does.
    if (end_ - p_ >= 3 && static_cast<unsigned char>(p_[0]) == 0xEF &&
        static_cast<unsigned char>(p_[1]) == 0xBB && static_cast<unsigned char>(p_[2]) == 0xBF)
      p_ += 3;
    struct Frame {
      bool object;
      std::size_t values; ///< first member in values_
      std::size_t keys;   ///< first key in keys_ (objects)
    };
    std::vector<Frame> frames;
    for (;;) {
      bool closed = false; // the innermost container's closing bracket was just read
      // A value is expected here: a scalar, or the start of a container.
      skipSpace();
      if (p_ == end_)
        return false;
      char c = *p_;
      if (c == '{' || c == '[') {
        ++p_;
        frames.push_back(Frame{c == '{', values_.size(), keys_.size()});
        skipSpace();
        if (p_ != end_ && *p_ == (c == '{' ? '}' : ']')) {
          ++p_; // an empty container: closed below
          closed = true;
        } else {
          if (c == '{' && !key())
            return false;
          continue;
        }
      } else {
        values_.emplace_back();
        if (!scalar(values_.back()))
          return false;
      }
      // After a value: close containers, or move on to the next member.
      for (;;) {
        if (frames.empty()) {
          skipSpace();
          if (p_ != end_ || values_.size() != 1)
            return false;
          out = values_.back();
          return true;
        }
        Frame &f = frames.back();
        if (!closed) {
          skipSpace();
          if (p_ == end_)
            return false;
          if (*p_ == ',') {
            ++p_;
            if (f.object) {
              skipSpace();
              if (!key())
                return false;
            }
            break; // the next member's value
          }
          if (*p_ != (f.object ? '}' : ']'))
            return false;
          ++p_;
        }
        closed = false; // the parent has a complete member
        JsonValue done = f.object ? closeObject(f.values, f.keys) : closeArray(f.values);
        frames.pop_back();
        values_.push_back(done);
      }
    }
  }

private:
  void skipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r'))
      ++p_;
  }

  /// `"key" :` of an object member (leading space already skipped).
  bool key() {
    if (p_ == end_ || *p_ != '"')
      return false;
    keys_.emplace_back();
    if (!string(keys_.back()))
      return false;
    skipSpace();
    if (p_ == end_ || *p_ != ':')
      return false;
    ++p_;
    return true;
  }

  JsonValue closeArray(std::size_t first) {
    JsonValue out;
    out.kind_ = JsonValue::Kind::Array;
    out.size_ = static_cast<uint32_t>(values_.size() - first);
    std::span<JsonValue> a = arena_.array<JsonValue>(out.size_);
    std::copy(values_.begin() + static_cast<std::ptrdiff_t>(first), values_.end(), a.begin());
    out.elements_ = a.data();
    values_.resize(first);
    return out;
  }

  /// Objects up to this size are checked for repeated keys pairwise.
  static constexpr std::size_t kSmallObject = 16;

  JsonValue closeObject(std::size_t firstValue, std::size_t firstKey) {
    const std::size_t n = keys_.size() - firstKey;
    // A repeated key keeps its first position and takes the last value (what
    // nlohmann's operator[] insertion does); its later occurrences are dropped.
    std::vector<char> dropped;
    auto drop = [&](std::size_t firstAt, std::size_t later) {
      if (dropped.empty())
        dropped.assign(n, 0);
      values_[firstValue + firstAt] = values_[firstValue + later];
      dropped[later] = 1;
    };
    if (n <= kSmallObject) {
      // Pairwise, but on a fingerprint first (length, first and last byte):
      // an object's keys nearly always differ in it, and there are hundreds
      // of thousands of small objects in a model.json.
      uint64_t fingerprint[kSmallObject];
      for (std::size_t i = 0; i < n; ++i) {
        std::string_view k = keys_[firstKey + i];
        fingerprint[i] = k.empty() ? 0
                                   : k.size() | uint64_t(static_cast<unsigned char>(k[0])) << 32 |
                                         uint64_t(static_cast<unsigned char>(k.back())) << 40;
      }
      for (std::size_t i = 1; i < n; ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (fingerprint[j] == fingerprint[i] && (dropped.empty() || !dropped[j]) &&
              keys_[firstKey + j] == keys_[firstKey + i]) {
            drop(j, i);
            break;
          }
    } else {
      // A flat table: the large objects are tables keyed by name (a
      // model.json's tensor_values, a weights config), thousands of keys.
      StringViewMap<uint32_t> seen;
      seen.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::string_view k = keys_[firstKey + i];
        const uint64_t h = StringViewMap<uint32_t>::hash(k);
        if (const uint32_t *first = seen.find(k, h))
          drop(*first, i);
        else
          seen.insert(k, static_cast<uint32_t>(i), h);
      }
    }
    std::size_t kept = n;
    for (char d : dropped)
      kept -= d;
    JsonValue out;
    out.kind_ = JsonValue::Kind::Object;
    out.size_ = static_cast<uint32_t>(kept);
    std::span<JsonMember> members = arena_.array<JsonMember>(kept);
    for (std::size_t i = 0, k = 0; i < n; ++i)
      if (dropped.empty() || !dropped[i])
        members[k++] = JsonMember{keys_[firstKey + i], values_[firstValue + i]};
    out.members_ = members.data();
    keys_.resize(firstKey);
    values_.resize(firstValue);
    return out;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view(p_, word.size()) != word)
      return false;
    p_ += word.size();
    return true;
  }

  bool scalar(JsonValue &out) {
    switch (*p_) {
    case '"': {
      std::string_view s;
      if (!string(s))
        return false;
      out.kind_ = JsonValue::Kind::String;
      out.size_ = static_cast<uint32_t>(s.size());
      out.s_ = s.data();
      return true;
    }
    case 't':
      out.kind_ = JsonValue::Kind::Boolean;
      out.b_ = true;
      return literal("true");
    case 'f':
      out.kind_ = JsonValue::Kind::Boolean;
      out.b_ = false;
      return literal("false");
    case 'n':
      return literal("null");
    default:
      return number(out);
    }
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }

  /// Four hex digits after "\u"; -1 when malformed.
  long hex4() {
    if (end_ - p_ < 4)
      return -1;
    long v = 0;
    for (int i = 0; i < 4; ++i) {
      int d = hexDigit(p_[i]);
      if (d < 0)
        return -1;
      v = v * 16 + d;
    }
    p_ += 4;
    return v;
  }

  static void appendUtf8(std::string &s, long cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  /// Length of the well-formed UTF-8 sequence at p_ whose first byte is
  /// non-ASCII, or 0 (the byte ranges of RFC 3629, as nlohmann checks them).
  std::size_t utf8Length() const {
    auto at = [&](std::size_t i) -> int {
      return p_ + i < end_ ? static_cast<unsigned char>(p_[i]) : -1;
    };
    auto in = [&](std::size_t i, int lo, int hi) {
      int b = at(i);
      return b >= lo && b <= hi;
    };
    int b = at(0);
    if (b >= 0xC2 && b <= 0xDF)
      return in(1, 0x80, 0xBF) ? 2 : 0;
    if (b == 0xE0)
      return in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
      return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    if (b == 0xED)
      return in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
    if (b == 0xF0)
      return in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    if (b >= 0xF1 && b <= 0xF3)
      return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    if (b == 0xF4)
      return in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    return 0;
  }

  /// Skips the string bytes that need no look (printable ASCII but '"' and
  /// the backslash), eight at a time: they are most of a model.json, and the
  /// loop in string() takes a few branches per byte. Stops on the first
  /// other byte, which that loop reads.
  void skipPlain() {
    constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
    // (v - kOnes) & ~v has the high bit of v's lowest zero byte set, and none
    // below it (a borrow only runs upward, from a zero byte): the lowest
    // flag is exact. The same holds for bytes below 0x20 with 0x20 * kOnes.
    auto zeroBytes = [&](uint64_t v) { return (v - kOnes) & ~v; };
    while (end_ - p_ >= 8) {
      uint64_t w;
      std::memcpy(&w, p_, 8); // little-endian: the lowest byte is the first
      uint64_t look = (((w - kOnes * 0x20) & ~w) | zeroBytes(w ^ (kOnes * '"')) |
                       zeroBytes(w ^ (kOnes * '\\')) | w) &
                      kHighs; // w: bytes >= 0x80
      if (look) {
        p_ += std::countr_zero(look) / 8;
        return;
      }
      p_ += 8;
    }
  }

  /// A string at p_ (on its opening quote): a view of the text, or of its
  /// unescaped copy in the arena when it has escapes.
  bool string(std::string_view &out) {
    ++p_;
    const char *start = p_;
    const char *run = p_; // start of the bytes not yet appended to `unescaped`
    std::string &unescaped = scratch_;
    bool escapes = false;
    for (;;) {
      skipPlain();
      if (p_ == end_)
        return false;
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        if (escapes) {
          unescaped.append(run, p_);
          out = arena_.copy(unescaped);
        } else {
          out = std::string_view(start, static_cast<std::size_t>(p_ - start));
        }
        ++p_;
        return true;
      }
      if (c < 0x20)
        return false;
      if (c < 0x80 && c != '\\') {
        ++p_;
        continue;
      }
      if (c >= 0x80) {
        std::size_t n = utf8Length();
        if (!n)
          return false;
        p_ += n;
        continue;
      }
      // An escape.
      if (!escapes) {
        escapes = true;
        unescaped.clear();
      }
      unescaped.append(run, p_);
      if (++p_ == end_)
        return false;
      char e = *p_++;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        unescaped += e;
        break;
      case 'b':
        unescaped += '\b';
        break;
      case 'f':
        unescaped += '\f';
        break;
      case 'n':
        unescaped += '\n';
        break;
      case 'r':
        unescaped += '\r';
        break;
      case 't':
        unescaped += '\t';
        break;
      case 'u': {
        long cp = hex4();
        if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate must be followed by "\u" and a low one.
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u')
            return false;
          p_ += 2;
          long lo = hex4();
          if (lo < 0xDC00 || lo > 0xDFFF)
            return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        appendUtf8(unescaped, cp);
        break;
      }
      default:
        return false;
      }
      run = p_;
    }
  }

  /// A number at p_, typed as nlohmann types it: an integer without a sign
  /// is unsigned, with one signed, and either is a float when it overflows.
  bool number(JsonValue &out) {
    const char *start = p_;
    bool negative = false;
    if (p_ != end_ && *p_ == '-') {
      negative = true;
      ++p_;
    }
    auto digit = [&] { return p_ != end_ && *p_ >= '0' && *p_ <= '9'; };
    if (!digit())
      return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (digit())
        ++p_;
    }
    bool integer = true;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (!digit())
        return false;
      while (digit())
        ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-'))
        ++p_;
      if (!digit())
        return false;
      while (digit())
        ++p_;
    }
    if (integer) {
      if (negative) {
        int64_t v = 0;
        auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc() && r.ptr == p_) {
          out.kind_ = JsonValue::Kind::Integer;
          out.i_ = v;
          return true;
        }
      } else {
        uint64_t v = 0;
        auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc() && r.ptr == p_) {
          out.kind_ = JsonValue::Kind::Unsigned;
          out.u_ = v;
          return true;
        }
      }
    }
    double d = 0;
    auto r = std::from_chars(start, p_, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow (or overflow): from_chars leaves `d` unset where strtod,
      // nlohmann's conversion, returns the rounded value or infinity.
      std::string token(start, p_);
      d = std::strtod(token.c_str(), nullptr);
    } else if (r.ec != std::errc() || r.ptr != p_) {
      return false;
    }
    if (!std::isfinite(d))
      return false; // nlohmann: "number overflow parsing '1e400'"
    out.kind_ = JsonValue::Kind::Float;
    out.d_ = d;
    return true;
  }

  const char *p_;
  const char *end_;
  StringArena &arena_;
  std::vector<JsonValue> values_;
  std::vector<std::string_view> keys_;
  std::string scratch_; ///< a string with escapes, unescaped
};

Expected<JsonDocument> JsonDocument::parse(std::string text) {
  auto owned = std::make_shared<const std::string>(std::move(text));
  std::string_view view = *owned;
  return parse(view, std::move(owned));
}

Expected<JsonDocument> JsonDocument::parse(std::string_view text,
                                           std::shared_ptr<const void> owner) {
  JsonDocument doc;
  doc.owner_ = std::move(owner);
  doc.text_ = text;
  if (JsonBuilder(doc).parse(doc.root_))
    return doc;
  // Invalid: nlohmann words the error (where and what), as it always has.
  try {
    OJson accepted = OJson::parse(doc.text_.begin(), doc.text_.end());
    (void)accepted;
  } catch (const nlohmann::json::exception &e) {
    // parse_error, or out_of_range for a number too large for a double.
    return Diagnostic::error(e.what());
  }
  return Diagnostic::internal("JSON text rejected by graft's parser but accepted by nlohmann's");
}

OJson toOrderedJson(const JsonValue &v) {
  // Iterative, like the parser: nesting depth is bounded only by memory.
  // Each container is reserved to its final size first, so the addresses of
  // its elements (the frames' destinations) stay put while it fills.
  struct Frame {
    const JsonValue *src;
    OJson *dst;
    std::size_t next;
  };
  std::vector<Frame> stack;
  auto start = [&](const JsonValue &src, OJson &dst) {
    switch (src.kind()) {
    case JsonValue::Kind::Null:
      dst = nullptr;
      return;
    case JsonValue::Kind::Boolean:
      dst = src.boolean();
      return;
    case JsonValue::Kind::Integer:
      dst = src.integer();
      return;
    case JsonValue::Kind::Unsigned:
      dst = src.unsignedInteger();
      return;
    case JsonValue::Kind::Float:
      dst = src.number();
      return;
    case JsonValue::Kind::String:
      dst = std::string(src.string());
      return;
    case JsonValue::Kind::Array:
      dst = OJson::array();
      dst.get_ref<OJson::array_t &>().reserve(src.size());
      break;
    case JsonValue::Kind::Object:
      dst = OJson::object();
      dst.get_ref<OJson::object_t &>().reserve(src.size());
      break;
    }
    stack.push_back(Frame{&src, &dst, 0});
  };
  OJson out;
  start(v, out);
  while (!stack.empty()) {
    Frame f = stack.back();
    if (f.next == f.src->size()) {
      stack.pop_back();
      continue;
    }
    ++stack.back().next;
    if (f.src->isArray()) {
      auto &a = f.dst->get_ref<OJson::array_t &>();
      a.emplace_back();
      start(f.src->elements()[f.next], a.back());
    } else {
      // ordered_map is a vector of (key, value) pairs; appending to it
      // directly skips its per-insertion duplicate scan (keys are unique).
      auto &members = static_cast<std::vector<std::pair<const std::string, OJson>> &>(
          f.dst->get_ref<OJson::object_t &>());
      const JsonMember &m = f.src->members()[f.next];
      members.emplace_back(std::string(m.key), OJson());
      start(m.value, members.back().second);
    }
  }
  return out;
}

Expected<nlohmann::ordered_json> parseOrderedJson(std::string_view text) {
  GRAFT_TRY(JsonDocument doc, JsonDocument::parse(std::string(text)));
  return toOrderedJson(doc.root());
}

} // namespace graft
