//===- KernelArgs.cpp - Typed access to a kernel's bound arguments --------===//
//
// Kernels read arguments by schema name. Value arguments (tensors, SymInts)
// are resolved to the runtime values the interpreter computed; literal
// arguments are read from the node. The accessors are lenient about the
// spellings torch.export produces (an int where a float is declared, a
// SymInt Value where an int is declared) because BoundArgs already checked
// structural types.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include "graft/ir/Graph.h"

#include <cmath>

namespace graft {

namespace {

const Tensor &undefinedTensor() {
  static const Tensor kUndefined;
  return kUndefined;
}

} // namespace

const RuntimeValue *KernelArgs::resolve(const Argument &arg) const {
  // Runtime values are stored in the order Argument::forEachValue visits the
  // bound arguments; find `arg`'s position by walking them the same way.
  std::size_t index = 0;
  const RuntimeValue *found = nullptr;
  bool done = false;
  auto walk = [&](const Argument &a, auto &self) -> void {
    if (done)
      return;
    if (a.isValue()) {
      if (&a == &arg) {
        found = index < resolved_.size() ? &resolved_[index] : nullptr;
        done = true;
        return;
      }
      ++index;
    } else if (a.isList()) {
      for (const Argument &e : a.list())
        self(e, self);
    }
  };
  for (std::size_t i = 0; i < args_.size() && !done; ++i)
    walk(args_.at(i), walk);
  return found;
}

const Tensor &KernelArgs::tensor(std::string_view name) const {
  const Tensor *t = optionalTensor(name);
  return t ? *t : undefinedTensor();
}

const Tensor *KernelArgs::optionalTensor(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return nullptr;
  const Argument &a = args_.get(name);
  if (!a.isValue())
    return nullptr;
  const RuntimeValue *v = resolve(a);
  if (!v)
    return nullptr;
  return std::get_if<Tensor>(v);
}

std::vector<Tensor> KernelArgs::tensorList(std::string_view name) const {
  std::vector<Tensor> out;
  if (!interp::hasArg(*this, name))
    return out;
  const Argument &a = args_.get(name);
  if (!a.isList())
    return out;
  for (const Argument &e : a.list()) {
    const RuntimeValue *v = e.isValue() ? resolve(e) : nullptr;
    const Tensor *t = v ? std::get_if<Tensor>(v) : nullptr;
    out.push_back(t ? *t : Tensor());
  }
  return out;
}

namespace {

std::optional<double> numberOf(const KernelArgs &ka, const Argument &a,
                               const RuntimeValue *resolved) {
  (void)ka;
  if (a.isValue()) {
    if (!resolved)
      return std::nullopt;
    if (const auto *i = std::get_if<int64_t>(resolved))
      return static_cast<double>(*i);
    if (const auto *d = std::get_if<double>(resolved))
      return *d;
    if (const auto *b = std::get_if<bool>(resolved))
      return *b ? 1.0 : 0.0;
    if (const auto *t = std::get_if<Tensor>(resolved))
      if (t->defined() && t->numel() == 1)
        return t->getDouble(0);
    return std::nullopt;
  }
  return a.number();
}

} // namespace

int64_t KernelArgs::integer(std::string_view name) const {
  return optionalInteger(name).value_or(0);
}

std::optional<int64_t> KernelArgs::optionalInteger(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return std::nullopt;
  const Argument &a = args_.get(name);
  if (a.isInt())
    return a.integer();
  if (a.isBool())
    return a.boolean() ? 1 : 0;
  if (a.isValue()) {
    const RuntimeValue *v = resolve(a);
    if (v)
      if (const auto *i = std::get_if<int64_t>(v))
        return *i;
  }
  auto d = numberOf(*this, a, a.isValue() ? resolve(a) : nullptr);
  if (d)
    return interp::truncToInt64(*d);
  return std::nullopt;
}

double KernelArgs::number(std::string_view name) const {
  return optionalNumber(name).value_or(0);
}

std::optional<double> KernelArgs::optionalNumber(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return std::nullopt;
  const Argument &a = args_.get(name);
  return numberOf(*this, a, a.isValue() ? resolve(a) : nullptr);
}

bool KernelArgs::boolean(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return false;
  const Argument &a = args_.get(name);
  if (a.isBool())
    return a.boolean();
  auto d = numberOf(*this, a, a.isValue() ? resolve(a) : nullptr);
  return d && *d != 0.0;
}

std::vector<int64_t> KernelArgs::intList(std::string_view name) const {
  return optionalIntList(name).value_or(std::vector<int64_t>{});
}

std::optional<std::vector<int64_t>> KernelArgs::optionalIntList(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return std::nullopt;
  const Argument &a = args_.get(name);
  if (a.isNone())
    return std::nullopt;
  auto one = [&](const Argument &e) -> std::optional<int64_t> {
    if (e.isInt())
      return e.integer();
    if (e.isBool())
      return e.boolean() ? 1 : 0;
    if (e.isValue())
      if (const RuntimeValue *v = resolve(e))
        if (const auto *i = std::get_if<int64_t>(v))
          return *i;
    return std::nullopt;
  };
  std::vector<int64_t> out;
  if (a.isList()) {
    for (const Argument &e : a.list()) {
      auto v = one(e);
      if (!v)
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
  // A single int where the schema declares int[N] (torch broadcasts it).
  auto v = one(a);
  if (!v)
    return std::nullopt;
  int idx = args_.schema().argIndex(name);
  int64_t n = idx >= 0 ? args_.schema().args[static_cast<std::size_t>(idx)].type.fixedLength : -1;
  out.assign(static_cast<std::size_t>(n > 0 ? n : 1), *v);
  return out;
}

DType KernelArgs::dtype(std::string_view name) const {
  return optionalDType(name).value_or(DType::F32);
}

std::optional<DType> KernelArgs::optionalDType(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return std::nullopt;
  const Argument &a = args_.get(name);
  if (a.isDType())
    return a.dtype();
  if (a.isInt())
    return interp::dtypeFromTorchEnum(a.integer());
  if (a.isString())
    return parseDType(a.string());
  return std::nullopt;
}

std::string KernelArgs::string(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return {};
  const Argument &a = args_.get(name);
  return a.isString() ? a.string() : std::string();
}

bool KernelArgs::isNone(std::string_view name) const {
  if (!interp::hasArg(*this, name))
    return true;
  const Argument &a = args_.get(name);
  if (a.isNone())
    return true;
  if (a.isValue()) {
    const RuntimeValue *v = resolve(a);
    if (const auto *t = v ? std::get_if<Tensor>(v) : nullptr)
      return !t->defined();
  }
  return false;
}

Diagnostic KernelArgs::error(const std::string &message) const {
  std::string n(nodeName_);
  if (!n.empty() && n[0] != '%' && n[0] != '#')
    n = "%" + n;
  return Diagnostic::error("node " + n + " (" + args_.schema().qualifiedName() + "): " + message);
}

namespace interp {

bool hasArg(const KernelArgs &args, std::string_view name) {
  return args.bound().schema().argIndex(name) >= 0;
}

std::string pickArg(const KernelArgs &args, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (hasArg(args, n))
      return std::string(n);
  return {};
}

Status requireTensors(const KernelArgs &args, std::initializer_list<std::string_view> names) {
  bool all = true;
  for (std::string_view n : names)
    all = all && args.tensor(n).defined();
  if (all)
    return okStatus();
  std::string list;
  std::size_t i = 0;
  for (std::string_view n : names) {
    if (i > 0)
      list += i + 1 == names.size() ? " and " : ", ";
    list += "'" + std::string(n) + "'";
    ++i;
  }
  return args.error(std::string(names.size() == 1 ? "expects tensor " : "expects tensors ") + list);
}

std::optional<Number> optionalNumberArg(const KernelArgs &args, std::string_view name) {
  if (!hasArg(args, name))
    return std::nullopt;
  const Argument &a = args.bound().get(name);
  if (a.isNone())
    return std::nullopt;
  if (a.isInt())
    return Number::fromInt(a.integer());
  if (a.isFloat())
    return Number::fromDouble(a.floating());
  if (a.isBool())
    return Number::fromBool(a.boolean());
  if (a.isValue()) {
    // A SymInt/SymFloat/SymBool value; its runtime kind decides.
    if (a.value()->kind() == ValueKind::SymFloat) {
      auto d = args.optionalNumber(name);
      return d ? std::optional<Number>(Number::fromDouble(*d)) : std::nullopt;
    }
    if (a.value()->kind() == ValueKind::SymBool)
      return Number::fromBool(args.boolean(name));
    auto i = args.optionalInteger(name);
    return i ? std::optional<Number>(Number::fromInt(*i)) : std::nullopt;
  }
  return std::nullopt;
}

Operand operand(const KernelArgs &args, std::string_view name) {
  if (hasArg(args, name)) {
    const Argument &a = args.bound().get(name);
    if (a.isValue() && a.value()->kind() == ValueKind::Tensor)
      return Operand(args.tensor(name));
  }
  if (auto n = optionalNumberArg(args, name))
    return Operand(*n);
  return Operand(Tensor());
}

std::optional<int64_t> truncToInt64(double value) {
  if (!(value >= -9.2233720368547758e18 && value < 9.2233720368547758e18))
    return std::nullopt;
  return static_cast<int64_t>(std::trunc(value));
}

std::optional<DType> dtypeFromTorchEnum(int64_t v) {
  switch (v) {
  case 0:
    return DType::U8;
  case 1:
    return DType::I8;
  case 2:
    return DType::I16;
  case 3:
    return DType::I32;
  case 4:
    return DType::I64;
  case 5:
    return DType::F16;
  case 6:
    return DType::F32;
  case 7:
    return DType::F64;
  case 8:
    return DType::C32;
  case 9:
    return DType::C64;
  case 10:
    return DType::C128;
  case 11:
    return DType::Bool;
  case 12:
    return DType::QI8;
  case 13:
    return DType::QU8;
  case 14:
    return DType::QI32;
  case 15:
    return DType::BF16;
  case 16:
    return DType::QU4x2;
  case 17:
    return DType::QU2x4;
  case 23:
    return DType::F8E5M2;
  case 24:
    return DType::F8E4M3FN;
  case 25:
    return DType::F8E5M2FNUZ;
  case 26:
    return DType::F8E4M3FNUZ;
  case 27:
    return DType::U16;
  case 28:
    return DType::U32;
  case 29:
    return DType::U64;
  default:
    break;
  }
  if (v >= 30 && v <= 36)
    return static_cast<DType>(static_cast<int>(DType::U1) + static_cast<int>(v - 30));
  if (v >= 37 && v <= 43)
    return static_cast<DType>(static_cast<int>(DType::I1) + static_cast<int>(v - 37));
  if (v == 44)
    return DType::F8E8M0FNU;
  if (v == 45)
    return DType::F4E2M1FNx2;
  return std::nullopt;
}

} // namespace interp
} // namespace graft
