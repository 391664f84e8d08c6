//===- MaskLowerings.cpp - Lowerings of the mask-building ops -------------===//
//
// The ops a KV-cache export builds its attention masks and positions with,
// beyond where.self (Lowerings.cpp):
//
//   %m = aten.lt.Tensor(%a, %b) / le / gt / ge / eq / ne (.Tensor, .Scalar)   compare
//   %m = aten.logical_and(%a, %b) / logical_or / logical_not                  compare
//   %t = aten.tril(%x, diagonal)                                              tril
//   %y = aten.masked_fill.Scalar(%x, %mask, value)                            where
//   %o = aten.ones / zeros / scalar_tensor                                    host, uploaded
//
// Comparisons follow the reference (torch's TensorIterator): both operands
// are converted to their common dtype first (a Python number does not lift
// a tensor's float dtype; a float number makes an integer tensor f32), then
// compared exactly.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include <limits>

namespace graft::vk {

namespace {

/// Whether a scalar argument is a float (a Python float or a SymFloat).
bool isFloatScalar(const Argument &a) {
  return a.isFloat() || (a.isValue() && a.value()->kind() == ValueKind::SymFloat);
}

/// Why a Scalar argument cannot be used with a tensor of `self` dtype.
std::string scalarReason(const Argument *a, DType self) {
  if (!a || !(a->number() || (a->isValue() && !a->value()->isTensor())))
    return "the scalar is not a number";
  if (!isDeviceFloat(self) && a->isInt() &&
      (a->integer() < std::numeric_limits<int32_t>::min() ||
       a->integer() > std::numeric_limits<int32_t>::max()))
    return "an integer scalar beyond int32";
  return {};
}

/// A 0-dim tensor of `dtype` holding the number, converted as the reference
/// converts a Python number into the operation's dtype.
Expected<DeviceTensor> scalarTensor(NodeArgs &a, std::string_view name, DType dtype) {
  const Argument &arg = a.arg(name);
  Tensor t = Tensor::empty(dtype, {});
  if (isDeviceFloat(dtype) || isFloatScalar(arg)) {
    auto v = a.number(name);
    if (!v)
      return a.error(std::string(name) + " is not a number");
    if (dtype == DType::Bool)
      t.setInt(0, *v != 0 ? 1 : 0);
    else
      t.setDouble(0, *v);
  } else {
    auto v = a.integer(name);
    if (!v)
      return a.error(std::string(name) + " is not an integer");
    t.setInt(0, dtype == DType::Bool ? (*v != 0 ? 1 : 0) : *v);
  }
  return uploadTensor(a.ctx(), t);
}

Expected<DeviceTensor> as(NodeArgs &a, const DeviceTensor &t, DType d) {
  if (t.dtype == d || (!isDeviceFloat(t.dtype) && !isDeviceFloat(d)))
    return t;
  return cast(a.ctx(), t, d);
}

Lowering compareLowering(CompareKind op, bool scalarOther) {
  Lowering l;
  l.kernel = "compare";
  l.check = [scalarOther](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = protoOf(b, "self");
    if (!self || self->rank() > 6)
      return "self must be a tensor of at most 6 dims";
    if (scalarOther)
      return scalarReason(b.find("other"), self->dtype);
    const TensorProto *other = protoOf(b, "other");
    if (!other || other->rank() > 6)
      return "other must be a tensor of at most 6 dims";
    // f16 against f32: a 0-dim operand does not lift the other's dtype,
    // which this lowering does not model.
    if (isDeviceFloat(self->dtype) && isDeviceFloat(other->dtype) && self->dtype != other->dtype &&
        (self->rank() == 0 || other->rank() == 0))
      return "mixed float dtypes with a 0-dim operand";
    return {};
  };
  l.run = [op, scalarOther](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    DeviceTensor y;
    if (scalarOther) {
      DType k = isDeviceFloat(x.dtype)          ? x.dtype
                : isFloatScalar(a.arg("other")) ? DType::F32
                                                : DType::I64;
      GRAFT_TRY(x, as(a, x, k));
      GRAFT_TRY(y, scalarTensor(a, "other", k));
    } else {
      GRAFT_TRY(y, a.tensor("other"));
      DType k = x.dtype;
      if (isDeviceFloat(x.dtype) && isDeviceFloat(y.dtype))
        k = x.dtype == y.dtype ? x.dtype : DType::F32;
      else if (isDeviceFloat(y.dtype))
        k = y.dtype;
      GRAFT_TRY(x, as(a, x, k));
      GRAFT_TRY(y, as(a, y, k));
    }
    GRAFT_TRY(DeviceTensor r, compare(a.ctx(), op, x, y));
    return one(std::move(r));
  };
  return l;
}

/// logical_and / or / not: nonzero tests, after converting both operands to
/// one device form (a conversion keeps every nonzero value nonzero).
Lowering logicalLowering(CompareKind op) {
  Lowering l;
  l.kernel = "compare";
  l.check = [op](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    for (const char *n : {"self", "other"}) {
      if (op == CompareKind::Not && std::string_view(n) == "other")
        continue;
      const TensorProto *p = protoOf(b, n);
      if (!p || p->rank() > 6)
        return std::string(n) + " must be a tensor of at most 6 dims";
    }
    return {};
  };
  l.run = [op](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    DeviceTensor y = x;
    if (op != CompareKind::Not) {
      GRAFT_TRY(y, a.tensor("other"));
      if (isDeviceFloat(x.dtype) || isDeviceFloat(y.dtype)) {
        GRAFT_TRY(x, as(a, x, DType::F32));
        GRAFT_TRY(y, as(a, y, DType::F32));
      }
    }
    GRAFT_TRY(DeviceTensor r, compare(a.ctx(), op, x, y));
    return one(std::move(r));
  };
  return l;
}

Lowering trilLowering() {
  Lowering l;
  l.kernel = "tril";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = protoOf(b, "self");
    if (!self || self->rank() < 2)
      return "tril needs a tensor of at least 2 dims";
    if (const Argument *d = b.find("diagonal"); d && !d->isInt())
      return "diagonal must be an int";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor r, tril(a.ctx(), x, a.integer("diagonal").value_or(0)));
    return one(std::move(r));
  };
  return l;
}

/// masked_fill.Scalar(self, mask, value) = where(mask, value, self), the
/// value converted to self's dtype as the reference stores it.
Lowering maskedFillLowering() {
  Lowering l;
  l.kernel = "where";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = protoOf(b, "self"), *mask = protoOf(b, "mask");
    if (!self || !mask || mask->dtype != DType::Bool)
      return "needs a tensor and a bool mask";
    if (node.output()->proto().rank() > 6)
      return "rank beyond 6";
    const Argument *v = b.find("value");
    std::string r = scalarReason(v, self->dtype);
    if (!r.empty())
      return r;
    // An integer self and an infinite / NaN value: torch's overflow error.
    if (!isDeviceFloat(self->dtype) && self->dtype != DType::Bool && v->isFloat())
      return "a float value for an integer tensor";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor m, a.tensor("mask"));
    GRAFT_TRY(DeviceTensor v, scalarTensor(a, "value", x.dtype));
    GRAFT_TRY(DeviceTensor r, where(a.ctx(), m, v, x));
    return one(std::move(r));
  };
  return l;
}

} // namespace

void addMaskLowerings(std::map<std::string, Lowering, std::less<>> &m) {
  const std::pair<const char *, CompareKind> cmps[] = {
      {"lt", CompareKind::Lt}, {"le", CompareKind::Le}, {"gt", CompareKind::Gt},
      {"ge", CompareKind::Ge}, {"eq", CompareKind::Eq}, {"ne", CompareKind::Ne}};
  for (const auto &[n, op] : cmps) {
    m[std::string("aten.") + n + ".Tensor"] = compareLowering(op, false);
    m[std::string("aten.") + n + ".Scalar"] = compareLowering(op, true);
  }
  m["aten.logical_and.default"] = logicalLowering(CompareKind::And);
  m["aten.logical_or.default"] = logicalLowering(CompareKind::Or);
  m["aten.logical_not.default"] = logicalLowering(CompareKind::Not);
  m["aten.tril.default"] = trilLowering();
  m["aten.masked_fill.Scalar"] = maskedFillLowering();
}

} // namespace graft::vk
