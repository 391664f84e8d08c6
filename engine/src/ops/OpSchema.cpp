//===- OpSchema.cpp - Parsing and printing torch op schemas ---------------===//
//
// A small hand-written recursive-descent parser for torch's schema language
// (native_functions.yaml / torch.library.define strings):
//
//   ns::name[.overload]( [type name[=default]] {, ...} ) -> returns
//
// Hand-written rather than PEGTL because the grammar is tiny, and defaults
// must be typed by the argument's declared type (a ScalarType default of `6`
// is float32, a float default of `1` is 1.0), which is easiest while parsing.
// Errors quote the schema and point at the offending column.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/OpSchema.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace graft {

//===----------------------------------------------------------------------===//
// c10 ScalarType numbering
//===----------------------------------------------------------------------===//

namespace {
// Index = c10::ScalarType value; nullopt where graft has no such dtype.
const std::array<std::optional<DType>, 46> kScalarTypes = {{
    DType::U8,     DType::I8,        DType::I16,        DType::I32,        DType::I64,
    DType::F16,    DType::F32,       DType::F64,        DType::C32,        DType::C64,
    DType::C128,   DType::Bool,      DType::QI8,        DType::QU8,        DType::QI32,
    DType::BF16,   DType::QU4x2,     DType::QU2x4,      std::nullopt,      std::nullopt,
    std::nullopt,  std::nullopt,     std::nullopt, // bits*
    DType::F8E5M2, DType::F8E4M3FN,  DType::F8E5M2FNUZ, DType::F8E4M3FNUZ, DType::U16,
    DType::U32,    DType::U64,       DType::U1,         DType::U2,         DType::U3,
    DType::U4,     DType::U5,        DType::U6,         DType::U7,         DType::I1,
    DType::I2,     DType::I3,        DType::I4,         DType::I5,         DType::I6,
    DType::I7,     DType::F8E8M0FNU, DType::F4E2M1FNx2,
}};
} // namespace

std::optional<DType> dtypeFromScalarTypeIndex(int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(kScalarTypes.size()))
    return std::nullopt;
  return kScalarTypes[static_cast<std::size_t>(index)];
}

int64_t scalarTypeIndex(DType dtype) {
  for (std::size_t i = 0; i < kScalarTypes.size(); ++i)
    if (kScalarTypes[i] == dtype)
      return static_cast<int64_t>(i);
  return -1;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

namespace {

std::string_view baseName(SchemaType::Base base) {
  switch (base) {
  case SchemaType::Base::Tensor:
    return "Tensor";
  case SchemaType::Base::Int:
    return "int";
  case SchemaType::Base::SymInt:
    return "SymInt";
  case SchemaType::Base::Float:
    return "float";
  case SchemaType::Base::Bool:
    return "bool";
  case SchemaType::Base::Str:
    return "str";
  case SchemaType::Base::Scalar:
    return "Scalar";
  case SchemaType::Base::ScalarType:
    return "ScalarType";
  case SchemaType::Base::Layout:
    return "Layout";
  case SchemaType::Base::Device:
    return "Device";
  case SchemaType::Base::MemoryFormat:
    return "MemoryFormat";
  case SchemaType::Base::Generator:
    return "Generator";
  case SchemaType::Base::Any:
    return "Any";
  }
  return "?";
}

std::optional<SchemaType::Base> parseBaseName(std::string_view s) {
  using B = SchemaType::Base;
  static const std::array<std::pair<std::string_view, B>, 13> kBases = {{
      {"Tensor", B::Tensor},
      {"int", B::Int},
      {"SymInt", B::SymInt},
      {"float", B::Float},
      {"bool", B::Bool},
      {"str", B::Str},
      {"Scalar", B::Scalar},
      {"ScalarType", B::ScalarType},
      {"Layout", B::Layout},
      {"Device", B::Device},
      {"MemoryFormat", B::MemoryFormat},
      {"Generator", B::Generator},
      {"Any", B::Any},
  }};
  for (const auto &[n, b] : kBases)
    if (n == s)
      return b;
  return std::nullopt;
}

std::string formatFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  std::array<char, 64> buf{};
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  std::string s(buf.data(), res.ptr);
  // Keep a float a float when printed ("0.0", not "0").
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

std::string quoteString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

// Prints a default value as the schema language spells it.
std::string formatDefault(const Argument &a) {
  switch (a.kind()) {
  case Argument::Kind::None:
    return "None";
  case Argument::Kind::Bool:
    return a.boolean() ? "True" : "False";
  case Argument::Kind::Int:
    return std::to_string(a.integer());
  case Argument::Kind::Float:
    return formatFloat(a.floating());
  case Argument::Kind::String:
    return quoteString(a.string());
  case Argument::Kind::DType:
    return std::string(torchName(a.dtype()));
  case Argument::Kind::Device:
    return quoteString(a.device().str());
  case Argument::Kind::Layout:
    return std::string(name(a.layout()));
  case Argument::Kind::MemoryFormat:
    return std::string(name(a.memoryFormat()));
  case Argument::Kind::List: {
    std::string out = "[";
    for (std::size_t i = 0; i < a.list().size(); ++i) {
      if (i)
        out += ", ";
      out += formatDefault(a.list()[i]);
    }
    return out + "]";
  }
  case Argument::Kind::Value:
    return "<value>";
  }
  return "?";
}

} // namespace

std::string SchemaType::str() const {
  std::string out(baseName(base));
  if (!alias.empty())
    out += "(" + alias + ")";
  if (isList) {
    if (elementOptional)
      out += "?";
    out += "[";
    if (fixedLength >= 0)
      out += std::to_string(fixedLength);
    out += "]";
  }
  if (optional)
    out += "?";
  return out;
}

std::string OpSchema::str() const {
  std::string out = ns + "::" + name + "." + overload + "(";
  bool kwOnlyPrinted = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i)
      out += ", ";
    const SchemaArg &a = args[i];
    if (a.keywordOnly && !kwOnlyPrinted) {
      out += "*, ";
      kwOnlyPrinted = true;
    }
    out += a.type.str() + " " + a.name;
    if (a.defaultValue)
      out += "=" + formatDefault(*a.defaultValue);
  }
  out += ") -> ";
  bool parens = returns.size() != 1 || !returns[0].name.empty();
  if (parens)
    out += "(";
  for (std::size_t i = 0; i < returns.size(); ++i) {
    if (i)
      out += ", ";
    out += returns[i].type.str();
    if (!returns[i].name.empty())
      out += " " + returns[i].name;
  }
  if (parens)
    out += ")";
  return out;
}

int OpSchema::argIndex(std::string_view argName) const {
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].name == argName)
      return static_cast<int>(i);
  return -1;
}

std::size_t OpSchema::numPositional() const {
  std::size_t n = 0;
  while (n < args.size() && !args[n].keywordOnly)
    ++n;
  return n;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

class SchemaParser {
public:
  explicit SchemaParser(std::string_view text) : text_(text) {}

  Expected<OpSchema> parse() {
    OpSchema schema;
    skipSpace();
    std::string first = identifier();
    if (first.empty())
      return error("expected an operator namespace");
    if (!consume("::"))
      return error("expected '::' after the namespace '" + first + "'");
    schema.ns = first;
    schema.name = identifier();
    if (schema.name.empty())
      return error("expected an operator name");
    schema.overload = "default";
    if (consume(".")) {
      schema.overload = identifier();
      if (schema.overload.empty())
        return error("expected an overload name after '.'");
    }
    skipSpace();
    if (!consume("("))
      return error("expected '(' after the operator name");
    if (!parseArgs(schema))
      return takeError();
    skipSpace();
    if (!consume("->"))
      return error("expected '->' before the return types");
    if (!parseReturns(schema))
      return takeError();
    skipSpace();
    if (pos_ != text_.size())
      return error("unexpected text after the return types");
    return schema;
  }

private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::optional<Diagnostic> error_;

  Diagnostic makeError(const std::string &message, std::size_t at) const {
    SourceRange range;
    range.begin.file = "<schema>";
    range.begin.line = 1;
    range.begin.column = static_cast<uint32_t>(at + 1);
    std::string caret(at, ' ');
    Diagnostic d = Diagnostic::error(range, "invalid op schema, column " + std::to_string(at + 1) +
                                                ": " + message);
    d.note("in schema: " + std::string(text_));
    d.note("           " + caret + "^");
    return d;
  }
  Failure error(const std::string &message) { return Failure(makeError(message, pos_)); }
  bool fail(const std::string &message, std::optional<std::size_t> at = std::nullopt) {
    if (!error_)
      error_ = makeError(message, at.value_or(pos_));
    return false;
  }
  Failure takeError() { return Failure(*error_); }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipSpace() {
    while (!atEnd() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(std::string_view tok) {
    skipSpace();
    if (text_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  static bool isIdentStart(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  }
  static bool isIdentChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }
  std::string identifier() {
    skipSpace();
    if (!isIdentStart(peek()))
      return {};
    std::size_t b = pos_;
    while (!atEnd() && isIdentChar(text_[pos_]))
      ++pos_;
    return std::string(text_.substr(b, pos_ - b));
  }

  bool parseArgs(OpSchema &schema) {
    skipSpace();
    if (consume(")"))
      return true;
    bool keywordOnly = false;
    while (true) {
      skipSpace();
      if (consume("*")) {
        if (keywordOnly)
          return fail("'*' appears twice");
        keywordOnly = true;
      } else {
        SchemaArg arg;
        arg.keywordOnly = keywordOnly;
        if (!parseType(arg.type))
          return false;
        skipSpace();
        std::size_t nameAt = pos_;
        arg.name = identifier();
        if (arg.name.empty())
          return fail("expected an argument name");
        if (schema.argIndex(arg.name) >= 0)
          return fail("duplicate argument name '" + arg.name + "'", nameAt);
        if (consume("=")) {
          skipSpace();
          auto v = parseDefault(arg.type);
          if (!v)
            return false;
          arg.defaultValue = std::move(*v);
        } else if (!keywordOnly && !schema.args.empty() && schema.args.back().defaultValue &&
                   !schema.args.back().keywordOnly) {
          // torch allows this (e.g. `Tensor? a=None, Tensor b`) only in
          // keyword-only sections; positional binding would be ambiguous.
          return fail("required positional argument '" + arg.name +
                          "' follows an argument with a default",
                      nameAt);
        }
        schema.args.push_back(std::move(arg));
      }
      if (consume(")"))
        return true;
      if (!consume(","))
        return fail("expected ',' or ')' in the argument list");
    }
  }

  bool parseType(SchemaType &type) {
    skipSpace();
    std::size_t at = pos_;
    std::string base = identifier();
    if (base.empty())
      return fail("expected a type");
    auto b = parseBaseName(base);
    if (!b)
      return fail("unknown type '" + base + "'", at);
    type.base = *b;
    // Alias annotation: Tensor(a), Tensor(a!), Tensor(a -> *), Tensor(a|b).
    if (peek() == '(') {
      std::size_t open = pos_++;
      std::size_t close = text_.find(')', pos_);
      if (close == std::string_view::npos)
        return fail("unterminated alias annotation", open);
      std::string alias;
      for (char c : text_.substr(pos_, close - pos_)) {
        if (std::isspace(static_cast<unsigned char>(c)))
          continue;
        alias += c;
      }
      if (alias.empty())
        return fail("empty alias annotation", open);
      // Canonical spacing: "a -> *".
      if (auto arrow = alias.find("->"); arrow != std::string::npos)
        alias = alias.substr(0, arrow) + " -> " + alias.substr(arrow + 2);
      type.alias = alias;
      pos_ = close + 1;
    }
    bool firstOptional = false;
    if (peek() == '?') {
      firstOptional = true;
      ++pos_;
    }
    if (peek() == '[') {
      ++pos_;
      type.isList = true;
      type.elementOptional = firstOptional;
      skipSpace();
      if (std::isdigit(static_cast<unsigned char>(peek()))) {
        std::size_t b2 = pos_;
        while (std::isdigit(static_cast<unsigned char>(peek())))
          ++pos_;
        type.fixedLength =
            std::strtoll(std::string(text_.substr(b2, pos_ - b2)).c_str(), nullptr, 10);
      }
      skipSpace();
      if (peek() != ']')
        return fail("expected ']' in a list type");
      ++pos_;
      if (peek() == '?') {
        type.optional = true;
        ++pos_;
      }
    } else {
      type.optional = firstOptional;
    }
    return true;
  }

  // One literal of the default-value language, untyped.
  struct Literal {
    enum class Kind { None, Bool, Int, Float, String, Ident, List } kind = Kind::None;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<Literal> items;
    std::size_t at = 0;
  };

  bool parseLiteral(Literal &lit) {
    skipSpace();
    lit.at = pos_;
    char c = peek();
    if (c == '[') {
      ++pos_;
      lit.kind = Literal::Kind::List;
      if (consume("]"))
        return true;
      while (true) {
        Literal item;
        if (!parseLiteral(item))
          return false;
        lit.items.push_back(std::move(item));
        if (consume("]"))
          return true;
        if (!consume(","))
          return fail("expected ',' or ']' in a list default");
      }
    }
    if (c == '"' || c == '\'') {
      ++pos_;
      lit.kind = Literal::Kind::String;
      while (!atEnd() && peek() != c) {
        if (peek() == '\\' && pos_ + 1 < text_.size())
          ++pos_;
        lit.s += text_[pos_++];
      }
      if (atEnd())
        return fail("unterminated string default", lit.at);
      ++pos_;
      return true;
    }
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t b = pos_;
      if (c == '-' || c == '+')
        ++pos_;
      std::string ident = identifier();
      if (ident == "inf") {
        lit.kind = Literal::Kind::Float;
        lit.f = c == '-' ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
        return true;
      }
      if (!ident.empty())
        return fail("malformed number", b);
      bool isFloat = false;
      while (!atEnd()) {
        char d = peek();
        if (std::isdigit(static_cast<unsigned char>(d))) {
          ++pos_;
        } else if (d == '.' || d == 'e' || d == 'E') {
          isFloat = true;
          ++pos_;
          if ((d == 'e' || d == 'E') && (peek() == '-' || peek() == '+'))
            ++pos_;
        } else {
          break;
        }
      }
      std::string num(text_.substr(b, pos_ - b));
      if (num[0] == '+')
        num.erase(0, 1);
      const char *first = num.data();
      const char *last = num.data() + num.size();
      if (isFloat) {
        lit.kind = Literal::Kind::Float;
        auto res = std::from_chars(first, last, lit.f);
        if (res.ec != std::errc() || res.ptr != last)
          return fail("malformed number '" + num + "'", b);
      } else {
        lit.kind = Literal::Kind::Int;
        auto res = std::from_chars(first, last, lit.i);
        if (res.ec != std::errc() || res.ptr != last)
          return fail("malformed or out-of-range integer '" + num + "'", b);
      }
      return true;
    }
    std::string ident = identifier();
    if (ident.empty())
      return fail("expected a default value");
    if (ident == "None") {
      lit.kind = Literal::Kind::None;
    } else if (ident == "True" || ident == "False") {
      lit.kind = Literal::Kind::Bool;
      lit.b = ident == "True";
    } else if (ident == "inf" || ident == "nan") {
      lit.kind = Literal::Kind::Float;
      lit.f = ident == "inf" ? std::numeric_limits<double>::infinity()
                             : std::numeric_limits<double>::quiet_NaN();
    } else {
      lit.kind = Literal::Kind::Ident;
      lit.s = ident;
    }
    return true;
  }

  // Converts a literal to an Argument of element type `base`.
  std::optional<Argument> typedScalar(const Literal &lit, const SchemaType &type) {
    using B = SchemaType::Base;
    using K = Literal::Kind;
    auto mismatch = [&]() -> std::optional<Argument> {
      fail("default value does not fit type '" + type.str() + "'", lit.at);
      return std::nullopt;
    };
    switch (type.base) {
    case B::Int:
    case B::SymInt:
      if (lit.kind == K::Int)
        return Argument(lit.i);
      return mismatch();
    case B::Float:
      if (lit.kind == K::Float)
        return Argument(lit.f);
      if (lit.kind == K::Int)
        return Argument(static_cast<double>(lit.i));
      return mismatch();
    case B::Bool:
      if (lit.kind == K::Bool)
        return Argument(lit.b);
      return mismatch();
    case B::Str:
      if (lit.kind == K::String)
        return Argument(lit.s);
      return mismatch();
    case B::Scalar:
      if (lit.kind == K::Int)
        return Argument(lit.i);
      if (lit.kind == K::Float)
        return Argument(lit.f);
      if (lit.kind == K::Bool)
        return Argument(lit.b);
      return mismatch();
    case B::ScalarType:
      if (lit.kind == K::Int) {
        if (auto d = dtypeFromScalarTypeIndex(lit.i))
          return Argument(*d);
        fail("unknown ScalarType number " + std::to_string(lit.i), lit.at);
        return std::nullopt;
      }
      if (lit.kind == K::Ident) {
        if (auto d = parseDType(lit.s))
          return Argument(*d);
        fail("unknown dtype '" + lit.s + "'", lit.at);
        return std::nullopt;
      }
      return mismatch();
    case B::Layout:
      if (lit.kind == K::Ident)
        if (auto l = parseLayout(lit.s))
          return Argument(*l);
      return mismatch();
    case B::MemoryFormat:
      if (lit.kind == K::Ident)
        if (auto m = parseMemoryFormat(lit.s))
          return Argument(*m);
      return mismatch();
    case B::Device:
      if (lit.kind == K::String || lit.kind == K::Ident) {
        Device d;
        std::string s = lit.s;
        auto colon = s.find(':');
        d.type = s.substr(0, colon);
        if (colon != std::string::npos) {
          const char *f = s.data() + colon + 1;
          const char *l = s.data() + s.size();
          auto res = std::from_chars(f, l, d.index);
          if (res.ec != std::errc() || res.ptr != l)
            return mismatch();
        }
        return Argument(d);
      }
      return mismatch();
    case B::Tensor:
    case B::Generator:
    case B::Any:
      return mismatch();
    }
    return mismatch();
  }

  std::optional<Argument> parseDefault(const SchemaType &type) {
    Literal lit;
    if (!parseLiteral(lit))
      return std::nullopt;
    if (lit.kind == Literal::Kind::None) {
      if (!type.optional && type.base != SchemaType::Base::Any) {
        fail("default None for non-optional type '" + type.str() + "'", lit.at);
        return std::nullopt;
      }
      return Argument::none();
    }
    if (!type.isList) {
      if (lit.kind == Literal::Kind::List) {
        fail("list default for non-list type '" + type.str() + "'", lit.at);
        return std::nullopt;
      }
      return typedScalar(lit, type);
    }
    SchemaType elem = type;
    elem.isList = false;
    elem.optional = type.elementOptional;
    if (lit.kind != Literal::Kind::List) {
      // `int[2] stride=1`: torch broadcasts a single value to the list; the
      // default keeps the spelling, binding accepts a scalar for `T[N]`.
      if (type.fixedLength < 0) {
        fail("scalar default for list type '" + type.str() + "'", lit.at);
        return std::nullopt;
      }
      return typedScalar(lit, elem);
    }
    Argument::List items;
    for (const Literal &item : lit.items) {
      if (item.kind == Literal::Kind::None && elem.optional) {
        items.emplace_back();
        continue;
      }
      auto v = typedScalar(item, elem);
      if (!v)
        return std::nullopt;
      items.push_back(std::move(*v));
    }
    return Argument(std::move(items));
  }

  bool parseReturn(SchemaReturn &ret, bool allowName) {
    if (!parseType(ret.type))
      return false;
    if (allowName) {
      skipSpace();
      if (isIdentStart(peek()))
        ret.name = identifier();
    }
    return true;
  }

  bool parseReturns(OpSchema &schema) {
    skipSpace();
    if (consume("(")) {
      if (consume(")"))
        return true;
      while (true) {
        SchemaReturn ret;
        if (!parseReturn(ret, /*allowName=*/true))
          return false;
        schema.returns.push_back(std::move(ret));
        if (consume(")"))
          return true;
        if (!consume(","))
          return fail("expected ',' or ')' in the return list");
      }
    }
    SchemaReturn ret;
    if (!parseReturn(ret, /*allowName=*/false))
      return false;
    schema.returns.push_back(std::move(ret));
    return true;
  }
};

} // namespace

Expected<OpSchema> parseSchema(std::string_view text) {
  return SchemaParser(text).parse();
}

} // namespace graft
