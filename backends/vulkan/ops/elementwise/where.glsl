// where.glsl - torch.where(condition, a, b) with three-way broadcasting.
// out (contiguous, `sizes`) = cond != 0 ? a : b, each operand read through
// broadcast strides (0 on broadcast dims). The condition is a bool (or
// uint8) tensor, stored as int32 on the device; a and b are already in the
// output dtype (the host converts them first), so the selected element is
// copied unchanged. At most 6 dims: four stride arrays of 8 would not fit
// the 128-byte push-constant block.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer Cond { int t_cond[]; };
layout(set = 0, binding = 2) readonly buffer A { DTYPE t_a[]; };
layout(set = 0, binding = 3) readonly buffer B { DTYPE t_b[]; };

layout(push_constant) uniform PushConstants {
  int rank;
  int numel;
  int sizes[6];
  int cStrides[6];
  int aStrides[6];
  int bStrides[6];
} pc;

void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int rem = int(id);
  int ic = 0;
  int ia = 0;
  int ib = 0;
  for (int d = pc.rank - 1; d >= 0; --d) {
    int i = rem % pc.sizes[d];
    rem /= pc.sizes[d];
    ic += i * pc.cStrides[d];
    ia += i * pc.aStrides[d];
    ib += i * pc.bStrides[d];
  }
  t_out[id] = t_cond[ic] != 0 ? t_a[ia] : t_b[ib];
}
