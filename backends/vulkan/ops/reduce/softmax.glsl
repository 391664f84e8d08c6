// softmax.glsl - softmax over the last dim, one invocation per row, in the
// reference's order (SoftMaxKernel.cpp _vec_softmax_lastdim): max, then
// e = exp(x - max) in f32, the sequential f32 sum of e, then e * (1 / sum).
// The output dtype may differ from the input's (half_to_float / dtype=).
//
// The three passes over a row are one sequence of 3 * rowLen steps; a
// dispatch runs the steps [begin, end). Rows whose steps exceed the device's
// loop limit (llvmpipe, DeviceInfo::maxLoopIterations) take several
// dispatches that carry the running max and sum in `t_state`, in the same
// order, so the results are the one-dispatch ones bit for bit.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { OUT_DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { IN_DTYPE t_in[]; };
layout(set = 0, binding = 2) buffer State { uint t_state[]; };

layout(push_constant) uniform PushConstants {
  int rows;
  int rowLen;
  int begin;
  int end;
  int safe; // _safe_softmax: a row of only -inf gives zeros instead of NaN
} pc;

void main() {
  uint row = linearId();
  if (row >= uint(pc.rows))
    return;
  int n = pc.rowLen;
  int base = int(row) * n;
  float m;
  precise float sum = 0.0;
  if (pc.begin == 0) {
    m = float(t_in[base]);
  } else {
    m = uintBitsToFloat(t_state[2u * row]);
    sum = uintBitsToFloat(t_state[2u * row + 1u]);
  }
  // Pass 1, steps [1, n): the max.
  for (int i = max(pc.begin, 1); i < min(pc.end, n); ++i) {
    float v = float(t_in[base + i]);
    m = nanMax(m, v);
  }
  // Passes 2 and 3 start after pass 1 has ended (here or in an earlier
  // dispatch), so `m` is the row's max there.
  bool zeros = pc.safe != 0 && floatBitsToUint(m) == 0xff800000u; // -inf
  // Pass 2, steps [n, 2n): the sum.
  if (!zeros)
    for (int i = max(pc.begin, n) - n; i < min(pc.end, 2 * n) - n; ++i) {
      precise float d = float(t_in[base + i]) - m;
      sum += exp(d);
    }
  // Pass 3, steps [2n, 3n): the results.
  float inv = divRN(1.0, sum);
  for (int i = max(pc.begin, 2 * n) - 2 * n; i < pc.end - 2 * n; ++i) {
    precise float d = float(t_in[base + i]) - m;
    precise float r = exp(d) * inv;
    t_out[base + i] = zeros ? TO_OUT_DTYPE(0.0) : TO_OUT_DTYPE(r);
  }
  if (pc.end < 3 * n) {
    t_state[2u * row] = floatBitsToUint(m);
    t_state[2u * row + 1u] = floatBitsToUint(sum);
  }
}
