// quant_affine.glsl - torchao affine quantization primitives over
// contiguous groups of `groupSize` elements (block sizes [1, ..., 1, b, size...]):
//   MODE choose:     choose_qparams_affine, one invocation per group, or
//                    (COOP, the `_coop` variants for GPUs) one workgroup per
//                    group, its invocations taking the group's min and max
//                    together;
//   MODE minmax:     a group too long for one invocation's loop, cut into
//                    chunks of `chunk` elements, a workgroup each, which
//                    writes the chunk's (min, max) pair; MODE choose then
//                    runs over the pairs (their min and max are the group's);
//   MODE quantize:   quantize_affine: clamp(roundEven(x * (1/scale)) + zp, qmin, qmax);
//   MODE dequantize: dequantize_affine: (float(q) - zp) * scale.
// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor are the
// same arithmetic over one group covering the tensor; with Python-number
// qparams (.default) the host passes them as push constants (`inlineQParams`).
// The arithmetic and its order follow docs/numerics.md: the reciprocal of
// the scale is rounded to the scale's dtype and multiplied (never a
// division), round is half-to-even, the zero point is added before the clamp.
// Integer tensors (q, zero points) are int32 on the device. Quantize and
// dequantize take 4 consecutive values per invocation, loaded and stored as
// one vector where all 4 exist (llvmpipe pays per load instruction: 3-6x
// less time than one value per invocation), each with the same arithmetic.
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#if defined(MODE_choose)
layout(set = 0, binding = 0) buffer OutScale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 1) buffer OutZero { int t_zero[]; };
layout(set = 0, binding = 2) readonly buffer In { DTYPE t_in[]; };
#elif defined(MODE_minmax)
// The pairs keep the input's dtype (min and max of f16 values are f16
// values), so the choose pass rounds as it would on the input.
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
#elif defined(MODE_quantize)
layout(set = 0, binding = 0) buffer Out { int t_out[]; };
layout(set = 0, binding = 0) buffer Out4 { ivec4 t_out4[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
layout(set = 0, binding = 1) readonly buffer In4 { VEC4_T t_in4[]; };
layout(set = 0, binding = 2) readonly buffer Scale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 3) readonly buffer Zero { int t_zero[]; };
#else
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 0) buffer Out4 { VEC4_T t_out4[]; };
layout(set = 0, binding = 1) readonly buffer In { int t_in[]; };
layout(set = 0, binding = 1) readonly buffer In4 { ivec4 t_in4[]; };
layout(set = 0, binding = 2) readonly buffer Scale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 3) readonly buffer Zero { int t_zero[]; };
#endif

#if defined(MODE_minmax)
layout(push_constant) uniform PushConstants {
  int numel;
  int groupSize;
  int chunk; // elements per workgroup; the group's last chunk may be shorter
} pc;
#else
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
#endif

#if (defined(MODE_choose) && COOP) || defined(MODE_minmax)
#include "workgroup_reduce.glslh"

// The min and max of t_in[begin, end) (begin < end), taken by the whole
// workgroup: a strided pass, then a tree each. min and max do not depend on
// the order they are taken in, so this gives the sequential loop's values
// (up to the sign of a zero extreme, which no output depends on: it only
// meets min(mn, 0) and max(mx, 0)).
void workgroupMinMax(int begin, int end, out float mn, out float mx) {
  uint lid = gl_LocalInvocationIndex;
  mn = float(t_in[begin]);
  mx = mn;
  for (int i = begin + int(lid); i < end; i += LOCAL_SIZE_X) {
    float v = float(t_in[i]);
    mn = min(mn, v);
    mx = max(mx, v);
  }
  mn = workgroupMin(mn);
  mx = workgroupMax(mx);
}
#endif

#if defined(MODE_choose)

// Group `id`'s scale and zero point from its min and max.
void chooseQParams(uint id, float mn, float mx) {
  float minNeg = min(mn, 0.0);
  float maxPos = max(mx, 0.0);
  float qmin = float(pc.qmin);
  float qmax = float(pc.qmax);
  precise float scale;
  float zp;
  if (pc.mapping == 0) {
    // max_val_pos - min_val_neg is a tensor of the input's dtype: rounded
    // to f16 before the division, as PyTorch rounds it.
    precise float range = maxPos - minNeg;
#if DTYPE_IS_HALF
    range = roundToHalf(range);
#endif
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

#if defined(MODE_quantize)
#include "quantize_value.glslh"

// Group g's multiplier (the reciprocal of its scale, as the reference rounds
// it) and zero point, or the push constants' (inlineQParams).
void qparams(int g, out float inv, out float zp) {
  if (pc.inlineQParams != 0) {
    inv = pc.factor;
    zp = float(pc.zero);
    return;
  }
  inv = divRN(1.0, float(t_scale[g]));
#if SCALE_DTYPE_IS_HALF
  inv = roundToHalf(inv);
#endif
  zp = pc.hasZero != 0 ? float(t_zero[g]) : 0.0;
}

// quantize_affine of one value x with its group's qparams.
int quantizeValue(float x, float inv, float zp) {
  return quantizeValueWith(x, inv, zp, pc.qmin, pc.qmax, DTYPE_IS_HALF != 0 && SCALE_DTYPE_IS_HALF != 0);
}

// quantize_affine of value e.
int quantizeAt(int e, float x) {
  float inv, zp;
  qparams(e / pc.groupSize, inv, zp);
  return quantizeValue(x, inv, zp);
}
#elif defined(MODE_dequantize)
// Group g's scale and zero point, or the push constants' (inlineQParams).
void qparams(int g, out float scale, out float zp) {
  bool inl = pc.inlineQParams != 0;
  scale = inl ? pc.factor : float(t_scale[g]);
  zp = inl ? float(pc.zero) : pc.hasZero != 0 ? float(t_zero[g]) : 0.0;
}

// dequantize_affine of one value q in f32 (the caller rounds to DTYPE).
float dequantizeValue(int q, float scale, float zp) {
  precise float v = (float(q) - zp) * scale;
  return v;
}

float dequantizeAt(int e, int q) {
  float scale, zp;
  qparams(e / pc.groupSize, scale, zp);
  return dequantizeValue(q, scale, zp);
}
#endif

void main() {
#if defined(MODE_choose)
  int groups = pc.numel / pc.groupSize;
#if COOP
  uint id = gl_WorkGroupID.x;
  if (id >= uint(groups)) // uniform across the workgroup
    return;
  int base = int(id) * pc.groupSize;
  float mn, mx;
  workgroupMinMax(base, base + pc.groupSize, mn, mx);
  if (gl_LocalInvocationIndex == 0u)
    chooseQParams(id, mn, mx);
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
#elif defined(MODE_minmax)
  // Workgroup id is chunk c of group g.
  int chunks = (pc.groupSize + pc.chunk - 1) / pc.chunk;
  uint id = gl_WorkGroupID.x;
  int g = int(id) / chunks;
  int c = int(id) % chunks;
  if (g >= pc.numel / pc.groupSize) // uniform across the workgroup
    return;
  int begin = g * pc.groupSize + c * pc.chunk;
  int end = g * pc.groupSize + min((c + 1) * pc.chunk, pc.groupSize);
  float mn, mx;
  workgroupMinMax(begin, end, mn, mx);
  if (gl_LocalInvocationIndex == 0u) {
    t_out[2u * id] = TO_DTYPE(mn);
    t_out[2u * id + 1u] = TO_DTYPE(mx);
  }
#else
  int e0 = int(linearId()) * 4;
  if (e0 >= pc.numel)
    return;
  if (e0 + 4 <= pc.numel) {
    // A group size that is a multiple of 4 puts the 4 values in one group:
    // its qparams are read (and quantize's reciprocal taken) once.
    bool oneGroup = pc.groupSize % 4 == 0;
#if defined(MODE_quantize)
    vec4 x = vec4(t_in4[e0 / 4]);
    ivec4 q;
    if (oneGroup) {
      float inv, zp;
      qparams(e0 / pc.groupSize, inv, zp);
      q = ivec4(quantizeValue(x.x, inv, zp), quantizeValue(x.y, inv, zp),
                quantizeValue(x.z, inv, zp), quantizeValue(x.w, inv, zp));
    } else {
      q = ivec4(quantizeAt(e0, x.x), quantizeAt(e0 + 1, x.y), quantizeAt(e0 + 2, x.z),
                quantizeAt(e0 + 3, x.w));
    }
    t_out4[e0 / 4] = q;
#else
    ivec4 q = t_in4[e0 / 4];
    vec4 v;
    if (oneGroup) {
      float scale, zp;
      qparams(e0 / pc.groupSize, scale, zp);
      v = vec4(dequantizeValue(q.x, scale, zp), dequantizeValue(q.y, scale, zp),
               dequantizeValue(q.z, scale, zp), dequantizeValue(q.w, scale, zp));
    } else {
      v = vec4(dequantizeAt(e0, q.x), dequantizeAt(e0 + 1, q.y), dequantizeAt(e0 + 2, q.z),
               dequantizeAt(e0 + 3, q.w));
    }
    t_out4[e0 / 4] = store4(v);
#endif
  } else {
    for (int e = e0; e < pc.numel; ++e)
#if defined(MODE_quantize)
      t_out[e] = quantizeAt(e, float(t_in[e]));
#else
      t_out[e] = TO_DTYPE(dequantizeAt(e, t_in[e]));
#endif
  }
#endif
}
