//===- Pt2.h - torch.export .pt2 archives <-> graft graphs ---*- C++ -*-===//
//
// readPt2 turns a file written by torch.export.save into a Graph; writePt2
// writes a Graph back as a torch >= 2.9 PT2 archive that torch.export.load
// reads. See docs/pt2.md for the supported versions, layouts and limits.
//
//   auto program = readPt2("model.pt2");          // weights memory-mapped
//   Graph &g = *program->graph;                    // rewrite ...
//   Pt2WriteOptions opts;
//   opts.provenance = &program->provenance;        // keep what the IR lacks
//   Status s = writePt2(g, "out.pt2", opts);       // atomic
//
// Three on-disk generations are read (docs/pt2.md has the details):
//   - torch <= 2.7 "legacy" zip: serialized_exported_program.json +
//     torch.save pickles of the state dict and constants;
//   - torch 2.8 PT2 archive with pickled data/weights/<model>.pt;
//   - torch >= 2.9 PT2 archive with raw storages + PayloadConfig JSON.
// Pickles go through a restricted reader that builds plain tensors only and
// never executes anything.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/ir/Tensor.h"
#include "graft/support/Expected.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graft {

class OpRegistry;

enum class Pt2Layout {
  Legacy,         ///< torch <= 2.7 flat zip
  PickledWeights, ///< torch 2.8 PT2 archive, weights in data/weights/<model>.pt
  RawWeights,     ///< torch >= 2.9 PT2 archive, raw storages + PayloadConfig
};
std::string_view name(Pt2Layout layout);

/// A torchao tensor-subclass weight (a `use_pickle: true` payload, or a
/// subclass entry of a pickled state dict), decoded into its plain inner
/// tensors (memory-mapped).
///
/// By default (Pt2ReadOptions::unwrapSubclassWeights) the reader unwraps it:
/// each inner tensor becomes a plain constant input of the same kind with an
/// FQN derived from the subclass's, `<module>.parametrizations.<name>.original<i>`
/// (i = position in `__tensor_flatten__` order, as torch's
/// unwrap_tensor_subclass_parameters names them), and every
/// `export.access_subclass_inner_tensor(p, "<attr>")` node is replaced by
/// that input; `innerFqns` lists them. writePt2 then writes them as plain
/// weights. Otherwise the graph keeps a data-free placeholder for `fqn` with
/// the subclass's logical shape and dtype (plus an affine quant layout when
/// graft recognizes one), and writePt2 writes the original pickle back
/// verbatim.
struct Pt2SubclassWeight {
  std::string fqn;
  std::string className; ///< e.g. "torchao.quantization.IntxUnpackedToInt8Tensor"
  /// Inner tensors in `__tensor_flatten__` order ("qdata", "scale", "zero_point").
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<std::pair<std::string, std::string>> attributes; ///< other attributes, as text
  bool inConstants = false;             ///< constants config rather than weights
  std::shared_ptr<Storage> pickleBytes; ///< the torch.save record, for writing back
  /// (attribute, FQN of the graph constant holding it) when unwrapped; empty
  /// when the graph keeps the subclass placeholder.
  std::vector<std::pair<std::string, std::string>> innerFqns;
};

/// A forward() argument that torch.export specialized to a constant: an int,
/// float, bool, str or None the user passed (InputSpec.constant_input,
/// InputToConstantInputSpec{name, value: ConstantValue} in
/// torch/_export/serde/schema.py; serialize.py serialize_input_spec writes
/// one for a USER_INPUT whose arg is a ConstantArgument, and handle_placeholder
/// writes its graph input as serialize_input(value), e.g. {"as_none": true}).
/// Export traced with the Python value, so the nodes already hold it as
/// literals and nothing reads the placeholder (torch's deserialize_graph makes
/// it without registering its name, so no node can refer to it). graft's IR
/// has no such input: the graph computes with the value, its runtime inputs
/// are the others, and writePt2 puts the entry back at its place.
struct Pt2SpecializedInput {
  std::string name;
  Argument value; ///< None, Int, Float, String or Bool
  /// How many of the graph's user inputs precede it in the file (torch.export
  /// lists user inputs in forward() order, after the lifted constants).
  std::size_t userInputsBefore = 0;
};
/// "input_pos = None": the name and the value as Python prints it.
std::string str(const Pt2SpecializedInput &in);

/// A constant forward() returns: a Python int (or None) among the outputs
/// is a ConstantArgument user output, written as the constant itself in
/// graph.outputs and in its user_output spec (serialize.py handle_output and
/// serialize_output_spec via serialize_input; deserialize_graph_output reads
/// as_int and as_none). graft's graph outputs are values, so the graph has
/// no output for it; writePt2 puts it back at its place.
struct Pt2ConstantOutput {
  Argument value; ///< Int or None
  /// How many of the graph's user outputs precede it in the file.
  std::size_t userOutputsBefore = 0;
};
/// The value as Python prints it ("3", "None").
std::string str(const Pt2ConstantOutput &out);

/// What the IR does not model but writing the program back needs: module
/// call graph, opset versions, per-node argument names of opaque ops, sympy
/// spellings of symbols and hints, sample inputs. Opaque (the JSON lives in a
/// private type).
struct Pt2Extras;

struct Pt2Provenance {
  std::string path;
  Pt2Layout layout = Pt2Layout::RawWeights;
  std::string archiveRoot; ///< root folder of a PT2 archive ("" for legacy)
  std::string modelName = "model";
  int schemaMajor = 8;
  int schemaMinor = 0;
  std::string torchVersion;
  std::vector<Pt2SubclassWeight> subclassWeights;
  /// FQN -> file offset of the first byte of a contiguous weight that is
  /// memory-mapped straight from a stored record (so text IR can reference it
  /// as file("model.pt2", offset=..., bytes=...)).
  std::map<std::string, uint64_t> weightFileOffsets;
  /// Specialized forward() arguments, in file order.
  std::vector<Pt2SpecializedInput> specializedInputs;
  /// Constant user outputs, in file order.
  std::vector<Pt2ConstantOutput> constantOutputs;
  std::shared_ptr<const Pt2Extras> extras;
};

struct Pt2Program {
  std::unique_ptr<Graph> graph;
  Pt2Provenance provenance;
};

struct Pt2ReadOptions {
  /// Registry for node schemas (null: OpRegistry::builtin()).
  const OpRegistry *registry = nullptr;
  /// Also CRC-check the weight records (reads every weight byte; metadata
  /// records are always checked).
  bool verifyWeightChecksums = false;
  /// Materialize arguments the serializer omitted because they had their
  /// default value: trailing positional parameters become positional
  /// arguments, keyword-only ones keyword arguments, so every node lists
  /// every schema argument.
  bool fillDefaults = false;
  /// Replace torchao subclass weights read through
  /// `export.access_subclass_inner_tensor` by their inner tensors as plain
  /// constants (see Pt2SubclassWeight), so the graph is the one torch's
  /// run_decompositions produces and rules see plain quantized weights. A
  /// subclass the graph uses any other way keeps its placeholder. Off: the
  /// graph is read as written (writing it back reproduces the pickle).
  bool unwrapSubclassWeights = true;
};

/// Reads a .pt2 (any supported layout). Every error names the record, FQN or
/// node at fault.
Expected<Pt2Program> readPt2(const std::string &path, const Pt2ReadOptions &options = {});

struct Pt2WriteOptions {
  /// From readPt2: keeps module call graph, opset versions, metadata, symbol
  /// spellings, argument names of opaque ops and torchao subclass pickles.
  const Pt2Provenance *provenance = nullptr;
  std::string modelName = "model";
  /// Written as ExportedProgram.torch_version when there is no provenance.
  std::string torchVersion = "2.10.0";
  /// Example values of backed symbols (SymExprHint of sizes); optional.
  std::map<std::string, int64_t> symbolHints;
};

/// Writes `graph` as a torch >= 2.9 PT2 archive (schema 8.x, ZIP64, stored,
/// 64-byte aligned payloads, storages shared by several FQNs written once).
/// Atomic: on failure nothing is left at `path`.
Status writePt2(const Graph &graph, const std::string &path, const Pt2WriteOptions &options = {});

/// The export schema's ScalarType number of a dtype (not c10's numbering),
/// or -1 when the schema has none (sub-byte ints, fp4).
int64_t exportScalarType(DType dtype);
/// The dtype of an export-schema ScalarType number.
std::optional<DType> dtypeFromExportScalarType(int64_t value);

/// The schema version graft writes.
inline constexpr int kPt2SchemaMajor = 8;
inline constexpr int kPt2SchemaMinor = 15;

} // namespace graft
