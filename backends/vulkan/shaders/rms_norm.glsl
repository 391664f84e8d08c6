// rms_norm.glsl - et_vk.rms_norm(x, weight, eps), one invocation per row, in
// the reference's order: v = sequential f32 sum of x*x / n, r = 1/sqrt(v + eps),
// out = (x * r) * weight, all f32, rounded once to x's dtype.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
layout(set = 0, binding = 2) readonly buffer Weight { W_DTYPE t_weight[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
  float eps;
} pc;

void main() {
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int base = int(row) * pc.rowLen;
  precise float acc = 0.0;
  for (int i = 0; i < pc.rowLen; ++i) {
    precise float x = float(t_in[base + i]);
    acc += x * x;
  }
  precise float var = acc / float(pc.rowLen);
  precise float r = 1.0 / sqrt(var + pc.eps);
  for (int i = 0; i < pc.rowLen; ++i) {
    precise float y = (float(t_in[base + i]) * r) * float(t_weight[i]);
    t_out[base + i] = TO_DTYPE(y);
  }
}
