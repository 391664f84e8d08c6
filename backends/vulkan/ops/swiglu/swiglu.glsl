// swiglu.glsl - et_vk.swiglu (executorch backends/vulkan/patterns/swiglu.py):
// out = silu(gate) * up with silu(x) = x / (1 + exp(-x)), in f32 ("opmath"),
// the product rounded once to the output dtype, as the reference interpreter
// computes it. gate and up are read through broadcast strides (0 on
// broadcast dims) in the scalar variant; the VEC4 variants (both of the
// output's shape) take 4 consecutive elements per invocation, the VEC4_WIDE
// ones 32 as 64-bit words (binary.glsl's access), the VEC4_TEXEL ones the
// same 32 with gate and up read as rgba32ui storage texels (binary.glsl's
// texel access; the launcher picks it on CPU drivers where texelReads allows,
// since llvmpipe loads a texel per lane but a storage-buffer word through a
// per-lane scalar loop; f32 only, as WIDE). The division is elementwise.glslh's
// silu division: correctly rounded (divRN) in the scalar variants (the +exact
// profile), GLSL's `/` in the vec4 ones; exp is the driver's in both, so
// neither is bit-exact to the interpreter (docs/numerics.md states the bound).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

// a is gate, b is up.
#include "elementwise.glslh"
#include "elementwise_ab.glslh"

float apply(float g, float u) {
  precise float s = SILU(g);
  precise float r = s * u;
  return r;
}

#if VEC4
vec4 apply4(vec4 g, vec4 u) {
  return vec4(apply(g.x, u.x), apply(g.y, u.y), apply(g.z, u.z), apply(g.w, u.w));
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
      vec4 g0 = uintBitsToFloat(imageLoad(t_aTexels, texel));
      vec4 g1 = uintBitsToFloat(imageLoad(t_aTexels, texel + 1));
      vec4 u0 = uintBitsToFloat(imageLoad(t_bTexels, texel));
      vec4 u1 = uintBitsToFloat(imageLoad(t_bTexels, texel + 1));
      t_out64[k] = u64vec4(store64(apply4(g0, u0)), store64(apply4(g1, u1)));
    }
#elif WIDE
    [[unroll]] for (uint j = 0u; j < PER / 8u; ++j) {
      uint k = PER / 8u * id + j;
      u64vec4 g = t_a64[k];
      u64vec4 u = t_b64[k];
      t_out64[k] = u64vec4(store64(apply4(load64(g.xy), load64(u.xy))),
                           store64(apply4(load64(g.zw), load64(u.zw))));
    }
#else
    t_out4[id] = store4(apply4(vec4(t_a4[id]), vec4(t_b4[id])));
#endif
    return;
  }
  // The tail: the last numel % PER elements.
  for (uint i = first; i < uint(pc.numel); ++i)
    t_out[i] = TO_DTYPE(apply(LOAD_A(i), LOAD_B(i)));
}
#else
void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int ig = int(id);
  int iu = int(id);
  if (pc.contiguous != 3)
    BROADCAST_INDEX(id, ig, iu)
  t_out[id] = TO_DTYPE(apply(float(t_a[ig]), float(t_b[iu])));
}
#endif
