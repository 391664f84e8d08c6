// stream.glsl - the bandwidth calibration kernel: out[i] = in[i] over vec4s
// (16 bytes read and 16 written per vec4), the ceiling every kernel's GB/s is
// compared with in bench/VulkanBench.cpp (BM_VkStream), launched by
// vk::streamCopy (ops/copy/Copy.cpp). PER vec4s per invocation: the GPU
// variant copies one (consecutive lanes, consecutive addresses); the VEC4_WIDE
// variant, for CPU drivers with shaderInt64 (chosen as the wide elementwise
// kernels are), copies 8 as four 32-byte u64vec4 words. On lavapipe a load or
// store costs per component and an invocation has a fixed cost of its own, so
// the vec4-per-invocation copy was no ceiling: the wide unary and binary
// kernels (16 values per invocation) beat it by up to 1.5x. 8 per invocation
// in 64-wide workgroups was the fastest of a sweep over 1-16 vec4s, vec4 or
// u64vec4 accesses, workgroups of 8-256 (docs/benchmarks.md, 2026-11-27).
// TEXEL_IN (the `vec4t` variant, CPU drivers with storage texel buffers
// whose limit holds the input) reads the vec4s as rgba32ui texels: llvmpipe
// loads a texel per lane through its image path, cheaper than its per-lane
// storage-buffer loads, and kernels read weights that way, so the ceiling
// must too (1.2x the vec4w copy's bandwidth per CPU second, 2026-11-28).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { vec4 t_out[]; };
#if TEXEL_IN
layout(set = 0, binding = 1, rgba32ui) readonly uniform uimageBuffer t_inTexels;
#else
layout(set = 0, binding = 1) readonly buffer In { vec4 t_in[]; };
#endif
#if VEC4_WIDE
layout(set = 0, binding = 0) writeonly buffer Out256 { u64vec4 t_out256[]; };
#if !TEXEL_IN
layout(set = 0, binding = 1) readonly buffer In256 { u64vec4 t_in256[]; };
#endif
#define PER 8u
#else
#define PER 1u
#endif

layout(push_constant) uniform PushConstants {
  int numVec4;
} pc;

void main() {
  uint id = linearId();
  uint first = PER * id;
  if (first >= uint(pc.numVec4))
    return;
#if TEXEL_IN
  if (first + PER <= uint(pc.numVec4)) {
    [[unroll]] for (uint j = 0u; j < PER / 2u; ++j) {
      uvec4 a = imageLoad(t_inTexels, int(first + 2u * j));
      uvec4 b = imageLoad(t_inTexels, int(first + 2u * j + 1u));
      t_out256[PER / 2u * id + j] = u64vec4(packUint2x32(a.xy), packUint2x32(a.zw),
                                            packUint2x32(b.xy), packUint2x32(b.zw));
    }
    return;
  }
  for (uint i = first; i < uint(pc.numVec4); ++i)
    t_out[i] = uintBitsToFloat(imageLoad(t_inTexels, int(i)));
#elif VEC4_WIDE
  if (first + PER <= uint(pc.numVec4)) {
    [[unroll]] for (uint j = 0u; j < PER / 2u; ++j)
      t_out256[PER / 2u * id + j] = t_in256[PER / 2u * id + j];
    return;
  }
  // The last invocation's partial block, one vec4 at a time.
  for (uint i = first; i < uint(pc.numVec4); ++i)
    t_out[i] = t_in[i];
#else
  t_out[id] = t_in[id];
#endif
}
