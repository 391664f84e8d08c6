//===- Pt2Writer.cpp - graft graphs -> torch >= 2.9 PT2 archives ----------===//
//
// Produces what torch.export.save writes (torch/export/pt2_archive/_package.py
// and torch/_export/serde/serialize.py, schema 8.15):
//   <root>/data/weights/weight_<i>         raw storages (pickled subclasses first)
//   <root>/data/weights/<m>_weights_config.json
//   <root>/data/constants/tensor_<i>, <root>/data/constants/<m>_constants_config.json
//   <root>/models/<m>.json                 the ExportedProgram
//   <root>/data/sample_inputs/<m>.pt       torch.save((args, kwargs))
//   <root>/extra/..., archive_format, archive_version, .data/version,
//   byteorder, .data/serialization_id
// JSON follows serialize.py's _dataclass_to_dict: every field present except
// Optional fields whose default is None and whose value is None; unions are
// single-key objects; enums are integers. Constants viewing one storage
// (tied weights) share one payload record.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/BoundArgs.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/TextIR.h"
#include "graft/serialize/Zip.h"
#include "pt2/Pt2Internal.h"
#include "pt2/SymExpr.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <regex>
#include <set>
#include <type_traits>
#include <unordered_map>

namespace graft {

namespace {

/// IR target -> the file's target string.
std::string fileTarget(const std::string &t) {
  if (t.rfind("operator.", 0) == 0)
    return "_" + t;
  if (t.rfind("math.", 0) == 0 || t.rfind("torch.", 0) == 0)
    return t;
  return "torch.ops." + t;
}

bool isPythonSymOp(const std::string &t) {
  return t.rfind("operator.", 0) == 0 || t.rfind("math.", 0) == 0 || t.rfind("torch.sym_", 0) == 0;
}

OJson floatJson(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

class Exporter {
public:
  Exporter(const Graph &graph, const Pt2WriteOptions &opts)
      : graph_(graph), opts_(opts),
        extras_(opts.provenance && opts.provenance->extras ? opts.provenance->extras.get()
                                                           : nullptr) {
    planSymbolNames();
  }

  Expected<OJson> exportedProgram() {
    OJson g = OJson::object();
    GRAFT_TRY(OJson inputs, graphInputs());
    g["inputs"] = std::move(inputs);
    GRAFT_TRY(OJson outputs, graphOutputs());
    g["outputs"] = std::move(outputs);
    GRAFT_TRY(OJson nodes, graphNodes());
    g["nodes"] = std::move(nodes);
    GRAFT_TRY(OJson tv, tensorValues());
    g["tensor_values"] = std::move(tv);
    GRAFT_TRY(OJson si, symValues(ValueKind::SymInt));
    g["sym_int_values"] = std::move(si);
    GRAFT_TRY(OJson sb, symValues(ValueKind::SymBool));
    g["sym_bool_values"] = std::move(sb);
    g["is_single_tensor_return"] = extras_ ? extras_->isSingleTensorReturn : false;
    g["custom_obj_values"] = OJson::object();
    GRAFT_TRY(OJson sf, symValues(ValueKind::SymFloat));
    g["sym_float_values"] = std::move(sf);

    OJson gm = OJson::object();
    gm["graph"] = std::move(g);
    GRAFT_TRY(OJson sig, signature());
    gm["signature"] = std::move(sig);
    GRAFT_TRY(OJson mcg, moduleCallGraph());
    gm["module_call_graph"] = std::move(mcg);
    gm["metadata"] = extras_ && extras_->graphModuleMetadata.is_object()
                         ? extras_->graphModuleMetadata
                         : OJson::object();
    gm["treespec_namedtuple_fields"] = extras_ && extras_->treespecNamedtupleFields.is_object()
                                           ? extras_->treespecNamedtupleFields
                                           : OJson::object();

    OJson ep = OJson::object();
    ep["graph_module"] = std::move(gm);
    ep["opset_version"] =
        extras_ && extras_->opsetVersion.is_object() ? extras_->opsetVersion : OJson{{"aten", 10}};
    GRAFT_TRY(OJson rc, rangeConstraints());
    ep["range_constraints"] = std::move(rc);
    ep["schema_version"] = {{"major", kPt2SchemaMajor}, {"minor", kPt2SchemaMinor}};
    ep["verifiers"] =
        extras_ && extras_->verifiers.is_array() ? extras_->verifiers : OJson::array({"ATEN"});
    ep["torch_version"] = opts_.provenance && !opts_.provenance->torchVersion.empty()
                              ? opts_.provenance->torchVersion
                              : opts_.torchVersion;
    ep["guards_code"] =
        extras_ && extras_->guardsCode.is_array() ? extras_->guardsCode : OJson::array();
    return ep;
  }

  /// TensorMeta of a prototype (requires_grad as given).
  Expected<OJson> tensorMeta(const TensorProto &p, bool requiresGrad, const std::string &what) {
    int64_t st = exportScalarType(p.dtype);
    if (st < 0)
      return Diagnostic::error(what + ": dtype " + std::string(name(p.dtype)) +
                               " has no torch.export ScalarType");
    OJson m = OJson::object();
    m["dtype"] = st;
    OJson sizes = OJson::array();
    for (const Dim &d : p.shape) {
      GRAFT_TRY(OJson s, symInt(d, what));
      sizes.push_back(std::move(s));
    }
    m["sizes"] = std::move(sizes);
    m["requires_grad"] = requiresGrad;
    m["device"] = device(p.device);
    OJson strides = OJson::array();
    for (const Dim &d : p.effectiveStrides()) {
      GRAFT_TRY(OJson s, symInt(d, what));
      strides.push_back(std::move(s));
    }
    m["strides"] = std::move(strides);
    GRAFT_TRY(OJson off, symInt(p.storageOffset, what));
    m["storage_offset"] = std::move(off);
    m["layout"] = 7;
    return m;
  }

  /// TensorMeta of concrete data.
  Expected<OJson> tensorMeta(const Tensor &t, bool requiresGrad, const std::string &what) {
    TensorProto p(t.dtype(), Shape(t.sizes().begin(), t.sizes().end()));
    p.strides = Shape(t.strides().begin(), t.strides().end());
    if (p.strides.empty())
      p.strides = contiguousStrides(p.shape);
    p.storageOffset = t.offset();
    return tensorMeta(p, requiresGrad, what);
  }

  bool requiresGrad(const Value *v) const {
    const GraphInput *in = graph_.inputFor(v);
    bool dflt = in && in->kind == InputKind::Parameter;
    if (extras_ && extras_->requiresGradFlipped.count(v->name()))
      return !dflt;
    return dflt;
  }

private:
  //===-- Symbols ---------------------------------------------------------===//

  void planSymbolNames() {
    // torch requires backed symbols to be named s<N> and unbacked ones u<N>;
    // keep such names, restore names the reader changed, invent the rest.
    std::regex torchName("^[su][0-9]+$");
    std::set<std::string> taken;
    for (const auto &[irName, range] : graph_.symbols().all()) {
      (void)range;
      if (extras_) {
        auto it = extras_->symbolFileNames.find(irName);
        if (it != extras_->symbolFileNames.end()) {
          fileNames_[irName] = it->second;
          taken.insert(it->second);
          continue;
        }
      }
      if (std::regex_match(irName, torchName)) {
        fileNames_[irName] = irName;
        taken.insert(irName);
      }
    }
    // Symbols appearing in user-input shapes are backed.
    std::set<std::string> backed;
    for (const GraphInput &in : graph_.inputs())
      if (in.value->isTensor())
        for (const Dim &d : in.value->proto().shape)
          for (const auto &[s, k] : d.terms())
            backed.insert(s);
    int nextS = 0, nextU = 0;
    for (const auto &[irName, range] : graph_.symbols().all()) {
      (void)range;
      if (fileNames_.count(irName))
        continue;
      bool isBacked = backed.count(irName) != 0;
      std::string n;
      do
        n = (isBacked ? "s" : "u") + std::to_string(isBacked ? nextS++ : nextU++);
      while (taken.count(n));
      taken.insert(n);
      fileNames_[irName] = n;
    }
  }

  std::string fileSymbol(const std::string &irName) {
    auto it = fileNames_.find(irName);
    if (it != fileNames_.end())
      return it->second;
    // A symbol used but not declared (a graph built without declaring it).
    std::string n = "u" + std::to_string(1000 + fileNames_.size());
    fileNames_[irName] = n;
    return n;
  }

  std::optional<int64_t> hintOf(const Dim &d) {
    std::map<std::string, int64_t> values;
    for (const auto &[s, k] : d.terms()) {
      std::string f = fileSymbol(s);
      std::optional<int64_t> h;
      if (auto it = opts_.symbolHints.find(s); it != opts_.symbolHints.end())
        h = it->second;
      else if (extras_)
        if (auto e = extras_->symbolHints.find(f); e != extras_->symbolHints.end())
          h = e->second;
      if (!h)
        return std::nullopt;
      values[s] = *h;
    }
    if (d.isOpaque())
      return std::nullopt;
    int64_t v = d.constant();
    for (const auto &[s, k] : d.terms())
      v += k * values[s];
    return v;
  }

  Expected<std::string> srepr(const Dim &d) {
    if (d.isOpaque() && extras_) {
      auto it = extras_->opaqueExprs.find(d.opaqueExpr());
      if (it != extras_->opaqueExprs.end())
        return it->second;
    }
    return pt2::dimToSrepr(d, [this](const std::string &s) { return fileSymbol(s); });
  }

  Expected<OJson> symInt(const Dim &d, const std::string &what) {
    if (d.isConstant())
      return OJson{{"as_int", d.constant()}};
    auto e = srepr(d);
    if (!e)
      return Diagnostic::error(what + ": " + e.diags()[0].message);
    OJson expr = {{"expr_str", *e}};
    if (auto h = hintOf(d))
      expr["hint"] = {{"as_int", *h}};
    return OJson{{"as_expr", std::move(expr)}};
  }

  Expected<OJson> rangeConstraints() {
    OJson rc = OJson::object();
    for (const auto &[irName, r] : graph_.symbols().all()) {
      if (extras_ && extras_->implicitSymbols.count(irName))
        continue;
      OJson c = OJson::object();
      c["min_val"] = r.min == std::numeric_limits<int64_t>::min() ? OJson() : OJson(r.min);
      c["max_val"] = r.max ? OJson(*r.max) : OJson();
      rc[fileSymbol(irName)] = std::move(c);
    }
    return rc;
  }

  //===-- Values ----------------------------------------------------------===//

  static OJson device(const Device &d) {
    OJson o = {{"type", d.type}};
    if (d.index >= 0)
      o["index"] = d.index;
    return o;
  }

  Expected<OJson> tensorValues() {
    OJson tv = OJson::object();
    for (Value *v : graph_.allValues()) {
      if (!v->isTensor())
        continue;
      GRAFT_TRY(OJson m, tensorMeta(v->proto(), requiresGrad(v), "value '" + v->name() + "'"));
      tv[v->name()] = std::move(m);
    }
    return tv;
  }

  Expected<OJson> symValues(ValueKind kind) {
    OJson out = OJson::object();
    for (Value *v : graph_.allValues()) {
      if (v->kind() != kind)
        continue;
      if (extras_) {
        auto it = extras_->symValues.find(v->name());
        if (it != extras_->symValues.end()) {
          out[v->name()] = it->second;
          continue;
        }
      }
      if (kind == ValueKind::SymInt) {
        Dim d = dimOfSymInt(*v);
        GRAFT_TRY(OJson s, symInt(d, "value '" + v->name() + "'"));
        out[v->name()] = std::move(s);
      } else {
        out[v->name()] = {{"as_expr", {{"expr_str", pt2::symbolSrepr(v->name())}}}};
      }
    }
    return out;
  }

  //===-- Arguments -------------------------------------------------------===//

  static OJson valueArg(const Value *v) {
    switch (v->kind()) {
    case ValueKind::Tensor:
      return {{"as_tensor", {{"name", v->name()}}}};
    case ValueKind::SymInt:
      return {{"as_sym_int", {{"as_name", v->name()}}}};
    case ValueKind::SymFloat:
      return {{"as_sym_float", {{"as_name", v->name()}}}};
    case ValueKind::SymBool:
      return {{"as_sym_bool", {{"as_name", v->name()}}}};
    }
    return nullptr;
  }

  /// serialize_input: the Argument union member for an IR argument.
  Expected<OJson> argument(const Argument &a, const SchemaType *type, bool asOperator,
                           const std::string &where) {
    switch (a.kind()) {
    case Argument::Kind::None:
      return OJson{{"as_none", true}};
    case Argument::Kind::Value:
      return valueArg(a.value());
    case Argument::Kind::Bool:
      return OJson{{"as_bool", a.boolean()}};
    case Argument::Kind::Int:
      return OJson{{"as_int", a.integer()}};
    case Argument::Kind::Float:
      return OJson{{"as_float", floatJson(a.floating())}};
    case Argument::Kind::String:
      if (asOperator)
        return OJson{{"as_operator", fileTarget(a.string())}};
      return OJson{{"as_string", a.string()}};
    case Argument::Kind::DType: {
      int64_t st = exportScalarType(a.dtype());
      if (st < 0)
        return Diagnostic::error(where + ": dtype " + std::string(name(a.dtype())) +
                                 " has no torch.export ScalarType");
      return OJson{{"as_scalar_type", st}};
    }
    case Argument::Kind::Device:
      return OJson{{"as_device", device(a.device())}};
    case Argument::Kind::Layout:
      return OJson{{"as_layout", pt2::exportLayout(a.layout())}};
    case Argument::Kind::MemoryFormat:
      return OJson{{"as_memory_format", pt2::exportMemoryFormat(a.memoryFormat())}};
    case Argument::Kind::List:
      return list(a.list(), type, where);
    }
    return Diagnostic::internal("unreachable");
  }

  Expected<OJson> list(const Argument::List &l, const SchemaType *type, const std::string &where) {
    if (l.empty()) {
      // An empty list is typed by the schema argument.
      const char *key = "as_tensors";
      if (type) {
        switch (type->base) {
        case SchemaType::Base::Bool:
          key = "as_bools";
          break;
        case SchemaType::Base::Int:
        case SchemaType::Base::SymInt:
          key = "as_ints";
          break;
        case SchemaType::Base::Float:
          key = "as_floats";
          break;
        case SchemaType::Base::Str:
          key = "as_strings";
          break;
        default:
          break;
        }
      }
      return OJson{{key, OJson::array()}};
    }
    auto all = [&](auto pred) {
      for (const Argument &x : l)
        if (!pred(x))
          return false;
      return true;
    };
    auto isKind = [](const Argument &x, ValueKind k) {
      return x.isValue() && x.value()->kind() == k;
    };
    OJson arr = OJson::array();
    if (all([](const Argument &x) { return x.isBool(); })) {
      for (const Argument &x : l)
        arr.push_back(x.boolean());
      return OJson{{"as_bools", arr}};
    }
    if (all([](const Argument &x) { return x.isInt(); })) {
      for (const Argument &x : l)
        arr.push_back(x.integer());
      return OJson{{"as_ints", arr}};
    }
    if (all([](const Argument &x) { return x.isFloat(); })) {
      for (const Argument &x : l)
        arr.push_back(floatJson(x.floating()));
      return OJson{{"as_floats", arr}};
    }
    if (all([](const Argument &x) { return x.isString(); })) {
      for (const Argument &x : l)
        arr.push_back(x.string());
      return OJson{{"as_strings", arr}};
    }
    if (all([&](const Argument &x) { return x.isInt() || isKind(x, ValueKind::SymInt); })) {
      for (const Argument &x : l)
        arr.push_back(x.isInt() ? OJson{{"as_int", x.integer()}}
                                : OJson{{"as_name", x.value()->name()}});
      return OJson{{"as_sym_ints", arr}};
    }
    if (all([&](const Argument &x) {
          return x.isFloat() || x.isInt() || isKind(x, ValueKind::SymFloat);
        })) {
      for (const Argument &x : l)
        arr.push_back(x.isValue() ? OJson{{"as_name", x.value()->name()}}
                                  : OJson{{"as_float", floatJson(*x.number())}});
      return OJson{{"as_sym_floats", arr}};
    }
    if (all([&](const Argument &x) { return x.isBool() || isKind(x, ValueKind::SymBool); })) {
      for (const Argument &x : l)
        arr.push_back(x.isBool() ? OJson{{"as_bool", x.boolean()}}
                                 : OJson{{"as_name", x.value()->name()}});
      return OJson{{"as_sym_bools", arr}};
    }
    if (all([&](const Argument &x) { return isKind(x, ValueKind::Tensor); })) {
      for (const Argument &x : l)
        arr.push_back({{"name", x.value()->name()}});
      return OJson{{"as_tensors", arr}};
    }
    if (all([&](const Argument &x) { return x.isNone() || isKind(x, ValueKind::Tensor); })) {
      for (const Argument &x : l)
        arr.push_back(x.isNone() ? OJson{{"as_none", true}}
                                 : OJson{{"as_tensor", {{"name", x.value()->name()}}}});
      return OJson{{"as_optional_tensors", arr}};
    }
    if (all([](const Argument &x) { return x.isList(); })) {
      bool ints = true, tensors = true;
      for (const Argument &x : l)
        for (const Argument &y : x.list()) {
          ints &= y.isInt();
          tensors &= y.isValue() && y.value()->isTensor();
        }
      OJson outer = OJson::array();
      for (const Argument &x : l) {
        OJson inner = OJson::array();
        for (const Argument &y : x.list())
          inner.push_back(ints ? OJson(y.integer()) : OJson{{"name", y.value()->name()}});
        outer.push_back(std::move(inner));
      }
      if (ints)
        return OJson{{"as_int_lists", outer}};
      if (tensors)
        return OJson{{"as_nested_tensors", outer}};
    }
    return Diagnostic::error(where + ": a list mixing these kinds of elements has no torch.export "
                                     "encoding");
  }

  //===-- Nodes -----------------------------------------------------------===//

  const Pt2NodeInfo *nodeInfo(const Node &n, std::map<std::string, int> &zeroOutputs) {
    std::string key = pt2::nodeKey(n, zeroOutputs);
    if (!extras_)
      return nullptr;
    auto it = extras_->nodes.find(key);
    if (it == extras_->nodes.end() || it->second.target != n.target())
      return nullptr;
    return &it->second;
  }

  Expected<OJson> graphNodes() {
    OJson nodes = OJson::array();
    std::map<std::string, int> zeroOutputs;
    for (const Node &n : graph_.nodes()) {
      const Pt2NodeInfo *info = nodeInfo(n, zeroOutputs);
      std::string where = "node '" + n.name() + "' (" + n.target() + ")";
      OJson j = OJson::object();
      j["target"] = info ? info->spelling : fileTarget(n.target());

      // Argument names: the schema that binds (current or legacy).
      const OpSchema *schema = n.schema();
      std::optional<BoundArgs> bound;
      if (schema) {
        auto b = BoundArgs::bind(n);
        if (b)
          bound = std::move(*b);
      }
      const OpSchema *names = bound ? &bound->schema() : schema;
      OJson inputs = OJson::array();
      for (std::size_t i = 0; i < n.args().size(); ++i) {
        std::string argName;
        const SchemaType *type = nullptr;
        if (names && i < names->args.size()) {
          argName = names->args[i].name;
          type = &names->args[i].type;
        } else if (info && i < info->argNames.size()) {
          argName = info->argNames[i];
        } else if (isPythonSymOp(n.target())) {
          argName = std::string(1, static_cast<char>('a' + i));
        } else if (!schema) {
          argName = ""; // as torch writes higher-order-op operands
        } else {
          return Diagnostic::error(where + ": too many positional arguments for its schema");
        }
        bool asOp = info && std::find(info->operatorArgs.begin(), info->operatorArgs.end(),
                                      static_cast<int>(i)) != info->operatorArgs.end();
        GRAFT_TRY(OJson a,
                  argument(n.args()[i], type, asOp, where + " argument '" + argName + "'"));
        inputs.push_back({{"name", argName}, {"arg", std::move(a)}, {"kind", 1}});
      }
      for (const auto &[k, v] : n.kwargs()) {
        const SchemaType *type = nullptr;
        if (names)
          if (int idx = names->argIndex(k); idx >= 0)
            type = &names->args[static_cast<std::size_t>(idx)].type;
        GRAFT_TRY(OJson a, argument(v, type, false, where + " argument '" + k + "'"));
        inputs.push_back({{"name", k}, {"arg", std::move(a)}, {"kind", 2}});
      }
      j["inputs"] = std::move(inputs);
      GRAFT_TRY(OJson outs, nodeOutputs(n, info, schema));
      j["outputs"] = std::move(outs);
      OJson meta = OJson::object();
      for (const auto &[k, v] : n.metadata())
        meta[k] = v;
      j["metadata"] = std::move(meta);
      if (info && !info->isHopSingleTensorReturn.is_null())
        j["is_hop_single_tensor_return"] = info->isHopSingleTensorReturn;
      nodes.push_back(std::move(j));
    }
    return nodes;
  }

  static bool isTensorListReturn(const OpSchema &s) {
    return s.returns.size() == 1 && s.returns[0].type.isList &&
           s.returns[0].type.base == SchemaType::Base::Tensor;
  }

  Expected<OJson> nodeOutputs(const Node &n, const Pt2NodeInfo *info, const OpSchema *schema) {
    OJson outs = OJson::array();
    const auto &vals = n.outputs();
    std::vector<int> groups;
    if (info) {
      std::size_t count = 0;
      for (int g : info->outputGroups)
        count += g < 0 ? 0 : g == 0 ? 1 : static_cast<std::size_t>(g);
      if (count == vals.size())
        groups = info->outputGroups;
    }
    if (groups.empty()) {
      if (schema && isTensorListReturn(*schema))
        groups.push_back(static_cast<int>(vals.size()));
      else
        groups.assign(vals.size(), 0);
    }
    std::size_t next = 0;
    for (int g : groups) {
      if (g < 0) {
        outs.push_back({{"as_none", true}});
      } else if (g == 0) {
        outs.push_back(valueArg(vals[next++]));
      } else {
        OJson ts = OJson::array();
        for (int i = 0; i < g; ++i)
          ts.push_back({{"name", vals[next++]->name()}});
        outs.push_back({{"as_tensors", std::move(ts)}});
      }
    }
    return outs;
  }

  //===-- Signature -------------------------------------------------------===//

  /// Visits `items` (the graph's inputs or outputs) in file order: `onItem`
  /// for each, and `onConstant(entry, constantValue)` for each constant of
  /// the provenance (a specialized forward() argument, a constant output),
  /// put back before the user item it preceded (after the last one when the
  /// graph now has fewer). The constant is spelled by serialize_input, as
  /// handle_placeholder, handle_output and serialize_argument_spec write it
  /// (torch/_export/serde/serialize.py).
  template <class Items, class Constant, class IsUser, class OnItem, class OnConstant>
  Status inFileOrder(const Items &items, const std::vector<Constant> &constants,
                     std::size_t Constant::*before, IsUser &&isUser, OnItem &&onItem,
                     OnConstant &&onConstant) {
    std::size_t next = 0, users = 0;
    auto flush = [&](std::size_t upTo) -> Status {
      for (; next < constants.size() && constants[next].*before <= upTo; ++next) {
        GRAFT_TRY(OJson v, argument(constants[next].value, nullptr, false, "a constant"));
        onConstant(constants[next], std::move(v));
      }
      return okStatus();
    };
    for (const auto &item : items) {
      if (isUser(item))
        GRAFT_CHECK_OK(flush(users++));
      onItem(item);
    }
    return flush(~std::size_t(0));
  }

  template <class IR, class Spec> Status forEachFileInput(IR &&ir, Spec &&spec) {
    static const std::vector<Pt2SpecializedInput> none;
    return inFileOrder(
        graph_.inputs(), opts_.provenance ? opts_.provenance->specializedInputs : none,
        &Pt2SpecializedInput::userInputsBefore,
        [](const GraphInput &i) { return i.kind == InputKind::UserInput; }, ir, spec);
  }

  template <class IR, class Spec> Status forEachFileOutput(IR &&ir, Spec &&spec) {
    static const std::vector<Pt2ConstantOutput> none;
    return inFileOrder(
        graph_.outputs(), opts_.provenance ? opts_.provenance->constantOutputs : none,
        &Pt2ConstantOutput::userOutputsBefore,
        [](const GraphOutput &o) { return o.kind == OutputKind::UserOutput; }, ir, spec);
  }

  Expected<OJson> graphInputs() {
    OJson in = OJson::array();
    GRAFT_CHECK_OK(forEachFileInput(
        [&](const GraphInput &i) { in.push_back(valueArg(i.value)); },
        [&](const Pt2SpecializedInput &, OJson v) { in.push_back(std::move(v)); }));
    return in;
  }

  Expected<OJson> graphOutputs() {
    OJson out = OJson::array();
    GRAFT_CHECK_OK(forEachFileOutput(
        [&](const GraphOutput &o) { out.push_back(valueArg(o.value)); },
        [&](const Pt2ConstantOutput &, OJson v) { out.push_back(std::move(v)); }));
    return out;
  }

  Expected<OJson> signature() {
    OJson inSpecs = OJson::array();
    auto irSpec = [&](const GraphInput &i) {
      OJson arg = {{"name", i.value->name()}};
      switch (i.kind) {
      case InputKind::UserInput:
        inSpecs.push_back({{"user_input", {{"arg", valueArg(i.value)}}}});
        break;
      case InputKind::Parameter:
        inSpecs.push_back({{"parameter", {{"arg", arg}, {"parameter_name", i.fqn}}}});
        break;
      case InputKind::Buffer:
        inSpecs.push_back(
            {{"buffer", {{"arg", arg}, {"buffer_name", i.fqn}, {"persistent", i.persistent}}}});
        break;
      case InputKind::ConstantTensor:
        inSpecs.push_back({{"tensor_constant", {{"arg", arg}, {"tensor_constant_name", i.fqn}}}});
        break;
      }
    };
    GRAFT_CHECK_OK(forEachFileInput(irSpec, [&](const Pt2SpecializedInput &c, OJson v) {
      inSpecs.push_back({{"constant_input", {{"name", c.name}, {"value", std::move(v)}}}});
    }));
    OJson outSpecs = OJson::array();
    auto irOutSpec = [&](const GraphOutput &o) {
      OJson arg = {{"name", o.value->name()}};
      switch (o.kind) {
      case OutputKind::UserOutput:
        outSpecs.push_back({{"user_output", {{"arg", valueArg(o.value)}}}});
        break;
      case OutputKind::BufferMutation:
        outSpecs.push_back({{"buffer_mutation", {{"arg", arg}, {"buffer_name", o.target}}}});
        break;
      case OutputKind::UserInputMutation:
        outSpecs.push_back(
            {{"user_input_mutation", {{"arg", arg}, {"user_input_name", o.target}}}});
        break;
      }
    };
    GRAFT_CHECK_OK(forEachFileOutput(irOutSpec, [&](const Pt2ConstantOutput &, OJson v) {
      outSpecs.push_back({{"user_output", {{"arg", std::move(v)}}}});
    }));
    return OJson{{"input_specs", std::move(inSpecs)}, {"output_specs", std::move(outSpecs)}};
  }

  /// treespec_dumps of a pytree leaf / tuple / (args, kwargs) structure.
  static OJson leafSpec() {
    return {{"type", nullptr}, {"context", nullptr}, {"children_spec", OJson::array()}};
  }
  static OJson tupleSpec(OJson children) {
    return {
        {"type", "builtins.tuple"}, {"context", "null"}, {"children_spec", std::move(children)}};
  }

  Expected<OJson> moduleCallGraph() {
    OJson userIn = OJson::array(), userOut = OJson::array();
    OJson argNames = OJson::array();
    OJson leaves = OJson::array();
    // A specialized argument is a forward() argument too: the call
    // signature lists it as serialize_argument_spec's constant.
    GRAFT_CHECK_OK(forEachFileInput(
        [&](const GraphInput &i) {
          if (i.kind != InputKind::UserInput)
            return;
          userIn.push_back(valueArg(i.value));
          argNames.push_back(i.value->name());
          leaves.push_back(leafSpec());
        },
        [&](const Pt2SpecializedInput &c, OJson v) {
          userIn.push_back(std::move(v));
          argNames.push_back(c.name);
          leaves.push_back(leafSpec());
        }));
    std::size_t nOut = 0;
    GRAFT_CHECK_OK(forEachFileOutput(
        [&](const GraphOutput &o) {
          if (o.kind != OutputKind::UserOutput)
            return;
          userOut.push_back(valueArg(o.value));
          ++nOut;
        },
        [&](const Pt2ConstantOutput &, OJson v) {
          userOut.push_back(std::move(v));
          ++nOut;
        }));
    // Keep the original call graph when its top-level signature still fits.
    if (extras_ && extras_->moduleCallGraph.is_array() && !extras_->moduleCallGraph.empty()) {
      OJson mcg = extras_->moduleCallGraph;
      OJson &top = mcg[0];
      if (top.is_object() && top.contains("signature") && top["signature"].is_object()) {
        OJson &sig = top["signature"];
        if (sig.contains("inputs") && sig["inputs"].is_array() &&
            sig["inputs"].size() == userIn.size() && sig.contains("outputs") &&
            sig["outputs"].is_array() && sig["outputs"].size() == userOut.size()) {
          sig["inputs"] = userIn;
          sig["outputs"] = userOut;
          return mcg;
        }
      } else if (top.is_object()) {
        return mcg;
      }
    }
    OJson inSpec = tupleSpec(OJson::array(
        {tupleSpec(leaves),
         {{"type", "builtins.dict"}, {"context", "[]"}, {"children_spec", OJson::array()}}}));
    OJson outSpec;
    if (nOut == 1) {
      outSpec = leafSpec();
    } else {
      OJson outLeaves = OJson::array();
      for (std::size_t i = 0; i < nOut; ++i)
        outLeaves.push_back(leafSpec());
      outSpec = tupleSpec(outLeaves);
    }
    OJson sig = OJson::object();
    sig["inputs"] = userIn;
    sig["outputs"] = userOut;
    sig["in_spec"] = pt2::dumpPythonJson(OJson::array({1, inSpec}));
    sig["out_spec"] = pt2::dumpPythonJson(OJson::array({1, outSpec}));
    if (!argNames.empty())
      sig["forward_arg_names"] = argNames;
    return OJson::array({{{"fqn", ""}, {"signature", sig}}});
  }

  const Graph &graph_;
  const Pt2WriteOptions &opts_;
  const Pt2Extras *extras_;
  std::map<std::string, std::string> fileNames_; // IR symbol -> file symbol
};

//===----------------------------------------------------------------------===//
// Payloads
//===----------------------------------------------------------------------===//

/// The bytes of a constant: its data, or freshly generated for random()/full()
/// initializers and freshly computed for deferred transforms, so generated
/// and repacked weights are never kept alive after writing.
Expected<Tensor> constantData(const GraphInput &in) {
  return in.load();
}

/// Whether `in` is a random() integer constant the writer can stream (see
/// streamRandomInts): generated chunk by chunk, never held whole in memory.
bool streamable(const GraphInput &in) {
  if (!in.init || !std::holds_alternative<RandomInit>(*in.init))
    return false;
  DType dt = in.value->proto().dtype;
  return isIntegral(dt, /*includeBool=*/false) && concreteSizes(in.value->proto().shape);
}

/// The bytes generateRandom() produces for an integer constant (same
/// splitmix64 sequence, same `lo + r % span`, same truncating store), written
/// in chunks. Kept bit-identical to generateRandom by a unit test.
Status streamRandomInts(const GraphInput &in, uint64_t bytes,
                        const std::function<Status(const void *, std::size_t)> &sink) {
  const auto &r = std::get<RandomInit>(*in.init);
  const std::size_t es = elementSize(in.value->proto().dtype);
  int64_t lo = static_cast<int64_t>(std::ceil(r.min));
  int64_t hi = static_cast<int64_t>(std::floor(r.max));
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  const bool pow2 = span != 0 && (span & (span - 1)) == 0;
  uint64_t state = r.seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<uint8_t> chunk(std::size_t(1) << 20);
  const uint64_t n = bytes / es;
  const std::size_t perChunk = chunk.size() / es;
  for (uint64_t done = 0; done < n;) {
    std::size_t m = static_cast<std::size_t>(std::min<uint64_t>(perChunk, n - done));
    // One loop per element width, so the store is a plain typed store (the
    // low bytes of the value, as Tensor::setInt keeps them).
    auto fill = [&](auto *out) {
      using T = std::remove_pointer_t<decltype(out)>;
      for (std::size_t i = 0; i < m; ++i) {
        uint64_t x = next();
        uint64_t r = span == 0 ? x : pow2 ? (x & (span - 1)) : x % span;
        out[i] = static_cast<T>(static_cast<uint64_t>(lo + static_cast<int64_t>(r)));
      }
    };
    switch (es) {
    case 1:
      fill(reinterpret_cast<uint8_t *>(chunk.data()));
      break;
    case 2:
      fill(reinterpret_cast<uint16_t *>(chunk.data()));
      break;
    case 4:
      fill(reinterpret_cast<uint32_t *>(chunk.data()));
      break;
    default:
      fill(reinterpret_cast<uint64_t *>(chunk.data()));
      break;
    }
    GRAFT_CHECK_OK(sink(chunk.data(), m * es));
    done += m;
  }
  return okStatus();
}

/// Identifies a constant generated from a random() initializer.
std::string generatedKey(const GraphInput &in) {
  if (!in.init)
    return {};
  std::string k;
  if (const auto *r = std::get_if<RandomInit>(&*in.init))
    k = "random:" + std::to_string(r->seed) + ":" + formatFloat(r->min) + ":" + formatFloat(r->max);
  else
    return {}; // full() constants (zero points) stay separate records, as torch writes them
  return k + ":" + in.value->proto().str();
}

/// A torch.save archive of ((), {}): the sample inputs of a program without
/// example inputs (data.pkl: PROTO 2, EMPTY_TUPLE, EMPTY_DICT, TUPLE2, BINPUT 0, STOP).
Expected<std::string> emptySampleInputs() {
  auto w = ZipWriter::inMemory();
  static const char kPickle[] = "\x80\x02)}q\x00\x86q\x01.";
  GRAFT_CHECK_OK(w->add("archive/data.pkl", std::string_view(kPickle, sizeof kPickle - 1)));
  GRAFT_CHECK_OK(w->add("archive/byteorder", "little"));
  GRAFT_CHECK_OK(w->add("archive/version", "3\n"));
  GRAFT_CHECK_OK(w->finish());
  return w->buffer();
}

std::string rootName(const std::string &path) {
  std::filesystem::path p(path);
  std::string stem = p.stem().string();
  return stem.empty() ? std::string("archive") : stem;
}

} // namespace

Status writePt2(const Graph &graph, const std::string &path, const Pt2WriteOptions &options) {
  const Pt2Provenance *prov = options.provenance;
  const Pt2Extras *extras = prov && prov->extras ? prov->extras.get() : nullptr;
  const std::string model = prov ? prov->modelName : options.modelName;
  const std::string root = rootName(path) + "/";

  for (const GraphInput &in : graph.inputs())
    if (in.isConstant() && in.value->proto().quant && in.hasData())
      return Diagnostic::error("constant '" + in.fqn +
                               "' has a quantization layout and data; torch.export stores the "
                               "buffers of a quantized weight as separate constants");

  Exporter exporter(graph, options);
  GRAFT_TRY(OJson ep, exporter.exportedProgram());

  GRAFT_TRY(std::unique_ptr<ZipWriter> zip, ZipWriter::create(path));

  // Subclass weights travel as their original pickles.
  std::map<std::string, const Pt2SubclassWeight *> subclass;
  if (prov)
    for (const Pt2SubclassWeight &w : prov->subclassWeights)
      subclass[w.fqn] = &w;

  for (bool constants : {false, true}) {
    const std::string dir = root + (constants ? "data/constants/" : "data/weights/");
    const std::string prefix = constants ? "tensor_" : "weight_";
    OJson config = OJson::object();
    int idx = 0;
    auto belongs = [&](const GraphInput &in) {
      if (!in.isConstant())
        return false;
      bool inStateDict =
          in.kind == InputKind::Parameter || (in.kind == InputKind::Buffer && in.persistent);
      return inStateDict != constants;
    };
    // Pickled (subclass) payloads first, as torch does.
    for (const GraphInput &in : graph.inputs()) {
      if (!belongs(in))
        continue;
      auto it = subclass.find(in.fqn);
      if (it == subclass.end())
        continue;
      if (in.hasData())
        continue; // replaced by plain data since reading
      if (!it->second->pickleBytes)
        return Diagnostic::error("weight '" + in.fqn +
                                 "' is a tensor subclass read from a pickled state dict; graft "
                                 "cannot re-pickle it");
      std::string pathName = prefix + std::to_string(idx++);
      const Storage &s = *it->second->pickleBytes;
      GRAFT_CHECK_OK(zip->add(
          dir + pathName, std::string_view(reinterpret_cast<const char *>(s.data()), s.size())));
      GRAFT_TRY(OJson meta, exporter.tensorMeta(in.value->proto(), exporter.requiresGrad(in.value),
                                                "weight '" + in.fqn + "'"));
      config[in.fqn] = {{"path_name", pathName},
                        {"is_param", in.kind == InputKind::Parameter},
                        {"use_pickle", true},
                        {"tensor_meta", std::move(meta)}};
    }
    // Raw storages, one record per storage (tied weights share it).
    std::map<std::pair<const Storage *, DType>, std::string> written;
    std::map<std::string, std::string> generated;
    for (const GraphInput &in : graph.inputs()) {
      if (!belongs(in) || (subclass.count(in.fqn) && !in.hasData()))
        continue;
      const std::string what = "weight '" + in.fqn + "'";
      std::string pathName;
      if (streamable(in)) {
        std::string initKey = generatedKey(in);
        auto g = generated.find(initKey);
        if (g != generated.end()) {
          pathName = g->second;
        } else {
          pathName = prefix + std::to_string(idx++);
          uint64_t bytes = static_cast<uint64_t>(*in.value->proto().numel().value()) *
                           elementSize(in.value->proto().dtype);
          GRAFT_CHECK_OK(zip->addStreamed(dir + pathName, bytes, [&](const auto &sink) {
            return streamRandomInts(in, bytes, sink);
          }));
          generated.emplace(initKey, pathName);
        }
        GRAFT_TRY(OJson meta,
                  exporter.tensorMeta(in.value->proto(), exporter.requiresGrad(in.value), what));
        config[in.fqn] = {{"path_name", pathName},
                          {"is_param", in.kind == InputKind::Parameter},
                          {"use_pickle", false},
                          {"tensor_meta", std::move(meta)}};
        continue;
      }
      Tensor t;
      if (in.hasData()) {
        auto loaded = constantData(in);
        if (!loaded.ok())
          return Diagnostic::error(what + ": " + loaded.diags().front().message);
        t = std::move(*loaded);
      }
      if (!t.defined()) {
        // No data (a data-free prototype): torch writes fake tensors as empty records.
        pathName = prefix + std::to_string(idx++);
        GRAFT_CHECK_OK(zip->add(dir + pathName, std::string_view()));
        TensorProto p = in.value->proto();
        GRAFT_TRY(OJson meta, exporter.tensorMeta(p, exporter.requiresGrad(in.value), what));
        config[in.fqn] = {{"path_name", pathName},
                          {"is_param", in.kind == InputKind::Parameter},
                          {"use_pickle", false},
                          {"tensor_meta", std::move(meta)}};
        continue;
      }
      auto sizes = concreteSizes(in.value->proto().shape);
      if (t.dtype() != in.value->proto().dtype || !sizes || t.sizes() != *sizes)
        return Diagnostic::error(what + ": its data is " + t.proto().str() +
                                 " but the graph declares " + in.value->proto().str());
      auto key = std::make_pair(t.storage().get(), t.dtype());
      // Constants generated from identical initializers hold identical bytes:
      // store them once (this is how a synthesized tied embedding stays tied).
      std::string initKey = generatedKey(in);
      // Generated data is freed after writing, so its address says nothing.
      bool isGenerated = in.init && (std::holds_alternative<RandomInit>(*in.init) ||
                                     std::holds_alternative<FullInit>(*in.init) || in.isDeferred());
      auto w = isGenerated ? written.end() : written.find(key);
      auto g = initKey.empty() ? generated.end() : generated.find(initKey);
      if (g != generated.end()) {
        pathName = g->second;
      } else if (w != written.end()) {
        pathName = w->second;
      } else {
        pathName = prefix + std::to_string(idx++);
        const Storage &s = *t.storage();
        std::size_t es = elementSize(t.dtype());
        std::size_t bytes = s.size() - s.size() % es;
        GRAFT_CHECK_OK(zip->addStreamed(dir + pathName, bytes,
                                        [&](const auto &sink) { return sink(s.data(), bytes); }));
        t.releasePages(); // written: a mapped weight's pages leave the RSS
        if (!isGenerated)
          written.emplace(key, pathName);
        if (!initKey.empty())
          generated.emplace(initKey, pathName);
      }
      GRAFT_TRY(OJson meta, exporter.tensorMeta(t, exporter.requiresGrad(in.value), what));
      config[in.fqn] = {{"path_name", pathName},
                        {"is_param", in.kind == InputKind::Parameter},
                        {"use_pickle", false},
                        {"tensor_meta", std::move(meta)}};
    }
    std::string configRecord =
        dir + model + (constants ? "_constants_config.json" : "_weights_config.json");
    GRAFT_CHECK_OK(zip->add(configRecord, pt2::dumpPythonJson(OJson{{"config", config}})));
  }

  GRAFT_CHECK_OK(zip->add(root + "models/" + model + ".json", pt2::dumpPythonJson(ep)));
  if (extras && extras->sampleInputs) {
    const Storage &s = *extras->sampleInputs;
    GRAFT_CHECK_OK(zip->add(root + "data/sample_inputs/" + model + ".pt",
                            std::string_view(reinterpret_cast<const char *>(s.data()), s.size())));
  } else {
    GRAFT_TRY(std::string sample, emptySampleInputs());
    GRAFT_CHECK_OK(zip->add(root + "data/sample_inputs/" + model + ".pt", sample));
  }
  if (extras)
    for (const auto &[n, s] : extras->extraFiles)
      GRAFT_CHECK_OK(
          zip->add(root + "extra/" + n,
                   std::string_view(reinterpret_cast<const char *>(s->data()), s->size())));
  GRAFT_CHECK_OK(zip->add(root + pt2::kArchiveFormat, "pt2"));
  GRAFT_CHECK_OK(zip->add(root + pt2::kArchiveVersion, "0"));
  GRAFT_CHECK_OK(zip->add(root + ".data/version", "6\n"));
  GRAFT_CHECK_OK(zip->add(root + "byteorder", "little"));
  // PyTorchStreamWriter's serialization id: 20 digits of a combined hash of
  // the record names, 20 digits of the combined CRC-32s.
  uint64_t nameHash = 0;
  for (const std::string &n : zip->names())
    nameHash = hashCombine(nameHash, std::hash<std::string>{}(n.substr(root.size())));
  char id[64];
  std::snprintf(id, sizeof id, "%020llu%020llu", static_cast<unsigned long long>(nameHash),
                static_cast<unsigned long long>(zip->combinedCrc()));
  GRAFT_CHECK_OK(zip->add(root + ".data/serialization_id", std::string(id, 40)));
  return zip->finish();
}

} // namespace graft
