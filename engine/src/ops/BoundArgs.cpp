//===- BoundArgs.cpp - Matching node arguments to op schemas --------------===//
//
// Binding follows Python call semantics as torch applies them to schemas:
// positionals fill the leading non-keyword-only parameters, keywords fill any
// parameter by name, omitted ones take their defaults, and each argument must
// structurally fit its declared type (Python numbers are accepted for the
// Tensor operands of elementwise ops, as torch wraps them). Ops with legacy signatures are tried
// current-first (see BoundArgs.h).
//
//===----------------------------------------------------------------------===//
#include "graft/ops/BoundArgs.h"

#include "graft/ir/Graph.h"

#include <cassert>

namespace graft {

namespace {

using B = SchemaType::Base;

std::string describe(const Argument &a) {
  if (a.isValue()) {
    switch (a.value()->kind()) {
    case ValueKind::Tensor:
      return "Tensor";
    case ValueKind::SymInt:
      return "SymInt";
    case ValueKind::SymFloat:
      return "SymFloat";
    case ValueKind::SymBool:
      return "SymBool";
    }
  }
  return std::string(name(a.kind()));
}

// Whether a non-None, non-list argument fits element type `base`.
bool scalarMatches(const Argument &a, B base) {
  ValueKind vk = a.isValue() ? a.value()->kind() : ValueKind::Tensor;
  switch (base) {
  case B::Tensor:
    return a.isValue() && vk == ValueKind::Tensor;
  case B::Int:
  case B::SymInt:
    return a.isInt() || (a.isValue() && vk == ValueKind::SymInt);
  case B::Float:
    return a.isInt() || a.isFloat() ||
           (a.isValue() && (vk == ValueKind::SymFloat || vk == ValueKind::SymInt));
  case B::Bool:
    return a.isBool() || (a.isValue() && vk == ValueKind::SymBool);
  case B::Str:
    return a.isString();
  case B::Scalar:
    return a.isInt() || a.isFloat() || a.isBool() || (a.isValue() && vk != ValueKind::Tensor);
  case B::ScalarType:
    return a.isDType();
  case B::Layout:
    return a.kind() == Argument::Kind::Layout;
  case B::Device:
    return a.kind() == Argument::Kind::Device;
  case B::MemoryFormat:
    return a.kind() == Argument::Kind::MemoryFormat;
  case B::Generator:
    return false; // graft has no generator arguments; only None fits `Generator?`
  case B::Any:
    return true;
  }
  return false;
}

// Empty when `a` fits `type`, else a description of what was given.
std::optional<std::string> mismatch(const Argument &a, const SchemaType &type) {
  if (type.base == B::Any)
    return std::nullopt;
  if (a.isNone())
    return type.optional ? std::nullopt : std::optional<std::string>("None");
  if (!type.isList)
    return scalarMatches(a, type.base) ? std::nullopt : std::optional<std::string>(describe(a));
  if (!a.isList()) {
    // torch broadcasts a single value to a fixed-length list (`int[2] stride=1`).
    if (type.fixedLength >= 0 && scalarMatches(a, type.base))
      return std::nullopt;
    return describe(a);
  }
  const Argument::List &items = a.list();
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].isNone() && type.elementOptional)
      continue;
    if (items[i].isNone() || !scalarMatches(items[i], type.base))
      return "a list whose element " + std::to_string(i) + " is " +
             (items[i].isNone() ? std::string("None") : describe(items[i]));
  }
  return std::nullopt;
}

std::string nodePrefix(std::string_view nodeName, const OpSchema &schema) {
  std::string n(nodeName);
  if (!n.empty() && n[0] != '%')
    n = "%" + n;
  return "node " + n + " (" + schema.qualifiedName() + "): ";
}

} // namespace

namespace {

// mismatch() without building the description: the matcher asks this for
// every argument of every candidate node with legacy signatures.
bool fits(const Argument &a, const SchemaType &type) {
  if (type.base == B::Any)
    return true;
  if (a.isNone())
    return type.optional;
  if (!type.isList)
    return scalarMatches(a, type.base);
  if (!a.isList())
    return type.fixedLength >= 0 && scalarMatches(a, type.base);
  for (const Argument &item : a.list()) {
    if (item.isNone()) {
      if (type.elementOptional)
        continue;
      return false;
    }
    if (!scalarMatches(item, type.base))
      return false;
  }
  return true;
}

} // namespace

bool argumentMatchesType(const Argument &arg, const SchemaType &type, std::string *why) {
  if (!why)
    return fits(arg, type);
  auto m = mismatch(arg, type);
  if (m && why)
    *why = "expects " + type.str() + " but got " + *m;
  return !m;
}

namespace {

struct BindAttempt {
  std::vector<Argument> values;
  std::vector<bool> provided;
  std::vector<Diagnostic> diags;
};

/// Binds to `schema` (the node's or one of its legacy signatures); messages
/// start with nodePrefix(nodeName, named), spelled only for a message: most
/// binds succeed (the verifier and the importer bind every node).
BindAttempt bindOne(const OpSchema &schema, const std::vector<Argument> &args,
                    const std::vector<std::pair<std::string, Argument>> &kwargs,
                    std::string_view nodeName, const OpSchema &named) {
  auto prefix = [&] { return nodePrefix(nodeName, named); };
  BindAttempt r;
  const std::size_t n = schema.args.size();
  r.values.resize(n);
  r.provided.assign(n, false);
  std::size_t maxPos = schema.numPositional();
  if (args.size() > maxPos) {
    r.diags.push_back(Diagnostic::error(prefix() + "too many positional arguments (got " +
                                        std::to_string(args.size()) + ", at most " +
                                        std::to_string(maxPos) + " accepted)"));
    return r;
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    r.values[i] = args[i];
    r.provided[i] = true;
  }
  for (const auto &[name, value] : kwargs) {
    int idx = schema.argIndex(name);
    if (idx < 0) {
      r.diags.push_back(Diagnostic::error(prefix() + "unknown keyword argument '" + name + "'"));
      continue;
    }
    if (r.provided[static_cast<std::size_t>(idx)]) {
      bool positional = static_cast<std::size_t>(idx) < args.size();
      r.diags.push_back(Diagnostic::error(
          prefix() + "duplicate argument '" + name + "'" +
          (positional ? " (given positionally and by keyword)" : " (keyword given twice)")));
      continue;
    }
    r.values[static_cast<std::size_t>(idx)] = value;
    r.provided[static_cast<std::size_t>(idx)] = true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const SchemaArg &sa = schema.args[i];
    if (!r.provided[i]) {
      if (sa.defaultValue)
        r.values[i] = *sa.defaultValue;
      else
        r.diags.push_back(
            Diagnostic::error(prefix() + "missing required argument '" + sa.name + "'"));
      continue;
    }
    // Exported graphs pass Python numbers straight to the Tensor operands of
    // pointwise ops (`aten.mul.Tensor(%x, 0.5)`); torch wraps them as 0-dim
    // "wrapped number" tensors, so elementwise ops accept them for every
    // tensor operand but the first (which decides the result's shape).
    // A symbolic scalar is a Python number too: `torch.arange(seq_length) +
    // start_pos` with start_pos = input_pos[0].item() records
    // aten.add.Tensor(%arange, %_local_scalar_dense) (ExecuTorch's KVCache).
    const Argument &v = r.values[i];
    if (i > 0 && schema.properties.elementwise && sa.type.base == B::Tensor && !sa.type.isList &&
        (v.isInt() || v.isFloat() || v.isBool() || (v.isValue() && !v.value()->isTensor())))
      continue;
    if (auto m = mismatch(r.values[i], sa.type))
      r.diags.push_back(Diagnostic::error(prefix() + "argument '" + sa.name + "' expects " +
                                          sa.type.str() + " but got " + *m));
  }
  return r;
}

} // namespace

Expected<BoundArgs> BoundArgs::bind(const OpSchema &schema, const std::vector<Argument> &args,
                                    const std::vector<std::pair<std::string, Argument>> &kwargs,
                                    std::string_view nodeName) {
  BindAttempt first = bindOne(schema, args, kwargs, nodeName, schema);
  const OpSchema *matched = &schema;
  int legacy = -1;
  BindAttempt *winner = first.diags.empty() ? &first : nullptr;
  BindAttempt alt;
  for (std::size_t i = 0; !winner && i < schema.legacySchemas.size(); ++i) {
    alt = bindOne(schema.legacySchemas[i], args, kwargs, nodeName, schema);
    if (alt.diags.empty()) {
      winner = &alt;
      matched = &schema.legacySchemas[i];
      legacy = static_cast<int>(i);
    }
  }
  if (!winner) {
    for (const OpSchema &l : schema.legacySchemas)
      first.diags.front().note("the arguments do not fit the legacy signature " + l.str() +
                               " either");
    return Failure(std::move(first.diags));
  }
  BoundArgs b;
  b.schema_ = matched;
  b.values_ = std::move(winner->values);
  b.provided_ = std::move(winner->provided);
  b.legacyIndex_ = legacy;
  return b;
}

Expected<BoundArgs> BoundArgs::bind(const Node &node) {
  if (!node.schema())
    return Diagnostic::error("node %" + node.name() + " (" + node.target() +
                             "): op is not registered");
  return bind(*node.schema(), node.args(), node.kwargs(), node.name());
}

const Argument *BoundArgs::find(std::string_view name) const {
  if (!schema_)
    return nullptr;
  int i = schema_->argIndex(name);
  return i < 0 ? nullptr : &values_[static_cast<std::size_t>(i)];
}

std::vector<Value *> BoundArgs::mutatedValues() const {
  std::vector<Value *> out;
  for (std::size_t i = 0; i < values_.size(); ++i)
    if (schema_->args[i].type.isMutable() && values_[i].isValue())
      out.push_back(values_[i].value());
  return out;
}

const Argument &BoundArgs::get(std::string_view name) const {
  const Argument *a = find(name);
  assert(a && "BoundArgs::get: no such argument in the matched schema");
  // Release builds: a missing name reads as None rather than crashing.
  static const Argument kNone;
  return a ? *a : kNone;
}

} // namespace graft
