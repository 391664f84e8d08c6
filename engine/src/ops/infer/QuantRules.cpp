//===- QuantRules.cpp - Inference for quantization ops --------------------===//
//
// torchao affine primitives (current and legacy `zero_point_domain`
// signatures), quantized_decomposed per-tensor/channel/group/token ops and
// embedding_4bit, and the ET-VK fused quantized linear/embedding ops.
//
// Quantize ops return the input's shape in the requested integer dtype;
// dequantize ops return it in their output dtype (torchao default f32,
// quantized_decomposed per-tensor/per-channel `out_dtype` default f32,
// per-token/per-group an explicit `output_dtype`). choose_qparams ops return
// (scale, zero_point) shaped by the block size. The ET-VK ops take weights in
// their serialized packed layouts (two int4 per byte along K), so the output
// feature count comes from the packed weight's rows.
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"
#include <optional>
#include <utility>

namespace graft::infer {

namespace {

std::string dtName(DType d) {
  return std::string(name(d));
}

bool isFloatIO(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

Status requireFloat(const InferContext &ctx, const TensorProto &t, const char *what) {
  if (!isFloatingPoint(t.dtype))
    return ctx.error(std::string(what) + " must be floating point, got " + dtName(t.dtype));
  return okStatus();
}

Expected<Shape> blockSize(const InferContext &ctx, const TensorProto &t) {
  auto bs = ctx.dims("block_size");
  if (!bs)
    return ctx.error("block_size must be a list of ints");
  if (static_cast<int64_t>(bs->size()) != t.rank())
    return ctx.error("block_size " + shapeStr(*bs) + " must have one entry per input dim (rank " +
                     std::to_string(t.rank()) + ")");
  // -1 is the whole dim: torchao's _get_reduction_params reduces every entry
  // that is neither 1 nor a split (`!= 1`), so -1 covers the dim whatever
  // its size, a symbolic one included.
  for (const Dim &d : *bs)
    if (d.isConstant() && d.constant() <= 0 && d.constant() != -1)
      return ctx.error("block_size " + shapeStr(*bs) + " entries must be positive or -1");
  return *bs;
}

//===-- torchao --------------------------------------------------------===//

Results quantizeAffine(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  GRAFT_CHECK_OK(requireFloat(ctx, x, "input"));
  GRAFT_TRY(Shape bs, blockSize(ctx, x));
  (void)bs;
  auto dt = ctx.dtype("output_dtype");
  if (!dt)
    return ctx.error("output_dtype must be a dtype");
  // torchao stores sub-byte unsigned results in uint8.
  DType out = isSubByteUnsigned(*dt) ? DType::U8 : *dt;
  if (!integerBounds(*dt))
    return ctx.error("output_dtype " + dtName(*dt) + " is not an integer quantization dtype");
  return one(tensorResult(out, x.shape, &x));
}

Results dequantizeAffine(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  GRAFT_TRY(Shape bs, blockSize(ctx, x));
  (void)bs;
  auto in = ctx.dtype("input_dtype");
  if (!in)
    return ctx.error("input_dtype must be a dtype");
  if (!x.quant && !isSubByteUnsigned(*in) && x.dtype != *in)
    return ctx.error("input is " + dtName(x.dtype) + " but input_dtype says " + dtName(*in));
  DType out = ctx.dtype("output_dtype").value_or(DType::F32);
  if (!isFloatIO(out))
    return ctx.error("output_dtype must be f32, f16 or bf16, got " + dtName(out));
  if (ctx.args.has("zero_point_domain")) {
    const Argument &zpd = ctx.arg("zero_point_domain");
    if (zpd.isString() && zpd.string() != "INT" && zpd.string() != "FLOAT" &&
        zpd.string() != "NONE")
      return ctx.error("zero_point_domain must be INT, FLOAT or NONE, got '" + zpd.string() + "'");
  }
  return one(tensorResult(out, x.shape, &x));
}

Results fakeQuantizeAffine(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  GRAFT_CHECK_OK(requireFloat(ctx, x, "input"));
  GRAFT_TRY(Shape bs, blockSize(ctx, x));
  (void)bs;
  return one(tensorResult(x.dtype, x.shape, &x));
}

// Scale/zero-point shape per torchao _get_reduction_params: a dim whose block
// is neither 1 nor the whole dim splits into (size/block, block) and the
// block part is reduced; a whole-dim block (or -1) reduces the dim; block 1 keeps it.
// keepdim=True reshapes to [size_i / block_i] for every dim.
Results chooseQparamsAffine(const InferContext &ctx) {
  const TensorProto *x = ctx.optionalTensor("input");
  if (!x) {
    // Legacy signature: input may be None when min_val/max_val are given.
    const TensorProto *mn = ctx.optionalTensor("min_val");
    if (!mn)
      return ctx.error("needs an input tensor (or min_val/max_val in the legacy signature)");
    DType s = ctx.dtype("scale_dtype").value_or(mn->dtype);
    DType z = ctx.dtype("zero_point_dtype").value_or(mn->dtype);
    std::vector<InferredResult> out;
    out.push_back(tensorResult(s, mn->shape, mn));
    out.push_back(tensorResult(z, mn->shape, mn));
    return out;
  }
  GRAFT_CHECK_OK(requireFloat(ctx, *x, "input"));
  GRAFT_TRY(Shape bs, blockSize(ctx, *x));
  const Argument &mt = ctx.arg("mapping_type");
  std::string mapping = mt.isString() ? mt.string() : std::string();
  if (mapping != "SYMMETRIC" && mapping != "ASYMMETRIC" && mapping != "SYMMETRIC_NO_CLIPPING_ERR")
    return ctx.error("mapping_type must be SYMMETRIC, ASYMMETRIC or SYMMETRIC_NO_CLIPPING_ERR, "
                     "got '" +
                     mapping + "'");
  auto target = ctx.dtype("target_dtype");
  if (!target || !integerBounds(*target))
    return ctx.error("target_dtype must be an integer quantization dtype");
  bool keepdim = false;
  if (ctx.args.has("keepdim")) {
    GRAFT_TRY(keepdim, boolArg(ctx, "keepdim"));
  }
  Shape kept, full;
  bool anyReduced = false;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    const Dim &size = x->shape[i];
    const Dim &b = bs[i];
    if (b.isConstant() && b.constant() == -1) {
      full.push_back(Dim(1));
      anyReduced = true;
      continue;
    }
    if (size == b) {
      full.push_back(Dim(1));
      // A whole-dim block of 1 is a kept dim of size 1; larger ones reduce away.
      if (b.isConstant() && b.constant() == 1)
        kept.push_back(size);
      else
        anyReduced = true;
      continue;
    }
    if (!b.isConstant())
      return ctx.error("symbolic block size " + b.str() + " must equal its dim " + size.str());
    if (b.constant() == 1) {
      full.push_back(size);
      kept.push_back(size);
      continue;
    }
    if (size.isConstant() && size.constant() % b.constant() != 0)
      return ctx.error("dim " + std::to_string(i) + " of size " + size.str() +
                       " is not divisible by block size " + b.str());
    Dim groups =
        size.isConstant() ? Dim(size.constant() / b.constant()) : size.floorDiv(b.constant());
    anyReduced = true;
    full.push_back(groups);
    kept.push_back(groups);
  }
  // amin/amax over an empty dim list reduce everything.
  Shape shape = keepdim ? full : (anyReduced ? kept : Shape{});
  DType scaleDt = ctx.dtype("scale_dtype").value_or(x->dtype);
  DType zpDt;
  if (auto z = ctx.dtype("zero_point_dtype"))
    zpDt = *z;
  else if (ctx.args.isLegacy())
    zpDt = x->dtype; // legacy torchao: zero points default to the input dtype
  else
    // Current torchao: asymmetric defaults to int32; symmetric zero points
    // are built with full_like(scale) and keep the input dtype.
    zpDt = mapping == "ASYMMETRIC" ? DType::I32 : x->dtype;
  std::vector<InferredResult> out;
  out.push_back(tensorResult(scaleDt, shape, x));
  out.push_back(tensorResult(zpDt, shape, x));
  return out;
}

//===-- quantized_decomposed --------------------------------------------===//

// quantize_per_tensor / per_channel / per_token / per_channel_group.
Results qdQuantize(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  GRAFT_CHECK_OK(requireFloat(ctx, x, "input"));
  auto dt = ctx.dtype("dtype");
  if (!dt || !integerBounds(*dt))
    return ctx.error("dtype must be an integer quantization dtype");
  if (ctx.args.has("group_size") && x.rank() != 2)
    return ctx.error("per-channel-group quantization needs a 2-D input, got " + shapeStr(x.shape));
  if (ctx.args.has("axis")) {
    GRAFT_CHECK_OK(dimArg(ctx, "axis", x.rank()));
  }
  return one(tensorResult(*dt, x.shape, &x));
}

// dequantize_per_tensor / per_channel (out_dtype, default f32), per_token /
// per_channel_group (output_dtype, required).
Results qdDequantize(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  auto in = ctx.dtype("dtype");
  if (!in)
    return ctx.error("dtype must be a dtype");
  if (!x.quant && x.dtype != *in)
    return ctx.error("input is " + dtName(x.dtype) + " but dtype says " + dtName(*in));
  DType out = DType::F32;
  if (ctx.args.has("out_dtype"))
    out = ctx.dtype("out_dtype").value_or(DType::F32);
  else if (auto o = ctx.dtype("output_dtype"))
    out = *o;
  if (!isFloatingPoint(out))
    return ctx.error("output dtype must be floating point, got " + dtName(out));
  if (ctx.args.has("group_size") && x.rank() != 2)
    return ctx.error("per-channel-group dequantization needs a 2-D input, got " +
                     shapeStr(x.shape));
  if (ctx.args.has("axis")) {
    GRAFT_CHECK_OK(dimArg(ctx, "axis", x.rank()));
  }
  return one(tensorResult(out, x.shape, &x));
}

// choose_qparams(_symmetric).tensor -> (f64 scale [1], i64 zero_point [1]), as the
// Meta kernels in torch/ao/quantization/fx/_decomposed.py say.
Results chooseQparamsPerTensor(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    return ctx.error("input must be f32, f16 or bf16, got " + dtName(x.dtype));
  GRAFT_TRY(int64_t qmin, intArg(ctx, "quant_min"));
  GRAFT_TRY(int64_t qmax, intArg(ctx, "quant_max"));
  if (!(qmin < qmax))
    return ctx.error("Expecting quant_min to be smaller than quant_max but received min: " +
                     std::to_string(qmin) + " max: " + std::to_string(qmax));
  std::vector<InferredResult> out;
  out.push_back(tensorResult(DType::F64, Shape{Dim(1)}, &x));
  out.push_back(tensorResult(DType::I64, Shape{Dim(1)}, &x));
  return out;
}

// choose_qparams_per_token_asymmetric -> (f64 scale [..., 1], i64 zero_point [..., 1]).
Results chooseQparamsPerToken(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  GRAFT_CHECK_OK(requireFloat(ctx, x, "input"));
  if (x.rank() == 0)
    return ctx.error("input must have at least one dimension");
  Shape s = x.shape;
  s.back() = Dim(1);
  std::vector<InferredResult> out;
  out.push_back(tensorResult(DType::F64, s, &x));
  out.push_back(tensorResult(DType::I64, s, &x));
  return out;
}

// embedding_byte / embedding_2bit / embedding_4bit (.dtype): weight [V, D / perByte]
// (perByte values packed in each byte; 1 for embedding_byte) -> [*indices, D]. The
// packed forms assert their quant range (ExecuTorch
// exir/passes/_quant_patterns_and_replacements.py); embedding_byte does not.
Results embeddingPacked(const InferContext &ctx, const char *op, int64_t perByte,
                        std::optional<std::pair<int64_t, int64_t>> range) {
  const TensorProto &w = ctx.tensor("weight");
  const TensorProto &s = ctx.tensor("weight_scales");
  const TensorProto &idx = ctx.tensor("indices");
  if (w.rank() != 2 || (w.dtype != DType::U8 && w.dtype != DType::I8))
    return ctx.error("weight must be a 2-D uint8/int8 tensor, got " + w.str());
  if (s.rank() < 1 || s.rank() > 2 || !mayBeEqual(s.shape[0], w.shape[0]))
    return ctx.error("weight_scales must be 1-D or 2-D with " + w.shape[0].str() + " rows, got " +
                     shapeStr(s.shape));
  if (!isFloatIO(s.dtype))
    return ctx.error("weight_scales must be f32, f16 or bf16, got " + dtName(s.dtype));
  if (const TensorProto *zp = ctx.optionalTensor("weight_zero_points"); zp && zp->dtype != s.dtype)
    return ctx.error("weight_zero_points must have the scales' dtype " + dtName(s.dtype));
  GRAFT_TRY(int64_t qmin, intArg(ctx, "weight_quant_min"));
  GRAFT_TRY(int64_t qmax, intArg(ctx, "weight_quant_max"));
  if (range && (qmin != range->first || qmax != range->second))
    return ctx.error(std::string(op) +
                     " expects weight_quant_min == " + std::to_string(range->first) +
                     " and weight_quant_max == " + std::to_string(range->second));
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32)
    return ctx.error("indices must be int32 or int64, got " + dtName(idx.dtype));
  DType dt = ctx.dtype("dtype").value_or(s.dtype);
  Shape out = idx.shape;
  out.push_back(w.shape[1] * perByte);
  return one(tensorResult(dt, out, &s));
}

//===-- et_vk ------------------------------------------------------------===//

// Shared by linear_q4gsw / linear_dq8ca_q4gsw / linear_dq8ca_q8csw / linear_qcs4w /
// linear_q8ta_q8csw:
// input [..., K], weight [N, K'] -> [..., N] in the input dtype. `packed`
// weights hold two 4-bit values per byte along K (K may be zero-padded, so
// 2*K' >= K); unpacked int8 weights have K' == K.
Results vkLinear(const InferContext &ctx, const char *inputName, const char *weightName,
                 bool packed) {
  const TensorProto &x = ctx.tensor(inputName);
  const TensorProto &w = ctx.tensor(weightName);
  if (x.rank() == 0)
    return ctx.error(std::string(inputName) + " must have at least one dimension");
  // linear_q8ta_q8csw's activation is the statically quantized int8 tensor
  // itself (the fusion passes the q node's output); it yields f32.
  bool quantizedInput = !packed && x.dtype == DType::I8;
  if (!quantizedInput)
    GRAFT_CHECK_OK(requireFloat(ctx, x, inputName));
  if (w.rank() != 2)
    return ctx.error(std::string(weightName) + " must be 2-D [N, K" + (packed ? "/2" : "") +
                     "], got " + shapeStr(w.shape));
  if (packed && w.dtype != DType::U8 && w.dtype != DType::I8)
    return ctx.error(std::string(weightName) + " must hold packed 4-bit values (uint8), got " +
                     dtName(w.dtype));
  if (!packed && w.dtype != DType::I8)
    return ctx.error(std::string(weightName) + " must be int8, got " + dtName(w.dtype));
  const Dim &k = x.shape.back();
  Dim wk = packed ? w.shape[1] * 2 : w.shape[1];
  if (k.isConstant() && wk.isConstant() &&
      (packed ? wk.constant() < k.constant() : wk.constant() != k.constant()))
    return ctx.error(std::string(inputName) + " " + shapeStr(x.shape) + " has K = " + k.str() +
                     " but " + weightName + " " + shapeStr(w.shape) + " holds K = " + wk.str());
  if (ctx.args.has("group_size")) {
    GRAFT_TRY(int64_t g, intArg(ctx, "group_size"));
    if (g <= 0 || (k.isConstant() && k.constant() % g != 0))
      return ctx.error("group_size " + std::to_string(g) +
                       " must be positive and divide K = " + k.str());
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  return one(tensorResult(quantizedInput ? DType::F32 : x.dtype, out, &x));
}

// q8ta_linear / q8ta_linear_gemv: the int8 activation [..., K] times int8
// weights [N, K] -> int8 [..., N] (the result is requantized). activation is
// "none" or "relu": ET-VK's activation_type_from_string (Q8taConv2d.cpp)
// rejects anything else.
Results vkQ8taLinear(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("x");
  if (x.dtype != DType::I8)
    return ctx.error("x must be the int8 quantized activation, got " + dtName(x.dtype));
  if (const Argument *a = ctx.args.find("activation"))
    if (a->isString() && a->string() != "none" && a->string() != "relu")
      return ctx.error("activation must be 'none' or 'relu', got '" + a->string() + "'");
  GRAFT_CHECK_OK(vkLinear(ctx, "x", "weights", false));
  Shape out = x.shape;
  out.back() = ctx.tensor("weights").shape[0];
  return one(tensorResult(DType::I8, out, &x));
}

// embedding_q4gsw(weight [V, D/2], scales [V, G], group_size, indices) -> [*indices, D].
Results vkEmbedding(const InferContext &ctx) {
  const TensorProto &w = ctx.tensor("weight");
  const TensorProto &s = ctx.tensor("weight_scales");
  const TensorProto &idx = ctx.tensor("indices");
  if (w.rank() != 2 || (w.dtype != DType::U8 && w.dtype != DType::I8))
    return ctx.error("weight must be a 2-D packed uint8 tensor [V, D/2], got " + w.str());
  if (!isFloatIO(s.dtype))
    return ctx.error("weight_scales must be f32, f16 or bf16, got " + dtName(s.dtype));
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32)
    return ctx.error("indices must be int32 or int64, got " + dtName(idx.dtype));
  Dim d = w.shape[1] * 2;
  GRAFT_TRY(int64_t g, intArg(ctx, "group_size"));
  if (g <= 0 || (d.isConstant() && d.constant() % g != 0))
    return ctx.error("group_size " + std::to_string(g) +
                     " must be positive and divide D = " + d.str());
  Shape out = idx.shape;
  out.push_back(d);
  return one(tensorResult(s.dtype, out, &s));
}

} // namespace

void registerQuantRules(InferenceRules &rules) {
  rules.add("quantize_affine", quantizeAffine);
  rules.add("dequantize_affine", dequantizeAffine);
  rules.add("fake_quantize_affine", fakeQuantizeAffine);
  rules.add("choose_qparams_affine", chooseQparamsAffine);
  rules.add("qd_quantize", qdQuantize);
  rules.add("qd_dequantize", qdDequantize);
  rules.add("choose_qparams_per_token_asymmetric", chooseQparamsPerToken);
  rules.add("choose_qparams_per_tensor", chooseQparamsPerTensor);
  rules.add("embedding_byte", [](const InferContext &c) {
    return embeddingPacked(c, "embedding_byte", 1, std::nullopt);
  });
  rules.add("embedding_2bit", [](const InferContext &c) {
    return embeddingPacked(c, "embedding_2bit", 4, std::pair<int64_t, int64_t>{-2, 1});
  });
  rules.add("embedding_4bit", [](const InferContext &c) {
    return embeddingPacked(c, "embedding_4bit", 2, std::pair<int64_t, int64_t>{-8, 7});
  });
  rules.add("vk_linear_q4gsw",
            [](const InferContext &c) { return vkLinear(c, "self", "weights", true); });
  rules.add("vk_linear_dq8ca_q4gsw",
            [](const InferContext &c) { return vkLinear(c, "input", "weights", true); });
  rules.add("vk_linear_dq8ca_q8csw", [](const InferContext &c) -> Results {
    // vkLinear reads an int8 input as q8ta's quantized activation; the dq8ca
    // linears quantize a float input themselves.
    GRAFT_CHECK_OK(requireFloat(c, c.tensor("input"), "input"));
    return vkLinear(c, "input", "weights", false);
  });
  rules.add("vk_linear_qcs4w",
            [](const InferContext &c) { return vkLinear(c, "self", "weight", true); });
  rules.add("vk_linear_q8ta_q8csw",
            [](const InferContext &c) { return vkLinear(c, "x", "weights", false); });
  rules.add("vk_q8ta_linear", vkQ8taLinear);
  rules.add("vk_embedding_q4gsw", vkEmbedding);
}

} // namespace graft::infer
