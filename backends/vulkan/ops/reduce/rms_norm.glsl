// rms_norm.glsl - et_vk.rms_norm(x, weight, eps), one invocation per row, in
// the reference's order: v = sequential f32 sum of x*x / n, r = 1/sqrt(v + eps),
// out = (x * r) * weight, all f32, rounded once to x's dtype. COOP (the
// `rms_norm_coop` variants, GPUs, fast policy): a workgroup per row.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
layout(set = 0, binding = 2) readonly buffer Weight { W_DTYPE t_weight[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
  float eps;
} pc;

#if COOP
shared float s_acc[LOCAL_SIZE_X];
#endif

void main() {
#if COOP
  // A workgroup per row (the `_coop` variants, for GPUs, fast policy): each
  // invocation sums the squares of a strided slice, a shared-memory tree
  // adds the slices. The reordered sum stays within the bound
  // docs/numerics.md states ("Fast kernels"); the rest is the reference's.
  uint row = gl_WorkGroupID.x;
  uint lid = gl_LocalInvocationIndex;
  if (row >= uint(pc.rows)) // uniform across the workgroup
    return;
  int base = int(row) * pc.rowLen;
  float part = 0.0;
  for (int i = int(lid); i < pc.rowLen; i += LOCAL_SIZE_X) {
    float x = float(t_in[base + i]);
    part = fma(x, x, part);
  }
  s_acc[lid] = part;
  for (uint stride = uint(LOCAL_SIZE_X) / 2u; stride > 0u; stride /= 2u) {
    barrier();
    if (lid < stride)
      s_acc[lid] += s_acc[lid + stride];
  }
  barrier();
  float acc = s_acc[0];
  float var = divRN(acc, float(pc.rowLen));
  float r = divRN(1.0, sqrtRN(var + pc.eps));
  for (int i = int(lid); i < pc.rowLen; i += LOCAL_SIZE_X) {
    precise float y = (float(t_in[base + i]) * r) * float(t_weight[i]);
    t_out[base + i] = TO_DTYPE(y);
  }
#else
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int base = int(row) * pc.rowLen;
  precise float acc = 0.0;
  for (int i = 0; i < pc.rowLen; ++i) {
    precise float x = float(t_in[base + i]);
    acc += x * x;
  }
  precise float var = divRN(acc, float(pc.rowLen));
  float r = divRN(1.0, sqrtRN(var + pc.eps));
  for (int i = 0; i < pc.rowLen; ++i) {
    precise float y = (float(t_in[base + i]) * r) * float(t_weight[i]);
    t_out[base + i] = TO_DTYPE(y);
  }
#endif
}
