//===- OpRegistry.cpp - Loading op declarations from YAML -----------------===//
//
// Op declarations are YAML documents: a sequence of mappings, one per op
// overload, with the keys
//
//   schema:          torch schema string (required)
//   infer:           name of the shape/dtype inference rule
//   kernel:          reference kernel name (default: the qualified name)
//   doc:             one-line semantics
//   properties:      list of flags: commutative, elementwise, view,
//                    side_effects, ephemeral
//   legacy_schemas:  older signatures still found in exported graphs
//   none_means:      what a None optional scalar stands for, e.g.
//                    {quant_min: qmin(output_dtype)}: the integer dtype's
//                    quantization range (torchao's default quant range)
//
// Unknown keys are errors (a misspelt `propreties:` must not silently drop
// the flags). Every error names `source:line:col` of the offending entry.
// The built-in registry is assembled from the YAML files compiled into the
// library; a failure there is a graft bug, so it aborts loudly.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/OpRegistry.h"

#include "graft/ir/Graph.h"
#include "graft/support/EmbeddedFile.h"
#include "graft/support/FileIO.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>

namespace graft {

extern const EmbeddedFile kBuiltinOpFiles[];
extern const std::size_t kBuiltinOpFilesCount;

namespace {

SourceRange rangeAt(const std::string &source, const YAML::Mark &mark) {
  SourceRange r;
  r.begin.file = source;
  // yaml-cpp marks are 0-based; a null mark (-1) falls back to line 1.
  r.begin.line = mark.line >= 0 ? static_cast<uint32_t>(mark.line + 1) : 1;
  r.begin.column = mark.column >= 0 ? static_cast<uint32_t>(mark.column + 1) : 1;
  return r;
}

std::string where(const SourceRange &r) {
  return r.begin.file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

Diagnostic errorAt(const std::string &source, const YAML::Mark &mark, const std::string &msg) {
  SourceRange r = rangeAt(source, mark);
  return Diagnostic::error(r, where(r) + ": " + msg);
}

// Parses the schema held by a YAML scalar, moving a parse error's column from
// the schema string into the YAML file (exact for single-line scalars).
Expected<OpSchema> parseSchemaNode(const YAML::Node &node, const std::string &source,
                                   const char *what) {
  if (!node.IsScalar())
    return errorAt(source, node.Mark(), std::string(what) + " must be a string");
  auto parsed = parseSchema(node.Scalar());
  if (parsed)
    return parsed;
  std::vector<Diagnostic> diags = parsed.diags();
  for (Diagnostic &d : diags) {
    SourceRange r = rangeAt(source, node.Mark());
    // yaml-cpp tags quoted scalars "!", plain ones "?": skip the quote.
    uint32_t quote = node.Tag() == "!" ? 1 : 0;
    if (d.range)
      r.begin.column += d.range->begin.column - 1 + quote;
    d.range = r;
    d.message = where(r) + ": " + d.message;
  }
  return Failure(std::move(diags));
}

Status applyProperties(OpSchema &schema, const YAML::Node &props, const std::string &source) {
  if (!props.IsSequence())
    return errorAt(source, props.Mark(), "'properties' must be a list of property names");
  for (const YAML::Node &p : props) {
    const std::string name = p.IsScalar() ? p.Scalar() : std::string();
    OpProperties &o = schema.properties;
    if (name == "commutative")
      o.commutative = true;
    else if (name == "elementwise")
      o.elementwise = true;
    else if (name == "view")
      o.view = true;
    else if (name == "side_effects")
      o.sideEffects = true;
    else if (name == "ephemeral")
      o.ephemeral = true;
    else
      return errorAt(source, p.Mark(),
                     "unknown op property '" + name +
                         "' (expected commutative, elementwise, view, side_effects or ephemeral)");
  }
  return okStatus();
}

/// `none_means: {quant_min: qmin(output_dtype), quant_max: qmax(output_dtype)}`:
/// an optional Scalar argument whose None is the end of an integer dtype's
/// quantization range (torchao's _get_and_check_qmin_qmax).
Status applyNoneMeans(OpSchema &schema, const YAML::Node &map, const std::string &source) {
  if (!map.IsMap())
    return errorAt(source, map.Mark(),
                   "'none_means' must map argument names to qmin(<dtype argument>) or "
                   "qmax(<dtype argument>)");
  for (const auto &kv : map) {
    std::string arg = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    std::string what = kv.second.IsScalar() ? kv.second.Scalar() : std::string();
    int index = schema.argIndex(arg);
    if (index < 0)
      return errorAt(source, kv.first.Mark(),
                     "'none_means' names '" + arg + "', which " + schema.str() + " does not have");
    SchemaArg &a = schema.args[static_cast<std::size_t>(index)];
    if (!a.type.optional || a.type.isList)
      return errorAt(source, kv.first.Mark(),
                     "'none_means' argument '" + arg + "' must be an optional scalar");
    bool isMax = what.rfind("qmax(", 0) == 0;
    if ((!isMax && what.rfind("qmin(", 0) != 0) || what.size() < 6 || what.back() != ')')
      return errorAt(source, kv.second.Mark(),
                     "'none_means' value must be qmin(<dtype argument>) or qmax(<dtype "
                     "argument>), got '" +
                         what + "'");
    std::string dtypeArg = what.substr(5, what.size() - 6);
    int dtypeIndex = schema.argIndex(dtypeArg);
    if (dtypeIndex < 0 ||
        schema.args[static_cast<std::size_t>(dtypeIndex)].type.base != SchemaType::Base::ScalarType)
      return errorAt(source, kv.second.Mark(),
                     "'none_means' needs a ScalarType argument, '" + dtypeArg + "' is not one of " +
                         schema.str());
    a.noneRangeOf = static_cast<int16_t>(dtypeIndex);
    a.noneRangeMax = isMax;
  }
  return okStatus();
}

Expected<OpSchema> parseEntry(const YAML::Node &entry, const std::string &source) {
  if (!entry.IsMap())
    return errorAt(source, entry.Mark(), "each op declaration must be a mapping");
  static const char *const kKeys[] = {"schema",     "infer",          "kernel",    "doc",
                                      "properties", "legacy_schemas", "none_means"};
  for (const auto &kv : entry) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    bool known = false;
    for (const char *k : kKeys)
      known = known || key == k;
    if (!known)
      return errorAt(source, kv.first.Mark(),
                     "unknown key '" + key +
                         "' in op declaration (expected schema, infer, kernel, doc, properties, "
                         "legacy_schemas or none_means)");
  }
  const YAML::Node schemaNode = entry["schema"];
  if (!schemaNode)
    return errorAt(source, entry.Mark(), "op declaration has no 'schema'");
  GRAFT_TRY(OpSchema schema, parseSchemaNode(schemaNode, source, "'schema'"));
  schema.source = source;
  auto scalarKey = [&](const char *key, std::string &out) -> Status {
    const YAML::Node n = entry[key];
    if (!n)
      return okStatus();
    if (!n.IsScalar())
      return errorAt(source, n.Mark(), std::string("'") + key + "' must be a string");
    out = n.Scalar();
    return okStatus();
  };
  GRAFT_CHECK_OK(scalarKey("infer", schema.inferRule));
  GRAFT_CHECK_OK(scalarKey("kernel", schema.kernel));
  GRAFT_CHECK_OK(scalarKey("doc", schema.doc));
  if (schema.kernel.empty())
    schema.kernel = schema.qualifiedName();
  if (const YAML::Node props = entry["properties"])
    GRAFT_CHECK_OK(applyProperties(schema, props, source));
  if (const YAML::Node legacy = entry["legacy_schemas"]) {
    if (!legacy.IsSequence())
      return errorAt(source, legacy.Mark(), "'legacy_schemas' must be a list of schema strings");
    for (const YAML::Node &l : legacy) {
      GRAFT_TRY(OpSchema old, parseSchemaNode(l, source, "a legacy schema"));
      if (old.qualifiedName() != schema.qualifiedName())
        return errorAt(source, l.Mark(),
                       "legacy schema names " + old.qualifiedName() + ", expected " +
                           schema.qualifiedName());
      old.properties = schema.properties;
      old.inferRule = schema.inferRule;
      old.kernel = schema.kernel;
      old.doc = schema.doc;
      old.source = source;
      schema.legacySchemas.push_back(std::move(old));
    }
  }
  if (const YAML::Node noneMeans = entry["none_means"]) {
    GRAFT_CHECK_OK(applyNoneMeans(schema, noneMeans, source));
    for (OpSchema &old : schema.legacySchemas)
      GRAFT_CHECK_OK(applyNoneMeans(old, noneMeans, source));
  }
  return schema;
}

} // namespace

Status OpRegistry::loadYaml(std::string_view yamlText, const std::string &sourceName) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yamlText));
  } catch (const YAML::Exception &e) {
    return errorAt(sourceName, e.mark, "YAML syntax error: " + e.msg);
  }
  if (!root || root.IsNull())
    return okStatus(); // an empty file declares nothing
  if (!root.IsSequence())
    return errorAt(sourceName, root.Mark(), "an op file must be a YAML list of op declarations");
  // Parse everything first so a bad file adds nothing; collect all errors.
  std::vector<Diagnostic> diags;
  std::vector<std::pair<OpSchema, YAML::Mark>> parsed;
  for (const YAML::Node &entry : root) {
    try {
      auto s = parseEntry(entry, sourceName);
      if (s)
        parsed.emplace_back(std::move(s).value(), entry.Mark());
      else
        for (const Diagnostic &d : s.diags())
          diags.push_back(d);
    } catch (const YAML::Exception &e) {
      // yaml-cpp may throw on malformed nodes; report, never propagate.
      diags.push_back(errorAt(sourceName, e.mark, "YAML error: " + e.msg));
    }
  }
  for (auto &[schema, mark] : parsed) {
    std::string qn = schema.qualifiedName();
    bool dupInFile = false;
    for (auto &[other, otherMark] : parsed) {
      if (&other == &schema)
        break;
      dupInFile = dupInFile || other.qualifiedName() == qn;
    }
    if (dupInFile || ops_.count(qn))
      diags.push_back(errorAt(sourceName, mark, "op " + qn + " is declared twice"));
  }
  if (!diags.empty())
    return Failure(std::move(diags));
  for (auto &[schema, mark] : parsed)
    GRAFT_CHECK_OK(add(std::move(schema)));
  return okStatus();
}

Status OpRegistry::loadYamlFile(const std::string &path) {
  GRAFT_TRY(std::string text, readFile(path));
  return loadYaml(text, path);
}

Status OpRegistry::add(OpSchema schema) {
  std::string qn = schema.qualifiedName();
  if (ops_.count(qn))
    return Diagnostic::error("op " + qn + " is registered twice");
  if (schema.kernel.empty())
    schema.kernel = qn;
  ops_.emplace(std::move(qn), std::make_unique<OpSchema>(std::move(schema)));
  return okStatus();
}

const OpRegistry &OpRegistry::builtin() {
  static const OpRegistry *registry = [] {
    auto *r = new OpRegistry();
    for (std::size_t i = 0; i < kBuiltinOpFilesCount; ++i) {
      const EmbeddedFile &f = kBuiltinOpFiles[i];
      Status s = r->loadYaml(std::string_view(f.data, f.size), std::string("engine/ops/") + f.name);
      if (!s) {
        // The built-in declarations ship inside the library: a bad one is a
        // graft build bug, not something a user can fix or recover from.
        std::fprintf(stderr, "graft: internal error: built-in op declarations are invalid:\n%s\n",
                     render(s.diags()).c_str());
        std::abort();
      }
    }
    return r;
  }();
  return *registry;
}

const OpSchema *OpRegistry::lookup(std::string_view qualifiedName) const {
  auto it = ops_.find(qualifiedName);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema *> OpRegistry::overloads(std::string_view nsAndName) const {
  std::vector<const OpSchema *> out;
  std::string prefix = std::string(nsAndName) + ".";
  for (auto it = ops_.lower_bound(prefix); it != ops_.end(); ++it) {
    const std::string &k = it->first;
    if (k.compare(0, prefix.size(), prefix) != 0)
      break;
    if (k.find('.', prefix.size()) == std::string::npos)
      out.push_back(it->second.get());
  }
  return out;
}

std::vector<const OpSchema *> OpRegistry::all() const {
  std::vector<const OpSchema *> out;
  out.reserve(ops_.size());
  for (const auto &kv : ops_)
    out.push_back(kv.second.get());
  return out;
}

void OpRegistry::bind(Graph &graph) const {
  for (Node &n : graph.nodes())
    n.setSchema(lookup(canonicalTarget(n.target())));
}

std::string canonicalTarget(std::string_view target) {
  std::string t(target);
  if (t.rfind("torch.ops.", 0) == 0)
    t.erase(0, 10);
  else if (t.rfind("ops.", 0) == 0)
    t.erase(0, 4);
  if (auto p = t.find("::"); p != std::string::npos)
    t.replace(p, 2, ".");
  std::size_t dots = 0;
  for (char c : t)
    dots += c == '.';
  if (dots == 1)
    t += ".default";
  return t;
}

} // namespace graft
