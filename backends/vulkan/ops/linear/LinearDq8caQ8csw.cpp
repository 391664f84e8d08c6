//===- LinearDq8caQ8csw.cpp - et_vk.linear_dq8ca_q8csw --------------------===//
//
// The 8da8w linear (executorch 05a4f505: custom_ops_lib.py schema,
// QuantizedLinear.cpp linear_dq8ca_q8csw, linear_dq8ca_q8csw_tiled.glsl):
// the float activation quantized per token with the op's input_scales /
// input_zp by quant_affine.glsl (the pass linear_dq8ca_q4gsw uses), then
// linear_dq8ca_q8csw.glsl on the int8 weight prepacked as for
// linear_q8csw.glsl (for M = 1 on CPU drivers, its bandwidth GEMV variants).
// Bit for bit the reference interpreter's op
// (VulkanOpKernels.cpp).
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

namespace graft::vk {

namespace {
struct Dq8caQ8cswPush {
  int32_t M, N, K, hasBias;
};
constexpr int64_t kTileM = 4;      // linear_dq8ca_q8csw.yaml TILE_M
constexpr int64_t kGemvTileN = 32; // the _cpu_gemv variants' TILE_N
} // namespace

Expected<DeviceTensor> linearDq8caQ8csw(Context &ctx, const DeviceTensor &x,
                                        const DeviceTensor &inputScales,
                                        const DeviceTensor &inputZeroPoints,
                                        const PackedQ8Weight &w, const DeviceTensor &weightSums,
                                        const DeviceTensor &scales, const DeviceTensor *bias) {
  const char *kernel = "linear_dq8ca_q8csw";
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(scales.dtype))
    return kernelError(kernel, "input and weight_scales must be f32 or f16, got " +
                                   std::string(name(x.dtype)) + " and " +
                                   std::string(name(scales.dtype)));
  if (x.sizes.empty() || x.sizes.back() != w.K || w.K == 0)
    return kernelError(kernel, "input " + sizesStr(x.sizes) + " does not have the weight's " +
                                   std::to_string(w.K) + " features");
  int64_t K = w.K, M = x.numel() / K;
  if (scales.sizes.size() != 1 || scales.numel() < w.N)
    return kernelError(kernel, "weight_scales must be [>= " + std::to_string(w.N) + "], got " +
                                   sizesStr(scales.sizes));
  if (weightSums.sizes.size() != 1 || weightSums.numel() < w.N ||
      deviceElem(weightSums.dtype) != DeviceElem::I32)
    return kernelError(kernel, "weight_sums must be integer [>= " + std::to_string(w.N) +
                                   "], got " + sizesStr(weightSums.sizes));
  if (bias && (bias->dtype != x.dtype || bias->numel() < w.N))
    return kernelError(kernel, "bias must be " + std::string(name(x.dtype)) + " with at least " +
                                   std::to_string(w.N) + " elements");
  GRAFT_TRY(PerTokenInt8 a, quantizePerTokenInt8(ctx, kernel, x, K, inputScales, inputZeroPoints));
  const DeviceTensor &xq = a.xq;
  std::vector<int64_t> outSizes(x.sizes.begin(), x.sizes.end() - 1);
  outSizes.push_back(w.N);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, outSizes));
  if (M == 0 || w.N == 0)
    return out;
  // Each invocation loops over K one packed word (4 values) at a time, plus
  // the loop's exit pass.
  GRAFT_CHECK_OK(checkLoopIterations(ctx, kernel, (K + 3) / 4 + 1));
  Dq8caQ8cswPush pc{i32(M), i32(w.N), i32(K), bias ? 1 : 0};
  std::vector<Buffer *> bindings = {out.buffer.get(),
                                    xq.buffer.get(),
                                    w.words.get(),
                                    scales.buffer.get(),
                                    (bias ? bias : &x)->buffer.get(),
                                    a.scalesF32.buffer.get(),
                                    inputZeroPoints.buffer.get(),
                                    weightSums.buffer.get()};
  std::string dtypes = std::string("_") + shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
  // A GEMV on a CPU driver runs the bandwidth kernel (TILE_N columns per
  // invocation, 16-byte loads: x as whole k4 groups, so K % 4 == 0); the
  // texel form where the device takes both operands as texel buffers and
  // each k4 row of the weight is whole texels (N % 4 == 0). Both give the
  // exact kernel's bits, which the exact profile keeps.
  if (M == 1 && K % 4 == 0 && !ctx.exactKernels() && cpuKernels(ctx, envOr("GRAFT_VK_KERNELS"))) {
    bool texel = w.N % 4 == 0 && texelReads(ctx, std::max(w.words->size(), xq.buffer->size()));
    std::string variant = std::string(kernel) + (texel ? "_cpu_gemv_texel" : "_cpu_gemv") + dtypes;
    GRAFT_CHECK_OK(ctx.dispatch1D(variant, bindings, &pc, sizeof(pc),
                                  uint64_t((w.N + kGemvTileN - 1) / kGemvTileN)));
    return out;
  }
  GRAFT_CHECK_OK(ctx.dispatch1D(std::string(kernel) + dtypes, bindings, &pc, sizeof(pc),
                                uint64_t((M + kTileM - 1) / kTileM) * uint64_t(w.N)));
  return out;
}

namespace {

Lowering dq8caQ8cswLowering() {
  Lowering l;
  l.kernel = "linear_dq8ca_q8csw";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(requireConstant(node, b, "weights"));
    // The kernel's loop over K: one iteration per packed word of 4 values,
    // plus the exit pass.
    GRAFT_VK_REASON(loopDimReason(b, dev, "input", -1, 1, 4));
    if (!isFloatOfResultDType(node, b, "input"))
      return "input must be f32/f16 of the result's dtype";
    const TensorProto *bias = protoOf(b, "bias");
    if (bias && bias->dtype != protoOf(b, "input")->dtype)
      return "bias dtype differs from the input's";
    GRAFT_VK_REASON(perTokenScalesReason(b));
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(DeviceTensor is, a.tensor("input_scales"));
    GRAFT_TRY(DeviceTensor iz, a.tensor("input_zp"));
    GRAFT_TRY(PackedQ8Weight w, a.state().packedQ8(a.value("weights")));
    GRAFT_TRY(DeviceTensor sums, a.tensor("weight_sums"));
    GRAFT_TRY(DeviceTensor scales, a.tensor("weight_scales"));
    GRAFT_TRY(auto bias, a.optionalTensor("bias"));
    return one(linearDq8caQ8csw(a.ctx(), x, is, iz, w, sums, scales, bias ? &*bias : nullptr));
  };
  return l;
}

} // namespace

void addLinearDq8caQ8cswLowerings(LoweringTable &m) {
  m["et_vk.linear_dq8ca_q8csw.default"] = dq8caQ8cswLowering();
}

} // namespace graft::vk
