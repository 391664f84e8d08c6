// unary.glsl - elementwise unary ops and activations, in f32 ("opmath")
// rounded once to the output dtype, with the reference's formulas:
// rsqrt = 1/sqrt(x), sigmoid = 1/(1+exp(-x)), silu = x/(1+exp(-x)),
// gelu = x*0.5*(1+erf(x*M_SQRT1_2)), gelu tanh = 0.5*x*(1+tanh(...)).
// exp/tanh are the driver's (GLSL leaves their precision to the device);
// erf is computed here (GLSL has none) to ~1e-7 absolute. clamp takes its
// bounds from the push constants. VEC4 variants compute 4 consecutive
// elements per invocation with vec4 loads and stores, the VEC4_WIDE ones 32
// as 64-bit words (main below), the VEC4_TEXEL ones 32 read as rgba32ui
// storage texels and written as 64-bit words; the last invocation takes the
// scalar tail.
// Every form has the same per-element formula: bit-exact to the scalar
// variants except sigmoid and silu (ACT_DIV below).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#include "elementwise.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
#if TEXEL
layout(set = 0, binding = 1, rgba32ui) readonly uniform uimageBuffer t_inTexels;
#else
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
#endif
#if VEC4
layout(set = 0, binding = 0) buffer Out4 { VEC4_T t_out4[]; };
#if !TEXEL
layout(set = 0, binding = 1) readonly buffer In4 { VEC4_T t_in4[]; };
#endif
#endif
#if WIDE
layout(set = 0, binding = 0) buffer Out64 { u64vec4 t_out64[]; };
#if !TEXEL
layout(set = 0, binding = 1) readonly buffer In64 { u64vec4 t_in64[]; };
#endif
#endif

layout(push_constant) uniform PushConstants {
  int numel;
  // clamp's bounds, already converted to the output dtype by the host: -inf /
  // +inf for a missing bound, both NaN when torch fills the result with NaN.
  float lo;
  float hi;
} pc;

// erf: a Maclaurin series below 1 (12 terms, Horner in x^2), and
// 1 - erfc above, with the classic Chebyshev-fitted erfc of fractional error
// below 1.2e-7 (erfc <= 0.16 there, so the absolute error is ~2e-8).
float erfApprox(float x) {
  float z = abs(x);
  if (z < 1.0) {
    float x2 = x * x;
    // 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
    const float c[12] = float[12](1.0, -1.0 / 3.0, 1.0 / 10.0, -1.0 / 42.0, 1.0 / 216.0,
                                  -1.0 / 1320.0, 1.0 / 9360.0, -1.0 / 75600.0,
                                  1.0 / 685440.0, -1.0 / 6894720.0, 1.0 / 76204800.0,
                                  -1.0 / 918086400.0);
    float s = c[11];
    for (int i = 10; i >= 0; --i)
      s = s * x2 + c[i];
    return 1.1283791670955126 * x * s;
  }
  float t = 1.0 / (1.0 + 0.5 * z);
  float e = t * exp(-z * z - 1.26551223 +
                    t * (1.00002368 +
                         t * (0.37409196 +
                              t * (0.09678418 +
                                   t * (-0.18628806 +
                                        t * (0.27886807 +
                                             t * (-1.13520398 +
                                                  t * (1.48851587 +
                                                       t * (-0.82215223 + t * 0.17087277)))))))));
  float r = 1.0 - e;
  return x < 0.0 ? -r : r;
}

float apply(float x) {
#if defined(OP_neg)
  precise float r = -x;
#elif defined(OP_abs)
  precise float r = abs(x);
#elif defined(OP_relu)
  float r = selectBits(isNanBits(x) || ltBits(0.0, x), x, 0.0);
#elif defined(OP_sigmoid)
  precise float r = ACT_DIV(1.0, 1.0 + exp(-x));
#elif defined(OP_silu)
  precise float r = SILU(x);
#elif defined(OP_gelu)
  precise float r = x * 0.5 * (1.0 + erfApprox(x * 0.70710678118654752440));
#elif defined(OP_gelu_tanh)
  precise float cube = x * x * x;
  precise float inner = 0.79788456080286535588 * (x + 0.044715 * cube);
  precise float r = 0.5 * x * (1.0 + tanh(clamp(inner, -15.0, 15.0)));
#elif defined(OP_rsqrt)
  precise float r = divRN(1.0, sqrtRN(x));
#elif defined(OP_sqrt)
  precise float r = sqrtRN(x);
#elif defined(OP_exp)
  float r = exp(x);
#elif defined(OP_reciprocal)
  precise float r = divRN(1.0, x);
#elif defined(OP_clamp)
  // std::min(std::max(x, lo), hi) (common.glslh's stdMax/stdMin, on the
  // bits: GLSL's min/max and a driver's float selects may drop NaN and the
  // sign of equal zeros), so a NaN x stays x and max(-0.0, 0.0) is -0.0 as in
  // the reference; NaN bounds (torch's NaN fill) give NaN.
  float r = stdMin(stdMax(x, pc.lo), pc.hi);
  r = selectBits(isNanBits(pc.lo), pc.lo, r);
#else
#error "unsupported op"
#endif
  return r;
}

#if VEC4
vec4 apply4(vec4 x) {
  return vec4(apply(x.x), apply(x.y), apply(x.z), apply(x.w));
}

void main() {
  uint id = linearId();
  uint first = PER * id;
  if (first >= uint(pc.numel))
    return;
  if (first + PER <= uint(pc.numel)) {
#if TEXEL
    [[unroll]] for (uint j = 0u; j < PER / 8u; ++j) {
      int texel = int(PER / 4u * id + 2u * j);
      vec4 a = uintBitsToFloat(imageLoad(t_inTexels, texel));
      vec4 b = uintBitsToFloat(imageLoad(t_inTexels, texel + 1));
      t_out64[PER / 8u * id + j] = u64vec4(store64(apply4(a)), store64(apply4(b)));
    }
#elif WIDE
    [[unroll]] for (uint j = 0u; j < PER / 8u; ++j) {
      u64vec4 x = t_in64[PER / 8u * id + j];
      t_out64[PER / 8u * id + j] =
          u64vec4(store64(apply4(load64(x.xy))), store64(apply4(load64(x.zw))));
    }
#else
    t_out4[id] = store4(apply4(vec4(t_in4[id])));
#endif
    return;
  }
  for (uint i = first; i < uint(pc.numel); ++i)
#if TEXEL
    // The runtime's view covers whole texels (buffers are allocated in 16-byte
    // units), so the last partial texel is readable.
    t_out[i] = apply(uintBitsToFloat(imageLoad(t_inTexels, int(i / 4u))[i % 4u]));
#else
    t_out[i] = TO_DTYPE(apply(float(t_in[i])));
#endif
}
#else
void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  t_out[id] = TO_DTYPE(apply(float(t_in[id])));
}
#endif
