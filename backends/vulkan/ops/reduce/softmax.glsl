// softmax.glsl - softmax over the last dim, one invocation per row, in the
// reference's order (SoftMaxKernel.cpp _vec_softmax_lastdim): max, then
// e = exp(x - max) in f32, the sequential f32 sum of e, then e * (1 / sum).
// The output dtype may differ from the input's (half_to_float / dtype=).
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { OUT_DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_DTYPE t_in[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
  int safe; // _safe_softmax: a row of only -inf gives zeros instead of NaN
} pc;

void main() {
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int base = int(row) * pc.rowLen;
  float m = float(t_in[base]);
  for (int i = 1; i < pc.rowLen; ++i) {
    float v = float(t_in[base + i]);
    m = nanMax(m, v);
  }
  if (pc.safe != 0 && floatBitsToUint(m) == 0xff800000u) { // -inf
    for (int i = 0; i < pc.rowLen; ++i)
      t_out[base + i] = TO_OUT_DTYPE(0.0);
    return;
  }
  precise float sum = 0.0;
  for (int i = 0; i < pc.rowLen; ++i) {
    precise float d = float(t_in[base + i]) - m;
    sum += exp(d);
  }
  float inv = divRN(1.0, sum);
  for (int i = 0; i < pc.rowLen; ++i) {
    precise float d = float(t_in[base + i]) - m;
    precise float r = exp(d) * inv;
    t_out[base + i] = TO_OUT_DTYPE(r);
  }
}
