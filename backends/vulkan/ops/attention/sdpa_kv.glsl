// sdpa_kv.glsl - attention read straight from the operands' layouts, in two
// passes around the softmax kernel, in the reference's order (sdpaMath,
// ATen's math SDPA; llama.custom_sdpa slices the caches to its keys first):
//
//   MODE scores: scores[b, h, i, j] for the keys j < keys:
//     sum over d, sequential, f32, no FMA, of (q * sf) * (k * sf),
//     sf = sqrt(scale) rounded to f32; then, as the reference adds its mask,
//     + mask[i, j] (an f32 additive mask, bool masks become 0 / -inf first)
//     or, with is_causal, + 0 when j <= causalOffset + i and + -inf otherwise;
//   (softmax.glsl, safe, over each row of `keys` scores);
//   MODE output: out[b, h, i, d] = sum over j < keys, sequential, of
//     p[b, h, i, j] * v[b, h / rep, j, d], rounded once to the result dtype.
//
// Layouts (device tensors are contiguous): q and out are [B, S, H, D]
// (ExecuTorch's custom_sdpa, headsFirst 0) or [B, H, S, D] (aten SDPA); k
// and v [B, M, Hkv, D] or [B, Hkv, M, D] (kvHeadsFirst). Query head h reads
// kv head h / (H / Hkv), as repeat_interleave of the kv heads does, without
// materializing the repeat. keys, causalOffset (a cache's start_pos) come
// per call in the push constants, so one pipeline serves every position.
#include "common.glslh"

#if defined(MODE_scores)
layout(set = 0, binding = 0) buffer Scores { float t_scores[]; };
layout(set = 0, binding = 1) readonly buffer Q { DTYPE t_q[]; };
layout(set = 0, binding = 2) readonly buffer K { DTYPE t_k[]; };
layout(set = 0, binding = 3) readonly buffer Mask { float t_mask[]; };
#else
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer P { float t_p[]; };
layout(set = 0, binding = 2) readonly buffer V { DTYPE t_v[]; };
// The running sums of a `p @ v` split over dispatches (jBegin, jEnd).
layout(set = 0, binding = 3) buffer State { uint t_state[]; };
#endif

#include "sdpa_common.glslh"

void main() {
  uint id = linearId();
  if (id >= uint(pc.total))
    return;
  int rep = pc.H / pc.Hkv;
#if defined(MODE_scores)
  int j = int(id % uint(pc.keys));
  uint row = id / uint(pc.keys);
  int i = int(row % uint(pc.S));
  int h = int((row / uint(pc.S)) % uint(pc.H));
  int b = int(row / (uint(pc.S) * uint(pc.H)));
  int qBase = pc.headsFirst != 0 ? ((b * pc.H + h) * pc.S + i) * pc.D
                                 : ((b * pc.S + i) * pc.H + h) * pc.D;
  int kBase = kvBase(b, h / rep, j);
  precise float acc = 0.0;
  for (int d = 0; d < pc.D; ++d) {
    precise float qs = float(t_q[qBase + d]) * pc.sfQ;
    precise float ks = float(t_k[kBase + d]) * pc.sfK;
    precise float p = qs * ks;
    acc += p;
  }
  if (pc.maskMode == 1) {
    precise float masked = acc + (j <= pc.causalOffset + i ? 0.0 : uintBitsToFloat(0xff800000u));
    acc = masked;
  } else if (pc.maskMode == 2) {
    precise float masked = acc + t_mask[i * pc.keys + j];
    acc = masked;
  }
  t_scores[id] = acc;
#else
  int d = int(id % uint(pc.D));
  int h, i;
  if (pc.headsFirst != 0) {
    i = int((id / uint(pc.D)) % uint(pc.S));
    h = int((id / uint(pc.D * pc.S)) % uint(pc.H));
  } else {
    h = int((id / uint(pc.D)) % uint(pc.H));
    i = int((id / uint(pc.D * pc.H)) % uint(pc.S));
  }
  int b = int(id / uint(pc.D * pc.H * pc.S));
  int pBase = ((b * pc.H + h) * pc.S + i) * pc.keys;
  int vBase = kvBase(b, h / rep, 0) + d;
  int vStride = pc.kvHeadsFirst != 0 ? pc.D : pc.Hkv * pc.D;
  precise float acc = 0.0;
  if (pc.jBegin > 0)
    acc = uintBitsToFloat(t_state[id]);
  for (int j = pc.jBegin; j < pc.jEnd; ++j) {
    precise float p = t_p[pBase + j] * float(t_v[vBase + j * vStride]);
    acc += p;
  }
  if (pc.jEnd < pc.keys) {
    t_state[id] = floatBitsToUint(acc);
    return;
  }
  t_out[id] = TO_DTYPE(acc);
#endif
}
