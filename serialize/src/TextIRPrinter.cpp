//===- TextIRPrinter.cpp - Canonical printer for graft's text IR (.gir) ---===//
//
// Prints a Graph in the one canonical layout the parser reads back byte for
// byte: 2-space indent; symbols, inputs, nodes, then outputs and mutations,
// each in stored order; types as TensorProto::str() spells them (contiguous
// strides dropped); floats as the shortest decimal that reads back to the
// same value. Constants keep their textual initializer (random/full/file);
// constants whose data has no textual source are printed inline when small
// and otherwise written to a sidecar data file at 64-byte aligned offsets.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"
#include "graft/support/FloatBits.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>

namespace graft {
namespace {

/// Significant digits and decimal exponent of a finite value as printed by
/// to_chars in scientific form: value = d.ddd * 10^exponent.
struct Decimal {
  bool negative = false;
  std::string digits;
  int exponent = 0;
};

Decimal splitScientific(std::string_view s) {
  Decimal d;
  if (!s.empty() && s[0] == '-') {
    d.negative = true;
    s.remove_prefix(1);
  }
  std::size_t e = s.find('e');
  for (char c : s.substr(0, e))
    if (c != '.')
      d.digits += c;
  std::string_view exp = s.substr(e + 1);
  if (!exp.empty() && exp[0] == '+')
    exp.remove_prefix(1);
  std::from_chars(exp.data(), exp.data() + exp.size(), d.exponent);
  while (d.digits.size() > 1 && d.digits.back() == '0')
    d.digits.pop_back();
  return d;
}

/// Python repr's layout: positional notation for exponents in [-4, 16),
/// scientific otherwise; always contains '.' or 'e' so it reads as a float.
std::string layout(const Decimal &d) {
  std::string out = d.negative ? "-" : "";
  const std::string &g = d.digits;
  int n = static_cast<int>(g.size());
  if (d.exponent >= -4 && d.exponent < 16) {
    if (d.exponent < 0)
      return out + "0." + std::string(static_cast<std::size_t>(-d.exponent - 1), '0') + g;
    int intDigits = d.exponent + 1;
    if (n <= intDigits)
      return out + g + std::string(static_cast<std::size_t>(intDigits - n), '0') + ".0";
    return out + g.substr(0, static_cast<std::size_t>(intDigits)) + "." +
           g.substr(static_cast<std::size_t>(intDigits));
  }
  out += g.substr(0, 1);
  if (n > 1)
    out += "." + g.substr(1);
  int e = d.exponent;
  out += e < 0 ? "e-" : "e+";
  int a = e < 0 ? -e : e;
  if (a < 10)
    out += '0';
  return out + std::to_string(a);
}

std::string nonFinite(double v) {
  if (std::isnan(v))
    return "nan";
  return v < 0 ? "-inf" : "inf";
}

/// The value a decimal reads back as once stored in `dtype`, the way the
/// parser stores it (double -> float -> dtype), as comparable bits.
uint32_t storedBits(double v, DType dtype) {
  float f = roundToDType(static_cast<float>(v), dtype);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool isValueName(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

/// "ns.name.overload": two or more identifiers joined by dots.
bool isTarget(std::string_view s) {
  std::size_t parts = 0;
  while (true) {
    std::size_t dot = s.find('.');
    if (!isIdentifier(s.substr(0, dot)))
      return false;
    ++parts;
    if (dot == std::string_view::npos)
      return parts >= 2;
    s.remove_prefix(dot + 1);
  }
}

std::string quote(std::string_view s) {
  static const char *kHex = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (u < 0x20 || u == 0x7f) {
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 15];
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

/// Integer-valued numbers of integer-typed constants print as integers
/// (random(min=-8, max=7)); everything else as a float.
std::string initNumber(double v, DType dtype) {
  if (isIntegral(dtype, /*includeBool=*/true) && std::isfinite(v) && v == std::floor(v) &&
      std::fabs(v) < 0x1p63)
    return std::to_string(static_cast<int64_t>(v));
  return formatFloat(v);
}

class Printer {
public:
  Printer(const Graph &graph, const PrintOptions &options) : graph_(graph), options_(options) {}

  Expected<std::string> print() {
    if (!isIdentifier(graph_.name()))
      return Diagnostic::error("cannot print graph name '" + graph_.name() +
                               "': not an identifier");
    out_ = "graph @" + graph_.name() + " {\n";
    for (const auto &[name, range] : graph_.symbols().all()) {
      out_ += "  sym " + name + " : [" + std::to_string(range.min) + ", " +
              (range.max ? std::to_string(*range.max) : "inf") + "]\n";
    }
    for (const GraphInput &in : graph_.inputs())
      GRAFT_CHECK_OK(input(in));
    for (const Node &node : graph_.nodes())
      GRAFT_CHECK_OK(nodeLine(node));
    for (const GraphOutput &o : graph_.outputs()) {
      GRAFT_TRY(std::string ref, valueRef(o.value));
      switch (o.kind) {
      case OutputKind::UserOutput:
        out_ += "  output " + ref + "\n";
        break;
      case OutputKind::BufferMutation:
        out_ += "  mutate buffer " + quote(o.target) + " = " + ref + "\n";
        break;
      case OutputKind::UserInputMutation:
        out_ += "  mutate input " + quote(o.target) + " = " + ref + "\n";
        break;
      }
    }
    out_ += "}\n";
    if (!data_.empty())
      GRAFT_CHECK_OK(writeFileAtomic(options_.dataFile, data_));
    return std::move(out_);
  }

private:
  Expected<std::string> valueRef(const Value *v) {
    if (!v)
      return Diagnostic::error("cannot print a null value reference");
    if (!isValueName(v->name()))
      return Diagnostic::error("cannot print value name '" + v->name() +
                               "': text IR names use letters, digits and '_'");
    return "%" + v->name();
  }

  static std::string typeStr(const Value &v) {
    if (v.kind() != ValueKind::Tensor)
      return std::string(name(v.kind()));
    TensorProto p = v.proto();
    if (!p.strides.empty() && p.strides == contiguousStrides(p.shape))
      p.strides.clear(); // the parser normalizes these away too
    return p.str();
  }

  Status input(const GraphInput &in) {
    GRAFT_TRY(std::string ref, valueRef(in.value));
    std::string line = "  " + std::string(name(in.kind)) + " " + ref + " : " + typeStr(*in.value);
    if (in.isConstant()) {
      line += " fqn=" + quote(in.fqn);
      if (in.kind == InputKind::Buffer && !in.persistent)
        line += " persistent=false";
      if (in.init && options_.printInitializers) {
        GRAFT_TRY(std::string init, initializer(in));
        line += " = " + init;
      }
    }
    out_ += line + "\n";
    return okStatus();
  }

  Expected<std::string> initializer(const GraphInput &in) {
    DType dt = in.value->proto().dtype;
    if (const auto *r = std::get_if<RandomInit>(&*in.init))
      return "random(seed=" + std::to_string(r->seed) + ", min=" + initNumber(r->min, dt) +
             ", max=" + initNumber(r->max, dt) + ")";
    if (const auto *f = std::get_if<FullInit>(&*in.init)) {
      if (dt == DType::Bool && (f->value == 0.0 || f->value == 1.0))
        return std::string(f->value != 0.0 ? "full(true)" : "full(false)");
      return "full(" + initNumber(f->value, dt) + ")";
    }
    if (const auto *f = std::get_if<FileInit>(&*in.init))
      return "file(" + quote(filePath(*f)) + ", offset=" + std::to_string(f->offset) +
             ", bytes=" + std::to_string(f->bytes) + ")";
    return dataInitializer(in);
  }

  /// A file() path as the text at options_.outputDir must name it: as read
  /// when absolute or when nothing says where it was read from, else
  /// relative to the output directory.
  std::string filePath(const FileInit &f) const {
    namespace fs = std::filesystem;
    if (options_.outputDir.empty() || f.resolved.empty() || fs::path(f.path).is_absolute())
      return f.path;
    std::error_code ec;
    fs::path dir = fs::absolute(options_.outputDir, ec).lexically_normal();
    if (ec)
      return f.path;
    fs::path rel = fs::path(f.resolved).lexically_relative(dir);
    return rel.empty() ? f.resolved : rel.string();
  }

  /// InlineInit / ExternalData: the values inline, or a reference into the
  /// data file for large or non-textual ones.
  Expected<std::string> dataInitializer(const GraphInput &in) {
    const TensorProto &proto = in.value->proto();
    const Tensor &t = in.data();
    if (const Diagnostic *why = in.dataError())
      return Diagnostic::error("constant '" + in.fqn + "': " + why->message);
    if (!t.defined())
      return Diagnostic::error("constant '" + in.fqn + "' has an inline initializer but no data");
    if (proto.quant)
      return Diagnostic::error("cannot print the data of quantized constant '" + in.fqn +
                               "'; give each buffer as its own constant");
    auto sizes = concreteSizes(proto.shape);
    if (!sizes || t.dtype() != proto.dtype || t.sizes() != *sizes)
      return Diagnostic::error("constant '" + in.fqn + "' holds " + t.proto().str() +
                               " data but its type is " + proto.str());
    DType dt = t.dtype();
    bool textual =
        dt == DType::Bool || (isFloatingPoint(dt) && dt != DType::F4E2M1FNx2) || isIntegral(dt);
    if (textual && t.numel() <= options_.maxInlineElements)
      return inlineValues(t);
    return spill(in, t);
  }

  static std::string inlineValues(const Tensor &t) {
    std::string s = "[";
    DType dt = t.dtype();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      if (i)
        s += ", ";
      if (dt == DType::Bool)
        s += t.getInt(i) ? "true" : "false";
      else if (dt == DType::U64)
        s += std::to_string(static_cast<uint64_t>(t.getInt(i)));
      else if (isIntegral(dt))
        s += std::to_string(t.getInt(i));
      else
        s += formatFloat(t.getDouble(i), dt);
    }
    return s + "]";
  }

  Expected<std::string> spill(const GraphInput &in, const Tensor &t) {
    if (options_.dataFile.empty())
      return Diagnostic::error("constant '" + in.fqn + "' (" + std::to_string(t.numel()) +
                               " elements of " + std::string(name(t.dtype())) +
                               ") is too large to print inline; set PrintOptions::dataFile");
    // Views of the same bytes (tied weights) are written once.
    auto key = std::make_tuple(t.storage().get(), t.offset(), t.dtype(), t.sizes(), t.strides());
    auto it = spilled_.find(key);
    if (it == spilled_.end()) {
      Tensor c = t.contiguous();
      data_.resize((data_.size() + 63) / 64 * 64, '\0');
      uint64_t offset = data_.size();
      data_.append(reinterpret_cast<const char *>(c.rawData()), c.nbytes());
      it = spilled_.emplace(key, std::make_pair(offset, static_cast<uint64_t>(c.nbytes()))).first;
    }
    std::string ref = options_.dataFileRef.empty()
                          ? std::filesystem::path(options_.dataFile).filename().string()
                          : options_.dataFileRef;
    return "file(" + quote(ref) + ", offset=" + std::to_string(it->second.first) +
           ", bytes=" + std::to_string(it->second.second) + ")";
  }

  Status nodeLine(const Node &node) {
    if (!isTarget(node.target()))
      return Diagnostic::error("cannot print op name '" + node.target() +
                               "': expected namespace.op.overload");
    std::string line = "  ";
    for (std::size_t i = 0; i < node.outputs().size(); ++i) {
      GRAFT_TRY(std::string ref, valueRef(node.outputs()[i]));
      line += (i ? ", " : "") + ref + " : " + typeStr(*node.outputs()[i]);
    }
    if (!node.outputs().empty())
      line += " = ";
    line += node.target() + "(";
    bool first = true;
    for (const Argument &a : node.args()) {
      GRAFT_TRY(std::string s, argument(a));
      line += (first ? "" : ", ") + s;
      first = false;
    }
    for (const auto &[key, a] : node.kwargs()) {
      if (!isIdentifier(key))
        return Diagnostic::error("cannot print keyword argument '" + key + "' of node %" +
                                 node.name());
      GRAFT_TRY(std::string s, argument(a));
      line += (first ? "" : ", ") + key + "=" + s;
      first = false;
    }
    line += ")";
    if (options_.printMetadata && !node.metadata().empty()) {
      line += " {";
      for (std::size_t i = 0; i < node.metadata().size(); ++i) {
        const auto &[k, v] = node.metadata()[i];
        line += (i ? ", " : "") + (isIdentifier(k) ? k : quote(k)) + "=" + quote(v);
      }
      line += "}";
    }
    out_ += line + "\n";
    return okStatus();
  }

  Expected<std::string> argument(const Argument &a) {
    switch (a.kind()) {
    case Argument::Kind::None:
      return std::string("none");
    case Argument::Kind::Value:
      return valueRef(a.value());
    case Argument::Kind::Bool:
      return std::string(a.boolean() ? "true" : "false");
    case Argument::Kind::Int:
      return std::to_string(a.integer());
    case Argument::Kind::Float:
      return formatFloat(a.floating());
    case Argument::Kind::String:
      return quote(a.string());
    case Argument::Kind::DType:
      return std::string(name(a.dtype()));
    case Argument::Kind::Device:
      return a.device().str();
    case Argument::Kind::Layout:
      return std::string(name(a.layout()));
    case Argument::Kind::MemoryFormat:
      return std::string(name(a.memoryFormat()));
    case Argument::Kind::List: {
      std::string s = "[";
      for (std::size_t i = 0; i < a.list().size(); ++i) {
        GRAFT_TRY(std::string e, argument(a.list()[i]));
        s += (i ? ", " : "") + e;
      }
      return s + "]";
    }
    }
    return Diagnostic::internal("unknown argument kind");
  }

  const Graph &graph_;
  const PrintOptions &options_;
  std::string out_;
  std::string data_;
  std::map<std::tuple<const Storage *, int64_t, DType, std::vector<int64_t>, std::vector<int64_t>>,
           std::pair<uint64_t, uint64_t>>
      spilled_;
};

} // namespace

std::string formatFloat(double value) {
  if (!std::isfinite(value))
    return nonFinite(value);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  return layout(splitScientific(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf))));
}

std::string formatFloat(double value, DType dtype) {
  if (!std::isfinite(value))
    return nonFinite(value);
  if (dtype == DType::F64 || !isFloatingPoint(dtype))
    return formatFloat(value);
  uint32_t want = storedBits(value, dtype);
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific, digits - 1);
    std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
    double back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    if (storedBits(back, dtype) == want)
      return layout(splitScientific(text));
  }
  return formatFloat(value);
}

Expected<std::string> printGraph(const Graph &graph, const PrintOptions &options) {
  Printer printer(graph, options);
  return printer.print();
}

} // namespace graft
