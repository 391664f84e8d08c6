// linear_q4gsw.glsl - int4 group-wise symmetric weight linears:
//   MODE weight_only: et_vk.linear_q4gsw and et_vk.linear_qcs4w (one group);
//   MODE dq8ca:       et_vk.linear_dq8ca_q4gsw (int8 per-token activations).
//
// The bit-exact kernels, used with ContextOptions::exactKernels and for
// shapes linear_q4gsw_fast.glsl does not take (K or group size not a
// multiple of 32). Weights are prepacked on the host (see Linear.cpp
// prepackQ4) into 32-bit words, row-major: word[n * rowWords + k8] holds
// k = 8*k8 .. 8*k8+7 of row n, nibble i = (w + 8) for k = 8*k8 + i. Scales are [groups, scaleStride]
// (ExecuTorch's transposed [G, N_pad] layout), read as scales[g*stride + n].
//
// weight_only matches the reference bit for bit: w = float(q) * scale in
// f32 (rounded to f16 first for f16 activations, as the reference converts
// the weight to the input's dtype), then a sequential f32 dot product
// without FMA, then + bias.
// dq8ca takes activations already quantized per token (xq, zero point zp,
// scale s per row; see quant_affine.glsl) and computes, per group, the
// exact integer dot product sum xq * q corrected with the weight sums as
// ET-VK does (idot - zp * weight_sums[g, n]), then accumulates
// float(idot) * (s * scale[g, n]) in f32: the reference interpreter's
// et_vk.linear_dq8ca_q4gsw (VulkanOpKernels.cpp), operation for operation.
//
// Each invocation computes TILE_M rows of one output column n, so a weight
// word is loaded once per TILE_M rows.
#include "common.glslh"

#if defined(MODE_dq8ca)
layout(set = 0, binding = 1) readonly buffer X { int t_x[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { DTYPE t_x[]; };
#endif
layout(set = 0, binding = 2) readonly buffer W { uint t_weight[]; };

// One invocation per tile: no team to reduce over.
#define TEAM 1
#define TEAM_VALUES 1
#include "q4_linear.glslh"

void main() {
  uint id = linearId();
  int mTiles = (pc.M + TILE_M - 1) / TILE_M;
  if (id >= uint(mTiles) * uint(pc.N))
    return;
  int n = int(id % uint(pc.N));
  int m0 = int(id / uint(pc.N)) * TILE_M;
  precise float acc[TILE_M];
  for (int t = 0; t < TILE_M; ++t)
    acc[t] = 0.0;
  int K8 = (pc.K + 7) / 8;
#if defined(MODE_dq8ca)
  int idot[TILE_M];
  int zp[TILE_M];
  for (int t = 0; t < TILE_M; ++t) {
    idot[t] = 0;
    zp[t] = m0 + t < pc.M ? t_in_zeros[m0 + t] : 0;
  }
  int group = 0;
#endif
  // The group index advances every groupSize values of k (no division in
  // the inner loop).
  int g = 0;
  int groupEnd = pc.groupSize;
#if !defined(MODE_dq8ca)
  float s = float(t_scales[n]);
#endif
  for (int k8 = 0; k8 < K8; ++k8) {
    uint word = t_weight[n * 4 * pc.rowVec4 + k8];
    for (int i = 0; i < 8; ++i) {
      int k = k8 * 8 + i;
      if (k >= pc.K)
        break;
      if (k == groupEnd) {
        ++g;
        groupEnd += pc.groupSize;
#if !defined(MODE_dq8ca)
        s = float(t_scales[g * pc.scaleStride + n]);
#endif
      }
      int q = int(nibble(word, uint(i))) - 8;
#if defined(MODE_dq8ca)
      if (g != group) {
        // Close the previous group: acc += float(idot) * (s_m * scale[g, n]).
        float ws = float(t_scales[group * pc.scaleStride + n]);
        int wsum = t_sums[group * pc.sumsStride + n];
        for (int t = 0; t < TILE_M; ++t) {
          if (m0 + t < pc.M) {
            precise float s = t_in_scales[m0 + t] * ws;
            precise float c = float(idot[t] - zp[t] * wsum) * s;
            acc[t] += c;
          }
          idot[t] = 0;
        }
        group = g;
      }
      for (int t = 0; t < TILE_M; ++t)
        if (m0 + t < pc.M)
          idot[t] += t_x[(m0 + t) * pc.K + k] * q;
#else
      precise float w = float(q) * s;
#if DTYPE_IS_HALF
      w = roundToHalf(w);
#endif
      for (int t = 0; t < TILE_M; ++t) {
        if (m0 + t < pc.M) {
          precise float p = float(t_x[(m0 + t) * pc.K + k]) * w;
          acc[t] += p;
        }
      }
#endif
    }
  }
#if defined(MODE_dq8ca)
  float ws = float(t_scales[group * pc.scaleStride + n]);
  int wsum = t_sums[group * pc.sumsStride + n];
  for (int t = 0; t < TILE_M; ++t) {
    if (m0 + t < pc.M) {
      precise float s = t_in_scales[m0 + t] * ws;
      precise float c = float(idot[t] - zp[t] * wsum) * s;
      acc[t] += c;
    }
  }
#endif
  for (int t = 0; t < TILE_M; ++t) {
    int m = m0 + t;
    if (m >= pc.M)
      break;
    precise float r = acc[t];
    if (pc.hasBias != 0)
      r = r + float(t_bias[n]);
    t_out[m * pc.N + n] = TO_DTYPE(r);
  }
}
