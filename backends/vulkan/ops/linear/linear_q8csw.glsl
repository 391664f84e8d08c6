// linear_q8csw.glsl - int8 per-output-channel weight linears:
//   MODE int8pack: aten._weight_int8pack_mm(x, w, scales):
//                  out = (sum_k x * float(w)) * scales[n], rounded once;
//   MODE q8ta(_int): et_vk.linear_q8ta_q8csw (float or int8 x)(x, input_scale, input_zero_point, ...):
//                  x is (or is first quantized to) int8 per tensor, then
//                  dequantized as (float(xq) - zp) * input_scale, times the
//                  dequantized weight float(w) * scales[n], sequential f32
//                  sum, then + bias. For integer x this is the reference's
//                  computation exactly.
//   MODE q8ta_q8to: et_vk.q8ta_linear / q8ta_linear_gemv (int8 x): q8ta_int,
//                  then relu if asked, then quantize_per_tensor to int8:
//                  clamp(roundEven(r * f32(1 / output_scale)) + output_zp,
//                  -128, 127), the reference's operations in its order.
// Weights are prepacked K-block major: word[k4 * N + n] holds the int8
// values k = 4*k4 .. 4*k4+3 of row n (byte b = k 4*k4+b).
#include "common.glslh"

#if defined(MODE_q8ta_q8to)
#define MODE_q8ta_int 1
layout(set = 0, binding = 0) buffer Out { int t_out[]; };
#else
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
#endif
#if defined(MODE_q8ta_int)
#define MODE_q8ta 1
layout(set = 0, binding = 1) readonly buffer X { int t_x[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { DTYPE t_x[]; };
#endif
layout(set = 0, binding = 2) readonly buffer W { uint t_weight[]; };
layout(set = 0, binding = 3) readonly buffer Scales { SCALES_DTYPE t_scales[]; };
layout(set = 0, binding = 4) readonly buffer Bias { DTYPE t_bias[]; };

layout(push_constant) uniform PushConstants {
  int M;
  int N;
  int K;
  int hasBias;
  float inputScale;
  float inputInvScale;
  int inputZeroPoint;
  float outputInvScale;
  int outputZeroPoint;
  int relu;
} pc;

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
  float s = float(t_scales[n]);
  int K4 = (pc.K + 3) / 4;
  for (int k4 = 0; k4 < K4; ++k4) {
    uint word = t_weight[k4 * pc.N + n];
    for (int b = 0; b < 4; ++b) {
      int k = k4 * 4 + b;
      if (k >= pc.K)
        break;
      float q = float(sbyte(word, uint(b)));
#if defined(MODE_q8ta)
      precise float w = q * s;
#if DTYPE_IS_HALF
      w = roundToHalf(w);
#endif
#else
      float w = q;
#endif
      for (int t = 0; t < TILE_M; ++t) {
        if (m0 + t >= pc.M)
          break;
#if defined(MODE_q8ta)
#if defined(MODE_q8ta_int)
        float xq = float(t_x[(m0 + t) * pc.K + k]);
#else
        precise float xs = float(t_x[(m0 + t) * pc.K + k]) * pc.inputInvScale;
        float xq = clamp(roundEven(xs) + float(pc.inputZeroPoint), -128.0, 127.0);
#endif
        precise float xd = (xq - float(pc.inputZeroPoint)) * pc.inputScale;
        precise float p = xd * w;
#else
        precise float p = float(t_x[(m0 + t) * pc.K + k]) * w;
#endif
        acc[t] += p;
      }
    }
  }
  for (int t = 0; t < TILE_M; ++t) {
    int m = m0 + t;
    if (m >= pc.M)
      break;
#if defined(MODE_q8ta)
    precise float r = acc[t];
    if (pc.hasBias != 0)
      r = r + float(t_bias[n]);
#if defined(MODE_q8ta_q8to)
    // r < 0 is false for NaN, which relu keeps, as torch's does.
    if (pc.relu != 0 && r < 0.0)
      r = 0.0;
    precise float y = r * pc.outputInvScale;
    float q = clamp(roundEven(y) + float(pc.outputZeroPoint), -128.0, 127.0);
    t_out[m * pc.N + n] = int(q);
#else
    t_out[m * pc.N + n] = TO_DTYPE(r);
#endif
#else
    precise float r = acc[t] * s;
    t_out[m * pc.N + n] = TO_DTYPE(r);
#endif
  }
}
