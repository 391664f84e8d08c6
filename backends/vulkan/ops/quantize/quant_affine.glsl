// quant_affine.glsl - torchao affine quantization primitives over
// contiguous groups of `groupSize` elements (block sizes [1, ..., 1, b, size...]):
//   MODE choose:     choose_qparams_affine, one invocation per group, or
//                    (COOP, the `_coop` variants for GPUs) one workgroup per
//                    group, its invocations taking the group's min and max
//                    together;
//   MODE quantize:   quantize_affine: clamp(roundEven(x * (1/scale)) + zp, qmin, qmax);
//   MODE dequantize: dequantize_affine: (float(q) - zp) * scale.
// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor are the
// same arithmetic over one group covering the tensor; with Python-number
// qparams (.default) the host passes them as push constants (`inlineQParams`).
// The arithmetic and its order follow docs/numerics.md: the reciprocal of
// the scale is rounded to the scale's dtype and multiplied (never a
// division), round is half-to-even, the zero point is added before the clamp.
// Integer tensors (q, zero points) are int32 on the device.
#include "common.glslh"

#if defined(MODE_choose)
layout(set = 0, binding = 0) buffer OutScale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 1) buffer OutZero { int t_zero[]; };
layout(set = 0, binding = 2) readonly buffer In { DTYPE t_in[]; };
#elif defined(MODE_quantize)
layout(set = 0, binding = 0) buffer Out { int t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
layout(set = 0, binding = 2) readonly buffer Scale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 3) readonly buffer Zero { int t_zero[]; };
#else
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { int t_in[]; };
layout(set = 0, binding = 2) readonly buffer Scale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 3) readonly buffer Zero { int t_zero[]; };
#endif

layout(push_constant) uniform PushConstants {
  int numel;
  int groupSize;
  int qmin;
  int qmax;
  int hasZero;
  int mapping; // choose: 0 asymmetric, 1 symmetric, 2 symmetric_no_clipping_err
  float eps;
  // quantize / dequantize: 1 = one group whose qparams are `factor` and
  // `zero` instead of the buffers. `factor` is the f32 multiplier the
  // reference uses: f32(1.0 / scale) with the division in double (Python
  // float arithmetic) for quantize, f32(scale) for dequantize. An f32
  // reciprocal of f32(scale) would differ from it when the scale is a
  // double that no f32 holds.
  int inlineQParams;
  float factor;
  int zero;
} pc;

#if defined(MODE_choose)
#if COOP
shared float s_mn[LOCAL_SIZE_X];
shared float s_mx[LOCAL_SIZE_X];
#endif

// Group `id`'s scale and zero point from its min and max.
void chooseQParams(uint id, float mn, float mx) {
  float minNeg = min(mn, 0.0);
  float maxPos = max(mx, 0.0);
  float qmin = float(pc.qmin);
  float qmax = float(pc.qmax);
  precise float scale;
  float zp;
  if (pc.mapping == 0) {
    precise float range = maxPos - minNeg;
    scale = divRN(range, qmax - qmin);
#if DTYPE_IS_HALF
    scale = roundToHalf(scale);
#endif
    scale = stdMax(scale, pc.eps);
    precise float d = divRN(minNeg, scale);
#if DTYPE_IS_HALF
    d = roundToHalf(d);
#endif
    zp = clamp(qmin - roundEven(d), qmin, qmax);
  } else {
    if (pc.mapping == 1) {
      scale = divRN(stdMax(-minNeg, maxPos), (qmax - qmin) / 2.0);
    } else {
      precise float a = divRN(minNeg, qmin);
      precise float b = divRN(maxPos, qmax);
#if DTYPE_IS_HALF
      a = roundToHalf(a);
      b = roundToHalf(b);
#endif
      scale = a > b ? a : b;
    }
#if DTYPE_IS_HALF
    scale = roundToHalf(scale);
#endif
    scale = stdMax(scale, pc.eps);
    zp = trunc((qmax + qmin + 1.0) / 2.0);
  }
  t_scale[id] = TO_SCALE_DTYPE(scale);
  t_zero[id] = int(zp);
}
#endif

void main() {
#if defined(MODE_choose)
  int groups = pc.numel / pc.groupSize;
#if COOP
  // min and max do not depend on the order they are taken in, so the tree
  // gives the sequential loop's values (up to the sign of a zero extreme,
  // which no output depends on: it only meets min(mn, 0) and max(mx, 0)).
  uint id = gl_WorkGroupID.x;
  uint lid = gl_LocalInvocationIndex;
  if (id >= uint(groups)) // uniform across the workgroup
    return;
  int base = int(id) * pc.groupSize;
  float mn = float(t_in[base]);
  float mx = mn;
  for (int i = int(lid); i < pc.groupSize; i += LOCAL_SIZE_X) {
    float v = float(t_in[base + i]);
    mn = min(mn, v);
    mx = max(mx, v);
  }
  s_mn[lid] = mn;
  s_mx[lid] = mx;
  for (uint stride = uint(LOCAL_SIZE_X) / 2u; stride > 0u; stride /= 2u) {
    barrier();
    if (lid < stride) {
      s_mn[lid] = min(s_mn[lid], s_mn[lid + stride]);
      s_mx[lid] = max(s_mx[lid], s_mx[lid + stride]);
    }
  }
  barrier();
  if (lid == 0u)
    chooseQParams(id, s_mn[0], s_mx[0]);
#else
  uint id = linearId();
  if (id >= uint(groups))
    return;
  int base = int(id) * pc.groupSize;
  float mn = float(t_in[base]);
  float mx = mn;
  for (int i = 1; i < pc.groupSize; ++i) {
    float v = float(t_in[base + i]);
    mn = min(mn, v);
    mx = max(mx, v);
  }
  chooseQParams(id, mn, mx);
#endif
#else
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int g = int(id) / pc.groupSize;
  bool inl = pc.inlineQParams != 0;
  float zp = inl ? float(pc.zero) : pc.hasZero != 0 ? float(t_zero[g]) : 0.0;
#if defined(MODE_quantize)
  precise float inv;
  if (inl) {
    inv = pc.factor;
  } else {
    inv = divRN(1.0, float(t_scale[g]));
#if SCALE_DTYPE_IS_HALF
    inv = roundToHalf(inv);
#endif
  }
  precise float prod = float(t_in[id]) * inv;
#if DTYPE_IS_HALF && SCALE_DTYPE_IS_HALF
  prod = roundToHalf(prod);
#endif
  // round(x * inv) + zp, with an infinite product kept as it is (the driver
  // may assume roundEven and + see no infinities).
  precise float v = selectBits(isInfOrNanBits(prod), prod, roundEven(prod) + zp);
  // torch.clamp, then .to(int): std::min(std::max(v, qmin), qmax) on the
  // bits (NaN stays NaN and qmin > qmax gives qmax, where GLSL's clamp is
  // undefined), then NaN converts to 0 (the reference's Tensor::to). An
  // int32 range's f32(qmax) is 2^31, which int() cannot hold: the
  // reference's x86-style conversion wraps it to INT_MIN.
  int q = 0;
  if (!isNanBits(v)) {
    float c = stdMin(stdMax(v, float(pc.qmin)), float(pc.qmax));
    q = orderKey(c) >= orderKey(2147483648.0) ? int(0x80000000u) : int(c);
  }
  t_out[id] = q;
#else
  float scale = inl ? pc.factor : float(t_scale[g]);
  precise float v = (float(t_in[id]) - zp) * scale;
  t_out[id] = TO_DTYPE(v);
#endif
#endif
}
