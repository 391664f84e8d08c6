//===- DecomposedQuantKernels.cpp - quantized_decomposed ops --------------===//
//
// The quantized_decomposed library, transcribed op by op from
// torch/ao/quantization/fx/_decomposed.py (pytorch 6661d4b6) and, for
// embedding_4bit, ExecuTorch exir/passes/_quant_patterns_and_replacements.py
// (executorch cff6f4dd). Details that decide the bits:
//
//  * quantize_per_tensor: f16/bf16 inputs are upcast to f32; the scale is a
//    Python float, inv_scale = 1.0 / scale is computed in double and then
//    cast to f32 when it multiplies the f32 tensor; clamp after + zp.
//  * quantize_per_channel/per_token/per_channel_group: `1.0 / scales` is
//    scales.reciprocal() in the scales' dtype; per-token scales are f64, so
//    per-token quantization computes in f64 (f32 input * f64 scales).
//  * quantize_per_token rounds AFTER adding the zero point (x*(1/s) + zp,
//    round, clamp); the others round before adding it.
//  * dequantize_per_tensor: (x.to(out) - zp) * scale in the output dtype;
//    dequantize_per_channel: (x - zp) * s with integer subtraction first;
//    dequantize_per_token: ((x - zp) * s) in f64, then .to(output_dtype).
//  * embedding_4bit: even column = byte div 16 (HIGH nibble), odd = byte
//    mod 16, minus 8, then dequantize_per_channel_group and embedding.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cmath>

namespace graft::interp {

namespace {

Expected<Tensor> mul(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Mul, a, b);
}
Expected<Tensor> sub(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Sub, a, b);
}
Expected<Tensor> add(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Add, a, b);
}

Expected<Tensor> rdivOne(const Tensor &t) {
  return mul(unary(UnaryOp::Reciprocal, t), Operand::num(1.0));
}

/// _decomposed.py _quant_min_max_bounds_check.
Status boundsCheck(const KernelArgs &a, int64_t qmin, int64_t qmax, DType dtype) {
  int64_t lo, hi;
  switch (dtype) {
  case DType::U8:
  case DType::I8:
  case DType::U16:
  case DType::I16:
  case DType::I32:
    lo = integerBounds(dtype)->first;
    hi = integerBounds(dtype)->second;
    break;
  case DType::F8E5M2:
    lo = -57344;
    hi = 57344;
    break;
  case DType::F8E4M3FN:
    lo = -448;
    hi = 448;
    break;
  default:
    return a.error("Unsupported dtype: " + std::string(torchName(dtype)));
  }
  if (qmin < lo)
    return a.error("quant_min out of bound for dtype, quant_min_lower_bound: " +
                   std::to_string(lo) + " quant_min: " + std::to_string(qmin));
  if (qmax > hi)
    return a.error("quant_max out of bound for dtype, quant_max_upper_bound: " +
                   std::to_string(hi) + " quant_max: " + std::to_string(qmax));
  return okStatus();
}

Expected<Tensor> upcastToF32(const KernelArgs &a, const Tensor &x) {
  if (!x.defined())
    return a.error("expects tensor 'input'");
  Tensor in = (x.dtype() == DType::F16 || x.dtype() == DType::BF16) ? x.to(DType::F32) : x;
  if (in.dtype() != DType::F32)
    return a.error("Expecting input to have dtype torch.float32, but got dtype: " +
                   std::string(torchName(x.dtype())));
  return in;
}

/// Shape [1, ..., C at axis, ..., 1] used to broadcast per-channel params
/// (equivalent to upstream's permute-to-axis-0 and back for elementwise
/// math).
Expected<Tensor> channelView(const KernelArgs &a, const Tensor &p, int64_t axis, int64_t rank,
                             const char *what) {
  std::vector<int64_t> shape(static_cast<std::size_t>(rank), 1);
  shape[static_cast<std::size_t>(axis)] = p.rank() == 0 ? 1 : p.size(0);
  auto v = reshape(p, shape);
  if (!v.ok())
    return a.error(std::string(what) + " of shape [" + std::to_string(p.numel()) +
                   " elements] cannot be viewed per channel: " + v.diags()[0].message);
  return v;
}

Results quantizePerTensorImpl(const KernelArgs &a, double scale, int64_t zp) {
  GRAFT_TRY(Tensor x, upcastToF32(a, a.tensor("input")));
  int64_t qmin = a.integer("quant_min"), qmax = a.integer("quant_max");
  DType dtype = a.dtype("dtype");
  GRAFT_CHECK_OK(boundsCheck(a, qmin, qmax, dtype));
  GRAFT_TRY(Tensor q, quantizePerTensorF32(x, scale, zp, qmin, qmax, dtype));
  return one(q);
}

Results dequantizePerTensorImpl(const KernelArgs &a, double scale, int64_t zp) {
  const Tensor &x = a.tensor("input");
  if (!x.defined())
    return a.error("expects tensor 'input'");
  DType dtype = a.dtype("dtype");
  if (x.dtype() != dtype)
    return a.error("Expecting input to have dtype: " + std::string(torchName(dtype)) +
                   ", but got " + std::string(torchName(x.dtype())));
  switch (dtype) {
  case DType::U8:
  case DType::I8:
  case DType::U16:
  case DType::I16:
  case DType::I32:
  case DType::F8E5M2:
  case DType::F8E4M3FN:
    break;
  default:
    return a.error("Unsupported dtype in dequantize_per_tensor: " + std::string(torchName(dtype)));
  }
  std::string od = pickArg(a, {"out_dtype", "output_dtype"});
  DType out = (od.empty() || a.isNone(od)) ? DType::F32 : a.dtype(od);
  GRAFT_TRY(Tensor d, sub(x.to(out), Operand::integer(zp)));
  GRAFT_TRY(Tensor r, mul(d, Operand::num(scale)));
  return one(r);
}

/// `.item()` of a one-element tensor argument.
Expected<double> itemOf(const KernelArgs &a, const char *name) {
  const Tensor &t = a.tensor(name);
  if (!t.defined() || t.numel() != 1)
    return a.error(std::string("Expecting ") + name + " tensor to be one element, but received : " +
                   std::to_string(t.defined() ? t.numel() : 0));
  return t.getDouble(0);
}

Expected<int64_t> intItemOf(const KernelArgs &a, const char *name) {
  const Tensor &t = a.tensor(name);
  if (!t.defined() || t.numel() != 1)
    return a.error(std::string("Expecting ") + name + " tensor to be one element, but received : " +
                   std::to_string(t.defined() ? t.numel() : 0));
  return isFloatingPoint(t.dtype()) ? static_cast<int64_t>(t.getDouble(0)) : t.getInt(0);
}

Results quantizePerChannel(const KernelArgs &a) {
  GRAFT_TRY(Tensor x, upcastToF32(a, a.tensor("input")));
  const Tensor &scales = a.tensor("scales");
  const Tensor &zps = a.tensor("zero_points");
  if (!scales.defined() || !zps.defined())
    return a.error("expects tensors 'scales' and 'zero_points'");
  int64_t axis = a.integer("axis");
  if (axis >= x.rank() || axis < -x.rank())
    return a.error("Expecting axis to be < " + std::to_string(x.rank()));
  if (axis < 0)
    axis += x.rank();
  int64_t qmin = a.integer("quant_min"), qmax = a.integer("quant_max");
  DType dtype = a.dtype("dtype");
  GRAFT_CHECK_OK(boundsCheck(a, qmin, qmax, dtype));
  GRAFT_TRY(Tensor s, channelView(a, scales, axis, x.rank(), "scales"));
  GRAFT_TRY(Tensor z, channelView(a, zps, axis, x.rank(), "zero_points"));
  GRAFT_TRY(Tensor inv, rdivOne(s));
  GRAFT_TRY(Tensor t, mul(x, inv));
  GRAFT_TRY(Tensor shifted, add(unary(UnaryOp::Round, t), z));
  Tensor q = clamp(shifted, Number::fromInt(qmin), Number::fromInt(qmax));
  return one(q.to(dtype));
}

Results dequantizePerChannel(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scales = a.tensor("scales");
  if (!x.defined() || !scales.defined())
    return a.error("expects tensors 'input' and 'scales'");
  DType dtype = a.dtype("dtype");
  if (x.dtype() != dtype)
    return a.error("Expecting input to have dtype " + std::string(torchName(dtype)) +
                   ", but got dtype: " + std::string(torchName(x.dtype())));
  std::string od = pickArg(a, {"out_dtype", "output_dtype"});
  DType out = (od.empty() || a.isNone(od)) ? DType::F32 : a.dtype(od);
  int64_t axis = a.integer("axis");
  if (axis >= x.rank() || axis < -x.rank())
    return a.error("Expecting axis to be < " + std::to_string(x.rank()));
  if (axis < 0)
    axis += x.rank();
  GRAFT_CHECK_OK(boundsCheck(a, a.integer("quant_min"), a.integer("quant_max"), dtype));
  GRAFT_TRY(Tensor s, channelView(a, scales, axis, x.rank(), "scales"));
  Tensor res;
  if (const Tensor *zps = a.optionalTensor("zero_points")) {
    GRAFT_TRY(Tensor z, channelView(a, *zps, axis, x.rank(), "zero_points"));
    GRAFT_TRY(Tensor d, sub(x, z));
    GRAFT_TRY(res, mul(d, s));
  } else {
    GRAFT_TRY(res, mul(x, s));
  }
  return one(res.to(out));
}

/// dequantize_per_channel_group's body, shared with embedding_4bit.
Expected<Tensor> dequantPerChannelGroup(const KernelArgs &a, const Tensor &w, const Tensor &scales,
                                        const Tensor *zps, int64_t groupSize, DType out) {
  if (groupSize <= 1)
    return a.error("group_size must be > 1, got " + std::to_string(groupSize));
  if (w.rank() != 2)
    return a.error("expects a 2-D quantized tensor, got rank " + std::to_string(w.rank()));
  if (groupSize > w.size(-1) && scales.rank() > 0 && scales.size(-1) == 1)
    groupSize = w.size(-1); // GPTQ single-column case
  if (w.size(-1) % groupSize != 0)
    return a.error("the last dim " + std::to_string(w.size(-1)) +
                   " is not a multiple of group_size " + std::to_string(groupSize));
  GRAFT_TRY(Tensor g, reshape(w, {-1, groupSize}));
  auto sv = reshape(scales, {-1, 1});
  if (!sv.ok())
    return a.error("scales cannot be viewed as [-1, 1]");
  Tensor zp;
  if (zps) {
    GRAFT_TRY(zp, reshape(*zps, {-1, 1}));
  } else {
    zp = Tensor::empty(DType::I32, {}); // torch.zeros([], dtype=torch.int32)
  }
  GRAFT_TRY(Tensor d, sub(g, zp));
  auto m = mul(d, *sv);
  if (!m.ok())
    return a.error("scales " + std::to_string(scales.numel()) +
                   " elements do not match the groups: " + m.diags()[0].message);
  GRAFT_TRY(Tensor shaped, reshape(*m, w.sizes()));
  return shaped.to(out);
}

Results dequantizePerChannelGroup(const KernelArgs &a) {
  const Tensor &w = a.tensor("input");
  const Tensor &scales = a.tensor("scales");
  if (!w.defined() || !scales.defined())
    return a.error("expects tensors 'input' and 'scales'");
  DType out = a.optionalDType("output_dtype").value_or(DType::F32);
  GRAFT_TRY(Tensor r, dequantPerChannelGroup(a, w, scales, a.optionalTensor("zero_points"),
                                             a.optionalInteger("group_size").value_or(128), out));
  return one(r);
}

Results chooseQParamsPerTokenAsymmetric(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  if (!x.defined())
    return a.error("expects tensor 'input'");
  if (!isFloatingPoint(x.dtype()))
    return a.error("input must be floating point");
  const double qmin = -128, qmax = 127;
  GRAFT_TRY(Tensor minVal, reduce(ReduceOp::Amin, x, {-1}, true));
  GRAFT_TRY(Tensor maxVal, reduce(ReduceOp::Amax, x, {-1}, true));
  Tensor zeros = Tensor::empty(minVal.dtype(), minVal.sizes());
  GRAFT_TRY(Tensor minNeg, binary(BinaryOp::Minimum, minVal, zeros));
  GRAFT_TRY(Tensor maxPos, binary(BinaryOp::Maximum, maxVal, zeros));
  const double eps = 0x1.0p-23; // torch.finfo(torch.float32).eps
  GRAFT_TRY(Tensor range, sub(maxPos, minNeg));
  GRAFT_TRY(Tensor scale0, binary(BinaryOp::Div, range, Operand::num(qmax - qmin)));
  Tensor scale = clamp(scale0, Number::fromDouble(eps), std::nullopt);
  GRAFT_TRY(Tensor descaledMin, binary(BinaryOp::Div, minNeg, scale));
  GRAFT_TRY(Tensor descaledMax, binary(BinaryOp::Div, maxPos, scale));
  GRAFT_TRY(Tensor fromMin, add(descaledMin, Operand::integer(-128)));
  GRAFT_TRY(Tensor fromMax, add(descaledMax, Operand::integer(127)));
  GRAFT_TRY(Tensor total, add(fromMin, fromMax));
  GRAFT_TRY(Tensor cond, binary(BinaryOp::Gt, total, Operand::integer(0)));
  GRAFT_TRY(Tensor zpMin, sub(Operand::integer(-128), descaledMin));
  GRAFT_TRY(Tensor zpMax, sub(Operand::integer(127), descaledMax));
  GRAFT_TRY(Tensor zp0, where(cond, zpMin, zpMax));
  Tensor zp = unary(UnaryOp::Round, clamp(zp0, Number::fromInt(-128), Number::fromInt(127)));
  return std::vector<RuntimeValue>{scale.to(DType::F64), zp.to(DType::I64)};
}

Status perTokenDimCheck(const KernelArgs &a, const Tensor &x, const Tensor &scales,
                        const Tensor &zps) {
  int64_t tokens = 1;
  for (int64_t i = 0; i + 1 < x.rank(); ++i)
    tokens *= x.size(i);
  if (scales.numel() != tokens)
    return a.error("num_tokens: " + std::to_string(tokens) +
                   " scales: " + std::to_string(scales.numel()) + " elements");
  if (zps.numel() != tokens)
    return a.error("num_tokens: " + std::to_string(tokens) +
                   " zero_points: " + std::to_string(zps.numel()) + " elements");
  return okStatus();
}

Results quantizePerToken(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scales = a.tensor("scales");
  const Tensor &zps = a.tensor("zero_points");
  if (!x.defined() || !scales.defined() || !zps.defined())
    return a.error("expects tensors 'input', 'scales' and 'zero_points'");
  int64_t qmin = a.integer("quant_min"), qmax = a.integer("quant_max");
  DType dtype = a.dtype("dtype");
  GRAFT_CHECK_OK(boundsCheck(a, qmin, qmax, dtype));
  GRAFT_CHECK_OK(perTokenDimCheck(a, x, scales, zps));
  // input.mul(1.0 / scales).add(zero_points).round().clamp(qmin, qmax)
  GRAFT_TRY(Tensor inv, rdivOne(scales));
  GRAFT_TRY(Tensor t, mul(x, inv));
  GRAFT_TRY(Tensor shifted, add(t, zps));
  Tensor q = clamp(unary(UnaryOp::Round, shifted), Number::fromInt(qmin), Number::fromInt(qmax));
  return one(q.to(dtype));
}

Results quantizePerChannelGroup(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scales = a.tensor("scales");
  const Tensor &zps = a.tensor("zero_points");
  if (!x.defined() || !scales.defined() || !zps.defined())
    return a.error("expects tensors 'input', 'scales' and 'zero_points'");
  int64_t groupSize = a.optionalInteger("group_size").value_or(128);
  if (groupSize <= 1)
    return a.error("group_size must be > 1, got " + std::to_string(groupSize));
  if (x.rank() != 2)
    return a.error("expects a 2-D input, got rank " + std::to_string(x.rank()));
  if (groupSize > x.size(-1) && scales.rank() > 0 && scales.size(-1) == 1)
    groupSize = x.size(-1);
  if (x.size(-1) % groupSize != 0)
    return a.error("the last dim " + std::to_string(x.size(-1)) +
                   " is not a multiple of group_size " + std::to_string(groupSize));
  GRAFT_TRY(Tensor g, reshape(x, {-1, groupSize}));
  for (int64_t i = 0, n = g.numel(); i < n; ++i)
    if (std::isnan(g.getDouble(i)))
      return a.error("input contains NaN");
  GRAFT_TRY(Tensor s, reshape(scales, {-1, 1}));
  GRAFT_TRY(Tensor z, reshape(zps, {-1, 1}));
  // to_quant.mul(1.0 / scales).add(zero_points).round().clamp_(qmin, qmax)
  GRAFT_TRY(Tensor inv, rdivOne(s));
  GRAFT_TRY(Tensor t, mul(g, inv));
  GRAFT_TRY(Tensor shifted, add(t, z));
  Tensor q = clamp(unary(UnaryOp::Round, shifted), Number::fromInt(a.integer("quant_min")),
                   Number::fromInt(a.integer("quant_max")));
  GRAFT_TRY(Tensor out, reshape(q.to(a.dtype("dtype")), x.sizes()));
  return one(out);
}

Results dequantizePerToken(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scales = a.tensor("scales");
  const Tensor &zps = a.tensor("zero_points");
  if (!x.defined() || !scales.defined() || !zps.defined())
    return a.error("expects tensors 'input', 'scales' and 'zero_points'");
  DType out = a.optionalDType("output_dtype").value_or(DType::F32);
  GRAFT_TRY(Tensor d, sub(x, zps));
  GRAFT_TRY(Tensor r, mul(d, scales));
  return one(r.to(out));
}

/// embedding_weight_checks in _quant_patterns_and_replacements.py.
Status embeddingWeightChecks(const KernelArgs &a, const Tensor &w, const Tensor &s,
                             const Tensor *zp) {
  if (w.dtype() != DType::I8 && w.dtype() != DType::U8)
    return a.error("Expecting weights to be of dtype in [torch.int8, torch.uint8], but got " +
                   std::string(torchName(w.dtype())));
  if (w.rank() != 2)
    return a.error("Expecting weight tensor to have dim()==2, but found " +
                   std::to_string(w.rank()));
  if (s.dtype() != DType::F16 && s.dtype() != DType::F32 && s.dtype() != DType::BF16)
    return a.error("Expecting weight_scales to be of dtype in [torch.float16, torch.float32, "
                   "torch.bfloat16], but got " +
                   std::string(torchName(s.dtype())));
  if (s.rank() != 1 && s.rank() != 2)
    return a.error("Expecting weight_scales tensor to have rank 1 or 2, but found " +
                   std::to_string(s.rank()));
  if (s.size(0) != w.size(0))
    return a.error("Expecting weight and scale tensor to have same number of rows");
  if (zp) {
    if (zp->dtype() != s.dtype())
      return a.error("Expecting weight_zero_points to be None or have same dtype as weight_scales");
    if (zp->rank() != 1 && zp->rank() != 2)
      return a.error("Expecting weight_zero_points tensor to be None or have dim()==1");
    if (zp->size(0) != w.size(0))
      return a.error("Expecting weight_zero_points tensor to be None or have same number of rows "
                     "as weights");
  }
  return okStatus();
}

Results embedding4bit(const KernelArgs &a, bool hasDType) {
  const Tensor &w = a.tensor("weight");
  const Tensor &s = a.tensor("weight_scales");
  const Tensor &idx = a.tensor("indices");
  if (!w.defined() || !s.defined() || !idx.defined())
    return a.error("expects tensors 'weight', 'weight_scales' and 'indices'");
  if (a.integer("weight_quant_min") != -8)
    return a.error("embedding_4bit in ExecuTorch expects weight_quant_min == -8");
  if (a.integer("weight_quant_max") != 7)
    return a.error("embedding_4bit in ExecuTorch expects weight_quant_max == 7");
  const Tensor *zp = a.optionalTensor("weight_zero_points");
  GRAFT_CHECK_OK(embeddingWeightChecks(a, w, s, zp));
  int64_t groupSize = (2 * w.size(1)) / (s.rank() == 2 ? s.size(1) : 1);
  // weight.div(16, rounding_mode="trunc") is the HIGH nibble: even column.
  GRAFT_TRY(Tensor even, binary(BinaryOp::DivTrunc, w, Operand::integer(16)));
  GRAFT_TRY(Tensor odd, binary(BinaryOp::Remainder, w, Operand::integer(16)));
  GRAFT_TRY(Tensor st, stack({even, odd}, -1));
  GRAFT_TRY(Tensor unpacked, reshape(st, {w.size(0), -1}));
  // .view(torch.int8): reinterpret the bytes, then .add(-8) in int8.
  Tensor asInt8(DType::I8, unpacked.sizes(), copy(unpacked).storage());
  GRAFT_TRY(Tensor centered, binary(BinaryOp::Add, asInt8, Operand::integer(-8)));
  DType out = s.dtype();
  if (hasDType && !a.isNone("dtype")) {
    // .dtype with dtype=None: upstream's eager dequantize call would reject
    // None; graft uses the scales' dtype, as the .default overload and the
    // registry's shape rule do.
    out = a.dtype("dtype");
  }
  GRAFT_TRY(Tensor dq, dequantPerChannelGroup(a, centered, s, zp, groupSize, out));
  if (!isIntegral(idx.dtype()))
    return a.error("indices must be an integer tensor");
  std::vector<int64_t> outSizes = idx.sizes();
  int64_t D = dq.size(1), V = dq.size(0);
  outSizes.push_back(D);
  Tensor result = Tensor::empty(dq.dtype(), outSizes);
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    int64_t row = idx.getInt(i);
    if (row < 0 || row >= V)
      return a.error("index " + std::to_string(row) + " is out of range for " + std::to_string(V) +
                     " rows");
    for (int64_t j = 0; j < D; ++j)
      result.setDouble(i * D + j, dq.getDouble(row * D + j));
  }
  return one(result);
}

} // namespace

Expected<Tensor> quantizePerTensorF32(const Tensor &x, double scale, int64_t zeroPoint,
                                      int64_t qmin, int64_t qmax, DType dtype) {
  double invScale = 1.0 / scale; // Python float arithmetic (double)
  GRAFT_TRY(Tensor t, mul(x, Operand::num(invScale)));
  GRAFT_TRY(Tensor shifted, add(unary(UnaryOp::Round, t), Operand::integer(zeroPoint)));
  Tensor q = clamp(shifted, Number::fromInt(qmin), Number::fromInt(qmax));
  return q.to(dtype);
}

void registerDecomposedQuantKernels(KernelRegistry &r) {
  const std::string ns = "quantized_decomposed.";
  r.add(ns + "quantize_per_tensor.default", [](const KernelArgs &a) -> Results {
    return quantizePerTensorImpl(a, a.number("scale"), a.integer("zero_point"));
  });
  r.add(ns + "quantize_per_tensor.tensor", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(double s, itemOf(a, "scale"));
    GRAFT_TRY(int64_t z, intItemOf(a, "zero_point"));
    return quantizePerTensorImpl(a, s, z);
  });
  r.add(ns + "dequantize_per_tensor.default", [](const KernelArgs &a) -> Results {
    return dequantizePerTensorImpl(a, a.number("scale"), a.integer("zero_point"));
  });
  r.add(ns + "dequantize_per_tensor.tensor", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(double s, itemOf(a, "scale"));
    GRAFT_TRY(int64_t z, intItemOf(a, "zero_point"));
    return dequantizePerTensorImpl(a, s, z);
  });
  r.add(ns + "quantize_per_channel.default", quantizePerChannel);
  r.add(ns + "dequantize_per_channel.default", dequantizePerChannel);
  r.add(ns + "quantize_per_channel_group.default", quantizePerChannelGroup);
  r.add(ns + "dequantize_per_channel_group.default", dequantizePerChannelGroup);
  r.add(ns + "choose_qparams_per_token_asymmetric.default", chooseQParamsPerTokenAsymmetric);
  r.add(ns + "quantize_per_token.default", quantizePerToken);
  r.add(ns + "dequantize_per_token.default", dequantizePerToken);
  r.add(ns + "embedding_4bit.default", [](const KernelArgs &a) { return embedding4bit(a, false); });
  r.add(ns + "embedding_4bit.dtype", [](const KernelArgs &a) { return embedding4bit(a, true); });
}

} // namespace graft::interp
