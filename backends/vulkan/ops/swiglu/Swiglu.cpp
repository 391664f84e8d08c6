//===- Swiglu.cpp - et_vk.swiglu --------------------------------------------===//
//
// et_vk.swiglu(gate, up) = silu(gate) * up (executorch
// backends/vulkan/patterns/swiglu.py; patterns/swiglu.pat fuses Llama's
// `F.silu(w1(x)) * w3(x)` into it), one dispatch of swiglu.glsl next to this
// file instead of silu's and mul's two passes over the activations.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

namespace graft::vk {

Expected<DeviceTensor> swiglu(Context &ctx, const DeviceTensor &gate, const DeviceTensor &up) {
  if (!isDeviceFloat(gate.dtype) || up.dtype != gate.dtype)
    return kernelError("swiglu", "gate and up must share one dtype, f32 or f16; got " +
                                     std::string(name(gate.dtype)) + " and " +
                                     std::string(name(up.dtype)));
  GRAFT_TRY(std::vector<int64_t> outSizes, broadcastSizes("swiglu", {&gate.sizes, &up.sizes}));
  if (outSizes.size() > kMaxRank)
    return kernelError("swiglu", "rank " + std::to_string(outSizes.size()) + " exceeds 8");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, gate.dtype, outSizes));
  const TwoInputPush pc = twoInputPush(outSizes, gate.sizes, &up.sizes);
  // Same-shape operands take the vec4 forms (32 values per invocation on CPU
  // drivers, read as storage texels where the device allows, as the
  // unary/binary kernels), except in the +exact profile, which keeps the
  // scalar variant's correctly rounded division.
  const bool vec4 = !ctx.exactKernels() && pc.contiguous == 3;
  const ElementwiseForm form =
      elementwiseForm(ctx, gate.dtype, vec4, std::max(gate.buffer->size(), up.buffer->size()));
  const uint64_t n = static_cast<uint64_t>(out.numel());
  GRAFT_CHECK_OK(ctx.dispatch1D(std::string("swiglu") + form.infix + shaderDType(gate.dtype),
                                {out.buffer.get(), gate.buffer.get(), up.buffer.get()}, &pc,
                                sizeof(pc), (n + form.perInvocation - 1) / form.perInvocation));
  return out;
}

namespace {

Lowering swigluLowering() {
  Lowering l;
  l.kernel = "swiglu";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    GRAFT_VK_REASON(rankReason(node, 8));
    if (!isFloatOfResultDType(node, b, "gate") || !isFloatOfResultDType(node, b, "up"))
      return "gate and up must be f32/f16 of the result's dtype";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor gate, a.tensor("gate"));
    GRAFT_TRY(DeviceTensor up, a.tensor("up"));
    return one(swiglu(a.ctx(), gate, up));
  };
  return l;
}

} // namespace

void addSwigluLowerings(LoweringTable &m) {
  m["et_vk.swiglu.default"] = swigluLowering();
}

} // namespace graft::vk
