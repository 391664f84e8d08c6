//===- DequantizePerChannel.cpp - quantized_decomposed per-channel dequantize -===//
//
// The device kernel of quantized_decomposed.dequantize_per_channel for the
// graphs where no fusion rule consumes the dequantize (a weight feeding an op
// other than a linear, an asymmetric weight, a 2-D weight of a linear the
// rules do not cover). Semantics: torch/ao/quantization/fx/_decomposed.py
// (pytorch 6661d4b6), (input - zero_points[c]) * scales[c] along `axis`,
// then .to(out_dtype); dequantize_per_channel.glsl states the arithmetic.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

namespace graft::vk {

namespace {

struct DequantPerChannelPush {
  int32_t numel, inner, channels, hasZero;
};

Diagnostic dqError(const std::string &message) {
  return Diagnostic::error("vulkan kernel dequantize_per_channel: " + message);
}

bool isFloatElem(DType d) {
  auto e = deviceElem(d);
  return e && (*e == DeviceElem::F32 || *e == DeviceElem::F16);
}

} // namespace

Expected<DeviceTensor> dequantizePerChannel(Context &ctx, const DeviceTensor &q,
                                            const DeviceTensor &scales,
                                            const DeviceTensor *zeroPoints, int64_t axis,
                                            DType outDType) {
  if (deviceElem(q.dtype) != DeviceElem::I32 || !isFloatElem(scales.dtype) ||
      !isFloatElem(outDType) || (zeroPoints && deviceElem(zeroPoints->dtype) != DeviceElem::I32))
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

} // namespace graft::vk
