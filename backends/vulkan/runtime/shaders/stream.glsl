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
// STRIDED (the `vec4x4` GPU candidate) copies STRIDED vec4s per invocation,
// one per slice of the grid (invocation id takes id, id + T, id + 2T, ...
// for T invocations, so every load instruction of a subgroup still reads
// consecutive addresses), all loads issued before any store: more bytes in
// flight per invocation than the one-vec4 copy, which reached 62 % of a
// PyTorch copy on an H200 (docs/benchmarks.md). The benchmark takes the
// faster of the GPU candidates as the ceiling.
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { vec4 t_out[]; };
#if TEXEL_IN
layout(set = 0, binding = 1, rgba32ui) readonly uniform uimageBuffer t_inTexels;
#else
layout(set = 0, binding = 1) readonly buffer In { vec4 t_in[]; };
#endif
#if STRIDED && (VEC4_WIDE || TEXEL_IN)
#error "the strided copy is the GPU candidate: vec4 loads and stores"
#endif
#if VEC4_WIDE
layout(set = 0, binding = 0) writeonly buffer Out256 { u64vec4 t_out256[]; };
#if !TEXEL_IN
layout(set = 0, binding = 1) readonly buffer In256 { u64vec4 t_in256[]; };
#endif
#define PER 8u
#elif STRIDED
#define PER uint(STRIDED)
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
#elif STRIDED
  // The host dispatches T = ceil(numVec4 / PER) invocations; invocation id
  // copies id + j T of slice j = 0 .. PER - 1 (the last slice may be short).
  const uint T = (uint(pc.numVec4) + PER - 1u) / PER;
  vec4 v[PER];
  [[unroll]] for (uint j = 0u; j < PER; ++j)
    if (id + j * T < uint(pc.numVec4))
      v[j] = t_in[id + j * T];
  [[unroll]] for (uint j = 0u; j < PER; ++j)
    if (id + j * T < uint(pc.numVec4))
      t_out[id + j * T] = v[j];
#else
  t_out[id] = t_in[id];
#endif
}
