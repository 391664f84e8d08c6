// copy.glsl - strided copy with dtype conversion: the kernel behind every
// view-like op (permute, transpose, slice, select, expand, cat, clone,
// _to_copy). Iterates over `sizes` (row-major) and moves
//   out[outOffset + sum(i_d * outStrides[d])] = convert(in[inOffset + sum(i_d * inStrides[d])])
// Conversions follow torch's .to(): float -> half rounds to nearest even,
// float -> int truncates toward zero and wraps to `intBits` bits (0: bool,
// negative: unsigned of -intBits bits).
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { OUT_DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_DTYPE t_in[]; };

layout(push_constant) uniform PushConstants {
  int rank;
  int numel;
  int inOffset;
  int outOffset;
  int sizes[8];
  int inStrides[8];
  int outStrides[8];
  int intBits;
  int contiguous; // 1: both sides contiguous over `sizes` (a plain copy/cast)
} pc;

void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int src = pc.inOffset + int(id);
  int dst = pc.outOffset + int(id);
  if (pc.contiguous == 0) {
    int rem = int(id);
    src = pc.inOffset;
    dst = pc.outOffset;
    for (int d = pc.rank - 1; d >= 0; --d) {
      int i = rem % pc.sizes[d];
      rem /= pc.sizes[d];
      src += i * pc.inStrides[d];
      dst += i * pc.outStrides[d];
    }
  }
#if OUT_DTYPE_IS_INT
#if IN_DTYPE_IS_INT
  int v = t_in[src];
#else
  float f = float(t_in[src]);
  int v = int(trunc(f));
#endif
  if (pc.intBits == 0)
    v = v != 0 ? 1 : 0;
  else if (pc.intBits < 0)
    v = int(bitfieldExtract(uint(v), 0, -pc.intBits));
  else if (pc.intBits < 32)
    v = bitfieldExtract(v, 0, pc.intBits);
  t_out[dst] = v;
#else
  t_out[dst] = TO_OUT_DTYPE(float(t_in[src]));
#endif
}
