//===- Pt2Internal.h - Shared pieces of the .pt2 reader and writer ---*- C++ -*-===//
//
// Pt2Extras (the part of an ExportedProgram the IR does not model), archive
// constants, and a JSON cursor that tracks its path so schema violations name
// the offending field ("graph_module.graph.nodes[3].inputs[0].arg").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/serialize/Json.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/Zip.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace graft {

using OJson = nlohmann::ordered_json;

/// Per-node facts that only matter for writing the node back.
struct Pt2NodeInfo {
  std::string target;                ///< the IR target the facts belong to
  std::string spelling;              ///< the file's target string
  std::vector<std::string> argNames; ///< names of positional arguments
  std::vector<int> operatorArgs;     ///< positional indices written as as_operator
  /// The outputs' shape: one entry per serialized output: -1 as_none, 0 a
  /// single value, n > 0 a list (as_tensors) of n values.
  std::vector<int> outputGroups;
  OJson isHopSingleTensorReturn; ///< null when absent
  OJson name;                    ///< Node.name (schema 8.16+), null when absent
};

struct Pt2Extras {
  OJson opsetVersion;
  OJson verifiers;
  OJson guardsCode;
  OJson graphModuleMetadata;
  OJson treespecNamedtupleFields;
  OJson moduleCallGraph;
  bool isSingleTensorReturn = false;
  /// IR symbol name -> the name in the file, for symbols the reader renamed
  /// (unbacked symbols are named after the value that defines them in graft).
  std::map<std::string, std::string> symbolFileNames;
  /// Symbols used in sizes but absent from range_constraints.
  std::set<std::string> implicitSymbols;
  /// Opaque dim text -> the expr_str it was read from.
  std::map<std::string, std::string> opaqueExprs;
  /// File symbol name -> hint (example value).
  std::map<std::string, int64_t> symbolHints;
  /// Value name -> its sym_int/sym_bool/sym_float_values entry as read.
  std::map<std::string, OJson> symValues;
  /// Value names whose TensorMeta.requires_grad differs from the writer's
  /// default (true for parameters, false otherwise).
  std::set<std::string> requiresGradFlipped;
  /// Keyed by the node's first output name, or "#<target>#<k>" for the k-th
  /// node of that target without outputs. Hashed: one insertion per node of
  /// a model, and only ever looked up by key.
  std::unordered_map<std::string, Pt2NodeInfo> nodes;
  std::shared_ptr<Storage> sampleInputs; ///< data/sample_inputs/<model>.pt
  std::vector<std::pair<std::string, std::shared_ptr<Storage>>> extraFiles; ///< extra/<name>
};

namespace pt2 {

inline constexpr const char *kArchiveFormat = "archive_format";
inline constexpr const char *kArchiveVersion = "archive_version";

/// A ConstantValue as Python prints it (None, True, 3, 0.5, "text").
std::string constantText(const Argument &value);

/// Key of a node in Pt2Extras::nodes.
std::string nodeKey(const Node &node, std::map<std::string, int> &zeroOutputCounts);

/// A position in a JSON document (a JsonDocument: the reader never builds
/// the nlohmann form of a whole model.json), for error messages. The path
/// ("graph_module.graph.nodes[3].inputs[0].arg") is only spelled out for an
/// error: a reference keeps the step that reached it (a key or an index,
/// viewing the document, which outlives its references) and shares its
/// parent's steps, so walking a model.json of 10^5 fields builds no strings.
///
/// Steps come from a pool the root owns, with a plain (not atomic) count of
/// the references and children holding each: an import takes ~10^6 of them,
/// and a heap allocation plus atomic counting per field read was a tenth of
/// loading a model. So the references to one document belong to one thread.
class JsonRef {
public:
  JsonRef(const JsonValue &j, std::string record, std::string path);
  JsonRef(const JsonRef &o) : j_(o.j_), step_(o.step_) { retain(step_); }
  JsonRef(JsonRef &&o) noexcept : j_(o.j_), step_(o.step_) { o.step_ = nullptr; }
  JsonRef &operator=(const JsonRef &o) {
    retain(o.step_);
    release(step_);
    j_ = o.j_;
    step_ = o.step_;
    return *this;
  }
  JsonRef &operator=(JsonRef &&o) noexcept {
    if (this != &o) {
      release(step_);
      j_ = o.j_;
      step_ = o.step_;
      o.step_ = nullptr;
    }
    return *this;
  }
  ~JsonRef() { release(step_); }

  const JsonValue &json() const { return *j_; }
  std::string path() const;
  Diagnostic error(const std::string &what) const;

  /// Required field of an object.
  Expected<JsonRef> field(std::string_view name) const;
  /// Optional field; null pointer result when absent or JSON null.
  Expected<std::optional<JsonRef>> optField(std::string_view name) const;
  Expected<std::vector<JsonRef>> array() const;
  /// Members of an object in order. Keys view the document (no copy per
  /// member: the importer asks for ~10^5 of them at 128 layers).
  Expected<std::vector<std::pair<std::string_view, JsonRef>>> members() const;
  /// A single-key union object: the key (viewing the document) and the value.
  Expected<std::pair<std::string_view, JsonRef>> unionMember() const;
  Expected<std::string> str() const;
  Expected<int64_t> integer() const;
  Expected<bool> boolean() const;
  /// A number, or "Infinity" / "-Infinity" / "NaN".
  Expected<double> number() const;
  bool isNull() const { return j_->isNull(); }

private:
  struct Step;
  struct Pool;
  enum class StepKind : uint8_t;
  /// Adopts `step`'s count of one.
  JsonRef(const JsonValue &j, Step *step) : j_(&j), step_(step) {}
  /// A child of this reference: `j`, reached by `kind` (`key` or `index`).
  JsonRef child(const JsonValue &j, StepKind kind, std::string_view key, std::size_t index) const;
  static void retain(Step *s);
  static void release(Step *s);

  const JsonValue *j_;
  Step *step_; ///< null only in a moved-from reference
};

/// Python json.dumps(obj) with default separators and ensure_ascii.
std::string dumpPythonJson(const OJson &j);

/// A JSON record of the archive as a document; errors name the record. A
/// stored record is parsed where the archive is mapped, without a copy, while
/// a second thread checks its CRC-32 (a mismatch is reported before a parse
/// error, as when the record was read and checked first); a deflated one is
/// inflated and checked, then parsed.
Expected<JsonDocument> parseJsonRecord(const ZipReader &zip, const ZipEntry &entry);

/// ExportedProgram enum <-> IR.
std::optional<Layout> layoutFromExport(int64_t v);
int64_t exportLayout(Layout l);
std::optional<MemoryFormat> memoryFormatFromExport(int64_t v);
int64_t exportMemoryFormat(MemoryFormat m);

} // namespace pt2
} // namespace graft
