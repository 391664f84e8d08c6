// linear_dq8ca_q8csw.glsl - et_vk.linear_dq8ca_q8csw: int8 per-token
// activations (already quantized by quant_affine.glsl with the op's
// input_scales / input_zp, as for linear_dq8ca_q4gsw) times an int8 weight
// [N, K] with per-output-channel scales.
//
// Per (m, n): the exact integer dot product idot = sum_k xq * w, corrected
// as ET-VK does (idot - zp_m * weight_sums[n]), then float(...) *
// (s_m * scale[n]) in f32, + bias, converted to the output dtype: the
// reference interpreter's et_vk.linear_dq8ca_q8csw (VulkanOpKernels.cpp,
// one group of K), operation for operation, and executorch's
// linear_dq8ca_q8csw_tiled.glsl epilogue (fma(float(adjusted), s_m * ws, 0)
// rounds the product once). The integers are exact (|idot| <= 2^14 K).
//
// Weights are prepackQ8's K-block-major words, as linear_q8csw.glsl reads
// them: word[k4 * N + n] holds k = 4*k4 .. 4*k4+3 of row n (byte b = k
// 4*k4+b). Each invocation computes TILE_M rows of one output column n, so
// a weight word is loaded once per TILE_M rows.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer X { int t_x[]; };
layout(set = 0, binding = 2) readonly buffer W { uint t_weight[]; };
layout(set = 0, binding = 3) readonly buffer Scales { SCALES_DTYPE t_scales[]; };
layout(set = 0, binding = 4) readonly buffer Bias { DTYPE t_bias[]; };
layout(set = 0, binding = 5) readonly buffer InScales { float t_in_scales[]; };
layout(set = 0, binding = 6) readonly buffer InZeros { int t_in_zeros[]; };
layout(set = 0, binding = 7) readonly buffer Sums { int t_sums[]; };

layout(push_constant) uniform PushConstants {
  int M;
  int N;
  int K;
  int hasBias;
} pc;

void main() {
  uint id = linearId();
  int mTiles = (pc.M + TILE_M - 1) / TILE_M;
  if (id >= uint(mTiles) * uint(pc.N))
    return;
  int n = int(id % uint(pc.N));
  int m0 = int(id / uint(pc.N)) * TILE_M;
  int idot[TILE_M];
  for (int t = 0; t < TILE_M; ++t)
    idot[t] = 0;
  int K4 = (pc.K + 3) / 4;
  for (int k4 = 0; k4 < K4; ++k4) {
    uint word = t_weight[k4 * pc.N + n];
    for (int b = 0; b < 4; ++b) {
      int k = k4 * 4 + b;
      if (k >= pc.K)
        break;
      int q = sbyte(word, uint(b));
      for (int t = 0; t < TILE_M; ++t)
        if (m0 + t < pc.M)
          idot[t] += t_x[(m0 + t) * pc.K + k] * q;
    }
  }
  float ws = float(t_scales[n]);
  int wsum = t_sums[n];
  for (int t = 0; t < TILE_M; ++t) {
    int m = m0 + t;
    if (m >= pc.M)
      break;
    precise float s = t_in_scales[m] * ws;
    precise float c = float(idot[t] - t_in_zeros[m] * wsum) * s;
    // The interpreter's accumulator starts at +0 (0 + -0 is +0).
    precise float r = 0.0;
    r += c;
    if (pc.hasBias != 0)
      r = r + float(t_bias[n]);
    t_out[m * pc.N + n] = TO_DTYPE(r);
  }
}
