//===- TorchaoQuantKernels.cpp - torchao affine quantization primitives ---===//
//
// torchao.quantize_affine / dequantize_affine / choose_qparams_affine /
// fake_quantize_affine, transcribed op by op from
// torchao/quantization/quant_primitives.py (pytorch/ao 36027d82, 2026-08-21)
// so each intermediate is rounded where PyTorch rounds it:
//
//   quantize:   q = clamp(round(x * (1.0 / scale)) + zp, qmin, qmax).to(dtype)
//               (1.0 / scale is scale.reciprocal(), rounded to scale's dtype;
//                x * that promotes: bf16 x with f32 scale computes in f32)
//   dequantize: dq = (q.to(out) - zp.to(out)) * scale, then .to(out)
//   choose_qparams: amin/amax per block, min(.,0)/max(.,0), scale per
//               mapping type, clamp(scale, min=eps), zero point rounded and
//               clamped; eps defaults to finfo(input dtype).smallest_normal.
//
// The legacy signatures (with zero_point_domain, and preserve_zero for
// choose_qparams) follow torchao before PR #2149 (04fb45091~1): INT
// dequantizes through int32, NONE ignores the zero point, FLOAT is the
// tinygemm mid-point domain, and choose_qparams' eps defaults to finfo.eps.
// See docs/numerics.md.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cmath>

namespace graft::interp {

namespace {

bool isTorchaoFp8(DType d) {
  return d == DType::F8E4M3FN || d == DType::F8E5M2 || d == DType::F8E4M3FNUZ ||
         d == DType::F8E5M2FNUZ;
}

bool isTorchaoQuantDType(DType d) {
  switch (d) {
  case DType::U8:
  case DType::I8:
  case DType::I16:
  case DType::I32:
    return true;
  default:
    return isSubByteUnsigned(d) || (isSignedIntegral(d) && bitWidth(d) < 8);
  }
}

/// finfo(dtype).max of the float8 formats torchao accepts as quant dtypes.
int64_t fp8Max(DType d) {
  switch (d) {
  case DType::F8E4M3FN:
    return 448;
  case DType::F8E4M3FNUZ:
    return 240;
  default:
    return 57344; // e5m2, e5m2fnuz
  }
}

Number qnum(int64_t v) {
  return Number::fromInt(v);
}

/// The quant range as Python numbers (user-given ones keep their kind).
struct QRange {
  int64_t min, max;
  Number minNum, maxNum;
};

Expected<QRange> quantRange(const KernelArgs &a, DType dtype, const char *minName = "quant_min",
                            const char *maxName = "quant_max") {
  auto mn = optionalNumberArg(a, minName);
  auto mx = optionalNumberArg(a, maxName);
  GRAFT_TRY(auto r, checkedQuantRange(dtype, mn, mx));
  return QRange{r.first, r.second, mn.value_or(qnum(r.first)), mx.value_or(qnum(r.second))};
}

/// Zero-point domain of a legacy signature ("INT", "FLOAT", "NONE"); the
/// current signature is always INT.
Expected<std::string> zeroPointDomain(const KernelArgs &a) {
  if (!hasArg(a, "zero_point_domain"))
    return std::string("INT");
  if (a.isNone("zero_point_domain"))
    return std::string("NONE");
  std::string d = a.string("zero_point_domain");
  // Accept the enum spelling ZeroPointDomain.INT too.
  if (auto dot = d.rfind('.'); dot != std::string::npos)
    d = d.substr(dot + 1);
  if (d != "INT" && d != "FLOAT" && d != "NONE")
    return a.error("zero_point_domain must be INT, FLOAT or NONE, got '" + d + "'");
  return d;
}

/// _quantize_affine_no_dtype_cast and its tinygemm / no-zero-point siblings:
/// the quantized values, still in floating point.
Expected<Tensor> quantizeNoCast(const Tensor &input, const std::vector<int64_t> &blockSize,
                                const Tensor &scale0, const Tensor *zeroPoint0, const QRange &r,
                                const std::string &domain) {
  if (input.dtype() != DType::F32 && input.dtype() != DType::F16 && input.dtype() != DType::BF16)
    return Diagnostic::error("Unsupported input dtype: " + std::string(name(input.dtype())) +
                             " (quantize_affine takes f32, f16 or bf16)");
  GRAFT_TRY(ReductionParams rp, reductionParams(blockSize, input.sizes()));
  GRAFT_TRY(Tensor x, reshape(input, rp.shapeForReduction));
  GRAFT_TRY(Tensor scale, reshape(scale0, rp.shapeAfterReduction));
  std::optional<Tensor> zp;
  if (zeroPoint0 && zeroPoint0->numel() > 0) {
    GRAFT_TRY(Tensor z, reshape(*zeroPoint0, rp.shapeAfterReduction));
    zp = z;
  }
  Tensor q;
  if (domain == "FLOAT") {
    // mid_point = (qmax + qmin + 1) / 2; min_val = zp - scale * mid_point
    // q = clamp(round((x - min_val) / scale), qmin, qmax)
    if (!zp)
      return Diagnostic::error("the FLOAT zero-point domain needs a zero point");
    double mid = static_cast<double>(r.max + r.min + 1) / 2.0;
    GRAFT_TRY(Tensor sm, mul(scale, Operand::num(mid)));
    GRAFT_TRY(Tensor minVal, sub(*zp, sm));
    GRAFT_TRY(Tensor shifted, sub(x, minVal));
    GRAFT_TRY(Tensor scaled, div(shifted, scale));
    q = clamp(unary(UnaryOp::Round, scaled), r.minNum, r.maxNum);
  } else {
    GRAFT_TRY(Tensor inv, rdivOne(scale));
    GRAFT_TRY(Tensor scaled, mul(x, inv));
    Tensor rounded = unary(UnaryOp::Round, scaled);
    // Upstream `round(...) + None` raises; graft reads a missing zero point
    // as zero (the NONE domain), which is the only sensible meaning.
    if (zp && domain == "INT") {
      GRAFT_TRY(rounded, add(rounded, *zp));
    }
    q = clamp(rounded, r.minNum, r.maxNum);
  }
  return reshape(q, input.sizes());
}

/// _dequantize_affine_no_dtype_check (current) or its legacy variants.
Expected<Tensor> dequantizeNoCheck(const Tensor &input, const std::vector<int64_t> &blockSize,
                                   const Tensor &scale0, const Tensor *zeroPoint0, const QRange &r,
                                   const std::string &domain, bool legacy, DType out) {
  GRAFT_TRY(ReductionParams rp, reductionParams(blockSize, input.sizes()));
  GRAFT_TRY(Tensor x, reshape(input, rp.shapeForReduction));
  GRAFT_TRY(Tensor scale, reshape(scale0, rp.shapeAfterReduction));
  std::optional<Tensor> zp;
  if (zeroPoint0 && zeroPoint0->numel() > 0) {
    GRAFT_TRY(Tensor z, reshape(*zeroPoint0, rp.shapeAfterReduction));
    zp = z;
  }
  Tensor dq;
  if (domain == "FLOAT") {
    // dequant = (input - mid_point).to(out); dequant *= scale; dequant += zp
    double mid = static_cast<double>(r.max + r.min + 1) / 2.0;
    GRAFT_TRY(Tensor shifted, sub(x, Operand::num(mid)));
    GRAFT_TRY(Tensor scaled, mul(shifted.to(out), scale));
    dq = scaled.to(out); // in-place *= keeps the dtype
    if (zp) {
      GRAFT_TRY(Tensor plus, add(dq, *zp));
      dq = plus.to(out);
    }
  } else if (domain == "NONE") {
    GRAFT_TRY(dq, mul(x.to(out), scale));
  } else if (legacy) {
    // Legacy INT: (input.to(int32) - zp.to(int32)).to(out) * scale.
    Tensor d = x.to(DType::I32);
    if (zp) {
      GRAFT_TRY(d, sub(d, zp->to(DType::I32)));
    }
    GRAFT_TRY(dq, mul(d.to(out), scale));
  } else {
    Tensor d = x.to(out);
    if (zp) {
      GRAFT_TRY(d, sub(d, zp->to(out)));
    }
    GRAFT_TRY(dq, mul(d, scale));
  }
  GRAFT_TRY(Tensor shaped, reshape(dq, input.sizes()));
  return shaped.to(out);
}

Results quantizeAffine(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scale = a.tensor("scale");
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scale"}));
  DType outDType = a.dtype("output_dtype");
  GRAFT_TRY(std::string domain, zeroPointDomain(a));
  GRAFT_TRY(QRange r, quantRange(a, outDType));
  const Tensor *zp = a.optionalTensor("zero_point");
  GRAFT_TRY(Tensor q, quantizeNoCast(x, a.intList("block_size"), scale, zp, r, domain));
  // Sub-byte uint outputs are stored as uint8 (torchao's uintx workaround).
  DType castTo = isSubByteUnsigned(outDType) ? DType::U8 : outDType;
  return one(q.to(castTo));
}

Results dequantizeAffine(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scale = a.tensor("scale");
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scale"}));
  DType inDType = a.dtype("input_dtype");
  if (!isSubByteUnsigned(inDType) && x.dtype() != inDType)
    return a.error("Expected: " + std::string(torchName(inDType)) +
                   ", got: " + std::string(torchName(x.dtype())));
  DType out = a.optionalDType("output_dtype").value_or(DType::F32);
  if (out != DType::F32 && out != DType::F16 && out != DType::BF16)
    return a.error("Unsupported output dtype: " + std::string(torchName(out)));
  GRAFT_TRY(std::string domain, zeroPointDomain(a));
  GRAFT_TRY(QRange r, quantRange(a, inDType));
  bool legacy = hasArg(a, "zero_point_domain");
  GRAFT_TRY(Tensor dq, dequantizeNoCheck(x, a.intList("block_size"), scale,
                                         a.optionalTensor("zero_point"), r, domain, legacy, out));
  return one(dq);
}

Results fakeQuantizeAffine(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  const Tensor &scale = a.tensor("scale");
  GRAFT_CHECK_OK(requireTensors(a, {"input", "scale"}));
  std::string qd = pickArg(a, {"quant_dtype", "target_dtype", "output_dtype", "dtype"});
  if (qd.empty())
    return a.error("the schema has no quant dtype argument");
  DType quantDType = a.dtype(qd);
  GRAFT_TRY(std::string domain, zeroPointDomain(a));
  GRAFT_TRY(QRange r, quantRange(a, quantDType));
  const Tensor *zp = a.optionalTensor("zero_point");
  std::vector<int64_t> block = a.intList("block_size");
  // _do_fake_quantize_affine: quantize without the dtype cast, then
  // dequantize to the input's dtype (current INT dequantize path).
  GRAFT_TRY(Tensor q, quantizeNoCast(x, block, scale, zp, r, domain));
  GRAFT_TRY(Tensor dq, dequantizeNoCheck(q, block, scale, zp, r, domain, false, x.dtype()));
  return one(dq);
}

Results chooseQParamsAffine(const KernelArgs &a) {
  const Tensor &input = a.tensor("input");
  bool legacy = hasArg(a, "zero_point_domain") || hasArg(a, "preserve_zero");
  // The legacy signature may pass min_val/max_val instead of the input.
  const Tensor *givenMin = legacy ? a.optionalTensor("min_val") : nullptr;
  const Tensor *givenMax = legacy ? a.optionalTensor("max_val") : nullptr;
  if (!input.defined() && !(givenMin && givenMax))
    return a.error("expects tensor 'input' (or, in the legacy signature, 'min_val' and 'max_val')");
  const Tensor &ref = input.defined() ? input : *givenMin;
  if (!isFloatingPoint(ref.dtype()))
    return a.error("input must be floating point, got " + std::string(name(ref.dtype())));
  DType target = a.dtype("target_dtype");
  GRAFT_TRY(QRange r, quantRange(a, target));
  std::string mapping = a.string("mapping_type");
  if (auto dot = mapping.rfind('.'); dot != std::string::npos)
    mapping = mapping.substr(dot + 1);
  if (mapping != "SYMMETRIC" && mapping != "SYMMETRIC_NO_CLIPPING_ERR" && mapping != "ASYMMETRIC")
    return a.error("Unsupported mapping type: " + mapping);
  DType scaleDType =
      a.isNone("scale_dtype") ? ref.dtype() : a.optionalDType("scale_dtype").value_or(ref.dtype());
  std::optional<DType> zpDType;
  if (!a.isNone("zero_point_dtype"))
    zpDType = a.optionalDType("zero_point_dtype");
  // eps: finfo(input.dtype).smallest_normal now; finfo.eps before #2149.
  double eps;
  if (auto e = a.optionalNumber("eps"); e && !a.isNone("eps")) {
    eps = *e;
  } else {
    switch (ref.dtype()) {
    case DType::F16:
      eps = legacy ? 0x1.0p-10 : 0x1.0p-14;
      break;
    case DType::BF16:
      eps = legacy ? 0x1.0p-7 : 0x1.0p-126;
      break;
    case DType::F64:
      eps = legacy ? 0x1.0p-52 : 0x1.0p-1022;
      break;
    default:
      eps = legacy ? 0x1.0p-23 : 0x1.0p-126;
      break;
    }
  }
  bool preserveZero = !hasArg(a, "preserve_zero") || a.boolean("preserve_zero");
  GRAFT_TRY(std::string domain, zeroPointDomain(a));
  bool keepdim = hasArg(a, "keepdim") && a.boolean("keepdim");
  std::vector<int64_t> block = a.intList("block_size");
  Tensor minVal, maxVal;
  if (input.defined()) {
    GRAFT_TRY(ReductionParams rp, reductionParams(block, input.sizes()));
    GRAFT_TRY(Tensor x, reshape(input, rp.shapeForReduction));
    GRAFT_TRY(minVal, reduce(ReduceOp::Amin, x, rp.reductionDims, keepdim));
    GRAFT_TRY(maxVal, reduce(ReduceOp::Amax, x, rp.reductionDims, keepdim));
  } else {
    if (givenMin->dtype() != givenMax->dtype())
      return a.error("Expecting `min_val` and `max_val` to have the same dtype");
    minVal = *givenMin;
    maxVal = *givenMax;
  }
  Tensor minNeg = minVal, maxPos = maxVal;
  if (preserveZero) {
    Tensor zeros = Tensor::empty(minVal.dtype(), minVal.sizes());
    GRAFT_TRY(minNeg, binary(BinaryOp::Minimum, minVal, zeros));
    GRAFT_TRY(maxPos, binary(BinaryOp::Maximum, maxVal, zeros));
  }
  double qmin = static_cast<double>(r.min), qmax = static_cast<double>(r.max);
  Tensor scale;
  std::optional<Tensor> zp;
  Number clampLo = Number::fromDouble(eps);
  if (mapping != "ASYMMETRIC") {
    if (!preserveZero)
      return a.error("preserve_zero == False is not supported for symmetric quantization");
    if (domain == "FLOAT")
      return a.error("zero_point_domain should be INT or NONE for symmetric quantization");
    if (mapping == "SYMMETRIC") {
      GRAFT_TRY(Tensor m, binary(BinaryOp::Maximum, unary(UnaryOp::Neg, minNeg), maxPos));
      GRAFT_TRY(scale, div(m, Operand::num((qmax - qmin) / 2.0)));
    } else {
      GRAFT_TRY(Tensor smin, div(minNeg, Operand::num(qmin)));
      GRAFT_TRY(Tensor smax, div(maxPos, Operand::num(qmax)));
      GRAFT_TRY(Tensor mask, binary(BinaryOp::Gt, smin, smax));
      GRAFT_TRY(scale, where(mask, smin, smax));
    }
    if (domain != "NONE") {
      // torch.full_like(scale, int((qmax + qmin + 1) / 2)): Python's int()
      // truncates toward zero.
      int64_t mid = static_cast<int64_t>(std::trunc((qmax + qmin + 1.0) / 2.0));
      Tensor z = Tensor::empty(scale.dtype(), scale.sizes());
      for (int64_t i = 0, n = z.numel(); i < n; ++i)
        z.setDouble(i, castValue(static_cast<double>(mid), z.dtype()));
      zp = z;
    }
    scale = clamp(scale, clampLo, std::nullopt);
  } else {
    GRAFT_TRY(Tensor range, sub(maxPos, minNeg));
    GRAFT_TRY(scale, div(range, Operand::num(qmax - qmin)));
    scale = clamp(scale, clampLo, std::nullopt);
    if (domain == "INT") {
      // zero_point = quant_min - round(min_val_neg / scale), clamped.
      GRAFT_TRY(Tensor ratio, div(minNeg, scale));
      GRAFT_TRY(Tensor z, sub(Operand(qnum(r.min)), unary(UnaryOp::Round, ratio)));
      zp = clamp(z, qnum(r.min), qnum(r.max));
      if (!zpDType)
        zpDType = DType::I32;
    } else if (domain == "FLOAT") {
      // tinygemm: zero_point = min_val_neg + scale * mid_point
      double mid = (qmax + qmin + 1.0) / 2.0;
      GRAFT_TRY(Tensor sm, mul(scale, Operand::num(mid)));
      GRAFT_TRY(Tensor z, add(minNeg, sm));
      zp = z;
    }
  }
  if (keepdim && input.defined()) {
    std::vector<int64_t> outShape;
    for (std::size_t i = 0; i < block.size(); ++i) {
      if (block[i] == 0)
        return a.error("block_size entries must be nonzero");
      outShape.push_back(input.sizes()[i] / block[i]);
    }
    GRAFT_TRY(scale, reshape(scale, outShape));
    if (zp) {
      GRAFT_TRY(Tensor z, reshape(*zp, outShape));
      zp = z;
    }
  }
  if (!zp)
    return a.error("this zero_point_domain produces no zero point, which graft cannot return as a "
                   "tensor");
  DType zpTarget = zpDType.value_or(zp->dtype());
  Tensor zpOut = zp->to(zpTarget);
  return std::vector<RuntimeValue>{scale.to(scaleDType), zpOut};
}

} // namespace

Expected<ReductionParams> reductionParams(const std::vector<int64_t> &blockSize,
                                          const std::vector<int64_t> &inputSize) {
  if (blockSize.size() != inputSize.size())
    return Diagnostic::error("block_size has " + std::to_string(blockSize.size()) +
                             " entries for an input of rank " + std::to_string(inputSize.size()));
  ReductionParams rp;
  int64_t cur = 0;
  for (std::size_t i = 0; i < blockSize.size(); ++i) {
    int64_t b = blockSize[i], s = inputSize[i];
    if (b != s && b > 1) {
      if (s % b != 0)
        return Diagnostic::error("Expecting input size at " + std::to_string(i) + " dimension: " +
                                 std::to_string(s) + " to be divisible by block_size at " +
                                 std::to_string(i) + " dimension: " + std::to_string(b));
      rp.shapeForReduction.push_back(s / b);
      rp.shapeForReduction.push_back(b);
      rp.reductionDims.push_back(cur + 1);
      cur += 2;
    } else {
      // block == size (or -1, which torchao's test `!= 1` also reduces) or 1.
      rp.shapeForReduction.push_back(s);
      if (b != 1)
        rp.reductionDims.push_back(cur);
      cur += 1;
    }
  }
  rp.shapeAfterReduction = rp.shapeForReduction;
  for (int64_t d : rp.reductionDims)
    rp.shapeAfterReduction[static_cast<std::size_t>(d)] = 1;
  return rp;
}

Expected<std::pair<int64_t, int64_t>> checkedQuantRange(DType dtype, std::optional<Number> qmin,
                                                        std::optional<Number> qmax) {
  int64_t lo, hi;
  if (isTorchaoFp8(dtype)) {
    lo = -fp8Max(dtype);
    hi = fp8Max(dtype);
  } else if (isTorchaoQuantDType(dtype)) {
    auto b = integerBounds(dtype);
    lo = b->first;
    hi = b->second;
  } else {
    return Diagnostic::error("Unsupported dtype: " + std::string(torchName(dtype)));
  }
  std::optional<int64_t> mnv = qmin ? truncToInt64(std::floor(qmin->toDouble())) : lo;
  std::optional<int64_t> mxv = qmax ? truncToInt64(std::floor(qmax->toDouble())) : hi;
  if (!mnv || !mxv)
    return Diagnostic::error("quant_min/quant_max must be finite integers");
  int64_t mn = *mnv, mx = *mxv;
  if (mn < lo)
    return Diagnostic::error("quant_min out of bound for dtype, quant_min_lower_bound: " +
                             std::to_string(lo) + " quant_min: " + std::to_string(mn));
  if (mx > hi)
    return Diagnostic::error("quant_max out of bound for dtype, quant_max_upper_bound: " +
                             std::to_string(hi) + " quant_max: " + std::to_string(mx));
  return std::make_pair(mn, mx);
}

Expected<std::pair<int64_t, int64_t>> torchaoQuantRange(DType dtype, int64_t quantMin,
                                                        int64_t quantMax) {
  return checkedQuantRange(dtype, Number::fromInt(quantMin), Number::fromInt(quantMax));
}

Expected<Tensor> torchaoDequantizeAffine(const Tensor &input, const std::vector<int64_t> &blockSize,
                                         const Tensor &scale, const Tensor *zeroPoint,
                                         DType inputDType, int64_t quantMin, int64_t quantMax,
                                         DType outputDType) {
  GRAFT_TRY(auto range, torchaoQuantRange(inputDType, quantMin, quantMax));
  QRange r{range.first, range.second, qnum(range.first), qnum(range.second)};
  return dequantizeNoCheck(input, blockSize, scale, zeroPoint, r, "INT", false, outputDType);
}

Expected<Tensor> torchaoQuantizeAffine(const Tensor &input, const std::vector<int64_t> &blockSize,
                                       const Tensor &scale, const Tensor *zeroPoint,
                                       DType outputDType, int64_t quantMin, int64_t quantMax) {
  GRAFT_TRY(auto range, torchaoQuantRange(outputDType, quantMin, quantMax));
  QRange r{range.first, range.second, qnum(range.first), qnum(range.second)};
  GRAFT_TRY(Tensor q, quantizeNoCast(input, blockSize, scale, zeroPoint, r, "INT"));
  return q.to(isSubByteUnsigned(outputDType) ? DType::U8 : outputDType);
}

void registerTorchaoQuantKernels(KernelRegistry &r) {
  r.add("torchao.quantize_affine.default", quantizeAffine);
  r.add("torchao.dequantize_affine.default", dequantizeAffine);
  r.add("torchao.choose_qparams_affine.default", chooseQParamsAffine);
  r.add("torchao.fake_quantize_affine.default", fakeQuantizeAffine);
}

} // namespace graft::interp
