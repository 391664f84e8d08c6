// reduce.glsl - sum / mean / amax / amin over the innermost `rowLen`
// elements of each of `rows` rows. One invocation per row accumulates
// sequentially in f32, the reference's order, so f32 sums are bit-exact;
// mean is (f32 sum) / n rounded once; amax/amin propagate NaN.
//
// A dispatch walks the values [begin, end) of each row: rows longer than the
// device's loop limit (llvmpipe, DeviceInfo::maxLoopIterations) take several
// dispatches, each continuing the running value from `t_state` (the f32
// accumulator and the NaN flag per row) in the same order, so the result is
// the one-pass one bit for bit.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE t_in[]; };
layout(set = 0, binding = 2) buffer State { uint t_state[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
  int begin;
  int end;
} pc;

void main() {
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int base = int(row) * pc.rowLen;
  int first = pc.begin;
#if defined(OP_sum) || defined(OP_mean)
  precise float acc = 0.0;
  if (first > 0)
    acc = uintBitsToFloat(t_state[2u * row]);
  for (int i = first; i < pc.end; ++i)
    acc += float(t_in[base + i]);
  if (pc.end < pc.rowLen) {
    t_state[2u * row] = floatBitsToUint(acc);
    return;
  }
#if defined(OP_mean)
  float r = divRN(acc, float(pc.rowLen));
#else
  float r = acc;
#endif
#else
  float r;
  bool nan;
  if (first == 0) {
    r = float(t_in[base]);
    nan = isNanBits(r);
    first = 1;
  } else {
    r = uintBitsToFloat(t_state[2u * row]);
    nan = t_state[2u * row + 1u] != 0u;
  }
  for (int i = first; i < pc.end; ++i) {
    float v = float(t_in[base + i]);
    nan = nan || isNanBits(v);
#if defined(OP_amax)
    r = max(r, v);
#else
    r = min(r, v);
#endif
  }
  if (pc.end < pc.rowLen) {
    t_state[2u * row] = floatBitsToUint(r);
    t_state[2u * row + 1u] = nan ? 1u : 0u;
    return;
  }
  if (nan)
    r = uintBitsToFloat(0x7fc00000u);
#endif
  t_out[row] = TO_DTYPE(r);
}
