// mask_ops.glsl - the elementwise ops a KV-cache export builds its masks
// with (ExecuTorch's RingKVCache / static-shape attention):
//
//   MODE compare: out (bool, int32 on the device) = a OP b with broadcasting
//     (at most 6 dims, operands read through broadcast strides), OP one of
//     lt le gt ge eq ne (the operands already converted to one dtype, so the
//     comparison is exact; NaN compares false except for ne) and the logical
//     and / or / not (an operand is true when nonzero, NaN included);
//   MODE tril: out[..., i, j] = j - i <= diagonal ? x[..., i, j] : 0 over
//     the two innermost dims, copied unchanged.
#include "common.glslh"

#if defined(MODE_compare)
layout(set = 0, binding = 0) buffer Out { int t_out[]; };
layout(set = 0, binding = 1) readonly buffer A { DTYPE t_a[]; };
layout(set = 0, binding = 2) readonly buffer B { DTYPE t_b[]; };

layout(push_constant) uniform PushConstants {
  int rank;
  int numel;
  int op; // 0 lt, 1 le, 2 gt, 3 ge, 4 eq, 5 ne, 6 and, 7 or, 8 not (b unused)
  int sizes[6];
  int aStrides[6];
  int bStrides[6];
} pc;
#else
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer X { DTYPE t_x[]; };

layout(push_constant) uniform PushConstants {
  int numel;
  int rows;
  int cols;
  int diagonal;
} pc;
#endif

void main() {
  uint id = linearId();
#if defined(MODE_compare)
  if (id >= uint(pc.numel))
    return;
  int rem = int(id);
  int ia = 0;
  int ib = 0;
  for (int d = pc.rank - 1; d >= 0; --d) {
    int i = rem % pc.sizes[d];
    rem /= pc.sizes[d];
    ia += i * pc.aStrides[d];
    ib += i * pc.bStrides[d];
  }
#if DTYPE_IS_INT
  int a = t_a[ia];
  int b = t_b[ib];
  bool an = a != 0;
  bool bn = b != 0;
  bool ordered = true;
  int ka = a;
  int kb = b;
#else
  // On the bits (common.glslh): drivers may compile float compares assuming
  // no NaN, and NaN must compare false (ne: true) and count as nonzero.
  float fa = float(t_a[ia]);
  float fb = float(t_b[ib]);
  bool ordered = !isNanBits(fa) && !isNanBits(fb);
  int ka = orderKey(fa);
  int kb = orderKey(fb);
  bool an = (floatBitsToUint(fa) & 0x7fffffffu) != 0u;
  bool bn = (floatBitsToUint(fb) & 0x7fffffffu) != 0u;
#endif
  bool r;
  switch (pc.op) {
  case 0: r = ordered && ka < kb; break;
  case 1: r = ordered && ka <= kb; break;
  case 2: r = ordered && ka > kb; break;
  case 3: r = ordered && ka >= kb; break;
  case 4: r = ordered && ka == kb; break;
  case 5: r = !(ordered && ka == kb); break;
  case 6: r = an && bn; break;
  case 7: r = an || bn; break;
  default: r = !an; break;
  }
  t_out[id] = r ? 1 : 0;
#else
  if (id >= uint(pc.numel))
    return;
  int j = int(id % uint(pc.cols));
  int i = int((id / uint(pc.cols)) % uint(pc.rows));
  t_out[id] = j - i <= pc.diagonal ? t_x[id] : TO_DTYPE(0.0);
#endif
}
