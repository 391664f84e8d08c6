// rotary.glsl - et_vk.apply_rotary_emb on one of xq / xk: x [d0, S, ..., D]
// holds interleaved pairs (r, i) = (x[2p], x[2p+1]); freqs [S, D/2] (or
// [S, H, D/2] when freqsHeads > 0) broadcast over every other dim. As in the
// reference, in f32 with each product rounded (no FMA):
//   out_r = r*cos - i*sin,  out_i = r*sin + i*cos,
// then rounded to x's dtype (type_as). One invocation per pair.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer X { DTYPE t_x[]; };
layout(set = 0, binding = 2) readonly buffer Cos { FREQS_DTYPE t_cos[]; };
layout(set = 0, binding = 3) readonly buffer Sin { FREQS_DTYPE t_sin[]; };

layout(push_constant) uniform PushConstants {
  int numPairs;   // numel / 2
  int S;          // size of dim 1
  int innerPairs; // pairs per index of dim 1 (prod(sizes[2:]) / 2)
  int halfD;      // D / 2
  int freqsHeads; // 0: freqs are [S, D/2]; else [S, H, D/2] and inner = H * D/2
} pc;

void main() {
  uint id = linearId();
  if (id >= uint(pc.numPairs))
    return;
  int p = int(id);
  int s = (p / pc.innerPairs) % pc.S;
  int f;
  if (pc.freqsHeads > 0)
    f = s * pc.innerPairs + (p % pc.innerPairs);
  else
    f = s * pc.halfD + (p % pc.halfD);
  float c = float(t_cos[f]);
  float sn = float(t_sin[f]);
  float r = float(t_x[2 * p]);
  float i = float(t_x[2 * p + 1]);
  precise float rc = r * c;
  precise float is = i * sn;
  precise float outR = rc - is;
  precise float rs = r * sn;
  precise float ic = i * c;
  precise float outI = rs + ic;
  t_out[2 * p] = TO_DTYPE(outR);
  t_out[2 * p + 1] = TO_DTYPE(outI);
}
