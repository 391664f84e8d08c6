// embedding_q4gsw.glsl - et_vk.embedding_q4gsw: gathers rows of a packed
// int4 table [V, D/2] (uploaded as is, read as 32-bit words) and dequantizes
// value = float(nibble - 8) * float(scales[row * scaleRowStride + d / groupSize])
// in f32, rounded to the output dtype (the scales' dtype). IS_LINEAR_WEIGHT
// selects the nibble order: low nibble = even element (the linear/torchao
// convention) or high nibble = even element (embedding_4bit's). One
// invocation per 8 consecutive output elements of one row. An index outside
// [0, V) writes 0 and sets t_status[0] = 1, which the host turns into a user
// error.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 2) readonly buffer W { uint t_weight[]; };
#include "embedding_q4gsw.glslh"

void main() {
  uint id = linearId();
  int chunks = (pc.D + 7) / 8;
  if (id >= uint(pc.numIndices) * uint(chunks))
    return;
  int i = int(id / uint(chunks));
  int d0 = int(id % uint(chunks)) * 8;
  int row = t_indices[i];
  bool bad = row < 0 || row >= pc.V;
  if (bad)
    t_status[0] = 1u;
  for (int t = 0; t < 8; ++t) {
    int d = d0 + t;
    if (d >= pc.D)
      break;
    uint o = uint(i) * uint(pc.D) + uint(d);
    if (bad) {
      t_out[o] = TO_DTYPE(0.0);
      continue;
    }
    uint byteIndex = uint(row) * uint(pc.rowBytes) + uint(d >> 1);
    uint b = (t_weight[byteIndex >> 2] >> (8u * (byteIndex & 3u))) & 0xFFu;
#if IS_LINEAR_WEIGHT
    uint nib = (d & 1) == 0 ? (b & 0xFu) : (b >> 4);
#else
    uint nib = (d & 1) == 0 ? (b >> 4) : (b & 0xFu);
#endif
    int g = pc.groupShift >= 0 ? (d >> pc.groupShift) : d / pc.groupSize;
    float s = float(t_scales[row * pc.scaleRowStride + g]);
    precise float v = float(int(nib) - 8) * s;
    t_out[o] = TO_DTYPE(v);
  }
}
