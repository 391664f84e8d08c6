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
};
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
  QParams r;
  GRAFT_TRY(r.scale, allocateTensor(ctx, scaleDType, scaleSizes));
  GRAFT_TRY(r.zeroPoint, allocateTensor(ctx, zeroPointDType, scaleSizes));
  QuantPush pc{i32(x.numel()),
               i32(groupSize),
               i32(qmin),
               i32(qmax),
               1,
               static_cast<int32_t>(mapping),
               static_cast<float>(eps)};
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(scaleDType);
  std::vector<Buffer *> bindings = {r.scale.buffer.get(), r.zeroPoint.buffer.get(), x.buffer.get()};
  int64_t groups = x.numel() / groupSize;
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
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, x.sizes));
  QuantPush pc{i32(x.numel()), i32(groupSize), i32(qmin), i32(qmax), zeroPoint ? 1 : 0, 0, 0.f};
  std::string variant = "quantize_affine_" + shaderDType(x.dtype) + "_" + shaderDType(scale.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), x.buffer.get(), scale.buffer.get(),
                                 (zeroPoint ? zeroPoint : &scale)->buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(x.numel())));
  return out;
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
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, q.sizes));
  QuantPush pc{i32(q.numel()), i32(groupSize), 0, 0, zeroPoint ? 1 : 0, 0, 0.f};
  std::string variant =
      "dequantize_affine_" + shaderDType(outDType) + "_" + shaderDType(scale.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), q.buffer.get(), scale.buffer.get(),
                                 (zeroPoint ? zeroPoint : &scale)->buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(q.numel())));
  return out;
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

/// The contiguous-group check on prototypes; symbolic leading dims are fine
/// when the block covers only whole trailing dims.
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
    // A symbolic dim only works with block 1 there (it is not inside a group).
    if (!v && (*block)[i] != 1)
      return "a block spans a symbolic dim";
    sizes.push_back(v ? *v : 1);
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
    // input (block dims reduce; keepdim keeps them as 1).
    auto block = *a.intList("block_size");
    bool keepdim = a.integer("keepdim").value_or(0) != 0;
    std::vector<int64_t> shape;
    for (std::size_t i = 0; i < x.sizes.size(); ++i) {
      int64_t bsz = block[i] < 0 ? x.sizes[i] : block[i];
      int64_t n = x.sizes[i] / std::max<int64_t>(bsz, 1);
      if (keepdim || bsz == 1)
        shape.push_back(n);
      else if (bsz != x.sizes[i])
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

} // namespace

void addQuantizeLowerings(LoweringTable &m) {
  m["torchao.choose_qparams_affine.default"] = chooseQParamsLowering();
  m["torchao.quantize_affine.default"] = quantizeLowering(true);
  m["torchao.dequantize_affine.default"] = quantizeLowering(false);
  m["quantized_decomposed.dequantize_per_channel.default"] = dequantizePerChannelLowering();
}

} // namespace graft::vk
