//===- Pt2Common.cpp - JSON helpers and enum tables for .pt2 --------------===//
//
// The export schema numbers enums its own way (ScalarType FLOAT is 7, c10
// says 6); these tables are the single place that knows both. The JSON
// writer reproduces Python's json.dumps output byte for byte (separators
// ", " and ": ", ensure_ascii, repr floats), so rewritten archives read like
// torch's own.
//
//===----------------------------------------------------------------------===//
#include "pt2/Pt2Internal.h"

#include "graft/serialize/Json.h"
#include "graft/serialize/TextIR.h"

#include <cmath>
#include <cstdio>
#include <future>

namespace graft {

std::string_view name(Pt2Layout layout) {
  switch (layout) {
  case Pt2Layout::Legacy:
    return "legacy (torch <= 2.7)";
  case Pt2Layout::PickledWeights:
    return "pt2 archive, pickled weights (torch 2.8)";
  case Pt2Layout::RawWeights:
    return "pt2 archive, raw weights (torch >= 2.9)";
  }
  return "?";
}

namespace {

struct ScalarTypeRow {
  int64_t value;
  DType dtype;
};
// torch/_export/serde/schema.py ScalarType (8.20).
constexpr ScalarTypeRow kScalarTypes[] = {
    {1, DType::U8},          {2, DType::I8},          {3, DType::I16},        {4, DType::I32},
    {5, DType::I64},         {6, DType::F16},         {7, DType::F32},        {8, DType::F64},
    {9, DType::C32},         {10, DType::C64},        {11, DType::C128},      {12, DType::Bool},
    {13, DType::BF16},       {28, DType::U16},        {29, DType::F8E4M3FN},  {30, DType::F8E5M2},
    {31, DType::F8E4M3FNUZ}, {32, DType::F8E5M2FNUZ}, {33, DType::F8E8M0FNU}, {34, DType::U32},
    {35, DType::U64},
};

} // namespace

int64_t exportScalarType(DType dtype) {
  for (const ScalarTypeRow &r : kScalarTypes)
    if (r.dtype == dtype)
      return r.value;
  return -1;
}

std::optional<DType> dtypeFromExportScalarType(int64_t value) {
  for (const ScalarTypeRow &r : kScalarTypes)
    if (r.value == value)
      return r.dtype;
  return std::nullopt;
}

std::string str(const Pt2SpecializedInput &in) {
  return in.name + " = " + pt2::constantText(in.value);
}

std::string str(const Pt2ConstantOutput &out) {
  return pt2::constantText(out.value);
}

namespace pt2 {

std::string constantText(const Argument &value) {
  switch (value.kind()) {
  case Argument::Kind::None:
    return "None";
  case Argument::Kind::Bool:
    return value.boolean() ? "True" : "False";
  case Argument::Kind::Int:
    return std::to_string(value.integer());
  case Argument::Kind::Float:
    return formatFloat(value.floating());
  case Argument::Kind::String:
    return dumpPythonJson(OJson(value.string()));
  default:
    return "<" + std::string(name(value.kind())) + ">";
  }
}

std::optional<Layout> layoutFromExport(int64_t v) {
  switch (v) {
  case 1:
    return Layout::SparseCoo;
  case 2:
    return Layout::SparseCsr;
  case 3:
    return Layout::SparseCsc;
  case 4:
    return Layout::SparseBsr;
  case 5:
    return Layout::SparseBsc;
  case 6:
    return Layout::Mkldnn;
  case 7:
    return Layout::Strided;
  default:
    return std::nullopt;
  }
}

int64_t exportLayout(Layout l) {
  switch (l) {
  case Layout::SparseCoo:
    return 1;
  case Layout::SparseCsr:
    return 2;
  case Layout::SparseCsc:
    return 3;
  case Layout::SparseBsr:
    return 4;
  case Layout::SparseBsc:
    return 5;
  case Layout::Mkldnn:
    return 6;
  case Layout::Strided:
    return 7;
  case Layout::Jagged:
    return 0;
  }
  return 0;
}

std::optional<MemoryFormat> memoryFormatFromExport(int64_t v) {
  switch (v) {
  case 1:
    return MemoryFormat::Contiguous;
  case 2:
    return MemoryFormat::ChannelsLast;
  case 3:
    return MemoryFormat::ChannelsLast3d;
  case 4:
    return MemoryFormat::Preserve;
  default:
    return std::nullopt;
  }
}

int64_t exportMemoryFormat(MemoryFormat m) {
  switch (m) {
  case MemoryFormat::Contiguous:
    return 1;
  case MemoryFormat::ChannelsLast:
    return 2;
  case MemoryFormat::ChannelsLast3d:
    return 3;
  case MemoryFormat::Preserve:
    return 4;
  }
  return 0;
}

std::string nodeKey(const Node &node, std::map<std::string, int> &zeroOutputCounts) {
  if (!node.outputs().empty())
    return node.outputs()[0]->name();
  int k = zeroOutputCounts[node.target()]++;
  return "#" + node.target() + "#" + std::to_string(k);
}

//===----------------------------------------------------------------------===//
// JsonRef
//===----------------------------------------------------------------------===//

namespace {
std::string typeName(const JsonValue &j) {
  switch (j.kind()) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Object:
    return "an object";
  case JsonValue::Kind::Array:
    return "an array";
  case JsonValue::Kind::String:
    return "a string";
  case JsonValue::Kind::Boolean:
    return "a boolean";
  case JsonValue::Kind::Integer:
  case JsonValue::Kind::Unsigned:
    return "an integer";
  case JsonValue::Kind::Float:
    return "a float";
  }
  return "a binary value";
}
} // namespace

enum class JsonRef::StepKind : uint8_t { Root, Field, Index, Member, Union };

/// How a reference was reached from its parent.
struct JsonRef::Step {
  StepKind kind = StepKind::Root;
  uint32_t refs = 0; ///< references and child steps holding this one
  Step *parent = nullptr;
  Pool *pool = nullptr;
  std::string_view key;  ///< Field, Member, Union: the key, in the document
  std::size_t index = 0; ///< Index
};

/// The steps of one root, recycled through a free list; the root step is
/// released last (every step holds its parent), and frees the pool.
struct JsonRef::Pool {
  static constexpr std::size_t kChunk = 256;
  std::string record, rootPath;
  std::vector<std::unique_ptr<Step[]>> chunks;
  std::size_t used = kChunk; ///< steps handed out of chunks.back()
  Step *free = nullptr;      ///< released steps, linked through `parent`

  Step *take() {
    if (free) {
      Step *s = free;
      free = s->parent;
      return s;
    }
    if (used == kChunk) {
      chunks.push_back(std::make_unique<Step[]>(kChunk));
      used = 0;
    }
    return &chunks.back()[used++];
  }
};

JsonRef::JsonRef(const JsonValue &j, std::string record, std::string path) : j_(&j) {
  auto *pool = new Pool;
  pool->record = std::move(record);
  pool->rootPath = std::move(path);
  step_ = pool->take();
  *step_ = Step{StepKind::Root, 1, nullptr, pool, {}, 0};
}

void JsonRef::retain(Step *s) {
  if (s)
    ++s->refs;
}

void JsonRef::release(Step *s) {
  while (s && --s->refs == 0) {
    Step *parent = s->parent;
    Pool *pool = s->pool;
    if (s->kind == StepKind::Root) {
      delete pool; // its own step lives in the pool
      return;
    }
    s->parent = pool->free;
    pool->free = s;
    s = parent;
  }
}

JsonRef JsonRef::child(const JsonValue &j, StepKind kind, std::string_view key,
                       std::size_t index) const {
  Step *s = step_->pool->take();
  *s = Step{kind, 1, step_, step_->pool, key, index};
  ++step_->refs;
  return JsonRef(j, s);
}

std::string JsonRef::path() const {
  std::vector<const Step *> steps;
  for (const Step *s = step_; s; s = s->parent)
    steps.push_back(s);
  std::string p = steps.back()->pool->rootPath;
  for (auto it = steps.rbegin() + 1; it != steps.rend(); ++it) {
    const Step &s = **it;
    switch (s.kind) {
    case StepKind::Field:
      p = p.empty() ? std::string(s.key) : p + "." + std::string(s.key);
      break;
    case StepKind::Index:
      p += "[" + std::to_string(s.index) + "]";
      break;
    case StepKind::Member:
      p += "[" + OJson(std::string(s.key)).dump() + "]";
      break;
    case StepKind::Union:
      p += "." + std::string(s.key);
      break;
    case StepKind::Root:
      break;
    }
  }
  return p;
}

Diagnostic JsonRef::error(const std::string &what) const {
  std::string p = path();
  return Diagnostic::error(step_->pool->record + ": " + (p.empty() ? "<root>" : p) + ": " + what);
}

Expected<JsonRef> JsonRef::field(std::string_view name) const {
  if (!j_->isObject())
    return error("expected an object, got " + typeName(*j_));
  for (const JsonMember &m : j_->members())
    if (m.key == name)
      return child(m.value, StepKind::Field, m.key, 0);
  return error("missing required field '" + std::string(name) + "'");
}

Expected<std::optional<JsonRef>> JsonRef::optField(std::string_view name) const {
  if (!j_->isObject())
    return error("expected an object, got " + typeName(*j_));
  for (const JsonMember &m : j_->members())
    if (m.key == name) {
      if (m.value.isNull())
        break;
      return std::optional<JsonRef>(child(m.value, StepKind::Field, m.key, 0));
    }
  return std::optional<JsonRef>();
}

Expected<std::vector<JsonRef>> JsonRef::array() const {
  if (!j_->isArray())
    return error("expected an array, got " + typeName(*j_));
  std::span<const JsonValue> elements = j_->elements();
  std::vector<JsonRef> out;
  out.reserve(elements.size());
  for (std::size_t i = 0; i < elements.size(); ++i)
    out.push_back(child(elements[i], StepKind::Index, {}, i));
  return out;
}

Expected<std::vector<std::pair<std::string_view, JsonRef>>> JsonRef::members() const {
  if (!j_->isObject())
    return error("expected an object, got " + typeName(*j_));
  std::vector<std::pair<std::string_view, JsonRef>> out;
  out.reserve(j_->size());
  for (const JsonMember &m : j_->members())
    out.emplace_back(m.key, child(m.value, StepKind::Member, m.key, 0));
  return out;
}

Expected<std::pair<std::string_view, JsonRef>> JsonRef::unionMember() const {
  if (!j_->isObject())
    return error("expected a single-key union object, got " + typeName(*j_));
  if (j_->size() != 1)
    return error("a union must have exactly one key, this one has " + std::to_string(j_->size()));
  const JsonMember &m = j_->members()[0];
  return std::make_pair(m.key, child(m.value, StepKind::Union, m.key, 0));
}

Expected<std::string> JsonRef::str() const {
  if (!j_->isString())
    return error("expected a string, got " + typeName(*j_));
  return std::string(j_->string());
}

Expected<int64_t> JsonRef::integer() const {
  if (j_->kind() == JsonValue::Kind::Unsigned) {
    uint64_t u = j_->unsignedInteger();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return error("integer " + std::to_string(u) + " is out of the int64 range");
    return static_cast<int64_t>(u);
  }
  if (!j_->isInteger())
    return error("expected an integer, got " + typeName(*j_));
  return j_->integer();
}

Expected<bool> JsonRef::boolean() const {
  if (!j_->isBoolean())
    return error("expected a boolean, got " + typeName(*j_));
  return j_->boolean();
}

Expected<double> JsonRef::number() const {
  if (j_->isNumber())
    return j_->number();
  if (j_->isString()) {
    std::string_view s = j_->string();
    if (s == "Infinity" || s == "inf")
      return HUGE_VAL;
    if (s == "-Infinity" || s == "-inf")
      return -HUGE_VAL;
    if (s == "NaN" || s == "nan")
      return std::nan("");
  }
  return error("expected a number, got " + typeName(*j_));
}

//===----------------------------------------------------------------------===//
// Python-compatible JSON text
//===----------------------------------------------------------------------===//

namespace {

void appendEscaped(std::string &out, const std::string &s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    std::size_t len = 1;
    if (c >= 0x80) {
      // Decode UTF-8; invalid bytes are escaped as themselves.
      if ((c & 0xE0) == 0xC0 && i + 1 < s.size())
        cp = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F), len = 2;
      else if ((c & 0xF0) == 0xE0 && i + 2 < s.size())
        cp = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F), len = 3;
      else if ((c & 0xF8) == 0xF0 && i + 3 < s.size())
        cp = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) |
             (s[i + 3] & 0x3F),
        len = 4;
    }
    i += len;
    char buf[16];
    switch (cp) {
    case '"':
      out += "\\\"";
      continue;
    case '\\':
      out += "\\\\";
      continue;
    case '\n':
      out += "\\n";
      continue;
    case '\r':
      out += "\\r";
      continue;
    case '\t':
      out += "\\t";
      continue;
    case '\b':
      out += "\\b";
      continue;
    case '\f':
      out += "\\f";
      continue;
    default:
      break;
    }
    if (cp < 0x20 || cp >= 0x7F) {
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    } else {
      out += static_cast<char>(cp);
    }
  }
  out += '"';
}

void dump(std::string &out, const OJson &j) {
  switch (j.type()) {
  case OJson::value_t::null:
    out += "null";
    return;
  case OJson::value_t::boolean:
    out += j.get<bool>() ? "true" : "false";
    return;
  case OJson::value_t::number_integer:
    out += std::to_string(j.get<int64_t>());
    return;
  case OJson::value_t::number_unsigned:
    out += std::to_string(j.get<uint64_t>());
    return;
  case OJson::value_t::number_float: {
    double v = j.get<double>();
    if (std::isnan(v))
      out += "NaN";
    else if (std::isinf(v))
      out += v > 0 ? "Infinity" : "-Infinity";
    else
      out += formatFloat(v);
    return;
  }
  case OJson::value_t::string:
    appendEscaped(out, j.get_ref<const std::string &>());
    return;
  case OJson::value_t::array: {
    out += '[';
    bool first = true;
    for (const OJson &x : j) {
      if (!first)
        out += ", ";
      first = false;
      dump(out, x);
    }
    out += ']';
    return;
  }
  case OJson::value_t::object: {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first)
        out += ", ";
      first = false;
      appendEscaped(out, it.key());
      out += ": ";
      dump(out, it.value());
    }
    out += '}';
    return;
  }
  default:
    out += "null";
  }
}

} // namespace

std::string dumpPythonJson(const OJson &j) {
  std::string out;
  dump(out, j);
  return out;
}

Expected<JsonDocument> parseJsonRecord(const ZipReader &zip, const ZipEntry &entry) {
  auto named = [&](Expected<JsonDocument> doc) -> Expected<JsonDocument> {
    if (!doc.ok()) {
      Diagnostic d = doc.diags().front();
      d.message = entry.name + ": not valid JSON: " + d.message;
      return d;
    }
    return std::move(*doc);
  };
  if (entry.method != 0) {
    GRAFT_TRY(std::string text, zip.read(entry));
    return named(JsonDocument::parse(std::move(text)));
  }
  GRAFT_TRY(std::shared_ptr<Storage> bytes, zip.map(entry));
  const uint8_t *data = bytes->data();
  std::string_view text(reinterpret_cast<const char *>(data), bytes->size());
  // model.json is 11 MB at 128 layers: its CRC (~4 ms) runs beside the parse.
  constexpr std::size_t kCrcBesideParse = std::size_t(1) << 20;
  if (text.size() < kCrcBesideParse) {
    GRAFT_CHECK_OK(zip.checkCrc(entry, data));
    return named(JsonDocument::parse(text, std::move(bytes)));
  }
  std::future<Status> crc =
      std::async(std::launch::async, [&zip, &entry, data] { return zip.checkCrc(entry, data); });
  Expected<JsonDocument> doc = JsonDocument::parse(text, std::move(bytes));
  GRAFT_CHECK_OK(crc.get());
  return named(std::move(doc));
}

} // namespace pt2
} // namespace graft
