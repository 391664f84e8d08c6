//===- ElementwiseKernels.cpp - aten arithmetic and activation kernels ----===//
//
// add/sub/mul/div (all overloads and rounding modes), neg, pow, rsqrt, sqrt
// and the activations. All of them go through TorchOps' binary()/unary(),
// which implement torch's type promotion, broadcasting and opmath rounding
// (f16/bf16 compute in f32 and round once; f32 in f32; f64 in f64).
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

namespace graft::interp {

namespace {

Kernel binaryKernel(BinaryOp op, const char *self, const char *other, bool hasAlpha) {
  return [=](const KernelArgs &a) -> Results {
    double alpha = 1.0;
    if (hasAlpha)
      if (auto al = a.optionalNumber("alpha"))
        alpha = *al;
    Operand lhs = operand(a, self), rhs = operand(a, other);
    if (lhs.isTensor && !lhs.tensor.defined())
      return a.error(std::string("argument '") + self + "' is not a tensor or number");
    if (rhs.isTensor && !rhs.tensor.defined())
      return a.error(std::string("argument '") + other + "' is not a tensor or number");
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
  r.add("aten.abs.default", unaryKernel(UnaryOp::Abs));
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
    return one(clamp(a.tensor("self"), optionalNumberArg(a, "min"), optionalNumberArg(a, "max")));
  });
  r.add("aten.where.self", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor t, where(a.tensor("condition"), operand(a, "self"), operand(a, "other")));
    return one(std::move(t));
  });
}

} // namespace graft::interp
