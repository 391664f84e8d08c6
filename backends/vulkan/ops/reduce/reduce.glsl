// reduce.glsl - sum / mean / amax / amin over the innermost `rowLen`
// elements of each of `rows` rows. One invocation per row accumulates
// sequentially in f32, the reference's order, so f32 sums are bit-exact;
// mean is (f32 sum) / n rounded once; amax/amin propagate NaN.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
} pc;

void main() {
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int base = int(row) * pc.rowLen;
#if defined(OP_sum) || defined(OP_mean)
  precise float acc = 0.0;
  for (int i = 0; i < pc.rowLen; ++i)
    acc += float(t_in[base + i]);
#if defined(OP_mean)
  float r = divRN(acc, float(pc.rowLen));
#else
  float r = acc;
#endif
#else
  float r = float(t_in[base]);
  bool nan = isNanBits(r);
  for (int i = 1; i < pc.rowLen; ++i) {
    float v = float(t_in[base + i]);
    nan = nan || isNanBits(v);
#if defined(OP_amax)
    r = max(r, v);
#else
    r = min(r, v);
#endif
  }
  if (nan)
    r = uintBitsToFloat(0x7fc00000u);
#endif
  t_out[row] = TO_DTYPE(r);
}
