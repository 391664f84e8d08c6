//===- Quantize.cpp - choose_qparams, quantize, dequantize ------------------===//
//
// torchao's affine quantization (choose_qparams_affine, quantize_affine,
// dequantize_affine over contiguous groups; quant_affine.glsl) and
// quantized_decomposed.dequantize_per_channel for the graphs where no
// fusion rule consumes it (dequantize_per_channel.glsl). Semantics of the
// latter: torch/ao/quantization/fx/_decomposed.py (pytorch 6661d4b6),
// (input - zero_points[c]) * scales[c] along `axis`, then .to(out_dtype).
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

std::optional<int64_t> contiguousGroupSize(const std::vector<int64_t> &blockSize,
                                           const std::vector<int64_t> &sizes) {
  if (blockSize.size() != sizes.size())
    return std::nullopt;
  std::vector<int64_t> block = blockSize;
  for (std::size_t i = 0; i < block.size(); ++i)
    if (block[i] < 0)
      block[i] = sizes[i];
  std::size_t first = block.size();
  for (std::size_t i = 0; i < block.size(); ++i)
    if (block[i] != 1) {
      first = i;
      break;
    }
  if (first == block.size())
    return 1;
  if (block[first] <= 0 || sizes[first] % block[first] != 0)
    return std::nullopt;
  for (std::size_t j = first + 1; j < block.size(); ++j)
    if (block[j] != sizes[j])
      return std::nullopt;
  return product(block);
}

namespace {
struct QuantPush {
  int32_t numel, groupSize, qmin, qmax, hasZero, mapping;
  float eps;
  int32_t inlineQParams;
  float factor;
  int32_t zero;
};

/// quant_affine.glsl's quantize / dequantize: per-group qparams from the
/// `scale` / `zeroPoint` buffers, or, when `scale` is null, the push
/// constants' (pc.inlineQParams). Validation is the callers'.
Expected<DeviceTensor> quantAffineDispatch(Context &ctx, bool quantize, const DeviceTensor &in,
                                           const DeviceTensor *scale, const DeviceTensor *zeroPoint,
                                           const QuantPush &pc, DType outDType) {
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, in.sizes));
  if (in.numel() == 0)
    return out;
  // The inline path reads no buffer; x stands in for the unused bindings.
  const DeviceTensor &s = scale ? *scale : in;
  const DeviceTensor &z = zeroPoint ? *zeroPoint : s;
  std::string variant = quantize ? "quantize_affine_" + shaderDType(in.dtype)
                                 : "dequantize_affine_" + shaderDType(outDType);
  variant += "_" + (scale ? shaderDType(scale->dtype) : std::string("float"));
  // Four values per invocation (quant_affine.glsl).
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), in.buffer.get(), s.buffer.get(), z.buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>((in.numel() + 3) / 4)));
  return out;
}

struct MinMaxPush {
  int32_t numel, groupSize, chunk;
};

// llvmpipe (lavapipe, the CI device) ends an invocation's loops after 65535
// iterations in all (Mesa gallivm lp_bld_limits.h, LP_MAX_TGSI_LOOP_ITERATIONS,
// "shared between every loop"), silently: a choose over a longer group read
// only its first 65536 values (PT2E's per-tensor activation of a 128-token
// prefill is 2^19). A group longer than kMaxGroupLoop is first cut into at
// most kMaxChunks chunks of at least kMinChunk values, a workgroup each
// (minmax_affine: at most 2^31 / kMaxChunks / 128 = 1024 iterations per
// invocation), and the choose kernel then runs over the chunks' (min, max)
// pairs, at most 2 * kMaxChunks values a group. Min and max are exact in
// any order, so both passes give the one-pass values. Splitting also spreads
// a whole-tensor reduction over the device instead of one workgroup.
constexpr int64_t kMaxGroupLoop = 32768;
constexpr int64_t kMaxChunks = 16384;
constexpr int64_t kMinChunk = 8192;

Diagnostic perTensorError(const char *op, const std::string &message) {
  return Diagnostic::error(std::string("vulkan kernel ") + op + ": " + message);
}

bool fitsInt32(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX;
}
} // namespace

Expected<QParams> chooseQParamsAffine(Context &ctx, const DeviceTensor &x, int64_t groupSize,
                                      MappingType mapping, int64_t qmin, int64_t qmax, double eps,
                                      DType scaleDType, DType zeroPointDType,
                                      std::vector<int64_t> scaleSizes) {
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(scaleDType) ||
      deviceElem(zeroPointDType) != DeviceElem::I32)
    return kernelError("choose_qparams_affine", "unsupported dtypes");
  if (groupSize <= 0 || x.numel() % groupSize != 0 || product(scaleSizes) != x.numel() / groupSize)
    return kernelError("choose_qparams_affine", "blocks of " + std::to_string(groupSize) +
                                                    " do not tile " + sizesStr(x.sizes));
  int64_t groups = x.numel() / groupSize;
  if (groupSize > kMaxGroupLoop) {
    const int64_t chunk = std::max(kMinChunk, (groupSize + kMaxChunks - 1) / kMaxChunks);
    const int64_t chunks = (groupSize + chunk - 1) / chunk;
    GRAFT_TRY(DeviceTensor pairs, allocateTensor(ctx, x.dtype, {groups * chunks * 2}));
    MinMaxPush mp{i32(x.numel()), i32(groupSize), i32(chunk)};
    GRAFT_CHECK_OK(ctx.dispatch("minmax_affine_" + shaderDType(x.dtype),
                                {pairs.buffer.get(), x.buffer.get()}, &mp, sizeof(mp),
                                {static_cast<uint32_t>(groups * chunks), 1, 1}));
    return chooseQParamsAffine(ctx, pairs, chunks * 2, mapping, qmin, qmax, eps, scaleDType,
                               zeroPointDType, std::move(scaleSizes));
  }
  QParams r;
  GRAFT_TRY(r.scale, allocateTensor(ctx, scaleDType, scaleSizes));
  GRAFT_TRY(r.zeroPoint, allocateTensor(ctx, zeroPointDType, scaleSizes));
  QuantPush pc{i32(x.numel()),
               i32(groupSize),
               i32(qmin),
               i32(qmax),
               1,
               static_cast<int32_t>(mapping),
               static_cast<float>(eps),
               0,
               0.f,
               0};
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(scaleDType);
  std::vector<Buffer *> bindings = {r.scale.buffer.get(), r.zeroPoint.buffer.get(), x.buffer.get()};
  // Min and max are order-free: the cooperative variant is exact, both policies.
  if (cooperativeRows(ctx, groups)) {
    GRAFT_CHECK_OK(ctx.dispatch("choose_qparams_affine_coop_" + dtypes, bindings, &pc, sizeof(pc),
                                {static_cast<uint32_t>(groups), 1, 1}));
    return r;
  }
  GRAFT_CHECK_OK(ctx.dispatch1D("choose_qparams_affine_" + dtypes, bindings, &pc, sizeof(pc),
                                static_cast<uint64_t>(groups)));
  return r;
}

Expected<DeviceTensor> quantizeAffine(Context &ctx, const DeviceTensor &x, int64_t groupSize,
                                      const DeviceTensor &scale, const DeviceTensor *zeroPoint,
                                      int64_t qmin, int64_t qmax, DType outDType) {
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(scale.dtype) ||
      deviceElem(outDType) != DeviceElem::I32 ||
      (zeroPoint && deviceElem(zeroPoint->dtype) != DeviceElem::I32))
    return kernelError("quantize_affine", "unsupported dtypes");
  if (groupSize <= 0 || x.numel() % groupSize != 0 || scale.numel() != x.numel() / groupSize ||
      (zeroPoint && zeroPoint->numel() != scale.numel()))
    return kernelError("quantize_affine",
                       "scale " + sizesStr(scale.sizes) + " does not match blocks of " +
                           std::to_string(groupSize) + " of " + sizesStr(x.sizes));
  QuantPush pc{
      i32(x.numel()), i32(groupSize), i32(qmin), i32(qmax), zeroPoint ? 1 : 0, 0, 0.f, 0, 0.f, 0};
  return quantAffineDispatch(ctx, true, x, &scale, zeroPoint, pc, outDType);
}

Expected<DeviceTensor> dequantizeAffine(Context &ctx, const DeviceTensor &q, int64_t groupSize,
                                        const DeviceTensor &scale, const DeviceTensor *zeroPoint,
                                        DType outDType) {
  if (deviceElem(q.dtype) != DeviceElem::I32 || !isDeviceFloat(scale.dtype) ||
      !isDeviceFloat(outDType) || (zeroPoint && deviceElem(zeroPoint->dtype) != DeviceElem::I32))
    return kernelError("dequantize_affine", "unsupported dtypes");
  if (groupSize <= 0 || q.numel() % groupSize != 0 || scale.numel() != q.numel() / groupSize ||
      (zeroPoint && zeroPoint->numel() != scale.numel()))
    return kernelError("dequantize_affine",
                       "scale " + sizesStr(scale.sizes) + " does not match blocks of " +
                           std::to_string(groupSize) + " of " + sizesStr(q.sizes));
  QuantPush pc{i32(q.numel()), i32(groupSize), 0, 0, zeroPoint ? 1 : 0, 0, 0.f, 0, 0.f, 0};
  return quantAffineDispatch(ctx, false, q, &scale, zeroPoint, pc, outDType);
}

Expected<DeviceTensor> quantizePerTensor(Context &ctx, const DeviceTensor &x, double scale,
                                         int64_t zeroPoint, int64_t qmin, int64_t qmax,
                                         DType outDType) {
  if (!isDeviceFloat(x.dtype) || deviceElem(outDType) != DeviceElem::I32)
    return perTensorError("quantize_per_tensor", "unsupported dtypes (f32/f16 input, integer "
                                                 "result)");
  if (!fitsInt32(zeroPoint) || !fitsInt32(qmin) || !fitsInt32(qmax))
    return perTensorError("quantize_per_tensor",
                          "zero_point, quant_min and quant_max must fit in int32");
  // _decomposed.py: inv_scale = 1.0 / scale is Python float (double)
  // arithmetic; the f32 tensor multiplies by it converted to f32.
  QuantPush pc{i32(x.numel()),
               i32(std::max<int64_t>(x.numel(), 1)),
               static_cast<int32_t>(qmin),
               static_cast<int32_t>(qmax),
               0,
               0,
               0.f,
               1,
               static_cast<float>(1.0 / scale),
               static_cast<int32_t>(zeroPoint)};
  return quantAffineDispatch(ctx, true, x, nullptr, nullptr, pc, outDType);
}

Expected<DeviceTensor> dequantizePerTensor(Context &ctx, const DeviceTensor &q, double scale,
                                           int64_t zeroPoint, DType outDType) {
  if (deviceElem(q.dtype) != DeviceElem::I32 || !isDeviceFloat(outDType))
    return perTensorError("dequantize_per_tensor",
                          "unsupported dtypes (integer input, f32/f16 result)");
  if (!fitsInt32(zeroPoint))
    return perTensorError("dequantize_per_tensor", "zero_point must fit in int32");
  QuantPush pc{i32(q.numel()),
               i32(std::max<int64_t>(q.numel(), 1)),
               0,
               0,
               0,
               0,
               0.f,
               1,
               static_cast<float>(scale),
               static_cast<int32_t>(zeroPoint)};
  return quantAffineDispatch(ctx, false, q, nullptr, nullptr, pc, outDType);
}

namespace {

struct DequantPerChannelPush {
  int32_t numel, inner, channels, hasZero;
};

Diagnostic dqError(const std::string &message) {
  return Diagnostic::error("vulkan kernel dequantize_per_channel: " + message);
}

} // namespace

Expected<DeviceTensor> dequantizePerChannel(Context &ctx, const DeviceTensor &q,
                                            const DeviceTensor &scales,
                                            const DeviceTensor *zeroPoints, int64_t axis,
                                            DType outDType) {
  if (deviceElem(q.dtype) != DeviceElem::I32 || !isDeviceFloat(scales.dtype) ||
      !isDeviceFloat(outDType) || (zeroPoints && deviceElem(zeroPoints->dtype) != DeviceElem::I32))
    return dqError("unsupported dtypes (integer input and zero points, f32/f16 scales and "
                   "result)");
  const int64_t rank = static_cast<int64_t>(q.sizes.size());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return dqError("axis " + std::to_string(axis) + " is out of range for rank " +
                   std::to_string(rank));
  const int64_t channels = q.sizes[static_cast<std::size_t>(axis)];
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= q.sizes[static_cast<std::size_t>(d)];
  if (scales.numel() != channels || (zeroPoints && zeroPoints->numel() != channels))
    return dqError("expects " + std::to_string(channels) + " scales and zero points (the size " +
                   "of dim " + std::to_string(axis) + "), got " + std::to_string(scales.numel()) +
                   (zeroPoints ? " and " + std::to_string(zeroPoints->numel()) : std::string()));
  if (q.numel() > INT32_MAX)
    return dqError("more than 2^31 elements");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, q.sizes));
  if (q.numel() == 0)
    return out;
  DequantPerChannelPush pc{
      static_cast<int32_t>(q.numel()), static_cast<int32_t>(std::max<int64_t>(inner, 1)),
      static_cast<int32_t>(std::max<int64_t>(channels, 1)), zeroPoints ? 1 : 0};
  std::string variant =
      "dequantize_per_channel_" + shaderDType(outDType) + "_" + shaderDType(scales.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), q.buffer.get(), scales.buffer.get(),
                                 (zeroPoints ? zeroPoints : &scales)->buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(q.numel())));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

/// The contiguous-group check on prototypes. A symbolic dim works with block
/// 1 (outside the groups) or -1 (the whole dim, whatever its size at run
/// time: how a per-tensor block is spelled over a symbolic sequence length,
/// quant_f64_legalize.pat's pt2e_choose_qparams_tensor); its size here is a
/// stand-in of 2, so a whole dim before a partial one is still refused.
std::string blockReason(const BoundArgs &b, const TensorProto *x) {
  const Argument *bs = b.find("block_size");
  auto block = bs ? bs->intList() : std::nullopt;
  if (!block || !x)
    return "block_size must be a literal list";
  if (static_cast<int64_t>(block->size()) != x->rank())
    return "block_size rank differs from the input's";
  std::vector<int64_t> sizes;
  for (std::size_t i = 0; i < block->size(); ++i) {
    auto v = x->shape[i].value();
    if (!v && (*block)[i] != 1 && (*block)[i] != -1)
      return "a block spans part of a symbolic dim (only 1 or -1, the whole dim)";
    sizes.push_back(v ? *v : 2);
  }
  if (!contiguousGroupSize(*block, sizes))
    return "blocks are not contiguous runs of memory (block_size [1, ..., 1, b, whole dims...])";
  return {};
}

std::string legacyDomainReason(const BoundArgs &b) {
  if (const Argument *d = b.find("zero_point_domain"))
    if (d->isString() && d->string() != "INT" && d->string() != "NONE")
      return "zero_point_domain " + d->string() + " is not supported on the device";
  return {};
}

Expected<int64_t> groupSizeOf(NodeArgs &a, const std::vector<int64_t> &sizes) {
  auto block = a.intList("block_size");
  if (!block)
    return a.error("block_size must be a list of ints");
  auto g = contiguousGroupSize(*block, sizes);
  if (!g)
    return a.error("block_size does not describe contiguous groups of the input");
  return *g;
}

std::pair<int64_t, int64_t> qrange(NodeArgs &a, DType d) {
  auto bounds = integerBounds(d).value_or(std::make_pair<int64_t, int64_t>(-128, 127));
  return {a.integer("quant_min").value_or(bounds.first),
          a.integer("quant_max").value_or(bounds.second)};
}

Lowering chooseQParamsLowering() {
  Lowering l;
  l.kernel = "choose_qparams_affine";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x || !isDeviceFloat(x->dtype))
      return "input must be f32/f16";
    GRAFT_VK_REASON(blockReason(b, x));
    const Argument *m = b.find("mapping_type");
    if (!m || !m->isString() ||
        (m->string() != "ASYMMETRIC" && m->string() != "SYMMETRIC" &&
         m->string() != "SYMMETRIC_NO_CLIPPING_ERR"))
      return "mapping_type must be ASYMMETRIC, SYMMETRIC or SYMMETRIC_NO_CLIPPING_ERR";
    if (b.isLegacy())
      return "the legacy (zero_point_domain) signature";
    if (!isDeviceFloat(node.output(0)->proto().dtype) ||
        deviceElem(node.output(1)->proto().dtype) != DeviceElem::I32)
      return "scale must be f32/f16 and the zero point an integer";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(int64_t gs, groupSizeOf(a, x.sizes));
    const std::string &m = a.arg("mapping_type").string();
    MappingType mt = m == "ASYMMETRIC"  ? MappingType::Asymmetric
                     : m == "SYMMETRIC" ? MappingType::Symmetric
                                        : MappingType::SymmetricNoClippingErr;
    DType target = a.arg("target_dtype").isDType() ? a.arg("target_dtype").dtype() : DType::I8;
    auto [qmin, qmax] = qrange(a, target);
    double eps;
    if (auto e = a.number("eps"))
      eps = *e;
    else
      eps = x.dtype == DType::F16 ? 6.103515625e-05 : 1.1754943508222875e-38;
    // The result shape: the node's prototype with symbols resolved from the
    // input (block dims reduce; keepdim keeps them as 1). As in torchao's
    // _get_reduction_params, block 1 keeps a dim and -1 reduces it, a dim of
    // size 1 included.
    auto block = *a.intList("block_size");
    bool keepdim = a.integer("keepdim").value_or(0) != 0;
    std::vector<int64_t> shape;
    for (std::size_t i = 0; i < x.sizes.size(); ++i) {
      int64_t bsz = block[i] < 0 ? x.sizes[i] : block[i];
      int64_t n = x.sizes[i] / std::max<int64_t>(bsz, 1);
      if (keepdim || block[i] == 1 || bsz != x.sizes[i])
        shape.push_back(n);
    }
    GRAFT_TRY(QParams q, chooseQParamsAffine(a.ctx(), x, gs, mt, qmin, qmax, eps, a.outDType(0),
                                             a.outDType(1), shape));
    return std::vector<LoweredValue>{std::move(q.scale), std::move(q.zeroPoint)};
  };
  return l;
}

Lowering quantizeLowering(bool quantize) {
  Lowering l;
  l.kernel = quantize ? "quantize_affine" : "dequantize_affine";
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x)
      return "input is not a tensor";
    if (quantize ? !isDeviceFloat(x->dtype) : deviceElem(x->dtype) != DeviceElem::I32)
      return "input dtype " + std::string(name(x->dtype)) + " is unsupported";
    DType out = node.output()->proto().dtype;
    if (quantize ? deviceElem(out) != DeviceElem::I32 : !isDeviceFloat(out))
      return "result dtype " + std::string(name(out)) + " is unsupported";
    GRAFT_VK_REASON(blockReason(b, x));
    GRAFT_VK_REASON(legacyDomainReason(b));
    const TensorProto *s = protoOf(b, "scale");
    if (!s || !isDeviceFloat(s->dtype))
      return "scale must be f32/f16";
    const TensorProto *z = protoOf(b, "zero_point");
    if (z && deviceElem(z->dtype) != DeviceElem::I32)
      return "zero_point must be an integer tensor (a float zero point is not supported)";
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(int64_t gs, groupSizeOf(a, x.sizes));
    GRAFT_TRY(DeviceTensor s, a.tensor("scale"));
    GRAFT_TRY(auto zp, a.optionalTensor("zero_point"));
    bool noZero = false;
    if (const Argument *d = a.bound().find("zero_point_domain"))
      noZero = d->isString() && d->string() == "NONE";
    const DeviceTensor *z = (zp && zp->numel() > 0 && !noZero) ? &*zp : nullptr;
    if (quantize) {
      DType out = a.outDType();
      auto [qmin, qmax] =
          qrange(a, a.arg("output_dtype").isDType() ? a.arg("output_dtype").dtype() : out);
      return one(quantizeAffine(a.ctx(), x, gs, s, z, qmin, qmax, out));
    }
    return one(dequantizeAffine(a.ctx(), x, gs, s, z, a.outDType()));
  };
  return l;
}

/// quantized_decomposed.dequantize_per_channel that no fusion rule consumed
/// (dequantize_per_channel.glsl). The reference promotes q - zp (integer)
/// times the scales to the scales' dtype, so the device needs f32/f16 scales;
/// f64 scales (q * s rounded once from f64) and bf16 stay on the CPU.
Lowering dequantizePerChannelLowering() {
  Lowering l;
  l.kernel = "dequantize_per_channel";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x)
      return "input is not a tensor";
    // q - zp is an int32 subtraction on the device (int64 in torch): exact
    // for 8- and 16-bit inputs with int32 zero points.
    if (x->dtype != DType::I8 && x->dtype != DType::U8 && x->dtype != DType::I16 &&
        x->dtype != DType::U16)
      return "input dtype " + std::string(name(x->dtype)) +
             " is unsupported (8- or 16-bit integers only)";
    const TensorProto *s = protoOf(b, "scales");
    if (!s || !isDeviceFloat(s->dtype))
      return "scales must be f32/f16" +
             (s ? ", got " + std::string(name(s->dtype)) : std::string());
    const TensorProto *z = protoOf(b, "zero_points");
    if (z && deviceElem(z->dtype) != DeviceElem::I32)
      return "zero_points must be an integer tensor, got " + std::string(name(z->dtype));
    const Argument *za = b.find("zero_points");
    if (!za || (!z && !za->isNone()))
      return "zero_points must be a tensor or None";
    DType out = node.output()->proto().dtype;
    if (!isDeviceFloat(out))
      return "result dtype " + std::string(name(out)) + " is unsupported";
    const Argument *axis = b.find("axis");
    if (!axis || !axis->isInt())
      return "axis must be a literal int";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor q, a.tensor("input"));
    GRAFT_TRY(DeviceTensor s, a.tensor("scales"));
    GRAFT_TRY(auto zp, a.optionalTensor("zero_points"));
    return one(
        dequantizePerChannel(a.ctx(), q, s, zp ? &*zp : nullptr, *a.integer("axis"), a.outDType()));
  };
  return l;
}

/// Why integer dtype `d` is not one quantize_per_tensor produces or
/// dequantize_per_tensor reads on the device (the reference's integer
/// dtypes; its f8 ones have no device form).
std::string perTensorIntReason(DType d, const char *what) {
  if (d == DType::U8 || d == DType::I8 || d == DType::U16 || d == DType::I16 || d == DType::I32)
    return {};
  return std::string(what) + " dtype " + std::string(name(d)) +
         " is unsupported (u8, i8, u16, i16, i32)";
}

/// The .tensor overloads' one-element qparams: a float scale and an integer
/// zero point (the reference reads a float zero point truncated, which the
/// device does not reproduce).
std::string tensorQParamsReason(const BoundArgs &b) {
  const TensorProto *s = protoOf(b, "scale");
  const TensorProto *z = protoOf(b, "zero_point");
  if (!s || !isDeviceFloat(s->dtype))
    return "scale must be an f32/f16 tensor";
  if (!z || !isIntegral(z->dtype) || deviceElem(z->dtype) != DeviceElem::I32)
    return "zero_point must be an integer tensor";
  for (const TensorProto *p : {s, z}) {
    auto n = p->numel().value();
    if (!n || *n != 1)
      return "scale and zero_point must have one element (the reference's .item())";
  }
  return {};
}

/// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor
/// (_decomposed.py, pytorch 6661d4b6), the ops PT2E leaves around the
/// activations between fused linears. ExecuTorch's Vulkan partitioner claims
/// both overloads (backends/vulkan/op_registry.py, executorch cff6f4dd) and
/// its runtime runs .default on int8 only (QuantizeDequantize.cpp); here
/// they are quant_affine.glsl with one group covering the tensor, for every
/// integer dtype the reference takes, bit-exact:
///  * quantize: clamp(round(x * f32(1.0 / scale)) + zp, qmin, qmax).to(dtype)
///    on the f32 (or f16-upcast) input. .default's Python-number scale is
///    inverted on the host in double, as Python does, and pushed; .tensor's
///    f32 scale tensor is inverted in the shader (divRN: the f32-rounded
///    double quotient of two f32s is the correctly rounded f32 quotient),
///    an f16 one converted to f32 first (exact).
///  * dequantize: (q.to(out) - zp) * f32(scale). For an f32 result the
///    shader's f32 steps are the reference's; for an f16 result the
///    reference rounds q and q - zp to f16 first, exact only while they stay
///    within f16's integers (|.| <= 2048), which a literal zero point and the
///    input dtype's range decide here.
Lowering perTensorLowering(bool quantize, bool tensorQParams) {
  Lowering l;
  l.kernel = quantize ? "quantize_affine" : "dequantize_affine";
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x)
      return "input is not a tensor";
    const Argument *dt = b.find("dtype");
    if (!dt || !dt->isDType())
      return "dtype must be a literal dtype";
    DType qd = quantize ? node.output()->proto().dtype : x->dtype;
    // A mismatch is the reference's error; it reports it on the CPU.
    if (dt->dtype() != qd)
      return "dtype " + std::string(name(dt->dtype())) + " differs from the " +
             (quantize ? "result's " : "input's ") + std::string(name(qd));
    GRAFT_VK_REASON(perTensorIntReason(qd, quantize ? "result" : "input"));
    if (quantize && !isDeviceFloat(x->dtype))
      return "input dtype " + std::string(name(x->dtype)) + " is unsupported (f32/f16)";
    DType out = node.output()->proto().dtype;
    if (!quantize && !isDeviceFloat(out))
      return "result dtype " + std::string(name(out)) + " is unsupported (f32/f16)";
    const Argument *qmin = b.find("quant_min");
    const Argument *qmax = b.find("quant_max");
    if (!qmin || !qmin->isInt() || !qmax || !qmax->isInt())
      return "quant_min and quant_max must be literal ints";
    auto bounds = *integerBounds(qd);
    if (quantize && (qmin->integer() < bounds.first || qmax->integer() > bounds.second))
      return "quant_min/quant_max outside " + std::string(name(qd)) +
             "'s range (the reference's bounds error)";
    if (tensorQParams) {
      GRAFT_VK_REASON(tensorQParamsReason(b));
      if (!quantize && out == DType::F16)
        return "an f16 result with a zero-point tensor (whether q - zero_point rounds in f16 "
               "depends on its value)";
      return {};
    }
    const Argument *s = b.find("scale");
    const Argument *z = b.find("zero_point");
    if (!s || !(s->isFloat() || s->isInt()))
      return "scale must be a literal number";
    if (!z || !z->isInt() || !fitsInt32(z->integer()))
      return "zero_point must be a literal int32";
    if (!quantize && out == DType::F16) {
      // q, zp and q - zp must be integers f16 holds exactly (|.| <= 2048).
      int64_t zp = z->integer();
      for (int64_t v : {bounds.first, bounds.second, zp, bounds.first - zp, bounds.second - zp})
        if (v < -2048 || v > 2048)
          return "an f16 result where q - zero_point may round in f16 (the reference rounds it "
                 "before the multiply)";
    }
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    DType out = a.outDType();
    int64_t qmin = *a.integer("quant_min"), qmax = *a.integer("quant_max");
    if (!tensorQParams) {
      double scale = *a.number("scale");
      int64_t zp = *a.integer("zero_point");
      if (quantize)
        return one(quantizePerTensor(a.ctx(), x, scale, zp, qmin, qmax, out));
      return one(dequantizePerTensor(a.ctx(), x, scale, zp, out));
    }
    GRAFT_TRY(DeviceTensor s, a.tensor("scale"));
    GRAFT_TRY(DeviceTensor z, a.tensor("zero_point"));
    if (s.numel() != 1 || z.numel() != 1)
      return a.error("scale and zero_point must have one element");
    if (x.numel() == 0)
      return one(allocateTensor(a.ctx(), out, x.sizes));
    if (quantize) {
      if (s.dtype == DType::F16) {
        // quantize_affine's f16 variant rounds the reciprocal to f16, as
        // torchao does; the reference inverts the f16 value in double.
        GRAFT_TRY(s, asDType(a.ctx(), s, DType::F32));
      }
      return one(quantizeAffine(a.ctx(), x, x.numel(), s, &z, qmin, qmax, out));
    }
    return one(dequantizeAffine(a.ctx(), x, x.numel(), s, &z, out));
  };
  return l;
}

} // namespace

void addQuantizeLowerings(LoweringTable &m) {
  m["torchao.choose_qparams_affine.default"] = chooseQParamsLowering();
  m["torchao.quantize_affine.default"] = quantizeLowering(true);
  m["torchao.dequantize_affine.default"] = quantizeLowering(false);
  m["quantized_decomposed.dequantize_per_channel.default"] = dequantizePerChannelLowering();
  m["quantized_decomposed.quantize_per_tensor.default"] = perTensorLowering(true, false);
  m["quantized_decomposed.quantize_per_tensor.tensor"] = perTensorLowering(true, true);
  m["quantized_decomposed.dequantize_per_tensor.default"] = perTensorLowering(false, false);
  m["quantized_decomposed.dequantize_per_tensor.tensor"] = perTensorLowering(false, true);
}

} // namespace graft::vk
