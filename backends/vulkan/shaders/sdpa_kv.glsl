// sdpa_kv.glsl - llama.custom_sdpa over KV caches, in two passes around the
// softmax kernel, in the reference's order (engine customSdpa -> sdpaMath,
// ATen's math SDPA):
//
//   MODE scores: scores[b, h, i, j] for the keys j < keys = start_pos + S:
//     sum over d, sequential, f32, no FMA, of (q * sf) * (k * sf),
//     sf = sqrt(scale) rounded to f32; with is_causal, + mask, mask = +0
//     when j <= start_pos + i and -inf otherwise, added as the reference
//     adds it;
//   (softmax.glsl, safe, over each row of `keys` scores);
//   MODE output: out[b, i, h, d] = sum over j < keys, sequential, of
//     p[b, h, i, j] * v[b, j, h / rep, d], rounded once to the result dtype.
//
// q is [B, S, H, D] and the caches [B, M, Hkv, D] (ExecuTorch's layout, the
// sequence at dim 1); query head h reads kv head h / (H / Hkv), as
// repeat_interleave of the kv heads does. start_pos comes per call in the
// push constants, so one pipeline serves every position.
#include "common.glslh"

#if defined(MODE_scores)
layout(set = 0, binding = 0) buffer Scores { float t_scores[]; };
layout(set = 0, binding = 1) readonly buffer Q { DTYPE t_q[]; };
layout(set = 0, binding = 2) readonly buffer K { DTYPE t_k[]; };
#else
layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer P { float t_p[]; };
layout(set = 0, binding = 2) readonly buffer V { DTYPE t_v[]; };
#endif

layout(push_constant) uniform PushConstants {
  int total; // invocations: B * H * S * keys (scores) or B * S * H * D (output)
  int S;
  int H;
  int D;
  int M;    // cache positions
  int Hkv;
  int keys; // start_pos + S
  int startPos;
  int causal; // 0: no mask (is_causal=False without attn_mask)
  float sfQ; // -sf for a negative scale, as the reference scales q
  float sfK;
} pc;

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
  int qBase = ((b * pc.S + i) * pc.H + h) * pc.D;
  int kBase = ((b * pc.M + j) * pc.Hkv + h / rep) * pc.D;
  precise float acc = 0.0;
  for (int d = 0; d < pc.D; ++d) {
    precise float qs = float(t_q[qBase + d]) * pc.sfQ;
    precise float ks = float(t_k[kBase + d]) * pc.sfK;
    precise float p = qs * ks;
    acc += p;
  }
  if (pc.causal != 0) {
    precise float masked = acc + (j <= pc.startPos + i ? 0.0 : uintBitsToFloat(0xff800000u));
    acc = masked;
  }
  t_scores[id] = acc;
#else
  int d = int(id % uint(pc.D));
  int h = int((id / uint(pc.D)) % uint(pc.H));
  int i = int((id / uint(pc.D * pc.H)) % uint(pc.S));
  int b = int(id / uint(pc.D * pc.H * pc.S));
  int pBase = ((b * pc.H + h) * pc.S + i) * pc.keys;
  int vBase = (b * pc.M * pc.Hkv + h / rep) * pc.D + d;
  int vStride = pc.Hkv * pc.D;
  precise float acc = 0.0;
  for (int j = 0; j < pc.keys; ++j) {
    precise float p = t_p[pBase + j] * float(t_v[vBase + j * vStride]);
    acc += p;
  }
  t_out[id] = TO_DTYPE(acc);
#endif
}
