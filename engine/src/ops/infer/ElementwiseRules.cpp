//===- ElementwiseRules.cpp - Inference for pointwise ops -----------------===//
//
// Unary ops, broadcasting binary ops with torch's type promotion (including
// Python-scalar operands), softmax, dtype conversions and factory ops. Shapes
// broadcast right-aligned; dtypes follow torch.result_type, then the op's own
// rule (true division and the float-only unary functions turn integer results
// into the default float dtype).
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"

namespace graft::infer {

namespace {

// Shape/proto of an operand that may be a tensor or a wrapped scalar.
const TensorProto *operandTensor(const Argument &a) {
  if (a.isValue() && a.value()->isTensor())
    return &a.value()->proto();
  return nullptr;
}

// Broadcast + promote over the named operands (tensors or scalars).
Expected<std::pair<Shape, DType>> broadcastOperands(const InferContext &ctx,
                                                    std::initializer_list<const char *> names) {
  TypePromotion tp;
  Shape shape;
  bool first = true;
  for (const char *n : names) {
    const Argument &a = ctx.arg(n);
    if (const TensorProto *t = operandTensor(a)) {
      tp.addTensor(*t);
      if (first) {
        shape = t->shape;
        first = false;
      } else {
        auto b = broadcastShapes(shape, t->shape);
        if (!b)
          return ctx.error("shapes " + shapeStr(shape) + " and " + shapeStr(t->shape) +
                           " cannot be broadcast together");
        shape = *b;
      }
    } else if (!a.isNone()) {
      tp.addScalar(a);
    }
  }
  auto dt = tp.result();
  if (!dt)
    return ctx.error("no operand determines the result dtype");
  return std::make_pair(shape, *dt);
}

const TensorProto *firstTensor(const InferContext &ctx, std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (const TensorProto *t = operandTensor(ctx.arg(n)))
      return t;
  return nullptr;
}

Results binaryRule(const InferContext &ctx) {
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"self", "other"}));
  return one(tensorResult(sd.second, sd.first, firstTensor(ctx, {"self", "other"})));
}

// True division: integer (and bool) results become the default float dtype.
Results divRule(const InferContext &ctx) {
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"self", "other"}));
  DType dt = sd.second;
  const Argument &mode = ctx.arg("rounding_mode");
  bool trueDiv = mode.isNone();
  if (mode.isString() && mode.string() != "trunc" && mode.string() != "floor")
    return ctx.error("rounding_mode must be 'trunc', 'floor' or None, got '" + mode.string() + "'");
  if (trueDiv && !isFloatingPoint(dt) && !isComplex(dt))
    dt = kDefaultFloat;
  return one(tensorResult(dt, sd.first, firstTensor(ctx, {"self", "other"})));
}

// maximum / minimum: binary promotion; torch has no complex kernel
// ("maximum not implemented for complex tensors").
Results minMaxRule(const InferContext &ctx) {
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"self", "other"}));
  if (isComplex(sd.second))
    return ctx.error("not implemented for complex tensors");
  return one(tensorResult(sd.second, sd.first, firstTensor(ctx, {"self", "other"})));
}

// where.self(condition, self, other): condition is bool (uint8 is accepted
// with a deprecation warning, as torch does); the three shapes broadcast and
// the dtype is result_type(self, other).
Results whereRule(const InferContext &ctx) {
  const TensorProto &c = ctx.tensor("condition");
  if (c.dtype != DType::Bool && c.dtype != DType::U8)
    return ctx.error("where expected condition to be a boolean tensor, but got a tensor with "
                     "dtype " +
                     std::string(name(c.dtype)));
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"self", "other"}));
  auto shape = broadcastShapes(c.shape, sd.first);
  if (!shape)
    return ctx.error("condition " + shapeStr(c.shape) + " and operands " + shapeStr(sd.first) +
                     " cannot be broadcast together");
  return one(tensorResult(sd.second, *shape, firstTensor(ctx, {"self", "other"})));
}

// abs: the input's dtype. torch has no bool kernel ("abs_cpu" not
// implemented for 'Bool'), and complex abs (a real result) is not modelled.
Results absRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (t.dtype == DType::Bool || isComplex(t.dtype))
    return ctx.error("abs is not implemented for " + std::string(name(t.dtype)) + " tensors");
  return one(tensorResult(t.dtype, t.shape, &t));
}

Results powRule(const InferContext &ctx) {
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"self", "exponent"}));
  return one(tensorResult(sd.second, sd.first, firstTensor(ctx, {"self", "exponent"})));
}

Results sameAsInput(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  return one(tensorResult(t.dtype, t.shape, &t));
}

// sqrt, rsqrt, sigmoid, ...: integer and bool inputs compute in the default float dtype.
Results unaryFloat(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  DType dt = isFloatingPoint(t.dtype) || isComplex(t.dtype) ? t.dtype : kDefaultFloat;
  return one(tensorResult(dt, t.shape, &t));
}

// clamp(self, min?, max?): self's shape; torch promotes self with the bounds
// (wrapped scalars), so a floating self keeps its dtype and an integral self
// clamped by float bounds becomes the default float dtype.
Results clampRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (ctx.arg("min").isNone() && ctx.arg("max").isNone())
    return ctx.error("torch.clamp: At least one of 'min' or 'max' must not be None");
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"self", "min", "max"}));
  return one(tensorResult(sd.second, t.shape, &t));
}

// hardtanh (Activation.cpp hardtanh_out): self's dtype, the bounds never
// promote (an integral self truncates them to ints); bool is rejected, and a
// uint8 self with a negative bound.
Results hardtanhRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (t.dtype == DType::Bool)
    return ctx.error("Bool inputs not supported for hardtanh");
  if (t.dtype == DType::U8)
    for (const char *b : {"min_val", "max_val"}) {
      const Argument &a = ctx.arg(b);
      // toLong truncates toward zero: a float bound is negative from -1 on.
      if ((a.isInt() && a.integer() < 0) || (a.isFloat() && a.floating() <= -1.0))
        return ctx.error("cannot do hardtanh on an unsigned type with negative limits");
    }
  return one(tensorResult(t.dtype, t.shape, &t));
}

// silu, gelu: float-only functions (torch rejects integer inputs).
Results floatOnly(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (!isFloatingPoint(t.dtype))
    return ctx.error("expects a floating-point input, got " + std::string(name(t.dtype)));
  if (const Argument *a = ctx.args.find("approximate"))
    if (a->isString() && a->string() != "none" && a->string() != "tanh")
      return ctx.error("approximate must be 'none' or 'tanh', got '" + a->string() + "'");
  return one(tensorResult(t.dtype, t.shape, &t));
}

Results softmaxRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  GRAFT_CHECK_OK(dimArg(ctx, "dim", t.rank()));
  DType dt = t.dtype;
  if (auto d = ctx.dtype("dtype"))
    dt = *d;
  bool halfToFloat = false;
  if (ctx.args.has("half_to_float")) {
    GRAFT_TRY(halfToFloat, boolArg(ctx, "half_to_float"));
  }
  if (halfToFloat) {
    if (t.dtype != DType::F16 && t.dtype != DType::BF16)
      return ctx.error("half_to_float=True needs a half-precision input, got " +
                       std::string(name(t.dtype)));
    dt = DType::F32;
  }
  if (!isFloatingPoint(dt))
    return ctx.error("softmax needs a floating-point dtype, got " + std::string(name(dt)));
  return one(tensorResult(dt, t.shape, &t));
}

Results toCopyRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  DType dt = ctx.dtype("dtype").value_or(t.dtype);
  InferredResult r = tensorResult(dt, t.shape, &t);
  const Argument &dev = ctx.arg("device");
  if (dev.kind() == Argument::Kind::Device)
    r.proto.device = dev.device();
  if (const Argument *order = ctx.args.find("dim_order"); order && order->isList()) {
    auto ints = order->intList();
    std::vector<bool> seen(static_cast<std::size_t>(t.rank()), false);
    bool ok = ints && static_cast<int64_t>(ints->size()) == t.rank();
    for (int64_t d : ints.value_or(std::vector<int64_t>{})) {
      ok = ok && d >= 0 && d < t.rank() && !seen[static_cast<std::size_t>(d)];
      if (ok)
        seen[static_cast<std::size_t>(d)] = true;
    }
    if (!ok)
      return ctx.error("dim_order must be a permutation of 0.." + std::to_string(t.rank() - 1));
  }
  return one(std::move(r));
}

// aten.full: dtype from the kwarg, else from the fill value's Python type.
Results fullRule(const InferContext &ctx) {
  auto sizes = ctx.dims("size");
  if (!sizes)
    return ctx.error("size must be a list of ints or SymInts");
  for (const Dim &d : *sizes)
    if (d.isConstant() && d.constant() < 0)
      return ctx.error("size " + shapeStr(*sizes) + " has a negative dimension");
  DType dt;
  if (auto d = ctx.dtype("dtype")) {
    dt = *d;
  } else {
    const Argument &v = ctx.arg("fill_value");
    TypePromotion tp;
    tp.addScalar(v);
    dt = tp.result().value_or(kDefaultFloat);
  }
  InferredResult r = tensorResult(dt, *sizes);
  const Argument &dev = ctx.arg("device");
  if (dev.kind() == Argument::Kind::Device)
    r.proto.device = dev.device();
  return one(std::move(r));
}

// et_vk.rms_norm(x, weight, eps): x's shape and dtype; weight covers the last dim.
Results rmsNormRule(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("x");
  const TensorProto &w = ctx.tensor("weight");
  if (x.rank() == 0)
    return ctx.error("x must have at least one dimension");
  if (w.rank() != 1 || !mayBeEqual(w.shape[0], x.shape.back()))
    return ctx.error("weight " + shapeStr(w.shape) +
                     " must be 1-D of size x.shape[-1] = " + x.shape.back().str());
  if (!isFloatingPoint(x.dtype))
    return ctx.error("x must be floating point, got " + std::string(name(x.dtype)));
  return one(tensorResult(x.dtype, x.shape, &x));
}

// et_vk.swiglu(gate, up): gate and up broadcast like aten.mul (ET-VK runs it
// as a binary op); upstream fuses only when both share one dtype, f16 or f32.
Results swigluRule(const InferContext &ctx) {
  const TensorProto &gate = ctx.tensor("gate");
  const TensorProto &up = ctx.tensor("up");
  if (gate.dtype != up.dtype || (gate.dtype != DType::F32 && gate.dtype != DType::F16))
    return ctx.error("gate and up must share one dtype, f16 or f32; got " +
                     std::string(name(gate.dtype)) + " and " + std::string(name(up.dtype)));
  GRAFT_TRY(auto sd, broadcastOperands(ctx, {"gate", "up"}));
  return one(tensorResult(sd.second, sd.first, &gate));
}

// What both rotary ops ask of their operands before their own dim checks: xq
// and xk 4-D [batch, seq, heads, head_dim], freqs_cos and freqs_sin 2-D of one
// shape (`tableDims` says what the table dims mean for the op at hand).
Status checkRotaryOperands(const InferContext &ctx, const char *tableDims) {
  for (const char *n : {"xq", "xk"}) {
    const TensorProto &t = ctx.tensor(n);
    if (t.rank() != 4)
      return ctx.error("xq and xk must be 4-D [batch, seq, heads, head_dim], got " +
                       shapeStr(t.shape));
  }
  const TensorProto &cos = ctx.tensor("freqs_cos");
  const TensorProto &sin = ctx.tensor("freqs_sin");
  if (!cos.sameShapeAndDType(sin) || cos.rank() != 2)
    return ctx.error("freqs_cos and freqs_sin must be 2-D " + std::string(tableDims) +
                     " of one shape, got " + shapeStr(cos.shape) + " and " + shapeStr(sin.shape));
  return okStatus();
}

// Both rotary ops return (xq', xk'), each shaped and typed like its input.
Results rotaryResults(const TensorProto &xq, const TensorProto &xk) {
  std::vector<InferredResult> out;
  out.push_back(tensorResult(xq.dtype, xq.shape, &xq));
  out.push_back(tensorResult(xk.dtype, xk.shape, &xk));
  return out;
}

// et_vk.apply_rotary_emb(xq, xk, freqs_cos, freqs_sin) -> (xq', xk').
Results rotaryRule(const InferContext &ctx) {
  GRAFT_CHECK_OK(checkRotaryOperands(ctx, "[seq, head_dim/2]"));
  const TensorProto &xq = ctx.tensor("xq");
  const TensorProto &xk = ctx.tensor("xk");
  const TensorProto &cos = ctx.tensor("freqs_cos");
  if (!mayBeEqual(xq.shape[3], xk.shape[3]) || !mayBeEqual(cos.shape[1] * 2, xq.shape[3]))
    return ctx.error("head_dim mismatch: xq " + shapeStr(xq.shape) + ", xk " + shapeStr(xk.shape) +
                     ", freqs " + shapeStr(cos.shape));
  return rotaryResults(xq, xk);
}

// et_vk.apply_rotary_emb_hf(xq, xk, freqs_cos, freqs_sin, start_pos) -> (xq', xk'):
// xq and xk [B, S, H, D] share S and D (ExecuTorch's Vulkan kernel checks the
// same, backends/vulkan/runtime/graph/ops/impl/RotaryEmbedding.cpp); the
// tables are the whole [max_seq, R] tables, R even and at most D (the rest of
// the head passes through). Whether start_pos + S rows exist is checked at run
// time.
Results rotaryHfRule(const InferContext &ctx) {
  GRAFT_CHECK_OK(checkRotaryOperands(ctx, "[max_seq, rotary_dim]"));
  const TensorProto &xq = ctx.tensor("xq");
  const TensorProto &xk = ctx.tensor("xk");
  const TensorProto &cos = ctx.tensor("freqs_cos");
  if (!mayBeEqual(xq.shape[1], xk.shape[1]) || !mayBeEqual(xq.shape[3], xk.shape[3]))
    return ctx.error("xq " + shapeStr(xq.shape) + " and xk " + shapeStr(xk.shape) +
                     " must have the same seq and head_dim");
  const Dim &r = cos.shape[1];
  const Dim &d = xq.shape[3];
  if (r.isConstant() && (r.constant() % 2 != 0 || (d.isConstant() && r.constant() > d.constant())))
    return ctx.error("rotary_dim " + r.str() + " (freqs " + shapeStr(cos.shape) +
                     ") must be even and at most head_dim " + d.str());
  return rotaryResults(xq, xk);
}

} // namespace

void registerElementwiseRules(InferenceRules &rules) {
  rules.add("binary", binaryRule);
  rules.add("div", divRule);
  rules.add("pow", powRule);
  rules.add("min_max", minMaxRule);
  rules.add("where", whereRule);
  rules.add("abs", absRule);
  rules.add("same_as_input", sameAsInput);
  rules.add("unary_float", unaryFloat);
  rules.add("float_only", floatOnly);
  rules.add("clamp", clampRule);
  rules.add("hardtanh", hardtanhRule);
  rules.add("softmax", softmaxRule);
  rules.add("to_copy", toCopyRule);
  rules.add("full", fullRule);
  rules.add("rms_norm", rmsNormRule);
  rules.add("swiglu", swigluRule);
  rules.add("rotary_emb", rotaryRule);
  rules.add("rotary_emb_hf", rotaryHfRule);
}

} // namespace graft::infer
