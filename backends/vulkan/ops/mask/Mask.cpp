//===- Mask.cpp - Comparisons, logical ops, tril, masked_fill ---------------===//
//
// The ops a KV-cache export builds its attention masks and positions with,
// beyond where.self (elementwise/Elementwise.cpp):
//
//   %m = aten.lt.Tensor(%a, %b) / le / gt / ge / eq / ne (.Tensor, .Scalar)   compare
//   %m = aten.logical_and(%a, %b) / logical_or / logical_not                  compare
//   %t = aten.tril(%x, diagonal)                                              tril
//   %y = aten.masked_fill.Scalar(%x, %mask, value)                            where
//
// Comparisons follow the reference (torch's TensorIterator): both operands
// are converted to their common dtype first (a Python number does not lift
// a tensor's float dtype; a float number makes an integer tensor f32), then
// compared exactly (mask_ops.glsl, next to this file).
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

namespace {

constexpr std::size_t kMaskMaxRank = 6;

} // namespace

const char *name(CompareKind kind) {
  switch (kind) {
  case CompareKind::Lt:
    return "lt";
  case CompareKind::Le:
    return "le";
  case CompareKind::Gt:
    return "gt";
  case CompareKind::Ge:
    return "ge";
  case CompareKind::Eq:
    return "eq";
  case CompareKind::Ne:
    return "ne";
  case CompareKind::And:
    return "logical_and";
  case CompareKind::Or:
    return "logical_or";
  case CompareKind::Not:
    return "logical_not";
  }
  return "?";
}

Expected<DeviceTensor> compare(Context &ctx, CompareKind op, const DeviceTensor &a,
                               const DeviceTensor &b) {
  // Integer dtypes share the int32 device form, and compare by value.
  if (!deviceElem(a.dtype) || deviceElem(a.dtype) != deviceElem(b.dtype))
    return kernelError(name(op), "operands must have one device dtype, got " +
                                     std::string(graft::name(a.dtype)) + " and " +
                                     std::string(graft::name(b.dtype)));
  GRAFT_TRY(std::vector<int64_t> outSizes, broadcastSizes(name(op), {&a.sizes, &b.sizes}));
  const std::size_t r = outSizes.size();
  if (r > kMaskMaxRank)
    return kernelError(name(op), "rank " + std::to_string(r) + " exceeds 6");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, DType::Bool, outSizes));
  if (out.numel() == 0)
    return out;
  GRAFT_CHECK_OK(checkInt32(name(op), out.numel()));
  struct {
    int32_t rank, numel, op;
    int32_t sizes[kMaskMaxRank], aStrides[kMaskMaxRank], bStrides[kMaskMaxRank];
  } pc{};
  pc.rank = static_cast<int32_t>(r);
  pc.numel = static_cast<int32_t>(out.numel());
  pc.op = static_cast<int32_t>(op);
  std::vector<int64_t> sa = broadcastStrides(a.sizes, outSizes),
                       sb = broadcastStrides(b.sizes, outSizes);
  for (std::size_t i = 0; i < r; ++i) {
    pc.sizes[i] = static_cast<int32_t>(outSizes[i]);
    pc.aStrides[i] = static_cast<int32_t>(sa[i]);
    pc.bStrides[i] = static_cast<int32_t>(sb[i]);
  }
  GRAFT_CHECK_OK(ctx.dispatch1D("compare_" + shaderDType(a.dtype),
                                {out.buffer.get(), a.buffer.get(), b.buffer.get()}, &pc, sizeof(pc),
                                static_cast<uint64_t>(out.numel())));
  return out;
}

Expected<DeviceTensor> tril(Context &ctx, const DeviceTensor &x, int64_t diagonal) {
  if (x.sizes.size() < 2)
    return kernelError("tril", "input must have at least 2 dims, got " + sizesStr(x.sizes));
  if (!deviceElem(x.dtype))
    return kernelError("tril", "unsupported dtype " + std::string(graft::name(x.dtype)));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  if (out.numel() == 0)
    return out;
  GRAFT_CHECK_OK(checkInt32("tril", out.numel()));
  int64_t rows = x.sizes[x.sizes.size() - 2], cols = x.sizes.back();
  // Beyond the matrix, the diagonal keeps everything or nothing.
  int64_t d = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);
  struct {
    int32_t numel, rows, cols, diagonal;
  } pc{static_cast<int32_t>(out.numel()), static_cast<int32_t>(rows), static_cast<int32_t>(cols),
       static_cast<int32_t>(d)};
  GRAFT_CHECK_OK(ctx.dispatch1D("tril_" + shaderDType(x.dtype), {out.buffer.get(), x.buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

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
    return one(compare(a.ctx(), op, x, y));
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
    return one(compare(a.ctx(), op, x, y));
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
    return one(tril(a.ctx(), x, a.integer("diagonal").value_or(0)));
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
    GRAFT_VK_REASON(scalarReason(v, self->dtype));
    // An integer self and an infinite / NaN value: torch's overflow error.
    if (!isDeviceFloat(self->dtype) && self->dtype != DType::Bool && v->isFloat())
      return "a float value for an integer tensor";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor m, a.tensor("mask"));
    GRAFT_TRY(DeviceTensor v, scalarTensor(a, "value", x.dtype));
    return one(where(a.ctx(), m, v, x));
  };
  return l;
}

} // namespace

void addMaskLowerings(LoweringTable &m) {
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
