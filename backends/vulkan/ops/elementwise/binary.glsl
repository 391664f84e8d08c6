// binary.glsl - elementwise binary ops with torch broadcasting.
// out (contiguous, `sizes`) = OP(a, b) where a and b are read through
// broadcast strides (0 on broadcast dims), or b is the push-constant scalar.
// Float math is f32 ("opmath") rounded once to the output dtype, with the
// reference's exact formulas: add/sub `a + alpha*b` (plain `a + b` when
// alpha == 1), pow only for the exponents PowKernel.cpp special-cases.
// VEC4 variants (float dtypes, both operands of the output's shape or b a
// scalar): each invocation computes 4 consecutive elements with vec4 loads
// and stores (32 as 64-bit words in the VEC4_WIDE ones), the last invocation
// the scalar tail; the per-element formula is the same `precise` one, so
// they are bit-exact too. The VEC4_TEXEL variants are the WIDE ones reading
// both operands as rgba32ui storage texels (unary.glsl says why).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#if VEC4_TEXEL && WIDE
#define TEXEL 1
#else
#define TEXEL 0
#endif

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
#if TEXEL
layout(set = 0, binding = 1, rgba32ui) readonly uniform uimageBuffer t_aTexels;
layout(set = 0, binding = 2, rgba32ui) readonly uniform uimageBuffer t_bTexels;
// Element i of an operand: the runtime's view covers whole texels (buffers
// are allocated in 16-byte units), so the last partial texel is readable.
#define LOAD_A(i) uintBitsToFloat(imageLoad(t_aTexels, int((i) / 4u))[(i) % 4u])
#define LOAD_B(i) uintBitsToFloat(imageLoad(t_bTexels, int((i) / 4u))[(i) % 4u])
#else
layout(set = 0, binding = 1) readonly buffer A { DTYPE t_a[]; };
layout(set = 0, binding = 2) readonly buffer B { DTYPE t_b[]; };
#define LOAD_A(i) float(t_a[i])
#define LOAD_B(i) float(t_b[i])
#endif
#if VEC4
// The same buffers as 16-byte (8-byte for f16) vectors.
layout(set = 0, binding = 0) buffer Out4 { VEC4_T t_out4[]; };
#if !TEXEL
layout(set = 0, binding = 1) readonly buffer A4 { VEC4_T t_a4[]; };
layout(set = 0, binding = 2) readonly buffer B4 { VEC4_T t_b4[]; };
#endif
#endif
#if WIDE
layout(set = 0, binding = 0) buffer Out64 { u64vec4 t_out64[]; };
#if !TEXEL
layout(set = 0, binding = 1) readonly buffer A64 { u64vec4 t_a64[]; };
layout(set = 0, binding = 2) readonly buffer B64 { u64vec4 t_b64[]; };
#endif
#endif

layout(push_constant) uniform PushConstants {
  int rank;
  int numel;
  int bIsScalar;
  int contiguous; // bit 0: a has the output's shape, bit 1: b does (no index math)
  float alpha;
  float scalar;
  int sizes[8];
  int aStrides[8];
  int bStrides[8];
} pc;

#if !DTYPE_IS_INT
float apply(float a, float b) {
#if defined(OP_add)
  precise float r = pc.alpha == 1.0 ? a + b : a + pc.alpha * b;
#elif defined(OP_sub)
  precise float r = pc.alpha == 1.0 ? a - b : a - pc.alpha * b;
#elif defined(OP_mul)
  precise float r = a * b;
#elif defined(OP_div)
  float r = divRN(a, b);
#elif defined(OP_maximum)
  // NaN if either is NaN, else std::max (common.glslh: on the bits, since
  // drivers may drop NaN and the sign of zero from float compares).
  float r = nanMax(a, b);
#elif defined(OP_minimum)
  float r = nanMin(a, b);
#elif defined(OP_pow)
  precise float r;
  if (b == 2.0)
    r = a * a;
  else if (b == 3.0)
    r = a * a * a;
  else if (b == 0.5)
    r = sqrtRN(a);
  else if (b == -0.5)
    r = divRN(1.0, sqrtRN(a));
  else if (b == -1.0)
    r = divRN(1.0, a);
  else if (b == -2.0)
    r = divRN(1.0, a * a);
  else
    r = pow(a, b);
#else
#error "unsupported op"
#endif
  return r;
}
#endif

#if VEC4
vec4 apply4(vec4 a, vec4 b) {
  return vec4(apply(a.x, b.x), apply(a.y, b.y), apply(a.z, b.z), apply(a.w, b.w));
}

// Elements per invocation: 4, or 32 in the WIDE variants as four u64vec4
// per operand (an invocation has a fixed cost on lavapipe; unary.glsl).
#if WIDE
#define PER 32u
#else
#define PER 4u
#endif

void main() {
  uint id = linearId();
  uint first = PER * id;
  if (first >= uint(pc.numel))
    return;
  if (first + PER <= uint(pc.numel)) {
#if TEXEL
    [[unroll]] for (uint j = 0u; j < PER / 8u; ++j) {
      uint k = PER / 8u * id + j;
      int texel = int(2u * k);
      vec4 b0 = vec4(pc.scalar), b1 = b0;
      if (pc.bIsScalar == 0) {
        b0 = uintBitsToFloat(imageLoad(t_bTexels, texel));
        b1 = uintBitsToFloat(imageLoad(t_bTexels, texel + 1));
      }
      t_out64[k] = u64vec4(store64(apply4(uintBitsToFloat(imageLoad(t_aTexels, texel)), b0)),
                           store64(apply4(uintBitsToFloat(imageLoad(t_aTexels, texel + 1)), b1)));
    }
#elif WIDE
    [[unroll]] for (uint j = 0u; j < PER / 8u; ++j) {
      uint k = PER / 8u * id + j;
      u64vec4 a = t_a64[k];
      vec4 b0 = vec4(pc.scalar), b1 = b0;
      if (pc.bIsScalar == 0) {
        u64vec4 b = t_b64[k];
        b0 = load64(b.xy);
        b1 = load64(b.zw);
      }
      t_out64[k] = u64vec4(store64(apply4(load64(a.xy), b0)), store64(apply4(load64(a.zw), b1)));
    }
#else
    vec4 b = pc.bIsScalar != 0 ? vec4(pc.scalar) : vec4(t_b4[id]);
    t_out4[id] = store4(apply4(vec4(t_a4[id]), b));
#endif
    return;
  }
  // The tail: the last numel % PER elements.
  for (uint i = first; i < uint(pc.numel); ++i) {
    float b = pc.bIsScalar != 0 ? pc.scalar : LOAD_B(i);
    t_out[i] = TO_DTYPE(apply(LOAD_A(i), b));
  }
}
#else
void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int ia = int(id);
  int ib = int(id);
  if (pc.contiguous != 3) {
    // Broadcasting: decompose the index (integer division is slow on some
    // devices, so the common same-shape case above skips it).
    int rem = int(id);
    ia = 0;
    ib = 0;
    for (int d = pc.rank - 1; d >= 0; --d) {
      int i = rem % pc.sizes[d];
      rem /= pc.sizes[d];
      ia += i * pc.aStrides[d];
      ib += i * pc.bStrides[d];
    }
  }
#if DTYPE_IS_INT
  int a = t_a[ia];
  int b = pc.bIsScalar != 0 ? int(pc.scalar) : t_b[ib];
  int al = int(pc.alpha);
#if defined(OP_add)
  int r = a + al * b;
#elif defined(OP_sub)
  int r = a - al * b;
#elif defined(OP_mul)
  int r = a * b;
#elif defined(OP_maximum)
  int r = max(a, b);
#elif defined(OP_minimum)
  int r = min(a, b);
#else
#error "unsupported integer op"
#endif
  t_out[id] = r;
#else
  float a = float(t_a[ia]);
  float b = pc.bIsScalar != 0 ? pc.scalar : float(t_b[ib]);
  t_out[id] = TO_DTYPE(apply(a, b));
#endif
}
#endif
