// embedding_byte.glsl - quantized_decomposed.embedding_byte(.dtype): gathers
// rows of an int8/uint8 table [V, D] (uploaded as is, read as 32-bit words)
// and dequantizes them as ExecuTorch's reference does
// (exir/passes/_quant_patterns_and_replacements.py: dequantize_per_channel_group
// then embedding), in torch's promotion order, step for step:
//  * with zero points (in the scales' dtype): q - zp is computed in f32 and
//    rounded to the scales' dtype (torch's f16 subtraction runs in f32 too);
//    without them q is exact in either float type;
//  * that difference times the group's scale, in f32, rounded once to the
//    scales' dtype (an f16 x f16 product is exact in f32);
//  * the product converted to the output dtype (.to(dtype)).
// One invocation per output element. An index outside [0, V) writes 0 and
// sets t_status[0] = 1 (embedding.glslh), which the host turns into a user
// error.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer Indices { int t_indices[]; };
layout(set = 0, binding = 2) readonly buffer W { uint t_weight[]; };
layout(set = 0, binding = 3) readonly buffer Scales { SCALE_DTYPE t_scales[]; };
layout(set = 0, binding = 4) readonly buffer Zeros { SCALE_DTYPE t_zeros[]; };
layout(set = 0, binding = 5) buffer Status { uint t_status[]; };

layout(push_constant) uniform PushConstants {
  int numIndices;
  int D; // embedding dim (bytes per row)
  int V;
  int groupSize;
  int groups;   // scales (and zero points) per row: D / groupSize
  int isSigned; // int8 table (else uint8)
  int hasZero;
} pc;

#if SCALE_DTYPE_IS_HALF
#define ROUND_SCALE(x) roundToHalf(x)
#else
#define ROUND_SCALE(x) (x)
#endif

#include "embedding.glslh"

void main() {
  uint id = linearId();
  int row, d;
  if (!gatherElement(id, row, d))
    return;
  uint byteIndex = uint(row) * uint(pc.D) + uint(d);
  uint word = t_weight[byteIndex >> 2];
  int q = pc.isSigned != 0 ? sbyte(word, byteIndex & 3u)
                           : int((word >> (8u * (byteIndex & 3u))) & 0xFFu);
  int k = row * pc.groups + d / pc.groupSize;
  precise float diff = float(q);
  if (pc.hasZero != 0)
    diff = ROUND_SCALE(diff - float(t_zeros[k]));
  precise float v = ROUND_SCALE(diff * float(t_scales[k]));
  t_out[id] = TO_DTYPE(v);
}
