//===- DecomposedQuantKernels.cpp - quantized_decomposed ops --------------===//
//
// The quantized_decomposed library, transcribed op by op from
// torch/ao/quantization/fx/_decomposed.py (pytorch 6661d4b6) and, for
// embedding_byte/_2bit/_4bit, ExecuTorch exir/passes/_quant_patterns_and_replacements.py
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
//    mod 16, minus 8, then dequantize_per_channel_group and embedding;
//    embedding_2bit: four values per byte, LOWEST bits first, minus 2;
//    embedding_byte: the stored int8/uint8 values as they are.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <algorithm>
#include <cmath>

namespace graft::interp {

namespace {

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
  GRAFT_CHECK_OK(requireTensors(a, {"input"}));
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
  GRAFT_CHECK_OK(requireTensors(a, {"scales", "zero_points"}));
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
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scales"}));
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
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scales"}));
  DType out = a.optionalDType("output_dtype").value_or(DType::F32);
  GRAFT_TRY(Tensor r, dequantPerChannelGroup(a, w, scales, a.optionalTensor("zero_points"),
                                             a.optionalInteger("group_size").value_or(128), out));
  return one(r);
}

Results chooseQParamsPerTokenAsymmetric(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  GRAFT_CHECK_OK(requireTensors(a, {"input"}));
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

/// choose_qparams.tensor / choose_qparams_symmetric.tensor: the per-tensor qparams
/// PT2E's convert writes for a dynamically quantized activation (torchao
/// quantization/pt2e/convert.py, _QSCHEME_TO_CHOOSE_QPARAMS_OP; ExecuTorch's
/// VulkanQuantizer and XNNPACKQuantizer with is_dynamic=True): aminmax of the input,
/// then torch.ao.quantization.utils.determine_qparams with has_customized_qrange=False.
/// Each step rounds where torch does: min(min, 0), max(max, 0) and the scale division
/// in the input's dtype; torch.max against the 1-element f32 eps tensor makes the scale
/// f32 (an f16/bf16 0-d tensor does not win promotion over a 1-d f32 one), and so the
/// zero point's division; scale f64 [1], zero point i64 [1].
Results chooseQParamsPerTensor(const KernelArgs &a, bool symmetric) {
  const Tensor &x = a.tensor("input");
  GRAFT_CHECK_OK(requireTensors(a, {"input"}));
  const DType in = x.dtype();
  if (in != DType::F32 && in != DType::F16 && in != DType::BF16)
    return a.error("Expecting input to have dtype torch.float32/16/b16, but got dtype: " +
                   std::string(torchName(in)));
  const DType target = a.dtype("dtype");
  if (target != DType::U8 && target != DType::I8 && target != DType::U16 && target != DType::I16 &&
      target != DType::I32)
    return a.error("Expecting target dtype to be one of uint8, int8, uint16, int16, int32, "
                   "but got: " +
                   std::string(torchName(target)));
  const int64_t qmin = a.integer("quant_min"), qmax = a.integer("quant_max");
  // validate_qmin_qmax (torch/ao/quantization/utils.py)
  if (!(qmin <= 0 && 0 <= qmax))
    return a.error("User-specified quantization range must include 0.");
  if (!(qmin < qmax))
    return a.error("qmin must be strictly less than qmax for user-specified quantization range.");
  if (x.numel() == 0)
    return a.error("aminmax(): cannot compute aminmax over an empty tensor");
  double mn = x.getDouble(0), mx = mn;
  for (int64_t i = 1, n = x.numel(); i < n; ++i) {
    const double v = x.getDouble(i);
    if (std::isnan(v) || std::isnan(mn)) {
      mn = mx = v + mn; // NaN propagates through aminmax
      continue;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  if (!(mn <= mx)) // check_min_max_valid's assert (NaN included)
    return a.error("min " + std::to_string(mn) + " should be less than max " + std::to_string(mx));
  auto inDType = [in](double v) {
    return in == DType::F32 ? static_cast<double>(static_cast<float>(v))
                            : static_cast<double>(roundToDType(static_cast<float>(v), in));
  };
  // One rounding from the exact double result (innocuous double rounding: f32
  // opmath, then f16/bf16, as torch's CPU kernels do).
  const double minNeg = std::min(mn, 0.0), maxPos0 = std::max(mx, 0.0);
  const float eps = static_cast<float>(a.number("eps"));
  double scale;
  int64_t zp = 0;
  if (symmetric) {
    const double maxPos = std::max(-minNeg, maxPos0);
    scale = inDType(maxPos / (static_cast<double>(qmax - qmin) / 2.0));
    scale = std::max(static_cast<float>(scale), eps);
    if (target == DType::U8)
      zp = 128;
  } else {
    scale = inDType(inDType(maxPos0 - minNeg) / static_cast<double>(qmax - qmin));
    scale = std::max(static_cast<float>(scale), eps);
    const float descaled = static_cast<float>(minNeg / scale);
    zp = qmin - static_cast<int64_t>(std::nearbyint(descaled)); // round half even
    zp = std::clamp(zp, qmin, qmax);
  }
  Tensor s = Tensor::empty(DType::F64, {1});
  s.setDouble(0, scale);
  Tensor z = Tensor::empty(DType::I64, {1});
  z.setInt(0, zp);
  return std::vector<RuntimeValue>{s, z};
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
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scales", "zero_points"}));
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
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scales", "zero_points"}));
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
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scales", "zero_points"}));
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

/// 2-bit unpacking of embedding_2bit: element k of a byte is (b & (3 << 2k)) >> 2k,
/// computed as torch does in the weight's own dtype (an int8 weight keeps its sign
/// through the arithmetic shift), then .view(torch.int8).add(-2).
Tensor unpack2Bit(const Tensor &w) {
  const bool isSigned = w.dtype() == DType::I8;
  Tensor out = Tensor::empty(DType::I8, {w.size(0), w.size(1) * 4});
  for (int64_t i = 0, n = w.numel(); i < n; ++i) {
    const auto byte = static_cast<uint8_t>(w.getInt(i));
    for (int k = 0; k < 4; ++k) {
      const auto masked = static_cast<uint8_t>(byte & (3u << (2 * k)));
      const int64_t field = isSigned ? static_cast<int8_t>(masked) >> (2 * k) : masked >> (2 * k);
      // .view(torch.int8) of a uint8 field in [0, 3] keeps its value.
      out.setInt(i * 4 + k, static_cast<int8_t>(field - 2));
    }
  }
  return out;
}

/// embedding_byte for 8-bit values, embedding_<bits>bit for packed ones.
std::string embeddingOpName(int bitsPerValue) {
  return bitsPerValue == 8 ? "embedding_byte" : "embedding_" + std::to_string(bitsPerValue) + "bit";
}

/// embedding_byte / embedding_2bit / embedding_4bit (.dtype): unpack the weight
/// to int8 values (bitsPerValue 8: as stored), then dequantize_per_channel_group
/// and aten.embedding, as _quant_patterns_and_replacements.py does.
Results embeddingQuantized(const KernelArgs &a, bool hasDType, int bitsPerValue) {
  const Tensor &w = a.tensor("weight");
  const Tensor &s = a.tensor("weight_scales");
  const Tensor &idx = a.tensor("indices");
  GRAFT_CHECK_OK(requireTensors(a, {"weight", "weight_scales", "indices"}));
  const std::string op = embeddingOpName(bitsPerValue);
  if (bitsPerValue < 8) {
    const int64_t qmin = -(int64_t{1} << (bitsPerValue - 1)), qmax = -qmin - 1;
    if (a.integer("weight_quant_min") != qmin)
      return a.error(op + " in ExecuTorch expects weight_quant_min == " + std::to_string(qmin));
    if (a.integer("weight_quant_max") != qmax)
      return a.error(op + " in ExecuTorch expects weight_quant_max == " + std::to_string(qmax));
  }
  const Tensor *zp = a.optionalTensor("weight_zero_points");
  GRAFT_CHECK_OK(embeddingWeightChecks(a, w, s, zp));
  const int64_t perByte = 8 / bitsPerValue;
  int64_t groupSize = (perByte * w.size(1)) / (s.rank() == 2 ? s.size(1) : 1);
  Tensor centered = w; // embedding_byte dequantizes the stored values
  if (bitsPerValue == 2) {
    centered = unpack2Bit(w);
  } else if (bitsPerValue == 4) {
    // weight.div(16, rounding_mode="trunc") is the HIGH nibble: even column.
    GRAFT_TRY(Tensor even, binary(BinaryOp::DivTrunc, w, Operand::integer(16)));
    GRAFT_TRY(Tensor odd, binary(BinaryOp::Remainder, w, Operand::integer(16)));
    GRAFT_TRY(Tensor st, stack({even, odd}, -1));
    GRAFT_TRY(Tensor unpacked, reshape(st, {w.size(0), -1}));
    // .view(torch.int8): reinterpret the bytes, then .add(-8) in int8.
    Tensor asInt8(DType::I8, unpacked.sizes(), copy(unpacked).storage());
    GRAFT_TRY(centered, binary(BinaryOp::Add, asInt8, Operand::integer(-8)));
  }
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
  r.add(ns + "choose_qparams.tensor",
        [](const KernelArgs &a) { return chooseQParamsPerTensor(a, false); });
  r.add(ns + "choose_qparams_symmetric.tensor",
        [](const KernelArgs &a) { return chooseQParamsPerTensor(a, true); });
  r.add(ns + "quantize_per_token.default", quantizePerToken);
  r.add(ns + "dequantize_per_token.default", dequantizePerToken);
  for (int bits : {2, 4, 8}) {
    const std::string op = ns + embeddingOpName(bits);
    r.add(op + ".default",
          [bits](const KernelArgs &a) { return embeddingQuantized(a, false, bits); });
    r.add(op + ".dtype", [bits](const KernelArgs &a) { return embeddingQuantized(a, true, bits); });
  }
}

} // namespace graft::interp
