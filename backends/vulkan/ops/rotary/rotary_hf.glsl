// rotary_hf.glsl - et_vk.apply_rotary_emb_hf on one of xq / xk (ExecuTorch's
// HuggingFace RoPE, backends/vulkan/custom_ops_lib.py apply_rotary_emb_hf_impl):
// x [B, S, H, D], the whole tables [M, R] read at rows start + s. Feature d
// of a head, with h = R / 2:
//   d <  h: out = x[d] * cos[d] + (-x[d + h]) * sin[d]
//   d <  R: out = x[d] * cos[d] + x[d - h] * sin[d]    (rotate_half)
//   d >= R: out = x[d]                                  (passed through)
// As in the reference, in f32 with each product rounded (no FMA), then
// rounded to x's dtype (type_as). One invocation per element.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer X { DTYPE t_x[]; };
layout(set = 0, binding = 2) readonly buffer Cos { FREQS_DTYPE t_cos[]; };
layout(set = 0, binding = 3) readonly buffer Sin { FREQS_DTYPE t_sin[]; };

layout(push_constant) uniform PushConstants {
  int numel;
  int S;     // size of dim 1
  int inner; // H * D: elements per index of dim 1
  int D;     // head_dim
  int R;     // rotary_dim (the tables' columns)
  int start; // the table row of position 0 (start_pos, already in range)
} pc;

void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int e = int(id);
  int d = e % pc.D;
  if (d >= pc.R) {
    t_out[e] = t_x[e];
    return;
  }
  int h = pc.R / 2;
  int row = pc.start + (e / pc.inner) % pc.S;
  float c = float(t_cos[row * pc.R + d]);
  float sn = float(t_sin[row * pc.R + d]);
  float x = float(t_x[e]);
  // rotate_half(x)[d]: -x[d + h] in the first half, x[d - h] in the second.
  float rot = d < h ? -float(t_x[e + h]) : float(t_x[e - h]);
  precise float xc = x * c;
  precise float rs = rot * sn;
  precise float o = xc + rs;
  t_out[e] = TO_DTYPE(o);
}
