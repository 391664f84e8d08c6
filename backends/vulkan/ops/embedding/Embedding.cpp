//===- Embedding.cpp - embedding, embedding_q4gsw, embedding_byte ----------===//
//
// Row gathers from an embedding table: aten.embedding on a device tensor,
// et_vk.embedding_q4gsw on the raw bytes of a 4-bit table and
// quantized_decomposed.embedding_byte on those of an 8-bit one (uploaded
// once). Shaders: embedding.glsl, embedding_q4gsw*.glsl, embedding_byte.glsl.
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

Expected<DeviceTensor> embedding(Context &ctx, const DeviceTensor &weight,
                                 const DeviceTensor &indices) {
  if (weight.sizes.size() != 2)
    return kernelError("embedding", "weight must be 2-D, got " + sizesStr(weight.sizes));
  if (deviceElem(indices.dtype) != DeviceElem::I32 || indices.dtype == DType::Bool)
    return kernelError("embedding", "indices must be an integer tensor");
  int64_t V = weight.sizes[0], D = weight.sizes[1];
  std::vector<int64_t> outSizes = indices.sizes;
  outSizes.push_back(D);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, weight.dtype, outSizes));
  GRAFT_TRY(auto status, ctx.statusBuffer("vulkan embedding: an index is out of range for " +
                                          std::to_string(V) + " rows"));
  struct {
    int32_t numIndices, D, V;
  } pc{i32(indices.numel()), i32(D), i32(V)};
  GRAFT_CHECK_OK(
      ctx.dispatch1D("embedding_" + shaderDType(weight.dtype),
                     {out.buffer.get(), indices.buffer.get(), weight.buffer.get(), status.get()},
                     &pc, sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

Expected<RawBytes> uploadRawBytes(Context &ctx, const Tensor &tensor) {
  if (tensor.rank() != 2 || (tensor.dtype() != DType::U8 && tensor.dtype() != DType::I8))
    return kernelError("upload",
                       "expected a 2-D u8 tensor of packed bytes, got " + tensor.proto().str());
  Tensor c = tensor.contiguous();
  RawBytes r;
  r.rows = c.size(0);
  r.rowBytes = c.size(1);
  GRAFT_TRY(r.buffer, ctx.allocate(c.nbytes()));
  GRAFT_CHECK_OK(ctx.upload(*r.buffer, c.rawData(), c.nbytes()));
  return r;
}

Expected<DeviceTensor> embeddingQ4gsw(Context &ctx, const RawBytes &weight,
                                      const DeviceTensor &scales, int64_t groupSize,
                                      const DeviceTensor &indices, bool isLinearWeight) {
  if (!isDeviceFloat(scales.dtype))
    return kernelError("embedding_q4gsw", "scales must be f32 or f16");
  if (deviceElem(indices.dtype) != DeviceElem::I32 || indices.dtype == DType::Bool)
    return kernelError("embedding_q4gsw", "indices must be an integer tensor");
  int64_t V = weight.rows, D = 2 * weight.rowBytes;
  int64_t groups = scales.sizes.size() > 1 ? scales.sizes[1] : 1;
  if (groupSize <= 0 || groups * groupSize != D)
    return kernelError("embedding_q4gsw", "group_size " + std::to_string(groupSize) + " times " +
                                              std::to_string(groups) +
                                              " groups does not cover the embedding dim " +
                                              std::to_string(D));
  int64_t stride;
  if (scales.sizes.size() > 1) {
    if (scales.sizes[0] != V)
      return kernelError("embedding_q4gsw", "weight_scales " + sizesStr(scales.sizes) +
                                                " do not have one row per embedding row");
    stride = groups;
  } else if (scales.numel() == 1) {
    stride = 0;
  } else if (scales.numel() == V) {
    stride = 1;
  } else {
    return kernelError("embedding_q4gsw",
                       "1-D weight_scales must have 1 or " + std::to_string(V) + " entries");
  }
  std::vector<int64_t> outSizes = indices.sizes;
  outSizes.push_back(D);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, scales.dtype, outSizes));
  GRAFT_TRY(auto status, ctx.statusBuffer("vulkan embedding_q4gsw: an index is out of range for " +
                                          std::to_string(V) + " rows"));
  auto log2OrMinus1 = [](int64_t n) {
    for (int32_t b = 0; b < 31; ++b)
      if ((int64_t(1) << b) == n)
        return b;
    return int32_t(-1);
  };
  // The vectorized gather takes whole 32-value blocks of one group, two per
  // invocation in the wide (64-bit store) form; all are bit-exact like the
  // per-element kernel, which handles the other shapes.
  const bool fast = !ctx.exactKernels() && D % 32 == 0 && groupSize % 32 == 0;
  // The wide form reads the packed table, indices and scales as texels
  // where texelReads allows (embedding_q4gsw_fastt).
  const bool wide = fast && D % 64 == 0 && wideVec4(ctx, scales.dtype);
  const char *kernel =
      wide   ? (texelReads(ctx, std::max({weight.buffer->size(), indices.buffer->size(),
                                          scales.buffer->size()}))
                    ? "embedding_q4gsw_fastt"
                    : "embedding_q4gsw_fastw")
      : fast ? "embedding_q4gsw_fast"
             : "embedding_q4gsw";
  const int64_t perInvocation = wide ? 64 : (fast ? 32 : 1);
  std::string variant =
      std::string(kernel) + (isLinearWeight ? "_linear_weight_" : "_") + shaderDType(scales.dtype);
  struct {
    int32_t numIndices, D, rowBytes, V, groupSize, scaleRowStride, groupShift, chunkShift;
  } pc{i32(indices.numel()), i32(D),      i32(weight.rowBytes),    i32(V),
       i32(groupSize),       i32(stride), log2OrMinus1(groupSize), log2OrMinus1(D / perInvocation)};
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), indices.buffer.get(), weight.buffer.get(),
                                 scales.buffer.get(), status.get()},
                                &pc, sizeof(pc),
                                static_cast<uint64_t>(out.numel() / perInvocation)));
  return out;
}

Expected<DeviceTensor> embeddingByte(Context &ctx, const RawBytes &weight, bool isSigned,
                                     const DeviceTensor &scales, const DeviceTensor *zeroPoints,
                                     const DeviceTensor &indices, DType outDType) {
  if (!isDeviceFloat(scales.dtype) || !isDeviceFloat(outDType))
    return kernelError("embedding_byte", "scales and result must be f32 or f16");
  if (zeroPoints && zeroPoints->dtype != scales.dtype)
    return kernelError("embedding_byte", "weight_zero_points must have the scales' dtype");
  if (deviceElem(indices.dtype) != DeviceElem::I32 || indices.dtype == DType::Bool)
    return kernelError("embedding_byte", "indices must be an integer tensor");
  const int64_t V = weight.rows, D = weight.rowBytes;
  // Scales [V] (one group spanning the row) or [V, NG]; the reference views
  // them, and the zero points, as one value per group of D / NG.
  const int64_t groups = scales.sizes.size() == 2 ? scales.sizes[1] : 1;
  if (scales.sizes.empty() || scales.sizes.size() > 2 || scales.sizes[0] != V || groups <= 0 ||
      D % groups != 0 || D / groups < 2)
    return kernelError("embedding_byte", "weight_scales " + sizesStr(scales.sizes) +
                                             " do not split the " + std::to_string(V) + " x " +
                                             std::to_string(D) + " table into groups of >= 2");
  if (zeroPoints && zeroPoints->numel() != scales.numel())
    return kernelError("embedding_byte", "weight_zero_points " + sizesStr(zeroPoints->sizes) +
                                             " do not match the scales " + sizesStr(scales.sizes));
  std::vector<int64_t> outSizes = indices.sizes;
  outSizes.push_back(D);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, outSizes));
  if (out.numel() == 0)
    return out;
  if (out.numel() > INT32_MAX)
    return kernelError("embedding_byte", "more than 2^31 output elements");
  GRAFT_TRY(auto status, ctx.statusBuffer("vulkan embedding_byte: an index is out of range for " +
                                          std::to_string(V) + " rows"));
  struct {
    int32_t numIndices, D, V, groupSize, groups, isSigned, hasZero;
  } pc{i32(indices.numel()), i32(D), i32(V), i32(D / groups), i32(groups), isSigned ? 1 : 0,
       zeroPoints ? 1 : 0};
  // Without zero points the scales' buffer stands in for binding 4 (unread).
  GRAFT_CHECK_OK(ctx.dispatch1D(
      "embedding_byte_" + shaderDType(outDType) + "_" + shaderDType(scales.dtype),
      {out.buffer.get(), indices.buffer.get(), weight.buffer.get(), scales.buffer.get(),
       (zeroPoints ? zeroPoints : &scales)->buffer.get(), status.get()},
      &pc, sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

Lowering embeddingQ4Lowering() {
  Lowering l;
  l.kernel = "embedding_q4gsw";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    GRAFT_VK_REASON(requireConstant(node, b, "weight"));
    const Argument *lw = b.find("is_linear_weight");
    if (lw && !lw->isBool())
      return "is_linear_weight must be a literal bool";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(RawBytes w, a.state().rawBytes(a.value("weight")));
    GRAFT_TRY(DeviceTensor scales, a.tensor("weight_scales"));
    GRAFT_TRY(DeviceTensor idx, a.tensor("indices"));
    bool linearWeight = a.integer("is_linear_weight").value_or(0) != 0;
    return one(
        embeddingQ4gsw(a.ctx(), w, scales, a.integer("group_size").value_or(0), idx, linearWeight));
  };
  return l;
}

Lowering embeddingLowering() {
  Lowering l;
  l.kernel = "embedding";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *w = protoOf(b, "weight");
    if (!w || w->rank() != 2)
      return "weight must be 2-D";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor w, a.tensor("weight"));
    GRAFT_TRY(DeviceTensor idx, a.tensor("indices"));
    return one(embedding(a.ctx(), w, idx));
  };
  return l;
}

/// quantized_decomposed.embedding_byte (.default and .dtype), ExecuTorch's
/// Llama `-E 8,G` embedding (examples/models/llama/source_transformation/
/// quantize.py, QuantizedGroupEmbedding), lowered as it is: the int8 values
/// do not fit the int4 kernel. What the device does not reproduce stays on
/// the CPU with its reason; what the reference rejects (group size 1, wrong
/// ranks) stays there too, so its diagnostic is the one the user sees.
Lowering embeddingByteLowering() {
  Lowering l;
  l.kernel = "embedding_byte";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    GRAFT_VK_REASON(requireConstant(node, b, "weight"));
    const TensorProto *w = protoOf(b, "weight");
    const TensorProto *s = protoOf(b, "weight_scales");
    if (!w || !s)
      return "weight and weight_scales must be tensors";
    if (w->rank() != 2 || (w->dtype != DType::I8 && w->dtype != DType::U8))
      return "weight must be a 2-D int8/uint8 tensor";
    if (!isDeviceFloat(s->dtype))
      return "weight_scales must be f32/f16, got " + std::string(name(s->dtype));
    if (!isDeviceFloat(node.output()->proto().dtype))
      return "result dtype " + std::string(name(node.output()->proto().dtype)) +
             " is unsupported (f32/f16)";
    // The weight is a constant, so its sizes are static; the scales' are
    // checked against it here, as the reference views them per group.
    if (!w->shape[0].isConstant() || !w->shape[1].isConstant())
      return "weight must have static sizes";
    const int64_t V = w->shape[0].constant(), D = w->shape[1].constant();
    if (s->rank() < 1 || s->rank() > 2 || !s->shape[0].value() || *s->shape[0].value() != V ||
        (s->rank() == 2 && !s->shape[1].value()))
      return "weight_scales must be [V] or [V, groups] with static sizes";
    const int64_t groups = s->rank() == 2 ? *s->shape[1].value() : 1;
    if (groups <= 0 || D % groups != 0 || D / groups < 2)
      return "weight_scales do not split the embedding dim into groups of >= 2";
    const Argument *za = b.find("weight_zero_points");
    const TensorProto *z = protoOf(b, "weight_zero_points");
    if (!za || (!z && !za->isNone()))
      return "weight_zero_points must be a tensor or None";
    if (z && (z->dtype != s->dtype || z->rank() < 1 || z->rank() > 2 ||
              z->shape[0].value() != std::optional<int64_t>(V) ||
              z->numel().value() != s->numel().value()))
      return "weight_zero_points must have the scales' dtype, " + std::to_string(V) +
             " rows and one value per group";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(RawBytes w, a.state().rawBytes(a.value("weight")));
    GRAFT_TRY(DeviceTensor scales, a.tensor("weight_scales"));
    GRAFT_TRY(auto zp, a.optionalTensor("weight_zero_points"));
    GRAFT_TRY(DeviceTensor idx, a.tensor("indices"));
    const bool isSigned = a.value("weight")->proto().dtype == DType::I8;
    return one(embeddingByte(a.ctx(), w, isSigned, scales, zp ? &*zp : nullptr, idx, a.outDType()));
  };
  return l;
}

} // namespace

void addEmbeddingLowerings(LoweringTable &m) {
  m["aten.embedding.default"] = embeddingLowering();
  m["et_vk.embedding_q4gsw.default"] = embeddingQ4Lowering();
  m["quantized_decomposed.embedding_byte.default"] = embeddingByteLowering();
  m["quantized_decomposed.embedding_byte.dtype"] = embeddingByteLowering();
}

} // namespace graft::vk
