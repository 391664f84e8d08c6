// sdpa_fused.glsl - attention in one dispatch for GPUs (fast policy): a
// workgroup per query row (b, h, i) computes the row's scores, their
// softmax and the weighted sum of the values, where the bit-exact path
// (sdpa_kv.glsl, softmax.glsl, sdpa_kv.glsl) takes three dispatches and
// writes the probabilities out between them. Attention.cpp picks it where
// row kernels are cooperative (GPUs; GRAFT_VK_KERNELS=gpu forces it).
//
//  * q's row, scaled by sfQ as the reference scales it, is staged in shared
//    memory; the row's keys are strided over the workgroup's invocations,
//    each score an FMA chain over d of q * (k * sfK), plus the causal or
//    additive mask; the scores go to a scratch row (t_scores).
//  * The row's max and the sum of exp(score - max) are shared-memory trees;
//    the scratch row then holds exp(score - max).
//  * Each invocation takes output channels d (strided) and walks the keys in
//    order: sum of e_j * v[j, d] (FMA), times 1 / sum, rounded once to DTYPE.
//
// Differences from the reference (the FMAs, the tree sums, the division
// moved after the weighted sum) are bounded in docs/numerics.md ("sdpa,
// fused"); VulkanKernels.SdpaFusedWithinBound checks that bound. The push
// constants are sdpa_kv.glsl's (sdpa_common.glslh; `total` is the number of
// rows, jBegin / jEnd are unused). Requires D <= MAX_D (the host falls back
// otherwise).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) buffer Scores { float t_scores[]; };
layout(set = 0, binding = 2) readonly buffer Q { DTYPE t_q[]; };
layout(set = 0, binding = 3) readonly buffer K { DTYPE t_k[]; };
layout(set = 0, binding = 4) readonly buffer V { DTYPE t_v[]; };
layout(set = 0, binding = 5) readonly buffer Mask { float t_mask[]; };

#include "sdpa_common.glslh"

#define MAX_D 256
shared float s_q[MAX_D];
#include "workgroup_reduce.glslh"

void main() {
  uint lid = gl_LocalInvocationID.x;
  int row = int(gl_WorkGroupID.x);
  int i = row % pc.S;
  int h = (row / pc.S) % pc.H;
  int b = row / (pc.S * pc.H);
  int hk = h / (pc.H / pc.Hkv);
  int qBase = pc.headsFirst != 0 ? ((b * pc.H + h) * pc.S + i) * pc.D
                                 : ((b * pc.S + i) * pc.H + h) * pc.D;
  for (int d = int(lid); d < pc.D; d += LOCAL_SIZE_X)
    s_q[d] = float(t_q[qBase + d]) * pc.sfQ;
  barrier();

  int sBase = row * pc.keys;
  float mx = uintBitsToFloat(0xff800000u); // -inf
  for (int j = int(lid); j < pc.keys; j += LOCAL_SIZE_X) {
    int kBase = kvBase(b, hk, j);
    float acc = 0.0;
    for (int d = 0; d < pc.D; ++d)
      acc = fma(s_q[d], float(t_k[kBase + d]) * pc.sfK, acc);
    if (pc.maskMode == 1)
      acc += j <= pc.causalOffset + i ? 0.0 : uintBitsToFloat(0xff800000u);
    else if (pc.maskMode == 2)
      acc += t_mask[i * pc.keys + j];
    t_scores[sBase + j] = acc;
    mx = max(mx, acc);
  }
  mx = workgroupMax(mx);

  float sum = 0.0;
  for (int j = int(lid); j < pc.keys; j += LOCAL_SIZE_X) {
    float e = exp(t_scores[sBase + j] - mx);
    t_scores[sBase + j] = e;
    sum += e;
  }
  // The exponentials written above are read by other invocations below.
  memoryBarrierBuffer();
  sum = workgroupSum(sum);
  float inv = 1.0 / sum;

  int vStride = pc.kvHeadsFirst != 0 ? pc.D : pc.Hkv * pc.D;
  int vBase = kvBase(b, hk, 0);
  for (int d = int(lid); d < pc.D; d += LOCAL_SIZE_X) {
    float acc = 0.0;
    for (int j = 0; j < pc.keys; ++j)
      acc = fma(t_scores[sBase + j], float(t_v[vBase + j * vStride + d]), acc);
    t_out[qBase + d] = TO_DTYPE(acc * inv);
  }
}
