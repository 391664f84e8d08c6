//===- Pt2Reader.cpp - torch.export .pt2 archives -> graft graphs ---------===//
//
// Reading is in three steps:
//   1. the container: which of the three layouts (legacy zip, 2.8 archive with
//      pickled weights, >= 2.9 archive with raw weights), and its records;
//   2. the ExportedProgram JSON -> Graph (Importer below): symbols, values,
//      signature, nodes, outputs; anything the IR does not model goes to
//      Pt2Extras so writePt2 can put it back;
//   3. the weights: raw storages memory-mapped in place, or torch.save
//      pickles through the restricted reader (pt2/Pickle.h).
// Every error names the record, JSON path, FQN or node it is about.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/BoundArgs.h"
#include "graft/ops/OpRegistry.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/Zip.h"
#include "graft/support/StringViewMap.h"
#include "pt2/Pickle.h"
#include "pt2/Pt2Internal.h"
#include "pt2/SymExpr.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

namespace graft {

using pt2::JsonRef;

namespace {

/// File target string -> IR target.
std::string irTarget(const std::string &t) {
  if (t.rfind("torch.ops.", 0) == 0)
    return t.substr(10);
  if (t.rfind("_operator.", 0) == 0)
    return t.substr(1);
  if (!t.empty() && t[0] == '#') {
    // Extension op "#ns:name".
    std::string s = t.substr(1);
    auto c = s.find(':');
    if (c != std::string::npos)
      s[c] = '.';
    return s;
  }
  return t;
}

struct ValueMetaInfo {
  ValueKind kind = ValueKind::Tensor;
  TensorProto proto;
  bool requiresGrad = false;
};

/// A torchao subclass weight decoded before the graph is imported, so the
/// importer can replace its inner-tensor accesses by plain constants.
struct DecodedSubclass {
  Pt2SubclassWeight weight;
  std::vector<int64_t> fileOffsets; ///< per weight.tensors entry, -1 when not mapped in place
  DType dtype = DType::F32;         ///< the subclass's logical dtype and sizes
  std::vector<int64_t> sizes;
};
using SubclassMap = std::map<std::string, DecodedSubclass>; // by FQN

/// `<module>.parametrizations.<name>.original<i>`: the FQN torch's
/// unwrap_tensor_subclass_parameters (torch/_functorch/_aot_autograd/
/// subclass_parametrization.py, via torch.nn.utils.parametrize) gives the
/// i-th plain tensor of a subclass parameter `<module>.<name>`; it is also
/// what ExportedProgram.run_decompositions names them.
std::string innerFqn(const std::string &fqn, std::size_t i) {
  auto dot = fqn.rfind('.');
  std::string prefix = dot == std::string::npos ? std::string() : fqn.substr(0, dot + 1);
  std::string leaf = dot == std::string::npos ? fqn : fqn.substr(dot + 1);
  return prefix + "parametrizations." + leaf + ".original" + std::to_string(i);
}

/// Whether JSON `j` (an Argument) names the value `valueName` anywhere.
bool mentions(const JsonValue &j, const std::string &valueName) {
  for (const JsonMember &m : j.members()) {
    if ((m.key == "name" || m.key == "as_name") && m.value.isString() &&
        m.value.string() == valueName)
      return true;
    if (mentions(m.value, valueName))
      return true;
  }
  for (const JsonValue &x : j.elements())
    if (mentions(x, valueName))
      return true;
  return false;
}

constexpr const char *kAccessInner = "torch.ops.export.access_subclass_inner_tensor.default";

/// The placeholder and attribute of an `export.access_subclass_inner_tensor`
/// node (torch/export/custom_ops.py: `(Tensor src_subclass_tensor, str attr)
/// -> Tensor`), or nullopt when `node` is another node or spelled otherwise.
std::optional<std::pair<std::string, std::string>> innerAccess(const JsonValue &node) {
  // find() is null on anything but an object holding the key.
  const JsonValue *target = node.find("target");
  if (!target || !target->isString() || target->string() != kAccessInner)
    return std::nullopt;
  const JsonValue *ins = node.find("inputs");
  if (!ins || !ins->isArray() || ins->size() != 2)
    return std::nullopt;
  auto arg = [&](std::size_t i, const char *member) -> const JsonValue * {
    const JsonValue *a = ins->elements()[i].find("arg");
    return a ? a->find(member) : nullptr;
  };
  const JsonValue *src = arg(0, "as_tensor"), *attr = arg(1, "as_string");
  const JsonValue *srcName = src ? src->find("name") : nullptr;
  if (!srcName || !srcName->isString() || !attr || !attr->isString())
    return std::nullopt;
  return std::make_pair(std::string(srcName->string()), std::string(attr->string()));
}

/// The union members of the symbolic values' schema types (SymInt, SymFloat,
/// SymBool and SymExprHint in torch/_export/serde/schema.py): a constant of
/// the value's kind, or an `as_expr`.
const char *symConstantMember(ValueKind kind) {
  return kind == ValueKind::SymInt     ? "as_int"
         : kind == ValueKind::SymFloat ? "as_float"
                                       : "as_bool";
}

/// Checks that `j` is the constant member `symConstantMember(kind)` holds.
Status checkSymConstant(const JsonRef &j, ValueKind kind) {
  if (kind == ValueKind::SymInt) {
    GRAFT_TRY(int64_t v, j.integer());
    (void)v;
  } else if (kind == ValueKind::SymFloat) {
    GRAFT_TRY(double v, j.number());
    (void)v;
  } else {
    GRAFT_TRY(bool v, j.boolean());
    (void)v;
  }
  return okStatus();
}

/// A SymExpr's `hint`: a SymExprHint union of the value's kind
/// (serialize_sym_int writes {"as_int": n}, serialize_sym_float {"as_float":
/// x}; deserialize_sym_int asserts as_int). Returns the example value of a
/// SymInt, nullopt without a hint or for other kinds.
Expected<std::optional<int64_t>> symExprHint(const std::optional<JsonRef> &hint, ValueKind kind) {
  if (!hint)
    return std::optional<int64_t>();
  GRAFT_TRY(auto u, hint->unionMember());
  if (u.first != symConstantMember(kind))
    return hint->error("a " + std::string(name(kind)) + " hint must be " + symConstantMember(kind) +
                       ", not '" + std::string(u.first) + "'");
  GRAFT_CHECK_OK(checkSymConstant(u.second, kind));
  if (kind != ValueKind::SymInt)
    return std::optional<int64_t>();
  GRAFT_TRY(int64_t v, u.second.integer());
  return std::optional<int64_t>(v);
}

/// Checks a sym_int/sym_float/sym_bool_values entry against its schema
/// union (SymInt, SymFloat, SymBool): the reader keeps these entries for
/// writing only, so a malformed one would otherwise pass unnoticed.
Status checkSymValue(const JsonRef &v, ValueKind kind) {
  GRAFT_TRY(auto u, v.unionMember());
  if (u.first == symConstantMember(kind))
    return checkSymConstant(u.second, kind);
  if (u.first != "as_expr")
    return v.error("unknown " + std::string(name(kind)) + " member '" + std::string(u.first) +
                   "' (expected as_expr or " + symConstantMember(kind) + ")");
  GRAFT_TRY(JsonRef es, u.second.field("expr_str"));
  GRAFT_TRY(std::string expr, es.str());
  (void)expr;
  GRAFT_TRY(auto hint, u.second.optField("hint"));
  GRAFT_TRY(auto h, symExprHint(hint, kind));
  (void)h;
  return okStatus();
}

std::string fmtShape(DType dt, const std::vector<int64_t> &sizes);

/// A schema Device: `type` and an optional `index`.
Expected<Device> readDevice(const JsonRef &dev) {
  Device d;
  GRAFT_TRY(JsonRef type, dev.field("type"));
  GRAFT_TRY(d.type, type.str());
  GRAFT_TRY(auto index, dev.optField("index"));
  if (index) {
    GRAFT_TRY(int64_t i, index->integer());
    if (i < -1 || i > std::numeric_limits<int>::max())
      return index->error("device index " + std::to_string(i) + " is out of range");
    d.index = static_cast<int>(i);
  }
  return d;
}

/// The TensorMeta fields after the shape, read alike for a graph value and a
/// PayloadConfig entry: the device, the layout (strided only: a payload is
/// mapped as strided bytes) and requires_grad, which is returned.
Expected<bool> tensorMetaRest(const JsonRef &m, Device &device) {
  GRAFT_TRY(JsonRef dev, m.field("device"));
  GRAFT_TRY(device, readDevice(dev));
  GRAFT_TRY(JsonRef layout, m.field("layout"));
  GRAFT_TRY(int64_t lv, layout.integer());
  if (lv != pt2::exportLayout(Layout::Strided))
    return layout.error("layout " + std::to_string(lv) +
                        " is not supported (graft reads strided tensors only)");
  GRAFT_TRY(JsonRef rg, m.field("requires_grad"));
  return rg.boolean();
}

/// What an argument error is about: "node 'add_1' (aten.add.Tensor)", with
/// " argument 'other'" for one of its arguments, or "graph output 3". Spelled
/// out only for an error: a string per argument was an allocation for every
/// argument of every node. Views its node's name, target and argument name.
class Where {
public:
  Where(std::string_view node, std::string_view target) : node_(node), target_(target) {}
  explicit Where(std::size_t graphOutput) : output_(graphOutput) {}
  /// The argument `name` of this node.
  Where argument(std::string_view name) const {
    Where w = *this;
    w.arg_ = name;
    return w;
  }
  std::string str() const {
    if (output_ != kNoOutput)
      return "graph output " + std::to_string(output_);
    std::string s = "node '" + std::string(node_) + "' (" + std::string(target_) + ")";
    if (arg_)
      s += " argument '" + std::string(*arg_) + "'";
    return s;
  }

private:
  static constexpr std::size_t kNoOutput = ~std::size_t(0);
  std::string_view node_, target_;
  std::optional<std::string_view> arg_;
  std::size_t output_ = kNoOutput;
};

class Importer {
public:
  /// `subclasses`: decoded subclass weights to unwrap (null: none).
  Importer(const JsonValue &doc, std::string record, const Pt2ReadOptions &opts, Pt2Extras &extras,
           const SubclassMap *subclasses)
      : doc_(doc), record_(std::move(record)), opts_(opts), extras_(extras),
        registry_(opts.registry ? *opts.registry : OpRegistry::builtin()), subclasses_(subclasses) {
  }

  /// Subclass FQN -> (attribute, FQN of the constant now holding it), for
  /// every subclass weight the import unwrapped.
  const std::map<std::string, std::vector<std::pair<std::string, std::string>>> &unwrapped() const {
    return unwrappedFqns_;
  }
  std::vector<Pt2SpecializedInput> takeSpecializedInputs() { return std::move(specialized_); }
  std::vector<Pt2ConstantOutput> takeConstantOutputs() { return std::move(constantOutputs_); }

  Expected<std::unique_ptr<Graph>> run(int &schemaMajor, int &schemaMinor,
                                       std::string &torchVersion) {
    JsonRef root(doc_, record_, "");
    GRAFT_TRY(JsonRef sv, root.field("schema_version"));
    GRAFT_TRY(JsonRef major, sv.field("major"));
    GRAFT_TRY(JsonRef minor, sv.field("minor"));
    GRAFT_TRY(schemaMajor, major.integer());
    GRAFT_TRY(schemaMinor, minor.integer());
    if (schemaMajor != kPt2SchemaMajor)
      return sv.error("unsupported schema version " + std::to_string(schemaMajor) + "." +
                      std::to_string(schemaMinor) + "; graft reads schema major version " +
                      std::to_string(kPt2SchemaMajor));
    GRAFT_TRY(auto tv, root.optField("torch_version"));
    if (tv) {
      GRAFT_TRY(torchVersion, tv->str());
    }
    auto keep = [&](const char *name, OJson &dst) -> Status {
      GRAFT_TRY(auto f, root.optField(name));
      if (f)
        dst = toOrderedJson(f->json());
      return okStatus();
    };
    GRAFT_CHECK_OK(keep("opset_version", extras_.opsetVersion));
    GRAFT_CHECK_OK(keep("verifiers", extras_.verifiers));
    GRAFT_CHECK_OK(keep("guards_code", extras_.guardsCode));
    GRAFT_TRY(JsonRef gm, root.field("graph_module"));
    GRAFT_TRY(auto gmMeta, gm.optField("metadata"));
    if (gmMeta)
      extras_.graphModuleMetadata = toOrderedJson(gmMeta->json());
    GRAFT_TRY(auto tnf, gm.optField("treespec_namedtuple_fields"));
    if (tnf)
      extras_.treespecNamedtupleFields = toOrderedJson(tnf->json());
    GRAFT_TRY(JsonRef mcg, gm.field("module_call_graph"));
    GRAFT_TRY(auto mcgItems, mcg.array());
    (void)mcgItems;
    extras_.moduleCallGraph = toOrderedJson(mcg.json());

    GRAFT_TRY(JsonRef graphJ, gm.field("graph"));
    GRAFT_TRY(JsonRef sig, gm.field("signature"));
    GRAFT_TRY(JsonRef ranges, root.field("range_constraints"));

    graph_ = std::make_unique<Graph>("model");
    GRAFT_CHECK_OK(planSymbols(graphJ, ranges));
    GRAFT_CHECK_OK(readValueMetas(graphJ));
    GRAFT_CHECK_OK(readInputs(graphJ, sig));
    GRAFT_CHECK_OK(readNodes(graphJ));
    GRAFT_CHECK_OK(readOutputs(graphJ, sig));
    GRAFT_CHECK_OK(declareSymbols(ranges));
    return std::move(graph_);
  }

private:
  //===-- Symbols ---------------------------------------------------------===//

  /// graft names an unbacked symbol (and a SymInt graph input) after the value
  /// that defines it (see dimOfSymInt); rename such symbols accordingly.
  Status planSymbols(const JsonRef &graphJ, const JsonRef &ranges) {
    // Which node produced each SymInt value.
    std::map<std::string, std::string> producer;
    GRAFT_TRY(JsonRef nodes, graphJ.field("nodes"));
    GRAFT_TRY(auto nodeList, nodes.array());
    for (const JsonRef &n : nodeList) {
      if (!unwrappedByName_.empty()) {
        GRAFT_TRY(bool dropped, dropInnerAccess(n));
        if (dropped)
          continue;
      }
      GRAFT_TRY(JsonRef t, n.field("target"));
      GRAFT_TRY(std::string target, t.str());
      GRAFT_TRY(JsonRef outs, n.field("outputs"));
      GRAFT_TRY(auto outList, outs.array());
      for (const JsonRef &o : outList) {
        const JsonValue *symInt = o.json().find("as_sym_int");
        const JsonValue *name = symInt ? symInt->find("as_name") : nullptr;
        if (name && name->isString())
          producer[std::string(name->string())] = irTarget(target);
      }
    }
    GRAFT_TRY(auto symInts, graphJ.optField("sym_int_values"));
    if (!symInts)
      return okStatus();
    GRAFT_TRY(auto members, symInts->members());
    for (const auto &[valueName, v] : members) {
      extras_.symValues[std::string(valueName)] = toOrderedJson(v.json());
      GRAFT_TRY(auto u, v.unionMember());
      if (u.first != "as_expr")
        continue;
      GRAFT_TRY(JsonRef es, u.second.field("expr_str"));
      GRAFT_TRY(std::string expr, es.str());
      std::string sym = pt2::bareSymbolName(expr);
      GRAFT_TRY(auto hint, u.second.optField("hint"));
      GRAFT_TRY(auto h, symExprHint(hint, ValueKind::SymInt));
      if (h && !sym.empty())
        extras_.symbolHints[sym] = *h;
      auto it = producer.find(std::string(valueName));
      bool fromSymSize = it != producer.end() && it->second == "aten.sym_size.int";
      if (sym.empty() || fromSymSize || renamed_.count(sym) || sym == valueName)
        continue;
      renamed_[sym] = valueName;
      extras_.symbolFileNames[std::string(valueName)] = sym;
    }
    (void)ranges;
    return okStatus();
  }

  std::string irSymbol(const std::string &fileName) {
    auto it = renamed_.find(fileName);
    std::string n = it == renamed_.end() ? fileName : it->second;
    usedSymbols_.insert(n);
    return n;
  }

  Expected<Dim> symInt(const JsonRef &j) {
    GRAFT_TRY(auto u, j.unionMember());
    if (u.first == "as_int") {
      GRAFT_TRY(int64_t v, u.second.integer());
      return Dim(v);
    }
    if (u.first != "as_expr")
      return j.error("unknown SymInt member '" + std::string(u.first) + "'");
    GRAFT_TRY(JsonRef es, u.second.field("expr_str"));
    GRAFT_TRY(std::string expr, es.str());
    auto d = pt2::parseSymExpr(expr, [this](const std::string &s) { return irSymbol(s); });
    if (!d)
      return es.error(d.diags()[0].message);
    GRAFT_TRY(auto hint, u.second.optField("hint"));
    std::string sym = pt2::bareSymbolName(expr);
    GRAFT_TRY(auto h, symExprHint(hint, ValueKind::SymInt));
    if (h && !sym.empty())
      extras_.symbolHints[sym] = *h;
    if (d->isOpaque())
      extras_.opaqueExprs[d->opaqueExpr()] = expr;
    return d;
  }

  Status declareSymbols(const JsonRef &ranges) {
    GRAFT_TRY(auto members, ranges.members());
    for (const auto &[fileName, rc] : members) {
      GRAFT_TRY(auto lo, rc.optField("min_val"));
      GRAFT_TRY(auto hi, rc.optField("max_val"));
      // An infinite bound is null (_sympy_int_to_int in torch/_export/serde/
      // serialize.py); torch releases whose _sympy_int_to_int returned
      // math.inf wrote it as _dataclass_to_dict spells an infinite float.
      auto bound = [](const JsonRef &b, const char *infinity) -> Expected<std::optional<int64_t>> {
        if (b.json().isString() && b.json().string() == infinity)
          return std::optional<int64_t>();
        GRAFT_TRY(int64_t v, b.integer());
        return std::optional<int64_t>(v);
      };
      SymbolRange r;
      r.min = std::numeric_limits<int64_t>::min();
      if (lo) {
        GRAFT_TRY(auto m, bound(*lo, "-Infinity"));
        if (m)
          r.min = *m;
      }
      if (hi) {
        GRAFT_TRY(r.max, bound(*hi, "Infinity"));
      }
      if (r.max && *r.max < r.min)
        return rc.error("symbol '" + std::string(fileName) + "' has an empty range [" +
                        std::to_string(r.min) + ", " + std::to_string(*r.max) + "]");
      std::string n = irSymbol(std::string(fileName));
      if (!graph_->symbols().declare(n, r))
        return rc.error("symbol '" + n + "' has two range constraints");
    }
    // Symbols used in sizes without a range constraint (old files).
    for (const std::string &s : usedSymbols_)
      if (!graph_->symbols().find(s)) {
        graph_->symbols().declare(s, SymbolRange{0, std::nullopt});
        extras_.implicitSymbols.insert(s);
      }
    return okStatus();
  }

  //===-- Values ----------------------------------------------------------===//

  Expected<TensorProto> tensorMeta(const JsonRef &m, bool *requiresGrad) {
    TensorProto p;
    GRAFT_TRY(JsonRef dt, m.field("dtype"));
    GRAFT_TRY(int64_t dtv, dt.integer());
    auto dtype = dtypeFromExportScalarType(dtv);
    if (!dtype)
      return dt.error("unknown ScalarType " + std::to_string(dtv));
    p.dtype = *dtype;
    // torch rebuilds every meta with empty_strided, which refuses negative
    // sizes and strides; a constant below zero here is a corrupt file, and
    // one that reached shape inference or an allocation would be worse.
    auto nonNegative = [](const JsonRef &at, const Dim &d, const char *what) -> Status {
      if (d.isConstant() && d.constant() < 0)
        return at.error("negative " + std::string(what) + " " + std::to_string(d.constant()));
      return okStatus();
    };
    GRAFT_TRY(JsonRef sizes, m.field("sizes"));
    GRAFT_TRY(auto sizeList, sizes.array());
    // The byte count of the constant sizes must fit in an int64 (torch's
    // numel and nbytes are int64), so no later size computation overflows.
    int64_t bytes = static_cast<int64_t>(elementSize(p.dtype));
    for (const JsonRef &s : sizeList) {
      GRAFT_TRY(Dim d, symInt(s));
      GRAFT_CHECK_OK(nonNegative(s, d, "size"));
      if (d.isConstant() && __builtin_mul_overflow(bytes, d.constant(), &bytes))
        return sizes.error("describes a tensor of more than 2^63 bytes");
      p.shape.push_back(d);
    }
    GRAFT_TRY(JsonRef strides, m.field("strides"));
    GRAFT_TRY(auto strideList, strides.array());
    if (strideList.size() != sizeList.size())
      return strides.error("has " + std::to_string(strideList.size()) + " strides for " +
                           std::to_string(sizeList.size()) + " sizes");
    Shape st;
    for (const JsonRef &s : strideList) {
      GRAFT_TRY(Dim d, symInt(s));
      GRAFT_CHECK_OK(nonNegative(s, d, "stride"));
      st.push_back(d);
    }
    if (st != contiguousStrides(p.shape))
      p.strides = st;
    GRAFT_TRY(JsonRef off, m.field("storage_offset"));
    GRAFT_TRY(p.storageOffset, symInt(off));
    GRAFT_CHECK_OK(nonNegative(off, p.storageOffset, "storage offset"));
    GRAFT_TRY(bool g, tensorMetaRest(m, p.device));
    if (requiresGrad)
      *requiresGrad = g;
    return p;
  }

  Status readValueMetas(const JsonRef &graphJ) {
    GRAFT_TRY(JsonRef tv, graphJ.field("tensor_values"));
    GRAFT_TRY(auto members, tv.members());
    metas_.reserve(members.size());
    metaInfos_.reserve(members.size());
    for (const auto &[n, m] : members) {
      ValueMetaInfo info;
      GRAFT_TRY(info.proto, tensorMeta(m, &info.requiresGrad));
      putMeta(n, std::move(info));
    }
    auto scalars = [&](const char *field, ValueKind kind) -> Status {
      GRAFT_TRY(auto f, graphJ.optField(field));
      if (!f)
        return okStatus();
      GRAFT_TRY(auto ms, f->members());
      for (const auto &[n, v] : ms) {
        GRAFT_CHECK_OK(checkSymValue(v, kind));
        ValueMetaInfo info;
        info.kind = kind;
        putMeta(n, std::move(info));
        extras_.symValues[std::string(n)] = toOrderedJson(v.json());
      }
      return okStatus();
    };
    GRAFT_CHECK_OK(scalars("sym_int_values", ValueKind::SymInt));
    GRAFT_CHECK_OK(scalars("sym_bool_values", ValueKind::SymBool));
    GRAFT_CHECK_OK(scalars("sym_float_values", ValueKind::SymFloat));
    GRAFT_TRY(auto customs, graphJ.optField("custom_obj_values"));
    // Anything but an empty container (nlohmann's empty() on a scalar is false).
    if (customs &&
        !((customs->json().isObject() || customs->json().isArray()) && customs->json().size() == 0))
      return customs->error("custom objects (torchbind) are not supported");
    return okStatus();
  }

  Expected<const ValueMetaInfo *> meta(const JsonRef &at, const std::string &valueName,
                                       ValueKind kind) {
    const ValueMetaInfo *m = findMeta(valueName);
    if (!m)
      return at.error("value '" + valueName + "' has no entry in graph." +
                      (kind == ValueKind::Tensor ? "tensor_values" : "sym_*_values"));
    if (m->kind != kind)
      return at.error("value '" + valueName + "' is a " + std::string(name(m->kind)) +
                      " but is used as a " + std::string(name(kind)));
    return m;
  }

  void noteRequiresGrad(const std::string &valueName, bool isParam) {
    const ValueMetaInfo *m = findMeta(valueName);
    if (m && m->requiresGrad != isParam)
      extras_.requiresGradFlipped.insert(valueName);
  }

  //===-- Inputs ----------------------------------------------------------===//

  static Expected<std::string> argName(const JsonRef &tensorArg) {
    GRAFT_TRY(JsonRef n, tensorArg.field("name"));
    return n.str();
  }

  Status readInputs(const JsonRef &graphJ, const JsonRef &sig) {
    GRAFT_TRY(JsonRef inputs, graphJ.field("inputs"));
    GRAFT_TRY(auto inputList, inputs.array());
    GRAFT_TRY(JsonRef specs, sig.field("input_specs"));
    GRAFT_TRY(auto specList, specs.array());
    if (inputList.size() != specList.size())
      return specs.error("lists " + std::to_string(specList.size()) +
                         " input specs but graph.inputs has " + std::to_string(inputList.size()));
    // FQNs the file names, which an unwrapped inner tensor must not take.
    // (A spec that is not an object fails unionMember below.)
    for (const JsonRef &spec : specList)
      for (const char *f : {"parameter_name", "buffer_name", "tensor_constant_name"})
        for (const JsonMember &m : spec.json().members())
          if (const JsonValue *v = m.value.find(f); v && v->isString())
            specFqns_.insert(std::string(v->string()));
    std::size_t userInputs = 0; // user inputs added so far
    for (std::size_t i = 0; i < specList.size(); ++i) {
      GRAFT_TRY(auto spec, specList[i].unionMember());
      std::string_view kind = spec.first;
      const JsonRef &s = spec.second;
      GRAFT_CHECK_OK(refuseInputSpec(i, kind, s));
      if (kind == "constant_input") {
        GRAFT_CHECK_OK(readConstantInput(i, s, inputList[i], userInputs));
        continue;
      }
      GRAFT_TRY(auto in, inputList[i].unionMember());
      std::string graphName;
      if (in.first == "as_tensor") {
        GRAFT_TRY(graphName, argName(in.second));
      } else if (in.first == "as_sym_int" || in.first == "as_sym_float" ||
                 in.first == "as_sym_bool") {
        GRAFT_TRY(auto sm, in.second.unionMember());
        if (sm.first != "as_name")
          return inputList[i].error("a constant symbolic input is not supported");
        GRAFT_TRY(graphName, sm.second.str());
      } else {
        return inputList[i].error("graph input of kind '" + std::string(in.first) +
                                  "' is not supported");
      }
      if (kind == "user_input") {
        GRAFT_TRY(JsonRef arg, s.field("arg"));
        GRAFT_TRY(auto a, arg.unionMember());
        std::string n;
        ValueKind vk = ValueKind::Tensor;
        if (a.first == "as_tensor") {
          GRAFT_TRY(n, argName(a.second));
        } else if (a.first == "as_sym_int" || a.first == "as_sym_float" ||
                   a.first == "as_sym_bool") {
          GRAFT_TRY(auto sm, a.second.unionMember());
          if (sm.first != "as_name")
            return arg.error("a constant user input is not supported");
          GRAFT_TRY(n, sm.second.str());
          vk = a.first == "as_sym_int"     ? ValueKind::SymInt
               : a.first == "as_sym_float" ? ValueKind::SymFloat
                                           : ValueKind::SymBool;
        } else {
          return arg.error("user input of kind '" + std::string(a.first) + "' is not supported");
        }
        if (n != graphName)
          return arg.error("names input '" + n + "' but graph.inputs[" + std::to_string(i) +
                           "] is '" + graphName + "'");
        GRAFT_TRY(const ValueMetaInfo *m, meta(arg, n, vk));
        GRAFT_CHECK_OK(checkFresh(arg, n));
        if (vk == ValueKind::Tensor)
          graph_->addInput(InputKind::UserInput, n, m->proto);
        else
          graph_->addScalarInput(vk, n);
        noteRequiresGrad(n, false);
        ++userInputs;
        continue;
      }
      InputKind ik;
      std::string fqnField;
      if (kind == "parameter") {
        ik = InputKind::Parameter;
        fqnField = "parameter_name";
      } else if (kind == "buffer") {
        ik = InputKind::Buffer;
        fqnField = "buffer_name";
      } else if (kind == "tensor_constant") {
        ik = InputKind::ConstantTensor;
        fqnField = "tensor_constant_name";
      } else {
        return s.error("input spec kind '" + std::string(kind) +
                       "' is not supported (graph input '" + graphName + "')");
      }
      GRAFT_TRY(JsonRef arg, s.field("arg"));
      GRAFT_TRY(std::string n, argName(arg));
      if (n != graphName)
        return arg.error("names input '" + n + "' but graph.inputs[" + std::to_string(i) +
                         "] is '" + graphName + "'");
      GRAFT_TRY(JsonRef fq, s.field(fqnField));
      GRAFT_TRY(std::string fqn, fq.str());
      if (fqn.empty())
        return fq.error("empty FQN");
      if (graph_->findConstant(fqn))
        return fq.error("FQN '" + fqn + "' is bound to two graph inputs");
      GRAFT_TRY(const ValueMetaInfo *m, meta(arg, n, ValueKind::Tensor));
      for (const Dim &d : m->proto.shape)
        if (!d.isConstant())
          return arg.error("constant '" + fqn + "' has a symbolic shape " + str(m->proto.shape));
      GRAFT_CHECK_OK(checkFresh(arg, n));
      bool persistent = true;
      if (ik == InputKind::Buffer) {
        GRAFT_TRY(JsonRef p, s.field("persistent"));
        GRAFT_TRY(persistent, p.boolean());
      }
      if (subclasses_) {
        auto sc = subclasses_->find(fqn);
        if (sc != subclasses_->end()) {
          GRAFT_TRY(bool done,
                    unwrapSubclass(graphJ, arg, n, fqn, ik, persistent, m->proto, sc->second));
          if (done)
            continue;
        }
      }
      graph_->addInput(ik, n, m->proto, fqn);
      noteRequiresGrad(n, ik == InputKind::Parameter);
      if (ik == InputKind::Buffer)
        graph_->inputs().back().persistent = persistent;
    }
    return okStatus();
  }

  /// A ConstantValue (torch/_export/serde/schema.py: as_none, as_int,
  /// as_float, as_string, as_bool; serialize.py deserialize_constant_input
  /// refuses anything else) as an IR argument. `label` names the input.
  Expected<Argument> constantValue(const JsonRef &j, const std::string &label) {
    GRAFT_TRY(auto u, j.unionMember());
    static constexpr std::string_view kinds[] = {"as_none", "as_int", "as_float", "as_string",
                                                 "as_bool"};
    if (std::find(std::begin(kinds), std::end(kinds), u.first) == std::end(kinds))
      return j.error(label + ": a constant input's value of kind '" + std::string(u.first) +
                     "' is not a ConstantValue (as_none, as_int, as_float, as_string or "
                     "as_bool: torch.export specializes only those; a tensor argument is a "
                     "user_input)");
    return argument(j, Where(label, "constant_input"), nullptr);
  }

  /// InputSpec.constant_input (Pt2SpecializedInput): recorded in
  /// specialized_ for users and for writing back; the graph gets no input.
  Status readConstantInput(std::size_t i, const JsonRef &s, const JsonRef &graphInput,
                           std::size_t userInputsBefore) {
    GRAFT_TRY(JsonRef nameJ, s.field("name"));
    GRAFT_TRY(std::string n, nameJ.str());
    std::string label = "graph input " + std::to_string(i) + " '" + n + "'";
    if (n.empty())
      return nameJ.error("graph input " + std::to_string(i) + ": constant input without a name");
    GRAFT_TRY(JsonRef valueJ, s.field("value"));
    GRAFT_TRY(Argument value, constantValue(valueJ, label));
    // handle_placeholder writes the graph input as serialize_input(value),
    // and deserialize_graph gives the placeholder that value: the two must
    // be the same constant.
    GRAFT_TRY(Argument inGraph, constantValue(graphInput, label));
    bool same =
        inGraph == value || (inGraph.isFloat() && value.isFloat() &&
                             std::isnan(inGraph.floating()) && std::isnan(value.floating()));
    if (!same)
      return graphInput.error(label + ": the graph input is " + pt2::constantText(inGraph) +
                              " but its constant_input spec says " + pt2::constantText(value));
    // torch.export's placeholder names are unique in the graph; writing this
    // one back next to a value of the same name would make an archive torch
    // cannot read.
    if (findMeta(n) || graph_->findValue(n) || specializedNames_.count(n))
      return nameJ.error(label + ": the constant input's name is also the name of another " +
                         (specializedNames_.count(n) ? "constant input" : "graph value"));
    specializedNames_.emplace(n, specialized_.size());
    specialized_.push_back({n, std::move(value), userInputsBefore});
    return okStatus();
  }

  /// The input spec kinds graft's IR has no form for (InputSpec in
  /// torch/_export/serde/schema.py), refused with what the input is and its
  /// name; okStatus for the others.
  static Status refuseInputSpec(std::size_t i, std::string_view kind, const JsonRef &s) {
    const char *why = nullptr;
    const JsonValue *nameJ = nullptr;
    if (kind == "custom_obj") {
      why = "a torchbind object; graft does not load custom objects";
    } else if (kind == "token") {
      why = "the effect token of a side-effecting op (with_effects); graft reads graphs "
            "without effects";
    } else {
      return okStatus();
    }
    if (const JsonValue *arg = s.json().find("arg"))
      nameJ = arg->find("name");
    std::string label = "graph input " + std::to_string(i);
    if (nameJ && nameJ->isString())
      label += " '" + std::string(nameJ->string()) + "'";
    return s.error(label + ": input spec kind '" + std::string(kind) + "' is not supported (" +
                   why + ")");
  }

  /// Replaces the subclass placeholder `n` (constant `fqn`) by one constant
  /// of the same kind per inner tensor, in `__tensor_flatten__` order, when
  /// the graph only reads it through export.access_subclass_inner_tensor
  /// (those nodes are dropped by dropInnerAccess). Returns false, having
  /// done nothing, when the graph uses the subclass any other way.
  Expected<bool> unwrapSubclass(const JsonRef &graphJ, const JsonRef &at, const std::string &n,
                                const std::string &fqn, InputKind ik, bool persistent,
                                const TensorProto &placeholder, const DecodedSubclass &d) {
    auto sizes = concreteSizes(placeholder.shape);
    if (d.dtype != placeholder.dtype || !sizes || d.sizes != *sizes)
      return at.error("weight '" + fqn + "': the subclass " + d.weight.className + " is " +
                      fmtShape(d.dtype, d.sizes) + " but the graph's placeholder '" + n + "' is " +
                      placeholder.str());
    GRAFT_TRY(JsonRef nodes, graphJ.field("nodes"));
    if (!nodes.json().isArray())
      return false; // readNodes reports it
    for (const JsonValue &node : nodes.json().elements()) {
      const JsonValue *inputs = node.find("inputs");
      if (!inputs || !mentions(*inputs, n))
        continue;
      auto access = innerAccess(node);
      if (!access || access->first != n)
        return false;
    }
    GRAFT_TRY(JsonRef outs, graphJ.field("outputs"));
    if (mentions(outs.json(), n))
      return false;

    Unwrapped u;
    u.fqn = fqn;
    auto &fqns = unwrappedFqns_[fqn];
    const char *prefix = ik == InputKind::Parameter ? "p_" : ik == InputKind::Buffer ? "b_" : "c_";
    for (std::size_t i = 0; i < d.weight.tensors.size(); ++i) {
      const auto &[attr, t] = d.weight.tensors[i];
      // Unique the way torch does (a "_<k>" suffix), should the file already
      // use the name.
      std::string base = innerFqn(fqn, i), inner = base;
      for (int k = 1; specFqns_.count(inner) || graph_->findConstant(inner); ++k)
        inner = base + "_" + std::to_string(k);
      std::string valueBase = prefix + inner, valueName;
      std::replace(valueBase.begin(), valueBase.end(), '.', '_');
      valueName = valueBase;
      for (int k = 1; findMeta(valueName) || graph_->findValue(valueName); ++k)
        valueName = valueBase + "_" + std::to_string(k);
      TensorProto p = t.proto();
      p.device = placeholder.device;
      Value *v = graph_->addInput(ik, valueName, p, inner);
      if (ik == InputKind::Buffer)
        graph_->inputs().back().persistent = persistent;
      u.inner.emplace(attr, v);
      fqns.emplace_back(attr, inner);
    }
    unwrappedByName_.emplace(n, std::move(u));
    return true;
  }

  /// An export.access_subclass_inner_tensor node reading an unwrapped
  /// subclass: no node is made, its result names the inner constant.
  Expected<bool> dropInnerAccess(const JsonRef &n) {
    auto access = innerAccess(n.json());
    if (!access)
      return false;
    auto u = unwrappedByName_.find(access->first);
    if (u == unwrappedByName_.end())
      return false;
    const std::string &attr = access->second;
    GRAFT_TRY(JsonRef outs, n.field("outputs"));
    GRAFT_TRY(auto outList, outs.array());
    std::string outName;
    if (outList.size() == 1) {
      GRAFT_TRY(auto o, outList[0].unionMember());
      if (o.first == "as_tensor") {
        GRAFT_TRY(outName, argName(o.second));
      }
    }
    const std::string what = "weight '" + u->second.fqn + "'";
    if (outName.empty())
      return outs.error("export.access_subclass_inner_tensor on " + what +
                        " must have one tensor output");
    auto it = u->second.inner.find(attr);
    if (it == u->second.inner.end()) {
      std::string have;
      for (const auto &[a, v] : u->second.inner)
        have += (have.empty() ? "" : ", ") + a;
      return n.error("node '" + outName + "' reads attribute '" + attr + "' of " + what +
                     ", which has no such inner tensor (it has " + have + ")");
    }
    GRAFT_TRY(const ValueMetaInfo *m, meta(outs, outName, ValueKind::Tensor));
    const TensorProto &p = it->second->proto();
    if (!m->proto.sameShapeAndDType(p))
      return outs.error("node '" + outName + "' reads inner tensor '" + attr + "' of " + what +
                        " as " + m->proto.str() + ", but the pickle holds " + p.str());
    GRAFT_CHECK_OK(checkFresh(outs, outName));
    if (!aliases_.emplace(outName, it->second).second)
      return outs.error("value '" + outName + "' is defined twice");
    return true;
  }

  Status checkFresh(const JsonRef &at, const std::string &n) {
    if (graph_->findValue(n))
      return at.error("value '" + n + "' is defined twice");
    return okStatus();
  }

  //===-- Arguments -------------------------------------------------------===//

  Expected<Value *> lookup(const JsonRef &at, const std::string &valueName, ValueKind kind,
                           const Where &where) {
    Value *v = graph_->findValue(valueName);
    if (!v) {
      auto alias = aliases_.find(valueName);
      if (alias != aliases_.end())
        v = alias->second;
    }
    if (!v) {
      // torch's deserialize_graph does not register a constant input's
      // placeholder, so no node can read it: export wrote its value into
      // the nodes instead.
      if (auto c = specializedNames_.find(valueName); c != specializedNames_.end())
        return at.error(where.str() + " refers to '" + valueName +
                        "', a forward() argument torch.export specialized to " +
                        pt2::constantText(specialized_[c->second].value) +
                        " (constant_input); a node holds such a value as a literal, and "
                        "torch's deserializer does not resolve a reference to it");
      return at.error(where.str() + " refers to undefined value '" + valueName + "'");
    }
    if (v->kind() != kind)
      return at.error(where.str() + " uses " + std::string(name(v->kind())) + " '" + valueName +
                      "' as a " + std::string(name(kind)));
    return v;
  }

  Expected<Argument> symArg(const JsonRef &j, ValueKind kind, const Where &where) {
    GRAFT_TRY(auto u, j.unionMember());
    if (u.first == "as_name") {
      GRAFT_TRY(std::string n, u.second.str());
      GRAFT_TRY(Value * v, lookup(u.second, n, kind, where));
      return Argument(v);
    }
    if (u.first == "as_int") {
      GRAFT_TRY(int64_t v, u.second.integer());
      return Argument(v);
    }
    if (u.first == "as_float") {
      GRAFT_TRY(double v, u.second.number());
      return Argument(v);
    }
    if (u.first == "as_bool") {
      GRAFT_TRY(bool v, u.second.boolean());
      return Argument(v);
    }
    return j.error("unknown member '" + std::string(u.first) + "'");
  }

  Expected<Argument> tensorRef(const JsonRef &j, const Where &where) {
    GRAFT_TRY(std::string n, argName(j));
    GRAFT_TRY(Value * v, lookup(j, n, ValueKind::Tensor, where));
    return Argument(v);
  }

  template <class F> Expected<Argument> listOf(const JsonRef &j, F &&each) {
    GRAFT_TRY(auto items, j.array());
    Argument::List l;
    l.reserve(items.size());
    for (const JsonRef &x : items) {
      GRAFT_TRY(Argument a, each(x));
      l.push_back(std::move(a));
    }
    return Argument(std::move(l));
  }

  /// One Argument union member -> an IR Argument. `isOperator` reports
  /// as_operator (kept as a string).
  Expected<Argument> argument(const JsonRef &j, const Where &where, bool *isOperator) {
    GRAFT_TRY(auto u, j.unionMember());
    std::string_view k = u.first;
    const JsonRef &v = u.second;
    if (k == "as_none")
      return Argument();
    if (k == "as_tensor")
      return tensorRef(v, where);
    if (k == "as_tensors")
      return listOf(v, [&](const JsonRef &x) { return tensorRef(x, where); });
    if (k == "as_int") {
      GRAFT_TRY(int64_t i, v.integer());
      return Argument(i);
    }
    if (k == "as_ints")
      return listOf(v, [&](const JsonRef &x) -> Expected<Argument> {
        GRAFT_TRY(int64_t i, x.integer());
        return Argument(i);
      });
    if (k == "as_int_lists")
      return listOf(v, [&](const JsonRef &x) {
        return listOf(x, [&](const JsonRef &y) -> Expected<Argument> {
          GRAFT_TRY(int64_t i, y.integer());
          return Argument(i);
        });
      });
    if (k == "as_float") {
      GRAFT_TRY(double f, v.number());
      return Argument(f);
    }
    if (k == "as_floats")
      return listOf(v, [&](const JsonRef &x) -> Expected<Argument> {
        GRAFT_TRY(double f, x.number());
        return Argument(f);
      });
    if (k == "as_string") {
      GRAFT_TRY(std::string s, v.str());
      return Argument(s);
    }
    if (k == "as_strings")
      return listOf(v, [&](const JsonRef &x) -> Expected<Argument> {
        GRAFT_TRY(std::string s, x.str());
        return Argument(s);
      });
    if (k == "as_sym_int")
      return symArg(v, ValueKind::SymInt, where);
    if (k == "as_sym_ints")
      return listOf(v, [&](const JsonRef &x) { return symArg(x, ValueKind::SymInt, where); });
    if (k == "as_sym_float")
      return symArg(v, ValueKind::SymFloat, where);
    if (k == "as_sym_floats")
      return listOf(v, [&](const JsonRef &x) { return symArg(x, ValueKind::SymFloat, where); });
    if (k == "as_sym_bool")
      return symArg(v, ValueKind::SymBool, where);
    if (k == "as_sym_bools")
      return listOf(v, [&](const JsonRef &x) { return symArg(x, ValueKind::SymBool, where); });
    if (k == "as_bool") {
      GRAFT_TRY(bool b, v.boolean());
      return Argument(b);
    }
    if (k == "as_bools")
      return listOf(v, [&](const JsonRef &x) -> Expected<Argument> {
        GRAFT_TRY(bool b, x.boolean());
        return Argument(b);
      });
    if (k == "as_scalar_type") {
      GRAFT_TRY(int64_t st, v.integer());
      auto dt = dtypeFromExportScalarType(st);
      if (!dt)
        return v.error("unknown ScalarType " + std::to_string(st));
      return Argument(*dt);
    }
    if (k == "as_memory_format") {
      GRAFT_TRY(int64_t mf, v.integer());
      auto m = pt2::memoryFormatFromExport(mf);
      if (!m)
        return v.error("unknown MemoryFormat " + std::to_string(mf));
      return Argument(*m);
    }
    if (k == "as_layout") {
      GRAFT_TRY(int64_t lv, v.integer());
      auto l = pt2::layoutFromExport(lv);
      if (!l)
        return v.error("unknown Layout " + std::to_string(lv));
      return Argument(*l);
    }
    if (k == "as_device") {
      GRAFT_TRY(Device d, readDevice(v));
      return Argument(d);
    }
    if (k == "as_optional_tensor") {
      GRAFT_TRY(auto o, v.unionMember());
      if (o.first == "as_none")
        return Argument();
      if (o.first == "as_tensor")
        return tensorRef(o.second, where);
      return v.error("unknown OptionalTensorArgument member '" + std::string(o.first) + "'");
    }
    if (k == "as_optional_tensors")
      return listOf(v, [&](const JsonRef &x) -> Expected<Argument> {
        GRAFT_TRY(auto o, x.unionMember());
        if (o.first == "as_none")
          return Argument();
        if (o.first == "as_tensor")
          return tensorRef(o.second, where);
        return x.error("unknown OptionalTensorArgument member '" + std::string(o.first) + "'");
      });
    if (k == "as_nested_tensors")
      return listOf(v, [&](const JsonRef &x) {
        return listOf(x, [&](const JsonRef &y) { return tensorRef(y, where); });
      });
    if (k == "as_operator") {
      GRAFT_TRY(std::string s, v.str());
      if (isOperator)
        *isOperator = true;
      return Argument(irTarget(s));
    }
    if (k == "as_graph" || k == "as_custom_obj" || k == "as_complex" ||
        k == "as_string_to_argument")
      return j.error(where.str() + ": argument kind '" + std::string(k) +
                     "' cannot be represented in graft's IR (subgraphs, torchbind objects, "
                     "complex scalars and string-keyed dicts are not supported)");
    return j.error(where.str() + ": unknown Argument member '" + std::string(k) + "'");
  }

  //===-- Nodes -----------------------------------------------------------===//

  Status readNodes(const JsonRef &graphJ) {
    GRAFT_TRY(JsonRef nodes, graphJ.field("nodes"));
    GRAFT_TRY(auto nodeList, nodes.array());
    extras_.nodes.reserve(nodeList.size());
    for (const JsonRef &n : nodeList) {
      if (!unwrappedByName_.empty()) {
        GRAFT_TRY(bool dropped, dropInnerAccess(n));
        if (dropped)
          continue;
      }
      GRAFT_TRY(JsonRef t, n.field("target"));
      GRAFT_TRY(std::string fileTarget, t.str());
      std::string target = irTarget(fileTarget);
      if (target.empty())
        return t.error("empty target");
      if (target == kGradRegion) {
        GRAFT_CHECK_OK(inlineGradRegion(n));
        continue;
      }
      Pt2NodeInfo info;
      info.target = target;
      info.spelling = fileTarget;
      GRAFT_TRY(auto hop, n.optField("is_hop_single_tensor_return"));
      if (hop)
        info.isHopSingleTensorReturn = toOrderedJson(hop->json());
      GRAFT_TRY(auto nodeName, n.optField("name"));
      if (nodeName)
        info.name = toOrderedJson(nodeName->json());

      // Outputs first, to name the node in messages. Until they are read,
      // the node is named by its Node.name (schema 8.16+) when it has one.
      auto early = [&]() {
        std::string label = "node ";
        if (nodeName && nodeName->json().isString())
          label += "'" + std::string(nodeName->json().string()) + "' ";
        return label + "(" + target + ")";
      };
      GRAFT_TRY(JsonRef outs, n.field("outputs"));
      GRAFT_TRY(auto outList, outs.array());
      std::vector<Graph::ResultSpec> results;
      for (const JsonRef &o : outList) {
        GRAFT_TRY(auto u, o.unionMember());
        auto addResult = [&](const JsonRef &at, const std::string &vn, ValueKind kind) -> Status {
          GRAFT_TRY(const ValueMetaInfo *m, meta(at, vn, kind));
          GRAFT_CHECK_OK(checkFresh(at, vn));
          for (const auto &r : results)
            if (r.name == vn)
              return at.error("value '" + vn + "' is defined twice");
          results.push_back({vn, kind, m->proto});
          return okStatus();
        };
        if (u.first == "as_tensor") {
          GRAFT_TRY(std::string vn, argName(u.second));
          GRAFT_CHECK_OK(addResult(u.second, vn, ValueKind::Tensor));
          info.outputGroups.push_back(0);
        } else if (u.first == "as_tensors") {
          GRAFT_TRY(auto ts, u.second.array());
          // outputGroups keeps 0 for a single value; torch's
          // deserialize_multiple_outputs also needs a first element.
          if (ts.empty())
            return u.second.error(early() + ": an empty as_tensors output");
          for (const JsonRef &x : ts) {
            GRAFT_TRY(std::string vn, argName(x));
            GRAFT_CHECK_OK(addResult(x, vn, ValueKind::Tensor));
          }
          info.outputGroups.push_back(static_cast<int>(ts.size()));
        } else if (u.first == "as_sym_int" || u.first == "as_sym_float" ||
                   u.first == "as_sym_bool") {
          GRAFT_TRY(auto sm, u.second.unionMember());
          if (sm.first != "as_name")
            return u.second.error(early() + ": a node output must be named");
          GRAFT_TRY(std::string vn, sm.second.str());
          ValueKind vk = u.first == "as_sym_int"     ? ValueKind::SymInt
                         : u.first == "as_sym_float" ? ValueKind::SymFloat
                                                     : ValueKind::SymBool;
          GRAFT_CHECK_OK(addResult(sm.second, vn, vk));
          info.outputGroups.push_back(0);
        } else if (u.first == "as_none") {
          info.outputGroups.push_back(-1);
        } else {
          return o.error(early() + ": node output of kind '" + std::string(u.first) +
                         "' is not supported (graft reads as_tensor, as_tensors, as_sym_int, "
                         "as_sym_float, as_sym_bool and as_none outputs)");
        }
      }
      const Where where(results.empty() ? target : results[0].name, target);

      // Python sym ops have no overload in the file (`_operator.add`); the
      // registry declares them as operator.add.default.
      const OpSchema *schema = registry_.lookup(canonicalTarget(target));
      GRAFT_TRY(JsonRef inputs, n.field("inputs"));
      GRAFT_TRY(auto inList, inputs.array());
      std::vector<Argument> args;
      std::vector<std::pair<std::string, Argument>> kwargs;
      // Arguments without a kind (schema <= 8.3) are placed the way torch's
      // deserializer does: positional when required and not keyword-only.
      for (const JsonRef &na : inList) {
        GRAFT_TRY(JsonRef nameJ, na.field("name"));
        GRAFT_TRY(std::string argNm, nameJ.str());
        GRAFT_TRY(JsonRef argJ, na.field("arg"));
        bool isOp = false;
        // A higher-order op's positional operands have no names
        // (serialize_hoo_inputs); messages number them instead.
        std::string operand;
        if (argNm.empty())
          operand = "operand " + std::to_string(args.size());
        GRAFT_TRY(Argument a,
                  argument(argJ, where.argument(argNm.empty() ? operand : argNm), &isOp));
        GRAFT_TRY(auto kindJ, na.optField("kind"));
        int64_t kind = 0;
        if (kindJ) {
          GRAFT_TRY(kind, kindJ->integer());
          if (kind < 0 || kind > 2)
            return kindJ->error("unknown ArgumentKind " + std::to_string(kind));
        }
        bool positional;
        if (kind == 1)
          positional = true;
        else if (kind == 2)
          positional = false;
        else if (schema) {
          const SchemaArg *sa = findSchemaArg(*schema, argNm);
          positional = sa && !sa->defaultValue && !sa->keywordOnly && kwargs.empty();
        } else {
          positional = kwargs.empty();
        }
        if (positional) {
          if (!kwargs.empty())
            return na.error(where.str() + ": positional argument '" + argNm +
                            "' follows a keyword argument");
          if (isOp)
            info.operatorArgs.push_back(static_cast<int>(args.size()));
          info.argNames.push_back(argNm);
          args.push_back(std::move(a));
        } else {
          if (argNm.empty())
            return nameJ.error(where.str() + ": keyword argument without a name");
          for (const auto &kv : kwargs)
            if (kv.first == argNm)
              return nameJ.error(where.str() + ": duplicate argument '" + argNm + "'");
          if (isOp)
            return na.error(where.str() + ": operator arguments must be positional");
          kwargs.emplace_back(argNm, std::move(a));
        }
      }
      GRAFT_TRY(JsonRef metaJ, n.field("metadata"));
      GRAFT_TRY(auto metaMembers, metaJ.members());
      std::vector<std::pair<std::string, std::string>> metadata;
      for (const auto &[k, v] : metaMembers) {
        GRAFT_TRY(std::string s, v.str());
        metadata.emplace_back(k, std::move(s));
      }

      Node *node =
          graph_->createNode(target, std::move(args), std::move(kwargs), std::move(results));
      node->metadata() = std::move(metadata);
      node->setSchema(schema);
      if (schema && opts_.fillDefaults)
        fillDefaults(*node);
      std::string key = pt2::nodeKey(*node, zeroOutputs_);
      extras_.nodes.emplace(key, std::move(info));
    }
    return okStatus();
  }

  /// torch.export's training IR turns a `torch.no_grad()` (or enable_grad)
  /// region inside forward() into this higher-order op
  /// (torch/_export/passes/replace_set_grad_with_hop_pass.py,
  /// _replace_with_hop_helper): wrap_with_set_grad_enabled(enabled, body,
  /// *operands), the body a submodule serialized as an as_graph argument
  /// (serialize.py serialize_input of a get_attr GraphModule) with its own
  /// inputs, nodes, values and outputs.
  static constexpr std::string_view kGradRegion = "higher_order.wrap_with_set_grad_enabled";

  /// Inlines a wrap_with_set_grad_enabled node: grad mode changes nothing in
  /// an inference graph, and run_decompositions (what ExecuTorch's to_edge
  /// runs) traces through the region the same way. The body's inputs are
  /// the operands, its nodes join the graph in order, and each output of the
  /// node names the body's output at its position (the pass renames the
  /// getitem nodes after the body's outputs, so the names usually agree).
  Status inlineGradRegion(const JsonRef &n) {
    GRAFT_TRY(JsonRef inputs, n.field("inputs"));
    GRAFT_TRY(auto inList, inputs.array());
    GRAFT_TRY(JsonRef outs, n.field("outputs"));
    GRAFT_TRY(auto outList, outs.array());
    // The node's output names, to name it in messages.
    std::vector<std::pair<JsonRef, std::string>> outNames;
    for (const JsonRef &o : outList) {
      GRAFT_TRY(auto u, o.unionMember());
      if (u.first == "as_tensor") {
        GRAFT_TRY(std::string vn, argName(u.second));
        outNames.emplace_back(u.second, std::move(vn));
      } else if (u.first == "as_sym_int" || u.first == "as_sym_float" || u.first == "as_sym_bool") {
        GRAFT_TRY(auto sm, u.second.unionMember());
        if (sm.first != "as_name")
          return u.second.error("a node output must be named");
        GRAFT_TRY(std::string vn, sm.second.str());
        outNames.emplace_back(sm.second, std::move(vn));
      } else {
        return o.error("node output of kind '" + std::string(u.first) + "' of " +
                       std::string(kGradRegion) + " is not supported");
      }
    }
    const std::string nodeName = outNames.empty() ? std::string(kGradRegion) : outNames[0].second;
    const Where where(nodeName, kGradRegion);
    const std::string label = where.str();
    if (inList.size() < 2)
      return inputs.error(label + ": expects (enabled, body, *operands)");
    GRAFT_TRY(JsonRef enabled, inList[0].field("arg"));
    GRAFT_TRY(auto e, enabled.unionMember());
    if (e.first != "as_bool")
      return enabled.error(label + ": operand 0 (enabled) must be a bool");
    GRAFT_TRY(JsonRef bodyArg, inList[1].field("arg"));
    GRAFT_TRY(auto b, bodyArg.unionMember());
    if (b.first != "as_graph")
      return bodyArg.error(label + ": operand 1 (the region's body) must be a graph");
    GRAFT_TRY(JsonRef body, b.second.field("graph"));
    std::vector<Value *> operands;
    for (std::size_t i = 2; i < inList.size(); ++i) {
      GRAFT_TRY(JsonRef a, inList[i].field("arg"));
      GRAFT_TRY(Argument v, argument(a, where.argument("operand " + std::to_string(i)), nullptr));
      if (!v.isValue())
        return a.error(label + ": operand " + std::to_string(i) + " must be a tensor or symbol");
      operands.push_back(v.value());
    }
    GRAFT_CHECK_OK(readValueMetas(body));
    // Unbacked symbols are named after the node that defines them
    // (planSymbols reads the top-level nodes only).
    GRAFT_TRY(JsonRef bodyNodes, body.field("nodes"));
    for (const JsonValue &bn : bodyNodes.json().elements())
      if (const JsonValue *os = bn.find("outputs"))
        for (const JsonValue &o : os->elements())
          if (o.find("as_sym_int") || o.find("as_sym_float") || o.find("as_sym_bool"))
            return bodyNodes.error(label + ": the region's body defines a symbolic value, which "
                                           "graft does not inline");
    // The body's placeholders are the operands (split_module names them
    // after the values passed in).
    GRAFT_TRY(JsonRef bodyIns, body.field("inputs"));
    GRAFT_TRY(auto bodyInList, bodyIns.array());
    if (bodyInList.size() != operands.size())
      return bodyIns.error(label + ": the body has " + std::to_string(bodyInList.size()) +
                           " inputs for " + std::to_string(operands.size()) + " operands");
    for (std::size_t i = 0; i < operands.size(); ++i) {
      GRAFT_TRY(std::string in, graphValueName(bodyInList[i]));
      GRAFT_CHECK_OK(bind(bodyInList[i], in, operands[i], label));
    }
    GRAFT_CHECK_OK(readNodes(body));
    GRAFT_TRY(JsonRef bodyOuts, body.field("outputs"));
    GRAFT_TRY(auto bodyOutList, bodyOuts.array());
    if (bodyOutList.size() != outNames.size())
      return bodyOuts.error(label + ": the body returns " + std::to_string(bodyOutList.size()) +
                            " values for " + std::to_string(outNames.size()) + " node outputs");
    for (std::size_t i = 0; i < outNames.size(); ++i) {
      GRAFT_TRY(std::string on, graphValueName(bodyOutList[i]));
      GRAFT_TRY(Value * v, lookup(bodyOutList[i], on, kindOfMeta(on), where));
      GRAFT_CHECK_OK(bind(outNames[i].first, outNames[i].second, v, label));
    }
    return okStatus();
  }

  /// The name of a graph input or output (as_tensor, or a named symbol).
  static Expected<std::string> graphValueName(const JsonRef &j) {
    GRAFT_TRY(auto u, j.unionMember());
    if (u.first == "as_tensor")
      return argName(u.second);
    if (u.first == "as_sym_int" || u.first == "as_sym_float" || u.first == "as_sym_bool") {
      GRAFT_TRY(auto sm, u.second.unionMember());
      if (sm.first == "as_name")
        return sm.second.str();
    }
    return j.error("expected a tensor or a named symbol, got '" + std::string(u.first) + "'");
  }

  ValueKind kindOfMeta(const std::string &n) const {
    const ValueMetaInfo *m = findMeta(n);
    return m ? m->kind : ValueKind::Tensor;
  }

  /// Makes `name` refer to `v` (a region's body input or output): nothing
  /// to do when `v` has that name; an error when another value has it.
  Status bind(const JsonRef &at, const std::string &name, Value *v, const std::string &label) {
    if (Value *existing = graph_->findValue(name)) {
      if (existing == v)
        return okStatus();
      return at.error(label + ": '" + name + "' names both '" + v->name() +
                      "' and another value of the graph");
    }
    auto [it, fresh] = aliases_.emplace(name, v);
    if (!fresh && it->second != v)
      return at.error(label + ": '" + name + "' is bound twice");
    return okStatus();
  }

  static const SchemaArg *findSchemaArg(const OpSchema &schema, const std::string &argName) {
    for (const SchemaArg &a : schema.args)
      if (a.name == argName)
        return &a;
    for (const OpSchema &legacy : schema.legacySchemas)
      for (const SchemaArg &a : legacy.args)
        if (a.name == argName)
          return &a;
    return nullptr;
  }

  /// Appends the arguments the serializer left out because they had their
  /// default value (only when the node binds to its schema).
  static void fillDefaults(Node &node) {
    auto bound = BoundArgs::bind(node);
    if (!bound)
      return;
    const OpSchema &s = bound->schema();
    bool complete = true;
    for (std::size_t i = 0; i < s.args.size() && complete; ++i)
      complete = bound->provided(i);
    if (complete)
      return; // most nodes: nothing to append, nothing to copy
    std::vector<Argument> args = node.args();
    std::vector<std::pair<std::string, Argument>> kwargs = node.kwargs();
    for (std::size_t i = 0; i < s.args.size(); ++i) {
      if (bound->provided(i))
        continue;
      const SchemaArg &sa = s.args[i];
      if (!sa.keywordOnly && kwargs.empty() && args.size() == i)
        args.push_back(bound->at(i));
      else
        kwargs.emplace_back(sa.name, bound->at(i));
    }
    node.setArgs(std::move(args), std::move(kwargs));
  }

  //===-- Outputs ---------------------------------------------------------===//

  Expected<Value *> outputValue(const JsonRef &arg, const Where &where) {
    GRAFT_TRY(auto u, arg.unionMember());
    if (u.first == "as_tensor") {
      GRAFT_TRY(std::string n, argName(u.second));
      return lookup(u.second, n, ValueKind::Tensor, where);
    }
    if (u.first == "as_sym_int" || u.first == "as_sym_float" || u.first == "as_sym_bool") {
      GRAFT_TRY(auto sm, u.second.unionMember());
      if (sm.first != "as_name")
        return arg.error(where.str() + ": constant outputs are not supported");
      GRAFT_TRY(std::string n, sm.second.str());
      ValueKind vk = u.first == "as_sym_int"     ? ValueKind::SymInt
                     : u.first == "as_sym_float" ? ValueKind::SymFloat
                                                 : ValueKind::SymBool;
      return lookup(sm.second, n, vk, where);
    }
    return arg.error(where.str() + ": output of kind '" + std::string(u.first) +
                     "' is not supported (graft outputs are values; a constant output is read "
                     "as torch's deserialize_graph_output reads it: as_int or as_none)");
  }

  /// A constant graph output (Pt2ConstantOutput): the graph gets no output;
  /// its user_output spec must name the same constant.
  Status readConstantOutput(const JsonRef &out, std::string_view specKind, const JsonRef &arg,
                            const Where &where, std::size_t userOutputsBefore) {
    GRAFT_TRY(Argument value, argument(out, where, nullptr));
    if (specKind != "user_output")
      return out.error(where.str() + ": a constant output must be a user_output, not " +
                       std::string(specKind));
    GRAFT_TRY(Argument inSpec, argument(arg, where, nullptr));
    if (!(inSpec == value))
      return arg.error(where.str() + ": the graph output is " + pt2::constantText(value) +
                       " but its user_output spec says " + pt2::constantText(inSpec));
    constantOutputs_.push_back({std::move(value), userOutputsBefore});
    return okStatus();
  }

  Status readOutputs(const JsonRef &graphJ, const JsonRef &sig) {
    GRAFT_TRY(JsonRef outputs, graphJ.field("outputs"));
    GRAFT_TRY(auto outList, outputs.array());
    GRAFT_TRY(JsonRef specs, sig.field("output_specs"));
    GRAFT_TRY(auto specList, specs.array());
    if (outList.size() != specList.size())
      return specs.error("lists " + std::to_string(specList.size()) +
                         " output specs but graph.outputs has " + std::to_string(outList.size()));
    GRAFT_TRY(auto single, graphJ.optField("is_single_tensor_return"));
    if (single) {
      GRAFT_TRY(extras_.isSingleTensorReturn, single->boolean());
    }
    std::size_t userOutputs = 0; // user outputs added so far
    for (std::size_t i = 0; i < specList.size(); ++i) {
      const Where where(i);
      GRAFT_TRY(auto spec, specList[i].unionMember());
      const JsonRef &s = spec.second;
      GRAFT_TRY(JsonRef arg, s.field("arg"));
      GRAFT_TRY(auto outKind, outList[i].unionMember());
      if (outKind.first == "as_int" || outKind.first == "as_none") {
        GRAFT_CHECK_OK(readConstantOutput(outList[i], spec.first, arg, where, userOutputs));
        continue;
      }
      GRAFT_TRY(Value * v, outputValue(outList[i], where));
      Value *specValue = nullptr;
      if (spec.first == "user_output") {
        GRAFT_TRY(specValue, outputValue(arg, where));
        graph_->addOutput(v, OutputKind::UserOutput);
        ++userOutputs;
      } else if (spec.first == "buffer_mutation" || spec.first == "user_input_mutation") {
        GRAFT_TRY(std::string n, argName(arg));
        GRAFT_TRY(specValue, lookup(arg, n, ValueKind::Tensor, where));
        bool buffer = spec.first == "buffer_mutation";
        GRAFT_TRY(JsonRef t, s.field(buffer ? "buffer_name" : "user_input_name"));
        GRAFT_TRY(std::string targetName, t.str());
        if (buffer) {
          const GraphInput *b = graph_->findConstant(targetName);
          if (!b || b->kind != InputKind::Buffer)
            return t.error("buffer mutation names '" + targetName + "', which is not a buffer");
        } else {
          Value *u = graph_->findValue(targetName);
          const GraphInput *gi = u ? graph_->inputFor(u) : nullptr;
          if (!gi || gi->kind != InputKind::UserInput)
            return t.error("user input mutation names '" + targetName +
                           "', which is not a user input");
        }
        graph_->addOutput(v, buffer ? OutputKind::BufferMutation : OutputKind::UserInputMutation,
                          targetName);
      } else {
        return specList[i].error(where.str() + " '" + v->name() + "': output spec kind '" +
                                 std::string(spec.first) +
                                 "' is not supported (graft reads user outputs and buffer and "
                                 "user input mutations of inference graphs)");
      }
      if (specValue != v)
        return arg.error("names '" + specValue->name() + "' but graph.outputs[" +
                         std::to_string(i) + "] is '" + v->name() + "'");
    }
    return okStatus();
  }

  const JsonValue &doc_;
  std::string record_;
  const Pt2ReadOptions &opts_;
  Pt2Extras &extras_;
  const OpRegistry &registry_;
  std::unique_ptr<Graph> graph_;
  /// Keys view the document, which outlives the import.
  /// Value name (a view of the document) -> its entry in metaInfos_: a flat
  /// table, looked up for every node output and tensor argument.
  StringViewMap<uint32_t> metas_;
  std::vector<ValueMetaInfo> metaInfos_;
  const ValueMetaInfo *findMeta(std::string_view n) const {
    const uint32_t *i = metas_.find(n);
    return i ? &metaInfos_[*i] : nullptr;
  }
  /// A later entry for the same name replaces the earlier one.
  void putMeta(std::string_view n, ValueMetaInfo info) {
    metas_.insertOrAssign(n, static_cast<uint32_t>(metaInfos_.size()));
    metaInfos_.push_back(std::move(info));
  }
  std::map<std::string, std::string> renamed_; // file symbol -> IR symbol
  std::set<std::string> usedSymbols_;
  const SubclassMap *subclasses_;
  /// Unwrapped subclass placeholder name -> (its FQN, attribute -> inner constant).
  struct Unwrapped {
    std::string fqn;
    std::map<std::string, Value *> inner;
  };
  std::map<std::string, Unwrapped> unwrappedByName_;
  std::set<std::string> specFqns_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> unwrappedFqns_;
  /// Specialized forward() arguments (constant_input specs), in file order,
  /// and their names -> index.
  std::vector<Pt2SpecializedInput> specialized_;
  std::map<std::string, std::size_t, std::less<>> specializedNames_;
  std::vector<Pt2ConstantOutput> constantOutputs_;
  /// Per target: how many nodes without outputs were read (Pt2Extras::nodes keys).
  std::map<std::string, int> zeroOutputs_;
  /// Output name of a dropped access node -> the inner constant it read.
  std::unordered_map<std::string, Value *> aliases_;
};

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

std::string fmtShape(DType dt, const std::vector<int64_t> &sizes) {
  std::string s = std::string(name(dt)) + "[";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

/// Checks a weight's data against the placeholder's prototype.
Status checkAgainstProto(const std::string &what, const Tensor &t, const GraphInput &in) {
  const TensorProto &p = in.value->proto();
  auto sizes = concreteSizes(p.shape);
  if (t.dtype() != p.dtype || !sizes || t.sizes() != *sizes)
    return Diagnostic::error(what + ": the data is " + fmtShape(t.dtype(), t.sizes()) +
                             " but the graph's placeholder '" + in.value->name() + "' is " +
                             p.str());
  return okStatus();
}

/// Position of an inner tensor in torchao's `__tensor_flatten__` order:
/// TorchAOBaseTensor lists `tensor_data_names`, then the
/// `optional_tensor_data_names` that are set (torchao/utils.py).
/// IntxUnpackedToInt8Tensor: qdata, scale, zero_point; Int8Tensor: qdata,
/// scale (zero_point in older releases), then the optional act_scale.
/// Unknown names follow in the pickle's (attribute assignment) order.
std::size_t flattenRank(const std::string &attr) {
  static const char *const kOrder[] = {"qdata", "scale", "zero_point", "act_scale"};
  for (std::size_t i = 0; i < std::size(kOrder); ++i)
    if (attr == kOrder[i])
      return i;
  return std::size(kOrder);
}

/// Interprets a decoded torchao subclass for `fqn`.
Expected<DecodedSubclass> subclassWeight(const std::string &what, const std::string &fqn,
                                         const pt2::PyObj &obj) {
  using Kind = pt2::PyObj::Kind;
  DecodedSubclass d;
  d.dtype = obj.dtype;
  d.sizes = obj.sizes;
  Pt2SubclassWeight &w = d.weight;
  w.fqn = fqn;
  w.className = obj.str;
  std::vector<std::pair<std::string, const pt2::PyObj *>> inner;
  for (const auto &[k, v] : obj.dict) {
    if (!k || k->kind != Kind::Str)
      return Diagnostic::error(what + ": tensor subclass " + obj.str +
                               " has a non-string attribute name");
    if (v && v->kind == Kind::Tensor) {
      inner.emplace_back(k->str, v.get());
      continue;
    }
    std::function<Expected<std::string>(const pt2::PyObj &)> text =
        [&](const pt2::PyObj &o) -> Expected<std::string> {
      switch (o.kind) {
      case Kind::None:
        return std::string("None");
      case Kind::Bool:
        return std::string(o.boolean ? "True" : "False");
      case Kind::Int:
        return std::to_string(o.integer);
      case Kind::Float:
        return std::to_string(o.floating);
      case Kind::Str:
        return "'" + o.str + "'";
      case Kind::DType:
        return "torch." + std::string(torchName(o.dtype));
      case Kind::Tuple:
      case Kind::List: {
        std::string s = o.kind == Kind::Tuple ? "(" : "[";
        for (std::size_t i = 0; i < o.items.size(); ++i) {
          if (!o.items[i])
            return Diagnostic::error("null item");
          GRAFT_TRY(std::string x, text(*o.items[i]));
          s += (i ? ", " : "") + x;
        }
        if (o.kind == Kind::Tuple && o.items.size() == 1)
          s += ",";
        return s + (o.kind == Kind::Tuple ? ")" : "]");
      }
      default:
        return Diagnostic::error(o.describe());
      }
    };
    if (!v)
      return Diagnostic::error(what + ": attribute '" + k->str + "' of " + obj.str + " is empty");
    auto t = text(*v);
    if (!t)
      return Diagnostic::error(what + ": attribute '" + k->str + "' of tensor subclass " + obj.str +
                               " is a " + t.diags()[0].message +
                               "; graft reads subclasses whose attributes are plain tensors and "
                               "plain values only");
    w.attributes.emplace_back(k->str, *t);
  }
  std::stable_sort(inner.begin(), inner.end(), [](const auto &a, const auto &b) {
    return flattenRank(a.first) < flattenRank(b.first);
  });
  for (const auto &[n, o] : inner) {
    w.tensors.emplace_back(n, o->tensor);
    d.fileOffsets.push_back(o->fileOffset);
  }
  if (inner.empty() || inner[0].first != "qdata")
    return Diagnostic::error(what + ": tensor subclass " + obj.str + " has no 'qdata' tensor");
  return d;
}

/// Adds an affine quant layout to a subclass weight's placeholder when the
/// attributes describe one (IntxUnpackedToInt8Tensor).
void annotateQuant(Graph &graph, GraphInput &in, const Pt2SubclassWeight &w) {
  std::string blockText, targetText;
  for (const auto &[k, v] : w.attributes) {
    if (k == "block_size")
      blockText = v;
    if (k == "target_dtype")
      targetText = v;
  }
  const Tensor *scale = nullptr, *zp = nullptr;
  for (const auto &[n, t] : w.tensors) {
    if (n == "scale")
      scale = &t;
    if (n == "zero_point")
      zp = &t;
  }
  if (blockText.size() < 2 || !scale)
    return;
  AffineQuant q;
  std::string body = blockText.substr(1, blockText.size() - 2);
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t comma = body.find(',', pos);
    std::string item =
        body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    if (!item.empty()) {
      try {
        q.blockSize.push_back(std::stoll(item));
      } catch (const std::exception &) {
        return;
      }
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  auto dt = parseDType(targetText.empty() ? "int8" : targetText);
  if (!dt)
    return;
  q.quantDType = *dt;
  auto bounds = integerBounds(*dt);
  if (!bounds)
    return;
  q.quantMin = bounds->first;
  q.quantMax = bounds->second;
  q.scaleDType = scale->dtype();
  if (zp)
    q.zeroPointDType = zp->dtype();
  TensorProto p = in.value->proto();
  p.quant = q;
  if (validateQuantLayout(p))
    graph.setProto(in.value, p);
}

/// One Storage per record: weights viewing the same record share it.
using StorageCache = std::map<std::string, std::shared_ptr<Storage>>;

/// A raw payload's tensor: a view of the record (mapped, never copied) with
/// the sizes, strides and offset of its tensor_meta, which must fit in it.
Expected<Tensor> rawTensor(const ZipReader &zip, const ZipEntry &e, const JsonRef &tm,
                           const std::string &what, StorageCache &storages) {
  GRAFT_TRY(JsonRef dtJ, tm.field("dtype"));
  GRAFT_TRY(int64_t dtv, dtJ.integer());
  auto dt = dtypeFromExportScalarType(dtv);
  if (!dt)
    return dtJ.error("unknown ScalarType " + std::to_string(dtv));
  auto ints = [&](const char *f) -> Expected<std::vector<int64_t>> {
    GRAFT_TRY(JsonRef l, tm.field(f));
    GRAFT_TRY(auto items, l.array());
    std::vector<int64_t> out;
    for (const JsonRef &x : items) {
      GRAFT_TRY(auto u, x.unionMember());
      if (u.first != "as_int")
        return x.error("a weight must have concrete sizes and strides");
      GRAFT_TRY(int64_t v, u.second.integer());
      out.push_back(v);
    }
    return out;
  };
  GRAFT_TRY(std::vector<int64_t> sizes, ints("sizes"));
  GRAFT_TRY(std::vector<int64_t> strides, ints("strides"));
  if (sizes.size() != strides.size())
    return tm.error("sizes and strides differ in length");
  GRAFT_TRY(JsonRef offJ, tm.field("storage_offset"));
  GRAFT_TRY(auto offU, offJ.unionMember());
  if (offU.first != "as_int")
    return offJ.error("a weight must have a concrete storage offset");
  GRAFT_TRY(int64_t offset, offU.second.integer());
  Device device;
  GRAFT_TRY(bool requiresGrad, tensorMetaRest(tm, device));
  (void)requiresGrad; // a payload is data; the graph's meta says how it is used
  uint64_t last = 0;
  bool empty = false;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0)
      return tm.error("negative size or stride");
    if (sizes[i] == 0)
      empty = true;
    else if (sizes[i] > 1 && static_cast<uint64_t>(strides[i]) >
                                 (uint64_t(1) << 62) / static_cast<uint64_t>(sizes[i]))
      return tm.error("size overflow");
    else
      last += static_cast<uint64_t>(sizes[i] - 1) * static_cast<uint64_t>(strides[i]);
  }
  // torch writes no bytes for a fake tensor or one without elements
  // (torch/export/pt2_archive/_package.py, _get_raw_tensor_bytes). The
  // latter is complete as it is: an empty tensor, so the constant has data.
  if (e.size == 0)
    return empty ? Tensor::empty(*dt, sizes) : Tensor();
  std::size_t es = elementSize(*dt);
  if (e.size % es != 0)
    return Diagnostic::error(what + ": record has " + std::to_string(e.size) +
                             " bytes, not a whole number of " + std::string(name(*dt)) +
                             " elements");
  uint64_t elems = e.size / es;
  if (offset < 0 || (!empty && static_cast<uint64_t>(offset) + last >= elems))
    return Diagnostic::error(what + ": the tensor meta (" + fmtShape(*dt, sizes) +
                             ", storage offset " + std::to_string(offset) +
                             ") needs more than the record's " + std::to_string(elems) +
                             " elements (" + std::to_string(e.size) + " bytes)");
  std::shared_ptr<Storage> storage;
  auto it = storages.find(e.name);
  if (it != storages.end()) {
    storage = it->second;
  } else {
    GRAFT_TRY(storage, zip.map(e));
    storages.emplace(e.name, storage);
  }
  return Tensor(*dt, sizes, storage, offset, strides);
}

/// A PayloadConfig record (torch >= 2.9) and, for each of its entries in
/// order, the raw payload's tensor (or the error making it) where the entry
/// names one: what WeightLoader::loadRaw would compute, computed ahead.
struct PreparedConfig {
  const ZipEntry *record = nullptr; ///< null: the archive has no such record
  std::optional<Expected<JsonDocument>> doc;
  std::vector<std::optional<Expected<Tensor>>> tensors;
  std::vector<std::optional<Status>> crcs; ///< with Pt2ReadOptions::verifyWeightChecksums
};

/// The raw layout's weights and constants configs, parsed and their tensors
/// mapped on a second thread while model.json is parsed and imported (they
/// need only the archive). Nothing is reported here: SubclassScanner and
/// WeightLoader read the results and report errors where they always did.
struct PreparedPayloads {
  PreparedConfig weights, constants;
  StorageCache storages;
};

PreparedConfig prepareConfig(const ZipReader &zip, const std::string &dir,
                             const std::string &configRecord, const Pt2ReadOptions &opts,
                             StorageCache &storages) {
  PreparedConfig out;
  out.record = zip.find(configRecord);
  if (!out.record)
    return out;
  out.doc = pt2::parseJsonRecord(zip, *out.record);
  const JsonValue *config = out.doc->ok() ? (*out.doc)->root().find("config") : nullptr;
  if (!config || !config->isObject())
    return out;
  JsonRef root((*out.doc)->root(), configRecord, "");
  auto configRef = root.field("config");
  if (!configRef.ok())
    return out;
  auto members = configRef->members();
  if (!members.ok())
    return out;
  out.tensors.resize(members->size());
  out.crcs.resize(members->size());
  for (std::size_t i = 0; i < members->size(); ++i) {
    const auto &[key, meta] = (*members)[i];
    const JsonValue &m = meta.json();
    const JsonValue *path = m.find("path_name"), *usePickle = m.find("use_pickle");
    const JsonValue *tmJ = m.find("tensor_meta");
    if (!path || !path->isString() || !usePickle || !usePickle->isBoolean() ||
        usePickle->boolean() || !tmJ || tmJ->isNull())
      continue;
    std::string pathName(path->string());
    if (pathName.find('/') != std::string::npos || pathName.find("..") != std::string::npos)
      continue;
    const ZipEntry *e = zip.find(dir + pathName);
    if (!e)
      continue;
    if (opts.verifyWeightChecksums)
      out.crcs[i] = zip.verifyCrc(*e);
    auto tm = meta.field("tensor_meta");
    if (!tm.ok())
      continue;
    out.tensors[i] =
        rawTensor(zip, *e, *tm, "weight '" + std::string(key) + "' (" + e->name + ")", storages);
  }
  return out;
}

struct WeightSource {
  enum class Kind { Raw, PickledDict } kind = Kind::Raw;
  std::string dir;        ///< "root/data/weights/" for raw
  std::string configName; ///< record of the PayloadConfig
  pt2::PyRef dict;        ///< for pickled
  std::string dictRecord; ///< record the dict came from
  bool isConstants = false;
};

/// Decodes the archive's torchao subclass weights before the graph is
/// imported (the importer replaces their inner-tensor accesses by plain
/// constants). Pickles are decoded once: WeightLoader reuses `decoded`.
/// Errors other than a bad subclass are left to WeightLoader, which reports
/// them the same way whether or not subclasses are unwrapped.
class SubclassScanner {
public:
  explicit SubclassScanner(std::shared_ptr<ZipReader> zip) : zip_(std::move(zip)) {}

  SubclassMap &subclasses() { return subclasses_; }
  const std::map<std::string, pt2::PyRef> &decoded() const { return decoded_; }

  /// `use_pickle` payloads of a PayloadConfig (torch >= 2.9).
  Status scanRaw(const std::string &dir, const PreparedConfig &prepared, bool constants) {
    if (!prepared.record)
      return okStatus();
    const Expected<JsonDocument> &doc = *prepared.doc;
    const JsonValue *config = doc ? doc->root().find("config") : nullptr;
    if (!config)
      return okStatus();
    for (const JsonMember &m : config->members()) {
      const std::string fqn(m.key);
      const JsonValue *usePickle = m.value.find("use_pickle"), *path = m.value.find("path_name");
      if (!usePickle || !path || !usePickle->isBoolean() || !usePickle->boolean() ||
          !path->isString())
        continue;
      std::string pathName(path->string());
      if (pathName.rfind("custom_obj_", 0) == 0 || pathName.find('/') != std::string::npos ||
          pathName.find("..") != std::string::npos)
        continue;
      const ZipEntry *e = zip_->find(dir + pathName);
      if (!e)
        continue;
      std::string what = "weight '" + fqn + "' (" + e->name + ")";
      GRAFT_TRY(auto nested, zip_->openNested(*e));
      GRAFT_TRY(pt2::PyRef obj, pt2::loadTorchSave(nested, what));
      decoded_[e->name] = obj;
      GRAFT_CHECK_OK(note(fqn, obj, what, constants, e));
    }
    return okStatus();
  }

  /// A torch.save'd state dict (torch <= 2.8).
  Status scanDict(const ZipEntry *entry, const std::string &record, bool constants) {
    if (!entry || entry->size == 0)
      return okStatus();
    GRAFT_TRY(auto nested, zip_->openNested(*entry));
    GRAFT_TRY(pt2::PyRef obj, pt2::loadTorchSave(nested, zip_->displayName() + ":" + record));
    decoded_[entry->name] = obj;
    if (obj->kind != pt2::PyObj::Kind::Dict)
      return okStatus();
    for (const auto &[k, v] : obj->dict)
      if (k && k->kind == pt2::PyObj::Kind::Str && v)
        GRAFT_CHECK_OK(
            note(k->str, v, "weight '" + k->str + "' (" + record + ")", constants, nullptr));
    return okStatus();
  }

private:
  Status note(const std::string &fqn, const pt2::PyRef &obj, const std::string &what,
              bool constants, const ZipEntry *record) {
    if (obj->kind != pt2::PyObj::Kind::Subclass || obj->firstUnsupported())
      return okStatus(); // not a subclass, or refused by WeightLoader
    GRAFT_TRY(DecodedSubclass d, subclassWeight(what, fqn, *obj));
    d.weight.inConstants = constants;
    if (record) {
      GRAFT_TRY(d.weight.pickleBytes, zip_->map(*record));
    }
    subclasses_[fqn] = std::move(d);
    return okStatus();
  }

  std::shared_ptr<ZipReader> zip_;
  SubclassMap subclasses_;
  std::map<std::string, pt2::PyRef> decoded_; // by record name
};

class WeightLoader {
public:
  /// `decoded`: pickles SubclassScanner already decoded, by record name.
  WeightLoader(const std::shared_ptr<ZipReader> &zip, Graph &graph, Pt2Provenance &prov,
               const Pt2ReadOptions &opts, const std::map<std::string, pt2::PyRef> &decoded)
      : zip_(zip), graph_(graph), prov_(prov), opts_(opts), decoded_(decoded) {}

  /// The records mapped ahead (prepareConfig), so that a weight mapped here
  /// shares its record's Storage with those mapped there.
  void adoptStorages(StorageCache storages) { storages_ = std::move(storages); }

  /// An inner tensor of an unwrapped subclass, for the constant `fqn` the
  /// importer made for it: mapped in place, as the pickle reader left it.
  Status bindInner(const std::string &fqn, const Tensor &t, int64_t fileOffset,
                   const std::string &what) {
    GraphInput *in = findInput(fqn);
    if (!in)
      return Diagnostic::error(what + ": no graph constant '" + fqn + "' for it");
    GRAFT_CHECK_OK(checkAgainstProto(what, t, *in));
    in->setData(t, ExternalData{});
    if (fileOffset >= 0)
      noteOffset(fqn, t, static_cast<uint64_t>(fileOffset));
    loaded_.insert(fqn);
    return okStatus();
  }

  /// Raw payloads + PayloadConfig (torch >= 2.9).
  Status loadRaw(const std::string &dir, const std::string &configRecord, PreparedConfig &prepared,
                 bool constants) {
    if (!prepared.record)
      return Diagnostic::error(zip_->displayName() + ": missing record '" + configRecord + "'");
    if (!prepared.doc->ok())
      return prepared.doc->takeFailure();
    JsonRef root((*prepared.doc)->root(), configRecord, "");
    GRAFT_TRY(JsonRef config, root.field("config"));
    GRAFT_TRY(auto members, config.members());
    for (std::size_t i = 0; i < members.size(); ++i) {
      const auto &[key, meta] = members[i];
      const std::string fqn(key);
      GRAFT_TRY(JsonRef pn, meta.field("path_name"));
      GRAFT_TRY(std::string pathName, pn.str());
      GRAFT_TRY(JsonRef up, meta.field("use_pickle"));
      GRAFT_TRY(bool usePickle, up.boolean());
      GRAFT_TRY(JsonRef ip, meta.field("is_param"));
      GRAFT_TRY(bool isParam, ip.boolean());
      (void)isParam;
      GraphInput *in = findInput(fqn);
      if (!in)
        continue; // not referenced by the graph (e.g. an unused custom object)
      if (pathName.find('/') != std::string::npos || pathName.find("..") != std::string::npos)
        return pn.error("path_name '" + pathName + "' must be a plain record name");
      std::string record = dir + pathName;
      const ZipEntry *e = zip_->find(record);
      if (!e)
        return Diagnostic::error(zip_->displayName() + ": missing record '" + record +
                                 "' (weight '" + fqn + "')");
      std::string what = "weight '" + fqn + "' (" + record + ")";
      if (opts_.verifyWeightChecksums) {
        Status crc = i < prepared.crcs.size() && prepared.crcs[i] ? std::move(*prepared.crcs[i])
                                                                  : zip_->verifyCrc(*e);
        if (!crc)
          return Diagnostic::error("weight '" + fqn + "': " + crc.diags()[0].message);
      }
      if (usePickle) {
        if (pathName.rfind("custom_obj_", 0) == 0)
          return Diagnostic::error(what + ": custom objects are not supported");
        GRAFT_TRY(pt2::PyRef obj, decode(*e, what));
        GRAFT_CHECK_OK(bindPickled(*in, fqn, *obj, what, constants, e));
        continue;
      }
      GRAFT_TRY(JsonRef tm, meta.field("tensor_meta"));
      if (tm.isNull())
        return tm.error("a raw payload needs a tensor_meta");
      GRAFT_TRY(Tensor t, i < prepared.tensors.size() && prepared.tensors[i]
                              ? std::move(*prepared.tensors[i])
                              : rawTensor(*zip_, *e, tm, what, storages_));
      if (!t.defined()) {
        loaded_.insert(fqn); // zero-length record: a fake tensor, no data
        continue;
      }
      GRAFT_CHECK_OK(checkAgainstProto(what, t, *in));
      in->setData(t, ExternalData{});
      auto at = zip_->fileOffset(*e);
      if (at && t.numel() > 0) // an empty tensor is not in the file
        noteOffset(fqn, t, *at);
      loaded_.insert(fqn);
    }
    return okStatus();
  }

  /// A torch.save'd dict FQN -> tensor (torch <= 2.8).
  Status loadPickledDict(const ZipEntry *entry, const std::string &record, bool constants) {
    if (!entry)
      return okStatus();
    if (entry->size == 0)
      return okStatus(); // serialize_torch_artifact(None / {}) may write nothing
    if (opts_.verifyWeightChecksums)
      GRAFT_CHECK_OK(zip_->verifyCrc(*entry));
    GRAFT_TRY(pt2::PyRef obj, decode(*entry, zip_->displayName() + ":" + record));
    if (obj->kind != pt2::PyObj::Kind::Dict)
      return Diagnostic::error(zip_->displayName() + ":" + record + ": expected a dict, got " +
                               obj->describe());
    for (const auto &[k, v] : obj->dict) {
      if (!k || k->kind != pt2::PyObj::Kind::Str)
        return Diagnostic::error(zip_->displayName() + ":" + record + ": a key is not a string");
      GraphInput *in = findInput(k->str);
      std::string what = "weight '" + k->str + "' (" + record + ")";
      if (!in) {
        if (const pt2::PyObj *u = v ? v->firstUnsupported() : nullptr)
          return refuse(what, *u);
        continue;
      }
      GRAFT_CHECK_OK(bindPickled(*in, k->str, *v, what, constants, nullptr));
    }
    return okStatus();
  }

  /// Every constant the graph takes must have been found.
  Status checkAllLoaded(const std::string &where) {
    for (const GraphInput &in : graph_.inputs())
      if (in.isConstant() && !loaded_.count(in.fqn))
        return Diagnostic::error(zip_->displayName() + ": no data for " +
                                 std::string(name(in.kind)) + " '" + in.fqn + "' (placeholder '" +
                                 in.value->name() + "') in " + where);
    return okStatus();
  }

private:
  /// The torch.save archive in record `e`, decoded now or by SubclassScanner.
  Expected<pt2::PyRef> decode(const ZipEntry &e, const std::string &what) {
    auto it = decoded_.find(e.name);
    if (it != decoded_.end())
      return it->second;
    GRAFT_TRY(auto nested, zip_->openNested(e));
    return pt2::loadTorchSave(nested, what);
  }

  /// The first constant input named `fqn`, through the graph's FQN index (a
  /// scan per weight would make loading quadratic in the number of weights).
  GraphInput *findInput(const std::string &fqn) {
    const GraphInput *in = graph_.findConstant(fqn);
    return in ? graph_.inputFor(in->value) : nullptr;
  }

  void noteOffset(const std::string &fqn, const Tensor &t, uint64_t storageStart) {
    if (t.isContiguous())
      prov_.weightFileOffsets[fqn] =
          storageStart + static_cast<uint64_t>(t.offset()) * elementSize(t.dtype());
  }

  static Status refuse(const std::string &what, const pt2::PyObj &u) {
    return Diagnostic::error(what + ": the pickle builds '" + u.str +
                             "', which graft does not load (allowed: plain tensors, "
                             "Parameters, OrderedDicts and known torchao tensor subclasses "
                             "with plain inner tensors); nothing in it was executed");
  }

  Status bindPickled(GraphInput &in, const std::string &fqn, const pt2::PyObj &obj,
                     const std::string &what, bool constants, const ZipEntry *record) {
    using Kind = pt2::PyObj::Kind;
    if (const pt2::PyObj *u = obj.firstUnsupported())
      return refuse(what, *u);
    if (obj.kind == Kind::Tensor) {
      GRAFT_CHECK_OK(checkAgainstProto(what, obj.tensor, in));
      in.setData(obj.tensor, ExternalData{});
      if (obj.fileOffset >= 0)
        noteOffset(fqn, obj.tensor, static_cast<uint64_t>(obj.fileOffset));
      loaded_.insert(fqn);
      return okStatus();
    }
    if (obj.kind == Kind::Subclass) {
      GRAFT_TRY(DecodedSubclass d, subclassWeight(what, fqn, obj));
      Pt2SubclassWeight &w = d.weight;
      const TensorProto &p = in.value->proto();
      auto sizes = concreteSizes(p.shape);
      if (obj.dtype != p.dtype || !sizes || obj.sizes != *sizes)
        return Diagnostic::error(what + ": the subclass is " + fmtShape(obj.dtype, obj.sizes) +
                                 " but the graph's placeholder '" + in.value->name() + "' is " +
                                 p.str());
      w.inConstants = constants;
      if (record) {
        GRAFT_TRY(w.pickleBytes, zip_->map(*record));
      }
      annotateQuant(graph_, in, w);
      prov_.subclassWeights.push_back(std::move(w));
      loaded_.insert(fqn);
      return okStatus();
    }
    if (obj.kind == Kind::FakeTensor) {
      GRAFT_CHECK_OK(checkFakeTensor(what, obj.str, in));
      loaded_.insert(fqn); // a constant without data, as a >= 2.9 fake record
      return okStatus();
    }
    return Diagnostic::error(what + ": expected a tensor, got " + obj.describe());
  }

  /// A fake tensor of a <= 2.8 state dict (serialize.py _reduce_fake_tensor:
  /// the TensorMeta as JSON bytes; _reconstruct_fake_tensor makes an
  /// empty_strided fake tensor of it): its dtype and sizes must be the
  /// placeholder's. It has no data, like an empty >= 2.9 fake record.
  static Status checkFakeTensor(const std::string &what, const std::string &metaJson,
                                const GraphInput &in) {
    auto doc = JsonDocument::parse(metaJson);
    if (!doc)
      return Diagnostic::error(
          what + ": the fake tensor's TensorMeta is not JSON: " + doc.diags()[0].message);
    JsonRef tm(doc->root(), what, "fake tensor meta");
    GRAFT_TRY(JsonRef dtJ, tm.field("dtype"));
    GRAFT_TRY(int64_t dtv, dtJ.integer());
    auto dt = dtypeFromExportScalarType(dtv);
    if (!dt)
      return dtJ.error("unknown ScalarType " + std::to_string(dtv));
    GRAFT_TRY(JsonRef sizesJ, tm.field("sizes"));
    GRAFT_TRY(auto items, sizesJ.array());
    std::vector<int64_t> sizes;
    for (const JsonRef &x : items) {
      GRAFT_TRY(auto u, x.unionMember());
      if (u.first != "as_int")
        return x.error("a weight must have concrete sizes");
      GRAFT_TRY(int64_t v, u.second.integer());
      sizes.push_back(v);
    }
    const TensorProto &p = in.value->proto();
    auto want = concreteSizes(p.shape);
    if (*dt != p.dtype || !want || sizes != *want)
      return Diagnostic::error(what + ": the fake tensor is " + fmtShape(*dt, sizes) +
                               " but the graph's placeholder '" + in.value->name() + "' is " +
                               p.str());
    return okStatus();
  }

  std::shared_ptr<ZipReader> zip_;
  Graph &graph_;
  Pt2Provenance &prov_;
  const Pt2ReadOptions &opts_;
  const std::map<std::string, pt2::PyRef> &decoded_;
  StorageCache storages_;
  std::set<std::string> loaded_;
};

std::string folderOf(const std::string &recordName) {
  auto s = recordName.find('/');
  return s == std::string::npos ? std::string() : recordName.substr(0, s);
}

} // namespace

Expected<Pt2Program> readPt2(const std::string &path, const Pt2ReadOptions &options) {
  GRAFT_TRY(std::shared_ptr<ZipReader> zip, ZipReader::open(path));
  if (zip->entries().empty())
    return Diagnostic::error(path + ": the archive has no records");
  Pt2Program program;
  Pt2Provenance &prov = program.provenance;
  prov.path = path;
  auto extras = std::make_shared<Pt2Extras>();

  std::string modelRecord;
  std::string root;
  if (zip->find("serialized_exported_program.json")) {
    prov.layout = Pt2Layout::Legacy;
    modelRecord = "serialized_exported_program.json";
  } else {
    root = folderOf(zip->entries()[0].name);
    if (root.empty())
      return Diagnostic::error(path + ": neither a PT2 archive (records inside one folder) nor a "
                                      "legacy export (serialized_exported_program.json)");
    for (const ZipEntry &e : zip->entries())
      if (e.name.rfind(root + "/", 0) != 0)
        return Diagnostic::error(path + ": record '" + e.name +
                                 "' is outside the archive folder '" + root + "/'");
    prov.archiveRoot = root;
    const ZipEntry *fmt = zip->find(root + "/" + pt2::kArchiveFormat);
    if (!fmt)
      return Diagnostic::error(path + ": missing record '" + root + "/archive_format'");
    GRAFT_TRY(std::string fmtText, zip->read(*fmt));
    if (fmtText != "pt2")
      return Diagnostic::error(path + ": archive_format is '" + fmtText + "', expected 'pt2'");
    if (const ZipEntry *ver = zip->find(root + "/" + pt2::kArchiveVersion)) {
      GRAFT_TRY(std::string v, zip->read(*ver));
      if (v != "0")
        return Diagnostic::error(path + ": archive_version is '" + v +
                                 "'; graft reads archive version 0");
    }
    if (const ZipEntry *bo = zip->find(root + "/byteorder")) {
      GRAFT_TRY(std::string order, zip->read(*bo));
      if (order != "little")
        return Diagnostic::error(path + ": byteorder is '" + order +
                                 "'; graft reads little-endian archives only");
    }
    // The model: models/<name>.json ("model" when there are several).
    std::vector<std::string> models;
    const std::string prefix = root + "/models/";
    for (const ZipEntry &e : zip->entries())
      if (e.name.rfind(prefix, 0) == 0 && e.name.size() > prefix.size() + 5 &&
          e.name.compare(e.name.size() - 5, 5, ".json") == 0)
        models.push_back(e.name.substr(prefix.size(), e.name.size() - prefix.size() - 5));
    if (models.empty())
      return Diagnostic::error(path + ": missing record '" + prefix + "<model>.json'");
    prov.modelName =
        std::find(models.begin(), models.end(), "model") != models.end() ? "model" : models.front();
    modelRecord = prefix + prov.modelName + ".json";
    prov.layout = zip->find(root + "/data/weights/" + prov.modelName + ".pt")
                      ? Pt2Layout::PickledWeights
                      : Pt2Layout::RawWeights;
  }

  // The raw layout's payload configs are read on a second thread meanwhile
  // (prepareConfig); what they hold is used, and their errors reported, after
  // model.json's, as before.
  std::future<PreparedPayloads> payloads;
  if (prov.layout == Pt2Layout::RawWeights)
    payloads =
        std::async(std::launch::async, [&zip, &options, r = root + "/", model = prov.modelName] {
          PreparedPayloads p;
          p.weights = prepareConfig(*zip, r + "data/weights/",
                                    r + "data/weights/" + model + "_weights_config.json", options,
                                    p.storages);
          p.constants = prepareConfig(*zip, r + "data/constants/",
                                      r + "data/constants/" + model + "_constants_config.json",
                                      options, p.storages);
          return p;
        });
  const ZipEntry *me = zip->find(modelRecord);
  if (!me)
    return Diagnostic::error(path + ": missing record '" + modelRecord + "'");
  GRAFT_TRY(JsonDocument doc, pt2::parseJsonRecord(*zip, *me));
  std::optional<PreparedPayloads> prepared;
  if (payloads.valid())
    prepared = payloads.get();
  // Subclass weights are decoded first: unwrapping them changes the graph.
  SubclassScanner scanner(zip);
  if (options.unwrapSubclassWeights) {
    const std::string r = root + "/";
    if (prov.layout == Pt2Layout::Legacy) {
      for (const char *rec : {"serialized_state_dict.pt", "serialized_constants.pt"})
        GRAFT_CHECK_OK(
            scanner.scanDict(zip->find(rec), rec, std::string(rec) == "serialized_constants.pt"));
    } else if (prov.layout == Pt2Layout::PickledWeights) {
      for (bool constants : {false, true}) {
        std::string rec =
            r + (constants ? "data/constants/" : "data/weights/") + prov.modelName + ".pt";
        GRAFT_CHECK_OK(scanner.scanDict(zip->find(rec), rec, constants));
      }
    } else {
      GRAFT_CHECK_OK(scanner.scanRaw(r + "data/weights/", prepared->weights, false));
      GRAFT_CHECK_OK(scanner.scanRaw(r + "data/constants/", prepared->constants, true));
    }
  }
  Importer importer(doc.root(), modelRecord, options, *extras,
                    options.unwrapSubclassWeights ? &scanner.subclasses() : nullptr);
  GRAFT_TRY(program.graph, importer.run(prov.schemaMajor, prov.schemaMinor, prov.torchVersion));
  program.graph->setName(prov.modelName);

  WeightLoader loader(zip, *program.graph, prov, options, scanner.decoded());
  std::string where;
  if (prov.layout == Pt2Layout::Legacy) {
    for (const char *rec : {"serialized_state_dict.pt", "serialized_constants.pt"})
      GRAFT_CHECK_OK(loader.loadPickledDict(zip->find(rec), rec,
                                            std::string(rec) == "serialized_constants.pt"));
    where = "serialized_state_dict.pt / serialized_constants.pt";
    if (const ZipEntry *si = zip->find("serialized_example_inputs.pt")) {
      GRAFT_TRY(extras->sampleInputs, zip->map(*si));
    }
    for (const ZipEntry &e : zip->entries())
      if (e.name.rfind("extra_files/", 0) == 0) {
        GRAFT_TRY(auto s, zip->map(e));
        extras->extraFiles.emplace_back(e.name.substr(12), s);
      }
  } else {
    const std::string r = root + "/";
    if (prov.layout == Pt2Layout::PickledWeights) {
      std::string w = r + "data/weights/" + prov.modelName + ".pt";
      std::string c = r + "data/constants/" + prov.modelName + ".pt";
      GRAFT_CHECK_OK(loader.loadPickledDict(zip->find(w), w, false));
      GRAFT_CHECK_OK(loader.loadPickledDict(zip->find(c), c, true));
      where = w + " / " + c;
    } else {
      std::string wc = r + "data/weights/" + prov.modelName + "_weights_config.json";
      std::string cc = r + "data/constants/" + prov.modelName + "_constants_config.json";
      loader.adoptStorages(std::move(prepared->storages));
      GRAFT_CHECK_OK(loader.loadRaw(r + "data/weights/", wc, prepared->weights, false));
      GRAFT_CHECK_OK(loader.loadRaw(r + "data/constants/", cc, prepared->constants, true));
      where = wc + " / " + cc;
    }
    if (const ZipEntry *si = zip->find(r + "data/sample_inputs/" + prov.modelName + ".pt")) {
      GRAFT_TRY(extras->sampleInputs, zip->map(*si));
    }
    for (const ZipEntry &e : zip->entries())
      if (e.name.rfind(r + "extra/", 0) == 0) {
        GRAFT_TRY(auto s, zip->map(e));
        extras->extraFiles.emplace_back(e.name.substr(r.size() + 6), s);
      }
  }
  for (const auto &[fqn, inner] : importer.unwrapped()) {
    DecodedSubclass &d = scanner.subclasses().at(fqn);
    for (std::size_t i = 0; i < inner.size(); ++i)
      GRAFT_CHECK_OK(loader.bindInner(inner[i].second, d.weight.tensors[i].second, d.fileOffsets[i],
                                      "inner tensor '" + inner[i].first + "' of weight '" + fqn +
                                          "' (" + d.weight.className + ")"));
    d.weight.innerFqns = inner;
    prov.subclassWeights.push_back(std::move(d.weight));
  }
  GRAFT_CHECK_OK(loader.checkAllLoaded(where));
  prov.specializedInputs = importer.takeSpecializedInputs();
  prov.constantOutputs = importer.takeConstantOutputs();
  prov.extras = std::move(extras);
  return program;
}

} // namespace graft
