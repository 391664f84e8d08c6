// quant_affine.glsl - torchao affine quantization primitives over
// contiguous groups of `groupSize` elements (block sizes [1, ..., 1, b, size...]):
//   MODE choose:     choose_qparams_affine, one invocation per group;
//   MODE quantize:   quantize_affine: clamp(roundEven(x * (1/scale)) + zp, qmin, qmax);
//   MODE dequantize: dequantize_affine: (float(q) - zp) * scale.
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
} pc;

void main() {
  uint id = linearId();
#if defined(MODE_choose)
  int groups = pc.numel / pc.groupSize;
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
  float minNeg = min(mn, 0.0);
  float maxPos = max(mx, 0.0);
  float qmin = float(pc.qmin);
  float qmax = float(pc.qmax);
  precise float scale;
  float zp;
  if (pc.mapping == 0) {
    precise float range = maxPos - minNeg;
    scale = range / (qmax - qmin);
#if DTYPE_IS_HALF
    scale = roundToHalf(scale);
#endif
    scale = max(scale, pc.eps);
    precise float d = minNeg / scale;
#if DTYPE_IS_HALF
    d = roundToHalf(d);
#endif
    zp = clamp(qmin - roundEven(d), qmin, qmax);
  } else {
    if (pc.mapping == 1) {
      scale = max(-minNeg, maxPos) / ((qmax - qmin) / 2.0);
    } else {
      precise float a = minNeg / qmin;
      precise float b = maxPos / qmax;
#if DTYPE_IS_HALF
      a = roundToHalf(a);
      b = roundToHalf(b);
#endif
      scale = a > b ? a : b;
    }
#if DTYPE_IS_HALF
    scale = roundToHalf(scale);
#endif
    scale = max(scale, pc.eps);
    zp = trunc((qmax + qmin + 1.0) / 2.0);
  }
  t_scale[id] = TO_SCALE_DTYPE(scale);
  t_zero[id] = int(zp);
#else
  if (id >= uint(pc.numel))
    return;
  int g = int(id) / pc.groupSize;
  float zp = pc.hasZero != 0 ? float(t_zero[g]) : 0.0;
#if defined(MODE_quantize)
  precise float inv = 1.0 / float(t_scale[g]);
#if SCALE_DTYPE_IS_HALF
  inv = roundToHalf(inv);
#endif
  precise float prod = float(t_in[id]) * inv;
#if DTYPE_IS_HALF && SCALE_DTYPE_IS_HALF
  prod = roundToHalf(prod);
#endif
  float q = clamp(roundEven(prod) + zp, float(pc.qmin), float(pc.qmax));
  t_out[id] = int(q);
#else
  precise float v = (float(t_in[id]) - zp) * float(t_scale[g]);
  t_out[id] = TO_DTYPE(v);
#endif
#endif
}
