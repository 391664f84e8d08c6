// rms_norm.glsl - et_vk.rms_norm(x, weight, eps), one invocation per row, in
// the reference's order: v = sequential f32 sum of x*x / n, r = 1/sqrt(v + eps),
// out = (x * r) * weight, all f32, rounded once to x's dtype. COOP (the
// `rms_norm_coop` variants, GPUs, fast policy): a workgroup per row.
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
layout(set = 0, binding = 2) readonly buffer Weight { W_DTYPE t_weight[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
  int begin; // steps of the one-invocation form (below); the COOP form runs them all
  int end;
  int unused; // softmax's `safe` (the row kernels share one layout, Reduce.cpp RowPush)
  float eps;
} pc;

#if COOP
#include "workgroup_reduce.glslh"
#else
layout(set = 0, binding = 3) buffer State { uint t_state[]; };
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
  float acc = workgroupSum(part);
  float var = divRN(acc, float(pc.rowLen));
  float r = divRN(1.0, sqrtRN(var + pc.eps));
  for (int i = int(lid); i < pc.rowLen; i += LOCAL_SIZE_X) {
    precise float y = (float(t_in[base + i]) * r) * float(t_weight[i]);
    t_out[base + i] = TO_DTYPE(y);
  }
#else
  // The two passes over a row (the sum of squares, then the results) are
  // one sequence of 2 * rowLen steps; a dispatch runs the steps [begin, end).
  // Rows whose steps exceed the device's loop limit (llvmpipe,
  // DeviceInfo::maxLoopIterations) take several dispatches that carry the
  // running sum in `t_state`, in the same order: the same results bit for bit.
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int n = pc.rowLen;
  int base = int(row) * n;
  precise float acc = 0.0;
  if (pc.begin > 0)
    acc = uintBitsToFloat(t_state[row]);
  for (int i = pc.begin; i < min(pc.end, n); ++i) {
    precise float x = float(t_in[base + i]);
    acc += x * x;
  }
  if (pc.end < 2 * n)
    t_state[row] = floatBitsToUint(acc);
  if (pc.end <= n)
    return;
  precise float var = divRN(acc, float(n));
  float r = divRN(1.0, sqrtRN(var + pc.eps));
  for (int i = max(pc.begin, n) - n; i < pc.end - n; ++i) {
    precise float y = (float(t_in[base + i]) * r) * float(t_weight[i]);
    t_out[base + i] = TO_DTYPE(y);
  }
#endif
}
