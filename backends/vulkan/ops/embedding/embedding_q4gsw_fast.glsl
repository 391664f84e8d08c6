// embedding_q4gsw_fast.glsl - et_vk.embedding_q4gsw as a vectorized gather:
// one invocation per 32 consecutive output elements of one row, which are
// one uvec4 of the packed row (D % 32 == 0, so a row is whole uvec4s) and
// lie in one quantization group (groupSize % 32 == 0: one scale read). The
// nibbles are unpacked with shifts and masks four at a time and written as
// 8 vec4. Each value is float(nibble - 8) * scale, one f32 product as in
// embedding_q4gsw.glsl, so the result is bit-exact to it and to the
// reference. The host falls back to embedding_q4gsw.glsl for other shapes.
// An index outside [0, V) writes zeros and sets t_status[0] = 1.
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { VEC4_T t_out4[]; };
layout(set = 0, binding = 2) readonly buffer W { uvec4 t_weight4[]; };
#include "embedding_q4gsw.glslh"

void main() {
  uint id = linearId();
  uint chunks = uint(pc.D) / 32u;
  if (id >= uint(pc.numIndices) * chunks)
    return;
  uint i = id / chunks;
  uint c = id % chunks;
  int row = t_indices[i];
  uint o = id * 8u; // the 8 output vec4s of this chunk
  if (row < 0 || row >= pc.V) {
    t_status[0] = 1u;
    for (uint j = 0u; j < 8u; ++j)
      t_out4[o + j] = VEC4_T(vec4(0.0));
    return;
  }
  uvec4 w = t_weight4[uint(row) * (uint(pc.rowBytes) / 16u) + c];
#if IS_LINEAR_WEIGHT
  // The linear order: element i of a word is its nibble i.
#else
  // embedding_4bit's order: element 2j is the high nibble of byte j. Swap
  // the nibbles of every byte to get the linear order (element i = nibble i).
  w = ((w >> 4u) & 0x0F0F0F0Fu) | ((w & 0x0F0F0F0Fu) << 4u);
#endif
  int d0 = int(c) * 32;
  int g = pc.groupShift >= 0 ? (d0 >> pc.groupShift) : d0 / pc.groupSize;
  float s = float(t_scales[row * pc.scaleRowStride + g]);
  const uvec4 shifts = uvec4(0u, 4u, 8u, 12u);
  for (uint j = 0u; j < 4u; ++j) {
    uint word = w[j];
    vec4 lo = vec4(ivec4((uvec4(word) >> shifts) & 0xFu) - 8);
    vec4 hi = vec4(ivec4((uvec4(word) >> (shifts + 16u)) & 0xFu) - 8);
    t_out4[o + 2u * j] = store4(lo * s);
    t_out4[o + 2u * j + 1u] = store4(hi * s);
  }
}
