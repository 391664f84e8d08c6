//===- Elementwise.cpp - Binary, unary, clamp and where ---------------------===//
//
// The elementwise family: add/sub/mul/div (Tensor and Scalar), maximum,
// minimum, pow by a constant exponent, the unary activations, clamp with
// Scalar bounds and where. Each op's support check and lowering follow the
// reference interpreter (type promotion from the node's result dtype,
// docs/numerics.md's scalar rules); the launchers dispatch binary.glsl,
// unary.glsl and where.glsl next to this file.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

#include "graft/support/FloatBits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

const char *name(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "add";
  case BinaryKind::Sub:
    return "sub";
  case BinaryKind::Mul:
    return "mul";
  case BinaryKind::Div:
    return "div";
  case BinaryKind::Maximum:
    return "maximum";
  case BinaryKind::Minimum:
    return "minimum";
  case BinaryKind::Pow:
    return "pow";
  }
  return "?";
}

const char *name(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Neg:
    return "neg";
  case UnaryKind::Abs:
    return "abs";
  case UnaryKind::Relu:
    return "relu";
  case UnaryKind::Sigmoid:
    return "sigmoid";
  case UnaryKind::Silu:
    return "silu";
  case UnaryKind::Gelu:
    return "gelu";
  case UnaryKind::GeluTanh:
    return "gelu_tanh";
  case UnaryKind::Rsqrt:
    return "rsqrt";
  case UnaryKind::Sqrt:
    return "sqrt";
  case UnaryKind::Exp:
    return "exp";
  case UnaryKind::Reciprocal:
    return "reciprocal";
  }
  return "?";
}

TwoInputPush twoInputPush(const std::vector<int64_t> &outSizes, const std::vector<int64_t> &aSizes,
                          const std::vector<int64_t> *bSizes) {
  TwoInputPush pc{};
  pc.rank = i32(static_cast<int64_t>(outSizes.size()));
  pc.numel = i32(product(outSizes));
  pc.bIsScalar = bSizes ? 0 : 1;
  // Operands already of the output's shape need no index decomposition (a
  // scalar b needs none either).
  pc.contiguous = (aSizes == outSizes ? 1 : 0) | (!bSizes || *bSizes == outSizes ? 2 : 0);
  pc.alpha = 1.0f;
  const std::vector<int64_t> sa = broadcastStrides(aSizes, outSizes);
  const std::vector<int64_t> sb = bSizes ? broadcastStrides(*bSizes, outSizes) : sa;
  for (std::size_t i = 0; i < outSizes.size(); ++i) {
    pc.sizes[i] = i32(outSizes[i]);
    pc.aStrides[i] = i32(sa[i]);
    pc.bStrides[i] = i32(sb[i]);
  }
  return pc;
}

namespace {

Status checkBinaryDType(BinaryKind op, DType d) {
  if (isDeviceFloat(d))
    return okStatus();
  if (deviceElem(d) == DeviceElem::I32 && d != DType::Bool &&
      (op == BinaryKind::Add || op == BinaryKind::Sub || op == BinaryKind::Mul))
    return okStatus();
  return kernelError(name(op), "unsupported dtype " + std::string(name(d)));
}

Expected<DeviceTensor> binaryImpl(Context &ctx, BinaryKind op, const DeviceTensor &a,
                                  const DeviceTensor *b, double scalar, double alpha) {
  GRAFT_CHECK_OK(checkBinaryDType(op, a.dtype));
  std::vector<int64_t> outSizes = a.sizes;
  if (b) {
    if (b->dtype != a.dtype)
      return kernelError(name(op), "operands must have one dtype, got " +
                                       std::string(name(a.dtype)) + " and " +
                                       std::string(name(b->dtype)));
    GRAFT_TRY(outSizes, broadcastSizes(name(op), {&a.sizes, &b->sizes}));
  }
  if (outSizes.size() > kMaxRank)
    return kernelError(name(op), "rank " + std::to_string(outSizes.size()) + " exceeds 8");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, outSizes));
  TwoInputPush pc = twoInputPush(outSizes, a.sizes, b ? &b->sizes : nullptr);
  pc.alpha = static_cast<float>(alpha);
  pc.scalar = static_cast<float>(scalar);
  // Same-shape float operands take the vec4 variant (4 elements per
  // invocation, bit-exact to the scalar one); broadcasting needs the index
  // decomposition per element.
  bool vec4 = !ctx.exactKernels() && isDeviceFloat(a.dtype) && pc.contiguous == 3;
  const ElementwiseForm form =
      elementwiseForm(ctx, a.dtype, vec4, std::max(a.buffer->size(), b ? b->buffer->size() : 0));
  std::string variant = std::string("binary_") + name(op) + form.infix + shaderDType(a.dtype);
  uint64_t n = static_cast<uint64_t>(out.numel());
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), a.buffer.get(), (b ? b : &a)->buffer.get()}, &pc,
                                sizeof(pc), (n + form.perInvocation - 1) / form.perInvocation));
  return out;
}

} // namespace

Expected<DeviceTensor> binary(Context &ctx, BinaryKind op, const DeviceTensor &a,
                              const DeviceTensor &b, double alpha) {
  return binaryImpl(ctx, op, a, &b, 0.0, alpha);
}

Expected<DeviceTensor> binaryScalar(Context &ctx, BinaryKind op, const DeviceTensor &a,
                                    double scalar, double alpha) {
  return binaryImpl(ctx, op, a, nullptr, scalar, alpha);
}

namespace {
/// unary.glsl's push constants (lo/hi are clamp's bounds).
struct UnaryPush {
  int32_t numel;
  float lo, hi;
};

Expected<DeviceTensor> unaryImpl(Context &ctx, const char *op, const DeviceTensor &a, float lo,
                                 float hi) {
  if (!isDeviceFloat(a.dtype))
    return kernelError(op, "unsupported dtype " + std::string(name(a.dtype)));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, a.sizes));
  UnaryPush pc{i32(a.numel()), lo, hi};
  // The vec4 variant: 4 elements per invocation, bit-exact to the scalar
  // one (which exactKernels keeps, as the kernel the bit-exactness tests and
  // benchmarks compare with) except sigmoid and silu, whose division is
  // GLSL's there (unary.glsl, ACT_DIV).
  bool vec4 = !ctx.exactKernels();
  const ElementwiseForm form = elementwiseForm(ctx, a.dtype, vec4, a.buffer->size());
  std::string variant = std::string("unary_") + op + form.infix + shaderDType(a.dtype);
  uint64_t n = static_cast<uint64_t>(a.numel());
  GRAFT_CHECK_OK(ctx.dispatch1D(variant, {out.buffer.get(), a.buffer.get()}, &pc, sizeof(pc),
                                (n + form.perInvocation - 1) / form.perInvocation));
  return out;
}
} // namespace

Expected<DeviceTensor> unary(Context &ctx, UnaryKind op, const DeviceTensor &a) {
  return unaryImpl(ctx, name(op), a, 0.0f, 0.0f);
}

Expected<DeviceTensor> clampScalar(Context &ctx, const DeviceTensor &a, float lo, float hi) {
  return unaryImpl(ctx, "clamp", a, lo, hi);
}

Expected<DeviceTensor> where(Context &ctx, const DeviceTensor &cond, const DeviceTensor &a,
                             const DeviceTensor &b) {
  constexpr std::size_t kWhereMaxRank = 6;
  if (a.dtype != b.dtype)
    return kernelError("where", "operands must have one dtype, got " + std::string(name(a.dtype)) +
                                    " and " + std::string(name(b.dtype)));
  if (cond.dtype != DType::Bool && cond.dtype != DType::U8)
    return kernelError("where",
                       "condition must be bool or u8, got " + std::string(name(cond.dtype)));
  if (!deviceElem(a.dtype))
    return kernelError("where", "unsupported dtype " + std::string(name(a.dtype)));
  GRAFT_TRY(std::vector<int64_t> outSizes,
            broadcastSizes("where", {&cond.sizes, &a.sizes, &b.sizes}));
  const std::size_t r = outSizes.size();
  if (r > kWhereMaxRank)
    return kernelError("where", "rank " + std::to_string(r) + " exceeds 6");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, outSizes));
  struct {
    int32_t rank, numel;
    int32_t sizes[kWhereMaxRank], cStrides[kWhereMaxRank], aStrides[kWhereMaxRank],
        bStrides[kWhereMaxRank];
  } pc{};
  pc.rank = i32(static_cast<int64_t>(r));
  pc.numel = i32(out.numel());
  std::vector<int64_t> sc = broadcastStrides(cond.sizes, outSizes);
  std::vector<int64_t> sa = broadcastStrides(a.sizes, outSizes);
  std::vector<int64_t> sb = broadcastStrides(b.sizes, outSizes);
  for (std::size_t i = 0; i < r; ++i) {
    pc.sizes[i] = i32(outSizes[i]);
    pc.cStrides[i] = i32(sc[i]);
    pc.aStrides[i] = i32(sa[i]);
    pc.bStrides[i] = i32(sb[i]);
  }
  if (out.numel() == 0)
    return out;
  GRAFT_CHECK_OK(
      ctx.dispatch1D("where_" + shaderDType(a.dtype),
                     {out.buffer.get(), cond.buffer.get(), a.buffer.get(), b.buffer.get()}, &pc,
                     sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

//===-- Elementwise ----------------------------------------------------===//

Lowering binaryLowering(BinaryKind op, bool scalarOther, const char *otherName = "other") {
  Lowering l;
  l.kernel = std::string("binary_") + name(op);
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    GRAFT_VK_REASON(rankReason(node, 8));
    DType out = node.output()->proto().dtype;
    bool intOk = (op == BinaryKind::Add || op == BinaryKind::Sub || op == BinaryKind::Mul) &&
                 deviceElem(out) == DeviceElem::I32 && out != DType::Bool;
    if (!isDeviceFloat(out) && !intOk)
      return "result dtype " + std::string(name(out)) + " is not supported by binary_" + name(op);
    // Arguments torch rejects (sub_check, alpha_check): the reference
    // interpreter reports the error, the device must not compute a value.
    if (op == BinaryKind::Sub) {
      const TensorProto *s = protoOf(b, "self"), *o = protoOf(b, otherName);
      const Argument *oa = b.find(otherName);
      if ((s && s->dtype == DType::Bool) || (o && o->dtype == DType::Bool) || (oa && oa->isBool()))
        return "sub of a bool operand is an error in torch";
    }
    if (const Argument *al = b.find("alpha");
        al && (al->isBool() || (al->isFloat() && !isDeviceFloat(out))))
      return "alpha " + std::string(al->isBool() ? "bool" : "float") + " on a " +
             std::string(name(out)) + " result is an error in torch";
    if (op == BinaryKind::Pow) {
      const Argument *e = b.find(otherName);
      auto x = e ? e->number() : std::nullopt;
      if (!x || !(*x == 2 || *x == 3 || *x == 0.5 || *x == -0.5 || *x == -1 || *x == -2))
        return "pow exponent must be one of 2, 3, 0.5, -0.5, -1, -2 (PowKernel.cpp's special "
               "cases)";
    }
    // torch keeps the full f32 value of a one-element second operand of
    // mul/div on f16 ("original_scalar_value"); the kernel would round it.
    if (!scalarOther && out == DType::F16 && (op == BinaryKind::Mul || op == BinaryKind::Div)) {
      const TensorProto *o = protoOf(b, otherName);
      if (o && o->dtype != DType::F16) {
        auto n = o->numel().value();
        if (n && *n == 1)
          return "f16 " + std::string(name(op)) + " by a one-element " +
                 std::string(graft::name(o->dtype)) + " tensor keeps its full precision";
      }
    }
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    DType out = a.outDType();
    double alpha = a.number("alpha").value_or(1.0);
    GRAFT_TRY(DeviceTensor self, a.tensor("self"));
    GRAFT_TRY(self, asDType(a.ctx(), self, out));
    const Argument &other = a.arg(otherName);
    if (other.isValue() && other.value()->isTensor()) {
      GRAFT_TRY(DeviceTensor o, a.tensor(otherName));
      GRAFT_TRY(o, asDType(a.ctx(), o, out));
      return one(binary(a.ctx(), op, self, o, alpha));
    }
    auto s = a.number(otherName);
    if (!s)
      return a.error("argument '" + std::string(otherName) + "' is not a number");
    double v = *s;
    // Scalars: add/sub convert to the common dtype (f16 rounds), mul/div use
    // the original value in f32 (BinaryOpsKernel.cpp original_scalar_value).
    if (out == DType::F16 && (op == BinaryKind::Add || op == BinaryKind::Sub))
      v = roundToDType(static_cast<float>(v), DType::F16);
    return one(binaryScalar(a.ctx(), op, self, v, alpha));
  };
  return l;
}

Lowering unaryLowering(UnaryKind op) {
  Lowering l;
  l.kernel = std::string("unary_") + name(op);
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    if (!isFloatOfResultDType(node, b, "self"))
      return "needs an f32/f16 input of the result's dtype";
    return {};
  };
  l.run = [op](NodeArgs &a) -> Results {
    UnaryKind k = op;
    if (k == UnaryKind::Gelu && !a.isNone("approximate") && a.arg("approximate").isString()) {
      const std::string &approx = a.arg("approximate").string();
      if (approx == "tanh")
        k = UnaryKind::GeluTanh;
      else if (approx != "none" && !approx.empty())
        return a.error("gelu: approximate must be 'none' or 'tanh', got '" + approx + "'");
    }
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    return one(unary(a.ctx(), k, x));
  };
  return l;
}

/// torch.clamp(self, min, max) with Scalar bounds on f32/f16, and hardtanh
/// (clamp_out with both bounds min_val and max_val, Activation.cpp
/// hardtanh_out): the bounds are converted to the result dtype on the host
/// (clamp_scalar_kernel_impl's checked min_.to<scalar_t>()), then
/// unary_clamp compares.
Lowering clampLowering(const char *minName, const char *maxName) {
  Lowering l;
  l.kernel = "unary_clamp";
  l.check = [minName, maxName](const Node &node, const BoundArgs &b,
                               const DeviceInfo &) -> std::string {
    if (!isFloatOfResultDType(node, b, "self"))
      return "needs an f32/f16 input of the result's dtype";
    for (const char *bound : {minName, maxName}) {
      const Argument *a = b.find(bound);
      if (a && !a->isNone() && !a->number() && !(a->isValue() && !a->value()->isTensor()))
        return std::string("bound '") + bound + "' is not a number";
    }
    return {};
  };
  l.run = [minName, maxName](NodeArgs &a) -> Results {
    DType out = a.outDType();
    std::optional<double> lo, hi;
    for (const char *bound : {minName, maxName}) {
      if (a.isNone(bound))
        continue;
      auto v = a.number(bound);
      if (!v)
        return a.error(std::string("clamp bound '") + bound + "' is not a number");
      // c10's checked conversion: a finite bound outside the dtype's range is
      // an error (infinities and NaN convert).
      double lim = out == DType::F16 ? 65504.0 : double(std::numeric_limits<float>::max());
      if (std::isfinite(*v) && (*v < -lim || *v > lim))
        return a.error(std::string("clamp: ") + bound + " value " + std::to_string(*v) +
                       " cannot be converted to type " + std::string(name(out)) +
                       " without overflow");
      (bound == minName ? lo : hi) = *v;
    }
    if (!lo && !hi)
      return a.error("torch.clamp: At least one of 'min' or 'max' must not be None");
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    float flo = -inf, fhi = inf;
    if (lo && hi && (std::isnan(*lo) || std::isnan(*hi))) {
      flo = fhi = nan; // clamp_out fills the result with NaN
    } else {
      // A lone NaN bound is ignored (std::max(x, NaN) is x): keep +-inf.
      if (lo && !std::isnan(*lo))
        flo = roundToDType(static_cast<float>(*lo), out);
      if (hi && !std::isnan(*hi))
        fhi = roundToDType(static_cast<float>(*hi), out);
    }
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    return one(clampScalar(a.ctx(), x, flo, fhi));
  };
  return l;
}

/// torch.where(condition, self, other): self and other are converted to the
/// result dtype first (a Python number becomes a 0-dim tensor of it), then
/// where.glsl selects with three-way broadcasting.
Lowering whereLowering() {
  Lowering l;
  l.kernel = "where";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    GRAFT_VK_REASON(rankReason(node, 6));
    const TensorProto *c = protoOf(b, "condition");
    if (!c || (c->dtype != DType::Bool && c->dtype != DType::U8))
      return "condition must be a bool or u8 tensor";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    DType out = a.outDType();
    GRAFT_TRY(DeviceTensor cond, a.tensor("condition"));
    auto operand = [&](const char *which) -> Expected<DeviceTensor> {
      const Argument &arg = a.arg(which);
      if (arg.isValue() && arg.value()->isTensor()) {
        GRAFT_TRY(DeviceTensor t, a.tensor(which));
        return asDType(a.ctx(), t, out);
      }
      auto v = a.number(which);
      if (!v)
        return a.error(std::string("argument '") + which + "' is not a tensor or number");
      // Converted to the result dtype as TensorIterator converts a wrapped
      // number (f16 rounds to nearest even when the host tensor is built).
      Tensor t = Tensor::empty(out, {});
      t.setDouble(0, *v);
      return uploadTensor(a.ctx(), t);
    };
    GRAFT_TRY(DeviceTensor self, operand("self"));
    GRAFT_TRY(DeviceTensor other, operand("other"));
    return one(where(a.ctx(), cond, self, other));
  };
  return l;
}

} // namespace

void addElementwiseLowerings(LoweringTable &m) {
  for (const char *ov : {"Tensor", "Scalar"}) {
    std::string o(ov);
    bool scalar = o == "Scalar";
    m["aten.add." + o] = binaryLowering(BinaryKind::Add, scalar);
    m["aten.sub." + o] = binaryLowering(BinaryKind::Sub, scalar);
    m["aten.mul." + o] = binaryLowering(BinaryKind::Mul, scalar);
    m["aten.div." + o] = binaryLowering(BinaryKind::Div, scalar);
  }
  m["aten.maximum.default"] = binaryLowering(BinaryKind::Maximum, false);
  m["aten.minimum.default"] = binaryLowering(BinaryKind::Minimum, false);
  m["aten.pow.Tensor_Scalar"] = binaryLowering(BinaryKind::Pow, true, "exponent");
  m["aten.neg.default"] = unaryLowering(UnaryKind::Neg);
  m["aten.abs.default"] = unaryLowering(UnaryKind::Abs);
  m["aten.relu.default"] = unaryLowering(UnaryKind::Relu);
  m["aten.sigmoid.default"] = unaryLowering(UnaryKind::Sigmoid);
  m["aten.silu.default"] = unaryLowering(UnaryKind::Silu);
  m["aten.gelu.default"] = unaryLowering(UnaryKind::Gelu);
  m["aten.rsqrt.default"] = unaryLowering(UnaryKind::Rsqrt);
  m["aten.sqrt.default"] = unaryLowering(UnaryKind::Sqrt);
  m["aten.exp.default"] = unaryLowering(UnaryKind::Exp);
  m["aten.reciprocal.default"] = unaryLowering(UnaryKind::Reciprocal);
  m["aten.clamp.default"] = clampLowering("min", "max");
  m["aten.hardtanh.default"] = clampLowering("min_val", "max_val");
  m["aten.where.self"] = whereLowering();
}

} // namespace graft::vk
