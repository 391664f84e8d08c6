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
//
// GEMV (the `_cpu_gemv` variants, M = 1 on CPU drivers, LinearDq8caQ8csw.cpp)
// is built for bandwidth as linear_q4gsw_fast.glsl's CPU GEMV is
// (docs/benchmarks.md "dq8ca", "texel"): an invocation computes TILE_N
// consecutive columns, so each x load serves TILE_N columns, and reads a
// whole k4 row's 4 columns per 16-byte load (TEXELS: a storage texel, which
// llvmpipe loads per lane through its image path, far cheaper than its
// per-lane storage-buffer loads; else a uvec4 of the storage buffer, where
// N % 4 == 0, else word by word). Its integer dot is the same exact sum in
// another order (int32 wraps the same way in any order), and the epilogue
// (epilogue()) is the exact kernel's: the same bits.
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
#if TEXELS
layout(set = 0, binding = 1, rgba32ui) readonly uniform uimageBuffer t_xTexels;
layout(set = 0, binding = 2, rgba32ui) readonly uniform uimageBuffer t_wTexels;
#else
layout(set = 0, binding = 1) readonly buffer X { int t_x[]; };
layout(set = 0, binding = 2) readonly buffer W { uint t_weight[]; };
#if TILE_N > 1
layout(set = 0, binding = 1) readonly buffer X4 { ivec4 t_x4[]; };
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 t_w4[]; };
#endif
#endif
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

// Output (m, n) from its exact integer dot product: ET-VK's zero-point
// correction, then the interpreter's float operations in its order.
void epilogue(int m, int n, int idot) {
  precise float s = t_in_scales[m] * float(t_scales[n]);
  precise float c = float(idot - t_in_zeros[m] * t_sums[n]) * s;
  // The interpreter's accumulator starts at +0 (0 + -0 is +0).
  precise float r = 0.0;
  r += c;
  if (pc.hasBias != 0)
    r = r + float(t_bias[n]);
  t_out[m * pc.N + n] = TO_DTYPE(r);
}

#if TILE_N > 1
// The 4 signed bytes of `word` (k = 4 k4 .. 4 k4 + 3 of one column).
const uvec4 kByteShift = uvec4(24u, 16u, 8u, 0u);
ivec4 bytes4(uint word) {
  return ivec4(uvec4(word) << kByteShift) >> 24;
}

// 4 columns' words of k4 row `k4` starting at column n (a multiple of 4
// where `vec`, the tile whole and N % 4 == 0); a column past N re-reads
// column n's word (its result is not stored).
uvec4 loadWords(int k4, int n, int cols, bool vec) {
  int i = k4 * pc.N + n;
#if TEXELS
  return imageLoad(t_wTexels, i / 4);
#else
  if (vec)
    return t_w4[i / 4];
  uvec4 w;
  [[unroll]] for (int c = 0; c < 4; ++c)
    w[c] = t_weight[i + (c < cols ? c : 0)];
  return w;
#endif
}

void main() {
  int n0 = int(linearId()) * TILE_N;
  if (n0 >= pc.N)
    return;
  int cols = min(TILE_N, pc.N - n0);
  // TEXELS runs only where N % 4 == 0 (the host's choice); a partial last
  // tile's columns past N read the last whole group of 4 (not stored).
  bool vec = cols == TILE_N && pc.N % 4 == 0;
  ivec4 acc[TILE_N];
  [[unroll]] for (int c = 0; c < TILE_N; ++c)
    acc[c] = ivec4(0);
  int K4 = pc.K / 4;
  for (int k4 = 0; k4 < K4; ++k4) {
#if TEXELS
    ivec4 x = ivec4(imageLoad(t_xTexels, k4));
#else
    ivec4 x = t_x4[k4];
#endif
    [[unroll]] for (int j = 0; j < TILE_N / 4; ++j) {
#if TEXELS
      int n = min(n0 + 4 * j, pc.N - 4);
      int c4 = 4;
#else
      int n = n0 + min(4 * j, cols - 1);
      int c4 = min(4, cols - 4 * j);
#endif
      uvec4 w = loadWords(k4, n, c4, vec);
      [[unroll]] for (int c = 0; c < 4; ++c)
        acc[4 * j + c] += bytes4(w[c]) * x;
    }
  }
  [[unroll]] for (int c = 0; c < TILE_N; ++c)
    if (c < cols)
      epilogue(0, n0 + c, (acc[c].x + acc[c].y) + (acc[c].z + acc[c].w));
}
#else
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
  for (int t = 0; t < TILE_M; ++t) {
    if (m0 + t >= pc.M)
      break;
    epilogue(m0 + t, n, idot[t]);
  }
}
#endif
