// embedding_q4gsw_fast.glsl - et_vk.embedding_q4gsw as a vectorized gather.
// Each invocation takes whole 16-byte blocks of one packed row (32 values,
// as ET-VK's embedding_q4gsw.glsl does per invocation: pytorch/executorch
// backends/vulkan/runtime/graph/ops/glsl), unpacks their nibbles with shifts
// and masks four at a time and writes the values as contiguous vec4s:
//   * the vec4 variants: one block (a uvec4) per invocation, 8 vec4 stores
//     (D % 32 == 0, groupSize % 32 == 0: one scale);
//   * the VEC4_WIDE variants (f32 on CPU drivers with shaderInt64, where each
//     loaded or stored component costs a lane loop and each invocation a
//     fixed overhead): two blocks (one u64vec4) per invocation and the 64
//     values stored as 8 u64vec4 (D % 64 == 0; a scale per block), half the
//     store components per value and half the invocations. On lavapipe the
//     4096 x 2048 gather took 13.3-13.5 ms of CPU time with the vec4 form,
//     9.1-10.3 ms with this one (docs/benchmarks.md, 2026-11-27);
//   * TEXELS (the `_fastt` variants: the wide form where Embedding.cpp's
//     texelReads allows the packed table, indices and scales) reads its two
//     blocks as two rgba32ui texels, its index and scales as components of
//     texels (f16 has no wide form, so no texel one): llvmpipe loads a texel
//     per lane through its image path, cheaper than its per-lane
//     storage-buffer loads (as for the q4gsw GEMV); the same bits, so the
//     same result. 4096 x 2048 on lavapipe: 9.0-9.9 ms CPU against
//     9.8-10.8 (docs/benchmarks.md, 2026-11-28).
// Each value is float(nibble - 8) * scale, one f32 product as in
// embedding_q4gsw.glsl, so the result is bit-exact to it and to the
// reference. The host falls back to embedding_q4gsw.glsl for other shapes.
// An index outside [0, V) writes zeros and sets t_status[0] = 1.
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#if WIDE
layout(set = 0, binding = 0) writeonly buffer Out { u64vec4 t_out8[]; };
#if TEXELS
layout(set = 0, binding = 2, rgba32ui) readonly uniform uimageBuffer t_wTexels;
#else
layout(set = 0, binding = 2) readonly buffer W { u64vec4 t_weight64[]; };
#endif
#define BLOCKS 2u
#else
layout(set = 0, binding = 0) writeonly buffer Out { VEC4_T t_out4[]; };
layout(set = 0, binding = 2) readonly buffer W { uvec4 t_weight4[]; };
#define BLOCKS 1u
#endif
#include "embedding_q4gsw.glslh"

// The 8 values of one 32-bit word of a packed row, dequantized: value i is
// nibble i in the linear order; embedding_4bit's puts element 2j in the high
// nibble of byte j, so its nibbles are swapped first.
void dequantWord(uint word, float s, out vec4 lo, out vec4 hi) {
#if !IS_LINEAR_WEIGHT
  word = ((word >> 4u) & 0x0F0F0F0Fu) | ((word & 0x0F0F0F0Fu) << 4u);
#endif
  const uvec4 shifts = uvec4(0u, 4u, 8u, 12u);
  lo = vec4(ivec4((uvec4(word) >> shifts) & 0xFu) - 8) * s;
  hi = vec4(ivec4((uvec4(word) >> (shifts + 16u)) & 0xFu) - 8) * s;
}

float blockScale(int row, uint block) {
  int d = int(block) * 32;
  int g = pc.groupShift >= 0 ? (d >> pc.groupShift) : d / pc.groupSize;
#if TEXELS && WIDE
  uint k = uint(row * pc.scaleRowStride + g);
  return uintBitsToFloat(imageLoad(t_sTexels, int(k >> 2u))[k & 3u]);
#else
  return float(t_scales[row * pc.scaleRowStride + g]);
#endif
}

void main() {
  uint id = linearId();
  const uint values = 32u * BLOCKS;
  uint chunks = uint(pc.D) / values;
  if (id >= uint(pc.numIndices) * chunks)
    return;
  // Invocation id -> (index i, chunk c of its row); a shift when the chunks
  // per row are a power of two (llvmpipe divides each lane separately).
  uint i = pc.chunkShift >= 0 ? id >> uint(pc.chunkShift) : id / chunks;
  uint c = id - i * chunks;
#if TEXELS && WIDE
  int row = int(imageLoad(t_iTexels, int(i >> 2u))[i & 3u]);
#else
  int row = t_indices[i];
#endif
  bool bad = row < 0 || row >= pc.V;
  if (bad)
    t_status[0] = 1u;
#if WIDE
  // 8 u64vec4 of output (64 f32) per invocation.
  uint o = id * 8u;
  if (bad) {
    [[unroll]] for (uint j = 0u; j < 8u; ++j)
      t_out8[o + j] = u64vec4(0ul);
    return;
  }
  // The row's two blocks of this chunk, 4 words each.
#if TEXELS
  int t = row * (pc.rowBytes / 16) + 2 * int(c);
  uvec4 blocks[2] = uvec4[2](imageLoad(t_wTexels, t), imageLoad(t_wTexels, t + 1));
#else
  u64vec4 w = t_weight64[uint(row) * (uint(pc.rowBytes) / 32u) + c];
  uvec4 blocks[2] = uvec4[2](uvec4(unpackUint2x32(w.x), unpackUint2x32(w.y)),
                             uvec4(unpackUint2x32(w.z), unpackUint2x32(w.w)));
#endif
  [[unroll]] for (uint b = 0u; b < 2u; ++b) {
    float s = blockScale(row, 2u * c + b);
    [[unroll]] for (uint k = 0u; k < 2u; ++k) {
      uvec2 words = uvec2(blocks[b][2u * k], blocks[b][2u * k + 1u]);
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        vec4 lo, hi;
        dequantWord(words[h], s, lo, hi);
        t_out8[o + 4u * b + 2u * k + h] =
            u64vec4(store64(lo), store64(hi));
      }
    }
  }
#else
  uint o = id * 8u; // the 8 output vec4s of this block
  if (bad) {
    [[unroll]] for (uint j = 0u; j < 8u; ++j)
      t_out4[o + j] = VEC4_T(vec4(0.0));
    return;
  }
  uvec4 w = t_weight4[uint(row) * (uint(pc.rowBytes) / 16u) + c];
  float s = blockScale(row, c);
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    vec4 lo, hi;
    dequantWord(w[j], s, lo, hi);
    t_out4[o + 2u * j] = store4(lo);
    t_out4[o + 2u * j + 1u] = store4(hi);
  }
#endif
}
