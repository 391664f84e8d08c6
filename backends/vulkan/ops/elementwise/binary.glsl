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
// both operands as rgba32ui storage texels (elementwise.glslh says why).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#include "elementwise.glslh"
#include "elementwise_ab.glslh"

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
  if (pc.contiguous != 3)
    BROADCAST_INDEX(id, ia, ib)
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
