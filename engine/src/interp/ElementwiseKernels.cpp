//===- ElementwiseKernels.cpp - aten arithmetic and activation kernels ----===//
//
// add/sub/mul/div (all overloads and rounding modes), maximum/minimum, neg,
// abs, pow, rsqrt, sqrt, exp, reciprocal, clamp, hardtanh, where and the
// activations. All of them go through TorchOps' binary()/unary()/clamp()/
// where(), which implement torch's type promotion, broadcasting and opmath
// rounding (f16/bf16 compute in f32 and round once; f32 in f32; f64 in f64).
// The argument checks torch makes before computing (a bool abs, a clamp bound
// the result dtype cannot hold, a non-bool where condition) are errors here
// too.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cfloat>
#include <cmath>
#include <limits>

namespace graft::interp {

namespace {

/// Whether c10's checked Scalar::to<T>() rejects `n` for dtype `d`
/// (c10/util/TypeCast.h `overflows`): floating types take any value in
/// [lowest, max] plus infinities and NaN; signed integers their range;
/// unsigned ones also negative values down to -max (they wrap); bool 0/1
/// (and -1, which wraps).
bool boundOverflows(const Number &n, DType d) {
  if (isFloatingPoint(d)) {
    double v = n.toDouble();
    if (std::isinf(v) || std::isnan(v))
      return false;
    double lim = 0;
    switch (d) {
    case DType::F16:
      lim = 65504.0;
      break;
    case DType::BF16:
      lim = 3.3895313892515355e38;
      break;
    case DType::F32:
      lim = FLT_MAX;
      break;
    default:
      return false; // f64, and the f8 types graft does not compute in
    }
    return v < -lim || v > lim;
  }
  if (n.kind == Number::Kind::Float)
    return false; // a float bound makes an integer clamp floating
  int64_t v = n.i;
  switch (d) {
  case DType::Bool:
    return v < -1 || v > 1;
  case DType::U8:
    return v < -255 || v > 255;
  case DType::I8:
    return v < INT8_MIN || v > INT8_MAX;
  case DType::I16:
    return v < INT16_MIN || v > INT16_MAX;
  case DType::I32:
    return v < INT32_MIN || v > INT32_MAX;
  default:
    return false;
  }
}

/// torch.clamp(x, lo, hi) after the checks of clamp's meta function: the
/// result dtype, then the bounds' checked conversion to it
/// (clamp_scalar_kernel_impl's min_.to<scalar_t>()).
Results checkedClamp(const KernelArgs &a, const Tensor &x, std::optional<Number> lo,
                     std::optional<Number> hi) {
  DType d = x.dtype();
  if (!isFloatingPoint(d)) {
    std::vector<Operand> ops{x};
    for (const auto &b : {lo, hi})
      if (b)
        ops.emplace_back(*b);
    d = resultType(ops);
  }
  for (const auto &[b, which] : {std::pair{lo, "min"}, std::pair{hi, "max"}})
    if (b && boundOverflows(*b, d))
      return a.error(
          std::string("clamp: ") + which + " value " +
          (b->kind == Number::Kind::Float ? std::to_string(b->f) : std::to_string(b->i)) +
          " cannot be converted to type " + std::string(name(d)) + " without overflow");
  return one(clamp(x, lo, hi));
}

DType operandDType(const Operand &o) {
  return o.isTensor ? o.tensor.dtype() : o.number.wrappedDType();
}

Kernel binaryKernel(BinaryOp op, const char *self, const char *other, bool hasAlpha) {
  return [=](const KernelArgs &a) -> Results {
    Operand lhs = operand(a, self), rhs = operand(a, other);
    if (lhs.isTensor && !lhs.tensor.defined())
      return a.error(std::string("argument '") + self + "' is not a tensor or number");
    if (rhs.isTensor && !rhs.tensor.defined())
      return a.error(std::string("argument '") + other + "' is not a tensor or number");
    // torch's sub_check (BinaryOps.h): any bool operand, a wrapped Python
    // bool included, is rejected before promotion.
    if (op == BinaryOp::Sub) {
      bool lb = operandDType(lhs) == DType::Bool, rb = operandDType(rhs) == DType::Bool;
      if (lb && rb)
        return a.error("Subtraction, the `-` operator, with two bool tensors is not supported. "
                       "Use the `^` or `logical_xor()` operator instead.");
      if (lb || rb)
        return a.error("Subtraction, the `-` operator, with a bool tensor is not supported. If "
                       "you are trying to invert a mask, use the `~` or `logical_not()` operator "
                       "instead.");
    }
    double alpha = 1.0;
    if (hasAlpha)
      if (auto al = optionalNumberArg(a, "alpha")) {
        // torch's alpha_check on the common dtype: the integer kernels would
        // otherwise truncate a float alpha silently.
        DType common = resultType({lhs, rhs});
        if (al->kind == Number::Kind::Bool && common != DType::Bool)
          return a.error("Boolean alpha only supported for Boolean results.");
        if (al->kind == Number::Kind::Float && !isFloatingPoint(common) && !isComplex(common))
          return a.error(
              "For integral input tensors, argument alpha must not be a floating point number.");
        alpha = al->toDouble();
      }
    GRAFT_TRY(Tensor r, binary(op, lhs, rhs, alpha));
    return one(std::move(r));
  };
}

Kernel divModeKernel() {
  return [](const KernelArgs &a) -> Results {
    std::string mode = a.isNone("rounding_mode") ? std::string() : a.string("rounding_mode");
    BinaryOp op = BinaryOp::Div;
    if (mode == "trunc")
      op = BinaryOp::DivTrunc;
    else if (mode == "floor")
      op = BinaryOp::DivFloor;
    else if (!mode.empty())
      return a.error(
          "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + mode +
          "'");
    GRAFT_TRY(Tensor r, binary(op, operand(a, "self"), operand(a, "other")));
    return one(std::move(r));
  };
}

Kernel unaryKernel(UnaryOp op) {
  return [=](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    return one(unary(op, x));
  };
}

} // namespace

void registerElementwiseKernels(KernelRegistry &r) {
  for (const char *ov : {"Tensor", "Scalar"}) {
    std::string o(ov);
    r.add("aten.add." + o, binaryKernel(BinaryOp::Add, "self", "other", true));
    r.add("aten.sub." + o, binaryKernel(BinaryOp::Sub, "self", "other", true));
    r.add("aten.mul." + o, binaryKernel(BinaryOp::Mul, "self", "other", false));
    r.add("aten.div." + o, binaryKernel(BinaryOp::Div, "self", "other", false));
    r.add("aten.div." + o + "_mode", divModeKernel());
    r.add("aten.remainder." + o, binaryKernel(BinaryOp::Remainder, "self", "other", false));
    r.add("aten.floor_divide." + std::string(o == "Tensor" ? "default" : "Scalar"),
          binaryKernel(BinaryOp::DivFloor, "self", "other", false));
    r.add("aten.maximum.default", binaryKernel(BinaryOp::Maximum, "self", "other", false));
    r.add("aten.minimum.default", binaryKernel(BinaryOp::Minimum, "self", "other", false));
    r.add("aten.eq." + o, binaryKernel(BinaryOp::Eq, "self", "other", false));
    r.add("aten.ne." + o, binaryKernel(BinaryOp::Ne, "self", "other", false));
    r.add("aten.lt." + o, binaryKernel(BinaryOp::Lt, "self", "other", false));
    r.add("aten.le." + o, binaryKernel(BinaryOp::Le, "self", "other", false));
    r.add("aten.gt." + o, binaryKernel(BinaryOp::Gt, "self", "other", false));
    r.add("aten.ge." + o, binaryKernel(BinaryOp::Ge, "self", "other", false));
  }
  r.add("aten.pow.Tensor_Scalar", binaryKernel(BinaryOp::Pow, "self", "exponent", false));
  r.add("aten.pow.Tensor_Tensor", binaryKernel(BinaryOp::Pow, "self", "exponent", false));
  r.add("aten.pow.Scalar", binaryKernel(BinaryOp::Pow, "self", "exponent", false));
  r.add("aten.neg.default", unaryKernel(UnaryOp::Neg));
  r.add("aten.abs.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    if (x.dtype() == DType::Bool) // AT_DISPATCH_ALL_TYPES... has no bool case
      return a.error("\"abs_cpu\" not implemented for 'Bool'");
    return one(unary(UnaryOp::Abs, x));
  });
  r.add("aten.round.default", unaryKernel(UnaryOp::Round));
  r.add("aten.rsqrt.default", unaryKernel(UnaryOp::Rsqrt));
  r.add("aten.sqrt.default", unaryKernel(UnaryOp::Sqrt));
  r.add("aten.exp.default", unaryKernel(UnaryOp::Exp));
  r.add("aten.reciprocal.default", unaryKernel(UnaryOp::Reciprocal));
  r.add("aten.relu.default", unaryKernel(UnaryOp::Relu));
  r.add("aten.sigmoid.default", unaryKernel(UnaryOp::Sigmoid));
  r.add("aten.silu.default", unaryKernel(UnaryOp::Silu));
  r.add("aten.gelu.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    std::string approx = a.string("approximate");
    if (approx.empty() || approx == "none")
      return one(unary(UnaryOp::GeluErf, x));
    if (approx == "tanh")
      return one(unary(UnaryOp::GeluTanh, x));
    return a.error("gelu: approximate must be 'none' or 'tanh', got '" + approx + "'");
  });
  r.add("aten.clamp.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    auto lo = optionalNumberArg(a, "min");
    auto hi = optionalNumberArg(a, "max");
    if (!lo && !hi)
      return a.error("torch.clamp: At least one of 'min' or 'max' must not be None");
    return checkedClamp(a, x, lo, hi);
  });
  r.add("aten.hardtanh.default", [](const KernelArgs &a) -> Results {
    // Activation.cpp hardtanh_out: clamp_out with both bounds, which an
    // integral self takes as ints (toLong) so that they never promote it.
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    if (x.dtype() == DType::Bool)
      return a.error("Bool inputs not supported for hardtanh");
    auto lo = optionalNumberArg(a, "min_val");
    auto hi = optionalNumberArg(a, "max_val");
    if (!lo || !hi)
      return a.error("hardtanh: min_val and max_val must be numbers");
    if (isIntegral(x.dtype())) {
      for (Number *b : {&*lo, &*hi}) {
        if (b->kind != Number::Kind::Float)
          continue;
        // Scalar::toLong's checked conversion: [-2^63, 2^63), NaN rejected.
        constexpr double kTwo63 = 9223372036854775808.0;
        if (!(b->f >= -kTwo63 && b->f < kTwo63))
          return a.error("hardtanh: bound " + std::to_string(b->f) +
                         " cannot be converted to type int64_t without overflow");
        *b = Number::fromInt(static_cast<int64_t>(b->f));
      }
      if (x.dtype() == DType::U8 && (lo->i < 0 || hi->i < 0))
        return a.error("cannot do hardtanh on an unsigned type with negative limits");
    }
    return checkedClamp(a, x, lo, hi);
  });
  r.add("aten.where.self", [](const KernelArgs &a) -> Results {
    const Tensor &c = a.tensor("condition");
    if (!c.defined())
      return a.error("argument 'condition' is not a tensor");
    // where_self_out: uint8 is converted with a deprecation warning.
    if (c.dtype() != DType::Bool && c.dtype() != DType::U8)
      return a.error("where expected condition to be a boolean tensor, but got a tensor with "
                     "dtype " +
                     std::string(name(c.dtype())));
    GRAFT_TRY(Tensor t, where(c, operand(a, "self"), operand(a, "other")));
    return one(std::move(t));
  });
}

} // namespace graft::interp
